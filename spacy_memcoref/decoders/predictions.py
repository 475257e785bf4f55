"""What a coreference head hands its decoder: one prediction a document
(torch-free; numpy only).

The torch heads (models.s2e.pytorch_s2e.S2EHead, models.petra.
pytorch_petra_head.PeTraHead) make them on the CPU, as plain Python and
numpy values; the component (pipeline.coref_component) passes them from the
model to the decoder (decoders.s2e.S2EDecoder, decoders.petra.PeTraDecoder)
unread. While training, a head predicts nothing: an empty prediction a
document (no links; no clusters).
"""

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple, Union

import numpy

from ..util import Clusters

# (starts, ends, best antecedent index or -1, its score): one entry a kept
# candidate, in text order; the scores are the head's (float32) values
Links = Tuple[List[int], List[int], List[int], List[float]]
# each kept candidate's best antecedents and their scores, best first (only
# the real ones: none after the first missing antecedent)
Choices = Tuple[List[List[int]], List[List[float]]]
# a memory log: "entity" [T], "overwrite", "coref", "usage" [T, N], float32
MemoryLog = Dict[str, numpy.ndarray]


@dataclass(frozen=True)
class S2EPrediction:
    """One document's s2e prediction (S2EHead.prediction).

    links (Optional[Links]): the kept candidates and each one's best
        antecedent with its score; None for a document without tokens, and
        while training.
    choices (Optional[Choices]): each kept candidate's best few antecedents
        (ANTECEDENT_CHOICES), best first, so that a decoding rule that rules
        the best out takes the next; None: the best alone (links).
    """

    links: Optional[Links] = None
    choices: Optional[Choices] = None
    # each kept candidate's antecedent endpoint features [n, 2 * hidden]
    # float32, in the order of links' starts and ends ([a^s(start);
    # a^e(end)]): what an entity vector is pooled from
    # (decoders.entity_vectors); None while
    # training and for a document without tokens; not compared by == (an
    # array has no one truth value; links and choices say what was decided)
    endpoints: Optional[numpy.ndarray] = field(default=None, compare=False)


@dataclass(frozen=True)
class LogDecoding:
    """The settings the head decoded its memory log with
    (decoders.petra.decode_clusters), so that the decoder can decode it again
    under a Doc's rules.

    threshold (float): the entity probability a token needs to be in a mention.
    min_mentions (int): entities with fewer mentions are dropped.
    """

    threshold: float
    min_mentions: int


@dataclass(frozen=True)
class CellStates:
    """What PeTra's memory held at inference, as much as its entity vectors
    need (decoders.petra.PeTraDecoder.entity_vectors), float32.

    cells (numpy.ndarray): [T, d]: at each token, the state right after its
        update of the cell its argmax action over [o_t; c_t] chose (the cell
        decoding puts the token in unless a decoding rule moves it).
    positions (Tuple[int, ...]): the tokens a decoding rule may move to
        another cell (pronouns; decoders.petra.movable_tokens), in order.
    snapshots (numpy.ndarray): [len(positions), N, d]: the whole memory
        right after the update at each of them.
    """

    cells: numpy.ndarray
    positions: Tuple[int, ...]
    snapshots: numpy.ndarray


@dataclass(frozen=True)
class PeTraPrediction:
    """One document's PeTra prediction (PeTraHead).

    clusters (Clusters): the clusters the head decoded from the memory log
        (no decoding rules); [] while training.
    memory_log (Optional[MemoryLog]): the memory log, numpy float32 arrays;
        None while training.
    decoding (Optional[LogDecoding]): the settings `clusters` were decoded
        with; None where the log is not to be decoded again (an empty
        document, training).
    gap (Optional[Tuple[float, float]]): for a GAP document, the link
        probabilities (paper Eq. 9) of A and of B with the pronoun; None
        for other documents.
    cell_states (Optional[CellStates]): what the memory held, for the
        entity vectors; None while training. Not compared by == (arrays
        have no one truth value; the log says what was decided).
    """

    clusters: Clusters = field(default_factory=list)
    memory_log: Optional[MemoryLog] = None
    decoding: Optional[LogDecoding] = None
    gap: Optional[Tuple[float, float]] = None
    cell_states: Optional[CellStates] = field(default=None, compare=False)


# what a coreference model returns a document
Prediction = Union[S2EPrediction, PeTraPrediction]
