"""Which σ for a feature whose 10 % and 90 % quantiles coincide?

The one robust scale (:mod:`bigkern.features.scaling`) is undefined for a feature
with q10 = q90: a rare category's one-hot column, a feature that is mostly zero.
This benchmark scores the models' default scaling with five fall-backs for such
features, the rest of the scaling unchanged (median, (q90 − q10)/2.563, clip ±5):

* ``one``: σ = 1 (bigkern until 2026-11-28),
* ``range``: σ = (max − min)/2.563, what the quantiles give a 0/1 column whose rarer
  value is more common than 10 % (bigkern's rule since),
* ``std``: the standard deviation (rare categories weigh up, as under z-scores),
* ``meandev``: the mean absolute deviation from the median times √(π/2) (the
  standard deviation for normal data),
* ``offspike``: the median distance from the median of the values away from it, over
  2.563 (the range's σ for a two-valued feature; a few wild values do not move it).

Each fall-back is set as the models' standardizer for its run (the
``bigkern.standardizer`` setting, in place of
``bigkern.features.scaling.robust_standardizer``); the scores are
``benchmarks/default_scaling.py``'s (its sets, tuning and outer CV with repeats, the
``default`` candidate only), on the sets that have such features: mushroom,
ionosphere, Boston, auto-mpg, elevators and ailerons (at most 1,000 rows each).

    python benchmarks/scaling_fallbacks.py [--data /work/shared/data] [--repeats 3]
        [--fallbacks one range std meandev offspike] [--sets NAME ...] [--models NAME ...]
    ... [--small]   (1 repeat, 2 sets, Nyström only; output to a temporary file)

Output also written to ``benchmarks/results/scaling_fallbacks.txt``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bigkern.features.scaling import ROBUST_QUANTILES, Z90, robust_standardizer

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C
import default_scaling as D

NAME = "scaling_fallbacks"
SETS = ("mushroom", "ionosphere", "boston_housing", "autoMpg", "elevators", "ailerons")
FALLBACKS = ("one", "range", "std", "meandev", "offspike")


def fallback_standardizer(kind: str) -> Callable[[Any], tuple[np.ndarray, np.ndarray]]:
    """A robust standardizer whose σ where q10 = q90 is the ``kind`` fall-back."""

    def standardizer(rows: Any) -> tuple[np.ndarray, np.ndarray]:
        rows = np.asarray(rows, dtype=np.float64)
        q10, q50, q90 = np.quantile(rows, ROBUST_QUANTILES, axis=0)
        if kind == "one":
            other = np.ones_like(q50)
        elif kind == "range":
            other = (rows.max(axis=0) - rows.min(axis=0)) / (2 * Z90)
        elif kind == "std":
            other = rows.std(axis=0)
        elif kind == "meandev":
            other = np.abs(rows - q50).mean(axis=0) * np.sqrt(np.pi / 2)
        elif kind == "offspike":
            away = np.abs(rows - q50)
            other = np.array([np.median(a[a > 0]) if (a > 0).any() else 0.0
                              for a in away.T]) / (2 * Z90)
        else:
            raise ValueError(f"unknown fall-back {kind!r}; expected one of {FALLBACKS}")
        other = np.where(other > 0, other, 1.0)
        spread = (q90 - q10) / (2 * Z90)
        return q50, np.where(spread > 0, spread, other)

    return standardizer


def _spikes(X: np.ndarray) -> str:
    """How many features have q10 = q90, and where their values away from the median lie
    under the range rule (the median distance, in σ, per feature: smallest … largest)."""
    q10, q90 = np.quantile(X, (0.1, 0.9), axis=0)
    spiked = np.flatnonzero(q10 == q90)
    text = f"{len(spiked)} of {X.shape[1]} features with q10 = q90 (all rows)"
    offset, scale = robust_standardizer(X)
    medians = []
    for j in spiked:
        away = np.abs(X[:, j] - offset[j]) / scale[j]
        if (away > 0).any():
            medians.append(float(np.median(away[away > 0])))
    if medians:
        text += (f"; their values away from the median at a median {min(medians):.2f} … "
                 f"{max(medians):.2f} σ (range rule)")
    return text


def run(args: Any) -> None:
    import bigkern.config

    C.header(__doc__.splitlines()[0])
    sets = D.load_sets(args.data, args.max_rows, None, list(args.sets))
    grid = D.Grid(omegas=tuple(args.omegas), Cs=tuple(args.Cs))
    print(f"# outer 5-fold CV, {args.repeats} repeat(s); omega {list(grid.omegas)}, "
          f"C {list(grid.Cs)}, lam {list(grid.lams)} (as benchmarks/default_scaling.py)")
    for ds in sets:
        print(f"# set {ds.name}: {len(ds.X)} rows, {_spikes(ds.X)}")
    scores: dict[tuple[str, str, str], float] = {}
    for kind in args.fallbacks:
        with bigkern.config.set(standardizer=fallback_standardizer(kind)):
            for ds in sets:
                for spec in D.CLASSIFIERS if ds.classification else D.REGRESSORS:
                    if args.models is not None and spec.name not in args.models:
                        continue
                    t0 = time.perf_counter()
                    r = D.evaluate(ds, spec, "default", 5, grid, args.repeats)
                    score = float("nan") if r.error else r.score
                    scores[(ds.name, spec.name, kind)] = score
                    print(f"  [{time.perf_counter() - t0:6.1f} s] {kind:8s} {ds.name:14s} "
                          f"{spec.name:19s} {score:.4f}{' ' + r.error if r.error else ''}",
                          flush=True)

    print("\n## the default's score with each fall-back (accuracy %, or test MSE on z-scored "
          "targets)")
    rows = []
    for ds in sets:
        for spec in D.CLASSIFIERS if ds.classification else D.REGRESSORS:
            if (ds.name, spec.name, args.fallbacks[0]) not in scores:
                continue
            cells = [scores[(ds.name, spec.name, k)] for k in args.fallbacks]
            best = (max if ds.classification else min)(cells)
            rows.append([ds.name, spec.name,
                         *[(f"{c:.2f}" if ds.classification else f"{c:.4f}")
                           + ("*" if c == best else "") for c in cells]])
    C.print_table(["set", "model", *args.fallbacks], rows)
    print("(* the best fall-back of the row)")


def main() -> None:
    p = C.parser(__doc__.splitlines()[0], NAME)
    p.add_argument("--data", type=Path, default=D.DEFAULT_DATA,
                   help="the shared data directory (default %(default)s)")
    p.add_argument("--max-rows", type=int, default=1000,
                   help="rows subsampled per set (default %(default)s)")
    p.add_argument("--repeats", type=int, default=3,
                   help="repeats of the outer CV (default %(default)s)")
    p.add_argument("--fallbacks", nargs="+", default=list(FALLBACKS), choices=FALLBACKS)
    p.add_argument("--sets", nargs="+", default=list(SETS), help="sets (by name)")
    p.add_argument("--models", nargs="+", default=None,
                   help="only these models (the tables' names, e.g. NystromKRClassifier)")
    p.add_argument("--omegas", type=float, nargs="+", default=[1, 2, 4, 8, 16])
    p.add_argument("--Cs", type=float, nargs="+", default=[10, 100, 1000, 10000])
    p.add_argument("--out", type=Path, default=None, help="write the output here instead")
    args = p.parse_args()
    D.require_data(args.data, NAME)
    if args.small:
        args.repeats, args.sets = 1, ["ionosphere", "autoMpg"]
        args.models = args.models or ["NystromKRClassifier", "NystromKernelRidge"]
    C.run_teed(NAME, args.small, args.out, lambda: run(args))


if __name__ == "__main__":
    main()
