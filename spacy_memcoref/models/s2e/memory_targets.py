"""What the bounded entity memory holds at each candidate when every earlier
decision was the gold one (teacher forcing), for the memory loss of the s2e
head (pytorch_s2e.S2EHead, ``memory_loss_cells``).

The memory is decoders.memory's, step for step: `cells` cells, one entity a
cell, each keeping its entity's first mention and its `mentions` - 1 latest;
a candidate that joins no cell starts an entity in an empty cell, else in
the least recently used one. The gold decisions: a gold mention whose
cluster a cell holds joins that cell (COREF); any other candidate (a gold
mention whose entity is not held: its first mention, or its entity was
evicted; or a candidate that is no gold mention) starts an entity of its own
(OVERWRITE), as an unlinked candidate does when predicting. So the loss
sees the memory the decoder will read: spurious candidates take cells and
push entities out.

Pure Python over cluster ids (no gradients flow through the choice of what
is held); the head gathers its pair scores with the result. It mirrors
decoders.memory.read_memory rather than calling it: the loss needs what is
held before every candidate, and this module, under the torch head, reads no
Doc (tests/test_memory_loss.py holds the two to the same decisions).
"""

from typing import List, Sequence, Tuple

import numpy
import torch
from torch import Tensor

NONE = -1  # padding in `held`; "no cell" (the null choice) in `target`


def memory_targets(cluster_ids: Sequence[int], cells: int, mentions: int) -> Tuple[Tensor, Tensor]:
    """The memory's content before each candidate, and its gold choice.

    cluster_ids (Sequence[int]): each candidate's gold cluster (from 1; 0: no
        gold mention), candidates in text order.
    cells (int): entities held at once (>= 1).
    mentions (int): mentions a cell keeps, the first and the latest (>= 1).
    RETURNS (Tuple[Tensor, Tensor]): held [K, cells, mentions] (long): the
        candidates each cell keeps when candidate q is read, NONE-padded
        (an empty cell is all NONE); target [K] (long): the cell the gold
        decision puts q in when it joins one (COREF), else NONE.
    """
    if cells < 1 or mentions < 1:
        raise ValueError(f"cells and mentions must be >= 1, got {cells} and {mentions}")
    k = len(cluster_ids)
    # numpy while filling: ~K x cells small writes, each ~20x cheaper than torch's
    held = numpy.full((k, cells, mentions), NONE, dtype=numpy.int64)
    target = numpy.full((k,), NONE, dtype=numpy.int64)
    kept: List[List[int]] = [[] for _ in range(cells)]
    entity = [0] * cells  # the cluster id a cell holds (0: empty, or an entity that is no gold cluster)
    last_used = [-1] * cells
    for q, gold in enumerate(cluster_ids):
        for j, members in enumerate(kept):
            if members:
                held[q, j, : len(members)] = members
        cell = next((j for j in range(cells) if kept[j] and entity[j] == gold), NONE) if gold > 0 else NONE
        if cell != NONE:
            target[q] = cell
            if len(kept[cell]) >= mentions and mentions > 1:
                kept[cell].pop(1)  # the oldest of the latest leaves; the first stays
            if mentions > 1:
                kept[cell].append(q)
        else:
            empty = [j for j in range(cells) if not kept[j]]
            cell = empty[0] if empty else min(range(cells), key=lambda j: last_used[j])
            kept[cell] = [q]
            entity[cell] = gold
        last_used[cell] = q
    return torch.from_numpy(held), torch.from_numpy(target)
