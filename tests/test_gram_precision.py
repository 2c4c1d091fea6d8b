"""The float32 products of the normal-equation pass, and the fused kernel block behind them."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest

from bigkern.kernels import GaussianBasis, kernel_blocks
from bigkern.kernels.fused import fused_kernel_block
from bigkern.models import NystromKernelRidge, NystromKernelRidgeClassifier
from bigkern.reduce.reduced_folds import reduced_normal_equations_folds
from bigkern.reduce.reduced_kernel import reduced_normal_equations


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
    basis = GaussianBasis.checked(centers, 0.8, d, offset, scale)
    rows = np.flatnonzero(np.isfinite(X).all(axis=1))
    wide = np.full((len(rows), 42), -1.0, dtype=np.float32)  # a column slice, as in the pass
    fused_kernel_block(X, rows, np.ascontiguousarray(centers.T, dtype=np.float32),
                       1 / (2 * 0.8**2), offset, scale, wide[:, :40])
    (_, ref), = list(kernel_blocks(X[rows], basis, block_rows=len(rows)))
    np.testing.assert_allclose(wide[:, :40], ref, rtol=2e-5, atol=2e-7)
    assert (wide[:, 40:] == -1).all()  # nothing written past the block


def test_float32_products_agree_with_float64_and_keep_a_large_mean() -> None:
    X, y = _data()
    centers = X[:50].astype(np.float64)
    exact = reduced_normal_equations(X, y, centers, 1.0, gram="float64")
    single = reduced_normal_equations(X, y, centers, 1.0, gram="float32")
    for name in ("GtG", "Gsum", "Gty"):
        np.testing.assert_allclose(single[name], exact[name], rtol=2e-6,
                                   atol=2e-6 * float(np.abs(exact[name]).max()), err_msg=name)
    # y has mean 1000: Σy, Σy² are float64 sums, so the digits that matter survive
    assert float(single["yty"]) == pytest.approx(float(exact["yty"]), rel=1e-12)
    assert float(single["ysum"]) == pytest.approx(float(exact["ysum"]), rel=1e-12)
    assert int(single["n"]) == int(exact["n"]) == len(y)


def test_float32_products_with_folds_and_widths() -> None:
    X, y = _data(3000)
    centers = X[:30].astype(np.float64)
    kw = {"n_folds": 3, "seed": 2}
    exact = reduced_normal_equations_folds(X, y, centers, [0.5, 2.0], gram="float64", **kw)
    single = reduced_normal_equations_folds(da.from_array(X, chunks=(700, 3)), y, centers,
                                            [0.5, 2.0], gram="float32", **kw)
    np.testing.assert_array_equal(single["n"], exact["n"])
    np.testing.assert_allclose(single["GtG"], exact["GtG"], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(single["Gty"], exact["Gty"], rtol=1e-5)


def test_bad_gram_is_named() -> None:
    X, y = _data(100)
    with pytest.raises(ValueError, match="gram must be"):
        reduced_normal_equations(X, y, X[:5], 1.0, gram="half")
    with pytest.raises(ValueError, match="gram must be"):
        NystromKernelRidge(gram="float16").fit(X, y)


def test_nystrom_float32_products_fit_as_well_and_any_chunking_alike() -> None:
    """float32 products: ~1e-7 relative in the pieces, amplified by the system's condition
    (λ = 0.1 here) — far below the noise: the fit's error is unchanged."""
    X, y = _data(5000)
    kw = {"omega": 1.0, "lam": 0.1, "size": 80, "random_state": 0}
    single = NystromKernelRidge(gram="float32", **kw).fit(X, y)
    exact = NystromKernelRidge(**kw).fit(X, y)
    assert single.fit_report_["gram"] == "float32" and exact.fit_report_["gram"] == "float64"
    rmse = [float(np.sqrt(np.mean((m.predict(X) - y) ** 2))) for m in (single, exact)]
    assert rmse[0] == pytest.approx(rmse[1], rel=0.01), rmse
    def rms(a: np.ndarray) -> float:
        return float(np.sqrt(np.mean(a**2)))

    assert rms(single.predict(X) - exact.predict(X)) < 0.1 * rmse[1]
    chunked = NystromKernelRidge(gram="float32", **kw).fit(da.from_array(X, chunks=(777, 3)), y)
    assert rms(chunked.predict(X) - single.predict(X)) < 0.1 * rmse[1]


def test_nystrom_classifier_float32_products_same_labels() -> None:
    rng = np.random.default_rng(5)
    X = rng.normal(size=(8000, 4)).astype(np.float32)
    y = np.where(X[:, 0] * X[:, 1] + 0.2 * X[:, 2] > 0, 1, -1)
    kw = {"omega": 1.0, "lam": 1.0, "size": 200, "random_state": 0}
    single = NystromKernelRidgeClassifier(gram="float32", **kw).fit(X, y)
    exact = NystromKernelRidgeClassifier(gram="float64", **kw).fit(X, y)
    agree = np.mean(single.predict(X) == exact.predict(X))
    assert agree > 0.995, agree
    assert np.mean(single.predict(X) == y) > 0.9


def test_kernel_blocks_fused_by_default_for_float32_and_few_features() -> None:
    rng = np.random.default_rng(9)
    X = rng.normal(size=(3000, 4)).astype(np.float32)
    X[::17, 2] = np.nan
    basis = GaussianBasis.checked(rng.normal(size=(25, 4)), 1.3, 4, np.zeros(4), np.ones(4))
    auto = [(r.copy(), G.copy()) for r, G in kernel_blocks(X, basis, block_rows=700)]
    blas = [(r.copy(), G.copy()) for r, G in kernel_blocks(X, basis, block_rows=700,
                                                           fused=False)]
    assert len(auto) == len(blas) == 5
    for (ra, Ga), (rb, Gb) in zip(auto, blas, strict=True):
        np.testing.assert_array_equal(ra, rb)
        np.testing.assert_allclose(Ga, Gb, rtol=2e-5, atol=2e-7)
    with pytest.raises(ValueError, match="float32"):
        next(kernel_blocks(X, basis, dtype=np.float64, fused=True))
