"""Binned estimators: the solve they claim, scikit-learn parity, persistence, determinism."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest
import xarray as xr
from sklearn.svm import SVC

from bigkern import config
from bigkern.errors import DataQualityError, LabelError
from bigkern.kernels import gaussian_kernel, omega_to_gamma
from bigkern.models import (
    BinnedKernelRidgeClassifier,
    BinnedSVC,
    KernelRidgeClassifier,
    load_model,
    save_model,
)
from bigkern.reduce import percentile_bins


def _data(n=30_000, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 3)).astype(np.float32)
    y = np.where(x[:, 0] ** 2 + x[:, 1] - 0.5 + 0.5 * rng.standard_normal(n) > 0, 1, -1)
    return x, y.astype(np.int8)


@pytest.fixture(scope="module")
def bins():
    x, y = _data()
    return percentile_bins(da.from_array(x, chunks=(4000, 3)), da.from_array(y, chunks=4000))


def test_fuzzy_ridge_solves_the_weighted_system(bins):
    model = BinnedKernelRidgeClassifier(omega=0.7, lam=0.05).fit_bins(bins)
    Z = (bins["center"].values - bins["offset"].values) / bins["scale"].values
    K = gaussian_kernel(Z, Z, 0.7)
    w = bins["count"].values / bins["count"].values.mean()
    c = np.linalg.solve(K + 0.05 * np.diag(1 / w), bins["fuzzy_label"].values)
    np.testing.assert_allclose(model.expansion_.coef, c, rtol=1e-6, atol=1e-8)
    # decision = K c - 1/2 at the bin centers
    centers = bins["center"].values
    np.testing.assert_allclose(model.decision_function(centers), K @ c - 0.5, atol=1e-4)


def test_majority_ridge_is_unweighted(bins):
    model = BinnedKernelRidgeClassifier(omega=0.7, lam=0.05, bin_target="majority").fit_bins(bins)
    Z = (bins["center"].values - bins["offset"].values) / bins["scale"].values
    target = (bins["majority_label"].values == 1).astype(float)
    c = np.linalg.solve(gaussian_kernel(Z, Z, 0.7) + 0.05 * np.eye(len(Z)), target)
    np.testing.assert_allclose(model.expansion_.coef, c, rtol=1e-6, atol=1e-8)


def test_svc_matches_sklearn_on_the_bins(bins):
    model = BinnedSVC(omega=0.8, C=3.0).fit_bins(bins)
    Z = (bins["center"].values - bins["offset"].values) / bins["scale"].values
    w = bins["count"].values / bins["count"].values.mean()
    ref = SVC(C=3.0, gamma=omega_to_gamma(0.8)).fit(Z, bins["majority_label"].values,
                                                    sample_weight=w)
    x, _ = _data(2000, seed=9)
    zx = (x - bins["offset"].values) / bins["scale"].values
    np.testing.assert_allclose(model.decision_function(x), ref.decision_function(zx), atol=1e-4)
    np.testing.assert_array_equal(model.predict(x), ref.predict(zx))
    assert model.n_support_ == ref.support_.size


def test_accuracy_close_to_full_svm():
    x, y = _data(40_000, seed=1)
    xt, yt = _data(10_000, seed=2)
    binned = BinnedSVC(omega=0.8, C=3.0).fit(x, y)
    full = SVC(C=3.0, gamma=omega_to_gamma(0.8)).fit(
        (x[:8000] - binned.expansion_.offset) / binned.expansion_.scale, y[:8000])
    acc_full = full.score((xt - binned.expansion_.offset) / binned.expansion_.scale, yt)
    assert binned.score(xt, yt) > acc_full - 0.02


@pytest.mark.determinism
@pytest.mark.parametrize("model", [BinnedKernelRidgeClassifier(), BinnedSVC(C=3.0)])
def test_same_model_whatever_the_chunking(model):
    x, y = _data(20_000, seed=4)
    a = model.fit(x, y).expansion_
    b = type(model)(**model.get_params()).fit(da.from_array(x, chunks=(1234, 3)),
                                              da.from_array(y, chunks=1234)).expansion_
    np.testing.assert_array_equal(a.centers, b.centers)
    np.testing.assert_array_equal(a.coef, b.coef)


@pytest.mark.parametrize("model", [BinnedKernelRidgeClassifier(), BinnedSVC(C=3.0)])
def test_save_load_round_trip(model, tmp_path, bins):
    model.fit_bins(bins)
    x, _ = _data(3000, seed=7)
    for name in ("model.zarr", "model.nc"):
        save_model(model, tmp_path / name)
        back = load_model(tmp_path / name)
        assert type(back) is type(model)
        assert back.get_params() == model.get_params()
        np.testing.assert_array_equal(back.predict(x), model.predict(x))


def test_feature_names_remembered_and_checked():
    x, y = _data(5000)
    X = xr.DataArray(x, dims=("sample", "feature"), coords={"feature": ["NDAI", "SD", "CORR"]})
    model = BinnedSVC().fit(X, y)
    assert list(model.feature_names_in_) == ["NDAI", "SD", "CORR"]
    # reordered columns are put back in the fitted order
    np.testing.assert_array_equal(model.predict(X[:, ::-1]), model.predict(x))
    with pytest.raises(ValueError, match=r"lacks feature\(s\) \['CORR'\]"):
        model.predict(X.sel(feature=["NDAI", "SD"]))


@pytest.mark.determinism
def test_dask_predict_is_lazy_and_equal():
    x, y = _data(5000)
    model = BinnedKernelRidgeClassifier().fit(x, y)
    lazy = model.predict(da.from_array(x, chunks=(999, 3)))
    assert isinstance(lazy, da.Array)
    np.testing.assert_array_equal(lazy.compute(), model.predict(x))


def test_nonfinite_rows_counted_and_never_given_a_class():
    x, y = _data(5000)
    x[::10, 2] = np.nan
    x[1::10, 0] = -np.inf
    model = BinnedSVC().fit(x, y)
    assert model.fit_report_["n_nonfinite"] == 1000
    assert np.isnan(model.decision_function(x[:20])[[0, 1, 10, 11]]).all()
    with pytest.raises(DataQualityError, match="cannot be predicted"):
        model.predict(x[::10])


def test_too_many_nonfinite_rows_raise():
    x, y = _data(5000)
    x[::2, 1] = np.inf
    with config.set(max_nonfinite_fraction=0.25), pytest.raises(
            DataQualityError, match=r"2500 of 5000 present rows \(50.0%\)"):
        BinnedSVC().fit(x, y)


def test_one_class_only_raises():
    x, _ = _data(2000)
    with pytest.raises(LabelError, match="one class only"):
        BinnedKernelRidgeClassifier().fit(x, np.ones(2000))


def test_in_memory_kernel_ridge_baseline():
    x, y = _data(800)
    model = KernelRidgeClassifier(omega=1.0, lam=0.1).fit(x, y)
    K = gaussian_kernel(x.astype(float), x.astype(float), 1.0)
    c = np.linalg.solve(K + 0.1 * np.eye(800), (y == 1).astype(float))
    np.testing.assert_allclose(model.expansion_.coef, c, rtol=1e-6, atol=1e-8)
    assert model.score(x, y) > 0.8


def test_subsample_and_bagged_baselines_with_scikit_learn_bagging():
    from sklearn.ensemble import BaggingClassifier

    from bigkern.reduce.sampling import sample_rows

    x, y = _data(20_000)
    bins = percentile_bins(x, y)
    m = bins.sizes["bin"]
    xs, ys, _ = sample_rows(x, y, n=m, seed=1)  # a subsample as large as the bins
    single = KernelRidgeClassifier(omega=1.0, lam=0.1, standardize=True).fit(xs, ys)
    bagged = BaggingClassifier(
        KernelRidgeClassifier(omega=1.0, lam=0.1, standardize=True), n_estimators=5,
        max_samples=m, bootstrap=False, random_state=0,
    ).fit(x, y)
    assert len(bagged.estimators_) == 5
    assert all(e.expansion_.n_basis == m for e in bagged.estimators_)
    held_x, held_y = _data(5000, seed=9)
    assert bagged.score(held_x, held_y) >= single.score(held_x, held_y) - 0.02
    assert single.score(held_x, held_y) > 0.75
