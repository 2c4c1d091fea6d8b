"""Gaussian kernel and block-wise kernel expansions against scikit-learn's rbf_kernel."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics.pairwise import rbf_kernel

from bigkern.kernels import gaussian_kernel, kernel_expansion, omega_to_gamma


def _problem(n=500, m=40, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * [1.0, 3.0, 0.2][:d] + 1.0
    basis = rng.standard_normal((m, d))
    coef = rng.standard_normal(m)
    return X, basis, coef


def test_gaussian_kernel_matches_sklearn_rbf():
    X, basis, _ = _problem()
    ref = rbf_kernel(X, basis, gamma=omega_to_gamma(0.7))
    np.testing.assert_allclose(gaussian_kernel(X, basis, 0.7), ref, rtol=1e-12, atol=1e-12)
    got32 = gaussian_kernel(X.astype(np.float32), basis, 0.7)
    assert got32.dtype == np.float32
    np.testing.assert_allclose(got32, ref, atol=2e-5)


@pytest.mark.parametrize("block_rows", [1, 7, 128, 10_000])
def test_expansion_matches_dense_reference_for_any_block_size(block_rows):
    X, basis, coef = _problem()
    offset, scale = np.array([1.0, 0.5, -0.2]), np.array([2.0, 3.0, 0.5])
    Z = (X - offset) / scale
    ref = rbf_kernel(Z, basis, gamma=omega_to_gamma(1.3)) @ coef + 0.25
    got = kernel_expansion(X, basis, coef, 1.3, 0.25, offset=offset, scale=scale,
                           block_rows=block_rows)
    np.testing.assert_allclose(got, ref, atol=1e-4 * np.abs(coef).sum())
    exact = kernel_expansion(X, basis, coef, 1.3, 0.25, offset=offset, scale=scale,
                             dtype=np.float64, block_rows=block_rows)
    np.testing.assert_allclose(exact, ref, rtol=1e-10, atol=1e-10)


def test_rows_with_a_nonfinite_feature_give_nan_and_others_are_unchanged():
    X, basis, coef = _problem(n=300)
    bad = X.copy()
    bad[::7, 1] = np.nan
    bad[3, 0] = np.inf
    ok = np.isfinite(bad).all(axis=1)
    full = kernel_expansion(X, basis, coef, 0.9, block_rows=16, dtype=np.float64)
    got = kernel_expansion(bad, basis, coef, 0.9, block_rows=16, dtype=np.float64)
    assert np.isnan(got[~ok]).all()
    np.testing.assert_allclose(got[ok], full[ok], rtol=1e-12, atol=1e-12)
    assert np.isnan(kernel_expansion(np.full((5, 3), np.nan), basis, coef, 0.9)).all()


def test_far_points_give_the_intercept_and_no_overflow():
    _, basis, coef = _problem()
    far = np.full((4, 3), 1e4)
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        got = kernel_expansion(far, basis, coef, 0.5, -0.5)
    np.testing.assert_allclose(got, -0.5, rtol=0, atol=1e-30)


def test_empty_input_and_bad_width():
    _, basis, coef = _problem()
    assert kernel_expansion(np.empty((0, 3)), basis, coef, 1.0).shape == (0,)
    with pytest.raises(ValueError, match="omega must be positive"):
        kernel_expansion(np.ones((2, 3)), basis, coef, 0.0)
