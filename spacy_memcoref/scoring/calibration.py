"""Calibration of link probabilities: Platt scaling and reliability tables.

PeTra's GAP link probability (paper Eq. 9) is trained with a class-weighted
BCE (5 for a positive pair, 50 for a negative one, paper §3.3). A weighted
loss moves the optimum: for a pair that is coreferent with frequency q the
model learns p = 5q / (5q + 50(1 - q)), i.e. logit(p) = logit(q) - ln 10, so
p = 0.5 means q ~ 0.91 and the best GAP threshold sits near 0.04. The
calibrated probability is

    p_cal = sigmoid(scale * logit(p) + shift)

with (scale, shift) = (1, ln 10) undoing the class weights (the prior
correction of weighted logistic regression), or fitted on validation data by
Platt scaling (`fit_platt`, what `tune-gap-threshold` does).

Two parameters are fitted by Newton's method on the log loss: a few lines of
numpy, where scikit-learn would be a heavy dependency for one 2-feature
logistic regression.
"""
import math
from typing import Dict, List, Sequence, Tuple

import numpy

# The prior correction for the 5 : 50 class weights of PeTra's coref loss,
# ln 10 to 6 decimals (so that it survives config and JSON round trips exactly).
CLASS_WEIGHT_SHIFT = round(math.log(50.0 / 5.0), 6)
IDENTITY = (1.0, 0.0)
# probabilities are clamped into [EPS, 1 - EPS] before the logit
EPS = 1e-7


def logit(p: numpy.ndarray) -> numpy.ndarray:
    p = numpy.clip(numpy.asarray(p, dtype=numpy.float64), EPS, 1.0 - EPS)
    return numpy.log(p) - numpy.log1p(-p)


def _sigmoid(z):
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
    out = numpy.where(raw >= 1.0, 1.0, numpy.where(raw <= 0.0, 0.0, _sigmoid(scale * logit(raw) + shift)))
    return float(out) if numpy.ndim(out) == 0 else out


def fit_platt(p: Sequence[float], y: Sequence[bool], max_iter: int = 100) -> Tuple[float, float]:
    """Platt scaling: the (scale, shift) that minimize the log loss of
    sigmoid(scale * logit(p) + shift) against Platt's smoothed targets
    ((n+ + 1) / (n+ + 2) for a positive, 1 / (n- + 2) for a negative, which
    keeps the fit finite on separable data).

    p (Sequence[float]): raw probabilities.
    y (Sequence[bool]): the gold labels.
    RETURNS (Tuple[float, float]): (scale, shift).
    RAISES ValueError: different lengths, no examples, or only one class.
    """
    x = logit(p)
    labels = numpy.asarray(y, dtype=bool)
    if x.shape != labels.shape or x.ndim != 1:
        raise ValueError(f"need as many labels as probabilities, got {x.shape} and {labels.shape}")
    n_pos = int(labels.sum())
    n_neg = int(labels.size - n_pos)
    if n_pos == 0 or n_neg == 0:
        raise ValueError(f"Platt scaling needs both classes, got {n_pos} positive and {n_neg} negative")
    target = numpy.where(labels, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))
    features = numpy.stack([x, numpy.ones_like(x)], axis=1)

    def loss(w: numpy.ndarray) -> float:
        z = features @ w
        return float(numpy.sum(numpy.logaddexp(0.0, z) - target * z))

    w = numpy.array([1.0, 0.0])
    current = loss(w)
    for _ in range(max_iter):
        q = _sigmoid(features @ w)
        grad = features.T @ (q - target)
        hess = features.T @ (features * (q * (1.0 - q))[:, None]) + 1e-9 * numpy.eye(2)
        step = numpy.linalg.solve(hess, grad)
        # damped Newton: halve the step until the loss goes down (plain
        # Newton overshoots from a start far from the optimum)
        for _ in range(50):
            candidate = w - step
            value = loss(candidate)
            if value <= current:
                break
            step = step / 2.0
        else:
            break
        w, improvement, current = candidate, current - value, value
        if numpy.max(numpy.abs(step)) < 1e-10 or improvement < 1e-12 * max(1.0, abs(current)):
            break
    return float(w[0]), float(w[1])


def reliability_table(p: Sequence[float], y: Sequence[bool], n_bins: int = 10) -> List[Dict[str, float]]:
    """Predicted probability bins against the observed rate of positives.

    p (Sequence[float]): probabilities.
    y (Sequence[bool]): gold labels.
    n_bins (int): equal-width bins over [0, 1]; 1.0 falls in the last.
    RETURNS (List[Dict[str, float]]): one row a non-empty bin: low, high,
        n, mean_p (mean predicted probability), rate (observed share of
        positives).
    """
    probs = numpy.asarray(p, dtype=numpy.float64)
    labels = numpy.asarray(y, dtype=bool)
    if probs.shape != labels.shape:
        raise ValueError(f"need as many labels as probabilities, got {probs.shape} and {labels.shape}")
    index = numpy.minimum((probs * n_bins).astype(int), n_bins - 1)
    rows = []
    for b in range(n_bins):
        mask = index == b
        if mask.any():
            rows.append({
                "low": b / n_bins,
                "high": (b + 1) / n_bins,
                "n": int(mask.sum()),
                "mean_p": float(probs[mask].mean()),
                "rate": float(labels[mask].mean()),
            })
    return rows


def expected_calibration_error(rows: List[Dict[str, float]]) -> float:
    """ECE of a reliability table: the n-weighted mean |mean_p - rate|."""
    total = sum(row["n"] for row in rows)
    if total == 0:
        return float("nan")
    return sum(row["n"] * abs(row["mean_p"] - row["rate"]) for row in rows) / total
