"""PeTraHead: pytorch_petra.PeTra behind the interface every coreference head
has (``forward(inputs, golds) -> (loss, predictions)``, see
thinc_glue.build_coref_model), as pytorch_s2e.S2EHead is for s2e. Pure
PyTorch (and numpy): this module never imports spaCy or Thinc.

- The PeTra module is created on the first batch with a token, once the
  feature width is known, and re-created from the saved weights' shapes when
  a pipeline is loaded (so nlp.to_disk / spacy.load / from_bytes work without
  nlp.initialize()).
- It owns the Gumbel-softmax temperature schedule: tau = 1, halved every
  ``temperature_halving_steps`` training batches, floored at MIN_TEMPERATURE,
  counted in a buffer saved with the weights.
- Every prediction is converted to numpy on the CPU: clusters decoded from
  the memory log, the log itself, the cell states the entity vectors are
  read from (decoders.predictions.CellStates: the argmax action's cell at
  each token, the whole memory at the tokens an input names, those a
  decoding rule may move) and, for a GAP document, the link probabilities
  of A and B with the pronoun.
"""

from typing import Any, Dict, Optional, Tuple

import numpy
import torch
from torch import nn

from ...doc_helpers import LOG_KEYS
from ...decoders.petra import decode_clusters
from ...decoders.predictions import CellStates, LogDecoding, PeTraPrediction
from .pytorch_petra import CELL_KEY, SNAPSHOT_KEY, PeTra, span_link_probability
from .training_segments import split_for_training

# tau never goes below this (halving forever would end in inf / NaN).
MIN_TEMPERATURE = 0.01


class ScalarMix(nn.Module):
    """gamma * sum_l softmax(w)_l * x_l over L layers concatenated on the
    last axis ([T, L * d] -> [T, d]); w starts at 0 (the mean), gamma at 1.

    n_layers (int): L.
    """

    def __init__(self, n_layers: int) -> None:
        super().__init__()
        self.n_layers = n_layers
        self.weights = nn.Parameter(torch.zeros(n_layers))
        self.gamma = nn.Parameter(torch.ones(1))  # 1-d: Thinc's optimizer cannot take 0-d weights

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[-1] % self.n_layers:
            raise ValueError(f"the input width {x.shape[-1]} is not {self.n_layers} layers of equal width")
        layers = x.reshape(*x.shape[:-1], self.n_layers, x.shape[-1] // self.n_layers)
        weights = torch.softmax(self.weights, dim=0).to(x.dtype)
        return self.gamma.to(x.dtype) * torch.einsum("...ld,l->...d", layers, weights)


class PeTraHead(nn.Module):
    """pytorch_petra.PeTra behind the (inputs, golds) -> (loss,
    predictions) interface of thinc_glue.build_coref_model.

    The PeTra module is created on the first batch with a token (its
    GRU input width is the encoder's width), or from a saved state dict.
    An input is (features [T, d_in], GAP spans or None) or, with a third
    item, the token positions to keep the whole memory at
    (petra_model.make_petra_head_input: the tokens a decoding rule may move).

    petra_kwargs (dict): PeTra's keyword arguments, input_size excluded.
    entity_threshold (float): decode_clusters threshold.
    min_mentions (int): decode_clusters min_mentions.
    temperature_halving_steps (int): tau halves every this many training
        batches (0: constant 1).
    mix_layers (int): L > 1: each token's input is L layers concatenated,
        replaced by their learned scalar mix (ScalarMix); 0: used as it is.
    train_segment_tokens (int): > 0: in training, documents longer than this
        are read in segments (training_segments.split_for_training); 0:
        whole.

    The arguments have no defaults: the builder (models.petra.petra_model.build_petra)
    is their home.
    """

    num_updates: torch.Tensor  # a buffer: the training batches seen

    def __init__(
        self,
        *,
        petra_kwargs: Dict[str, Any],
        entity_threshold: float,
        min_mentions: int,
        temperature_halving_steps: int,
        mix_layers: int,
        train_segment_tokens: int,
    ) -> None:
        super().__init__()
        self.petra_kwargs = dict(petra_kwargs)
        self.entity_threshold = entity_threshold
        self.min_mentions = min_mentions
        self.temperature_halving_steps = temperature_halving_steps
        self.train_segment_tokens = train_segment_tokens
        self.petra: Optional[PeTra] = None
        self.mix: Optional[ScalarMix] = ScalarMix(mix_layers) if mix_layers > 1 else None
        # keep the cell states for the entity vectors when predicting (the
        # component's entity_vectors setting, through the model's
        # keep_entity_states hook; not saved)
        self.keep_cell_states = True
        # predicting, read a GAP text's gender mirror too (the input's fourth
        # item) and give its pair the mean of the two readings' link
        # probabilities (models.thinc_glue.set_gender_mirror sets it; not saved)
        self.gender_mirror = False
        # Training batches seen: drives the temperature schedule, saved
        # with the weights so that resumed training continues it.
        self.register_buffer("num_updates", torch.zeros((), dtype=torch.long))

    # -- lazy construction ---------------------------------------------------

    def _build(self, input_size: int, device: torch.device) -> PeTra:
        petra = PeTra(input_size, **self.petra_kwargs)
        petra.train(self.training)
        self.petra = petra.to(device)
        return self.petra

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
        feats = [item[0] for item in inputs]
        if self.mix is not None:
            feats = [self.mix(x) for x in feats]
        nonempty = [i for i, x in enumerate(feats) if x.shape[0] > 0]
        petra = self.petra
        if petra is None:
            if not nonempty:
                return None, [self._empty_prediction(self.petra_kwargs["num_cells"]) for _ in inputs]
            first = feats[nonempty[0]]
            petra = self._build(int(first.shape[1]), first.device)
        if self.training and golds is not None:
            petra.set_temperature(self.temperature())
            self.num_updates += 1
        d_in = petra.input_size
        feats = [x if x.shape[0] > 0 else x.new_zeros(0, d_in) for x in feats]
        gold = None
        if golds is not None:
            gold = list(golds)
            if self.training and self.train_segment_tokens:
                feats, gold, _ = split_for_training(feats, gold, self.train_segment_tokens)
        # predicting: keep the cell states the entity vectors are read from
        record = None
        if not self.training and self.keep_cell_states:
            record = [tuple(item[2]) if len(item) > 2 else () for item in inputs]
        loss, logs = petra(feats, gold, record=record)
        if self.training:
            return loss, [PeTraPrediction() for _ in inputs]
        kept = record if record is not None else [None] * len(inputs)
        mirror_logs = self._mirror_logs(petra, inputs) if golds is None and self.gender_mirror else {}
        return loss, [
            self._prediction(log, item[1], positions, mirror_logs.get(i))
            for i, (log, item, positions) in enumerate(zip(logs, inputs, kept))
        ]

    def _mirror_logs(self, petra: PeTra, inputs) -> Dict[int, Dict[str, torch.Tensor]]:
        """The memory logs of the gender mirrors of the GAP texts that have
        one (the input's fourth item), by the input's index."""
        which = [i for i, item in enumerate(inputs) if len(item) > 3 and item[3] is not None and item[1] is not None]
        if not which:
            return {}
        feats = [inputs[i][3] for i in which]
        if self.mix is not None:
            feats = [self.mix(x) for x in feats]
        _, logs = petra(feats, None)
        return dict(zip(which, logs))

    def _empty_prediction(self, n_cells: int) -> PeTraPrediction:
        log = {
            "entity": numpy.zeros((0,), dtype=numpy.float32),
            "overwrite": numpy.zeros((0, n_cells), dtype=numpy.float32),
            "coref": numpy.zeros((0, n_cells), dtype=numpy.float32),
            "usage": numpy.zeros((0, n_cells), dtype=numpy.float32),
        }
        return PeTraPrediction(clusters=[], memory_log=log)

    def _prediction(self, log, gap, kept, mirror_log=None) -> PeTraPrediction:
        states = None
        if kept is not None:
            states = CellStates(
                cells=_to_numpy(log[CELL_KEY]),
                positions=tuple(sorted({int(t) for t in kept})),
                snapshots=_to_numpy(log[SNAPSHOT_KEY]),
            )
        log = {key: log[key].detach() for key in LOG_KEYS}
        arrays = {key: log[key].float().cpu().numpy().astype("float32", copy=False) for key in LOG_KEYS}
        probabilities: Optional[Tuple[float, float]] = None
        if gap is not None:
            span_a, span_b, pronoun = gap
            probabilities = (
                float(span_link_probability(log, span_a, pronoun)),
                float(span_link_probability(log, span_b, pronoun)),
            )
            if mirror_log is not None:
                # the mirror's tokens stand for the text's, one for one
                probabilities = (
                    (probabilities[0] + float(span_link_probability(mirror_log, span_a, pronoun))) / 2,
                    (probabilities[1] + float(span_link_probability(mirror_log, span_b, pronoun))) / 2,
                )
        return PeTraPrediction(
            clusters=decode_clusters(arrays, threshold=self.entity_threshold, min_mentions=self.min_mentions),
            memory_log=arrays,
            # what the decoder needs to decode the log again under the Doc's rules
            decoding=LogDecoding(threshold=self.entity_threshold, min_mentions=self.min_mentions),
            gap=probabilities,
            cell_states=states,
        )


def _to_numpy(tensor: torch.Tensor) -> numpy.ndarray:
    return numpy.ascontiguousarray(tensor.detach().float().cpu().numpy(), dtype=numpy.float32)
