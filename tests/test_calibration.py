"""Calibration of link probabilities (scoring.calibration): Platt scaling
against scipy's optimizer and a known generating model, the class-weight
prior correction against the weighted loss's closed-form optimum, and a
hand-computed reliability table."""

import math

import numpy
import pytest
from scipy.optimize import minimize

from spacy_memcoref.scoring.calibration import (
    CLASS_WEIGHT_SHIFT,
    calibrate,
    check_calibration,
    expected_calibration_error,
    fit_platt,
    logit,
    reliability_table,
)


def _sample(n, scale, shift, seed=0):
    rng = numpy.random.default_rng(seed)
    x = rng.normal(-1.0, 2.0, size=n)
    p_raw = 1.0 / (1.0 + numpy.exp(-x))
    q = 1.0 / (1.0 + numpy.exp(-(scale * x + shift)))
    return p_raw, rng.random(n) < q


def test_fit_platt_recovers_the_generating_model():
    p_raw, y = _sample(40000, 0.7, 2.0)
    scale, shift = fit_platt(p_raw, y)
    assert scale == pytest.approx(0.7, abs=0.05)
    assert shift == pytest.approx(2.0, abs=0.08)


def test_fit_platt_equals_scipy_on_the_smoothed_log_loss():
    p_raw, y = _sample(500, 1.5, -0.5, seed=3)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    t = numpy.where(y, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))
    x = logit(p_raw)

    def loss(w):
        z = w[0] * x + w[1]
        return float(numpy.sum(numpy.logaddexp(0, z) - t * z))

    ref = minimize(loss, numpy.array([1.0, 0.0]), method="BFGS", options={"gtol": 1e-10}).x
    assert fit_platt(p_raw, y) == pytest.approx(tuple(ref), abs=1e-4)


def test_class_weight_shift_undoes_the_weighted_loss():
    # A constant predictor trained by BCE with weight 5 on positives and 50
    # on negatives, on data with positive rate q, settles at
    # p = 5q / (5q + 50 (1 - q)); the prior correction gives q back.
    for q in (0.1, 0.3, 0.5, 0.9):
        p = 5 * q / (5 * q + 50 * (1 - q))
        assert calibrate(p, (1.0, CLASS_WEIGHT_SHIFT)) == pytest.approx(q, abs=1e-6)
    # the old tuned threshold 0.04: 0.4 / (0.4 + 0.96) by hand
    assert calibrate(0.04, (1.0, math.log(10))) == pytest.approx(0.4 / 1.36, abs=1e-9)


def test_calibrate_keeps_order_and_extremes():
    p = numpy.array([0.0, 1e-12, 0.2, 0.7, 1.0])
    out = calibrate(p, (2.0, -1.0))
    assert numpy.all(numpy.diff(out) >= 0) and out[0] == 0.0 and out[-1] == 1.0
    assert isinstance(calibrate(0.3, (1.0, 0.0)), float)
    assert calibrate(0.3, (1.0, 0.0)) == pytest.approx(0.3)


def test_reliability_table_by_hand():
    p = [0.05, 0.15, 0.12, 0.95, 1.0]
    y = [False, True, False, True, True]
    rows = reliability_table(p, y)
    assert [(r["low"], r["n"]) for r in rows] == [(0.0, 1), (0.1, 2), (0.9, 2)]
    assert rows[1]["mean_p"] == pytest.approx(0.135) and rows[1]["rate"] == 0.5
    assert rows[2]["mean_p"] == pytest.approx(0.975) and rows[2]["rate"] == 1.0
    # (1 * 0.05 + 2 * 0.365 + 2 * 0.025) / 5
    assert expected_calibration_error(rows) == pytest.approx(0.166)


@pytest.mark.parametrize(
    "p, y, message",
    [
        ([0.2, 0.3], [True, True], "both classes"),
        ([0.2, 0.3], [True], "as many labels"),
    ],
)
def test_fit_platt_bad_input(p, y, message):
    with pytest.raises(ValueError, match=message):
        fit_platt(p, y)


@pytest.mark.parametrize("value", [[1.0], [0.0, 1.0], [-1.0, 0.0], [1.0, float("nan")], "1,0", [True, 0.0]])
def test_check_calibration_rejects(value):
    with pytest.raises(ValueError, match="gap_calibration"):
        check_calibration(value)
