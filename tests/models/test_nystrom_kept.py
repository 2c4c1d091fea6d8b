"""Nyström conjugate gradients with kernel blocks kept between iterations (issue 43).

The fit keeps its blocks when they fit the memory budget and says so in ``fit_report_``;
kept or evaluated anew at each read, the fit is the same (to round-off: the compiled
per-row loop of a read sums the same float32 values), on numpy, dask or any chunking.
"""

from __future__ import annotations

import dask
import dask.array as da
import numpy as np
import pytest

from bigkern import NystromKernelRidgeClassifier

KW = {"omega": 1.0, "lam": 0.1, "size": 30, "random_state": 0, "solver": "cg", "tol": 1e-8,
      "max_iter": 200}


def _labelled(n: int = 800, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3)).astype(np.float32)
    return X, np.where(np.sin(2 * X[:, 0]) + X[:, 1] ** 2 > 0.8, "cloud", "clear")


@pytest.mark.parametrize("cg_start", ["zero", "subset"])
def test_kept_blocks_give_the_recomputed_fit_whatever_the_input(cg_start):
    X, y = _labelled()
    kept = NystromKernelRidgeClassifier(**KW, cg_start=cg_start).fit(X, y)
    report = kept.fit_report_
    assert report["kept_blocks"]["kept_chunks"] == report["kept_blocks"]["chunks"] >= 1
    assert report["converged"]
    with dask.config.set({"bigkern.kept_kernel_share": 0.0}):
        fresh = NystromKernelRidgeClassifier(**KW, cg_start=cg_start).fit(X, y)
    assert fresh.fit_report_["kept_blocks"]["kept_chunks"] == 0
    # the compiled loop of a read, and other chunkings, sum in another order: equal to
    # rounding amplified by the solve (K(Ã, Ã) of 30 centers in 3-D is near singular), a
    # few 1e-6 of the decision values here
    decision = kept.decision_function(X)
    scale = np.abs(decision).max()
    np.testing.assert_allclose(fresh.decision_function(X), decision, rtol=0, atol=5e-5 * scale)
    for chunks in (300,):
        with dask.config.set({"bigkern.nystrom_hold_bytes": 0}):  # the dask path
            other = NystromKernelRidgeClassifier(**KW, cg_start=cg_start).fit(
                da.from_array(X, chunks=(chunks, -1)), da.from_array(y, chunks=chunks))
        assert other.fit_report_["input"] == "dask"
        assert other.fit_report_["kept_blocks"]["chunks"] == -(-len(X) // chunks)
        np.testing.assert_allclose(other.decision_function(X), decision, rtol=0,
                                   atol=5e-5 * scale)


def test_a_small_dask_input_is_fitted_in_memory_as_numpy_is():
    X, y = _labelled(n=600)
    kw = {**KW, "size": 20, "cg_start": "zero"}
    mask = da.from_array(np.arange(len(X)) % 5 != 0, chunks=150)
    ref = NystromKernelRidgeClassifier(**kw).fit(X, y, mask=mask.compute())
    with dask.config.set({"bigkern.nystrom_hold_bytes": 2**20}):
        held = NystromKernelRidgeClassifier(**kw).fit(da.from_array(X, chunks=(150, -1)),
                                                      da.from_array(y, chunks=150), mask=mask)
    assert ref.fit_report_["input"] == "numpy"
    assert held.fit_report_["input"] == "dask, held in memory"
    assert held.fit_report_["held_bytes"] == X.nbytes + y.nbytes + len(X)
    np.testing.assert_array_equal(held.expansion_.coef, ref.expansion_.coef)
    with dask.config.set({"bigkern.nystrom_hold_bytes": X.nbytes // 2}):  # over it
        big = NystromKernelRidgeClassifier(**kw).fit(da.from_array(X, chunks=(150, -1)),
                                                     da.from_array(y, chunks=150))
    assert big.fit_report_["input"] == "dask"
