"""Calibration of link probabilities: the map a decoder applies.

PeTra's GAP link probability (paper Eq. 9) is trained with a class-weighted
BCE (5 for a positive pair, 50 for a negative one, paper §3.3). A weighted
loss moves the optimum: for a pair that is coreferent with frequency q the
model learns p = 5q / (5q + 50(1 - q)), i.e. logit(p) = logit(q) - ln 10, so
p = 0.5 means q ~ 0.91 and the best GAP threshold sits near 0.04. The
calibrated probability is

    p_cal = sigmoid(scale * logit(p) + shift)

with (scale, shift) = (1, ln 10) undoing the class weights (the prior
correction of weighted logistic regression), or fitted on validation data by
Platt scaling (scoring.calibration.fit_platt, what `tune-gap-threshold`
does). numpy only.
"""

import math
from typing import Sequence, Tuple

import numpy
from numpy.typing import ArrayLike

# The prior correction for the 5 : 50 class weights of PeTra's coref loss,
# ln 10 to 6 decimals (so that it survives config and JSON round trips exactly).
CLASS_WEIGHT_SHIFT = round(math.log(50.0 / 5.0), 6)
# (scale, shift) of no calibration: what a decoder without one applies
IDENTITY = (1.0, 0.0)
# probabilities are clamped into [EPS, 1 - EPS] before the logit
EPS = 1e-7


def logit(p: ArrayLike) -> numpy.ndarray:
    p = numpy.clip(numpy.asarray(p, dtype=numpy.float64), EPS, 1.0 - EPS)
    return numpy.log(p) - numpy.log1p(-p)


def sigmoid(z):
    return 0.5 * (1.0 + numpy.tanh(0.5 * z))  # cannot overflow


def check_calibration(calibration: Sequence[float], where: str = "gap_calibration") -> Tuple[float, float]:
    """(scale, shift) as floats.

    RAISES ValueError: not two finite numbers, or a scale <= 0 (which would
        reverse or erase the ranking of the probabilities).
    """
    values = list(calibration) if isinstance(calibration, (list, tuple)) else None
    if (
        values is None
        or len(values) != 2
        or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in values)
    ):
        raise ValueError(f"{where} must be [scale, shift], two finite numbers, got {calibration!r}")
    if not values[0] > 0:
        raise ValueError(f"{where}: the scale must be > 0 (it keeps the order of the probabilities), got {values[0]!r}")
    return float(values[0]), float(values[1])


def calibrate(p, calibration: Sequence[float]):
    """sigmoid(scale * logit(p) + shift), elementwise (0 and 1 stay); a float
    for a float.

    p (float or array): probabilities.
    calibration (Sequence[float]): (scale, shift).
    """
    scale, shift = calibration
    raw = numpy.asarray(p, dtype=numpy.float64)
    # 0 and 1 are certain by construction (e.g. a span linked to itself): kept
    out = numpy.where(raw >= 1.0, 1.0, numpy.where(raw <= 0.0, 0.0, sigmoid(scale * logit(raw) + shift)))
    return float(out) if numpy.ndim(out) == 0 else out
