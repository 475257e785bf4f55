"""Entity vectors from a model's own features (numpy, torch-free): the
pooling rule, in one place.

s2e: a cluster's vector is the mean over its mentions of [a^s(start);
a^e(end)], the antecedent endpoint features the head compares mentions
with (pytorch_s2e: the antecedent score is bilinear in them), so two
mentions the model links have near vectors in the space it links in.

PeTra: an entity is a memory cell's episode, and its vector is that cell's
state m^i right after the update at the entity's last token (the last
token of its last mention): what the memory holds of the entity when the
text leaves it, d = the cell size (hidden_size) wide. No pooling: the cell
is the model's own running summary of its mentions. The head keeps, for
every token, the state of the cell of its argmax action, and the whole
memory at the tokens a decoding rule may move to another cell (pronouns),
so the state is the one of the cell decoding put the token in, in every
case (decoders.predictions.CellStates).
"""

from typing import Callable, Sequence

import numpy

from ..util import Clusters


def pool_endpoints(
    endpoints: numpy.ndarray, starts: Sequence[int], ends: Sequence[int], clusters: Clusters
) -> numpy.ndarray:
    """One vector a cluster from its mentions' endpoint features.

    endpoints (numpy.ndarray): [n, 2h], a row a candidate mention: a^s of its
        start in the first h columns, a^e of its end in the last h.
    starts, ends (Sequence[int]): the candidates' first and last tokens.
    clusters (Clusters): inclusive token spans, each a candidate.
    RETURNS (numpy.ndarray): [K, 2h] float32, a row a cluster in order.
    RAISES ValueError: a mention that is no candidate.
    """
    endpoints = numpy.asarray(endpoints, dtype=numpy.float32)
    if endpoints.ndim != 2 or endpoints.shape[0] != len(starts) or len(starts) != len(ends):
        raise ValueError(f"endpoint features must be [n={len(starts)}, 2h], got shape {endpoints.shape}")
    row_of = {(s, e): i for i, (s, e) in enumerate(zip(starts, ends))}
    out = numpy.zeros((len(clusters), endpoints.shape[1]), dtype=numpy.float32)
    for row, cluster in enumerate(clusters):
        missing = [m for m in cluster if (m[0], m[1]) not in row_of]
        if missing:
            raise ValueError(f"entity vectors: mention {missing[0]} is not one of the model's candidates")
        out[row] = endpoints[[row_of[(m[0], m[1])] for m in cluster]].mean(axis=0)
    return out


def pick_cell_states(
    cells: numpy.ndarray,
    positions: Sequence[int],
    snapshots: numpy.ndarray,
    clusters: Clusters,
    token_cells: Callable[[], Sequence[int]],
) -> numpy.ndarray:
    """One vector a cluster: its cell's state right after the update at its
    last token.

    cells (numpy.ndarray): [T, d], a row a token: the state after its
        update of the cell of its argmax action.
    positions (Sequence[int]): the tokens whose whole memory was kept.
    snapshots (numpy.ndarray): [len(positions), N, d]: that memory.
    clusters (Clusters): inclusive token spans, mentions of one entity each.
    token_cells (Callable[[], Sequence[int]]): each token's cell as the
        clusters were decoded (-1: none), asked for only when a cluster ends
        at a kept token (elsewhere a token's cell is its argmax action's).
    RETURNS (numpy.ndarray): [K, d] float32, a row a cluster in order.
    RAISES ValueError: a mention outside the document, or a cluster that
        ends at a kept token in no cell.
    """
    cells = numpy.asarray(cells, dtype=numpy.float32)
    snapshots = numpy.asarray(snapshots, dtype=numpy.float32)
    if cells.ndim != 2 or snapshots.ndim != 3 or snapshots.shape[0] != len(positions):
        raise ValueError(
            f"cell states must be [T, d] and [P={len(positions)}, N, d], got {cells.shape} and {snapshots.shape}"
        )
    kept = {int(t): i for i, t in enumerate(positions)}
    out = numpy.zeros((len(clusters), cells.shape[1]), dtype=numpy.float32)
    decided = None
    for row, cluster in enumerate(clusters):
        last = max(int(m[1]) for m in cluster)
        if not 0 <= last < cells.shape[0]:
            raise ValueError(f"entity vectors: mention end {last} is outside the document of {cells.shape[0]} tokens")
        if last not in kept:
            out[row] = cells[last]
            continue
        if decided is None:
            decided = token_cells()
        cell = int(decided[last])
        if not 0 <= cell < snapshots.shape[1]:
            raise ValueError(f"entity vectors: token {last}, the end of a cluster, is in no memory cell")
        out[row] = snapshots[kept[last], cell]
    return out
