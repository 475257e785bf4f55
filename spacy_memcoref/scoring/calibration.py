"""Calibration of link probabilities: Platt scaling and reliability tables
(the calibration map itself, `calibrate`, is decoders.calibration's).

`fit_platt` fits the (scale, shift) of sigmoid(scale * logit(p) + shift) on
validation data (what `tune-gap-threshold` does); the reliability tables show
how well probabilities are calibrated before and after.

Two parameters are fitted by Newton's method on the log loss: a few lines of
numpy, where scikit-learn would be a heavy dependency for one 2-feature
logistic regression.
"""

from typing import Dict, List, Sequence, Tuple

import numpy

# the map itself is the decoder's (decoders.calibration); importable from here too
from ..decoders.calibration import (  # noqa: F401
    CLASS_WEIGHT_SHIFT,
    calibrate,
    check_calibration,
    logit,
    sigmoid,
)


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
        q = sigmoid(features @ w)
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
            rows.append(
                {
                    "low": b / n_bins,
                    "high": (b + 1) / n_bins,
                    "n": int(mask.sum()),
                    "mean_p": float(probs[mask].mean()),
                    "rate": float(labels[mask].mean()),
                }
            )
    return rows


def expected_calibration_error(rows: List[Dict[str, float]]) -> float:
    """ECE of a reliability table: the n-weighted mean |mean_p - rate|."""
    total = sum(row["n"] for row in rows)
    if total == 0:
        return float("nan")
    return sum(row["n"] * abs(row["mean_p"] - row["rate"]) for row in rows) / total
