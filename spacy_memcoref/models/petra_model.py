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
- the head (`PeTraHead`, a torch module): pytorch_petra.PeTra, created on the
  first batch once the feature width is known and re-created from the saved
  weights' shapes when a pipeline is loaded (nlp.to_disk / spacy.load /
  from_bytes work without nlp.initialize()). It owns the Gumbel-softmax
  temperature schedule (tau = 1, halved every ``temperature_halving_steps``
  training batches, floored at MIN_TEMPERATURE), counted in a buffer saved with
  the weights. It converts every prediction to numpy on the CPU.
"""
import functools
from typing import Any, Callable, Dict, List, Optional, Tuple

from spacy.tokens import Doc
from spacy.training import Example
from spacy.util import registry
from thinc.api import Model
from thinc.types import Floats2d

from ..doc_helpers.gap_annotation import GAP_PROBS_KEY, gap_reference_spans
from ..doc_helpers.memory_log import set_memory_log
from ..doc_helpers.petra_gold import petra_sparse_target
from .frozen_encoder import frozen_encoder, frozen_options_error

# tau never goes below this (halving forever would end in inf / NaN).
MIN_TEMPERATURE = 0.01


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
    RETURNS (Model): input (docs, sparse golds or None), output (loss, one
        prediction dict a doc: clusters, memory_log, gap).
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
    _check(_is_int(fixed_key_size) and fixed_key_size >= 0, f"fixed_key_size must be an integer >= 0, got {fixed_key_size!r}")
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
    _check(_is_int(min_mentions) and min_mentions >= 1, f"min_mentions must be a positive integer, got {min_mentions!r}")
    frozen_error = frozen_options_error(tok2vec, freeze_encoder, encoder_layers)
    _check(frozen_error is None, frozen_error or "")

    from .pytorch_petra import SparseGold
    from .torch_head import build_coref_model

    head_cls = _petra_head_class()
    head = head_cls(
        petra_kwargs=dict(
            hidden_size=hidden_size,
            num_cells=num_cells,
            mlp_size=mlp_size,
            usage_decay=float(usage_decay),
            entity_loss_weight=float(entity_loss_weight),
            dropout=float(dropout),
            learned_init=learned_init,
            fixed_key_size=fixed_key_size,
        ),
        entity_threshold=float(entity_threshold),
        min_mentions=min_mentions,
        temperature_halving_steps=temperature_halving_steps,
    )

    def make_gold(example: Example, prefix: str) -> Tuple[Optional[SparseGold], int]:
        target, n_missed = petra_sparse_target(example, prefix)
        if target is None:
            return None, n_missed
        spans, pairs = target
        return SparseGold(spans=spans, pairs=pairs), n_missed

    encoder = frozen_encoder(tok2vec, encoder_layers=encoder_layers) if freeze_encoder else tok2vec
    return build_coref_model(
        "petra",
        encoder,
        head,
        make_petra_head_input,
        lr_scale=float(head_lr_scale),
        attrs={"gold_kind": "sparse", "make_gold": make_gold, "write_extras": write_petra_extras},
    )


# ----- the head's input and the Doc writer (no torch maths) ------------------------


def make_petra_head_input(doc: Doc, tokens: Any) -> Tuple[Any, Optional[Tuple[Tuple[int, int], ...]]]:
    """The head's input for one Doc: its token features and, for a GAP Doc,
    the inclusive token ranges of (A, B, PRONOUN) on this Doc.

    doc (Doc): the Doc the model reads.
    tokens (torch.Tensor): [T, d] features.
    RETURNS (Tuple): (tokens, gap spans or None).
    """
    gap = None
    if len(doc) and "gap" in doc.spans:
        spans = gap_reference_spans(doc)
        if spans is not None:
            gap = tuple((span.start, span.end - 1) for span in spans)
    return tokens, gap


def write_petra_extras(doc: Doc, prediction: Dict[str, Any]) -> None:
    """Write a PeTra prediction's extras: doc._.memory_log and, for a GAP
    Doc, doc.user_data["gap_probs"] = {"A": p_A, "B": p_B}.

    doc (Doc): the Doc.
    prediction (Dict[str, Any]): one prediction of the head.
    """
    if "memory_log" in prediction:
        set_memory_log(doc, prediction["memory_log"])
    if prediction.get("gap") is not None:
        p_a, p_b = prediction["gap"]
        doc.user_data[GAP_PROBS_KEY] = {"A": float(p_a), "B": float(p_b)}
    else:
        doc.user_data.pop(GAP_PROBS_KEY, None)


# ----- the torch head -------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _petra_head_class():
    """Define PeTraHead on first use, so this module imports without torch."""
    import torch
    from torch import nn

    from .pytorch_petra import LOG_KEYS, PeTra, decode_clusters, span_link_probability

    class PeTraHead(nn.Module):
        """pytorch_petra.PeTra behind the (inputs, golds) -> (loss,
        predictions) interface of torch_head.build_coref_model.

        The PeTra module is created on the first batch with a token (its
        GRU input width is the encoder's width), or from a saved state dict.

        petra_kwargs (dict): PeTra's keyword arguments, input_size excluded.
        entity_threshold (float): decode_clusters threshold.
        min_mentions (int): decode_clusters min_mentions.
        temperature_halving_steps (int): tau halves every this many training
            batches (0: constant 1).
        """

        def __init__(
            self,
            *,
            petra_kwargs: Dict[str, Any],
            entity_threshold: float = 0.5,
            min_mentions: int = 2,
            temperature_halving_steps: int = 0,
        ) -> None:
            super().__init__()
            self.petra_kwargs = dict(petra_kwargs)
            self.entity_threshold = entity_threshold
            self.min_mentions = min_mentions
            self.temperature_halving_steps = temperature_halving_steps
            self.petra: Optional[PeTra] = None
            # Training batches seen: drives the temperature schedule, saved
            # with the weights so that resumed training continues it.
            self.register_buffer("num_updates", torch.zeros((), dtype=torch.long))

        # -- lazy construction ---------------------------------------------------

        def _build(self, input_size: int, device: torch.device) -> None:
            petra = PeTra(input_size, **self.petra_kwargs)
            petra.train(self.training)
            self.petra = petra.to(device)

        def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
            key = prefix + "petra.gru.weight_ih_l0"
            if self.petra is None and key in state_dict:
                self._build(int(state_dict[key].shape[1]), self.num_updates.device)
            super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

        # -- schedule ------------------------------------------------------------

        def temperature(self) -> float:
            """RETURNS (float): tau for the next training batch."""
            steps = self.temperature_halving_steps
            if not steps:
                return 1.0
            return max(MIN_TEMPERATURE, 0.5 ** (int(self.num_updates) // steps))

        # -- forward -------------------------------------------------------------

        def forward(self, inputs, golds=None):
            feats = [x for x, _ in inputs]
            nonempty = [i for i, x in enumerate(feats) if x.shape[0] > 0]
            if self.petra is None:
                if not nonempty:
                    return None, [self._empty_prediction(self.petra_kwargs["num_cells"]) for _ in inputs]
                first = feats[nonempty[0]]
                self._build(int(first.shape[1]), first.device)
            petra = self.petra
            if self.training and golds is not None:
                petra.set_temperature(self.temperature())
                self.num_updates += 1
            d_in = petra.input_size
            feats = [x if x.shape[0] > 0 else x.new_zeros(0, d_in) for x in feats]
            gold = None
            if golds is not None:
                gold = list(golds)
            loss, logs = petra(feats, gold)
            if self.training:
                return loss, [{"clusters": []} for _ in inputs]
            return loss, [self._prediction(log, gap) for log, (_, gap) in zip(logs, inputs)]

        def _empty_prediction(self, n_cells: int) -> Dict[str, Any]:
            import numpy

            log = {
                "entity": numpy.zeros((0,), dtype=numpy.float32),
                "overwrite": numpy.zeros((0, n_cells), dtype=numpy.float32),
                "coref": numpy.zeros((0, n_cells), dtype=numpy.float32),
                "usage": numpy.zeros((0, n_cells), dtype=numpy.float32),
            }
            return {"clusters": [], "memory_log": log}

        def _prediction(self, log, gap) -> Dict[str, Any]:
            log = {key: log[key].detach() for key in LOG_KEYS}
            arrays = {key: log[key].float().cpu().numpy().astype("float32", copy=False) for key in LOG_KEYS}
            prediction: Dict[str, Any] = {
                "clusters": decode_clusters(arrays, threshold=self.entity_threshold, min_mentions=self.min_mentions),
                "memory_log": arrays,
            }
            if gap is not None:
                span_a, span_b, pronoun = gap
                prediction["gap"] = (
                    float(span_link_probability(log, span_a, pronoun)),
                    float(span_link_probability(log, span_b, pronoun)),
                )
            return prediction

    return PeTraHead
