"""PeTra's decoder: what a prediction writes on a Doc, and the decisions on
its probabilities (torch-free).

- The memory log goes to ``doc._.memory_log`` (doc_helpers.memory_log).
- A GAP Doc's link probabilities of A and B with the pronoun go to
  ``doc.user_data["gap_probs"]``: {"A", "B"} calibrated with
  ``gap_calibration`` (decoders.calibration; the raw ones kept as "A_raw",
  "B_raw", the calibration as "calibration_scale" / "calibration_shift"), and
  the decision threshold ``gap_threshold`` as "threshold": a candidate is
  linked when its (calibrated) probability is >= the threshold
  (`gap_linked`; scoring.gap_decisions reads them back).
- Entity vectors (`PeTraDecoder.entity_vectors`): each cluster's cell's
  state right after the update at its last token, from the prediction's
  CellStates (decoders.entity_vectors.pick_cell_states).
- People counting (paper §3.5): a document's count is the number of (token,
  cell) with overwrite probability o_t^i >= ``people_alpha`` (`people_count`).

The settings live in the component's cfg (``gap_threshold`` and
``gap_calibration`` are arguments of the `memcoref_petra` factory, with its
defaults; ``people_alpha`` is stored by `count-people --output`); the
component hands them over with `PeTraDecoder.configure`. A setting that is
not given is not applied: no calibration, no stored threshold (readers then
use DEFAULT_GAP_THRESHOLD), alpha DEFAULT_ALPHA.
"""

from dataclasses import dataclass, field
from typing import Any, ClassVar, Dict, FrozenSet, List, Mapping, Optional, Sequence, Set, Tuple, cast

import numpy
from spacy.tokens import Doc

from ..doc_helpers.entity_vectors import MEMORY_CELL_SOURCE
from ..doc_helpers.gap_annotation import GAP_PROBS_KEY
from ..doc_helpers.memory_log import set_memory_log
from ..util import Clusters, TokenSpan
from .calibration import IDENTITY, calibrate, check_calibration
from .constraints import (
    ALL_RULES,
    NO_FEATURES,
    THIRD_PLURAL,
    WORD,
    DocRules,
    conflict,
    conjunct_name_words,
    has_word_character,
    letter_parts,
    pronoun_features,
)
from .entity_vectors import pick_cell_states
from .predictions import PeTraPrediction

# the decision threshold where none is given (the scorer's default, and the
# threshold of Docs whose gap_probs store none)
DEFAULT_GAP_THRESHOLD = 0.5
# the people-count alpha where none was chosen
DEFAULT_ALPHA = 0.5
# the component cfg key a chosen alpha is stored under
PEOPLE_ALPHA_KEY = "people_alpha"


def check_probability(value: Any, where: str) -> float:
    """RAISES ValueError: not a number in [0, 1]."""
    if not (isinstance(value, (int, float)) and not isinstance(value, bool) and 0.0 <= value <= 1.0):
        raise ValueError(f"{where} must be a probability in [0, 1], got {value!r}")
    return float(value)


def gap_linked(p: float, threshold: float) -> bool:
    """The GAP decision: a candidate is linked when p >= threshold."""
    return p >= threshold


def people_count(overwrite: numpy.ndarray, alpha: float) -> int:
    """The predicted people count of one document.

    overwrite (numpy.ndarray): o_t^i [T, N] from the memory log.
    alpha (float): the overwrite threshold.
    RETURNS (int): the number of (token, cell) with o_t^i >= alpha.
    """
    return int((numpy.asarray(overwrite) >= alpha).sum())


class PeTraDecoder:
    """PeTra's decisions on a prediction's probabilities (a
    decoders.protocol.Decoder of PeTraPrediction).

    gap_threshold (Optional[float]): GAP decision threshold (None: none stored).
    gap_calibration (Optional[Sequence[float]]): [scale, shift] (None: raw).
    people_alpha (Optional[float]): people-count threshold (None: DEFAULT_ALPHA).
    """

    # the settings chosen after training, kept in the component's cfg and
    # config block (the memcoref_petra factory's arguments)
    COMPONENT_SETTINGS: ClassVar[Tuple[str, ...]] = ("gap_threshold", "gap_calibration", PEOPLE_ALPHA_KEY)

    def __init__(
        self,
        gap_threshold: Optional[float] = None,
        gap_calibration: Optional[Sequence[float]] = None,
        people_alpha: Optional[float] = None,
    ) -> None:
        self.gap_threshold: Optional[float] = None
        self.gap_calibration: Optional[List[float]] = None
        self.people_alpha: Optional[float] = None
        self.configure(
            {"gap_threshold": gap_threshold, "gap_calibration": gap_calibration, PEOPLE_ALPHA_KEY: people_alpha}
        )

    def configure(self, settings: Mapping[str, Any]) -> Dict[str, Any]:
        """Take the settings this decoder owns from `settings`, validated (a
        key given as None unsets it; other keys are ignored).

        RETURNS (Dict[str, Any]): the settings taken that are not None, as
            stored in the component's cfg.
        RAISES ValueError: a threshold outside [0, 1], or a calibration that
            is not [scale > 0, shift].
        """
        taken: Dict[str, Any] = {}
        if "gap_threshold" in settings:
            value = settings["gap_threshold"]
            self.gap_threshold = None if value is None else check_probability(value, "gap_threshold")
        if "gap_calibration" in settings:
            value = settings["gap_calibration"]
            self.gap_calibration = None if value is None else list(check_calibration(value))
        if PEOPLE_ALPHA_KEY in settings:
            value = settings[PEOPLE_ALPHA_KEY]
            self.people_alpha = None if value is None else check_probability(value, PEOPLE_ALPHA_KEY)
        for key in self.COMPONENT_SETTINGS:
            if key in settings and getattr(self, key) is not None:
                taken[key] = getattr(self, key)
        return taken

    # ----- GAP ------------------------------------------------------------------

    def calibration(self) -> Tuple[float, float]:
        """(scale, shift) that this decoder applies (IDENTITY without one)."""
        return cast(Tuple[float, float], tuple(self.gap_calibration)) if self.gap_calibration is not None else IDENTITY

    def gap_probabilities(self, probs: Tuple[float, float]) -> Dict[str, float]:
        """The gap_probs entry of raw (p_A, p_B): calibrated, with the raw
        values, the calibration and the threshold where they are set."""
        out = {"A": float(probs[0]), "B": float(probs[1])}
        if self.gap_calibration is not None:
            for key in ("A", "B"):
                out[f"{key}_raw"] = out[key]
                out[key] = calibrate(out[key], self.gap_calibration)
            # scalars, not a list: DocBin's msgpack gives lists back as tuples
            out["calibration_scale"], out["calibration_shift"] = map(float, self.gap_calibration)
        if self.gap_threshold is not None:
            # the decision threshold travels with the probabilities (export gap reads it)
            out["threshold"] = float(self.gap_threshold)
        return out

    # ----- the Doc --------------------------------------------------------------

    def clusters(
        self, prediction: PeTraPrediction, *, doc: Optional[Doc] = None, rules: FrozenSet[str] = ALL_RULES
    ) -> Clusters:
        """The clusters of one prediction: decoded from its memory log under
        the Doc's `rules` (decoders.constraints) when the Doc is given, else
        as the head decoded them."""
        settings = prediction.decoding
        if doc is None or settings is None or prediction.memory_log is None:
            return prediction.clusters
        return decode_clusters(
            prediction.memory_log,
            threshold=settings.threshold,
            min_mentions=settings.min_mentions,
            rules=DocRules(doc, rules),
        )

    def entity_vectors(
        self,
        prediction: PeTraPrediction,
        clusters: Clusters,
        *,
        doc: Optional[Doc] = None,
        rules: FrozenSet[str] = ALL_RULES,
    ) -> Optional[Tuple[numpy.ndarray, str]]:
        """One vector a cluster of `clusters` (as `clusters` gave them, with
        the same `doc` and `rules`): the state of its entity's memory cell
        right after the update at its last token, [K, d] float32, and their
        source (MEMORY_CELL_SOURCE); None when the prediction kept no cell
        states (training)."""
        states = prediction.cell_states
        if states is None:
            return None

        n_tokens = int(states.cells.shape[0])

        def token_cells() -> Sequence[int]:
            settings, log = prediction.decoding, prediction.memory_log
            if settings is None or log is None:
                return [-1] * n_tokens
            return _decode(log, threshold=settings.threshold, rules=None if doc is None else DocRules(doc, rules))[2]

        vectors = pick_cell_states(states.cells, states.positions, states.snapshots, clusters, token_cells)
        return vectors, MEMORY_CELL_SOURCE

    def write(self, doc: Doc, prediction: PeTraPrediction) -> None:
        """Write a prediction's extras: doc._.memory_log and, for a GAP Doc,
        doc.user_data["gap_probs"] (`gap_probabilities`)."""
        if prediction.memory_log is not None:
            set_memory_log(doc, prediction.memory_log)
        if prediction.gap is not None:
            doc.user_data[GAP_PROBS_KEY] = self.gap_probabilities(prediction.gap)
        else:
            doc.user_data.pop(GAP_PROBS_KEY, None)


def decode_clusters(
    log: Mapping[str, Any], *, threshold: float = 0.5, min_mentions: int = 2, rules: Optional[DocRules] = None
) -> Clusters:
    """Clusters from a memory log.

    An entity is (cell, overwrite episode): a new episode of a cell begins
    whenever a token's argmax action is OVERWRITE at that cell. A token with
    e_t >= threshold joins the entity of its argmax action over
    [o_t^1..o_t^N, c_t^1..c_t^N] (ties: overwrite before coref, lower cell
    first); a COREF to a cell with no episode yet opens one. A mention is a
    maximal run of consecutive such tokens with the same entity.

    With `rules` (the Doc's, decoders.constraints): a pronoun token whose
    argmax COREF would put it in an entity with a pronoun it cannot corefer
    with takes its next-best action instead (an OVERWRITE, or a COREF to an
    entity it fits); a run loses the tokens without a letter or digit at its
    ends (spaces, emoji, punctuation), and a run that is then no word
    (DocRules.is_mention) is no mention.

    log (Mapping): memory log: "entity" [T], "overwrite" and "coref" [T, N],
        numpy arrays (or anything numpy.asarray reads, a CPU tensor too).
    threshold (float): entity probability a token needs to be in a mention.
    min_mentions (int): entities with fewer mentions are dropped (2 keeps
        singletons out, as spaCy coref clusters do).
    rules (Optional[DocRules]): the Doc's decoding rules; None: none.
    RETURNS (Clusters): clusters of inclusive token ranges (TokenSpan),
        mentions in text order, clusters by first mention.
    """
    mentions, _ = decode_entities(log, threshold=threshold, rules=rules)
    clusters = [sorted(spans) for spans in mentions.values() if len(spans) >= min_mentions]
    return sorted(clusters)


@dataclass
class CellEpisodes:
    """Where the decoding of a log stands after its last token, so that the
    log of text that follows (a stream's next piece, read from the memory
    as it was) is decoded as if the two were one log.

    episode (List[int]): each cell's current episode (-1: never written).
    features (List[Set[str]]): each cell's current entity's features
        (decoders.constraints: the pronouns' gender, person, ...).
    """

    episode: List[int]
    features: List[Set[str]] = field(default_factory=list)

    @classmethod
    def empty(cls, n_cells: int) -> "CellEpisodes":
        return cls([-1] * n_cells, [set() for _ in range(n_cells)])


def movable_tokens(doc: Doc) -> List[int]:
    """The tokens a decoding rule may move off their argmax action's cell
    (decode_entities: a token with features, DocRules.features, whose
    argmax COREF conflicts): those with a pronoun's features, whatever the
    rules and speakers, and a letter's greeting and signature names where
    the Doc has no speaker turns (each one-token feature is given to these
    words only). The head keeps the whole memory at them for the entity vectors.

    RETURNS (List[int]): their indices, in order.
    """
    movable = {token.i for token in doc if pronoun_features(token.text) or token.text.lower() in THIRD_PLURAL}
    # a name's words a coordination may hold (CONJUNCT_NAMES)
    conjunct_words = conjunct_name_words(doc)
    movable.update(token.i for token in doc if token.text.lower() in conjunct_words)
    if "speakers" not in doc.spans:
        # a letter's greeting and signature names (the VOICE rule's "you" and "I")
        for part in letter_parts(doc):
            if part is not None:
                movable.update(range(part[0], part[1] + 1))
    return sorted(movable)


def decode_entities(
    log: Mapping[str, Any],
    *,
    threshold: float = 0.5,
    rules: Optional[DocRules] = None,
    state: Optional[CellEpisodes] = None,
) -> Tuple[Dict[Tuple[int, int], List[TokenSpan]], CellEpisodes]:
    """The mentions of a memory log by entity (cell, episode), by
    decode_clusters' rules, singletons included; from `state` (where an
    earlier log's decoding ended) when given.

    RETURNS (Tuple[Dict, CellEpisodes]): {(cell, episode): mentions in text
        order} and where the decoding stands after the log's last token.
    """
    mentions, after, _ = _decode(log, threshold=threshold, rules=rules, state=state)
    return mentions, after


def _decode(
    log: Mapping[str, Any],
    *,
    threshold: float,
    rules: Optional[DocRules],
    state: Optional[CellEpisodes] = None,
) -> Tuple[Dict[Tuple[int, int], List[TokenSpan]], CellEpisodes, List[int]]:
    """decode_entities, with each token's cell (-1: in no entity) too."""
    entity, over, coref = (numpy.asarray(log[key], dtype=numpy.float64) for key in ("entity", "overwrite", "coref"))
    n_cells = over.shape[1] if over.ndim == 2 else 0
    if state is None:
        state = CellEpisodes.empty(n_cells)
    elif len(state.episode) != n_cells:
        raise ValueError(f"decode_entities: the state has {len(state.episode)} cells, the log {n_cells}")
    episode = list(state.episode)
    cell_features = [set(f) for f in state.features] if state.features else [set() for _ in range(n_cells)]
    mentions: Dict[Tuple[int, int], List[TokenSpan]] = {}
    token_cells = [-1] * entity.shape[0]
    current: Optional[Tuple[int, int]] = None
    start = 0

    def close(ent: Tuple[int, int], first: int, last: int) -> None:
        if rules is not None and WORD in rules.enabled:
            # a token run's ends that are no word (a space, an emoji, a
            # comma) are not part of the mention
            doc = rules.doc
            while first <= last and not has_word_character(doc[first].text):
                first += 1
            while last >= first and not has_word_character(doc[last].text):
                last -= 1
            if first > last or not rules.is_mention((first, last)):
                return
        mentions.setdefault(ent, []).append((first, last))

    for t in range(entity.shape[0]):
        ent_id: Optional[Tuple[int, int]] = None
        if n_cells and entity[t] >= threshold:
            scores = numpy.concatenate([over[t], coref[t]])
            features = rules.features((t, t)) if rules is not None else NO_FEATURES

            def fits(a: int) -> bool:
                c = a % n_cells
                return a < n_cells or episode[c] < 0 or not conflict(cell_features[c] | features)

            action = int(numpy.argmax(scores))
            if features and not fits(action):
                # the next best that fits (ties: the lower index, as argmax); an OVERWRITE always does
                action = next(a for a in sorted(range(2 * n_cells), key=lambda a: (-scores[a], a)) if fits(a))
            cell = action % n_cells
            if action < n_cells or episode[cell] < 0:
                episode[cell] += 1
                cell_features[cell] = set()
            ent_id = (cell, episode[cell])
            token_cells[t] = cell
            cell_features[cell].update(features)
        new_run = ent_id != current
        if current is not None and new_run:
            close(current, start, t - 1)
        if ent_id is not None and new_run:
            start = t
        current = ent_id
    if current is not None:
        close(current, start, entity.shape[0] - 1)
    return mentions, CellEpisodes(episode, cell_features), token_cells
