"""Compactly supported kernels: sparse Gram equal to the dense Φ_C ∘ K, exact A(C) and S(C)."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import cdist

from bigkern.errors import BigkernWarning, DataQualityError
from bigkern.kernels import CompactSupport, Gaussian
from bigkern.models.criteria import choose_support_radius, distance_quantile
from bigkern.reduce import alignment_sparsity, gram_report, sparse_gram


def _green_red(n, seed=0):
    """Zhang, Genton & Liu's green-red mixture: 10 centers per class, N(m_k, I/5) draws."""
    rng = np.random.default_rng(seed)
    centers = np.concatenate([rng.normal([1, 0], 1, (10, 2)), rng.normal([0, 1], 1, (10, 2))])
    label = rng.integers(0, 2, n)
    pick = rng.integers(0, 10, n) + 10 * label
    return centers[pick] + rng.normal(0, np.sqrt(0.2), (n, 2)), np.where(label == 1, 1, -1)


def _dense(X, Z, omega, C, nu):
    r = cdist(X, Z)
    return np.maximum(1 - r / C, 0) ** nu * np.exp(-(r**2) / (2 * omega**2))


@pytest.mark.parametrize("C", [0.3, 1.0, 2.5])
def test_sparse_gram_equals_the_dense_hadamard_product(C):
    X, _ = _green_red(3000)
    K = sparse_gram(X, CompactSupport(Gaussian(0.6), C))
    ref = _dense(X, X, 0.6, C, nu=2)
    rows, cols = K.nonzero()
    np.testing.assert_allclose(K.data, ref[rows, cols], rtol=1e-14, atol=0)
    assert K.nnz == np.count_nonzero(ref)  # no missing nonzero, no stored zero
    assert (K != K.T).nnz == 0
    report = gram_report(K)
    assert report.sparsity == pytest.approx(1 - K.nnz / 3000**2)
    assert report.sparse_bytes == 12 * K.nnz + 4 * 3001  # float64 data, int32 indices
    assert (report.sparse_bytes < report.dense_bytes) == (report.sparsity > 1 / 3)
    assert "nonzeros" in str(report)


@pytest.mark.determinism
@settings(max_examples=10, deadline=None)
@given(x_chunk=st.integers(37, 900), z_chunk=st.integers(20, 400))
def test_sparse_gram_is_identical_for_any_chunking(x_chunk, z_chunk):
    X, _ = _green_red(900, seed=1)
    Z, _ = _green_red(400, seed=2)
    kernel = CompactSupport(Gaussian(0.8), 0.9, taper_power=3)
    for columns in (None, Z):
        ref = sparse_gram(X, kernel, columns)
        got = sparse_gram(da.from_array(X, chunks=(x_chunk, 2)), kernel,
                          None if columns is None else da.from_array(columns,
                                                                     chunks=(z_chunk, 2)))
        assert got.shape == ref.shape
        np.testing.assert_array_equal(got.indptr, ref.indptr)
        np.testing.assert_array_equal(got.indices, ref.indices)
        np.testing.assert_array_equal(got.data, ref.data)


def test_sparse_gram_on_a_cluster(client):
    X, _ = _green_red(2000, seed=3)
    kernel = CompactSupport(Gaussian(0.6), 0.7)
    from collections import Counter

    from distributed import get_task_stream

    Xd = da.from_array(X, chunks=(300, 2), name="gram-source")
    with get_task_stream(client) as ts:
        got = sparse_gram(Xd, kernel)
    ref = sparse_gram(X, kernel)
    assert (got != ref).nnz == 0
    # one read of each chunk (fused into another task or not): the bounding boxes and
    # the chunk pairs share it
    names = Counter(t["key"][0] if isinstance(t["key"], tuple) else t["key"] for t in ts.data)
    reads = sum(c for k, c in names.items() if k.startswith("gram-source"))
    assert reads == Xd.npartitions, names


def test_alignment_and_sparsity_equal_their_dense_formulas():
    X, _ = _green_red(1200, seed=4)
    Cs = [0.2, 0.5, 1.0, 2.0, 4.0, 50.0]
    curves = alignment_sparsity(X, Gaussian(0.6), Cs, block_rows=100)
    K = np.exp(-cdist(X, X) ** 2 / (2 * 0.36))
    for c, C in enumerate(Cs):
        phi = np.maximum(1 - cdist(X, X) / C, 0) ** 2
        a = (phi * K**2).sum() / np.sqrt((K**2).sum() * (phi**2 * K**2).sum())
        s = np.count_nonzero(phi == 0) / X.shape[0] ** 2
        assert curves["alignment"].values[c] == pytest.approx(a, rel=1e-12, abs=1e-12)
        assert curves["sparsity"].values[c] == s
    assert np.all(np.diff(curves["alignment"].values) > 0)  # Theorem 1 (iii)
    assert np.all(np.diff(curves["sparsity"].values) <= 0)  # Theorem 2 (iii)
    assert curves["alignment"].values[-1] > 0.999 and curves["sparsity"].values[-1] == 0
    # the sparse Gram at the same C has exactly the counted nonzeros
    K1 = sparse_gram(X, CompactSupport(Gaussian(0.6), 1.0))
    assert K1.nnz == int(curves["nonzeros"].sel(radius=1.0))


def test_alignment_on_dask_equals_in_memory(client):
    X, _ = _green_red(800, seed=5)
    Cs = [0.3, 0.8, 1.5]
    ref = alignment_sparsity(X, Gaussian(0.7), Cs)
    got = alignment_sparsity(da.from_array(X, chunks=(150, 2)), Gaussian(0.7), Cs)
    np.testing.assert_allclose(got["alignment"].values, ref["alignment"].values, rtol=1e-12)
    np.testing.assert_array_equal(got["sparsity"].values, ref["sparsity"].values)


def test_three_rules_for_the_support_radius():
    X, _ = _green_red(600, seed=6)
    Cs = np.linspace(0.1, 4.0, 40)
    curves = alignment_sparsity(X, Gaussian(0.6), Cs)
    a, s = curves["alignment"].values, curves["sparsity"].values
    c2 = choose_support_radius(curves, mu=0.95)
    i2 = list(Cs).index(c2)
    assert a[i2] >= 0.95 and (i2 == 0 or a[i2 - 1] < 0.95)
    c3 = choose_support_radius(curves, tau=0.5)
    i3 = list(Cs).index(c3)
    assert s[i3] >= 0.5 and (i3 == len(Cs) - 1 or s[i3 + 1] < 0.5)
    c1 = choose_support_radius(curves, gamma=0.3)
    assert np.argmax(a + 0.3 * s) == list(Cs).index(c1)
    # the quantile shortcut for rule 3: C = (1 - tau) quantile of the pairwise distances
    short = float(distance_quantile(X, 1 - 0.5))
    at_short = alignment_sparsity(X, Gaussian(0.6), [short])
    assert at_short["sparsity"].values[0] == pytest.approx(0.5, abs=2 / 600)
    with pytest.raises(ValueError, match="reaches alignment"):
        choose_support_radius(curves.isel(radius=slice(0, 3)), mu=0.999)
    with pytest.raises(ValueError, match="exactly one"):
        choose_support_radius(curves, mu=0.9, tau=0.5)


def test_distance_quantile_sample_is_chunking_independent():
    X, _ = _green_red(5000, seed=7)
    a = distance_quantile(X, [0.25, 0.5], n_rows=500, seed=1)
    b = distance_quantile(da.from_array(X, chunks=(700, 2)), [0.25, 0.5], n_rows=500, seed=1)
    np.testing.assert_array_equal(a, b)
    exact = np.quantile(cdist(X[:2000], X[:2000]), [0.25, 0.5])
    np.testing.assert_allclose(a, exact, rtol=0.05)


def test_nu_defaults_to_the_smallest_positive_definite_power_and_warns_below():
    assert CompactSupport.minimal_taper_power(2) == 2 and CompactSupport.minimal_taper_power(3) == 2
    assert CompactSupport.minimal_taper_power(4) == 3
    kernel = CompactSupport(Gaussian(1.0), 1.0, taper_power=1)
    with pytest.warns(BigkernWarning, match="may not be positive definite"):
        sparse_gram(np.random.default_rng(0).random((50, 5)), kernel)


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="support radius must be a positive"):
        CompactSupport(Gaussian(1.0), 0.0)
    with pytest.raises(ValueError, match="support radius must be a positive"):
        CompactSupport(Gaussian(1.0), -1.0)
    with pytest.raises(ValueError, match="taper power must be an integer >= 1"):
        CompactSupport(Gaussian(1.0), 1.0, taper_power=0)
    with pytest.raises(ValueError, match="taper power must be an integer >= 1"):
        CompactSupport(Gaussian(1.0), 1.0, taper_power=1.5)
    with pytest.raises(TypeError, match="CompactSupport"):
        sparse_gram(np.ones((3, 2)), Gaussian(1.0))
    X = np.random.default_rng(0).random((20, 2))
    X[4, 1] = np.nan
    with pytest.raises(DataQualityError, match="row 4"):
        sparse_gram(X, CompactSupport(Gaussian(1.0), 0.5))
    with pytest.raises(DataQualityError, match="row 4"):
        alignment_sparsity(X, Gaussian(1.0), [0.5])
    Z = np.random.default_rng(1).random((20, 2))
    Z[13, 0] = np.inf  # a non-finite column row on the dask path is named by its global row
    with pytest.raises(DataQualityError, match="row 13"):
        sparse_gram(da.from_array(np.nan_to_num(X), chunks=(6, 2)),
                    CompactSupport(Gaussian(1.0), 0.5), da.from_array(Z, chunks=(5, 2)))
    with pytest.raises(DataQualityError, match="row 4"):
        alignment_sparsity(da.from_array(X, chunks=(6, 2)), Gaussian(1.0), [0.5])
    with pytest.raises(DataQualityError, match="row 13"):
        distance_quantile(Z, 0.5)
    with pytest.raises(ValueError, match="support radii"):
        alignment_sparsity(np.ones((3, 2)), Gaussian(1.0), [0.0])


def test_tiny_support_gives_a_diagonal_gram_not_a_crash():
    X = np.arange(10.0)[:, None]  # points 1 apart, support 0.5: only self-pairs
    K = sparse_gram(X, CompactSupport(Gaussian(1.0), 0.5))
    np.testing.assert_array_equal(K.toarray(), np.eye(10))
