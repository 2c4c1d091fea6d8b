"""Zhang, Genton & Liu: Tables 1–3 and Example 3 with bigkern's compact-kernel estimators.

- Table 1: bandwidth ``2 max_i b_i + 1`` of ``K_C`` (n = 2,000 green-red points)
  after reverse Cuthill–McKee, at sparsity 95%, 75%, 50% and 0.
- Table 2 (Example 1): green-red, n = 200 training and 1,000 test points, σ = 0.6
  (bigkern's ω = σ/√2), C by rule (9) over log₂C ∈ [−5, 5] for
  μ ∈ {0.90, 0.95, 0.98, 0.99}, SVM λ by 10-fold CV; the compact SVM is
  :class:`~bigkern.CompactSVC` (SMO on the sparse K_C), the dense
  one scikit-learn's ``SVC``.
- Table 3 (Example 2): n = 5,000, λ on a tuning set of 3,000, 5,000 test points,
  τ ∈ {0.9, 0.8, 0.7, 0.5} with C the (1 − τ) quantile of the pairwise distances;
  time of solving the bordered system (14) — sparse (bigkern's
  ``solve_lssvm`` on K_C) against dense (LAPACK Cholesky on K), median of 3,
  same process, same BLAS threads. Building K or K_C is timed separately.
- Example 3: kernel PCA of the three clusters, C by rule (8) with γ = 0.3.

The green-red centers are ``GreenRed(seed=8)`` (Bayes error 0.217 on 50,000
draws; the paper's draw has 0.218). Single-node: no cluster.

Usage::

    python benchmarks/compact_tables.py [--small]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from _common import header, print_table
from scipy.spatial.distance import pdist
from sklearn.model_selection import GridSearchCV
from sklearn.svm import SVC

from bigkern import (
    CompactKernelPCA,
    CompactSupport,
    CompactSVC,
    Gaussian,
    alignment_sparsity,
    choose_support_radius,
)
from bigkern.datasets import GreenRed, make_three_clusters
from bigkern.kernels import gaussian_kernel
from bigkern.models.criteria import distance_quantile
from bigkern.reduce.compact.sparse_gram import gram_report, sparse_gram
from bigkern.solvers.lssvm import solve_lssvm
from bigkern.solvers.sparse_spd import bandwidth, solve_sparse_spd

OMEGA = 0.6 / np.sqrt(2)
NU = 3  # the paper's ν
MIXTURE = GreenRed()
PAPER_T1 = {0.95: 325, 0.75: 824, 0.50: 1122, 0.0: 2000}
PAPER_T2 = {0.90: (1.583, 0.912, 0.482, 0.236), 0.95: (2.239, 0.956, 0.301, 0.229),
            0.98: (3.394, 0.981, 0.209, 0.229), 0.99: (4.800, 0.991, 0.185, 0.228),
            "Gaussian": (np.inf, 1.0, 0.0, 0.228)}
PAPER_T3 = {0.9: (0.717, 0.272, 8.95), 0.8: (1.060, 0.230, 9.73), 0.7: (1.060, 0.218, 9.65),
            0.5: (1.927, 0.215, 12.73), "Gaussian": (np.inf, 0.216, 23.93)}


def table1(n: int) -> None:
    X, _ = MIXTURE.sample(n, seed=101)
    rows = []
    for sparsity in (0.95, 0.75, 0.50, 0.0):
        C = float(distance_quantile(X, 1 - sparsity, n_rows=n)) if sparsity else np.inf
        kernel = CompactSupport(Gaussian(OMEGA), C if np.isfinite(C) else 1e9, NU)
        K = sparse_gram(X, kernel)
        solved = solve_sparse_spd(K + 1e-3 * n * _identity(n), np.ones(n), method="banded")
        rows.append([f"{sparsity:.0%}", f"{gram_report(K).sparsity:.1%}", bandwidth(K),
                     solved.bandwidth_after, PAPER_T1[sparsity]])
    print(f"\n## Table 1: bandwidth of K_C after reverse Cuthill-McKee (n = {n})\n")
    print_table(["target sparsity", "sparsity", "bw before", "bw after RCM", "paper bw"], rows)


def _identity(n: int):
    import scipy.sparse as sp

    return sp.identity(n, format="csr")


def table2(n_train: int, n_test: int, folds: int) -> None:
    X, y = MIXTURE.sample(n_train, seed=11)
    X_test, y_test = MIXTURE.sample(n_test, seed=12)
    lams = np.geomspace(1e-4, 1e-1, 7)
    n_fit = n_train * (folds - 1) // folds
    t0 = time.perf_counter()
    dense = GridSearchCV(SVC(kernel="rbf", gamma=1 / (2 * OMEGA**2)),
                         {"C": 1 / (2 * n_fit * lams)}, cv=folds).fit(X, y)
    t_dense = time.perf_counter() - t0
    curves = alignment_sparsity(X, Gaussian(OMEGA), 2.0 ** np.linspace(-5, 5, 201), taper_power=NU)
    rows = []
    for mu in (0.90, 0.95, 0.98, 0.99):
        C = choose_support_radius(curves, mu=mu)
        at = curves.sel(radius=C)
        t0 = time.perf_counter()
        search = GridSearchCV(CompactSVC(OMEGA, radius=C, taper_power=NU),
                              {"C": 1 / (2 * n_fit * lams)},
                              cv=folds).fit(X, y)
        seconds = time.perf_counter() - t0
        paper = PAPER_T2[mu]
        rows.append([mu, f"{C:.3f}", f"{float(at.alignment):.3f}", f"{float(at.sparsity):.3f}",
                     f"{1 - search.score(X_test, y_test):.3f}", f"{seconds:.1f}",
                     f"{paper[0]:.3f}", f"{paper[1]:.3f}", f"{paper[2]:.3f}", f"{paper[3]:.3f}"])
    rows.append(["Gaussian", "inf", "1", "0", f"{1 - dense.score(X_test, y_test):.3f}",
                 f"{t_dense:.1f}", "inf", "1", "0", "0.228"])
    print(f"\n## Table 2: SVM, green-red n = {n_train}, {n_test} test points, λ by {folds}-fold "
          f"CV (Bayes error on the test set: {MIXTURE.bayes_error(X_test, y_test):.3f}; "
          "paper 0.218)\n")
    print_table(["μ", "Ĉ", "A(Ĉ)", "S(Ĉ)", "test error", "CV s", "paper Ĉ", "paper A",
                 "paper S", "paper error"], rows)


def _median_time(fn, repeats: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def _error(K_test, solution, y) -> float:
    return float(np.mean(np.sign(K_test @ solution.coef + solution.intercept) != y))


def table3(n: int, n_tune: int, n_test: int, repeats: int) -> None:
    X, y = MIXTURE.sample(n, seed=21)
    X_tune, y_tune = MIXTURE.sample(n_tune, seed=22)
    X_test, y_test = MIXTURE.sample(n_test, seed=23)
    lams = np.geomspace(1e-5, 10.0, 7)
    rows = []
    dense_seconds = None
    for tau in (0.9, 0.8, 0.7, 0.5, "Gaussian"):
        t0 = time.perf_counter()
        if tau == "Gaussian":
            C = np.inf
            K = gaussian_kernel(X, X, OMEGA)
            K_tune, K_test = gaussian_kernel(X_tune, X, OMEGA), gaussian_kernel(X_test, X, OMEGA)
        else:
            C = float(distance_quantile(X, 1 - tau))
            kernel = CompactSupport(Gaussian(OMEGA), C, NU)
            K = sparse_gram(X, kernel)
            K_tune, K_test = sparse_gram(X_tune, kernel, X), sparse_gram(X_test, kernel, X)
        t_gram = time.perf_counter() - t0
        lam = max(lams, key=lambda lam, K=K, K_tune=K_tune: -_error(
            K_tune, solve_lssvm(K, y, lam), y_tune))
        seconds, solution = _median_time(lambda K=K, lam=lam: solve_lssvm(K, y, lam), repeats)
        if tau == "Gaussian":
            dense_seconds = seconds
            sparsity, method = 0.0, "dense Cholesky"
        else:
            sparsity, method = gram_report(K).sparsity, solution.method
        paper = PAPER_T3[tau]
        rows.append([tau, f"{C:.3f}", f"{sparsity:.3f}", f"{lam:.0e}",
                     f"{_error(K_test, solution, y_test):.3f}", f"{t_gram:.2f}", method,
                     f"{seconds:.2f}", f"{paper[0]:.3f}", f"{paper[1]:.3f}", f"{paper[2]:.2f}"])
    for row in rows:
        row.insert(8, f"{float(row[7]) / dense_seconds:.2f}")
    print(f"\n## Table 3: LS-SVM, green-red n = {n}, λ on {n_tune} tuning points, "
          f"{n_test} test points; solve time of (14), median of {repeats}\n")
    print_table(["τ", "C", "sparsity", "λ", "test error", "build K s", "solver", "solve s",
                 "× dense", "paper C", "paper error", "paper s"], rows)


def example3() -> None:
    X, cluster = make_three_clusters(seed=0)
    omega = np.sqrt(0.05)
    curves = alignment_sparsity(X, Gaussian(omega), 2.0 ** np.linspace(-5, 5, 201), taper_power=NU)
    C = choose_support_radius(curves, gamma=0.3)
    at = curves.sel(radius=C)
    model = CompactKernelPCA(8, omega, radius=C, taper_power=NU).fit(X)
    P = model.transform(X)[:, :2]
    means = np.array([P[cluster == c].mean(axis=0) for c in range(3)])
    spread = max(P[cluster == c].std(axis=0).max() for c in range(3))
    print("\n## Example 3: kernel PCA of three clusters, C by rule (8), γ = 0.3\n")
    print_table(["", "Ĉ", "S(Ĉ)", "A(Ĉ)", "eigenvalues of centred K_C",
                 "min cluster-mean distance / max within SD (PC1-2)"],
                [["bigkern", f"{C:.3f}", f"{float(at.sparsity):.3f}",
                  f"{float(at.alignment):.3f}", " ".join(f"{v:.2f}" for v in model.eigenvalues_),
                  f"{pdist(means).min() / spread:.1f}"],
                 ["paper", "0.758", "0.559", "0.936", "(figure 8)", "(separated)"]])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--small", action="store_true", help="smaller sizes (a smoke run)")
    args = p.parse_args()
    header("Zhang, Genton & Liu Tables 1-3 and Example 3 (single node)")
    if args.small:
        table1(500)
        table2(200, 1000, 5)
        table3(1000, 600, 1000, 1)
    else:
        table1(2000)
        table2(200, 1000, 10)
        table3(5000, 3000, 5000, 3)
    example3()


if __name__ == "__main__":
    main()
