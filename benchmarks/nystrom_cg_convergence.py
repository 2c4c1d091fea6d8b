"""Nyström conjugate gradients at small λ: iterations to a relative residual of 10⁻⁶.

The system is the Nyström classifier's (``penalty="rkhs"``, an intercept)::

    (GᵀG − ḡḡᵀ/n + λK) c = Gᵀy − ḡ Σy/n,     G = K(A, Ã),  K = K(Ã, Ã),  ḡ = Gᵀ1,

solved by :func:`bigkern.solvers.conjugate_gradients.preconditioned_cg` (Falkon's
preconditioner) to ``--tol`` (default 10⁻⁶) in at most ``--max-iter`` iterations, for
every λ in ``--lams`` and centers count m̃ in ``--sizes``, with the kernel matrix ``G``
held in memory (the products are BLAS on it: what is measured is the solver, not the
reads). Each row of the table is one variant of the preconditioner or of the products:

* ``falkon``: the preconditioner before issue 43 — ``AᵀA = (n/m̃) T Tᵀ + λI``, the
  intercept's rank-one term ``−ḡḡᵀ/n`` left out; float64 kernel values;
* ``+ rank-one``: ``AᵀA = (n/m̃) T C Tᵀ + λI`` with the centering ``C = I − 11ᵀ/m̃``
  (``FalkonPreconditioner.from_kernel(centered=True)``, the default since);
* ``+ rank-one, f32 values``: the kernel values rounded to float32, as bigkern evaluates
  them for float32 data (and keeps them between iterations), products summed in float64;
* ``+ rank-one, f32 products``: the float32 values with float32 products (``sgemv``),
  to show what summing in float32 would cost;
* ``+ rank-one, jitter 1e-10`` / ``1e-7``: a larger jitter on ``K``'s diagonal (relative,
  times m̃ and its mean diagonal; the default is Falkon's 10⁻¹³);
* ``sample of 4m rows`` (bigkern's default since 2026-11-29,
  ``FalkonPreconditioner.from_sample``): ``GᵀG − ḡḡᵀ/n`` approximated from a uniform
  sample of 4·m̃ rows instead of the m̃ centers' ``(n/m̃) K C K``:
  ``AᵀA = (n/n_s) T⁻ᵀ(G_sᵀG_s − ḡ_sḡ_sᵀ/n_s)T⁻¹ + λI`` (n_s·m̃² more flops).

A cell is the iterations to ``--tol``, or ``>N (r)`` with the residual reached when
``--max-iter`` did not suffice, or ``stall N (r)`` when the solver stopped at round-off's
floor. Rows: labelled pixels of ``benchmarks/reduced.py``'s seeded scenes, robustly
standardized (as ``benchmarks/nystrom_solvers.py``), ω = ``--omega``.

    python benchmarks/nystrom_cg_convergence.py [--rows 100000] [--sizes 1000 2000]
        [--lams 10 1 0.1 0.01 0.001 0.0001] [--tol 1e-6] [--max-iter 300] [--out FILE]
    ... [--small]   (--rows 10000 --sizes 250 500)

Output written to ``benchmarks/results/nystrom_cg_convergence.txt``.
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C
from nystrom_solvers import data

#: name -> (centered, value dtype, product dtype, relative jitter)
VARIANTS: dict[str, tuple[bool, Any, Any, float]] = {
    "falkon": (False, np.float64, np.float64, 1e-13),
    "+ rank-one": (True, np.float64, np.float64, 1e-13),
    "+ rank-one, f32 values": (True, np.float32, np.float64, 1e-13),
    "+ rank-one, f32 products": (True, np.float32, np.float32, 1e-13),
    "+ rank-one, jitter 1e-10": (True, np.float64, np.float64, 1e-10),
    "+ rank-one, jitter 1e-7": (True, np.float64, np.float64, 1e-7),
    "sample of 4m rows": (True, np.float64, np.float64, 1e-13),
}

#: rows of the ``sample`` variant's preconditioner, per center (bigkern's default)
SAMPLE_ROWS_PER_CENTER = 4


def solve(G: np.ndarray, K: np.ndarray, y: np.ndarray, lam: float, variant: str,
          tol: float, max_iter: int) -> dict[str, Any]:
    """One preconditioned CG solve of the centered system with ``variant``'s choices."""
    from bigkern.solvers.conjugate_gradients import FalkonPreconditioner, preconditioned_cg

    centered, _, product_dtype, jitter = VARIANTS[variant]
    n = len(G)
    Gp = G if G.dtype == product_dtype else G.astype(product_dtype)
    gsum = G.sum(axis=0, dtype=np.float64)
    rhs = (G.T @ y).astype(np.float64) - gsum * (y.sum() / n)

    def product(v: np.ndarray) -> np.ndarray:
        u = Gp @ v.astype(product_dtype)
        return (Gp.T @ u).astype(np.float64) - gsum * (float(gsum @ v) / n)

    t = time.perf_counter()
    if variant.startswith("sample"):
        rows = np.sort(np.random.default_rng(1).choice(n, min(n, SAMPLE_ROWS_PER_CENTER
                                                                * len(K)), replace=False))
        Gs = G[rows].astype(np.float64)
        pre = FalkonPreconditioner.from_sample(K, Gs.T @ Gs, Gs.sum(axis=0), len(rows), n,
                                               lam, centered=centered, jitter=jitter)
    else:
        pre = FalkonPreconditioner.from_kernel(K, n, lam, centered=centered, jitter=jitter)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found = preconditioned_cg(product, rhs, pre, lam, tol=tol, max_iter=max_iter)
    stalled = any("round-off" in str(w.message) for w in caught)
    return {"iters": found.n_iter, "residual": found.residual, "converged": found.converged,
            "stalled": stalled, "seconds": time.perf_counter() - t}


def cell(r: dict[str, Any]) -> str:
    if r["converged"]:
        return str(r["iters"])
    return f"{'stall' if r['stalled'] else '>'}{r['iters']} ({r['residual']:.0e})"


def run(args: Any) -> None:
    from bigkern.kernels import gaussian_kernel

    Xtr, ytr, _, _ = data(args.rows, 1000)
    y = np.where(ytr == 1, 1.0, -1.0)
    rng = np.random.default_rng(0)
    print(f"# {len(Xtr):,} rows x {Xtr.shape[1]} features (float32, robustly standardized); "
          f"omega {args.omega}; centers a uniform draw (seed 0); tol {args.tol:g}, max_iter "
          f"{args.max_iter}; kernel matrix G in memory, BLAS products; measured under the "
          f"machine's load (load {C.load()})", flush=True)
    table = []
    for m in args.sizes:
        centers = Xtr[np.sort(rng.choice(len(Xtr), m, replace=False))].astype(np.float64)
        G64 = gaussian_kernel(Xtr.astype(np.float64), centers, args.omega)
        K = gaussian_kernel(centers, centers, args.omega)
        G32 = G64.astype(np.float32)
        for variant in args.variants:
            G = G64 if VARIANTS[variant][1] == np.float64 else G32
            row = [m, variant]
            for lam in args.lams:
                r = solve(G, K, y, lam, variant, args.tol, args.max_iter)
                row.append(cell(r))
                print(f"  m {m}, {variant}, lam {lam:g}: {cell(r)} ({r['seconds']:.1f} s, "
                      f"load {C.load()})", flush=True)
            table.append(row)
        del G64, G32
    print(f"\nCG iterations to a relative residual of {args.tol:g} (of the preconditioned "
          f"system), by λ; '>N (r)': not reached in N iterations (r: the residual then); "
          f"'stallN (r)': stopped at round-off's floor")
    C.print_table(["m", "variant"] + [f"lam {lam:g}" for lam in args.lams], table)


def main(argv: list[str] | None = None) -> None:
    p = C.parser(__doc__.split("\n")[0], "nystrom_cg_convergence")
    p.add_argument("--rows", type=int, default=100_000, help="training rows")
    p.add_argument("--sizes", type=int, nargs="+", default=[1000, 2000], help="centers m")
    p.add_argument("--lams", type=float, nargs="+",
                   default=[10.0, 1.0, 0.1, 0.01, 0.001, 0.0001], help="lambda")
    p.add_argument("--omega", type=float, default=1.0, help="Gaussian width")
    p.add_argument("--tol", type=float, default=1e-6, help="relative residual to reach")
    p.add_argument("--max-iter", type=int, default=300, help="CG iterations at most")
    p.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS),
                   help="which variants to run")
    p.add_argument("--out", type=Path, default=None, help="output file")
    args = p.parse_args(argv)
    if args.small:
        args.rows, args.sizes = 10_000, [250, 500]

    def body() -> None:
        C.header("Nystrom conjugate gradients: iterations to tol against lambda and m")
        run(args)

    C.run_teed("nystrom_cg_convergence", args.small, args.out, body)


if __name__ == "__main__":
    main()
