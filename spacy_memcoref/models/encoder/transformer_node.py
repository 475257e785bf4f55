"""Finding the spacy-transformers TransformerModel inside a tok2vec, without
importing spacy_transformers (the frozen and partly frozen encoders and the
builders' option checks all ask), and changing its Hugging Face model in
place in a way that survives loading."""

from typing import TYPE_CHECKING, Any, Callable, Dict, Optional, cast

from thinc.api import Model

if TYPE_CHECKING:  # pragma: no cover
    from spacy_transformers.layers.transformer_model import TransformerModel


def find_transformer(tok2vec: Model) -> Optional["TransformerModel"]:
    """The spacy-transformers TransformerModel node inside a tok2vec (found
    by its name and attrs, so spacy_transformers need not be imported)."""
    for node in tok2vec.walk():
        if node.name == "transformer" and "get_spans" in node.attrs and "set_transformer" in node.attrs:
            return cast("TransformerModel", node)
    return None


def patching_transformer(
    name: str, tok2vec: Model, patch: Callable[[Any, Dict[str, Any]], None], attrs: Dict[str, Any], *, option: str
) -> Model:
    """A node around `tok2vec` that calls `patch(hf_model, attrs)` on its
    transformer's Hugging Face model after initialization and before every
    forward pass: a pipeline loaded from disk gets a new Hugging Face model,
    so `patch` must be idempotent. The saved pipeline is unchanged.

    option (str): the config option asking for the patch, named in the error
        when `tok2vec` holds no spacy-transformers encoder.
    RETURNS (Model): the wrapped tok2vec, same input and output.
    """
    if find_transformer(tok2vec) is None:
        raise ValueError(f"{option} needs a spacy-transformers encoder, found {tok2vec.name!r}")

    def apply(model: Model) -> None:
        trf = find_transformer(model.layers[0])
        if trf is not None and trf.transformer is not None:
            patch(trf.transformer, model.attrs)

    def init(model: Model, X=None, Y=None) -> None:
        model.layers[0].initialize(X=X, Y=Y)
        apply(model)

    def forward(model: Model, docs, is_train: bool):
        apply(model)
        return model.layers[0](docs, is_train)

    return Model(name, forward, init=init, layers=[tok2vec], attrs=attrs)
