"""Sparse LS-SVM with a compactly supported kernel beyond the paper's n = 5,000.

For n = 5,000, 20,000 and 50,000 green-red training points (``GreenRed(seed=8)``,
σ = 0.6, ν = 3, λ = 1e-2 fixed — Table 3's tuning picks values near it) the
support radius follows rule (10) under a memory budget, as the paper suggests
for massive data: ``τ = max(0.7, 1 − budget / n²)`` so that K_C holds at most
``--nnz-budget`` nonzeros, and ``C`` is the (1 − τ) distance quantile of a
2,000-row sample. Reported per n: C, nonzeros, CSR memory, time to build K_C
(k-d tree pairs, in process), the solve of system (14) by each sparse method
(RCM + banded LAPACK Cholesky, Jacobi CG, CHOLMOD when installed) with its
memory, the test error on 5,000 points, and the peak resident memory of the
process during the solve. The dense Gaussian LS-SVM (LAPACK Cholesky of the
n × n matrix) runs side by side up to ``--dense-max`` rows; at 50,000 its
matrix alone is 20 GB, beyond this machine.

Usage::

    python benchmarks/compact.py [--small] [--sizes 5000 20000 50000]
"""

from __future__ import annotations

import argparse
import gc
import threading
import time

import numpy as np
import psutil
import scipy.linalg
from _common import header, print_table

from bigkern import CompactSupport, Gaussian
from bigkern.datasets import GreenRed
from bigkern.kernels import gaussian_kernel, row_blocks
from bigkern.models.criteria import distance_quantile
from bigkern.reduce.compact.sparse_gram import gram_report, sparse_gram
from bigkern.solvers.lssvm import solve_lssvm
from bigkern.solvers.sparse_spd import has_cholmod

OMEGA = 0.6 / np.sqrt(2)
LAM = 1e-2
MIXTURE = GreenRed()


class PeakRSS:
    """Peak resident memory of this process over a block, sampled every 50 ms."""

    def __init__(self) -> None:
        self.process = psutil.Process()
        self.peak = 0
        self._stop = threading.Event()

    def __enter__(self) -> PeakRSS:
        gc.collect()
        self.peak = self.process.memory_info().rss
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            self.peak = max(self.peak, self.process.memory_info().rss)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.process.memory_info().rss)


def _test_error(X_test, y_test, kernel, X, coef, intercept) -> float:
    return float(np.mean(np.sign(sparse_gram(X_test, kernel, X) @ coef + intercept) != y_test))


def _dense_error(X_test, y_test, X, coef, intercept) -> float:
    wrong = 0
    for sl in row_blocks(len(X_test), 1000):
        f = gaussian_kernel(X_test[sl], X, OMEGA) @ coef + intercept
        wrong += int(np.sum(np.sign(f) != y_test[sl]))
    return wrong / len(X_test)


def run(n: int, budget: float, dense_max: int, methods: list[str]) -> list[list[object]]:
    X, y = MIXTURE.sample(n, seed=31)
    X_test, y_test = MIXTURE.sample(5000, seed=32)
    tau = max(0.7, 1 - budget / n**2)
    C = float(distance_quantile(X, 1 - tau))
    kernel = CompactSupport(Gaussian(OMEGA), C, 3)
    t0 = time.perf_counter()
    K = sparse_gram(X, kernel)
    t_gram = time.perf_counter() - t0
    report = gram_report(K)
    rows = []
    for method in methods:
        with PeakRSS() as mem:
            solution = solve_lssvm(K, y, LAM, method=method)
        spd = solution.solve
        error = _test_error(X_test, y_test, kernel, X, solution.coef, solution.intercept)
        rows.append([n, f"{tau:.3f}", f"{C:.3f}", f"{report.nnz:,}",
                     f"{report.sparse_bytes / 1e6:.0f} MB", f"{t_gram:.1f}", method,
                     f"{solution.seconds:.1f}",
                     "" if spd.bandwidth_after is None else spd.bandwidth_after,
                     "" if spd.factor_bytes is None else f"{spd.factor_bytes / 1e6:.0f} MB",
                     f"{mem.peak / 1e9:.2f} GB",
                     f"{error:.3f}"])
        print("  ", rows[-1], flush=True)
        del solution
    del K
    if n <= dense_max:
        with PeakRSS() as mem:
            t0 = time.perf_counter()
            Kd = gaussian_kernel(X, X, OMEGA)
            t_gram = time.perf_counter() - t0
            t0 = time.perf_counter()
            Kd[np.diag_indices(n)] += n * LAM
            factor = scipy.linalg.cho_factor(Kd, lower=True, overwrite_a=True, check_finite=False)
            uv = scipy.linalg.cho_solve(factor, np.column_stack([np.ones(n), y]))
            seconds = time.perf_counter() - t0
        del Kd, factor
        b = uv[:, 1].sum() / uv[:, 0].sum()
        coef = uv[:, 1] - b * uv[:, 0]
        rows.append([n, "0", "inf", f"{n * n:,}", f"{8 * n * n / 1e6:.0f} MB", f"{t_gram:.1f}",
                     "dense Cholesky", f"{seconds:.1f}", "", f"{8 * n * n / 1e6:.0f} MB",
                     f"{mem.peak / 1e9:.2f} GB", f"{_dense_error(X_test, y_test, X, coef, b):.3f}"])
        print("  ", rows[-1], flush=True)
    else:
        rows.append([n, "0", "inf", f"{n * n:,}", f"{8 * n * n / 1e9:.0f} GB", "", "dense",
                     "not run", "", "", "", ""])
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--small", action="store_true", help="n = 2,000 and 5,000 only")
    p.add_argument("--sizes", type=int, nargs="+", default=[5000, 20000, 50000])
    p.add_argument("--nnz-budget", type=float, default=4e7,
                   help="largest number of nonzeros of K_C (default %(default)g)")
    p.add_argument("--dense-max", type=int, default=20000,
                   help="largest n for the dense solve (default %(default)d)")
    args = p.parse_args()
    sizes = [2000, 5000] if args.small else args.sizes
    methods = ["banded", "cg"] + (["cholmod"] if has_cholmod() else [])
    header(f"Sparse LS-SVM at scale: n = {sizes}, nnz budget {args.nnz_budget:g}, "
           f"lambda = {LAM:g}, CHOLMOD {'installed' if has_cholmod() else 'not installed'}")
    rows = []
    for n in sizes:
        rows += run(n, args.nnz_budget, args.dense_max, methods)
    print()
    print_table(["n", "τ", "C", "nonzeros", "K memory", "build K s", "solver", "solve s",
                 "bw after RCM", "factor", "peak RSS", "test error"], rows)


if __name__ == "__main__":
    main()
