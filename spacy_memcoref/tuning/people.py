"""Choosing PeTra's people-count alpha (paper §3.5) on development documents."""
from typing import List, Sequence, Tuple

import numpy

from .grid import PROBABILITY_GRID, best_on_grid


def choose_alpha(overwrites: list, gold: list, grid: Sequence[float] = PROBABILITY_GRID) -> Tuple[float, List[Tuple[float, int, int]]]:
    """The people-counting threshold with the fewest wrong counts, then the
    smallest total absolute error (ties: the middle of the tied alphas,
    tuning.grid).

    overwrites (List[numpy.ndarray]): o_t^i [T, N] a document.
    gold (List[int]): the gold counts.
    grid (Sequence[float]): alphas to try.
    RETURNS (Tuple[float, List[Tuple[float, int, int]]]): the best alpha and
        (alpha, wrong counts, total absolute error) for every alpha.
    """
    alphas = numpy.asarray(grid, dtype=numpy.float32)
    predicted = numpy.stack(
        [(numpy.asarray(o, dtype=numpy.float32).reshape(-1)[None, :] >= alphas[:, None]).sum(axis=1) for o in overwrites],
        axis=1,
    )  # [alphas, docs]
    diff = numpy.abs(predicted - numpy.asarray(gold)[None, :])
    table = [(float(a), int((d != 0).sum()), int(d.sum())) for a, d in zip(grid, diff)]
    best = best_on_grid([(a, (errors, abs_err)) for a, errors, abs_err in table], lambda e: (-e[0], -e[1]))
    return best, table
