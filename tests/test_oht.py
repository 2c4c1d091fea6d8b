"""Orthogonalization + hard thresholding (Hagiwara 2011): solver and estimators.

References are independent: the paper's formulas evaluated literally with numpy
(explicit A = GQ, H, traces), a literal Gram–Schmidt on G with largest-norm
pivoting, and a brute-force leave-one-out ridge.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from bigkern.errors import DataQualityError
from bigkern.solvers.oht import (
    METHODS,
    oht_fit,
    oht_fit_methods,
    oht_from_normal_equations,
    oht_solutions,
)


def _gauss(x: np.ndarray, c: np.ndarray, omega: float) -> np.ndarray:
    d2 = (x[:, None, :] - c[None, :, :]) ** 2
    return np.exp(-d2.sum(-1) / (2 * omega**2))


def _problem(n: int = 60, omega: float = 0.25, seed: int = 0, noise: float = 0.1):
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(-1, 1, n))[:, None]
    f = np.sin(3 * x[:, 0]) + 0.5 * x[:, 0]
    y = f + noise * rng.standard_normal(n) + 2.0
    return x, y, _gauss(x, x, omega)


def _threshold_literal(A, y, n, method):
    """The paper's (6), (21), (22), (7), section 4.5, with explicit matrices."""
    gamma = np.einsum("ij,ij->j", A, A)
    v = (A.T @ y) / gamma
    H = A @ np.diag(1 / gamma) @ A.T
    IH = np.eye(n) - H
    sigma2 = (y @ IH @ IH @ y) / np.trace(IH @ IH)
    theta = sigma2 / gamma * 2 * math.log(n)
    survive = v**2 > theta
    last = np.flatnonzero(survive)[-1] + 1 if survive.any() else 0
    keep = survive.copy()
    if method.endswith("2"):
        keep[:last] = True
    return sigma2, theta, v, keep, last


def _ed_literal(G, y, method, eta=1e-10):
    n = G.shape[0]
    evals, Q = np.linalg.eigh(G.T @ G)
    order = np.argsort(evals)[::-1]
    Q = Q[:, order][:, evals[order] > eta]
    A = G @ Q
    sigma2, theta, v, keep, _ = _threshold_literal(A, y, n, method)
    return Q @ np.where(keep, v, 0.0), sigma2, theta, keep


def _gs_literal(G, y, method, eta=1e-10):
    """Gram–Schmidt on the columns of G, largest remaining norm first (section 4.2)."""
    n, m = G.shape
    R = G.copy()  # residuals of every column against the chosen q's
    qs, piv = [], []
    while len(piv) < m:
        norms = np.einsum("ij,ij->j", R, R)
        norms[piv] = -np.inf
        c = int(np.argmax(norms))
        if norms[c] <= eta:
            break
        q = R[:, c].copy()
        for qq in qs:  # re-orthogonalize once for accuracy
            q -= (qq @ q) / (qq @ qq) * qq
        qs.append(q)
        piv.append(c)
        R -= np.outer(q, (q @ R) / (q @ q))
    A = np.column_stack(qs)
    sigma2, theta, v, keep, last = _threshold_literal(A, y, n, method)
    fit = A @ np.where(keep, v, 0.0)
    w = np.zeros(m)
    if last:
        cols = piv[:last]
        w[cols] = np.linalg.lstsq(G[:, cols], fit, rcond=None)[0]
    return w, sigma2, theta, keep, np.array(piv)


# -- solver ------------------------------------------------------------------------------------
@pytest.mark.parametrize("route", ["pieces", "symmetric"])
@pytest.mark.parametrize("method", ["ED", "ED2"])
def test_ed_matches_literal_formulas(method, route):
    _x, y, G = _problem(n=50, omega=0.3, seed=1)  # ED drops component 0 here, ED2 keeps it
    y = y - y.mean()
    # eta above the round-off of GᵀG's small eigenvalues (~ m·ε·γ_1), so that the two
    # routes to γ_j (eigenvalue vs ‖G q_j‖²) agree to many digits
    if route == "pieces":
        sol = oht_from_normal_equations(G.T @ G, G.T @ y, float(y @ y), 50, method=method,
                                        eta=1e-7)
    else:  # eigendecomposition of the symmetric G itself
        sol = oht_fit(G, y, method=method, center=False, eta=1e-7)
    w, sigma2, theta, keep = _ed_literal(G, y, method, eta=1e-7)
    assert 0 < sol.n_components < sol.n_stable < 40
    np.testing.assert_allclose(sol.sigma2, sigma2, rtol=1e-6)
    np.testing.assert_allclose(sol.thresholds, theta, rtol=1e-6)
    np.testing.assert_array_equal(sol.kept, np.flatnonzero(keep))
    # weights on near-null directions are large; compare the fitted values and weights
    np.testing.assert_allclose(G @ sol.weights, G @ w, atol=1e-6)
    np.testing.assert_allclose(sol.weights, w, rtol=1e-5, atol=1e-6 * np.abs(w).max())


@pytest.mark.parametrize("method", ["GS", "GS2"])
def test_gs_on_G_matches_pivoted_cholesky_of_GtG(method):
    _x, y, G = _problem(n=50, omega=0.3, seed=1)
    y = y - y.mean()
    sol = oht_fit(G, y, method=method, center=False, eta=1e-7)
    w, sigma2, theta, keep, piv = _gs_literal(G, y, method, eta=1e-7)
    np.testing.assert_array_equal(sol.pivots, piv)
    assert piv[0] == np.argmax(np.einsum("ij,ij->j", G, G))
    np.testing.assert_allclose(sol.sigma2, sigma2, rtol=1e-6)
    np.testing.assert_allclose(sol.thresholds, theta, rtol=1e-5)
    np.testing.assert_array_equal(sol.kept, np.flatnonzero(keep))
    np.testing.assert_allclose(G @ sol.weights, G @ w, atol=1e-6)
    assert set(sol.basis_used) == set(piv[: sol.last])
    assert np.count_nonzero(sol.weights) == sol.last  # sparse in the original basis


def test_thresholds_are_exactly_sigma2_2logn_over_gamma():
    _x, y, G = _problem(n=60, omega=0.2, seed=2)
    for method in METHODS:
        sol = oht_fit(G, y, method=method)
        np.testing.assert_array_equal(sol.thresholds,
                                      sol.sigma2 * 2.0 * math.log(60) / sol.gamma)
        v2 = sol.coefficients**2
        survive = np.flatnonzero(v2 > sol.thresholds)
        assert sol.last == survive[-1] + 1
        if method.endswith("2"):  # a prefix: every component up to the last survivor
            np.testing.assert_array_equal(sol.kept, np.arange(sol.last))
        else:
            np.testing.assert_array_equal(sol.kept, survive)


def test_ed2_is_a_prefix_and_a_superset_of_ed():
    _x, y, G = _problem(n=50, omega=0.3, seed=1)
    ed, ed2 = oht_fit(G, y, method="ED"), oht_fit(G, y, method="ED2")
    assert set(ed.kept) < set(ed2.kept)  # strictly: ED removed a component before the last
    np.testing.assert_array_equal(ed2.kept, np.arange(ed2.last))
    assert ed.last == ed2.last and ed.sigma2 == ed2.sigma2


def test_sigma2_from_pieces_equals_residual_variance_of_the_stable_projection():
    _x, y, G = _problem(n=60, omega=0.25, seed=3)
    sol = oht_fit(G, y, method="GS")
    yc = y - y.mean()
    piv = sol.pivots
    Qo, _ = np.linalg.qr(G[:, piv])  # span of the l stable GS components
    res = yc - Qo @ (Qo.T @ yc)
    np.testing.assert_allclose(sol.sigma2, res @ res / (60 - sol.n_stable), rtol=1e-6)


def test_centring_from_pieces_matches_in_memory_centring():
    _x, y, G = _problem(n=60, omega=0.25, seed=4)
    for method in METHODS:
        a = oht_fit(G, y, method=method)
        b = oht_from_normal_equations(G.T @ G, G.T @ y, float(y @ y), 60, method=method,
                                      Gsum=G.sum(0), ysum=float(y.sum()))
        assert b.intercept == pytest.approx(y.mean())
        np.testing.assert_array_equal(a.kept, b.kept)
        np.testing.assert_allclose(G @ a.weights + a.intercept, G @ b.weights + b.intercept,
                                   atol=1e-7)


def test_rectangular_reduced_basis():
    rng = np.random.default_rng(5)
    x = rng.uniform(-1, 1, (300, 2))
    y = np.sin(2 * x[:, 0]) * x[:, 1] + 0.05 * rng.standard_normal(300)
    G = _gauss(x, x[:40], 0.5)
    for method in METHODS:
        sol = oht_fit(G, y, method=method)
        assert sol.weights.shape == (40,)
        r2 = 1 - np.mean((G @ sol.weights + sol.intercept - y) ** 2) / np.var(y)
        assert r2 > 0.9


def test_all_methods_at_once_equal_one_at_a_time():
    _x, y, G = _problem(n=60, omega=0.2, seed=7)
    both = oht_fit_methods(G, y)
    pieces = oht_solutions(G.T @ G, G.T @ y, float(y @ y), 60, Gsum=G.sum(0),
                           ysum=float(y.sum()))
    for method in METHODS:
        one = oht_fit(G, y, method=method)
        np.testing.assert_array_equal(both[method].weights, one.weights)
        np.testing.assert_array_equal(pieces[method].kept, one.kept)
        np.testing.assert_allclose(G @ pieces[method].weights, G @ one.weights, atol=1e-6)


def test_deterministic():
    _x, y, G = _problem(n=60, omega=0.2, seed=6)
    for method in METHODS:
        a, b = oht_fit(G, y, method=method), oht_fit(G.copy(), y.copy(), method=method)
        np.testing.assert_array_equal(a.weights, b.weights)
        np.testing.assert_array_equal(a.kept, b.kept)


# -- bad input ---------------------------------------------------------------------------------
def test_bad_input_errors():
    _x, y, G = _problem(n=30, omega=0.3)
    with pytest.raises(ValueError, match=r"n .*>= 2"):
        oht_from_normal_equations(G[:1].T @ G[:1], G[:1].T @ y[:1], float(y[0] ** 2), 1)
    with pytest.raises(ValueError, match=r"n .*>= 2"):
        oht_fit(G[:1, :3], y[:1])
    with pytest.raises(DataQualityError, match="y is constant"):
        oht_fit(G, np.full(30, 3.5))
    with pytest.raises(DataQualityError, match="y is constant"):
        oht_from_normal_equations(G.T @ G, G.T @ np.full(30, 2.0), 120.0, 30,
                                  Gsum=G.sum(0), ysum=60.0)
    y_nan = y.copy()
    y_nan[7] = np.nan
    with pytest.raises(DataQualityError, match=r"y has a non-finite entry .*\[7\]"):
        oht_fit(G, y_nan)
    G_nan = G.copy()
    G_nan[3, 5] = np.inf
    with pytest.raises(DataQualityError, match=r"G has a non-finite entry .*\[3, 5\]"):
        oht_fit(G_nan, y)
    with pytest.raises(DataQualityError, match="GtG"):
        oht_from_normal_equations(G_nan.T @ G_nan, G.T @ y, float(y @ y), 30)
    for eta in (0.0, -1e-10, float("nan")):
        with pytest.raises(ValueError, match="eta"):
            oht_fit(G, y, eta=eta)
    with pytest.raises(ValueError, match="method"):
        oht_fit(G, y, method="QR")
    with pytest.raises(ValueError, match="Gty must have shape"):
        oht_from_normal_equations(G.T @ G, y[:5], 1.0, 30)
    with pytest.raises(ValueError, match="needs Gsum"):
        oht_from_normal_equations(G.T @ G, G.T @ y, float(y @ y), 30, ysum=1.0)
    with pytest.raises(ValueError, match="n - l > 0"):  # an interpolating basis
        oht_fit(np.eye(30), y)
