"""Small-input latency (issue 12): a warm ``BinnedSVC().fit`` on 50,000 in-memory rows × 3.

The rows are the first 50,000 labelled pixels (features NDAI, SD, CORR; labels
±1) of ``make_scenes(1, (384, 512), seed=0, radiances=False)``, held in numpy.
In one warm process with no distributed client (dask's local scheduler, as a
user fitting in a notebook without a cluster), it times, best of ``--repeat``
after ``--warmup`` calls:

a. ``BinnedSVC().fit(X, y)`` — the in-memory binning path (numpy input of at
   most ``bigkern.in_memory_rows`` rows), then the solve on the bins;
b. the same fit through the dask plan (``bigkern.in_memory_rows = 0``), as
   every fit ran before issue 12;
c. scikit-learn ``SVC().fit(X, y)`` on the same rows (best of ``--svc-repeat``,
   after a warm-up fit on 1,000 rows);

and ``percentile_bins`` alone on both paths, at 50,000 rows and at 10^6 rows
(the ``in_memory_rows`` default), the 10^6 rows taken from
``make_scenes(4, (512, 2048), seed=0, radiances=False)``. It checks that both
paths give the same bins (``xarray.testing.assert_identical`` but for the
plan attrs) and the same model, and ends with the goal line
"≤ 20 ms: MET/NOT MET" for (a) (issues 12 and 44).

    python benchmarks/small_fit.py [--repeat N] [--svc-repeat N] [--small] [--profile]

Output is also written to ``benchmarks/results/small_fit.txt`` (``--out``;
with ``--small``, the temporary directory).
"""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C

N_ROWS = 50_000
N_LARGE = 1_000_000
GOAL_SECONDS = 0.020
PLAN_ATTRS = ("plan", "passes", "n_kept")


def scene_rows(n: int, n_scenes: int, shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """The first ``n`` labelled pixels with finite features: X (n, 3) float32, y (n,) int8."""
    from bigkern.datasets import make_scenes

    ds = make_scenes(n_scenes, shape, seed=0, radiances=False).load()
    X = np.stack([ds[v].values.ravel() for v in ("NDAI", "SD", "CORR")], axis=1)
    y = ds["label"].values.ravel()
    use = np.flatnonzero((y != 0) & np.isfinite(X).all(axis=1))
    if len(use) < n:
        raise SystemExit(f"only {len(use)} labelled pixels, {n} wanted")
    return np.ascontiguousarray(X[use[:n]]), y[use[:n]]


def ms(s: float) -> str:
    return f"{s * 1e3:.1f}"


def without_plan(ds: Any) -> Any:
    ds = ds.copy()
    for key in PLAN_ATTRS:
        ds.attrs.pop(key, None)
    return ds


def run(args: Any) -> None:
    import xarray as xr
    from sklearn.svm import SVC

    import bigkern
    from bigkern.models import BinnedSVC
    from bigkern.reduce import percentile_bins

    C.header(f"small-input latency (issue 12): warm BinnedSVC().fit on {N_ROWS:,} in-memory "
             "rows x 3 features vs scikit-learn SVC().fit")
    print("# no distributed client: dask's local (threaded) scheduler for the dask path; "
          f"bigkern.in_memory_rows = {bigkern.config.get('in_memory_rows'):,}")
    X, y = scene_rows(N_ROWS, 1, (384, 512))
    print(f"# rows: first {N_ROWS:,} labelled pixels of make_scenes(1, (384, 512), seed=0), "
          f"{X.dtype}, {int((y > 0).sum()):,} cloud / {int((y < 0).sum()):,} clear")
    rep, warm = args.repeat, args.warmup
    print(f"# bigkern: best of {rep} after {warm} warm-up calls; scikit-learn: best of "
          f"{args.svc_repeat} after a warm-up fit on 1,000 rows")
    sys.stdout.flush()
    rows = []

    # a. the in-memory path
    fit_mem, med_mem, model_mem = C.best_of(lambda: BinnedSVC().fit(X, y), rep, warm)
    report = model_mem.fit_report_
    rows.append([f"a. BinnedSVC().fit, in memory (plan {report['plan']!r}, "
                 f"{report['passes']} read)", ms(fit_mem), ms(med_mem)])
    # b. the dask plan
    with bigkern.config.set(in_memory_rows=0):
        fit_dask, med_dask, model_dask = C.best_of(lambda: BinnedSVC().fit(X, y), rep, warm)
    report_dask = model_dask.fit_report_
    rows.append([f"b. BinnedSVC().fit, dask plan (plan {report_dask['plan']!r}, "
                 f"{report_dask['passes']} reads)", ms(fit_dask), ms(med_dask)])

    # the binning alone, and the solve on the bins
    codes = (y > 0).astype(np.int8)
    used = np.ones(len(y), dtype=bool)

    def bins(**kw: Any) -> Any:
        return percentile_bins(X, codes, mask=used, classes=(0, 1), **kw)

    pb_mem, pb_mem_med, b_mem = C.best_of(bins, rep, warm)
    pb_dask, pb_dask_med, b_dask = C.best_of(lambda: bins(plan="fused-or-three-pass"), rep, warm)
    solve, solve_med, _ = C.best_of(lambda: BinnedSVC().fit_bins(b_mem), rep, warm)
    rows.append(["   percentile_bins alone, in memory", ms(pb_mem), ms(pb_mem_med)])
    rows.append(["   percentile_bins alone, dask plan", ms(pb_dask), ms(pb_dask_med)])
    rows.append([f"   BinnedSVC().fit_bins (solve on {b_mem.sizes['bin']} bins)", ms(solve),
                 ms(solve_med)])

    # c. scikit-learn
    SVC().fit(X[:1000], y[:1000])
    svc, svc_med, _ = C.best_of(lambda: SVC().fit(X, y), args.svc_repeat, 0)
    rows.append([f"c. scikit-learn SVC().fit on the same {N_ROWS:,} rows", ms(svc), ms(svc_med)])
    print()
    C.print_table(["step", "best ms", "median ms"], rows)

    # same bins, same model
    xr.testing.assert_identical(without_plan(b_mem), without_plan(b_dask))
    ok = np.array_equal(model_mem.decision_function(X), model_dask.decision_function(X))
    print(f"\nbins of both paths identical but for the attrs {PLAN_ATTRS} "
          f"(in memory: {[b_mem.attrs[k] for k in PLAN_ATTRS]}, dask: "
          f"{[b_dask.attrs[k] for k in PLAN_ATTRS]}); decision functions of the two models "
          f"{'bit-identical' if ok else 'DIFFERENT'}")
    if not ok:
        raise SystemExit("the two paths gave different models")

    # the threshold: percentile_bins alone at 10^6 rows
    if not args.small:
        XL, yL = scene_rows(N_LARGE, 4, (512, 2048))
        codesL = (yL > 0).astype(np.int8)

        def large(**kw: Any) -> Any:
            return percentile_bins(XL, codesL, classes=(0, 1), **kw)

        lm, lm_med, l_mem = C.best_of(large, args.large_repeat, 1)
        ld, ld_med, l_dask = C.best_of(lambda: large(plan="fused-or-three-pass"),
                                       args.large_repeat, 1)
        xr.testing.assert_identical(without_plan(l_mem), without_plan(l_dask))
        print(f"\npercentile_bins on {N_LARGE:,} rows x 3 (the in_memory_rows default; first "
              f"labelled pixels of make_scenes(4, (512, 2048), seed=0)), best of "
              f"{args.large_repeat} after 1 warm-up; bins identical but for the plan attrs:")
        C.print_table(["path", "best ms", "median ms"],
                      [["in memory", ms(lm), ms(lm_med)],
                       [f"dask plan ({l_dask.attrs['plan']})", ms(ld), ms(ld_med)]])

    print(f"\nBinnedSVC().fit on {N_ROWS:,} x 3 in-memory rows, warm: {ms(fit_mem)} ms "
          f"(dask plan {ms(fit_dask)} ms: {fit_dask / fit_mem:.1f}x faster in memory); "
          f"scikit-learn SVC().fit {ms(svc)} ms; ratio SVC / BinnedSVC = {svc / fit_mem:,.0f}x")
    goal = "MET" if fit_mem <= GOAL_SECONDS else "NOT MET"
    print(f"goal (issue 12, acceptance 5; issue 44, acceptance 3): <= "
          f"{GOAL_SECONDS * 1e3:.0f} ms: {goal} ({ms(fit_mem)} ms)")

    if args.profile:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.enable()
        for _ in range(rep):
            BinnedSVC().fit(X, y)
        prof.disable()
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(25)
        text = buf.getvalue()
        print(f"\ncProfile of {rep} warm in-memory fits, top 25 by cumulative time:")
        print("\n".join("    " + ln for ln in text[text.find("   ncalls"):].splitlines()
                        if ln.strip()))


def main() -> None:
    import argparse

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=50, help="timed bigkern calls (default 50)")
    p.add_argument("--warmup", type=int, default=5, help="untimed bigkern calls first (5)")
    p.add_argument("--svc-repeat", type=int, default=2,
                   help="timed scikit-learn fits (default 2; ~13 s each here)")
    p.add_argument("--large-repeat", type=int, default=5,
                   help="timed percentile_bins calls at 10^6 rows (default 5)")
    p.add_argument("--small", action="store_true",
                   help="smoke run: 10 bigkern calls, 1 scikit-learn fit, no 10^6-row table")
    p.add_argument("--profile", action="store_true",
                   help="also print a cProfile of the warm in-memory fits")
    p.add_argument("--out", type=Path, default=None,
                   help="where to write what is printed (default "
                        "benchmarks/results/small_fit.txt; with --small, a temporary file)")
    args = p.parse_args()
    if args.small:
        args.repeat, args.warmup, args.svc_repeat = 10, 2, 1
    C.run_teed("small_fit", args.small, args.out, lambda: run(args))


if __name__ == "__main__":
    main()
