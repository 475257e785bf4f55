"""s2e read through a bounded entity memory (torch-free): the decisions of
the bounded-memory coreference models (Toshniwal et al. 2020, "Learning to
Ignore") taken on s2e's scores.

The memory has `cells` cells, one entity a cell; a cell keeps its entity's
first mention and its `mentions` - 1 latest ones. The kept candidates are
read in text order, and each takes one action:

- COREF: the best antecedent the head chose for it (its choices, best
  first, above the link threshold) that the memory still holds, and that the
  Doc's rules let it join, puts it in that mention's cell;
- OVERWRITE: otherwise it starts an entity, in an empty cell, else in the
  least recently used one, whose entity leaves the memory (its mentions stay
  in their cluster; later mentions can no longer join it);
- IGNORE: a candidate the rules say is no mention (decoders.constraints).

Whatever the document's length, at most cells x mentions mentions are held.
With cells and mentions at least the number of candidates it is s2e's own
decoding (decoders.s2e.constrained_clusters), and the tests hold it to
that. What the bound costs on OntoGUM dev, and why the actions are not
trained on their own: benchmarks/RESULTS.md ("A mention-level memory over
s2e's mentions").

The head's choices are its best ANTECEDENT_CHOICES antecedents a candidate,
so a held mention below those is not seen (measured: 0.3 CoNLL F1 on OntoGUM
dev at 40 cells x 8 mentions against every pair score).

`memory_log` writes the reading in PeTra's memory-log form
(doc._.memory_log), so that the same tools show both memories.
"""

from dataclasses import dataclass
from typing import Any, Dict, FrozenSet, List, Optional, Tuple

import numpy

from ..util import Clusters
from .constraints import ClusterBuilder, DocRules, VoiceChains, pick_antecedent
from .links import clusters_from_links
from .predictions import Choices, Links

COREF, OVERWRITE, IGNORE = "coref", "overwrite", "ignore"


def check_memory_size(name: str, value: Any, *, minimum: int) -> int:
    """RAISES ValueError: not an integer >= minimum."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value


@dataclass(frozen=True)
class MemoryReading:
    """What the memory did with one document's candidates.

    clusters (Clusters): clusters of two or more mentions.
    actions (List[str]): a candidate's action (COREF, OVERWRITE, IGNORE).
    cells (List[int]): the cell it went to (-1: IGNORE).
    antecedents (List[int]): the candidate it joined (-1: none).
    peak_held (int): the most mentions the memory held at once.
    kept_after (List[int]): the mentions its cell kept after it (0: IGNORE).
    """

    clusters: Clusters
    actions: List[str]
    cells: List[int]
    antecedents: List[int]
    peak_held: int
    kept_after: List[int]


def read_memory(
    links: Links,
    choices: Optional[Choices],
    threshold: float,
    cells: int,
    mentions: int,
    rules: Optional[DocRules] = None,
) -> MemoryReading:
    """Read one prediction's candidates through the memory (twice where the
    first reading leaves an "I" alone that SPEAKER_I may link:
    constraints.VoiceChains).

    links (Links): the head's links (the candidates and each one's best).
    choices (Optional[Choices]): each candidate's best antecedents and their
        scores, best first; None: the best alone (links).
    threshold (float): the link threshold (as float32, as the head compared).
    cells (int): entities held at once (>= 1).
    mentions (int): mentions a cell keeps: the first and the latest (>= 1).
    rules (Optional[DocRules]): the Doc's rules; None: none.
    RETURNS (MemoryReading): the clusters and each candidate's action.
    """
    reading, alone = _read_memory(links, choices, threshold, cells, mentions, rules, frozenset())
    if alone:
        reading, _ = _read_memory(links, choices, threshold, cells, mentions, rules, alone)
    return reading


def _read_memory(
    links: Links,
    choices: Optional[Choices],
    threshold: float,
    cells: int,
    mentions: int,
    rules: Optional[DocRules],
    alone: FrozenSet[int],
) -> Tuple[MemoryReading, FrozenSet[int]]:
    check_memory_size("memory_cells", cells, minimum=1)
    check_memory_size("memory_mentions", mentions, minimum=1)
    starts, ends, best, scores = links
    if choices is None:
        choices = ([[b] if b >= 0 else [] for b in best], [[s] for s in scores])
    spans = list(zip(starts, ends))
    n = len(spans)
    allowed = [rules.is_mention(span) for span in spans] if rules is not None else [True] * n
    builder = ClusterBuilder(rules, spans) if rules is not None else None
    voices = VoiceChains(rules, spans, alone)
    held: Dict[int, int] = {}  # a mention the memory holds -> its cell
    kept: List[List[int]] = [[] for _ in range(cells)]  # a cell's mentions: first, then the latest
    last_used = [-1] * cells
    actions, cell_of, antecedents, kept_after = [IGNORE] * n, [-1] * n, [-1] * n, [0] * n
    peak = 0
    for q, (candidates, candidate_scores) in enumerate(zip(*choices)):
        if not allowed[q]:
            continue
        chosen = pick_antecedent(
            candidates,
            candidate_scores,
            threshold,
            allowed,
            lambda c: builder is None or builder.may_link(q, c),
            rules is not None and rules.keeps_link(spans[q]),
            held,
            voices.previous(q),
        )
        voices.read(q)
        if chosen >= 0:
            cell = held[chosen]
            if builder is not None:
                builder.join(q, chosen)
            if len(kept[cell]) >= mentions:
                # the oldest of the latest leaves; the first stays (the one alone when mentions is 1)
                gone = kept[cell].pop(1) if mentions > 1 else q
                if gone != q:
                    del held[gone]
            if mentions > 1 or not kept[cell]:
                kept[cell].append(q)
                held[q] = cell
            actions[q], antecedents[q] = COREF, chosen
        else:
            empty = [j for j in range(cells) if not kept[j]]
            cell = empty[0] if empty else min(range(cells), key=lambda j: last_used[j])
            for gone in kept[cell]:
                del held[gone]
            kept[cell] = [q]
            held[q] = cell
            actions[q] = OVERWRITE
        cell_of[q] = cell
        kept_after[q] = len(kept[cell])
        last_used[cell] = q
        peak = max(peak, len(held))
    if builder is not None:
        clusters = builder.clusters()
    else:
        clusters = clusters_from_links(list(starts), list(ends), antecedents)
    return MemoryReading(clusters, actions, cell_of, antecedents, peak, kept_after), voices.left_alone(
        allowed, antecedents
    )


def memory_log(
    reading: MemoryReading, links: Links, n_tokens: int, cells: int, mentions: int
) -> Dict[str, numpy.ndarray]:
    """A reading as a memory log (doc_helpers.memory_log's form, float32):
    ``entity`` [T]: 1 on the tokens of a mention the memory took;
    ``overwrite`` / ``coref`` [T, cells]: 1 on a mention's tokens at the
    cell it overwrote / joined; ``usage`` [T, cells]: a cell's kept mentions
    over `mentions`, once the mentions starting at or before the token are
    read (0 before the cell's first entity; an overwrite starts it again at
    1 / mentions).

    reading (MemoryReading): read_memory's result for these links.
    links (Links): the head's links (the candidates' starts and ends).
    n_tokens (int): the Doc's length.
    cells (int): the memory's cells.
    mentions (int): the mentions a cell keeps.
    RETURNS (Dict[str, numpy.ndarray]): the four arrays.
    """
    starts, ends = links[0], links[1]
    entity = numpy.zeros(n_tokens, dtype=numpy.float32)
    overwrite = numpy.zeros((n_tokens, cells), dtype=numpy.float32)
    coref = numpy.zeros((n_tokens, cells), dtype=numpy.float32)
    usage = numpy.zeros((n_tokens, cells), dtype=numpy.float32)
    kept_at = numpy.zeros(cells, dtype=numpy.float32)
    # the candidates come in text order (the head's), the order read_memory read them in
    next_q = 0
    for t in range(n_tokens):
        while next_q < len(starts) and starts[next_q] <= t:
            q, next_q = next_q, next_q + 1
            action, cell = reading.actions[q], reading.cells[q]
            if action == IGNORE:
                continue
            span = slice(starts[q], ends[q] + 1)
            entity[span] = 1.0
            (overwrite if action == OVERWRITE else coref)[span, cell] = 1.0
            kept_at[cell] = reading.kept_after[q] / mentions
        usage[t] = kept_at
    return {"entity": entity, "overwrite": overwrite, "coref": coref, "usage": usage}
