"""Nyström at many centers out of core (issue 26, acceptance 1): m̃ = 5,000 by CG from zarr.

Rows are labelled pixels of the seeded MISR-like scenes of ``benchmarks/reduced.py``
(all eight variables, standardized by scikit-learn's ``StandardScaler`` on the
training rows), written to a zarr store of ``--n`` rows (default 10⁶) in chunks of
``--chunk`` rows, and fitted from that store on a LocalCluster of 2 worker
processes (1 thread each), as a user on a cluster would:

* ``NystromKernelRidgeClassifier(size=1000, solver="direct")``: one read
  accumulating ``GᵀG`` (n·m̃² flops), then a factorization; the reference;
* ``NystromKernelRidgeClassifier(size=5000, solver="cg", cg_start="zero")``:
  Falkon-style preconditioned conjugate gradients from zero, one read of
  ``Gᵀ(G v)`` (n·m̃·(d + 2) flops) per iteration, at most ``--max-iter``
  iterations or ``--tol``;
* the same with ``cg_start="subset"`` (the default): started from the solution
  on a random subset of 10 rows per center held in memory, then at most
  ``--subset-max-iter`` iterations over all rows;
* with ``--start-sweep 5x20,20x20``: the same again with other rows per center and
  iterations on the subset (the module constants ``START_ROWS_PER_CENTER`` and
  ``START_MAX_ITER`` of ``bigkern.models.reduced_kernel.nystrom_cg_start``), to choose them;
* the same at ``size=5000`` with the direct solver, when ``--direct-5000``
  (n·m̃² = 2.5·10¹³ flops at 10⁶ rows: tens of minutes here).

Each fit's wall time, peak memory (client + workers, sampled every 0.2 s), test
accuracy on ``--test`` held-out rows, CG iterations and residual are printed.
The peer, scikit-learn's ``Nystroem(n_components=5000)`` + ``RidgeClassifier``,
needs an n × 5,000 float64 feature matrix: the script says what that takes at
``--n`` rows against this machine's memory, and fits it at ``--peer-n`` rows.

    python benchmarks/nystrom_scale.py [--n 1000000] [--lam 1] [--max-iter 10]
        [--subset-max-iter 4] [--small]
"""

from __future__ import annotations

import shutil
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C
from reduced import pixels, split


def _store(path: Path, X: np.ndarray, y: np.ndarray, chunk: int) -> None:
    import dask.array as da

    if path.exists():
        shutil.rmtree(path)
    da.to_zarr(da.from_array(X, chunks=(chunk, -1)), str(path), component="X")
    da.to_zarr(da.from_array(y.astype(np.int8), chunks=chunk), str(path), component="y")


def _fit(bench: Any, name: str, model: Any, Xd: Any, yd: Any, n: int,
         Xte: np.ndarray, yte: np.ndarray) -> dict[str, Any]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with bench.stage(name, items=n) as st:
            model.fit(Xd, yd)
    acc = float(np.mean(model.predict(Xte) == yte))
    rep = model.fit_report_
    return {"name": name, "seconds": st.seconds, "peak": st.peak, "acc": acc,
            "iters": (f"{rep['start_iterations']} + {rep['n_iter']}"
                      if rep.get("start") == "subset" else rep.get("n_iter", "-")),
            "residual": rep.get("residual"),
            "reads": rep["reads"], "warnings": [str(w.message) for w in caught],
            "start": rep.get("start"),
            "phases": {k: rep[f"seconds_{k}"] for k in ("start", "pass", "total")
                       if f"seconds_{k}" in rep}}


def _swept_start(bench: Any, spec: str, args: Any, common: dict[str, Any], Xd: Any, yd: Any,
                 Xte: np.ndarray, yte: np.ndarray) -> dict[str, Any]:
    """The subset-started CG fit with ``spec`` = "ROWSxITERS" for the start's constants."""
    import bigkern.models.reduced_kernel.nystrom_cg_start as cg
    from bigkern import NystromKernelRidgeClassifier

    per_center, iters = (int(v) for v in spec.split("x"))
    saved = cg.START_ROWS_PER_CENTER, cg.START_MAX_ITER
    cg.START_ROWS_PER_CENTER, cg.START_MAX_ITER = per_center, iters
    try:
        return _fit(bench, f"cg, start {per_center} rows/center x {iters} its",
                    NystromKernelRidgeClassifier(size=args.size, solver="cg", tol=args.tol,
                                                 max_iter=args.subset_max_iter, **common),
                    Xd, yd, args.n, Xte, yte)
    finally:
        cg.START_ROWS_PER_CENTER, cg.START_MAX_ITER = saved


def run(args: Any) -> None:
    import dask.array as da
    import psutil

    from bigkern import NystromKernelRidgeClassifier

    X, y = pixels()
    Xtr, ytr, Xte, yte = split(X, y, args.n, args.test, seed=1)
    d = X.shape[1]
    gamma = 1.0 / (2.0 * args.omega**2)
    print(f"# train {len(Xtr):,} rows (of {len(X):,} labelled pixels, with replacement past "
          f"them), test {len(Xte):,} x {d} features (float32); omega {args.omega} (gamma "
          f"{gamma:g}), lam {args.lam}; CG tol {args.tol:g}, max_iter {args.max_iter} from zero, "
          f"{args.subset_max_iter} from a subset")
    path = args.workdir / f"nystrom-scale-{args.n}.zarr"
    path.parent.mkdir(parents=True, exist_ok=True)
    _store(path, Xtr, ytr, args.chunk)
    print(f"# store {path}: {C.dir_size(path) / C.GB:.2f} GB, chunks of {args.chunk:,} rows")
    rows = []
    with C.benched_cluster() as (_client, bench):
        Xd = da.from_zarr(str(path), component="X")
        yd = da.from_zarr(str(path), component="y")
        common = {"omega": args.omega, "lam": args.lam, "standardize": False, "random_state": 0}
        rows.append(_fit(bench, f"direct, m {args.small_size}",
                         NystromKernelRidgeClassifier(size=args.small_size, solver="direct",
                                                      **common),
                         Xd, yd, args.n, Xte, yte))
        if not args.no_zero:
            rows.append(_fit(bench, f"cg from zero, m {args.size}",
                             NystromKernelRidgeClassifier(size=args.size, solver="cg",
                                                          cg_start="zero", tol=args.tol,
                                                          max_iter=args.max_iter, **common),
                             Xd, yd, args.n, Xte, yte))
        rows.append(_fit(bench, f"cg from a subset, m {args.size}",
                         NystromKernelRidgeClassifier(size=args.size, solver="cg",
                                                      tol=args.tol,
                                                      max_iter=args.subset_max_iter,
                                                      **common),
                         Xd, yd, args.n, Xte, yte))
        for spec in filter(None, args.start_sweep.split(",")):
            rows.append(_swept_start(bench, spec, args, common, Xd, yd, Xte, yte))
        if args.direct_large:
            rows.append(_fit(bench, f"direct, m {args.size}",
                             NystromKernelRidgeClassifier(size=args.size, solver="direct",
                                                          **common),
                             Xd, yd, args.n, Xte, yte))
    shutil.rmtree(path)
    ref = rows[0]
    C.print_table(
        ["fit", "s", "x reference", "peak GB", "accuracy", "vs reference", "CG iters",
         "residual", "reads"],
        [[r["name"], f"{r['seconds']:.1f}", f"{r['seconds'] / ref['seconds']:.2f}",
          f"{r['peak'] / C.GB:.2f}", f"{100 * r['acc']:.2f}%",
          f"{100 * (r['acc'] - ref['acc']):+.2f} pt", r["iters"],
          "-" if r["residual"] is None else f"{r['residual']:.1e}", r["reads"]]
         for r in rows])
    for r in rows:
        for w in r["warnings"]:
            print(f"  warning in '{r['name']}': {w}")
    for r in rows:
        if r["start"] == "subset":
            ph = r["phases"]
            print(f"  phases of '{r['name']}': subset start (gather, preconditioner, solve) "
                  f"{ph['start']:.1f} s, right-hand side read {ph['pass']:.1f} s, all "
                  f"{ph['total']:.1f} s")
    cg = rows[1 if args.no_zero else 2]
    print("(CG iters: in memory on the subset + over all rows; residual: relative, of the "
          "preconditioned system over all rows)")
    print(f"goal (acceptance 1, the default start): m {args.size} by CG from zarr with "
          f"peak < 4 GB: "
          f"{'MET' if cg['peak'] < 4 * C.GB else 'MISSED'} ({cg['peak'] / C.GB:.2f} GB); "
          f"accuracy >= the m {args.small_size} direct fit's: "
          f"{'MET' if cg['acc'] >= ref['acc'] else 'MISSED'} "
          f"({100 * (cg['acc'] - ref['acc']):+.2f} pt); time <= 2x: "
          f"{'MET' if cg['seconds'] <= 2 * ref['seconds'] else 'MISSED'} "
          f"({cg['seconds'] / ref['seconds']:.2f}x)")
    if not args.no_peer:
        _peer(args, Xtr, ytr, Xte, yte, gamma, psutil.virtual_memory().total)


def _peer(args: Any, Xtr: np.ndarray, ytr: np.ndarray, Xte: np.ndarray, yte: np.ndarray,
          gamma: float, total: int) -> None:
    """scikit-learn's Nystroem + RidgeClassifier at the same m̃: what it needs, what it does."""
    from sklearn.kernel_approximation import Nystroem
    from sklearn.linear_model import RidgeClassifier

    need = args.n * args.size * 8
    print(f"\npeer: scikit-learn Nystroem(n_components={args.size}) + RidgeClassifier("
          f"alpha={args.lam}) at {args.n:,} rows needs the {args.n:,} x {args.size:,} float64 "
          f"features: {need / C.GB:.1f} GB, against {total / C.GB:.1f} GB of memory here "
          f"({'not run' if need > total / 2 else 'fits'}); fitted on the first "
          f"{args.peer_n:,} training rows instead ({args.peer_n * args.size * 8 / C.GB:.1f} GB "
          f"of features)")
    t = time.perf_counter()
    features = Nystroem(gamma=gamma, n_components=args.size, random_state=0)
    Z = features.fit_transform(Xtr[:args.peer_n])
    model = RidgeClassifier(alpha=args.lam).fit(Z, ytr[:args.peer_n])
    seconds = time.perf_counter() - t
    del Z
    acc = float(np.mean(model.predict(features.transform(Xte)) == yte))
    print(f"  scikit-learn at {args.peer_n:,} rows: {seconds:.1f} s, accuracy {100 * acc:.2f}%")


def main(argv: list[str] | None = None) -> None:
    p = C.parser(__doc__.split("\n")[0], "nystrom_scale")
    p.add_argument("--n", type=int, default=1_000_000, help="training rows")
    p.add_argument("--test", type=int, default=100_000, help="held-out rows")
    p.add_argument("--chunk", type=int, default=125_000, help="rows per zarr chunk")
    p.add_argument("--size", type=int, default=5000, help="centers of the CG fit")
    p.add_argument("--small-size", type=int, default=1000, help="centers of the reference")
    p.add_argument("--omega", type=float, default=1.0)
    p.add_argument("--lam", type=float, default=1.0, help="RidgeClassifier's alpha")
    p.add_argument("--tol", type=float, default=1e-7, help="CG's relative residual")
    p.add_argument("--max-iter", type=int, default=10, help="CG iterations at most (from 0)")
    p.add_argument("--subset-max-iter", type=int, default=4,
                   help="CG iterations over all rows at most, from the subset's solution")
    p.add_argument("--direct-5000", dest="direct_large", action="store_true",
                   help="also fit the large size with the direct solver")
    p.add_argument("--start-sweep", default="",
                   help="other subset starts, e.g. 5x20,20x20 (rows per center x iterations)")
    p.add_argument("--no-zero", action="store_true", help="skip the CG fit from zero")
    p.add_argument("--no-peer", action="store_true", help="skip scikit-learn's fit")
    p.add_argument("--peer-n", type=int, default=100_000, help="rows of scikit-learn's fit")
    p.add_argument("--out", type=Path, default=None, help="output file")
    args = p.parse_args(argv)
    if args.small:
        args.n, args.test, args.chunk, args.size, args.small_size = 40_000, 10_000, 10_000, 500, 100
        args.peer_n = 10_000

    def body() -> None:
        C.header("Nystrom kernel ridge at many centers, out of core: CG vs the direct solve")
        run(args)

    C.run_teed("nystrom_scale", args.small, args.out, body)


if __name__ == "__main__":
    main()
