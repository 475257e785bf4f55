"""People counting (PeTra paper §3.5): how wrong the predicted counts are.
A document's count is the decoder's (decoders.petra.people_count); alpha is
chosen on development documents by tuning.people.choose_alpha."""

from typing import Sequence, Tuple


def count_errors(predicted: Sequence[int], gold: Sequence[int]) -> Tuple[int, int]:
    """RETURNS (Tuple[int, int]): documents with a wrong count, and the total
    absolute error."""
    n_wrong = sum(int(p != g) for p, g in zip(predicted, gold))
    abs_err = sum(abs(p - g) for p, g in zip(predicted, gold))
    return n_wrong, abs_err
