"""The fused kernel block and the passes that use it."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest

from bigkern.kernels import Basis, kernel_blocks
from bigkern.kernels.fused_loops import fused_kernel_block
from bigkern.reduce.reduced.folds import reduced_normal_equations_folds
from bigkern.reduce.reduced.normal_equations import reduced_normal_equations


def _data(n: int = 6000, d: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(np.float32)
    y = 1000.0 + np.sin(2 * X[:, 0]) + 0.3 * X[:, 1] + 0.1 * rng.normal(size=n)
    return X, y


@pytest.mark.parametrize("d", [1, 3, 8])
def test_fused_kernel_block_equals_the_blas_block(d: int) -> None:
    rng = np.random.default_rng(d)
    X = rng.normal(size=(500, d)).astype(np.float32)
    X[7, 0] = np.nan  # not among the rows asked for
    centers = rng.normal(size=(40, d))
    offset, scale = rng.normal(size=d), rng.uniform(0.5, 2, size=d)
    basis = Basis.checked(centers, 0.8, d, offset, scale)
    rows = np.flatnonzero(np.isfinite(X).all(axis=1))
    wide = np.full((len(rows), 42), -1.0, dtype=np.float32)  # a column slice, as in the pass
    fused_kernel_block(X, rows, np.ascontiguousarray(centers.T, dtype=np.float32),
                       1 / (2 * 0.8**2), offset, scale, wide[:, :40])
    (_, ref), = list(kernel_blocks(X[rows], basis, block_rows=len(rows)))
    np.testing.assert_allclose(wide[:, :40], ref, rtol=2e-5, atol=2e-7)
    assert (wide[:, 40:] == -1).all()  # nothing written past the block


def test_normal_equations_from_fused_blocks_equal_the_blas_blocks() -> None:
    """float32 data of few features goes through the fused block; float64 products after."""
    X, y = _data()
    centers = X[:50].astype(np.float64)
    fused = reduced_normal_equations(X, y, centers, 1.0)
    blas = reduced_normal_equations(X.astype(np.float64), y, centers, 1.0)
    for name in ("GtG", "Gsum", "Gty"):  # float32 kernel values either way: round-off only
        np.testing.assert_allclose(fused[name], blas[name], rtol=1e-5,
                                   atol=1e-6 * float(np.abs(blas[name]).max()), err_msg=name)
    assert float(fused["yty"]) == float(blas["yty"])
    folds = reduced_normal_equations_folds(da.from_array(X, chunks=(700, 3)), y, centers,
                                           [1.0], n_folds=1)
    np.testing.assert_allclose(folds["GtG"][0, 0], fused["GtG"], rtol=1e-12)


def test_kernel_blocks_fused_by_default_for_float32_and_few_features() -> None:
    rng = np.random.default_rng(9)
    X = rng.normal(size=(3000, 4)).astype(np.float32)
    X[::17, 2] = np.nan
    basis = Basis.checked(rng.normal(size=(25, 4)), 1.3, 4, np.zeros(4), np.ones(4))
    auto = [(r.copy(), G.copy()) for r, G in kernel_blocks(X, basis, block_rows=700)]
    blas = [(r.copy(), G.copy()) for r, G in kernel_blocks(X, basis, block_rows=700,
                                                           fused=False)]
    assert len(auto) == len(blas) == 5
    for (ra, Ga), (rb, Gb) in zip(auto, blas, strict=True):
        np.testing.assert_array_equal(ra, rb)
        np.testing.assert_allclose(Ga, Gb, rtol=2e-5, atol=2e-7)
    with pytest.raises(ValueError, match="float32"):
        next(kernel_blocks(X, basis, dtype=np.float64, fused=True))
