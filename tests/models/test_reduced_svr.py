"""ReducedSVR: exact against a direct Newton solve, deterministic, bad input, persistence."""

from __future__ import annotations

import dask
import dask.array as da
import numpy as np
import pandas as pd
import pytest

from bigkern.kernels import gaussian_kernel
from bigkern.models.reduced_kernel.reduced_svr import ReducedSVR
from bigkern.solvers.newton.in_memory_newton import InMemoryNewtonPasses
from bigkern.solvers.newton.smooth_svm import SmoothEpsilonInsensitive, newton_armijo


def _wave(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, (n, 2))
    return X, np.sin(2 * X[:, 0]) + 0.3 * X[:, 1] + 0.1 * rng.standard_normal(n)


def _fit(X, y, **kw):
    params = {"omega": 0.7, "C": 5.0, "epsilon": 0.05, "size": 40, "random_state": 3,
              "tol": 1e-10}
    with dask.config.set(scheduler="sync"):
        return ReducedSVR(**{**params, **kw}).fit(X, y)


def test_exact_against_a_direct_newton_solve_with_all_samples_as_centers():
    X, y = _wave(500, seed=1)
    model = _fit(da.from_array(X, chunks=(170, -1)), y, size=len(X), standardize=False,
                 tol=1e-12)
    centers = model.expansion_.centers
    A = np.hstack([gaussian_kernel(X, centers, 0.7), -np.ones((len(X), 1))])
    ref = newton_armijo(InMemoryNewtonPasses(A, y, SmoothEpsilonInsensitive(5.0, 0.05),
                                             block_rows=len(A)),
                        A.shape[1], C=5.0, tol=1e-12)
    Xt, _ = _wave(300, seed=2)
    want = gaussian_kernel(Xt, centers, 0.7) @ ref.u[:-1] - ref.u[-1]
    np.testing.assert_allclose(model.predict(Xt), want, rtol=1e-6,
                               atol=1e-6 * np.abs(want).max())
    assert model.fit_report_["converged"] and model.n_basis_ == len(X)


@pytest.mark.determinism
@pytest.mark.parametrize("chunks", [7, 64, 333])
def test_same_fit_for_any_chunking(chunks):
    X, y = _wave(600, seed=4)
    ref = _fit(X, y)
    got = _fit(da.from_array(X, chunks=(chunks, 2)), da.from_array(y, chunks=chunks))
    # numpy input: the whole Newton in memory; dask input: one pass per iteration
    assert ref.fit_report_["solver"] == "newton-armijo, in memory"
    assert got.fit_report_["solver"] == "newton-armijo, one pass per step"
    np.testing.assert_array_equal(ref.reduced_index_, got.reduced_index_)
    np.testing.assert_allclose(got.expansion_.coef, ref.expansion_.coef, rtol=1e-9,
                               atol=1e-12 * np.abs(ref.expansion_.coef).max())


def test_float32_hessian_reaches_the_same_solution():
    X, y = _wave(600, seed=4)
    ref = _fit(X, y)
    fast = _fit(da.from_array(X, chunks=(97, 2)), y, hessian="float32")
    np.testing.assert_allclose(fast.predict(X), ref.predict(X), rtol=1e-6, atol=1e-7)
    assert fast.fit_report_["converged"]


def test_non_finite_rows_are_left_out_and_counted():
    X, y = _wave(400, seed=7)
    Xbad, ybad = X.copy(), y.copy()
    Xbad[:10, 1] = np.nan
    ybad[10:15] = np.nan
    with pytest.raises(ValueError, match="y contains NaN"):  # scikit-learn's check (numpy y)
        _fit(Xbad, ybad)
    got = _fit(Xbad, da.from_array(ybad, chunks=150))  # lazy y: counted where it is read
    rep = got.fit_report_
    assert rep["n_nonfinite"] == 10 and rep["n_nonfinite_y"] == 5 and rep["n_valid"] == 385
    assert rep["n_nonfinite_by_feature"] == {"f0": 0, "f1": 10}
    assert np.isnan(got.predict(Xbad[:3])).all()


_WIDTH = r"must be a float in the range \[1e-100, 1e\+100\]"
_POSITIVE = r"must be a float in the range \(0\.0, inf\)"


@pytest.mark.parametrize("kwargs, match", [
    ({"size": 401}, "more than the 400 rows"),
    ({"size": 1}, r"'size' parameter of ReducedSVR must be an int in the range \[2, inf\)"),
    ({"omega": 0.0}, rf"'omega' parameter of ReducedSVR {_WIDTH}"),
    ({"omega": -1.0}, rf"'omega' parameter of ReducedSVR {_WIDTH}"),
    ({"C": 0.0}, rf"'C' parameter of ReducedSVR {_POSITIVE}"),
    ({"epsilon": -0.1}, r"'epsilon' parameter of ReducedSVR must be a float in the range "
                        r"\[0\.0, inf\)"),
    ({"smoothing": 0.0}, rf"'smoothing' parameter of ReducedSVR {_POSITIVE}"),
    ({"tol": 0.0}, rf"'tol' parameter of ReducedSVR {_POSITIVE}"),
    ({"max_iter": 0}, r"'max_iter' parameter of ReducedSVR must be an int in the range \[1, inf\)"),
    ({"hessian": "float16"}, r"'hessian' parameter of ReducedSVR must be a str among"),
])
def test_bad_input_is_a_clear_error(kwargs, match):
    X, y = _wave(400)
    with pytest.raises(ValueError, match=match):
        _fit(X, y, **kwargs)


@pytest.mark.determinism
def test_persistence_round_trip_is_bit_identical(tmp_path):
    from bigkern.models.persistence.expansion_files import expansion_from_dataset

    X, y = _wave(300, seed=5)
    frame = pd.DataFrame(X, columns=["a", "b"])
    model = _fit(frame, y)
    # what load_model does for ReducedSVR (the registry's family "expansion")
    back = expansion_from_dataset(model.to_dataset(), ReducedSVR)
    assert type(back) is ReducedSVR and back.get_params() == model.get_params()
    np.testing.assert_array_equal(back.predict(frame), model.predict(frame))
    lazy = back.predict(da.from_array(X, chunks=(100, 2)))
    assert isinstance(lazy, da.Array)
    np.testing.assert_array_equal(lazy.compute(), model.predict(X))
