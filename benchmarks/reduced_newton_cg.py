"""ReducedSVC by finite Newton vs Newton–CG vs scikit-learn's SVC, side by side (issue 43).

The data of ``benchmarks/reduced.py`` part a: labelled pixels of seeded synthetic
MISR-like scenes, all eight variables, standardized by scikit-learn's ``StandardScaler``
on the training rows; ``--n`` training rows, ``--test`` scored rows. scikit-learn
``SVC(C, gamma)`` (libsvm, the full kernel) is fitted once; then for every number of
centres m̃ in ``--sizes``, ``ReducedSVC(loss="squared_hinge", solver=...)`` with
``solver="newton"`` (the finite Newton method: a Hessian of the rows inside the margin,
``n·m̃²`` a rebuild, and its Cholesky) and ``solver="newton-cg"`` (conjugate gradients
on Hessian–vector products, preconditioned from a sample of the rows). Both hold the
kernel rows in memory (``bigkern.in_memory_kernel_bytes`` is raised to
``--held-bytes`` so that they do at every m̃: finite Newton float64 rows, Newton–CG
the data's float32). Printed: fit seconds, test accuracy, Newton and CG iterations,
and the ratios to SVC and between the solvers. Goal (issue 43, item 1): at 5,000
centres, within 0.2 points of SVC and at least 5× faster.

    python benchmarks/reduced_newton_cg.py [--n 100000] [--sizes 500,1000,2000,5000]
        [--C 10] [--omega 1] [--newton-max 5000] [--small]
    (output also written to benchmarks/results/reduced_newton_cg.txt)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C
from reduced import pixels, split


def fit_timed(make: Any, X: np.ndarray, y: np.ndarray, Xte: np.ndarray, yte: np.ndarray
              ) -> tuple[float, float, Any]:
    """Fit seconds, test accuracy and the model."""
    model = make()
    t = time.perf_counter()
    model.fit(X, y)
    seconds = time.perf_counter() - t
    return seconds, float(np.mean(model.predict(Xte) == yte)), model


def run(args: Any) -> None:
    import dask
    from sklearn.svm import SVC

    import bigkern.config
    from bigkern.models.reduced_kernel.reduced import ReducedSVC

    X, y = pixels()
    Xtr, ytr, Xte, yte = split(X, y, args.n, args.test, seed=0)
    gamma = 1.0 / (2.0 * args.omega**2)
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"# {len(X):,} labelled pixels x 8 features; train {len(Xtr):,}, test "
          f"{len(Xte):,}; omega {args.omega} (gamma {gamma:g}); C {args.C} (SVC and "
          f"ReducedSVC, squared hinge); held kernel rows up to {args.held_bytes:.3g} bytes")
    print(f"# load before: {C.load()} (1/5/15 min, 2 cores)", flush=True)
    svc_s, svc_acc, svc = fit_timed(lambda: SVC(C=args.C, gamma=gamma), Xtr, ytr, Xte, yte)
    print(f"sklearn SVC: fit {svc_s:.1f} s, accuracy {100 * svc_acc:.2f}%, "
          f"{svc.support_.size} support vectors (load {C.load()})", flush=True)
    rows = []
    with dask.config.set(scheduler="threads"), \
            bigkern.config.set(in_memory_kernel_bytes=int(args.held_bytes)):
        for solver in ("newton", "newton-cg"):  # compiled loops and imports, untimed
            ReducedSVC(omega=args.omega, C=args.C, loss="squared_hinge", size=50,
                       standardize=False, solver=solver, random_state=0).fit(Xtr[:2000],
                                                                             ytr[:2000])
        for m in sizes:
            got = {}
            for solver in ("newton", "newton-cg"):
                if solver == "newton" and m > args.newton_max:
                    continue
                s, acc, model = fit_timed(
                    lambda solver=solver, m=m: ReducedSVC(
                        omega=args.omega, C=args.C, loss="squared_hinge", size=m,
                        standardize=False, solver=solver, random_state=0),
                    Xtr, ytr, Xte, yte)
                rep = model.fit_report_
                got[solver] = s
                cg = rep.get("cg_iterations")
                rows.append([f"{m:,}", solver, f"{s:.1f}", f"{100 * acc:.2f}%",
                             f"{100 * (acc - svc_acc):+.2f}", f"{svc_s / s:.1f}x",
                             rep["iterations"], "" if cg is None else sum(cg),
                             rep["solver"]])
                print(f"  m {m}, {solver}: {s:.1f} s, {100 * acc:.2f}%, "
                      f"{rep['iterations']} Newton iterations"
                      + ("" if cg is None else f", CG {cg}") + f" (load {C.load()})",
                      flush=True)
            if len(got) == 2:
                rows[-1].append(f"{got['newton'] / got['newton-cg']:.1f}x")
    for r in rows:
        r += [""] * (10 - len(r))
    print()
    C.print_table(["centres", "solver", "fit s", "accuracy", "vs SVC pts", "SVC s / fit s",
                   "Newton its", "CG its", "how", "newton s / newton-cg s"], rows)
    print(f"\nsklearn SVC: {svc_s:.1f} s, {100 * svc_acc:.2f}%. Goal at 5,000 centres: "
          f"within 0.2 points of SVC, >= 5x faster. Measured on a shared 2-core machine "
          f"under load (after: {C.load()}); ratios come from this one run.")


def main(argv: list[str] | None = None) -> None:
    p = C.parser(__doc__.split("\n")[0], "reduced_newton_cg")
    p.add_argument("--n", type=int, default=100_000, help="training rows")
    p.add_argument("--test", type=int, default=50_000, help="scored rows")
    p.add_argument("--sizes", default="500,1000,2000,5000", help="centres m̃")
    p.add_argument("--omega", type=float, default=1.0)
    p.add_argument("--C", type=float, default=10.0, help="C of SVC and of ReducedSVC")
    p.add_argument("--newton-max", type=int, default=5000,
                   help="largest m̃ fitted by finite Newton too")
    p.add_argument("--held-bytes", type=float, default=4.5e9,
                   help="bigkern.in_memory_kernel_bytes during the reduced fits")
    p.add_argument("--out", type=Path, default=None, help="output file")
    args = p.parse_args(argv)
    if args.small:
        args.n, args.test, args.sizes = 3000, 2000, "100,200"

    def body() -> None:
        C.header("ReducedSVC: finite Newton vs Newton-CG vs SVC")
        run(args)

    C.run_teed("reduced_newton_cg", args.small, args.out, body)


if __name__ == "__main__":
    main()
