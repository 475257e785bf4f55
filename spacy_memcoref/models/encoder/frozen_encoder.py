"""A frozen encoder: a tok2vec run in prediction mode, never trained, with
the option of concatenating its transformer's last k hidden layers. PeTra
uses it as the paper freezes BERT; s2e can use it to train on CPU cheaply.

A frozen encoder's output for a text never changes, so once the model has
trained (one call with is_train) it keeps each Doc's vectors in an
EncoderCache keyed by the Doc's words: later epochs and evaluations run the
encoder only on texts it has not seen. A pipeline that only predicts never
fills the cache.
"""

from typing import Any, List, Optional, Tuple, cast

from spacy.tokens import Doc
from thinc.api import Model
from thinc.types import Floats2d

from .encoder import encode_for_inference
from .encoder_cache import DiskStore, EncoderCache, check_frozen_cache_mb, model_fingerprint, words_key
from .transformer_node import find_transformer


def frozen_options_error(
    tok2vec: Model, freeze_encoder: bool, encoder_layers: int, skip_top_layers: int = 0
) -> Optional[str]:
    """What is wrong with a builder's freeze_encoder / encoder_layers /
    skip_top_layers values (None: nothing); the s2e and PeTra builders both
    ask."""
    if not isinstance(freeze_encoder, bool):
        return f"freeze_encoder must be true or false, got {freeze_encoder!r}"
    if isinstance(encoder_layers, bool) or not isinstance(encoder_layers, int) or encoder_layers < 1:
        return f"encoder_layers must be a positive integer, got {encoder_layers!r}"
    if isinstance(skip_top_layers, bool) or not isinstance(skip_top_layers, int) or skip_top_layers < 0:
        return f"skip_top_layers must be an integer >= 0, got {skip_top_layers!r}"
    if skip_top_layers > 0 and not freeze_encoder:
        return "skip_top_layers > 0 needs freeze_encoder = true (it picks hidden layers of a frozen encoder)"
    if encoder_layers > 1 and not freeze_encoder:
        return "encoder_layers > 1 needs freeze_encoder = true (spacy-transformers backpropagates into its last layer only)"
    if (encoder_layers > 1 or skip_top_layers > 0) and find_transformer(tok2vec) is None:
        return (
            "encoder_layers > 1 or skip_top_layers > 0 needs a spacy-transformers encoder (a TransformerModel inside the tok2vec), "
            f"found {tok2vec.name!r}; use encoder_layers = 1 and skip_top_layers = 0 with other encoders"
        )
    return None


def frozen_encoder(
    tok2vec: Model[List[Doc], List[Floats2d]],
    *,
    encoder_layers: int = 1,
    skip_top_layers: int = 0,
    cache_mb: int = 0,
    cache_dir: Optional[str] = None,
) -> Model[List[Doc], List[Floats2d]]:
    """Run a tok2vec without training it: prediction mode forward, no
    gradient back (the returned backprop ignores its input).

    tok2vec (Model[List[Doc], List[Floats2d]]): the encoder; it is still
        initialized, serialized and loaded with the pipeline.
    encoder_layers (int): k > 1: the last k hidden layers of its
        TransformerModel, concatenated and mean-pooled to spaCy tokens.
    skip_top_layers (int): n > 0: leave out the top n hidden layers; the
        features are the encoder_layers layers below them (0: the last ones).
    cache_mb (int): once training has begun, keep each Doc's vectors, up to
        this many megabytes, least recently used out (0: no cache).
    cache_dir (Optional[str]): also keep them on disk in this folder (under
        a fingerprint of the encoder's weights and settings), so later
        training runs with the same encoder skip it; None: memory only.
    RETURNS (Model[List[Doc], List[Floats2d]]): the frozen encoder.
    """
    from thinc.api import reduce_mean

    check_frozen_cache_mb(cache_mb)
    if cache_dir is not None and (not isinstance(cache_dir, str) or not cache_dir):
        raise ValueError(f"frozen_cache_dir must be a folder name or null, got {cache_dir!r}")
    return Model(
        "frozen_encoder",
        _CachingForward(EncoderCache(cache_mb * 2**20), cache_dir),
        init=_frozen_init,
        layers=[tok2vec, reduce_mean()],
        attrs={"encoder_layers": encoder_layers, "skip_top_layers": skip_top_layers, "cache_mb": cache_mb},
    )


class _CachingForward:
    """The frozen encoder's forward function, holding its cache (a Thinc
    Model cannot hold it: its attrs are serialized, and it takes no weak
    references). The cache is used from the first training call on."""

    def __init__(self, cache: EncoderCache, cache_dir: Optional[str] = None) -> None:
        self.cache = cache
        self.cache_dir = cache_dir
        self.disk: Optional[DiskStore] = None
        self.training = False

    def __call__(self, model: Model, docs: List[Doc], is_train: bool):
        self.training = self.training or is_train
        if not self.training:
            return _frozen_forward(model, docs, None, None)
        if self.cache_dir is not None and self.disk is None:
            # the weights are fixed from here on: fingerprint them once
            settings: Tuple[Any, ...] = (
                "frozen_encoder",
                model.attrs["encoder_layers"],
                model.layers[0].attrs.get("inference_segments"),
            )
            skip = model.attrs.get("skip_top_layers", 0)
            if skip:  # appended only when set, so caches written before stay valid
                settings += ("skip_top_layers", skip)
            self.disk = DiskStore(self.cache_dir, model_fingerprint(model.layers[0], *settings))
        return _frozen_forward(model, docs, self.cache, self.disk)


def frozen_cache(model: Model) -> Optional[EncoderCache]:
    """RETURNS (Optional[EncoderCache]): the cache of the frozen encoder
    inside `model` (None: it holds none)."""
    for node in model.walk():
        if node.name == "frozen_encoder" and isinstance(node._func, _CachingForward):
            return node._func.cache
    return None


def _frozen_init(model: Model, X: Optional[List[Doc]] = None, Y=None) -> None:
    model.layers[0].initialize(X=X)


def _encode(model: Model, docs: List[Doc]) -> List[Floats2d]:
    tok2vec = model.layers[0]
    k = model.attrs["encoder_layers"]
    skip = model.attrs.get("skip_top_layers", 0)
    if k == 1 and skip == 0:
        return encode_for_inference(tok2vec, docs)
    return encode_for_inference(tok2vec, docs, lambda batch: _last_layers(model, batch, k, skip))


def _frozen_forward(model: Model, docs: List[Doc], cache: Optional[EncoderCache], disk: Optional[DiskStore]):
    if cache is None or (cache.limit == 0 and disk is None):
        vectors = _encode(model, docs)
    else:
        keys = [words_key([t.text for t in doc], [bool(t.whitespace_) for t in doc]) for doc in docs]
        found = [cache.get(key) for key in keys]
        if disk is not None:
            for i, value in enumerate(found):
                if value is None:
                    value = disk.get(keys[i])
                    if value is not None:
                        found[i] = model.ops.asarray2f(value)
                        cache.put(keys[i], found[i])
        missing = [i for i, value in enumerate(found) if value is None]
        if missing:
            for i, value in zip(missing, _encode(model, [docs[i] for i in missing])):
                found[i] = value
                cache.put(keys[i], value)
                if disk is not None:
                    disk.put(keys[i], model.ops.to_numpy(value))
        vectors = cast(List[Floats2d], found)  # every one filled

    def backprop(d_vectors: List[Floats2d]) -> List[Doc]:
        return []

    return vectors, backprop


def _last_layers(model: Model, docs: List[Doc], k: int, skip: int = 0) -> List[Floats2d]:
    """The last k hidden layers of the TransformerModel in model.layers[0]
    (below its top `skip` layers), concatenated, aligned and mean-pooled to spaCy tokens (as
    spacy-transformers' trfs2arrays pools the last layer)."""
    from spacy_transformers.align import apply_alignment

    trf = find_transformer(model.layers[0])
    if trf is None:
        raise ValueError("encoder_layers > 1 needs a spacy-transformers encoder")
    # HF models read this flag at every call; set it here rather than at
    # init, so a pipeline loaded from disk gets it too.
    trf.transformer.config.output_hidden_states = True
    pooling = model.layers[1]
    ops = model.ops
    batch = trf.predict(docs)
    outputs: List[Floats2d] = []
    for doc, data in zip(docs, batch.doc_data):
        hidden = data.model_output.get("hidden_states") if "last_hidden_state" in data.model_output else None
        if hidden is None:
            if "last_hidden_state" in data.model_output:
                raise ValueError("the transformer returned no hidden_states")
            width = k * int(trf.get_dim("nO"))
            outputs.append(ops.alloc2f(len(doc), width))
            continue
        if len(hidden) < k + skip:
            raise ValueError(
                f"encoder_layers = {k} and skip_top_layers = {skip} need {k + skip} hidden states, "
                f"but the transformer has only {len(hidden)}"
            )
        layers = [
            ops.reshape2f(layer, -1, layer.shape[-1]) for layer in hidden[len(hidden) - skip - k : len(hidden) - skip]
        ]
        src = ops.xp.concatenate(layers, axis=1)
        dst, _ = apply_alignment(ops, data.align, src)
        outputs.append(pooling.predict(dst))
    return outputs
