"""Saving and loading the regressors (OHTRegressor, LOOKernelRidge, GaussianRLS,
PeriodicKernelRidge); the version and format every model file records."""

from __future__ import annotations

import warnings

import dask.array as da
import numpy as np
import pandas as pd
import pytest
import xarray as xr
from sklearn.base import clone

from bigkern import GaussianRLS, LOOKernelRidge, OHTRegressor, PeriodicKernelRidge
from bigkern.errors import BigkernWarning, StoreError
from bigkern.models import load_model, save_model
from bigkern.version import __version__


def _data(n: int = 300, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, (n, 3)) * [1.0, 4.0, 0.5] + [0.0, 10.0, -3.0]
    y = np.sin(2 * X[:, 0]) + 0.1 * X[:, 1] + 0.1 * rng.standard_normal(n)
    return X, y


ESTIMATORS = [
    OHTRegressor(method="GS2", omega=(0.5, 1.0, 2.0), random_state=0),
    OHTRegressor(method="ED", omega=(1.0,)),
    OHTRegressor(method="ED2", omega=(0.5, 1.0), size=40, random_state=3),
    LOOKernelRidge(omega=(0.5, 1.0), lam=(1e-3, 1e-2, 1e-1), random_state=1),
]


@pytest.mark.determinism
@pytest.mark.parametrize("suffix", ["zarr", "nc"])
@pytest.mark.parametrize("est", ESTIMATORS, ids=lambda e: f"{type(e).__name__}-{e.omega}")
def test_round_trip_predicts_the_same(tmp_path, est, suffix):
    X, y = _data()
    model = clone(est).fit(X, y)
    path = save_model(model, tmp_path / f"model.{suffix}")
    back = load_model(path)
    assert type(back) is type(model)
    assert back.get_params() == model.get_params()
    Xt, _ = _data(50, seed=1)
    np.testing.assert_array_equal(back.predict(Xt), model.predict(Xt))
    np.testing.assert_array_equal(back.predict(da.from_array(Xt, chunks=20)).compute(),
                                  model.predict(Xt))
    assert back.omega_ == model.omega_
    assert back.expansion_.intercept == model.expansion_.intercept
    np.testing.assert_array_equal(back.cv_scores_, model.cv_scores_)
    if isinstance(model, OHTRegressor):
        assert (back.n_components_, back.n_stable_) == (model.n_components_, model.n_stable_)
        assert back.sigma2_ == model.sigma2_
        np.testing.assert_array_equal(back.basis_used_, model.basis_used_)
        assert not hasattr(back, "solution_")  # the solver's full result is not saved
    else:
        assert back.lam_ == model.lam_
    with pytest.raises(StoreError, match="exists"):
        save_model(model, path)


def test_unsaveable_parameter_and_unfitted_model_are_named(tmp_path):
    X, y = _data()
    model = OHTRegressor(omega=(1.0,), random_state=np.random.RandomState(0)).fit(X, y)
    with pytest.raises(TypeError, match="random_state"):
        save_model(model, tmp_path / "m.zarr")
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        save_model(OHTRegressor(), tmp_path / "n.zarr")


def test_newer_format_is_refused(tmp_path):
    from bigkern.models import load_model_dataset

    X, y = _data()
    ds = LOOKernelRidge(omega=(1.0,)).fit(X, y).to_dataset()
    ds.attrs["bigkern_format"] = 99
    with pytest.raises(ValueError, match="newer bigkern"):
        load_model_dataset(ds)


def test_a_model_without_a_file_format_is_named(tmp_path):
    from sklearn.linear_model import Ridge

    X, y = _data()
    with pytest.raises(TypeError, match="Ridge cannot be saved"):
        save_model(Ridge().fit(X, y), tmp_path / "r.zarr")
    assert not (tmp_path / "r.zarr").exists()


def _circle(n: int = 120, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 1, n)
    return x, np.sin(2 * np.pi * x) + 0.3 * rng.standard_normal(n)


SMALL_GRID = {"omega": (0.2, 0.5, 0.8), "lam": (1e-4, 1e-3, 1e-2, 1e-1)}
PERIODIC = [
    PeriodicKernelRidge(omega=0.5, lam=1e-3),
    PeriodicKernelRidge(**SMALL_GRID, n_bins=25),
    PeriodicKernelRidge(**SMALL_GRID, sigma2=0.09, approximation="wrapped", wrap=True),
]
RLS = [
    GaussianRLS(omega=1.0, lam=(1e-4, 1e-3, 1e-2), precision="double"),
    GaussianRLS(omega=1e3, lam=1e-10),  # extended precision, predicting by yᵀ[(K + λnI)⁻¹ k(x)]
]


def _fit(model, data):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BigkernWarning)  # the switch to extended precision
        return clone(model).fit(*data)


@pytest.mark.parametrize("suffix", ["zarr", "nc"])
@pytest.mark.parametrize("est", RLS + PERIODIC,
                         ids=["RLS-double", "RLS-extended", "periodic", "periodic-binned-Cp",
                              "periodic-wrapped-Cp"])
def test_rls_and_periodic_round_trip_predict_bit_identically(tmp_path, est, suffix):
    periodic = isinstance(est, PeriodicKernelRidge)
    if periodic:
        data, test = _circle(), _circle(40, seed=1)[0]
    else:
        x = np.random.default_rng(0).uniform(0, 1, 20)
        data, test = (x[:, None], np.sin(6 * x)), np.linspace(0, 1, 15)[:, None]
    model = _fit(est, data)
    back = load_model(save_model(model, tmp_path / f"model.{suffix}"))
    assert type(back) is type(model)
    assert back.get_params() == model.get_params()
    np.testing.assert_array_equal(back.predict(test), model.predict(test))
    np.testing.assert_array_equal(back.coef_, model.coef_)
    if periodic:
        for k in ("omega_", "lam_", "lam_b_", "sigma2_", "trace_", "n_bins_", "n_empty_bins_"):
            assert getattr(back, k) == getattr(model, k), k
        np.testing.assert_array_equal(back.bin_counts_, model.bin_counts_)
        if model.cp_ is None:
            assert back.cp_ is None
        else:
            xr.testing.assert_identical(back.cp_, model.cp_)
    else:
        assert back.precision_ == model.precision_ and back.dps_ == model.dps_
        assert (back.lam_, back.condition_) == (model.lam_, model.condition_)
        np.testing.assert_array_equal(back.loo_mse_, model.loo_mse_)


@pytest.mark.parametrize("model", [OHTRegressor(omega=(1.0,)), LOOKernelRidge(omega=(1.0,)),
                                   GaussianRLS(), PeriodicKernelRidge(n_bins=20)],
                         ids=lambda m: type(m).__name__)
def test_feature_names_survive_the_file(tmp_path, model):
    if isinstance(model, PeriodicKernelRidge):
        frame, y = pd.DataFrame({"phase": _circle()[0]}), _circle()[1]
        other = frame.rename(columns={"phase": "time"})
    else:
        X, y = _data()
        frame = pd.DataFrame(X, columns=["NDAI", "SD", "CORR"])
        other = frame[["CORR", "SD", "NDAI"]]
    model = clone(model).fit(frame, y)
    back = load_model(save_model(model, tmp_path / "m.nc"))
    assert list(back.feature_names_in_) == list(model.feature_names_in_)
    np.testing.assert_array_equal(back.predict(frame), model.predict(frame))
    with pytest.raises(ValueError, match="feature names should match"):
        back.predict(other)


def _every_family():
    from bigkern.models import CompactKernelRidge, KernelRidgeClassifier

    X, y = _data(120)
    labels = (y > np.median(y)).astype(int)
    return [KernelRidgeClassifier(omega=1.0).fit(X, labels),
            CompactKernelRidge(omega=1.0, radius=3.0).fit(X, labels),
            OHTRegressor(omega=(1.0,)).fit(X, y), GaussianRLS().fit(X, y),
            PeriodicKernelRidge().fit(*_circle())]


def _format_of(model) -> int:
    """The model format of ``model``'s family (the one expansion layout is at format 2)."""
    from bigkern.models.persistence.model_files import _known_format

    return _known_format(type(model).__name__)


def test_a_file_of_the_earlier_expansion_layouts_is_refused_saying_to_refit(tmp_path):
    from bigkern.models import KernelRidgeClassifier, load_model_dataset

    X, y = _data(120)
    for model in (KernelRidgeClassifier(omega=1.0).fit(X, (y > np.median(y)).astype(int)),
                  OHTRegressor(omega=(1.0,)).fit(X, y)):
        ds = model.to_dataset()
        ds.attrs["bigkern_format"] = 1
        with pytest.raises(StoreError, match=r"layout of an earlier bigkern \(model format 1; "
                                             r"classifiers and regressors were saved apart\).*"
                                             r"refit the model"):
            load_model_dataset(ds)


@pytest.mark.parametrize("suffix", ["zarr", "nc"])
def test_every_model_file_records_the_bigkern_that_wrote_it(tmp_path, suffix):
    for i, model in enumerate(_every_family()):
        ds = model.to_dataset()
        fmt = _format_of(model)
        assert ds.attrs["bigkern_version"] == __version__ and ds.attrs["bigkern_format"] == fmt
        path = save_model(model, tmp_path / f"m{i}.{suffix}")
        opened = xr.open_zarr(path) if suffix == "zarr" else xr.open_dataset(path)
        with opened:
            assert opened.attrs["bigkern_version"] == __version__
            assert int(opened.attrs["bigkern_format"]) == fmt
            assert all(v.dtype.kind in "fiub" for v in opened.data_vars.values())  # no pickle


def test_a_newer_format_names_both_versions_for_every_family(tmp_path):
    from bigkern.models import load_model_dataset

    for model in _every_family():
        ds = model.to_dataset()
        fmt = _format_of(model)
        ds.attrs.update(bigkern_format=fmt + 1, bigkern_version="9.1.0")
        with pytest.raises(StoreError, match=rf"newer bigkern \(bigkern 9\.1\.0, model format "
                                             rf"{fmt + 1}\); this is bigkern {__version__}, "
                                             rf"which reads model formats up to {fmt}"):
            load_model_dataset(ds)
    ds.to_netcdf(tmp_path / "newer.nc", engine="scipy")  # model files are netCDF classic
    with pytest.raises(StoreError, match="upgrade bigkern"):
        load_model(tmp_path / "newer.nc")
