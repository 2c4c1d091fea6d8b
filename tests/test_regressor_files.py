"""Saving and loading the Gaussian-basis regressors (OHTRegressor, LOOKernelRidge)."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest
from sklearn.base import clone

from bigkern import LOOKernelRidge, OHTRegressor
from bigkern.errors import StoreError
from bigkern.io import load_model, save_model


def _data(n: int = 300, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, (n, 3)) * [1.0, 4.0, 0.5] + [0.0, 10.0, -3.0]
    y = np.sin(2 * X[:, 0]) + 0.1 * X[:, 1] + 0.1 * rng.standard_normal(n)
    return X, y


ESTIMATORS = [
    OHTRegressor(method="GS2", widths=(0.5, 1.0, 2.0), random_state=0),
    OHTRegressor(method="ED", widths=(1.0,)),
    OHTRegressor(method="ED2", widths=(0.5, 1.0), basis=40, random_state=3),
    LOOKernelRidge(widths=(0.5, 1.0), ridges=(1e-3, 1e-2, 1e-1), random_state=1),
]


@pytest.mark.parametrize("suffix", ["zarr", "nc"])
@pytest.mark.parametrize("est", ESTIMATORS, ids=lambda e: f"{type(e).__name__}-{e.widths}")
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
    assert back.omega_ == model.omega_ and back.intercept_ == model.intercept_
    np.testing.assert_array_equal(back.cv_scores_, model.cv_scores_)
    if isinstance(model, OHTRegressor):
        assert (back.n_components_, back.n_stable_) == (model.n_components_, model.n_stable_)
        assert back.sigma2_ == model.sigma2_
        np.testing.assert_array_equal(back.basis_used_, model.basis_used_)
        assert not hasattr(back, "solution_")  # the solver's full result is not saved
    else:
        assert back.ridge_ == model.ridge_
    with pytest.raises(StoreError, match="exists"):
        save_model(model, path)


def test_unsaveable_parameter_and_unfitted_model_are_named(tmp_path):
    X, y = _data()
    model = OHTRegressor(widths=(1.0,), random_state=np.random.RandomState(0)).fit(X, y)
    with pytest.raises(TypeError, match="random_state"):
        save_model(model, tmp_path / "m.zarr")
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        save_model(OHTRegressor(), tmp_path / "n.zarr")


def test_newer_format_is_refused(tmp_path):
    from bigkern.models import load_model_dataset

    X, y = _data()
    ds = LOOKernelRidge(widths=(1.0,)).fit(X, y).to_dataset()
    ds.attrs["bigkern_format"] = 99
    with pytest.raises(ValueError, match="newer bigkern"):
        load_model_dataset(ds)


def test_a_model_without_a_file_format_is_named(tmp_path):
    from bigkern import GaussianRLS

    X, y = _data()
    with pytest.raises(TypeError, match="GaussianRLS cannot be saved"):
        save_model(GaussianRLS(sigma=1.0, lam=1e-3).fit(X, y), tmp_path / "g.zarr")
    assert not (tmp_path / "g.zarr").exists()
