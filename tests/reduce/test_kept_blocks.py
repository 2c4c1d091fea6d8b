"""Kernel blocks kept between the reads of a solve (bigkern.reduce.reduced.kept_blocks).

A kept block and a recomputed one give the same products bit for bit, so a solve's
iterates do not depend on the memory budget; both are the products of the kernel matrix,
and of the compiled per-row loop of ``kernel_products`` to round-off.
"""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest

from bigkern.kernels import Basis, gaussian_kernel
from bigkern.reduce.reduced.kept_blocks import KeptKernelBlocks, kept_budget_bytes
from bigkern.reduce.reduced.products import kernel_products
from bigkern.solvers.conjugate_gradients import FalkonPreconditioner
from bigkern.solvers.conjugate_gradients_columns import preconditioned_cg_columns

M = 12


def _rows(n: int = 900, seed: int = 0) -> tuple[np.ndarray, np.ndarray, Basis]:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3)).astype(np.float32)
    y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(n)
    X[5, 1] = np.nan  # a row left out, counted
    basis = Basis.checked(X[10:10 + M].astype(np.float64), omega=1.0, d=3)
    return X, y, basis


def _chunked(X: np.ndarray, y: np.ndarray, rows: int) -> tuple[da.Array, da.Array]:
    return da.from_array(X, chunks=(rows, -1)), da.from_array(y, chunks=rows)


def _cg_iterates(blocks: KeptKernelBlocks, first: dict, lam: float = 0.1) -> np.ndarray:
    n, gsum = first["n"], first["Gsum"]
    rhs = (first["Gty"] - gsum * first["ysum"] / n)[:, None]
    K = blocks.basis.kernel(blocks.basis.centers, blocks.basis.centers)
    pre = FalkonPreconditioner.from_kernel(K, n, lam, centered=True)
    seen = []

    def product(V: np.ndarray) -> np.ndarray:
        seen.append(V.copy())
        return blocks.products(V) - np.outer(gsum, gsum @ V) / n

    found = preconditioned_cg_columns(product, rhs, pre, lam, tol=1e-12, max_iter=6)
    return np.hstack([*seen, found.coef])


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_kept_and_recomputed_blocks_give_the_same_iterates_bit_for_bit():
    X, y, basis = _rows()
    Xd, yd = _chunked(X, y, 300)
    start = np.random.default_rng(1).standard_normal((M, 1))
    bytes_per_chunk = 300 * M * 4
    runs = {}
    for budget in (10**9, bytes_per_chunk, 0):  # all kept, the first chunk kept, none
        blocks, first = KeptKernelBlocks.build(Xd, yd, basis, start, budget_bytes=budget)
        assert blocks.n_kept == {10**9: 3, bytes_per_chunk: 1, 0: 0}[budget]
        runs[budget] = (first, _cg_iterates(blocks, first))
        blocks.release()
    ref_first, ref_iterates = runs[10**9]
    for budget in (bytes_per_chunk, 0):
        first, iterates = runs[budget]
        for key in ("GtGV", "Gty", "Gsum"):
            np.testing.assert_array_equal(first[key], ref_first[key])
        np.testing.assert_array_equal(iterates, ref_iterates)


def test_the_products_are_the_kernel_matrixs_and_the_compiled_loops():
    X, y, basis = _rows()
    V = np.random.default_rng(2).standard_normal((M, 2))
    blocks, first = KeptKernelBlocks.build(X, y, basis, V)
    usable = np.isfinite(X).all(axis=1)
    G = gaussian_kernel(X[usable].astype(np.float64), basis.centers, 1.0)
    np.testing.assert_allclose(first["GtGV"], G.T @ (G @ V), rtol=1e-5)
    np.testing.assert_allclose(first["Gty"], G.T @ y[usable], rtol=1e-5)
    assert first["n"] == usable.sum() and first["counts"]["n_nonfinite"] == 1
    # the same float32 kernel values as the compiled loop of kernel_products: its sums to
    # round-off of float64
    loop = kernel_products(X, y, basis, V)
    for key in ("GtGV", "Gty", "Gsum"):
        np.testing.assert_allclose(first[key], loop[key], rtol=1e-12, atol=0)
    np.testing.assert_allclose(blocks.products(V), loop["GtGV"], rtol=1e-12, atol=0)


def test_class_codes_masks_and_float64_blocks():
    X, _, basis = _rows()
    codes = np.random.default_rng(3).integers(0, 3, len(X)).astype(np.float64)
    mask = np.arange(len(X)) % 4 != 0
    V = np.ones((M, 1))
    _, first = KeptKernelBlocks.build(X, codes, basis, V, mask=mask, n_classes=3)
    loop = kernel_products(X, codes, basis, V, mask=mask, n_classes=3)
    assert first["Gty"].shape == (M, 3) and first["n"] == loop["n"]
    np.testing.assert_allclose(first["Gty"], loop["Gty"], rtol=1e-12)
    np.testing.assert_allclose(first["yty"], loop["yty"])
    assert first["counts"]["n_masked"] == loop["counts"]["n_masked"]
    wide, _ = KeptKernelBlocks.build(X, codes, basis, V, mask=mask, dtype=np.float64)
    assert wide.kept_bytes == len(X) * M * 8  # at most all rows, float64
    usable = mask & np.isfinite(X).all(axis=1)
    G = gaussian_kernel(X[usable].astype(np.float64), basis.centers, 1.0)
    np.testing.assert_allclose(wide.products(V), G.T @ (G @ V), rtol=1e-12)


def test_blocks_kept_on_a_clusters_workers_give_the_recomputed_products(client):
    X, y, basis = _rows()
    Xd, yd = _chunked(X, y, 300)
    V = np.random.default_rng(4).standard_normal((M, 1))
    assert kept_budget_bytes() > 300 * M * 4  # a share of the workers' memory
    blocks, first = KeptKernelBlocks.build(Xd, yd, basis, V)
    some, _ = KeptKernelBlocks.build(Xd, yd, basis, V, budget_bytes=300 * M * 4)
    assert (blocks.n_kept, some.n_kept) == (3, 1)
    np.testing.assert_array_equal(blocks.products(V), some.products(V))
    loop = kernel_products(Xd, yd, basis, V)
    np.testing.assert_allclose(first["GtGV"], loop["GtGV"], rtol=1e-12, atol=0)
