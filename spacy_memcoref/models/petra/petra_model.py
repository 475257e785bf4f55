"""Thinc builder for the PeTra model: `spacy_memcoref.PeTra.v1`.

torch is imported inside the builder, so loading the entry points (which
spaCy does for every pipeline) never needs it.

Pieces (all built by `build_petra`):

- the encoder: any tok2vec. With ``freeze_encoder`` (the default, as in the
  paper, which reads frozen BERT features) it runs in prediction mode (no
  dropout, no autograd graph) and no gradient flows back into it; a
  spacy-transformers encoder still runs its forward pass every batch, it just
  never learns. With ``encoder_layers = k > 1`` the features are the last k
  hidden layers of a spacy-transformers encoder concatenated (the paper: the
  last four layers of BERT), pooled to spaCy tokens like the encoder's own
  last layer; this needs the frozen encoder (spacy-transformers backpropagates
  into the last layer only).
- the head: pytorch_petra_head.PeTraHead (pytorch_petra.PeTra built lazily
  at the feature width, the temperature schedule, predictions as numpy);
- the hooks the component calls: ``make_gold`` (the sparse gold of
  doc_helpers.petra_gold as a pytorch_petra.SparseGold), the ``decoder``
  (decoders.petra.PeTraDecoder: doc._.memory_log, the GAP link
  probabilities, calibrated and with their threshold from the component's
  settings, and the entity vectors) and ``keep_entity_states(model, on)`` (the
  component's entity_vectors setting: off, the head keeps no cell states).
"""

from typing import Any, List, Optional, Tuple

from spacy.tokens import Doc
from spacy.training import Example
from spacy.util import registry
from thinc.api import Model
from thinc.types import Floats2d

from ...decoders.petra import PeTraDecoder, movable_tokens
from ...doc_helpers.gap_annotation import GAP_SPANS_KEY, gap_reference_spans
from ...doc_helpers.petra_gold import petra_sparse_target
from ...util import TokenSpan
from ..encoder.encoder_cache import DEFAULT_FROZEN_CACHE_MB
from ..encoder.frozen_encoder import frozen_encoder, frozen_options_error


# the Thinc model's name: how a pipeline's PeTra component is recognized
PETRA_MODEL_NAME = "petra"


def is_petra_model(model: Model) -> bool:
    """RETURNS (bool): whether `model` was built by spacy_memcoref.PeTra.v1."""
    return model.name == PETRA_MODEL_NAME


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(f"spacy_memcoref.PeTra.v1: {message}")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@registry.architectures("spacy_memcoref.PeTra.v1")
def build_petra(
    tok2vec: Model[List[Doc], List[Floats2d]],
    *,
    hidden_size: int = 300,
    num_cells: int = 10,
    mlp_size: int = 300,
    usage_decay: float = 0.98,
    entity_loss_weight: float = 0.1,
    dropout: float = 0.5,
    learned_init: bool = False,
    fixed_key_size: int = 0,
    temperature_halving_steps: int = 1000,
    head_lr_scale: float = 1.0,
    entity_threshold: float = 0.5,
    min_mentions: int = 2,
    freeze_encoder: bool = True,
    encoder_layers: int = 4,
    skip_top_layers: int = 0,
    layer_mix: bool = False,
    frozen_cache_mb: int = DEFAULT_FROZEN_CACHE_MB,
    frozen_cache_dir: Optional[str] = None,
    positive_weight: float = 5.0,
    negative_weight: float = 50.0,
    train_segment_tokens: int = 0,
    action_loss_weight: float = 0.0,
) -> Model:
    """PeTra (Toshniwal et al. 2020) over any tok2vec.

    tok2vec (Model[List[Doc], List[Floats2d]]): encoder, one vector a token.
    hidden_size (int): GRU state = memory cell size (paper: 300).
    num_cells (int): N memory cells.
    mlp_size (int): hidden width of the controller MLPs (paper: 300).
    usage_decay (float): gamma in (0, 1] (paper: 0.98).
    entity_loss_weight (float): lambda, weight of the entity loss (paper: 0.1).
    dropout (float): dropout on the GRU states in training, in [0, 1).
    learned_init (bool): learn the initial memory (paper §2.4 variant).
    fixed_key_size (int): learned fixed keys of this many dims (0 = off).
    temperature_halving_steps (int): halve the Gumbel-softmax temperature
        (starting at 1) every this many training batches; 0 keeps it at 1.
    head_lr_scale (float): the head learns this many times faster than the
        optimizer's rate (matters only for an encoder that is not frozen).
    entity_threshold (float): in (0, 1]: e_t a token needs to be in a mention
        when clusters are decoded from the log.
    min_mentions (int): decoded entities with fewer mentions are dropped
        (2: no singleton clusters, as spaCy's coref clusters).
    freeze_encoder (bool): no gradients into the encoder (the paper's setup).
    encoder_layers (int): concatenate the last k hidden layers of a
        spacy-transformers encoder (paper: 4); 1 = the encoder's own output.
    skip_top_layers (int): with freeze_encoder, leave out the encoder's top
        n hidden layers: the features are the encoder_layers layers below
        them (0: the last encoder_layers, as the paper).
    layer_mix (bool): instead of concatenating the k layers, feed the GRU a
        learned scalar mix of them, gamma * sum_l softmax(w)_l * layer_l (as
        ELMo and the BERT-era readers mix layers); needs encoder_layers > 1.
    frozen_cache_mb (int): with freeze_encoder, keep each training and
        evaluation Doc's encoder output once training has begun, up to this
        many megabytes, least recently used out, so the encoder runs once a
        text (0: every batch); a pipeline that only predicts keeps nothing.
    frozen_cache_dir (Optional[str]): with freeze_encoder, also keep that
        output on disk in this folder (keyed by the encoder's weights), so
        later runs (other seeds, other head settings) skip the encoder.
    positive_weight (float): the loss weight of a token pair labelled
        coreferent (paper §3.3, GAP: 5).
    negative_weight (float): the loss weight of a token pair labelled not
        coreferent (GAP: 50, for GAP's three labelled spans a text; with
        full clusters, where cross-cluster pairs outnumber the rest ten to
        one, a smaller weight keeps the two kinds in balance).
    train_segment_tokens (int): in training only, a document longer than
        this is read in segments of at most this many tokens side by side,
        each from an empty memory (models/petra/training_segments.py: an
        update costs the longest segment, not the longest document);
        prediction reads whole documents. 0: whole documents (GAP's texts
        are short).
    action_loss_weight (float): weight of a loss on the memory's action at
        each labelled span's first token: OVERWRITE for an entity's first
        span, COREF for its later ones (models/petra/pytorch_petra.py; not
        in the paper). 0: none (GAP); for full clusters, where the pair
        loss alone never teaches OVERWRITE (each entity of a segment gets a
        cell of its own).
    RETURNS (Model): input (docs, sparse golds or None), output (loss, one
        decoders.predictions.PeTraPrediction a doc).
    """
    _check(_is_int(hidden_size) and hidden_size >= 1, f"hidden_size must be a positive integer, got {hidden_size!r}")
    _check(_is_int(num_cells) and num_cells >= 1, f"num_cells must be a positive integer, got {num_cells!r}")
    _check(_is_int(mlp_size) and mlp_size >= 1, f"mlp_size must be a positive integer, got {mlp_size!r}")
    _check(_is_number(usage_decay) and 0.0 < usage_decay <= 1.0, f"usage_decay must be in (0, 1], got {usage_decay!r}")
    _check(
        _is_number(entity_loss_weight) and entity_loss_weight >= 0.0,
        f"entity_loss_weight must be >= 0, got {entity_loss_weight!r}",
    )
    _check(_is_number(dropout) and 0.0 <= dropout < 1.0, f"dropout must be in [0, 1), got {dropout!r}")
    _check(isinstance(learned_init, bool), f"learned_init must be true or false, got {learned_init!r}")
    _check(
        _is_int(fixed_key_size) and fixed_key_size >= 0,
        f"fixed_key_size must be an integer >= 0, got {fixed_key_size!r}",
    )
    _check(
        fixed_key_size < hidden_size,
        f"fixed_key_size ({fixed_key_size}) must be smaller than hidden_size ({hidden_size})",
    )
    _check(
        _is_int(temperature_halving_steps) and temperature_halving_steps >= 0,
        f"temperature_halving_steps must be an integer >= 0 (0 = constant tau), got {temperature_halving_steps!r}",
    )
    _check(_is_number(head_lr_scale) and head_lr_scale > 0, f"head_lr_scale must be positive, got {head_lr_scale!r}")
    _check(
        _is_number(entity_threshold) and 0.0 < entity_threshold <= 1.0,
        f"entity_threshold must be in (0, 1], got {entity_threshold!r}",
    )
    _check(
        _is_int(min_mentions) and min_mentions >= 1, f"min_mentions must be a positive integer, got {min_mentions!r}"
    )
    _check(isinstance(layer_mix, bool), f"layer_mix must be true or false, got {layer_mix!r}")
    _check(
        not layer_mix or (_is_int(encoder_layers) and encoder_layers > 1),
        f"layer_mix = true mixes encoder_layers > 1 layers, got encoder_layers = {encoder_layers!r}",
    )
    for name, weight in (("positive_weight", positive_weight), ("negative_weight", negative_weight)):
        _check(_is_number(weight) and weight > 0, f"{name} must be > 0, got {weight!r}")
    _check(
        _is_number(action_loss_weight) and action_loss_weight >= 0,
        f"action_loss_weight must be >= 0, got {action_loss_weight!r}",
    )
    _check(
        _is_int(train_segment_tokens) and train_segment_tokens >= 0,
        f"train_segment_tokens must be an integer >= 0 (0: whole documents), got {train_segment_tokens!r}",
    )
    frozen_error = frozen_options_error(tok2vec, freeze_encoder, encoder_layers, skip_top_layers)
    _check(frozen_error is None, frozen_error or "")

    from .pytorch_petra import SparseGold
    from .pytorch_petra_head import PeTraHead
    from ..thinc_glue import build_coref_model

    head = PeTraHead(
        petra_kwargs=dict(
            hidden_size=hidden_size,
            num_cells=num_cells,
            mlp_size=mlp_size,
            usage_decay=float(usage_decay),
            entity_loss_weight=float(entity_loss_weight),
            dropout=float(dropout),
            learned_init=learned_init,
            fixed_key_size=fixed_key_size,
            positive_weight=float(positive_weight),
            negative_weight=float(negative_weight),
            action_loss_weight=float(action_loss_weight),
        ),
        entity_threshold=float(entity_threshold),
        min_mentions=min_mentions,
        temperature_halving_steps=temperature_halving_steps,
        mix_layers=encoder_layers if layer_mix else 0,
        train_segment_tokens=train_segment_tokens,
    )

    def make_gold(example: Example, prefix: str) -> Tuple[Optional[SparseGold], int]:
        target, n_missed = petra_sparse_target(example, prefix)
        if target is None:
            return None, n_missed
        spans, pairs = target
        return SparseGold(spans=spans, pairs=pairs), n_missed

    encoder = tok2vec
    if freeze_encoder:
        encoder = frozen_encoder(
            tok2vec,
            encoder_layers=encoder_layers,
            skip_top_layers=skip_top_layers,
            cache_mb=frozen_cache_mb,
            cache_dir=frozen_cache_dir,
        )
    model = build_coref_model(
        PETRA_MODEL_NAME,
        encoder,
        head,
        make_petra_head_input,
        make_gold=make_gold,
        decoder=PeTraDecoder(),
        lr_scale=float(head_lr_scale),
        reads_mirror=is_gap_doc,
    )
    model.attrs["keep_entity_states"] = keep_entity_states
    return model


def keep_entity_states(model: Model, on: bool) -> None:
    """Whether the PeTra head of `model` keeps the cell states the entity
    vectors are read from when it predicts (the component's entity_vectors
    setting). A function of the model, not of one head, so that a copy of
    the model sets its own head."""
    model.layers[1].shims[0]._model.keep_cell_states = bool(on)


# ----- the head's input (no torch maths) ----------------------------------------------


def is_gap_doc(doc: Doc) -> bool:
    """Whether a Doc carries a GAP pair (A, B, PRONOUN): the Docs whose gender
    mirror the head reads (it averages their pair's link probabilities)."""
    return GAP_SPANS_KEY in doc.spans


def make_petra_head_input(doc: Doc, tokens: Any, mirror: Any = None) -> Tuple[Any, ...]:
    """The head's input for one Doc: its token features, for a GAP Doc the
    inclusive token ranges of (A, B, PRONOUN) on this Doc, and the tokens
    at which the head keeps the whole memory when it predicts (those a
    decoding rule may move to another cell: decoders.petra.movable_tokens),
    so that every entity vector is its own cell's state.

    doc (Doc): the Doc the model reads.
    tokens (torch.Tensor): [T, d] features.
    mirror (Optional[torch.Tensor]): [T, d] the features of the Doc's gender
        mirror (models.thinc_glue.set_gender_mirror), or None.
    RETURNS (Tuple): (tokens, gap spans or None, token positions), and the
        mirror's features when given.
    """
    gap = None
    if len(doc) and GAP_SPANS_KEY in doc.spans:
        spans = gap_reference_spans(doc)
        if spans is not None:
            gap = tuple((span.start, span.end - 1) for span in spans)
    if mirror is not None:
        return tokens, gap, tuple(movable_tokens(doc)), mirror
    return tokens, gap, tuple(movable_tokens(doc))
