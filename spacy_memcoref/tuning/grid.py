"""The grids tuning tries, and the one rule that picks a value from a scored
grid (`best_on_grid`)."""

from typing import Any, Callable, Optional, Sequence, Tuple

# s2e link thresholds: -6.0, -5.75, ..., 2.0
LINK_THRESHOLDS: Tuple[float, ...] = tuple(x / 4 for x in range(-24, 9))
# probabilities: PeTra's GAP threshold and people-count alpha, 0.01, 0.02, ..., 1.00
PROBABILITY_GRID: Tuple[float, ...] = tuple(round(i / 100, 2) for i in range(1, 101))


def best_on_grid(
    table: Sequence[Tuple[float, Any]], key: Callable[[Any], Any], *, nearest: Optional[float] = None
) -> float:
    """The value of the grid whose scores have the greatest key.

    Ties: with `nearest`, the tied value closest to it (the earliest in grid
    order at equal distance): s2e's link threshold, nearest the paper's
    decision 0. Without, the middle of the tied values in grid order (the
    lower of two middles), so that the choice sits inside a plateau of equal
    scores: PeTra's probabilities.

    table (Sequence[Tuple[float, Any]]): (value, scores) in grid order.
    key (Callable[[Any], Any]): scores -> what is maximized.
    nearest (Optional[float]): the tie-break anchor, or None for the middle.
    RETURNS (float): the chosen value.
    RAISES ValueError: an empty table.
    """
    if not table:
        raise ValueError("no values were scored")
    keys = [key(scores) for _, scores in table]
    best = max(keys)
    tied = [value for (value, _), k in zip(table, keys) if k == best]
    if nearest is not None:
        return min(tied, key=lambda value: abs(value - nearest))
    return tied[(len(tied) - 1) // 2]
