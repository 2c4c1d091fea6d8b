"""calibration= on every classifier: held-out rows, calibrators, predict_proba.

The calibrators are checked against scikit-learn's own (its sigmoid and isotonic
calibration fitted on the same held-out decision values), the held-out rows against
every chunking, and the probabilities against the truth of a synthetic set whose class
probabilities are known.
"""

from __future__ import annotations

import inspect
from typing import Any, ClassVar

import dask
import dask.array as da
import numpy as np
import pytest
from sklearn.base import _fit_context, clone
from sklearn.calibration import CalibratedClassifierCV
from sklearn.exceptions import NotFittedError
from sklearn.frozen import FrozenEstimator
from sklearn.isotonic import IsotonicRegression
from sklearn.model_selection import GridSearchCV

from bigkern import config
from bigkern.errors import DataQualityError, LabelError
from bigkern.kernels import KernelExpansion, gaussian_kernel
from bigkern.models import (
    BinnedKernelRidgeClassifier,
    BinnedSVC,
    CompactLSSVC,
    CompactSVC,
    KernelRidgeClassifier,
    NystromKernelRidgeClassifier,
    ReducedSVC,
)
from bigkern.models._base import _KernelClassifier
from bigkern.models._constraints import domain
from bigkern.models.calibrated_fit import (
    CALIBRATION,
    DEFAULT_SEED,
    ProbabilityMixin,
    calibrated_fit,
    held_out_rows,
    held_out_share,
)
from bigkern.models.calibration import (
    ProbabilityCalibration,
    expected_calibration_error,
    fit_calibration,
    platt_scaling,
    platt_targets,
    temperature_scaling,
)


def noisy_circle(n: int, seed: int = 0, labels: tuple = (-1, 1)) -> tuple[np.ndarray,
                                                                         np.ndarray,
                                                                         np.ndarray]:
    """Rows, labels drawn from a known probability (a smooth circle), and that probability."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    p = 1.0 / (1.0 + np.exp(-2.5 * (1.4 - (X ** 2).sum(axis=1))))
    y = np.where(rng.random(n) < p, labels[1], labels[0])
    return X, y, p


def small_models(calibration: str) -> list:
    """One of each classifier, sized for a few hundred rows."""
    return [
        BinnedKernelRidgeClassifier(omega=0.8, lam=0.01, calibration=calibration),
        BinnedSVC(omega=0.8, C=10.0, calibration=calibration),
        KernelRidgeClassifier(omega=0.8, lam=0.1, calibration=calibration),
        ReducedSVC(omega=1.0, C=10.0, size=40, random_state=3, calibration=calibration),
        NystromKernelRidgeClassifier(omega=1.0, lam=1e-3, size=40, random_state=3,
                                     calibration=calibration),
        CompactLSSVC(omega=0.5, lam=1e-3, radius=1.5, calibration=calibration),
        CompactSVC(omega=0.5, C=1.0, radius=1.5, calibration=calibration),
    ]


def reference_temperature(F: np.ndarray, codes: np.ndarray, k: int) -> np.ndarray:
    """softmax(a F + b) fitted by scipy to targets (n + 1)/(n + 2) own, the rest shared:
    (a, b_1 − b_0, …)."""
    from scipy.optimize import minimize
    from scipy.special import logsumexp

    n = len(codes)
    t = np.full((n, k), 1.0 / ((n + 2) * (k - 1)))
    t[np.arange(n), codes] = (n + 1) / (n + 2)

    def loss(u: np.ndarray) -> float:
        z = u[0] * F + np.r_[0.0, u[1:]]
        return float(np.sum(logsumexp(z, axis=1)) - np.sum(t * z))

    return minimize(loss, np.r_[1.0, np.zeros(k - 1)], method="BFGS",
                    options={"gtol": 1e-9}).x


def _held(model, n: int) -> np.ndarray:
    seed = getattr(model, "random_state", None)
    return held_out_rows(np.arange(n), seed=DEFAULT_SEED if seed is None else seed,
                         share=held_out_share(n))


# -- the held-out rows ---------------------------------------------------------------------


def test_held_out_rows_are_a_function_of_the_row_number_and_the_seed():
    rows = np.arange(200_000)
    held = held_out_rows(rows, seed=7, share=0.2)
    assert abs(held.mean() - 0.2) < 0.005
    # any piece of the rows gives the same answer for its rows
    for lo, hi in [(0, 1), (12_345, 67_890), (199_000, 200_000)]:
        np.testing.assert_array_equal(held_out_rows(rows[lo:hi], seed=7, share=0.2),
                                      held[lo:hi])
    # another seed, other rows; a larger share, a superset
    other = held_out_rows(rows, seed=8, share=0.2)
    assert 0.03 < (held & other).mean() < 0.05  # independent: about 0.2 * 0.2
    assert np.all(held_out_rows(rows, seed=7, share=0.3)[held])


def test_the_share_is_the_setting_capped_at_the_most_rows():
    assert held_out_share(1000) == 0.2
    with config.set(calibration_share=0.3, calibration_max_rows=100):
        assert held_out_share(1000) == 0.1
    with config.set(calibration_max_rows=None):
        assert held_out_share(10**9) == 0.2
    with config.set(calibration_share=0.0), pytest.raises(ValueError, match=r"\(0, 1\)"):
        held_out_share(1000)


@pytest.mark.parametrize("model", small_models("sigmoid"), ids=lambda m: type(m).__name__)
def test_the_model_is_the_uncalibrated_fit_of_the_other_rows(model):
    """The held-out rows are left out of the fit, and nothing else changes."""
    X, y, _ = noisy_circle(400)
    held = _held(model, len(y))
    plain = clone(model).set_params(calibration=None)
    if "mask" in inspect.signature(plain.fit).parameters:
        plain.fit(X, y, mask=~held)
    else:
        plain.fit(X[~held], y[~held])
    model.fit(X, y)
    np.testing.assert_array_equal(model.decision_function(X), plain.decision_function(X))
    report = model.fit_report_["calibration"]
    assert report["n_held_out"] == report["n_calibration"] == int(held.sum())
    assert report["method"] == "sigmoid" and report["share"] == 0.2


def test_a_mask_still_applies_to_the_held_out_rows():
    X, y, _ = noisy_circle(600)
    y[np.random.default_rng(1).random(600) < 0.3] = 0  # unlabelled
    model = BinnedSVC(omega=0.8, C=10.0, calibration="sigmoid").fit(X, y, mask=y != 0)
    held = _held(model, 600)
    assert model.fit_report_["calibration"]["n_calibration"] == int((held & (y != 0)).sum())
    assert model.classes_.tolist() == [-1, 1]
    plain = BinnedSVC(omega=0.8, C=10.0).fit(X, y, mask=(y != 0) & ~held)
    np.testing.assert_array_equal(model.decision_function(X), plain.decision_function(X))


# -- predict_proba -------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["sigmoid", "isotonic"])
@pytest.mark.parametrize("index", range(7), ids=lambda i: type(small_models("x")[i]).__name__)
def test_every_classifier_gives_probabilities_whose_rows_sum_to_one(index, method):
    X, y, _ = noisy_circle(500, labels=("clear", "cloud"))
    model = small_models(method)[index].fit(X, y)
    Xt, _, _ = noisy_circle(300, seed=1)
    proba = model.predict_proba(Xt)
    assert proba.shape == (300, 2)
    assert np.all((proba >= 0) & (proba <= 1))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-12)
    # column 1 is classes_[1]'s, and it grows with the decision value
    order = np.argsort(model.decision_function(Xt))
    assert np.all(np.diff(proba[order, 1]) >= -1e-12)
    with np.errstate(divide="ignore"):
        np.testing.assert_array_equal(model.predict_log_proba(Xt), np.log(proba))


def test_without_calibration_there_is_no_predict_proba():
    X, y, _ = noisy_circle(300)
    for model in small_models(None):
        assert not hasattr(model, "predict_proba"), type(model).__name__
        assert not hasattr(model.fit(X, y), "predict_log_proba")
        assert model.calibration_ is None
    # a binned model refitted on bins has no held-out rows: no made-up calibrator
    model = BinnedSVC(omega=0.8, C=10.0, calibration="sigmoid").fit(X, y)
    from bigkern.reduce.binning.percentile import percentile_bins

    model.fit_bins(percentile_bins(X, np.where(y == 1, 1, 0), classes=(0, 1)))
    with pytest.raises(NotFittedError, match="no fitted calibrator"):
        model.predict_proba(X)
    with pytest.raises(NotFittedError):
        ReducedSVC(calibration="sigmoid").predict_proba(X)


def test_binary_sigmoid_is_scikit_learns_sigmoid_calibration_on_the_held_out_rows():
    X, y, _ = noisy_circle(2000)
    model = ReducedSVC(omega=1.0, C=10.0, size=40, random_state=5,
                       calibration="sigmoid").fit(X, y)
    held = _held(model, len(y))
    reference = CalibratedClassifierCV(FrozenEstimator(model), method="sigmoid")
    reference.fit(X[held], y[held])
    Xt, _, _ = noisy_circle(1000, seed=9)
    np.testing.assert_allclose(model.predict_proba(Xt), reference.predict_proba(Xt),
                               atol=1e-6, rtol=0)


def _isotonic_reference(f_held: np.ndarray, positive: np.ndarray, f: np.ndarray
                        ) -> np.ndarray:
    """scikit-learn's isotonic regression of Platt's targets on held-out decision values."""
    iso = IsotonicRegression(out_of_bounds="clip", y_min=0.0, y_max=1.0)
    return iso.fit(f_held, platt_targets(positive)).predict(f)


def test_binary_isotonic_is_scikit_learns_isotonic_regression_of_platts_targets():
    X, y, _ = noisy_circle(2000)
    model = NystromKernelRidgeClassifier(omega=1.0, lam=1e-3, size=40, random_state=5,
                                         calibration="isotonic").fit(X, y)
    held = _held(model, len(y))
    Xt, _, _ = noisy_circle(1000, seed=9)
    p1 = _isotonic_reference(model.decision_function(X[held]), y[held] == model.classes_[1],
                             model.decision_function(Xt))
    np.testing.assert_allclose(model.predict_proba(Xt), np.column_stack([1 - p1, p1]),
                               atol=1e-12, rtol=0)


def test_platt_scaling_is_scikit_learns_on_hard_and_separable_values():
    from sklearn.calibration import _SigmoidCalibration

    rng = np.random.default_rng(3)
    cases = {
        "overlapping": (rng.normal(size=3000), None),
        "separable": (np.r_[rng.uniform(-3, -0.1, 50), rng.uniform(0.1, 3, 70)], None),
        "large values": (rng.normal(scale=400.0, size=500), None),
        "one class": (rng.normal(size=40), np.ones(40, dtype=int)),
    }
    for name, (f, codes) in cases.items():
        if codes is None:
            codes = (rng.random(len(f)) < 1 / (1 + np.exp(-2 * f / f.std()))).astype(int)
        ours = fit_calibration(f, codes, "sigmoid", 2)
        theirs = _SigmoidCalibration().fit(f, codes)
        grid = np.linspace(f.min() - 1, f.max() + 1, 201)
        np.testing.assert_allclose(ours.probabilities(grid)[:, 1], theirs.predict(grid),
                                   atol=1e-6, err_msg=name)
    a, b = platt_scaling(np.array([-1.0, 1.0]), np.array([0, 1]))
    assert a > 0 and abs(b) < 1e-9  # symmetric data: a symmetric sigmoid


def test_isotonic_steps_match_scikit_learns_regression_with_ties():
    rng = np.random.default_rng(4)
    f = np.round(rng.normal(size=800), 1)  # many ties
    codes = (rng.random(800) < 1 / (1 + np.exp(-3 * f))).astype(int)
    ours = fit_calibration(f, codes, "isotonic", 2).probabilities(np.linspace(-5, 5, 301))
    theirs = _isotonic_reference(f, codes == 1, np.linspace(-5, 5, 301))
    np.testing.assert_allclose(ours[:, 1], theirs, atol=1e-12)
    # separable held-out values: no sure answer (Platt's targets), where 0/1 targets give one
    sure = fit_calibration(np.array([-2.0, -1.0, 1.0, 2.0]), np.array([0, 0, 1, 1]),
                           "isotonic", 2).probabilities(np.array([-9.0, 9.0]))
    assert sure.min() > 0.0 and sure.max() < 1.0


def test_probabilities_are_calibrated_where_raw_decisions_are_not():
    """ECE on fresh rows: calibrated ≤ 0.03; a logistic of the raw decision far worse."""
    X, y, _ = noisy_circle(4000)
    Xt, yt, truth = noisy_circle(20_000, seed=11)
    for method in ("sigmoid", "isotonic"):
        model = ReducedSVC(omega=1.0, C=10.0, size=60, random_state=0,
                           calibration=method).fit(X, y)
        proba = model.predict_proba(Xt)
        ece = expected_calibration_error(yt, proba, classes=model.classes_)
        naive_p = 1.0 / (1.0 + np.exp(-model.decision_function(Xt)))
        naive = expected_calibration_error(yt, np.column_stack([1 - naive_p, naive_p]),
                                           classes=model.classes_)
        assert ece <= 0.03, (method, ece)
        assert naive > 2 * ece and naive > 0.05, (method, naive, ece)
        # and close to the probabilities the labels were drawn from
        assert np.abs(proba[:, 1] - truth).mean() < 0.06, method
        report = model.fit_report_["calibration"]
        assert 0 < report["log_loss"] < 0.6 and report["expected_calibration_error"] < 0.06


def test_rows_that_cannot_be_predicted_get_nan_probabilities():
    X, y, _ = noisy_circle(600)
    model = ReducedSVC(omega=1.0, C=10.0, size=40, random_state=0,
                       calibration="sigmoid").fit(X, y)
    Xt = X[:10].copy()
    Xt[[2, 7], 1] = np.nan
    Xt[4, 0] = np.inf
    proba = model.predict_proba(Xt)
    bad = np.zeros(10, dtype=bool)
    bad[[2, 4, 7]] = True
    assert np.isnan(proba[bad]).all() and np.isfinite(proba[~bad]).all()
    lazy = model.predict_proba(da.from_array(Xt, chunks=(4, 2)))
    np.testing.assert_array_equal(lazy.compute(scheduler="sync"), proba)
    with pytest.raises(DataQualityError, match="3 row"):
        model.predict(Xt)
    # the in-memory models too (their fit refuses such rows; their probabilities do not)
    krc = KernelRidgeClassifier(calibration="isotonic").fit(X[:300], y[:300])
    assert np.isnan(krc.predict_proba(Xt)[bad]).all()


def test_rows_with_a_nonfinite_feature_in_the_held_out_share_are_left_out_and_counted():
    X, y, _ = noisy_circle(800)
    model = BinnedSVC(omega=0.8, C=10.0, calibration="sigmoid")
    held = _held(model, 800)
    X[np.flatnonzero(held)[:5], 0] = np.nan
    model.fit(X, y)
    report = model.fit_report_["calibration"]
    assert report["n_held_out"] == int(held.sum())
    assert report["n_calibration"] == int(held.sum()) - 5


def test_dask_predict_proba_is_lazy_one_task_per_row_chunk():
    X, y, _ = noisy_circle(600)
    model = NystromKernelRidgeClassifier(size=40, random_state=0,
                                         calibration="sigmoid").fit(X, y)
    Xd = da.from_array(X, chunks=(250, 2))
    lazy = model.predict_proba(Xd)
    assert isinstance(lazy, da.Array) and lazy.chunks == ((250, 250, 100), (2,))
    np.testing.assert_array_equal(lazy.compute(scheduler="sync"), model.predict_proba(X))
    np.testing.assert_array_equal(model.predict_log_proba(Xd).compute(scheduler="sync"),
                                  model.predict_log_proba(X))


# -- chunking invariance -------------------------------------------------------------------


def _lazy(X, y, rows):
    return da.from_array(X, chunks=(rows, 2)), da.from_array(y, chunks=rows)


def test_the_same_rows_are_held_out_for_any_chunking_on_a_cluster(client):
    X, y, _ = noisy_circle(3000, labels=(0, 1))
    Xt, _, _ = noisy_circle(500, seed=2)
    ref = ReducedSVC(omega=1.0, C=10.0, size=40, random_state=4, calibration="sigmoid")
    ref.fit(X, y)
    keep = ~_held(ref, len(y))
    with client.as_current():
        for rows in (700, 1100):
            model = clone(ref).fit(*_lazy(X, y, rows))
            assert model.fit_report_["calibration"]["n_held_out"] == int((~keep).sum())
            # the rows the fit used are exactly the numpy held-out set's complement
            plain = clone(ref).set_params(calibration=None).fit(*_lazy(X, y, rows), mask=keep)
            np.testing.assert_array_equal(model.decision_function(Xt),
                                          plain.decision_function(Xt))
            # the same probabilities as numpy's, to the model's own agreement across
            # chunkings: its Newton fits stop within 5e-7 of each other in the
            # coefficients at 1100 rows a chunk (a flat optimum, C=10 on 2,442 rows)
            np.testing.assert_allclose(model.predict_proba(Xt), ref.predict_proba(Xt),
                                       rtol=0, atol=2e-6)


@pytest.mark.parametrize("method", ["sigmoid", "isotonic"])
def test_binned_probabilities_are_the_same_for_numpy_and_any_chunking(method):
    X, y, _ = noisy_circle(2000)
    mask = np.ones(2000, dtype=bool)
    mask[::7] = False
    ref = BinnedKernelRidgeClassifier(omega=0.8, lam=0.01, calibration=method)
    ref.fit(X, y, mask=mask)
    Xt, _, _ = noisy_circle(300, seed=2)
    with dask.config.set(scheduler="sync"):
        for rows in (300, 512):
            Xd, yd = _lazy(X, y, rows)
            model = clone(ref).fit(Xd, yd, mask=da.from_array(mask, chunks=rows))
            np.testing.assert_allclose(model.predict_proba(Xt), ref.predict_proba(Xt),
                                       rtol=0, atol=1e-12)
            assert model.fit_report_["calibration"]["n_calibration"] == \
                ref.fit_report_["calibration"]["n_calibration"]


def test_the_in_memory_models_take_the_same_rows_from_dask_and_dataframes():
    import pandas as pd

    X, y, _ = noisy_circle(400)
    ref = CompactLSSVC(omega=0.5, lam=1e-3, radius=1.5, calibration="sigmoid").fit(X, y)
    frame = pd.DataFrame(X, columns=["NDAI", "SD"])
    with dask.config.set(scheduler="sync"):
        for data, labels in [(frame, pd.Series(y)), _lazy(X, y, 150)]:
            model = clone(ref).fit(data, labels)
            rows = frame if isinstance(data, pd.DataFrame) else X
            np.testing.assert_allclose(model.predict_proba(rows), ref.predict_proba(X),
                                       atol=1e-12)


# -- scikit-learn --------------------------------------------------------------------------


def test_grid_search_chooses_by_log_loss():
    X, y, _ = noisy_circle(900, labels=("clear", "cloud"))
    search = GridSearchCV(ReducedSVC(size=30, random_state=0, calibration="sigmoid"),
                          {"C": [0.1, 10.0], "omega": [0.5, 1.0]}, scoring="neg_log_loss",
                          cv=3).fit(X, y)
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()
    assert -0.6 < search.best_score_ < 0
    assert search.predict_proba(X[:5]).shape == (5, 2)


PROBA_BOUNDARY = ("argmax(predict_proba) is predict except where the calibrated sigmoid "
                  "crosses 1/2 at a decision value other than 0: one of the check's 200 rows "
                  "(scikit-learn's SVC(probability=True) behaves alike)")
PROBA_ARGMAX_K = ("k classes: argmax(predict_proba) differs from argmax of the one-vs-rest "
                  "values on a few of the check's 300 rows near a boundary (each calibrator "
                  "is monotone in its own column only); the check wants them equal")
NAN_ROWS = ("the check makes 9 of 30 rows NaN, over bigkern.max_nonfinite_fraction; as in "
            "tests/models/test_sklearn_conformance.py")

CONFORMANCE = {
    "ReducedSVC": (ReducedSVC(calibration="sigmoid"),
                   {"check_classifiers_train": PROBA_BOUNDARY,
                    "check_estimators_pickle": NAN_ROWS}),
    "BinnedSVC": (BinnedSVC(calibration="sigmoid"),
                  {"check_classifiers_train": PROBA_ARGMAX_K,
                   "check_estimators_pickle": NAN_ROWS}),
    "KernelRidgeClassifier": (KernelRidgeClassifier(calibration="sigmoid"),
                              {"check_classifiers_train": PROBA_ARGMAX_K}),
    "CompactSVC": (CompactSVC(calibration="isotonic"),
                   {"check_classifiers_train": PROBA_ARGMAX_K}),
}


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.SkipTestWarning")
@pytest.mark.filterwarnings("ignore:.*have no neighbour within radius")
@pytest.mark.parametrize("name", CONFORMANCE)
def test_scikit_learns_checks_with_predict_proba(name):
    """scikit-learn's checks with predict_proba; the failures are exactly those listed."""
    from sklearn.utils.estimator_checks import check_estimator

    estimator, expected = CONFORMANCE[name]
    with dask.config.set(scheduler="sync"):
        results = check_estimator(estimator, on_fail=None)
    failed = {r["check_name"] for r in results if r["status"] == "failed"}
    assert failed == set(expected), {r["check_name"]: repr(r["exception"])[:300]
                                     for r in results if r["status"] == "failed"}
    assert "check_decision_proba_consistency" in {r["check_name"] for r in results}


# -- the calibrator and the measure --------------------------------------------------------


def test_the_calibrator_is_plain_arrays_and_guards_its_inputs():
    rng = np.random.default_rng(0)
    f = rng.normal(size=300)
    codes = (f + rng.normal(size=300) > 0).astype(int)
    for method in ("sigmoid", "isotonic"):
        cal = fit_calibration(f, codes, method, 2)
        assert isinstance(cal, ProbabilityCalibration)
        for name in ("coef", "intercept", "knots", "levels", "starts"):
            assert type(getattr(cal, name)) is np.ndarray
        assert np.isnan(cal.probabilities(np.array([np.nan, np.inf]))).all()
        assert cal.probabilities(np.empty(0)).shape == (0, 2)
    with pytest.raises(ValueError, match="no rows"):
        fit_calibration(np.empty(0), np.empty(0, dtype=int), "sigmoid", 2)


def test_expected_calibration_error_by_hand_and_at_the_limits():
    y = np.array([0, 1, 1, 1])
    proba = np.array([[0.9, 0.1], [0.2, 0.8], [0.3, 0.7], [0.6, 0.4]])
    assert expected_calibration_error(y, proba) == pytest.approx(0.3)
    # two rows in one bin: |mean accuracy − mean confidence| weighted by the bin's share
    proba = np.array([[0.61, 0.39], [0.62, 0.38], [0.1, 0.9]])
    assert expected_calibration_error([0, 1, 1], proba, n_bins=10) == pytest.approx(
        2 / 3 * abs(0.5 - 0.615) + 1 / 3 * 0.1)
    # probabilities the labels were drawn from are calibrated
    rng = np.random.default_rng(0)
    p = rng.random(200_000)
    drawn = (rng.random(200_000) < p).astype(int)
    assert expected_calibration_error(drawn, np.column_stack([1 - p, p])) < 0.005
    with pytest.raises(ValueError, match="not in classes"):
        expected_calibration_error([0, 2], np.full((2, 2), 0.5), classes=[0, 1])
    with pytest.raises(ValueError, match=r"\(n, k\)"):
        expected_calibration_error([0, 1], np.full((2, 3), 1 / 3))


# -- model files ---------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", ["zarr", "nc"])
@pytest.mark.parametrize("method", ["sigmoid", "isotonic"])
@pytest.mark.parametrize("index", range(7), ids=lambda i: type(small_models("x")[i]).__name__)
def test_a_saved_calibrated_model_gives_the_same_probabilities(tmp_path, index, method, suffix):
    from bigkern.models import load_model, save_model

    # string classes in zarr; numbers in netCDF (its attrs cannot hold a list of strings:
    # main's expansion files fail there with or without a calibrator)
    X, y, _ = noisy_circle(400, labels=("clear", "cloud") if suffix == "zarr" else (-1, 1))
    model = small_models(method)[index].fit(X, y)
    back = load_model(save_model(model, tmp_path / f"model.{suffix}"))
    assert back.get_params() == model.get_params()
    Xt, _, _ = noisy_circle(100, seed=3)
    Xt[5, 0] = np.nan
    np.testing.assert_array_equal(back.predict_proba(Xt), model.predict_proba(Xt))
    np.testing.assert_array_equal(
        back.predict_proba(da.from_array(Xt, chunks=(30, 2))).compute(scheduler="sync"),
        model.predict_proba(Xt))


def test_an_uncalibrated_model_file_has_no_calibrator_and_a_damaged_one_is_refused(tmp_path):
    import xarray as xr

    from bigkern.errors import StoreError
    from bigkern.models import load_model, save_model
    from bigkern.models.persistence.model_files import load_model_dataset

    X, y, _ = noisy_circle(300)
    plain = load_model(save_model(BinnedSVC().fit(X, y), tmp_path / "plain.zarr"))
    assert plain.calibration_ is None and not hasattr(plain, "predict_proba")
    model = BinnedSVC(calibration="isotonic").fit(X, y)
    ds = model.to_dataset()
    assert ds.attrs["calibration_method"] == "isotonic"
    bad = ds.copy()
    bad["calibration_levels"] = bad["calibration_levels"].copy(data=np.full(
        bad.sizes["calibration_knot"], np.nan))
    with pytest.raises(StoreError, match="calibration_levels"):
        load_model_dataset(bad)
    bad = ds.assign(calibration_starts=("calibration_column_edge", np.array([0, 1])))
    with pytest.raises(StoreError, match="do not fit together"):
        load_model_dataset(bad)
    bad = ds.assign_attrs(calibration_method="beta")
    with pytest.raises(StoreError, match="'beta'"):
        load_model_dataset(bad)
    assert isinstance(ds, xr.Dataset)


# -- k classes -----------------------------------------------------------------------------


class OneVsRestRidge(ProbabilityMixin, _KernelClassifier):
    """A test model of k classes: in-memory kernel ridge on ±1 one-vs-rest targets.

    It stands for the k-class classifiers until they are converted: the calibration
    path it exercises (mask, held-out pass, (n, k) decision columns, dask) is theirs.
    """

    _binary_only = False
    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "omega": [domain("omega")], "lam": [domain("lam")], "calibration": CALIBRATION}

    def __init__(self, omega: float = 0.8, lam: float = 0.1, *,
                 calibration: str | None = None) -> None:
        self.omega = omega
        self.lam = lam
        self.calibration = calibration

    @_fit_context(prefer_skip_nested_validation=True)
    @calibrated_fit
    def fit(self, X: Any, y: Any, *, mask: Any = None) -> OneVsRestRidge:
        arr, y = self._fit_input(X, y)
        arr, y, mask = dask.compute(arr, y, mask)
        keep = np.ones(len(y), dtype=bool) if mask is None else np.asarray(mask)
        Z, codes = np.asarray(arr, dtype=np.float64)[keep], self._fit_classes(np.asarray(y)[keep])
        k = len(self.classes_)
        T = np.where(codes[:, None] == np.arange(k), 1.0, -1.0)
        T = T[:, 1] if k == 2 else T
        K = gaussian_kernel(Z, Z, self.omega) + self.lam * np.eye(len(Z))
        self.expansion_ = KernelExpansion.from_parts(
            Z, np.linalg.solve(K, T), np.zeros(k) if k > 2 else 0.0, self.omega)
        return self


def three_sectors(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows in 2-D, three classes drawn from a softmax of smooth angular scores."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    angle = np.arctan2(X[:, 1], X[:, 0])
    scores = 2.5 * np.column_stack([np.cos(angle - a) for a in (0.0, 2.1, 4.2)])
    scores *= np.minimum(np.hypot(X[:, 0], X[:, 1]), 2.0)[:, None]
    p = np.exp(scores - scores.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    y = np.array(["ice", "snow", "water"])[(rng.random(n)[:, None] > p.cumsum(axis=1)).sum(1)]
    return X, y, p


@pytest.mark.parametrize("method", ["sigmoid", "isotonic"])
def test_k_class_probabilities_are_calibrated_and_sum_to_one(method):
    """ECE on fresh rows ≤ 0.04 (measured: sigmoid 0.033, isotonic 0.010), far below a
    softmax of the raw decisions'. A ridge's one-vs-rest values estimate 2p − 1, not a
    logit: a softmax of them with one slope (or scikit-learn's normalized one-vs-rest
    Platt scaling, 0.034 here) is not exact, so the bound is looser than the binary one."""
    X, y, _ = three_sectors(4000)
    Xt, yt, truth = three_sectors(20_000, seed=1)
    model = OneVsRestRidge(omega=0.8, lam=1.0, calibration=method).fit(X, y)
    assert model.decision_function(Xt[:4]).shape == (4, 3)
    proba = model.predict_proba(Xt)
    assert proba.shape == (20_000, 3) and np.all((proba >= 0) & (proba <= 1))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-12)
    ece = expected_calibration_error(yt, proba, classes=model.classes_)
    F = model.decision_function(Xt)
    naive = np.exp(F) / np.exp(F).sum(axis=1, keepdims=True)
    assert ece <= 0.04, ece
    assert expected_calibration_error(yt, naive, classes=model.classes_) > 2 * ece
    assert np.abs(proba - truth).mean() < 0.05
    report = model.fit_report_["calibration"]
    assert report["n_calibration"] == int(_held(model, 4000).sum())


def test_k_class_isotonic_is_one_vs_rest_isotonic_of_platts_targets_normalized():
    X, y, _ = three_sectors(2000)
    model = OneVsRestRidge(omega=0.8, lam=1.0, calibration="isotonic").fit(X, y)
    held = _held(model, len(y))
    Xt, _, _ = three_sectors(2000, seed=4)
    f_held, f = model.decision_function(X[held]), model.decision_function(Xt)
    p = np.column_stack([_isotonic_reference(f_held[:, j], y[held] == c, f[:, j])
                         for j, c in enumerate(model.classes_)])
    np.testing.assert_allclose(model.predict_proba(Xt), p / p.sum(axis=1, keepdims=True),
                               atol=1e-12)


def test_the_k_class_sigmoid_recovers_the_temperature_decisions_were_drawn_from():
    rng = np.random.default_rng(0)
    F = rng.normal(scale=2.0, size=(30_000, 3))
    z = 1.7 * F + np.array([0.0, -0.4, 0.3])
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    codes = (rng.random(30_000)[:, None] > p.cumsum(axis=1)).sum(axis=1)
    cal = fit_calibration(F, codes, "sigmoid", 3)
    assert cal.coef.shape == (3, 3) and cal.intercept.shape == (3,)
    np.testing.assert_allclose(cal.coef, cal.coef[0, 0] * np.eye(3))  # one slope
    assert abs(cal.coef[0, 0] - 1.7) < 0.05
    np.testing.assert_allclose(cal.intercept, [0.0, -0.4, 0.3], atol=0.05)
    error = np.abs(cal.probabilities(F) - p)
    assert error.mean() < 0.005 and error.max() < 0.05
    assert np.isnan(cal.probabilities(np.array([[np.nan, 0.0, 1.0]]))).all()
    # the same fit by a general optimizer of the same smoothed likelihood
    a, b = temperature_scaling(F[:2000], codes[:2000], 3)
    assert reference_temperature(F[:2000], codes[:2000], 3) == pytest.approx(
        np.r_[a, b[1:] - b[0]], abs=1e-5)
    # separable rows keep a finite slope, and a confident row may come within
    # 1 / (n + 2) of certainty, not within one class's 1 / (N_c + 2)
    sep = np.eye(3)[np.arange(300) % 3] * 4.0 - 2.0
    cal = fit_calibration(sep, np.arange(300) % 3, "sigmoid", 3)
    top = cal.probabilities(sep).max(axis=1)
    assert np.isfinite(cal.coef).all() and np.all(top > 1 - 2 / 302) and np.all(top < 1)
    # a class absent from the held-out rows keeps a small probability
    few = fit_calibration(F[:50], np.arange(50) % 2, "sigmoid", 3).probabilities(F[:50])
    assert np.all((few[:, 2] > 0) & (few[:, 2] < 0.05))
    # isotonic: one column per class, rows normalized, an all-zero row uniform
    iso = fit_calibration(F, codes, "isotonic", 3)
    np.testing.assert_allclose(iso.probabilities(F).sum(axis=1), 1.0, atol=1e-12)
    assert iso.starts.shape == (4,)
    zero = ProbabilityCalibration("isotonic", 3, np.empty((0, 0)), np.empty(0),
                                  np.zeros(3), np.zeros(3), np.arange(4))
    np.testing.assert_allclose(zero.probabilities(np.ones((2, 3))), 1 / 3)


def test_k_class_probabilities_are_the_same_for_numpy_and_any_chunking():
    X, y, _ = three_sectors(1500)
    ref = OneVsRestRidge(omega=0.8, lam=1.0, calibration="sigmoid").fit(X, y)
    Xt, _, _ = three_sectors(300, seed=2)
    with dask.config.set(scheduler="sync"):
        for rows in (400, 640):
            Xd, yd = _lazy(X, y, rows)
            model = clone(ref).fit(Xd, yd)
            np.testing.assert_array_equal(model.predict_proba(Xt), ref.predict_proba(Xt))
            lazy = model.predict_proba(da.from_array(Xt, chunks=(128, 2)))
            assert lazy.chunks == ((128, 128, 44), (3,))
            np.testing.assert_array_equal(lazy.compute(), ref.predict_proba(Xt))


@pytest.mark.parametrize("method", ["sigmoid", "isotonic"])
def test_a_k_class_calibrator_is_saved_and_read_back(method):
    import xarray as xr

    from bigkern.models.calibration import calibration_variables, saved_calibration

    X, y, _ = three_sectors(800)
    model = OneVsRestRidge(omega=0.8, lam=1.0, calibration=method).fit(X, y)
    variables, attrs = calibration_variables(model.calibration_)
    back = saved_calibration(xr.Dataset(variables, attrs=attrs))
    F = model.decision_function(X[:50])
    np.testing.assert_array_equal(back.probabilities(F), model.calibration_.probabilities(F))
    assert saved_calibration(xr.Dataset()) is None


def test_a_held_out_label_the_fit_did_not_see_is_refused_naming_it():
    X, y, _ = noisy_circle(500)
    model = BinnedSVC(calibration="sigmoid")
    y[np.flatnonzero(_held(model, 500))[3]] = 7
    with pytest.raises(LabelError, match=r"label\(s\) \[7\] that the fit did not see"):
        model.fit(X, y)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.SkipTestWarning")
def test_scikit_learns_multiclass_checks_with_predict_proba():
    """The checks of k classes with probabilities; the one failure is that argmax of the
    calibrated probabilities differs from argmax of the raw one-vs-rest values on a few
    of the check's 300 rows near a boundary (each calibrator is monotone in its own column
    only), which the check requires to agree."""
    from sklearn.utils.estimator_checks import check_estimator

    with dask.config.set(scheduler="sync"):
        results = check_estimator(OneVsRestRidge(calibration="sigmoid"), on_fail=None)
    failed = {r["check_name"] for r in results if r["status"] == "failed"}
    assert failed == {"check_classifiers_train"}, failed


K_CLASS_MODELS = [
    NystromKernelRidgeClassifier(omega=1.0, lam=1e-3, size=80, random_state=0),
    BinnedKernelRidgeClassifier(omega=0.8, lam=0.01),
    KernelRidgeClassifier(omega=0.8, lam=1.0),
    CompactLSSVC(omega=0.5, lam=1e-3, radius=1.5),
]


@pytest.mark.parametrize("method", ["sigmoid", "isotonic"])
@pytest.mark.parametrize("model", K_CLASS_MODELS, ids=lambda m: type(m).__name__)
def test_the_k_class_classifiers_give_calibrated_probabilities(model, method, tmp_path):
    """Three classes on the converted classifiers: sums, ECE on fresh rows, a model file."""
    from bigkern.models import load_model, save_model

    if not model.__sklearn_tags__().classifier_tags.multi_class:
        pytest.skip(f"{type(model).__name__} is binary only on this branch")
    X, y, _ = three_sectors(4000 if "Compact" not in type(model).__name__ else 2500)
    Xt, yt, _ = three_sectors(20_000, seed=1)
    model = clone(model).set_params(calibration=method).fit(X, y)
    proba = model.predict_proba(Xt)
    assert proba.shape == (20_000, 3)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-12)
    ece = expected_calibration_error(yt, proba, classes=model.classes_)
    assert ece <= 0.05, ece
    back = load_model(save_model(model, tmp_path / "model.zarr"))
    np.testing.assert_array_equal(back.predict_proba(Xt[:500]), proba[:500])


def test_k_class_binned_probabilities_are_the_same_for_numpy_and_any_chunking():
    X, y, _ = three_sectors(2000)
    Xt, _, _ = three_sectors(300, seed=2)
    ref = BinnedKernelRidgeClassifier(omega=0.8, lam=0.01, calibration="sigmoid").fit(X, y)
    if len(ref.classes_) != 3:
        pytest.skip("BinnedKernelRidgeClassifier is binary only on this branch")
    with dask.config.set(scheduler="sync"):
        for rows in (300, 512):
            model = clone(ref).fit(*_lazy(X, y, rows))
            np.testing.assert_allclose(model.predict_proba(Xt), ref.predict_proba(Xt),
                                       rtol=0, atol=1e-9)
