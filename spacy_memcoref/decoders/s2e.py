"""s2e's decoder: clusters from each candidate's best antecedent and the
link threshold (torch-free).

The head (models.s2e.pytorch_s2e.S2EHead) predicts, for a document, its kept
mention candidates in text order, each one's best preceding candidate and
that pair's score (``S2EPrediction.links``, see `Links`); the decoder links
a candidate to it when the score is above ``link_threshold`` (the null
antecedent scores 0, so 0 is the paper's decision; lower links more) and
unions the links into clusters. The antecedent ranking does not depend on
the threshold, so `tune-link-threshold` decodes one prediction at many
thresholds (tuning.link_threshold).

Given the Doc, the decoder also keeps to decoders.constraints: a candidate
that is no word is never a mention, and a link that would put pronouns that
cannot corefer in one cluster is not made; the candidate then takes its
next-best antecedent above the threshold (``S2EPrediction.choices``, the
head's best few, best first), in text order.

With ``memory_cells`` > 0 the candidates are read through a bounded entity
memory instead (decoders.memory): an antecedent must still be held in it.
"""

from typing import Any, ClassVar, Dict, FrozenSet, List, Mapping, Optional, Tuple

import numpy
from spacy.tokens import Doc

from ..util import Clusters
from ..doc_helpers.entity_vectors import ENDPOINTS_SOURCE
from ..doc_helpers.memory_log import set_memory_log
from .constraints import ALL_RULES, ClusterBuilder, DocRules, VoiceChains, pick_antecedent
from .entity_vectors import pool_endpoints
from .links import clusters_from_links
from .memory import MemoryReading, check_memory_size, memory_log, read_memory
from .predictions import Choices, Links, S2EPrediction


def _as_float32(threshold: float) -> float:
    # the head's scores are float32 and torch compared them with the
    # threshold in float32: the same decision in Python floats
    return float(numpy.float32(threshold))


def check_link_threshold(value: Any) -> float:
    """RAISES ValueError: not a (finite, |t| < 1e6) number."""
    if not (isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) < 1e6):
        raise ValueError(f"link_threshold must be a number, got {value!r}")
    return float(value)


def links_to_clusters(links: Optional[Links], threshold: float) -> Clusters:
    """Clusters from a prediction's links, linking pairs scored above `threshold`.

    links (Optional[Links]): the head's links; None for an empty document.
    threshold (float): the link threshold.
    RETURNS (Clusters): clusters of two or more mentions.
    """
    if links is None:
        return []
    starts, ends, best, scores = links
    t = _as_float32(threshold)
    chosen = [b if s > t else -1 for b, s in zip(best, scores)]
    return clusters_from_links(list(starts), list(ends), chosen)


def constrained_clusters(links: Links, choices: Optional[Choices], threshold: float, rules: DocRules) -> Clusters:
    """Clusters from each candidate's best antecedent that the rules allow.

    links (Links): the head's links (the candidates and each one's best).
    choices (Optional[Choices]): each candidate's best antecedents and their
        scores, best first; None: the best alone (links).
    threshold (float): the link threshold.
    rules (DocRules): the Doc's rules.
    RETURNS (Clusters): clusters of two or more mentions.
    """
    return constrained_antecedents(links, choices, threshold, rules)[1]


def constrained_antecedents(
    links: Links, choices: Optional[Choices], threshold: float, rules: DocRules
) -> Tuple[List[int], Clusters]:
    """Each candidate's antecedent (the best the rules allow; -1: none) and
    the clusters those links make (constrained_clusters). Read twice where
    the first reading leaves an "I" alone that SPEAKER_I may link
    (constraints.VoiceChains)."""
    chosen, clusters, alone = _constrained_reading(links, choices, threshold, rules, frozenset())
    if alone:
        chosen, clusters, _ = _constrained_reading(links, choices, threshold, rules, alone)
    return chosen, clusters


def _constrained_reading(
    links: Links, choices: Optional[Choices], threshold: float, rules: DocRules, alone: FrozenSet[int]
) -> Tuple[List[int], Clusters, FrozenSet[int]]:
    starts, ends, best, scores = links
    if choices is None:
        choices = ([[b] if b >= 0 else [] for b in best], [[s] for s in scores])
    spans = list(zip(starts, ends))
    allowed = [rules.is_mention(span) for span in spans]
    builder = ClusterBuilder(rules, spans)
    voices = VoiceChains(rules, spans, alone)
    t = _as_float32(threshold)
    chosen = [-1] * len(spans)
    for q, (antecedents, antecedent_scores) in enumerate(zip(*choices)):
        if not allowed[q]:
            continue
        c = pick_antecedent(
            antecedents,
            antecedent_scores,
            t,
            allowed,
            lambda c: builder.may_link(q, c),
            rules.keeps_link(spans[q]),
            voice_previous=voices.previous(q),
        )
        voices.read(q)
        if c >= 0:
            builder.join(q, c)
            chosen[q] = c
    return chosen, builder.clusters(), voices.left_alone(allowed, chosen)


class S2EDecoder:
    """s2e's decisions: the link threshold and, optionally, a bounded
    entity memory (a decoders.protocol.Decoder of S2EPrediction).

    link_threshold (float): link a mention to its best antecedent when the
        pair scores above this: the builder's `link_threshold`, the value
        until the component's own (its `link_threshold` setting, which
        `tune-link-threshold` stores) is configured.
    memory_cells (int): 0 (the default): every preceding candidate may be
        an antecedent; N > 0: the candidates are read through a memory of N
        entities (decoders.memory), each keeping memory_mentions mentions.
    memory_mentions (int): the mentions a memory cell keeps: its entity's
        first and latest (default 8).
    """

    # the settings chosen after training, kept in the component's cfg and
    # config block (the memcoref factory's arguments); the memory's size is
    # a user's choice, from the config alone (set_memory)
    COMPONENT_SETTINGS: ClassVar[Tuple[str, ...]] = ("link_threshold",)

    def __init__(self, link_threshold: float, memory_cells: int = 0, memory_mentions: int = 8) -> None:
        self.link_threshold = check_link_threshold(link_threshold)
        self.memory_cells = 0
        self.memory_mentions = 8
        self.set_memory(memory_cells, memory_mentions)
        # the last memory reading clusters() made, kept until write() takes it for the same prediction and Doc,
        # so that set_annotations reads each Doc through the memory once
        self._pending: Optional[Tuple[S2EPrediction, Doc, MemoryReading]] = None

    def configure(self, settings: Mapping[str, Any]) -> Dict[str, Any]:
        """Take the settings this decoder owns (here link_threshold) from
        `settings`, validated; other keys are ignored.

        RETURNS (Dict[str, Any]): the settings taken.
        """
        taken = {}
        if settings.get("link_threshold") is not None:
            self.link_threshold = taken["link_threshold"] = check_link_threshold(settings["link_threshold"])
        return taken

    def set_memory(self, cells: int, mentions: int) -> None:
        """Read through a memory of `cells` entities (0: none, every
        preceding candidate), each keeping `mentions` mentions.

        RAISES ValueError: cells not an integer >= 0, mentions not >= 1.
        """
        self.memory_cells = check_memory_size("memory_cells", cells, minimum=0)
        self.memory_mentions = check_memory_size("memory_mentions", mentions, minimum=1)

    def clusters(
        self,
        prediction: S2EPrediction,
        threshold: Optional[float] = None,
        *,
        doc: Optional[Doc] = None,
        rules: FrozenSet[str] = ALL_RULES,
    ) -> Clusters:
        """The clusters of one prediction (at `threshold`, default the
        decoder's); with its Doc, under decoders.constraints' `rules`;
        through the memory when memory_cells > 0."""
        threshold = self.link_threshold if threshold is None else threshold
        if prediction.links is None:
            return []
        if self.memory_cells > 0:
            # the choices with or without a Doc: a candidate whose best antecedent left the memory takes the next
            doc_rules = DocRules(doc, rules) if doc is not None else None
            reading = self._memory_reading(prediction, threshold, doc_rules)
            written_as = threshold == self.link_threshold and rules == ALL_RULES
            self._pending = (prediction, doc, reading) if doc is not None and written_as else None
            return reading.clusters
        if doc is None:
            return links_to_clusters(prediction.links, threshold)
        return constrained_clusters(prediction.links, prediction.choices, threshold, DocRules(doc, rules))

    def _memory_reading(self, prediction: S2EPrediction, threshold: float, rules: Optional[DocRules]) -> MemoryReading:
        assert prediction.links is not None
        return read_memory(
            prediction.links,
            prediction.choices,
            _as_float32(threshold),
            self.memory_cells,
            self.memory_mentions,
            rules,
        )

    def mention_links(self, prediction: S2EPrediction, doc: Doc) -> List[Tuple[int, int, int]]:
        """The links `clusters` makes with `doc` (all rules, the decoder's
        threshold and memory; the clusters are their union): each kept
        candidate as (start, end, antecedent), token indices, the
        antecedent an index into this list (-1: none), candidates in text
        order. A Stream follows them piece by piece."""
        if prediction.links is None:
            return []
        threshold = _as_float32(self.link_threshold)
        if self.memory_cells > 0:
            antecedents = self._memory_reading(prediction, threshold, DocRules(doc)).antecedents
        else:
            antecedents = constrained_antecedents(prediction.links, prediction.choices, threshold, DocRules(doc))[0]
        return list(zip(prediction.links[0], prediction.links[1], antecedents))

    def entity_vectors(
        self,
        prediction: S2EPrediction,
        clusters: Clusters,
        *,
        doc: Optional[Doc] = None,
        rules: FrozenSet[str] = ALL_RULES,
    ) -> Optional[Tuple[numpy.ndarray, str]]:
        """One vector a cluster, pooled from the prediction's antecedent
        endpoint features (decoders.entity_vectors), and their source;
        None when the prediction has none. The pooling needs neither the
        Doc nor the rules."""
        if prediction.endpoints is None or prediction.links is None:
            return None
        starts, ends = prediction.links[0], prediction.links[1]
        return pool_endpoints(prediction.endpoints, starts, ends, clusters), ENDPOINTS_SOURCE

    def write(self, doc: Doc, prediction: S2EPrediction) -> None:
        """Through the memory, its log (doc._.memory_log: decoders.memory.
        memory_log, the reading the clusters came from); else nothing beyond
        the clusters the component writes."""
        if self.memory_cells == 0 or prediction.links is None:
            return
        pending, self._pending = self._pending, None
        if pending is not None and pending[0] is prediction and pending[1] is doc:
            reading = pending[2]
        else:
            reading = self._memory_reading(prediction, self.link_threshold, DocRules(doc))
        set_memory_log(doc, memory_log(reading, prediction.links, len(doc), self.memory_cells, self.memory_mentions))
