"""The reliability diagram: its bins by hand, its agreement with the ECE, what it draws."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("matplotlib", reason="matplotlib draws the figures")

from bigkern.jobs.reliability_figure import plot_reliability, reliability_bins
from bigkern.models.calibration import expected_calibration_error

# six rows of three classes ("a", "b", "c"); confidences 0.5, 0.25…, on the edges of 4 bins
Y = np.array(["a", "b", "c", "a", "b", "c"])
P = np.array([[0.50, 0.30, 0.20],   # a, says a at 0.5: bin (0.25, 0.5], right
              [0.10, 0.80, 0.10],   # b, says b at 0.8: bin (0.75, 1], right
              [0.60, 0.15, 0.25],   # c, says a at 0.6: bin (0.5, 0.75], wrong
              [1.00, 0.00, 0.00],   # a, says a at 1.0: bin (0.75, 1], right
              [0.35, 0.40, 0.25],   # b, says b at 0.4: bin (0.25, 0.5], right
              [0.30, 0.70, 0.00]])  # c, says b at 0.7: bin (0.5, 0.75], wrong


def _random_rows(n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(k, 0.7), size=n)
    y = np.array([rng.choice(k, p=row) for row in p])
    return y, p


def test_the_confidence_bins_are_those_counted_by_hand():
    (conf,) = reliability_bins(Y, P, n_bins=4)
    assert conf.label == "confidence"
    np.testing.assert_array_equal(conf.edges, [0.0, 0.25, 0.5, 0.75, 1.0])
    np.testing.assert_array_equal(conf.count, [0, 2, 2, 2])
    np.testing.assert_allclose(conf.mean_probability[1:], [0.45, 0.65, 0.9])
    np.testing.assert_array_equal(conf.frequency[1:], [1.0, 0.0, 1.0])
    assert np.isnan(conf.mean_probability[0]) and np.isnan(conf.frequency[0])
    # (2·|1 − 0.45| + 2·|0 − 0.65| + 2·|1 − 0.9|) / 6
    assert conf.calibration_error() == pytest.approx((0.55 + 0.65 + 0.1) / 3)
    assert conf.calibration_error() == pytest.approx(expected_calibration_error(Y, P, n_bins=4))


def test_the_class_curves_are_those_counted_by_hand():
    a, b, c = reliability_bins(Y, P, n_bins=4, curve="classes")
    assert [a.label, b.label, c.label] == ["class a", "class b", "class c"]
    # class c's probabilities 0.2, 0.1, 0.25, 0, 0.25, 0: all in the first bin, 2 rows of c
    np.testing.assert_array_equal(c.count, [6, 0, 0, 0])
    assert c.mean_probability[0] == pytest.approx(0.8 / 6)
    assert c.frequency[0] == pytest.approx(2 / 6)
    # class a's: 0.5 → (0.25, 0.5] with 0.3, 0.35 (rows of a, c, b); 0.6 and 1.0 above
    np.testing.assert_array_equal(a.count, [1, 3, 1, 1])
    np.testing.assert_allclose(a.frequency, [0.0, 1 / 3, 0.0, 1.0])
    # two classes: the second class's curve only
    (second,) = reliability_bins([0, 1, 1], [[0.9, 0.1], [0.4, 0.6], [0.2, 0.8]],
                                 n_bins=2, curve="classes")
    assert second.label == "class 1"
    np.testing.assert_array_equal(second.count, [1, 2])
    np.testing.assert_allclose(second.mean_probability, [0.1, 0.7])


@pytest.mark.parametrize("n_bins", [15, 7])
def test_the_figures_bins_give_the_expected_calibration_error(n_bins):
    y, p = _random_rows(400, 4, seed=n_bins)
    p[:5] = np.eye(4)[[0, 1, 2, 3, 0]]  # confidence exactly 1, on the last edge
    (conf,) = reliability_bins(y, p, n_bins=n_bins)
    assert conf.count.sum() == len(y)
    assert conf.calibration_error() == pytest.approx(
        expected_calibration_error(y, p, n_bins=n_bins), rel=1e-12)


def test_the_figure_draws_each_models_bins_counts_and_errors():
    y, p = _random_rows(300, 3, seed=1)
    sharp = np.where(p == p.max(axis=1, keepdims=True), 0.9, 0.05)  # over-confident
    fig = plot_reliability(y, {"first": p, "second": sharp}, n_bins=5)
    top, bottom = fig.axes
    curves = top.get_lines()
    assert curves[0].get_label() == "perfectly calibrated"
    assert len(curves) == 3
    for line, proba in zip(curves[1:], (p, sharp), strict=True):
        (bins,) = reliability_bins(y, proba, n_bins=5)
        full = bins.count > 0
        np.testing.assert_allclose(line.get_xdata(), bins.mean_probability[full])
        np.testing.assert_allclose(line.get_ydata(), bins.frequency[full])
    heights = [patch.get_height() for patch in bottom.patches]
    assert len(heights) == 10 and sum(heights) == 2 * len(y)
    e1 = expected_calibration_error(y, p, n_bins=5)
    e2 = expected_calibration_error(y, sharp, n_bins=5)
    assert f"first {e1:.3f}" in top.get_title() and f"second {e2:.3f}" in top.get_title()
    assert top.get_legend() is not None


def test_the_figure_draws_into_given_axes_one_curve_per_class():
    from matplotlib.figure import Figure

    own = Figure()
    axes = own.subplots(2, 1)
    y, p = _random_rows(200, 3, seed=2)
    fig = plot_reliability(y, p, curve="classes", n_bins=4, axes=axes, title="mine")
    assert fig is own
    assert len(axes[0].get_lines()) == 1 + 3
    assert len(axes[1].patches) == 3 * 4
    assert axes[0].get_title() == "mine"


@pytest.mark.parametrize(("y", "p", "kw", "match"), [
    (Y, P[:, :2], {}, r"proba must be \(n, k\) = \(6, 3\)"),
    (Y, P, {"classes": ["a", "b", "d"]}, r"labels not in classes: \['c'\]"),
    (Y, np.where(np.arange(3) == 0, np.nan, P), {}, "6 row.s. that are not finite"),
    (Y, P, {"curve": "top"}, "curve must be one of"),
    (Y, P, {"n_bins": 0}, "n_bins must be at least 1"),
])
def test_bad_input_is_refused_naming_it(y, p, kw, match):
    with pytest.raises(ValueError, match=match):
        reliability_bins(y, p, **kw)
