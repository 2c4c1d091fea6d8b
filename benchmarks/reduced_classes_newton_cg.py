"""k classes of ReducedSVC by the lockstep finite Newton method and by Newton–CG (issues 42, 43).

Rows: ``../shared/data/classification/pendigits.csv`` (10 classes, 16 features), the
first of 5 stratified folds (seed 0): 8,793 training rows, 2,199 scored. For each
number of centres m̃ (``--sizes``) and loss (``--losses``), ``ReducedSVC(omega, C)``
is fitted on the numpy rows (kernel rows held in memory) with ``solver="newton"`` (the
k one-vs-rest problems in lockstep: a Hessian ``n·m̃²`` per class still running, each
pass) and ``solver="newton-cg"`` (the problems side by side on the cores, each Newton step by
conjugate gradients over its own margin's rows), and it prints what ``solver="auto"``
takes (its ``fit_report_["solver"]``, from a fit of one Newton step). BLAS on one
thread, as ``benchmarks/classes.py`` times its models (the solvers' own threads use
every core). Printed: fit seconds (best of
``--repeat``), test accuracy, Newton and CG iterations, the ratio newton / newton-cg
and the largest difference of the two models' decision values.

    python benchmarks/reduced_classes_newton_cg.py [--sizes 500,1000,2000]
        [--losses squared_hinge,smooth_hinge] [--repeat 1] [--small]
    (output also written to benchmarks/results/reduced_classes_newton_cg.txt)
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

NAME = "reduced_classes_newton_cg"


def rows(small: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Training and scored rows of pendigits' first outer fold."""
    from sklearn.model_selection import StratifiedKFold

    X, y = C.pendigits()
    if small:
        X, y = X[:2500], y[:2500]
    tr, te = next(iter(StratifiedKFold(5, shuffle=True, random_state=0).split(X, y)))
    return X[tr], y[tr], X[te], y[te]


def fit(X: np.ndarray, y: np.ndarray, repeat: int, **params: Any) -> tuple[float, Any]:
    """The best fit seconds of ``repeat`` and the last model (warnings silenced: the
    progress line says whether each fit converged)."""
    from bigkern import ReducedSVC

    best, model = np.inf, None
    for _ in range(repeat):
        model = ReducedSVC(**params)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = time.perf_counter()
            model.fit(X, y)
            best = min(best, time.perf_counter() - t)
    return best, model


def run(args: Any) -> None:
    from bigkern.cluster.compute import blas_controller

    Xtr, ytr, Xte, yte = rows(args.small)
    sizes = [int(s) for s in args.sizes.split(",")]
    losses = args.losses.split(",")
    print(f"# pendigits fold 1 of 5: train {len(Xtr):,}, test {len(Xte):,} rows x "
          f"{Xtr.shape[1]}, {len(np.unique(ytr))} classes; omega {args.omega}, C {args.C}; "
          f"one BLAS thread; best of {args.repeat}", flush=True)
    table = []
    with blas_controller().limit(limits=1, user_api="blas"):
        fit(Xtr[:1000], ytr[:1000], 1, size=50, solver="newton-cg")  # compiled loops loaded
        for loss in losses:
            for m in sizes:
                kw = {"omega": args.omega, "C": args.C, "size": m, "loss": loss,
                      "random_state": 0}
                got = {s: fit(Xtr, ytr, args.repeat, solver=s, **kw)
                       for s in ("newton", "newton-cg")}
                # what "auto" takes depends on the centres, classes, loss and where the
                # rows are, not on the iterations: one Newton step tells
                auto = fit(Xtr, ytr, 1, solver="auto", max_iter=1, **kw)[1].fit_report_[
                    "solver"].split(",")[0]
                diff = float(np.abs(got["newton"][1].decision_function(Xte)
                                    - got["newton-cg"][1].decision_function(Xte)).max())
                for solver, (seconds, model) in got.items():
                    rep = model.fit_report_
                    acc = float(np.mean(model.predict(Xte) == yte))
                    cg = sum(rep.get("cg_iterations", [])) if solver == "newton-cg" else ""
                    print(f"  {loss} m {m} {solver}: {seconds:.2f} s, {100 * acc:.2f}%, "
                          f"{rep['iterations']} Newton iterations, converged "
                          f"{rep['converged']} (load {C.load()})",
                          flush=True)
                    table.append([loss, m, solver, f"{seconds:.2f}", f"{100 * acc:.2f}%",
                                  rep["iterations"], cg,
                                  f"{got['newton'][0] / seconds:.2f}x"
                                  if solver == "newton-cg" else "",
                                  f"{diff:.1e}" if solver == "newton-cg" else "",
                                  auto if solver == "newton-cg" else ""])
    print()
    C.print_table(["loss", "centres", "solver", "fit s", "accuracy", "Newton its",
                   "CG its (sum)", "newton s / newton-cg s", "max |Δ decision|",
                   "auto takes"], table, "lrlrrrrrrl")


def main() -> None:
    p = C.parser(__doc__.splitlines()[0], NAME)
    p.add_argument("--sizes", default="500,1000,2000")
    p.add_argument("--losses", default="squared_hinge,smooth_hinge")
    p.add_argument("--omega", type=float, default=2.0)
    p.add_argument("--C", type=float, default=10.0)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--out", type=Path, default=None, help="output file")
    args = p.parse_args()
    if args.small:
        args.sizes, args.losses = "100", "squared_hinge"

    def body() -> None:
        C.header("ReducedSVC, k classes: lockstep finite Newton vs Newton-CG")
        run(args)

    C.run_teed(NAME, args.small, args.out, body)


if __name__ == "__main__":
    main()
