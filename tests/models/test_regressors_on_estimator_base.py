"""The regressors on the estimator base: each thing a user could hit without it, a test.

OHTRegressor (in memory and on a reduced basis), LOOKernelRidge, GaussianRLS and
PeriodicKernelRidge: DataFrame column names recorded and a reordered or renamed
column an error, NotFittedError before fit, a column-vector y accepted with
scikit-learn's warning, an xarray.Dataset pointed to stack_samples, and dask
input predicted lazily.
"""

from __future__ import annotations

import dask
import dask.array as da
import numpy as np
import pandas as pd
import pytest
import xarray as xr
from sklearn.base import clone
from sklearn.exceptions import DataConversionWarning, NotFittedError

from bigkern.errors import DataQualityError
from bigkern.models import GaussianRLS, LOOKernelRidge, OHTRegressor, PeriodicKernelRidge

REGRESSORS = [
    OHTRegressor(method="ED2", omega=(1.0, 2.0), random_state=0),
    OHTRegressor(method="GS2", omega=(0.5, 1.0), size=40, random_state=0),
    LOOKernelRidge(omega=(0.5, 1.0), lam=(1e-3, 1e-2), random_state=0),
    GaussianRLS(omega=1.0, lam=(1e-4, 1e-2)),
    PeriodicKernelRidge(omega=0.5, lam=1e-3, n_bins=30),
]
IDS = ["OHT", "OHT-basis", "LOOKernelRidge", "GaussianRLS", "PeriodicKernelRidge"]
NAMES = ["NDAI", "SD", "CORR"]


@pytest.fixture(autouse=True)
def _local_scheduler():
    with dask.config.set(scheduler="sync"):
        yield


def _periodic(model) -> bool:
    return isinstance(model, PeriodicKernelRidge)


def _data(model, n: int = 200, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``X`` (n, 3) for the Gaussian regressors, (n, 1) points of [0, 1) for the periodic one."""
    rng = np.random.default_rng(seed)
    if _periodic(model):
        x = rng.uniform(0, 1, (n, 1))
        return x, np.sin(2 * np.pi * x[:, 0]) + 0.1 * rng.standard_normal(n)
    X = rng.uniform(-2, 2, (n, 3))
    return X, np.sin(X[:, 0]) + 0.1 * X[:, 1] + 0.1 * rng.standard_normal(n)


@pytest.mark.parametrize("model", REGRESSORS, ids=IDS)
def test_dataframe_names_are_recorded_and_a_reordered_column_is_an_error(model):
    model = clone(model)
    X, y = _data(model)
    names = NAMES[:X.shape[1]] if not _periodic(model) else ["phase"]
    frame = pd.DataFrame(X, columns=names)
    model.fit(frame, y)
    assert list(model.feature_names_in_) == names
    np.testing.assert_array_equal(model.predict(frame), model.predict(X))
    other = frame[names[::-1]] if len(names) > 1 else frame.rename(columns={"phase": "time"})
    with pytest.raises(ValueError, match="feature names should match"):
        model.predict(other)


@pytest.mark.parametrize("model", REGRESSORS, ids=IDS)
def test_use_before_fit_raises_not_fitted(model):
    model = clone(model)
    X, _ = _data(model, 10)
    with pytest.raises(NotFittedError):
        model.predict(X)
    with pytest.raises(NotFittedError):
        model.to_dataset()


@pytest.mark.parametrize("model", REGRESSORS, ids=IDS)
def test_column_vector_y_is_accepted_with_a_warning(model):
    X, y = _data(model)
    with pytest.warns(DataConversionWarning, match="column-vector y"):
        column = clone(model).fit(X, y[:, None])
    np.testing.assert_array_equal(column.predict(X[:20]), clone(model).fit(X, y).predict(X[:20]))


@pytest.mark.parametrize("model", REGRESSORS, ids=IDS)
def test_an_xarray_dataset_as_x_points_to_stack_samples(model):
    model = clone(model)
    X, y = _data(model)
    ds = xr.Dataset({f: ("pixel", X[:, i]) for i, f in enumerate(NAMES[:X.shape[1]])})
    with pytest.raises(TypeError, match="stack_samples"):
        model.fit(ds, y)
    model.fit(X, y)
    with pytest.raises(TypeError, match="stack_samples"):
        model.predict(ds)


@pytest.mark.parametrize("model", REGRESSORS, ids=IDS)
def test_dask_input_is_predicted_lazily(model):
    X, y = _data(model)
    model = clone(model).fit(X, y)
    Xt, _ = _data(model, 90, seed=1)
    lazy = model.predict(da.from_array(Xt, chunks=(25, -1)))
    assert isinstance(lazy, da.Array) and lazy.shape == (90,)
    # row blocks of other sizes take other BLAS paths: equal to round-off
    np.testing.assert_allclose(lazy.compute(), model.predict(Xt), rtol=1e-12, atol=1e-10)
    Xt[47, 0] = np.nan
    bad = model.predict(da.from_array(Xt, chunks=(25, -1)))  # still lazy: nothing read yet
    with pytest.raises(DataQualityError, match=r"first: row 47"):
        bad.compute()
    with pytest.raises(ValueError, match=r"Input X contains NaN.*row 47, column 0"):
        model.predict(Xt)


@pytest.mark.determinism
@pytest.mark.parametrize("model", REGRESSORS[2:], ids=IDS[2:])
def test_in_memory_regressors_take_dask_input_to_fit(model):
    X, y = _data(model)
    on_dask = clone(model).fit(da.from_array(X, chunks=(50, -1)), da.from_array(y, chunks=50))
    np.testing.assert_array_equal(on_dask.predict(X), clone(model).fit(X, y).predict(X))


def test_a_one_dimensional_dask_array_of_points_stays_lazy():
    x, y = _data(PeriodicKernelRidge())
    model = PeriodicKernelRidge(omega=0.5, lam=1e-3).fit(x[:, 0], y)
    lazy = model.predict(da.from_array(x[:, 0], chunks=50))
    assert isinstance(lazy, da.Array)
    np.testing.assert_allclose(lazy.compute(), model.predict(x[:, 0]), rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match=r"X in predict must lie in \[0, 1\)"):
        model.predict(da.from_array(x[:, 0] + 1, chunks=50)).compute()


def test_float32_input_is_fitted_in_double_as_before():
    X, y = _data(REGRESSORS[2])
    model = LOOKernelRidge(omega=(1.0,))
    np.testing.assert_array_equal(model.fit(X.astype(np.float32), y).predict(X),
                                  model.fit(X.astype(np.float32).astype(np.float64), y)
                                  .predict(X))
