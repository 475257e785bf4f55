"""Thinc builder for the s2e model: `spacy_memcoref.S2E.v1`.

torch is imported inside the builder, so loading the entry points (which
spaCy does for every pipeline) never needs it.
"""

from functools import partial
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

from spacy.tokens import Doc
from spacy.training import Example
from spacy.util import registry
from thinc.api import Model
from thinc.types import Floats2d

from ...decoders.s2e import S2EDecoder
from ...doc_helpers.gap_annotation import has_gap_annotation
from ...doc_helpers.gold import aligned_gold_clusters, gap_pronoun_gold, gold_with_gum_mentions
from ..encoder.encoder_cache import DEFAULT_FROZEN_CACHE_MB
from ..encoder.frozen_encoder import frozen_encoder, frozen_options_error


def _s2e_gold(
    cluster_gold: Callable[[Example, str], Tuple[Any, int]], example: Example, prefix: str
) -> Tuple[Any, int]:
    """The s2e's gold hook (bound to `cluster_gold` by functools.partial, so
    the model still pickles): a GAP document's sparse pronoun gold
    (gap_pronoun_gold), any other document's clusters, so one training
    corpus may hold both."""
    if has_gap_annotation(example.reference):
        return gap_pronoun_gold(example)
    return cluster_gold(example, prefix)


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(f"spacy_memcoref.S2E.v1: {message}")


# The builder's settings that build training-only modules (auxiliary scorers
# and classifiers that prediction never runs; 0 builds none), each with the
# head's attribute that holds the module: a shipped model sets them to 0, so
# it stores and loads no weights for those modules (pretrained.build).
TRAINING_ONLY_MODULES = {
    "all_mentions_loss_weight": "all_mentions_scorer",
}

# Options removed after spacy-memcoref 0.1.0 (their experiments lost; benchmarks/log/
# keeps the results), each with the one value the builder still takes: the
# default, which built nothing and which every pipeline saved before names
# in its config, so that those pipelines load. Any other value is an error.
REMOVED_OPTIONS: Dict[str, Union[bool, float]] = {
    "learn_link_bias": False,
    "singletons_as_mentions": False,
    "entity_type_loss_weight": 0.0,
    "infstat_loss_weight": 0.0,
    "span_head_attention": False,
}


def _removed_option_error(name: str, value: object) -> Optional[str]:
    default = REMOVED_OPTIONS[name]
    if isinstance(default, bool):
        inert = value is False
    else:
        inert = isinstance(value, (int, float)) and not isinstance(value, bool) and value == default
    if inert:
        return None
    shown = str(default).lower()
    return (
        f"{name} was removed after spacy-memcoref 0.1.0 (its experiment lost: benchmarks/log); a saved config may "
        f"keep it at {shown}, which builds nothing, but not at {value!r}: this version cannot build that model"
    )


@registry.architectures("spacy_memcoref.S2E.v1")
def build_s2e(
    tok2vec: Model[List[Doc], List[Floats2d]],
    *,
    hidden_size: int = 512,
    dropout: float = 0.3,
    max_width: int = 30,
    top_lambda: float = 0.4,
    max_antecedents: Optional[int] = None,
    use_speakers: bool = True,
    head_lr_scale: float = 30.0,
    chunk_size: int = 512,
    use_distance: bool = True,
    mention_loss_weight: float = 1.0,
    freeze_encoder: bool = False,
    encoder_layers: int = 1,
    link_threshold: float = 0.0,
    frozen_cache_mb: int = DEFAULT_FROZEN_CACHE_MB,
    frozen_cache_dir: Optional[str] = None,
    all_mentions_loss_weight: float = 0.0,
    memory_loss_cells: int = 0,
    memory_loss_mentions: int = 8,
    # removed (REMOVED_OPTIONS): taken at their defaults only, so that saved pipelines load
    learn_link_bias: bool = False,
    singletons_as_mentions: bool = False,
    entity_type_loss_weight: float = 0.0,
    infstat_loss_weight: float = 0.0,
    span_head_attention: bool = False,
) -> Model:
    """s2e (Kirstain, Ram & Levy 2021) over any tok2vec.

    tok2vec (Model[List[Doc], List[Floats2d]]): encoder, one vector a token.
    hidden_size (int): width of the endpoint projections (paper: 3072).
    dropout (float): dropout in the head (paper: 0.3).
    max_width (int): longest mention candidate in tokens (paper: 30).
    top_lambda (float): kept candidates a token (paper: 0.4).
    max_antecedents (Optional[int]): preceding candidates considered a
        mention; None = all. Set it (e.g. 200) for book-length documents.
    use_speakers (bool): learned same/different-speaker antecedent term from
        doc.spans["speakers"] when present.
    head_lr_scale (float): the head learns this many times faster than the
        encoder (reference: 3e-4 / 1e-5 = 30).
    chunk_size (int): antecedent rows scored at once (memory vs speed).
    use_distance (bool): learned bias per log-scale antecedent distance
        bucket (not in the paper; see pytorch_s2e.S2EHead).
    mention_loss_weight (float): auxiliary mention-detection loss weight
        (0 = the paper's antecedent loss alone).
    freeze_encoder (bool): run the encoder in prediction mode and train the
        head alone (the paper fine-tunes; a frozen encoder trains several
        times faster on CPU).
    encoder_layers (int): with freeze_encoder, concatenate the transformer's
        last k hidden layers as token features (1: the last layer).
    link_threshold (float): link a mention to its best antecedent when the
        pair scores above this (null scores 0; lower links more), until the
        component's own link_threshold (the memcoref factory's setting,
        which `tune-link-threshold` stores) says otherwise: where pipelines
        saved by earlier versions keep their tuned threshold.
    frozen_cache_mb (int), frozen_cache_dir (Optional[str]): with
        freeze_encoder, the frozen encoder's cache in memory and on disk, as
        in spacy_memcoref.PeTra.v1 (frozen_encoder.frozen_encoder).
    all_mentions_loss_weight (float): weight of a separate, training-only
        span scorer over the same endpoint features that learns to tell
        every GUM mention (singletons included) from other spans; its score
        never enters pair scores (0: none). Training Docs with
        doc.spans["gum_mentions"] (convert with --gum-entities) give it
        every GUM mention, others their cluster mentions. A trained pipeline
        predicts without it, at the same speed.
    memory_loss_cells (int), memory_loss_mentions (int): 0 (the default):
        the paper's antecedent loss over every preceding candidate; N > 0:
        the loss of a bounded entity memory's decisions, with N cells that
        keep memory_loss_mentions mentions each (pytorch_s2e.S2EHead): set
        them as the component's memory_cells and memory_mentions, which
        read the model through that memory when predicting.
    learn_link_bias, singletons_as_mentions, entity_type_loss_weight,
        infstat_loss_weight, span_head_attention: removed options
        (REMOVED_OPTIONS), taken at their defaults only, where saved
        pipelines name them.
    RETURNS (Model): input (docs, gold clusters or None), output (loss, one
        decoders.predictions.S2EPrediction a doc).
    """
    _check(
        isinstance(hidden_size, int) and hidden_size >= 1,
        f"hidden_size must be a positive integer, got {hidden_size!r}",
    )
    _check(0.0 <= dropout < 1.0, f"dropout must be in [0, 1), got {dropout!r}")
    _check(isinstance(max_width, int) and max_width >= 1, f"max_width must be a positive integer, got {max_width!r}")
    _check(0.0 < top_lambda <= 1.0, f"top_lambda must be in (0, 1], got {top_lambda!r}")
    _check(
        max_antecedents is None or (isinstance(max_antecedents, int) and max_antecedents >= 1),
        f"max_antecedents must be a positive integer or null, got {max_antecedents!r}",
    )
    _check(head_lr_scale > 0, f"head_lr_scale must be positive, got {head_lr_scale!r}")
    _check(
        isinstance(chunk_size, int) and chunk_size >= 1, f"chunk_size must be a positive integer, got {chunk_size!r}"
    )
    _check(mention_loss_weight >= 0, f"mention_loss_weight must be >= 0, got {mention_loss_weight!r}")
    try:
        decoder = S2EDecoder(link_threshold)
    except ValueError as err:
        raise ValueError(f"spacy_memcoref.S2E.v1: {err}") from None
    _check(all_mentions_loss_weight >= 0, f"all_mentions_loss_weight must be >= 0, got {all_mentions_loss_weight!r}")
    for size_name, size, minimum in (
        ("memory_loss_cells", memory_loss_cells, 0),
        ("memory_loss_mentions", memory_loss_mentions, 1),
    ):
        _check(
            isinstance(size, int) and not isinstance(size, bool) and size >= minimum,
            f"{size_name} must be an integer >= {minimum}, got {size!r}",
        )
    removed = {
        "learn_link_bias": learn_link_bias,
        "singletons_as_mentions": singletons_as_mentions,
        "entity_type_loss_weight": entity_type_loss_weight,
        "infstat_loss_weight": infstat_loss_weight,
        "span_head_attention": span_head_attention,
    }
    for name, value in removed.items():
        error = _removed_option_error(name, value)
        _check(error is None, error or "")
    frozen_error = frozen_options_error(tok2vec, freeze_encoder, encoder_layers)
    _check(frozen_error is None, frozen_error or "")

    from .pytorch_s2e import S2EDocument, S2EHead
    from ..thinc_glue import build_coref_model, sentence_ids, speaker_ids

    head = S2EHead(
        hidden_size=hidden_size,
        dropout=dropout,
        max_width=max_width,
        top_lambda=top_lambda,
        max_antecedents=max_antecedents,
        use_speakers=use_speakers,
        chunk_size=chunk_size,
        use_distance=use_distance,
        mention_loss_weight=mention_loss_weight,
        all_mentions_loss_weight=all_mentions_loss_weight,
        memory_loss_cells=memory_loss_cells,
        memory_loss_mentions=memory_loss_mentions,
    )

    def make_head_input(doc: Doc, tokens, mirror=None) -> S2EDocument:
        return S2EDocument(
            tokens=tokens,
            sent_ids=sentence_ids(doc, tokens.device),
            speaker_ids=speaker_ids(doc, tokens.device) if use_speakers else None,
            mirror=mirror,
        )

    if freeze_encoder:
        tok2vec = frozen_encoder(
            tok2vec, encoder_layers=encoder_layers, cache_mb=frozen_cache_mb, cache_dir=frozen_cache_dir
        )
    return build_coref_model(
        "s2e",
        tok2vec,
        head,
        make_head_input,
        make_gold=partial(_s2e_gold, gold_with_gum_mentions if head.reads_gum_layer else aligned_gold_clusters),
        decoder=decoder,
        lr_scale=head_lr_scale,
    )
