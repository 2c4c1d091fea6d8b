"""Gaussian RLS: the eigensystem path and exact LOO (against brute-force refits),
GaussianRLS, its precision check, and the Lippert–Rifkin large-σ polynomial limit."""

from __future__ import annotations

import itertools
import warnings
from math import factorial, lgamma, log

import numpy as np
import pytest
import sklearn.base
from sklearn.kernel_ridge import KernelRidge

from bigkern.errors import BigkernWarning, DataQualityError, IllConditionedWarning
from bigkern.models.regression.rls import GaussianRLS
from bigkern.solvers.rls import (
    DoublePrecisionWarning,
    ExtendedPrecisionWarning,
    RidgeEigensystem,
    condition_estimate,
)
from bigkern.solvers.rls_extended import extended_backend, extended_solve


def _gauss(X: np.ndarray, Z: np.ndarray, sigma: float) -> np.ndarray:
    d2 = ((X[:, None, :] - Z[None, :, :]) ** 2).sum(-1)
    return np.exp(-d2 / (2.0 * sigma**2))


@pytest.fixture
def small_problem():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(25, 2))
    y = np.sin(3 * X[:, 0]) + X[:, 1] ** 2 + 0.1 * rng.standard_normal(25)
    return _gauss(X, X, 0.7), y


RIDGES = [1e-4, 1e-2, 0.3, 5.0]


def test_coef_path_matches_direct_solves(small_problem):
    K, y = small_problem
    es = RidgeEigensystem.from_kernel(K)
    assert np.all(np.diff(es.values) >= 0) and np.all(es.values >= 0)
    C = es.coef_path(y, RIDGES)
    assert C.shape == (len(RIDGES), len(y))
    for r, c in zip(RIDGES, C, strict=True):
        ref = np.linalg.solve(K + r * np.eye(len(y)), y)
        np.testing.assert_allclose(c, ref, rtol=1e-8, atol=1e-10 * np.abs(ref).max())
    np.testing.assert_allclose(es.coef(y, 0.3), C[2])


def test_loo_matches_brute_force_refits(small_problem):
    K, y = small_problem
    n = len(y)
    es = RidgeEigensystem.from_kernel(K)
    res = es.loo_residuals(y, RIDGES)
    brute = np.empty((len(RIDGES), n))
    for a, r in enumerate(RIDGES):
        for i in range(n):
            keep = np.arange(n) != i
            c = np.linalg.solve(K[np.ix_(keep, keep)] + r * np.eye(n - 1), y[keep])
            brute[a, i] = y[i] - K[i, keep] @ c
    np.testing.assert_allclose(res, brute, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(es.loo_mse(y, RIDGES), np.mean(brute**2, axis=1), rtol=1e-6)


def test_multi_output_matches_columns(small_problem):
    K, y = small_problem
    Y = np.column_stack([y, y**2, -y])
    es = RidgeEigensystem.from_kernel(K)
    C = es.coef_path(Y, RIDGES)
    R = es.loo_residuals(Y, RIDGES)
    assert C.shape == R.shape == (len(RIDGES), len(y), 3)
    for j in range(3):
        np.testing.assert_allclose(C[:, :, j], es.coef_path(Y[:, j], RIDGES))
        np.testing.assert_allclose(R[:, :, j], es.loo_residuals(Y[:, j], RIDGES))
    per_col = [es.loo_mse(Y[:, j], RIDGES) for j in range(3)]
    np.testing.assert_allclose(es.loo_mse(Y, RIDGES), np.mean(per_col, axis=0))


def test_eigensystem_bad_input(small_problem):
    K, y = small_problem
    es = RidgeEigensystem.from_kernel(K)
    with pytest.raises(ValueError, match=r"ridges\[1\]"):
        es.coef_path(y, [1.0, 0.0])
    with pytest.raises(ValueError, match="ridges"):
        es.loo_mse(y, [np.nan])
    with pytest.raises(ValueError, match="shape"):
        es.coef(y[:-1], 1.0)
    with pytest.raises(ValueError, match="square"):
        RidgeEigensystem.from_kernel(K[:, :-1])
    Kbad = K.copy()
    Kbad[3, 2] = np.nan
    with pytest.raises(ValueError, match="row 3, column 2"):
        RidgeEigensystem.from_kernel(Kbad)


# ---------------------------------------------------------------------------
# Precision machinery against double-precision references where double is fine
# ---------------------------------------------------------------------------


def test_condition_estimate_matches_numpy_when_resolved(small_problem):
    K, _ = small_problem
    es = RidgeEigensystem.from_kernel(K)
    est = condition_estimate(es.values, RIDGES)
    ref = [np.linalg.cond(K + r * np.eye(len(K))) for r in RIDGES]
    np.testing.assert_allclose(est, ref, rtol=1e-6)


@pytest.mark.parametrize("backend", ["flint", "mpmath"])
def test_extended_solve_matches_double_when_well_conditioned(backend):
    if backend == "flint":
        pytest.importorskip("flint")
    rng = np.random.default_rng(1)
    X = rng.uniform(0, 1, size=(12, 2))
    y = rng.standard_normal(12)
    Z = rng.uniform(0, 1, size=(5, 2))
    K = _gauss(X, X, 0.5)
    r = 0.05
    c = np.linalg.solve(K + r * np.eye(12), y)
    coef, _ = extended_solve(X, y, 0.5, [r], want="coef", backend=backend)
    np.testing.assert_allclose(coef, c, rtol=1e-9)
    pred, _ = extended_solve(X, y, 0.5, [r], want="predict", Z=Z, backend=backend)
    np.testing.assert_allclose(pred, _gauss(Z, X, 0.5) @ c, rtol=1e-9)
    loo, _ = extended_solve(X, y, 0.5, [r, 1.0], want="loo", backend=backend)
    es = RidgeEigensystem.from_kernel(K)
    np.testing.assert_allclose(loo, es.loo_mse(y, [r, 1.0]), rtol=1e-9)


def test_gaussian_rls_matches_sklearn_kernel_ridge_and_brute_loo():
    rng = np.random.default_rng(2)
    X = rng.uniform(-1, 1, size=(20, 2))
    y = np.cos(2 * X[:, 0]) * X[:, 1] + 0.05 * rng.standard_normal(20)
    sigma, lams = 0.8, [1e-4, 1e-3, 1e-2, 1e-1]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # well conditioned: no precision warning
        model = GaussianRLS(omega=sigma, lam=lams).fit(X, y)
    assert model.precision_ == "double"
    gamma = 1 / (2 * sigma**2)
    brute = []
    for lam in lams:
        errs = []
        for i in range(20):
            keep = np.arange(20) != i
            kr = KernelRidge(alpha=lam * 20, kernel="rbf", gamma=gamma).fit(X[keep], y[keep])
            errs.append(y[i] - kr.predict(X[i:i + 1])[0])
        brute.append(np.mean(np.square(errs)))
    np.testing.assert_allclose(model.loo_mse_, brute, rtol=1e-6)
    assert model.lam_ == lams[int(np.argmin(brute))]
    kr = KernelRidge(alpha=model.lam_ * 20, kernel="rbf", gamma=gamma).fit(X, y)
    np.testing.assert_allclose(model.coef_, kr.dual_coef_, rtol=1e-6)
    Z = rng.uniform(-1, 1, size=(7, 2))
    np.testing.assert_allclose(model.predict(Z), kr.predict(Z), rtol=1e-8, atol=1e-12)
    clone = sklearn.base.clone(model)
    assert clone.get_params() == model.get_params()


# ---------------------------------------------------------------------------
# Lippert & Rifkin: the large-σ polynomial limit
# ---------------------------------------------------------------------------


def _fig3_data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The paper's section-6 sample: x ~ U[0, 1], y = f(x) + N(0, .05²)."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 1, n)
    f = 0.5 * (1 - x) + 150 * x * (x - 0.25) * (x - 0.3) * (x - 0.75) * (x - 0.95)
    return x, f + 0.05 * rng.standard_normal(n)


GRID = np.linspace(0, 1, 41)

_HAVE_FLINT = extended_backend() == "flint"

#: The extended solves at n = 60-150 take ~0.1 s with python-flint, ~10-20 s with mpmath.
needs_flint = pytest.mark.skipif(
    not _HAVE_FLINT, reason="python-flint is not installed (mpmath alone is too slow here)"
)


def _feature_ridge(x, y, z, s, ridge):
    """Independent reference in double: RLS as ridge regression on the Taylor features.

    exp(−(x−x')²/2s²) = Σ_c ψ_c(x) ψ_c(x') with ψ_c(x) = e^{−x²/2s²} x^c / (s^c √c!), so
    RLS is ridge on the monomial coefficients a_c with penalty ridge·c!·s^{2c}. Terms are
    kept until the dropped kernel mass n·s^{−2(D+1)}/(D+1)! (x ∈ [0, 1]) is below
    1e-16·ridge; the column-equilibrated least squares is well posed in double.
    """
    D = next(d for d in range(300)
             if log(len(x)) - 2 * (d + 1) * log(s) - lgamma(d + 2) < log(1e-16 * ridge))
    powers = np.arange(D + 1)
    M = np.exp(-(x**2) / (2 * s * s))[:, None] * x[:, None] ** powers
    pen = np.sqrt(ridge) * np.array([s**c * np.sqrt(float(factorial(c))) for c in powers])
    A = np.vstack([M, np.diag(pen)])
    scale = np.linalg.norm(A, axis=0)
    a = np.linalg.lstsq(A / scale, np.concatenate([y, np.zeros(D + 1)]), rcond=None)[0]
    a /= scale
    return (np.exp(-(z**2) / (2 * s * s))[:, None] * z[:, None] ** powers) @ a


def _fit_predict(x, y, s, lam, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BigkernWarning)
        model = GaussianRLS(omega=s, lam=lam, **kw).fit(x[:, None], y)
        return model, model.predict(GRID[:, None])


@needs_flint
@pytest.mark.parametrize(("k", "s"), [(0, 1e7), (1, 1e4), (2, 1e3), (4, 1e2), (4, 1e4)])
def test_extended_matches_taylor_feature_ridge_where_double_fails(k, s):
    x, y = _fig3_data(60)
    lam = s ** -(2 * k + 1)
    model, pred = _fit_predict(x, y, s, lam, precision="extended")
    if k:  # double cannot resolve these (k=0 stays resolvable for any usable s)
        assert model.condition_ * np.finfo(float).eps > 1e-6
    ref = _feature_ridge(x, y, GRID, s, lam * len(x))
    np.testing.assert_allclose(pred, ref, atol=1e-10)


@pytest.mark.parametrize("backend", ["flint", "mpmath"])
def test_both_backends_resolve_the_large_sigma_regime(backend):
    if backend == "flint" and not _HAVE_FLINT:
        pytest.skip("python-flint is not installed")
    x, y = _fig3_data(15)
    s, ridge = 1e3, 15 * 1e3**-5  # k = 2: condition ~1e15, beyond double
    pred, dps = extended_solve(x[:, None], y, s, [ridge], Z=GRID[::4, None], backend=backend)
    np.testing.assert_allclose(pred, _feature_ridge(x, y, GRID[::4], s, ridge), atol=1e-10)
    assert dps > 16


@needs_flint
def test_fixed_dps_too_small_is_reported():
    x, y = _fig3_data(30)
    kw = {"omega": 1e4, "lam": 1e-20, "precision": "extended"}  # condition ~1e20
    with pytest.raises(ValueError, match="raise dps"):
        GaussianRLS(dps=20, **kw).fit(x[:, None], y)
    with pytest.warns(ExtendedPrecisionWarning, match="30 digits do not resolve"):
        rough = GaussianRLS(dps=30, **kw).fit(x[:, None], y)
    fine = GaussianRLS(dps=60, **kw).fit(x[:, None], y)
    auto = GaussianRLS(**kw).fit(x[:, None], y)
    np.testing.assert_allclose(fine.predict(GRID[:, None]), auto.predict(GRID[:, None]),
                               atol=1e-12)
    assert rough.dps_ == 30 and fine.dps_ == 60


@needs_flint
@pytest.mark.parametrize(("k", "scales"), [
    (0, [1e1, 1e2, 1e3]),
    (1, [1e2, 1e3, 1e4]),
    (2, [1e4, 1e5, 1e6]),
    (4, [1e8, 1e9, 1e10]),
])
def test_prediction_tends_to_polyfit_as_s_grows_n150(k, scales):
    """σ = s, λ = s^−(2k+1) (odd power): the limit is plain least squares of degree k."""
    x, y = _fig3_data(150)
    limit = np.polyval(np.polyfit(x, y, k), GRID)
    gaps = [np.abs(_fit_predict(x, y, s, s ** -(2 * k + 1))[1] - limit).max() for s in scales]
    # the gap closes like 1/s: each tenfold s divides it by ~10
    assert gaps[-1] < 1e-3
    for a, b in itertools.pairwise(gaps):
        assert 5 < a / b < 20, gaps


@needs_flint
@pytest.mark.parametrize("k", [1, 2, 4])
def test_even_power_limit_is_the_regularized_polynomial(k):
    """λ = s^−2k sits on the degree-k scale: the limit keeps a penalty n·k!·a_k² on the
    leading coefficient a_k (Taylor features above), so it is *not* polyfit."""
    x, y = _fig3_data(60)
    n = len(x)
    M = x[:, None] ** np.arange(k + 1)
    pen = np.zeros((k + 1, k + 1))
    pen[k, k] = np.sqrt(n * factorial(k))
    a = np.linalg.lstsq(np.vstack([M, pen]), np.concatenate([y, np.zeros(k + 1)]),
                        rcond=None)[0]
    reg_limit = (GRID[:, None] ** np.arange(k + 1)) @ a
    plain = np.polyval(np.polyfit(x, y, k), GRID)
    gaps = [np.abs(_fit_predict(x, y, s, s ** (-2.0 * k))[1] - reg_limit).max()
            for s in (1e4, 1e6)]
    assert gaps[1] < gaps[0] / 50 and gaps[1] < 1e-5, gaps
    assert np.abs(reg_limit - plain).max() > 0.1


@needs_flint
def test_double_precision_warns_instead_of_silent_garbage():
    x, y = _fig3_data(150)
    k, s = 2, 1e4
    lam = s ** -(2 * k + 1)
    limit = np.polyval(np.polyfit(x, y, k), GRID)
    with pytest.warns(DoublePrecisionWarning, match="cannot resolve"):
        model = GaussianRLS(omega=s, lam=lam, precision="double").fit(x[:, None], y)
    assert issubclass(DoublePrecisionWarning, IllConditionedWarning)
    assert model.precision_ == "double" and model.condition_ > 1e15
    garbage = np.abs(model.predict(GRID[:, None]) - limit).max()
    with pytest.warns(ExtendedPrecisionWarning, match="extended precision"):
        auto = GaussianRLS(omega=s, lam=lam).fit(x[:, None], y)
    assert auto.precision_ == "extended" and auto.dps_ > 16
    good = np.abs(auto.predict(GRID[:, None]) - limit).max()
    assert garbage > 1.0 and good < 1e-2, (garbage, good)


# ---------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(("params", "match"), [
    ({"omega": 0.0}, "omega"),
    ({"omega": -1.0}, "omega"),
    ({"omega": np.inf}, "omega"),
    ({"lam": 0.0}, "lam"),
    ({"lam": -1e-3}, "lam"),
    ({"lam": [1e-3, 0.0]}, r"lam\[1\]"),
    ({"lam": []}, "lam"),
    ({"precision": "quad"}, "precision"),
    ({"dps": 0}, "dps"),
])
def test_bad_parameters(params, match):
    x, y = _fig3_data(10)
    with pytest.raises(ValueError, match=match):
        GaussianRLS(**params).fit(x[:, None], y)


def test_bad_data():
    x, y = _fig3_data(10)
    X = x[:, None]
    with pytest.raises(ValueError, match="at least 2 samples"):
        GaussianRLS().fit(X[:1], y[:1])
    with pytest.raises(ValueError, match="Expected 2D array"):
        GaussianRLS().fit(x, y)
    with pytest.raises(ValueError, match="9 values"):
        GaussianRLS().fit(X, y[:-1])
    Xn = np.column_stack([X, X])
    Xn[4, 1] = np.nan
    with pytest.raises(DataQualityError, match="row 4, column 1"):
        GaussianRLS().fit(Xn, y)
    yn = y.copy()
    yn[7] = np.inf
    with pytest.raises(DataQualityError, match=r"y .*row 7"):
        GaussianRLS().fit(X, yn)
    model = GaussianRLS(omega=0.3).fit(X, y)
    with pytest.raises(DataQualityError, match="row 0, column 0"):
        model.predict([[np.nan]])
    with pytest.raises(ValueError, match="2 features"):
        model.predict(np.zeros((3, 2)))


def test_constant_y_is_fitted_with_a_clear_warning():
    """RLS has no intercept to break and the paper's k=0 limit *is* a constant, so a
    constant y is fitted (the constant, shrunk) but flagged: LOO then only measures
    the shrinkage, which is rarely what the caller wanted."""
    x, _ = _fig3_data(20)
    with pytest.warns(BigkernWarning, match="y is constant"):
        model = GaussianRLS(omega=1.0, lam=[1e-6, 1e-3]).fit(x[:, None], np.full(20, 2.5))
    np.testing.assert_allclose(model.predict(x[:5, None]), 2.5, atol=1e-3)
