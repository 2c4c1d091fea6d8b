"""The squared-hinge reduced SVM by the finite Newton method.

What passing proves: the exact line search finds the minimizer along a line
(against a dense scan); the finite Newton solution is the minimizer of the
squared-hinge objective (its active set is self-consistent and it solves the
linear system of that set; L-BFGS on the same objective gets no lower); Hessian
updates by the changed rows end where rebuilds end; ``ReducedSVC(loss=
"squared_hinge")`` fits the same model in memory and through the distributed
passes, for any chunking, with masks and non-finite rows counted; the squared
hinge takes no smoothing; non-convergence warns with the iterations and residual.
"""

from __future__ import annotations

import warnings

import dask.array as da
import numpy as np
import pytest
import scipy.optimize
from sklearn.exceptions import ConvergenceWarning

from bigkern import config
from bigkern.kernels import gaussian_kernel
from bigkern.kernels.row_sums import RowSums, accumulate_block
from bigkern.models.reduced_kernel.reduced import ReducedSVC
from bigkern.solvers.newton.finite_newton import exact_line_search, finite_newton, subset_warm_start
from bigkern.solvers.newton.smooth_losses import SmoothHinge, SquaredHinge


def _rings(n: int, seed: int = 0, noise: float = 0.4) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    return X, np.where((X**2).sum(axis=1) < 2.5 + noise * rng.normal(size=n), 1, -1)


def _kernel_rows(n: int, m: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    X, y = _rings(n, seed)
    centers = X[np.random.default_rng(seed + 1).choice(n, m, replace=False)]
    return np.column_stack([gaussian_kernel(X, centers, 1.0), -np.ones(n)]), y.astype(float)


def _objective(A: np.ndarray, y: np.ndarray, C: float):
    def F(u):
        r = np.maximum(1.0 - y * (A @ u), 0.0)
        return 0.5 * C * r @ r + 0.5 * u @ u

    def grad(u):
        return u - C * ((y * np.maximum(1.0 - y * (A @ u), 0.0)) @ A)

    return F, grad


def test_squared_hinge_is_the_limit_of_the_smooth_hinge():
    f, y = np.linspace(-3, 3, 61), np.where(np.arange(61) % 2, 1.0, -1.0)
    exact, smooth = SquaredHinge(), SmoothHinge(alpha=1e4)
    assert np.allclose(exact.value(f, y), smooth.value(f, y), atol=1e-4)
    d1, d2 = exact.derivatives(f, y)
    assert np.allclose(d1, smooth.derivatives(f, y)[0], atol=1e-4)
    assert set(np.unique(d2)) <= {0.0, 1.0}
    assert np.array_equal(d2 == 1.0, y * f < 1.0)


def test_a_block_adds_the_same_sums_with_its_rows_outside_the_margin_skipped():
    A, y = _kernel_rows(500, 20)
    rng = np.random.default_rng(3)
    u, d, steps = rng.normal(size=21), rng.normal(size=21), np.array([1.0, 0.5, 0.25])
    sums = RowSums.zeros(21, 3)
    accumulate_block(sums, A.copy(), y, u, d, steps, 1.0, SquaredHinge())
    f, t = A @ u, A @ d
    r = 1.0 - y * (f + t)
    inside = r > 0
    assert 0 < inside.sum() < len(y)  # both kinds of rows are in the block
    assert np.allclose(sums.hessian_sum(), A[inside].T @ A[inside], rtol=1e-12, atol=1e-10)
    assert np.allclose(sums.grad, -(y * np.maximum(r, 0.0)) @ A, rtol=1e-12)
    want = [0.5 * np.sum(np.maximum(1.0 - y * (f + s * t), 0.0) ** 2) for s in steps]
    assert np.allclose(sums.loss, want, rtol=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_exact_line_search_finds_the_minimizer_along_the_line(seed):
    rng = np.random.default_rng(seed)
    n = 300
    r, w = rng.normal(size=n), rng.normal(size=n)  # rows entering and leaving the margin
    ud, dd, C = -abs(rng.normal()) * 5, abs(rng.normal()) + 0.1, 10.0 ** rng.uniform(-1, 2)

    def phi(lam):
        return 0.5 * C * np.sum(np.maximum(r - lam * w, 0.0) ** 2) + lam * ud + 0.5 * lam**2 * dd

    lam = exact_line_search(r, w, ud, dd, C)
    scan = scipy.optimize.minimize_scalar(phi, bounds=(0.0, 10 * lam + 10), method="bounded",
                                          options={"xatol": 1e-12})
    assert lam >= 0 and phi(lam) <= phi(scan.x) + 1e-9 * abs(phi(scan.x))
    assert abs(lam - scan.x) <= 1e-5 * max(1.0, lam)


@pytest.mark.parametrize("C", [0.1, 10.0, 1e4])
def test_finite_newton_is_the_minimizer_of_the_squared_hinge_objective(C):
    A, y = _kernel_rows(1500, 60)
    res = finite_newton(A, y, C=C, tol=1e-12)
    assert res.converged, res.message
    u = res.u
    # optimality without a solver: the active set of u gives a linear system u solves
    active = 1.0 - y * (A @ u) > 0
    H = np.eye(A.shape[1]) + C * A[active].T @ A[active]
    direct = np.linalg.solve(H, C * A[active].T @ y[active])
    assert np.allclose(u, direct, rtol=1e-8, atol=1e-10 * np.abs(direct).max())
    # and a general minimizer gets no lower
    F, grad = _objective(A, y, C)
    ref = scipy.optimize.minimize(F, np.zeros(A.shape[1]), jac=grad, method="L-BFGS-B",
                                  options={"gtol": 1e-12, "ftol": 1e-16, "maxiter": 50_000,
                                           "maxcor": 50})
    assert F(u) <= ref.fun * (1 + 1e-10)
    assert res.objective == pytest.approx(F(u), rel=1e-12)


def test_updating_the_hessian_ends_where_rebuilding_it_ends():
    A, y = _kernel_rows(2000, 50, seed=4)
    rebuilt = finite_newton(A, y, C=30.0, refactor_every=0)
    updated = finite_newton(A, y, C=30.0, refactor_every=1000)
    start = subset_warm_start(A, y, np.arange(0, 2000, 40), C=30.0)
    warm = finite_newton(A, y, C=30.0, u0=start.u)
    for res in (rebuilt, updated, warm):
        assert res.converged
        assert np.allclose(res.u, rebuilt.u, rtol=1e-9, atol=1e-9 * np.abs(rebuilt.u).max())
    f32 = finite_newton(A, y, C=30.0, hessian_dtype=np.float32)
    assert f32.converged and np.allclose(f32.u, rebuilt.u, atol=1e-6 * np.abs(rebuilt.u).max())


def _fit(X, y, **kw):
    mask = kw.pop("mask", None)
    params = {"omega": 1.0, "C": 10.0, "loss": "squared_hinge", "size": 80, "random_state": 0}
    return ReducedSVC(**{**params, **kw}).fit(X, y, mask=mask)


@pytest.mark.parametrize("chunks", [250, 700, 2000])
def test_the_same_model_in_memory_and_through_the_passes_for_any_chunking(chunks):
    X, y = _rings(2000, seed=5)
    X[[3, 50], 1] = np.nan
    in_memory = _fit(X, y)
    rep = in_memory.fit_report_
    assert rep["solver"] == "finite newton, in memory" and rep["reads"] == 2
    assert rep["converged"] and rep["n_nonfinite"] == 2
    lazy = _fit(da.from_array(X, chunks=(chunks, 3)), da.from_array(y, chunks=chunks))
    assert lazy.fit_report_["solver"].startswith("newton-armijo")
    assert lazy.fit_report_["converged"] and lazy.fit_report_["n_nonfinite"] == 2
    a, b = in_memory.expansion_, lazy.expansion_
    assert np.array_equal(a.centers, b.centers)
    assert np.allclose(a.coef, b.coef, rtol=1e-7, atol=1e-7 * np.abs(a.coef).max())
    assert a.intercept == pytest.approx(b.intercept, rel=1e-7, abs=1e-9)
    assert rep["objective"] == pytest.approx(lazy.fit_report_["objective"], rel=1e-12)
    with config.set(in_memory_kernel_bytes=0):
        forced = _fit(X, y)
    assert forced.fit_report_["solver"].startswith("newton-armijo")
    assert np.allclose(forced.expansion_.coef, a.coef, rtol=1e-7,
                       atol=1e-7 * np.abs(a.coef).max())


def test_a_mask_leaves_rows_out_in_memory_as_in_the_passes():
    X, y = _rings(1500, seed=6)
    keep = np.random.default_rng(0).random(1500) < 0.7
    y = np.where(keep, y, 0)  # unlabelled rows: any value, never read
    in_memory = _fit(X, y, mask=keep)
    lazy = _fit(da.from_array(X, chunks=(400, 3)), da.from_array(y, chunks=400),
                mask=da.from_array(keep, chunks=400))
    assert in_memory.fit_report_["n_masked"] == lazy.fit_report_["n_masked"] == (~keep).sum()
    assert np.allclose(in_memory.expansion_.coef, lazy.expansion_.coef, rtol=1e-7,
                       atol=1e-7 * np.abs(lazy.expansion_.coef).max())
    assert in_memory.score(X[keep], y[keep]) > 0.85


def test_close_to_the_smooth_hinge_in_few_steps():
    X, y = _rings(3000, seed=7)
    exact = _fit(X, y, size=150)
    smooth = _fit(X, y, size=150, loss="smooth_hinge", smoothing=50.0)
    assert abs(exact.score(X, y) - smooth.score(X, y)) < 0.01
    assert exact.fit_report_["iterations"] <= 15


def test_the_squared_hinge_takes_no_smoothing_and_bad_losses_are_refused():
    X, y = _rings(200)
    with pytest.raises(ValueError, match=r"smoothing=5\.0 applies to loss='smooth_hinge' only"):
        _fit(X, y, smoothing=5.0)
    with pytest.raises(ValueError, match=r"'loss' parameter of ReducedSVC must be a str among"):
        _fit(X, y, loss="hinge")


def test_non_convergence_warns_with_the_iterations_and_the_gradient():
    X, y = _rings(1500, seed=8)
    for data in ((X, y), (da.from_array(X, chunks=(500, 3)), da.from_array(y, chunks=500))):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = _fit(*data, C=1e4, max_iter=1)
        message = [str(w.message) for w in caught if w.category is ConvergenceWarning]
        assert message and "did not converge: max_iter reached after 1 iterations" in message[0]
        assert "gradient norm" in message[0] and not model.fit_report_["converged"]
