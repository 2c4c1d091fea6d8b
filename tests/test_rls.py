"""Gaussian RLS: the eigensystem path and exact LOO (against brute-force refits),
GaussianRLS, its precision check, and the Lippert–Rifkin large-σ polynomial limit."""

from __future__ import annotations

import numpy as np
import pytest

from bigkern.solvers.rls import RidgeEigensystem


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
