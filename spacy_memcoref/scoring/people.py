"""People counting (PeTra paper §3.5): a document's predicted count is the
number of (token, cell) pairs whose overwrite probability o_t^i reaches the
threshold alpha; alpha is chosen on development documents."""
from typing import List, Sequence, Tuple

import numpy

ALPHA_GRID: Tuple[float, ...] = tuple(round(i / 100, 2) for i in range(1, 101))
# the component cfg key a chosen alpha is stored under
PEOPLE_ALPHA_KEY = "people_alpha"
DEFAULT_ALPHA = 0.5


def people_count(overwrite: numpy.ndarray, alpha: float) -> int:
    """The predicted people count of one document.

    overwrite (numpy.ndarray): o_t^i [T, N] from the memory log.
    alpha (float): the overwrite threshold.
    RETURNS (int): the number of (token, cell) with o_t^i >= alpha.
    """
    return int((numpy.asarray(overwrite) >= alpha).sum())


def count_errors(predicted: Sequence[int], gold: Sequence[int]) -> Tuple[int, int]:
    """RETURNS (Tuple[int, int]): documents with a wrong count, and the total
    absolute error."""
    n_wrong = sum(int(p != g) for p, g in zip(predicted, gold))
    abs_err = sum(abs(p - g) for p, g in zip(predicted, gold))
    return n_wrong, abs_err


def choose_alpha(overwrites: list, gold: list, grid: Sequence[float] = ALPHA_GRID) -> Tuple[float, List[Tuple[float, int, int]]]:
    """The people-counting threshold with the fewest wrong counts (ties: the
    smaller total absolute error, then the middle of the tied run).

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
    best_key = min((errors, abs_err) for _, errors, abs_err in table)
    tied = [a for a, errors, abs_err in table if (errors, abs_err) == best_key]
    return tied[(len(tied) - 1) // 2], table
