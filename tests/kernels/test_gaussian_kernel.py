"""Gaussian kernel and block-wise kernel expansions against scikit-learn's rbf_kernel."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics.pairwise import rbf_kernel

from bigkern.kernels import KernelExpansion, gaussian_kernel, kernel_expansion, omega_to_gamma


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


# -- the fused expansion ------------------------------------------------------------------------


def _exact(X: np.ndarray, exp: KernelExpansion) -> np.ndarray:
    """The expansion in float64 with a direct distance (no exponent clipping, no float32);
    the standardized values clipped to ``±exp.basis.clip``."""
    Z = np.clip((X - exp.offset) / exp.scale, -exp.basis.clip, exp.basis.clip)
    d2 = ((Z[:, None, :] - exp.centers[None, :, :]) ** 2).sum(axis=2)
    return np.exp(-omega_to_gamma(exp.omega) * d2) @ exp.coef + exp.intercept


@settings(max_examples=200, deadline=None)
@given(d=st.integers(1, 9), m=st.integers(1, 300), n=st.integers(0, 400),
       omega=st.floats(0.05, 20.0), spread=st.floats(0.1, 30.0), seed=st.integers(0, 2**16),
       clip=st.one_of(st.none(), st.floats(0.5, 6.0)))
def test_fused_path_equals_the_exact_expansion_and_the_blas_path(d, m, n, omega, spread, seed,
                                                                 clip):
    rng = np.random.default_rng(seed)
    exp = KernelExpansion.from_parts(rng.normal(size=(m, d)), rng.normal(size=m),
                                       float(rng.normal()), omega, rng.normal(size=d),
                                       rng.uniform(0.5, 2.0, size=d), clip=clip)
    X = rng.normal(size=(n, d)) * spread  # far rows too: exponents clipped at log(tiny)
    fused = exp.decision(X, path="fused")
    blas = exp.decision(X, path="blas")
    exact = _exact(X, exp)
    np.testing.assert_allclose(
        KernelExpansion(exp.basis, exp.coef, exp.intercept, "float64").decision(X), exact,
        rtol=1e-12, atol=1e-12 * (np.abs(exp.coef).sum() + abs(exp.intercept)))
    # float32 rounding of z and c moves the exponent γ‖z − c‖² by about γ (|z| + |c|)² 2^-24
    # per term: the tolerance is that error (and float32 round-off) on the size of f's terms
    Z = np.clip((X - exp.offset) / exp.scale, -exp.basis.clip, exp.basis.clip)
    reach = (np.abs(Z).max(initial=0) + np.abs(exp.centers).max()) ** 2
    atol = (np.abs(exp.coef).sum() + abs(exp.intercept)) * (
        1e-6 + 4 * 2.0**-24 * omega_to_gamma(omega) * reach)
    np.testing.assert_allclose(fused, exact, rtol=0, atol=atol)
    np.testing.assert_allclose(fused, blas, rtol=0, atol=atol)


def test_fused_path_rows_do_not_depend_on_their_neighbours_and_nan_rows_are_nan():
    rng = np.random.default_rng(5)
    exp = KernelExpansion.from_parts(rng.normal(size=(150, 3)), rng.normal(size=150), 0.3,
                                       0.8)
    X = rng.normal(size=(70_000, 3)).astype(np.float32)  # more than one standardized slab
    X[[3, 69_999], [0, 2]] = [np.nan, np.inf]
    whole = exp.decision(X)
    assert np.isnan(whole[[3, 69_999]]).all() and np.isfinite(np.delete(whole, [3, 69_999])).all()
    parts = np.concatenate([exp.decision(X[a:a + 777]) for a in range(0, len(X), 777)])
    np.testing.assert_array_equal(parts, whole)
    np.testing.assert_array_equal(exp.decision(X[::-1])[::-1], whole)


def test_auto_path_choice_and_errors():
    rng = np.random.default_rng(1)
    wide = KernelExpansion.from_parts(rng.normal(size=(20, 30)), rng.normal(size=20), 0, 1.0)
    X = rng.normal(size=(50, 30))
    # every width and precision evaluates row by row: fused in float32, exact in float64
    np.testing.assert_array_equal(wide.decision(X), wide.decision(X, path="fused"))
    double = KernelExpansion.from_parts(rng.normal(size=(5, 2)), np.ones(5), 0, 1.0,
                                          dtype="float64")
    Z = rng.normal(size=(40, 2))
    np.testing.assert_array_equal(double.decision(Z), double.decision(Z, path="exact"))
    np.testing.assert_allclose(double.decision(Z), double.decision(Z, path="blas"),
                               rtol=1e-13)
    with pytest.raises(ValueError, match="fused path evaluates float32"):
        double.decision(np.zeros((1, 2)), path="fused")
    with pytest.raises(ValueError, match="path must be"):
        double.decision(np.zeros((1, 2)), path="numba")
