"""Compile and cache bigkern's numba functions, so workers do not JIT-compile on start.

Run once where bigkern is installed, with ``NUMBA_CACHE_DIR`` pointing at a
directory the workers read (the Dockerfile does it at build time)::

    NUMBA_CACHE_DIR=/opt/bigkern/numba-cache python deploy/warm_numba.py

It runs bigkern's main paths on tiny data in this process (dask's synchronous
scheduler): percentile binning of a dask array, a binned SVM and its predicted
scenes (two classes and three), the compactly supported LS-SVM and SVM, a regressor
(float64 expansions) and a Nyström fit by conjugate gradients, which between them call
every ``@numba.njit(cache=True)`` function of the package, with the argument
types the real jobs use. The sweeps compiled per number of features (row
validity, extremes, the one-read plan's) are cached here for 2 and 3 features;
a job with another count compiles its own once, into the same cache.
"""

from __future__ import annotations

import os
import time
import warnings
from pathlib import Path

import dask
import dask.array as da
import numpy as np
from sklearn.exceptions import ConvergenceWarning

import bigkern
from bigkern.datasets import GreenRed, make_scenes


def warm() -> int:
    """Run the paths; return the number of cache index files now in ``NUMBA_CACHE_DIR``."""
    with dask.config.set(scheduler="synchronous"), bigkern.config.set(progress=False):
        scenes = bigkern.with_features(make_scenes(2, (64, 64), seed=0),
                                       ["NDAI", "logSD", "CORR"])
        s = bigkern.stack_samples(scenes, ["NDAI", "logSD", "CORR"])
        model = bigkern.BinnedSVC(omega=0.8, C=3.0).fit(s.as_dataarray(), s.y, mask=s.mask)
        bigkern.predict_scenes(model, scenes).compute()
        # k classes: the bins' class counts (the fused loop takes k decision columns as one)
        three = bigkern.with_features(make_scenes(2, (64, 64), seed=0, classes=3),
                                      ["NDAI", "logSD", "CORR"])
        s = bigkern.stack_samples(three, ["NDAI", "logSD", "CORR"])
        model = bigkern.BinnedSVC(omega=0.8, C=3.0).fit(s.as_dataarray(), s.y, mask=s.mask)
        bigkern.predict_scenes(model, three).compute()
        rng = np.random.default_rng(0)
        for dtype in (np.float32, np.float64):
            # chunks of 300,000 values: above bigkern.reduce.row_loops.SMALL_CHUNK_VALUES,
            # so the rows are checked by the compiled loops (smaller ones, by numpy)
            X = da.from_array(rng.normal(size=(200_000, 3)).astype(dtype), chunks=100_000)
            y = da.from_array(np.where(rng.random(200_000) < 0.5, 1, -1), chunks=100_000)
            bigkern.percentile_bins(X, y)
        X, y = GreenRed().sample(600, seed=1)
        for solver in ("banded", "cg"):
            model = bigkern.CompactLSSVC(omega=0.42, lam=1e-3, radius=1.0, solver=solver)
            model.fit(X, y).predict(X)
        bigkern.CompactSVC(omega=0.42, C=1.0, tau=0.7).fit(X, y).predict(X)
        # a regressor: float64 expansions predict by the exact per-row pass
        bigkern.OHTRegressor(omega=1.0).fit(X, X[:, 0]).predict(X)
        # the other kernels' per-row loops: an L1 and an L2 kernel, blocks and expansions
        for kernel in ("laplacian", "matern52"):
            bigkern.NystromKernelRidgeClassifier(size=40, kernel=kernel).fit(
                X.astype(np.float32), y).predict(X)
        # Nyström by conjugate gradients on float32 rows: the compiled kernel products (a
        # few iterations: compiling is the point, not converging), with the kernel blocks
        # kept between iterations and with them formed anew each iteration (past
        # bigkern.kept_kernel_share)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            for share in (None, 0.0):
                with bigkern.config.set(**({} if share is None else
                                           {"kept_kernel_share": share})):
                    bigkern.NystromKernelRidgeClassifier(size=40, lam=1.0, solver="cg",
                                                         max_iter=3).fit(
                        X.astype(np.float32), y)
    cache = os.environ.get("NUMBA_CACHE_DIR")
    return len(list(Path(cache).rglob("*.nbi"))) if cache else 0


if __name__ == "__main__":
    t = time.perf_counter()
    n = warm()
    print(f"bigkern: numba functions compiled and cached ({n} index files) in "
          f"{time.perf_counter() - t:.1f} s")
