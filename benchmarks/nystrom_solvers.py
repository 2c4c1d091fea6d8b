"""Nyström kernel ridge: the direct solver against conjugate gradients, side by side.

``NystromKernelRidgeClassifier(solver="direct")`` reads the rows once to
accumulate ``GᵀG`` (n·m̃² flops) and factors the m̃ × m̃ system;
``solver="cg"`` (Falkon-style preconditioned conjugate gradients) reads them
once for the right-hand side and once per iteration for ``Gᵀ(G v)``
(n·m̃·(d + 2) flops plus the kernel block itself). This script fits both, with
the same ``random_state`` (so the same centers), on the same training rows for
every centers count m̃ in ``--sizes`` and every λ in ``--lams``, and reports

* the wall time of ``fit`` of each solver and the ratio ``time(cg) / time(direct)``
  (< 1: CG is faster; > 1: the direct solve is),
* CG's iterations, final relative residual (of the preconditioned system) and
  whether it reached ``tol``,
* the test accuracy of both and their difference (CG − direct, in points: ~0
  when CG converged, since both solve the same system),
* per λ, the crossover: the smallest m̃ at which CG is faster,
* what ``solver="auto"`` (the default) ran, its time against the faster solver's
  and its accuracy against the more accurate one's,
* the peer: scikit-learn ``Nystroem(n_components=1000, gamma=1/(2ω²))`` +
  ``RidgeClassifier(alpha=λ)`` time and accuracy on the same rows (the same
  problem with other, uniformly drawn, centers).

Rows: labelled pixels of the seeded synthetic MISR-like scenes of
``benchmarks/reduced.py`` (``make_scenes(4, (512, 2048), seed=0)``, all eight
variables), a random training split of ``--rows`` and a disjoint test split of
``--test`` rows. Features are robustly standardized once
(:func:`bigkern.features.scaling.robust_standardizer`: median, 10%/90% quantiles,
as bigkern's ``standardize=True`` does from its centers; here from the training
rows, so every model — bigkern's two solvers and scikit-learn — sees the very
same features) and the models get ``standardize=False``. ω is fixed at
``--omega`` (default 1 in those units, the estimators' default and the width
``reduced.py`` uses on these data): the point is the solvers' cost at a fixed
problem, not the width's selection.

In one process on dask's threaded scheduler over numpy input (both cores);
BLAS threads are not pinned (nothing else is).

    python benchmarks/nystrom_solvers.py [--rows 200000] [--test 50000]
        [--sizes 500 1000 2000 4000] [--lams 1e-3 1 100] [--omega 1] [--peer-size 1000]
        [--max-iter 100] [--out FILE]
    ... [--small]   (--rows 20000 --sizes 250 500; output to a temporary file)
    ... --acceptance [--cg-size 3000] [--lams 1]   (issue 43's items 2 and 3 in one run:
        CG with 3,000 centers against the direct 1,000-center fit on 8-feature dask rows,
        with kept and with recomputed kernel blocks; 1,000 centers on 3 features against
        scikit-learn; output to benchmarks/results/nystrom_acceptance.txt)

Output also written to ``benchmarks/results/nystrom_solvers.txt``.
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
from reduced import FEATURES, pixels


def data(n: int, n_test: int, seed: int = 0
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Robustly standardized float32 train / test rows (disjoint; no replacement)."""
    from bigkern.features.scaling import robust_standardizer

    X, y = pixels()
    if n + n_test > len(X):
        raise SystemExit(f"--rows + --test = {n + n_test:,} > {len(X):,} labelled pixels")
    order = np.random.default_rng(seed).permutation(len(X))
    train, test = order[:n], order[n:n + n_test]
    offset, scale = robust_standardizer(X[train])
    Z = ((X - offset) / scale).astype(np.float32)
    return Z[train], y[train], Z[test], y[test]


def fit_one(make: Any, Xtr: np.ndarray, ytr: np.ndarray, Xte: np.ndarray,
            yte: np.ndarray) -> dict[str, Any]:
    """Fit ``make()``: wall seconds, test accuracy, the model and its warnings."""
    model = make()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t = time.perf_counter()
        model.fit(Xtr, ytr)
        seconds = time.perf_counter() - t
    acc = float(np.mean(model.predict(Xte) == yte))
    return {"seconds": seconds, "acc": acc, "model": model,
            "warnings": [f"{w.category.__name__}: {w.message}" for w in caught]}


def run(args: Any) -> None:
    import dask
    from sklearn.kernel_approximation import Nystroem
    from sklearn.linear_model import RidgeClassifier
    from sklearn.pipeline import make_pipeline

    from bigkern import NystromKernelRidgeClassifier

    t_data = time.perf_counter()
    Xtr, ytr, Xte, yte = data(args.rows, args.test)
    t_data = time.perf_counter() - t_data
    gamma = 1.0 / (2.0 * args.omega**2)
    tol = NystromKernelRidgeClassifier().get_params()["tol"]
    print(f"# rows: train {len(Xtr):,}, test {len(Xte):,} x {len(FEATURES)} features "
          f"({', '.join(FEATURES)}; float32), labelled pixels of make_scenes(4, (512, 2048), "
          f"seed=0), robustly standardized from the training rows ({t_data:.1f} s); "
          f"positive class {np.mean(ytr == 1):.1%}")
    print(f"# omega {args.omega} (gamma {gamma:g}), lambdas {args.lams}, sizes m {args.sizes}; "
          f"penalty rkhs, fit_intercept, random_state 0 (both solvers: same centers); CG tol "
          f"{tol:g} (estimator default), max_iter {args.max_iter}")
    print("# dask threaded scheduler in this process, numpy input; BLAS threads not pinned")
    print(f"# flops per pass: direct n*m^2, CG n*m*(d+2) per iteration (d={Xtr.shape[1]}) "
          f"plus the n*m kernel evaluations of every pass", flush=True)

    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    with dask.config.set(scheduler="threads"):
        for lam in args.lams:
            for m in args.sizes:
                got = {}
                for solver in ("direct", "cg", "auto"):
                    got[solver] = fit_one(lambda m=m, lam=lam, solver=solver:
                                          NystromKernelRidgeClassifier(
                                              omega=args.omega, lam=lam, size=m,
                                              standardize=False, random_state=0,
                                              solver=solver, max_iter=args.max_iter),
                                          Xtr, ytr, Xte, yte)
                    for w in got[solver]["warnings"]:
                        notes.append(f"lam {lam:g}, m {m}, {solver}: {w}")
                d, c, a = got["direct"], got["cg"], got["auto"]
                rep = c["model"].fit_report_
                assert np.array_equal(d["model"].expansion_.centers, c["model"].expansion_.centers)
                row = {"lam": lam, "m": m, "direct": d["seconds"], "cg": c["seconds"],
                       "iters": rep["n_iter"], "reads": rep["reads"],
                       "residual": rep["residual"], "converged": rep["converged"],
                       "start_residual": rep.get("start_residual"),
                       "acc_d": d["acc"], "acc_c": c["acc"],
                       "pass_d": d["model"].fit_report_["seconds_pass"],
                       "auto": a["seconds"], "auto_solver": a["model"].solver_,
                       "acc_a": a["acc"]}
                rows.append(row)
                print(f"  lam {lam:g}, m {m}: direct {d['seconds']:.2f} s "
                      f"({100 * d['acc']:.2f}%), cg {c['seconds']:.2f} s "
                      f"({100 * c['acc']:.2f}%, {rep['n_iter']} it, res "
                      f"{rep['residual']:.1e}), auto {a['seconds']:.2f} s "
                      f"({a['model'].solver_}), load {C.load()}", flush=True)

        peer = []
        for lam in args.lams:
            s = fit_one(lambda lam=lam: make_pipeline(
                Nystroem(gamma=gamma, n_components=args.peer_size, random_state=0),
                RidgeClassifier(alpha=lam)), Xtr, ytr, Xte, yte)
            peer.append((lam, s))
            print(f"  sklearn lam {lam:g}, m {args.peer_size}: {s['seconds']:.2f} s "
                  f"({100 * s['acc']:.2f}%)", flush=True)

    print(f"\nNystromKernelRidgeClassifier, {len(Xtr):,} training rows: fit wall seconds "
          f"(the direct solver's one pass in brackets), ratio cg/direct (< 1: CG faster), "
          f"CG iterations / reads of the data / the subset start's residual (what "
          f"solver='auto' checks) / final relative residual, test accuracy")
    C.print_table(
        ["lam", "m", "direct s [pass]", "cg s", "cg/direct", "cg iters", "reads",
         "start residual", "residual", "converged", "acc direct", "acc cg", "cg - direct"],
        [[f"{r['lam']:g}", r["m"], f"{r['direct']:.2f} [{r['pass_d']:.2f}]", f"{r['cg']:.2f}",
          f"{r['cg'] / r['direct']:.2f}", r["iters"], r["reads"],
          "-" if r["start_residual"] is None else f"{r['start_residual']:.1e}",
          f"{r['residual']:.1e}",
          "yes" if r["converged"] else "NO", f"{100 * r['acc_d']:.2f}%",
          f"{100 * r['acc_c']:.2f}%", f"{100 * (r['acc_c'] - r['acc_d']):+.2f} pt"]
         for r in rows])

    print("\nsolver='auto' (the default): the solver it ran, its time against the faster of the "
          "two and its accuracy against the more accurate")
    C.print_table(
        ["lam", "m", "auto ran", "auto s", "auto / faster", "acc auto", "auto - better acc"],
        [[f"{r['lam']:g}", r["m"], r["auto_solver"], f"{r['auto']:.2f}",
          f"{r['auto'] / min(r['direct'], r['cg']):.2f}", f"{100 * r['acc_a']:.2f}%",
          f"{100 * (r['acc_a'] - max(r['acc_d'], r['acc_c'])):+.2f} pt"] for r in rows])

    print("\ncrossover (smallest m at which CG's fit is faster than the direct one):")
    for lam in args.lams:
        mine = [r for r in rows if r["lam"] == lam]
        faster = [r["m"] for r in mine if r["cg"] < r["direct"]]
        verdict = (f"m = {min(faster)}" if faster
                   else f"none up to m = {max(r['m'] for r in mine)}")
        tail = [r["m"] for r in mine if r["m"] > min(faster) and r["cg"] >= r["direct"]] \
            if faster else []
        extra = f" (but not at m = {', '.join(map(str, tail))})" if tail else ""
        print(f"  lam {lam:g}: {verdict}{extra}")

    print(f"\npeer: scikit-learn Nystroem(n_components={args.peer_size}, gamma={gamma:g}, "
          f"random_state=0) + RidgeClassifier(alpha=lam), same rows and features "
          f"(its own uniformly drawn centers)")
    table = []
    for lam, s in peer:
        at = [r for r in rows if r["lam"] == lam and r["m"] == args.peer_size]
        row = [f"{lam:g}", f"{s['seconds']:.2f}", f"{100 * s['acc']:.2f}%"]
        if at:
            r = at[0]
            row += [f"{r['direct']:.2f}", f"{r['cg']:.2f}",
                    f"{100 * (r['acc_d'] - s['acc']):+.2f} pt",
                    f"{100 * (r['acc_c'] - s['acc']):+.2f} pt"]
        else:
            row += ["", "", "", ""]
        table.append(row)
    C.print_table(["lam", "sklearn s", "sklearn acc", f"direct s (m {args.peer_size})",
                   f"cg s (m {args.peer_size})", "direct - sklearn", "cg - sklearn"], table)

    if notes:
        print("\nwarnings raised during the fits:")
        for n in notes:
            print(f"  {n}")


def run_path(args: Any) -> None:
    """``--path``: the λ candidates of one fit, by each solver."""
    import dask

    from bigkern import NystromKernelRidgeClassifier

    Xtr, ytr, Xte, yte = data(args.rows, args.test)
    print(f"# rows: train {len(Xtr):,}, test {len(Xte):,} x {len(FEATURES)} features; omega "
          f"{args.omega}; lam candidates {args.lams}; CG: the estimator's tol, max_iter "
          f"{args.max_iter}; dask threaded scheduler, numpy input", flush=True)
    rows = []
    with dask.config.set(scheduler="threads"):
        for m in args.sizes:
            got = {}
            for solver in ("direct", "cg"):
                got[solver] = fit_one(lambda m=m, solver=solver: NystromKernelRidgeClassifier(
                    omega=args.omega, lam=list(args.lams), size=m, standardize=False,
                    random_state=0, solver=solver, max_iter=args.max_iter),
                    Xtr, ytr, Xte, yte)
            d, c = got["direct"], got["cg"]
            rep = c["model"].fit_report_
            rows.append([m, f"{d['seconds']:.2f}", f"{c['seconds']:.2f}",
                         f"{c['seconds'] / d['seconds']:.2f}", f"{d['model'].lam_:g}",
                         f"{c['model'].lam_:g}", f"{100 * d['acc']:.2f}%",
                         f"{100 * c['acc']:.2f}%", f"{100 * (c['acc'] - d['acc']):+.2f} pt",
                         " ".join(f"{k:g}:{v}" for k, v in rep["path_iterations"].items()),
                         rep["reads"], "; ".join(d["warnings"] + c["warnings"]) or "-"])
            print(f"  m {m}: direct {d['seconds']:.2f} s, cg path {c['seconds']:.2f} s, load "
                  f"{C.load()}", flush=True)
    print(f"\nNystromKernelRidgeClassifier(lam={list(args.lams)}), {len(Xtr):,} rows: the "
          f"direct solver's {NystromKernelRidgeClassifier().n_folds}-fold CV from one read "
          f"against CG's λ path (each solve from the one before, scored on one held-out "
          f"fold, the best refitted on all rows)")
    C.print_table(["m", "direct s", "cg path s", "cg/direct", "lam direct", "lam cg",
                   "acc direct", "acc cg", "cg - direct", "path iterations (lam:its)",
                   "cg reads", "warnings"], rows)


def run_acceptance(args: Any) -> None:
    """``--acceptance``: issue 43's items 2 and 3 side by side in one run (ratios)."""
    import dask
    import dask.array as da
    from sklearn.kernel_approximation import Nystroem
    from sklearn.linear_model import RidgeClassifier
    from sklearn.pipeline import make_pipeline

    from bigkern import NystromKernelRidgeClassifier

    Xtr, ytr, Xte, yte = data(args.rows, args.test)
    lam, omega, gamma = args.lams[0], args.omega, 1.0 / (2.0 * args.omega**2)
    chunk = args.rows // 8
    print(f"# rows: train {len(Xtr):,}, test {len(Xte):,} (float32, robustly standardized); "
          f"omega {omega} (gamma {gamma:g}), lam {lam:g}; dask threaded scheduler in this "
          f"process; dask input: from_array in chunks of {chunk:,} rows", flush=True)

    def ours(X: Any, y: Any, Xt: np.ndarray, repeat: int = 1, **kw: Any) -> dict[str, Any]:
        """The best of ``repeat`` fits (the load of a shared machine varies)."""
        got = min((fit_one(lambda: NystromKernelRidgeClassifier(
            omega=omega, lam=lam, standardize=False, random_state=0, **kw), X, y, Xt, yte)
            for _ in range(repeat)), key=lambda r: r["seconds"])
        rep = got["model"].fit_report_
        got.update(solver=got["model"].solver_, iters=rep.get("n_iter", "-"),
                   input=rep.get("input", "-"),
                   residual=rep.get("residual"), kept=rep.get("kept_blocks"),
                   phases={k[8:]: rep[k] for k in ("seconds_start", "seconds_preconditioner",
                                                   "seconds_pass") if k in rep})
        return got

    def dask_rows(X: np.ndarray) -> tuple[Any, Any]:
        return da.from_array(X, chunks=(chunk, -1)), da.from_array(ytr, chunks=chunk)

    rows = []
    with dask.config.set(scheduler="threads"):
        # warm-up: the compiled loops loaded (or compiled) before anything is timed
        for kw in ({"solver": "direct"}, {"solver": "cg"}):
            ours(Xtr[:5000], ytr[:5000], Xte, size=200, **kw)
            ours(*(a[:5000] for a in dask_rows(Xtr)), Xte, size=200, **kw)
        Xd, yd = dask_rows(Xtr)
        ref = ours(Xd, yd, Xte, size=1000, solver="direct")
        rows.append(("8 features, dask: direct, m 1000", ref))
        rows.append((f"8 features, dask: cg, m {args.cg_size}, max_iter 20",
                     ours(Xd, yd, Xte, size=args.cg_size, solver="cg", max_iter=20)))
        with dask.config.set({"bigkern.kept_kernel_share": 0.0}):
            rows.append((f"8 features, dask: cg, m {args.cg_size}, max_iter 20, blocks "
                         f"recomputed", ours(Xd, yd, Xte, size=args.cg_size, solver="cg",
                                             max_iter=20)))
        print(f"  item 2 done, load {C.load()}", flush=True)
        X3, Xt3 = np.ascontiguousarray(Xtr[:, :3]), np.ascontiguousarray(Xte[:, :3])
        peer_s, peer_acc = np.inf, 0.0
        for _ in range(0 if args.item2_only else args.repeat):
            t = time.perf_counter()
            peer = make_pipeline(Nystroem(gamma=gamma, n_components=1000, random_state=0),
                                 RidgeClassifier(alpha=lam)).fit(X3, ytr)
            peer_s = min(peer_s, time.perf_counter() - t)
            peer_acc = float(np.mean(peer.predict(Xt3) == yte))
        small = []
        for name, X, y, kw in (
                ("3 features, numpy: auto, m 1000", X3, ytr, {}),
                ("3 features, numpy: direct, m 1000", X3, ytr, {"solver": "direct"}),
                ("3 features, dask: auto, m 1000", *dask_rows(X3), {}),
                ("3 features, dask: direct, m 1000", *dask_rows(X3), {"solver": "direct"})):
            if args.item2_only:
                break
            small.append((name, ours(X, y, Xt3, size=1000, repeat=args.repeat, **kw)))
        with dask.config.set({"bigkern.nystrom_hold_bytes": 2**28}):
            if not args.item2_only:
                small.append(("3 features, dask, held in memory: auto, m 1000",
                              ours(*dask_rows(X3), Xt3, size=1000, repeat=args.repeat)))
        print(f"  item 3 done, load {C.load()}", flush=True)
    print(f"\nitem 2: Nyström CG with m {args.cg_size} against the direct fit with m 1000, "
          f"{len(Xtr):,} x 8 dask rows (x reference: time / the direct fit's; goal <= 2, "
          f"accuracy at least the direct fit's)")
    C.print_table(
        ["fit", "s", "x reference", "accuracy", "vs reference", "solver", "CG iters",
         "residual", "kept chunks", "phases s"],
        [[name, f"{r['seconds']:.2f}", f"{r['seconds'] / ref['seconds']:.2f}",
          f"{100 * r['acc']:.2f}%", f"{100 * (r['acc'] - ref['acc']):+.2f} pt", r["solver"],
          r["iters"], "-" if r["residual"] is None else f"{r['residual']:.1e}",
          "-" if not r["kept"] else f"{r['kept']['kept_chunks']}/{r['kept']['chunks']}",
          ", ".join(f"{k} {v:.1f}" for k, v in r["phases"].items()) or "-"]
         for name, r in rows])
    if args.item2_only:
        return
    print(f"\nitem 3: 1,000 centers on {len(Xtr):,} x 3 rows (NDAI, SD, CORR) against "
          f"scikit-learn Nystroem(n_components=1000) + RidgeClassifier(alpha={lam:g}): "
          f"{peer_s:.2f} s, {100 * peer_acc:.2f}% (goal: >= 5x, within 0.2 points; best of "
          f"{args.repeat} fits each)")
    C.print_table(
        ["fit", "s", "sklearn / bigkern", "accuracy", "vs sklearn", "input", "solver",
         "CG iters", "residual", "kept chunks"],
        [[name, f"{r['seconds']:.2f}", f"{peer_s / r['seconds']:.1f}x",
          f"{100 * r['acc']:.2f}%", f"{100 * (r['acc'] - peer_acc):+.2f} pt", r["input"],
          r["solver"],
          r["iters"], "-" if r["residual"] is None else f"{r['residual']:.1e}",
          "-" if not r["kept"] else f"{r['kept']['kept_chunks']}/{r['kept']['chunks']}"]
         for name, r in small])


def main(argv: list[str] | None = None) -> None:
    p = C.parser(__doc__.split("\n")[0], "nystrom_solvers")
    p.add_argument("--rows", type=int, default=200_000, help="training rows")
    p.add_argument("--test", type=int, default=50_000, help="test rows (disjoint)")
    p.add_argument("--sizes", type=int, nargs="+", default=[500, 1000, 2000, 4000],
                   help="centers m")
    p.add_argument("--lams", type=float, nargs="+", default=[1e-3, 1.0, 100.0],
                   help="lambda (RidgeClassifier's alpha: a penalty on a sum of squares)")
    p.add_argument("--omega", type=float, default=1.0, help="Gaussian width, standardized units")
    p.add_argument("--peer-size", type=int, default=1000, help="m of scikit-learn's Nystroem")
    p.add_argument("--max-iter", type=int, default=100, help="CG iterations at most")
    p.add_argument("--path", action="store_true",
                   help="instead: every --lams as candidates of one fit, direct (n_folds-fold "
                        "CV from one read) against CG (a warm-started λ path on one "
                        "held-out fold), at each --sizes")
    p.add_argument("--acceptance", action="store_true",
                   help="instead: issue 43's items 2 and 3 in one run (CG with --cg-size "
                        "centers against the direct 1,000-center fit on dask rows; 1,000 "
                        "centers on 3 features against scikit-learn), at the first --lams")
    p.add_argument("--cg-size", type=int, default=3000, help="centers of --acceptance's CG")
    p.add_argument("--item2-only", action="store_true",
                   help="--acceptance: item 2 only (CG against the direct fit)")
    p.add_argument("--repeat", type=int, default=2,
                   help="--acceptance's item 3: best of this many fits of each")
    p.add_argument("--out", type=Path, default=None, help="output file")
    args = p.parse_args(argv)
    if args.small:
        args.rows, args.test, args.sizes = 20_000, 10_000, [250, 500]
        args.peer_size = 500

    p_path = args.path
    if args.acceptance and args.lams == p.get_default("lams"):
        args.lams = [1.0]
    if args.small and p_path:
        args.sizes = [250]

    def body() -> None:
        C.header("Nystrom kernel ridge: direct solver vs conjugate gradients")
        if args.acceptance:
            run_acceptance(args)
        elif p_path:
            run_path(args)
        else:
            run(args)

    name = "nystrom_acceptance" if args.acceptance else "nystrom_solvers"
    C.run_teed(name, args.small, args.out, body)


if __name__ == "__main__":
    main()
