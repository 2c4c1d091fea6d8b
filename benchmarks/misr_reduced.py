"""ReducedSVC on all eight MISR variables vs BinnedSVC on the paper's three (issue 14).

On the two real expert-labelled MISR scenes of ``../shared/data/misr`` (read with
:func:`bigkern.read_misr_text`; the labelled pixels whose eight variables are finite
and SD > 0), four models, each in four settings:

* per scene, on random halves as in the foundation's tables
  (``benchmarks/misr_tables.py``: ``numpy.random.default_rng(0).permutation``, train
  on the first half, test on the second; the same halves when no pixel is dropped);
* across scenes: train on every pixel of scene 1, test on every pixel of scene 2,
  and 2 → 1.

Models: ``BinnedSVC`` on (NDAI, logSD, CORR) — the paper's features and its
percentile bins (deciles, ≤ 1000 bins; the fit time counts the binning);
``ReducedSVC`` on the eight variables NDAI, logSD, CORR, DF, CF, BF, AF, AN, the
main contender; and, to tell the engine from the features apart, ``ReducedSVC`` on
the three features and ``ReducedSVC`` on the eight with the raw SD instead of logSD.
logSD is used because SD is heavy-tailed (a few bright, textured pixels): the
Gaussian kernel's distances would be set by its tail, which the log removes; the
last row measures that choice.

Parameters (ω, C) are chosen on the training data only: every grid point is fitted
on a random half of the training set (``default_rng(1)``) and scored on its other
half; the best is refitted on the whole training set (fit time: the best of
``--repeat`` runs) and scored once on the test set. Every estimator standardizes
its own features (robust median / quantile scale; ω in those units); ReducedSVC
draws its centers with ``random_state=0`` (default size: 10% of the rows, at most
500). Single node: BLAS pinned to one thread (libsvm is single-threaded) and dask's
threaded scheduler for ReducedSVC's passes over in-memory rows.

    python benchmarks/misr_reduced.py [--small] [--repeat 2] [--out FILE]

Output also written to ``benchmarks/results/misr_reduced.txt``.
"""

from __future__ import annotations

import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import product
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C

SCENES = ("image1.txt", "image2.txt")
VARIABLES = ("NDAI", "SD", "CORR", "DF", "CF", "BF", "AF", "AN")
FEATURES_3 = ("NDAI", "logSD", "CORR")
FEATURES_8 = ("NDAI", "logSD", "CORR", "DF", "CF", "BF", "AF", "AN")
FEATURES_8_SD = ("NDAI", "SD", "CORR", "DF", "CF", "BF", "AF", "AN")


@dataclass
class Scene:
    """The usable labelled pixels of one scene: columns by name, labels, counts."""

    name: str
    columns: dict[str, np.ndarray]
    y: np.ndarray
    counts: dict[str, int]

    def X(self, features: tuple[str, ...], rows: Any = slice(None)) -> np.ndarray:
        return np.column_stack([self.columns[f][rows] for f in features])


def load_scene(path: Path) -> Scene:
    """Labelled pixels with all eight variables finite and SD > 0 (for logSD)."""
    from bigkern import read_misr_text

    ds = read_misr_text(path)
    label = ds["label"].values[0].ravel().astype(np.int64)
    cols = {v: ds[v].values[0].ravel().astype(np.float64) for v in VARIABLES}
    with np.errstate(divide="ignore", invalid="ignore"):
        cols["logSD"] = np.log(np.where(cols["SD"] > 0, cols["SD"], np.nan))
    finite = np.isfinite(np.column_stack(list(cols.values()))).all(axis=1)
    present = np.isfinite(np.column_stack([cols[v] for v in VARIABLES])).any(axis=1)
    labelled = present & (label != 0)
    keep = labelled & finite
    counts = {"pixels": int(present.sum()), "labelled": int(labelled.sum()),
              "dropped": int((labelled & ~finite).sum()), "used": int(keep.sum()),
              "cloud": int((label[keep] == 1).sum()), "clear": int((label[keep] == -1).sum())}
    return Scene(path.name, {k: v[keep] for k, v in cols.items()}, label[keep], counts)


@dataclass(frozen=True)
class Contender:
    """A model: its features, its (ω, C) grid, and how it is fitted.

    ``prepare(X, y)`` runs once per training set (the binning for BinnedSVC);
    ``fit(prepared, params)`` fits one grid point; ``basis(model)`` counts its
    expansion's terms.
    """

    name: str
    model: str
    features: tuple[str, ...]
    grid: dict[str, tuple[float, ...]]
    prepare: Callable[[np.ndarray, np.ndarray], Any]
    fit: Callable[[Any, dict[str, float]], Any]
    basis: Callable[[Any], int]


def _bins(X: np.ndarray, y: np.ndarray) -> Any:
    from bigkern.reduce import percentile_bins

    return percentile_bins(X, y)


def _binned_fit(bins: Any, p: dict[str, float]) -> Any:
    from bigkern.models import BinnedSVC

    return BinnedSVC(p["omega"], p["C"]).fit_bins(bins)


def _rsvm_fit(data: tuple[np.ndarray, np.ndarray], p: dict[str, float]) -> Any:
    from bigkern.models import ReducedSVC

    return ReducedSVC(p["omega"], p["C"], random_state=0).fit(*data)


def contenders(small: bool) -> list[Contender]:
    """BinnedSVC on three features; ReducedSVC on eight (logSD), on three, on eight (SD)."""
    binned = {"omega": (0.5, 1.0) if small else (0.5, 1.0, 2.0),
              "C": (1.0, 100.0) if small else (1.0, 10.0, 100.0, 1000.0)}
    rsvm = {"omega": (1.0,) if small else (0.5, 1.0, 2.0),
            "C": (1.0, 10.0) if small else (1.0, 10.0, 100.0)}
    keep = (lambda X, y: (X, y))  # noqa: E731
    n_bins = lambda m: int(m.expansion_.n_basis)  # noqa: E731
    centers = lambda m: int(m.fit_report_["n_basis"])  # noqa: E731
    return [
        Contender("BinnedSVC, 3 features", "BinnedSVC", FEATURES_3, binned, _bins,
                  _binned_fit, n_bins),
        Contender("ReducedSVC, 8 variables", "ReducedSVC", FEATURES_8, rsvm, keep, _rsvm_fit,
                  centers),
        Contender("ReducedSVC, 3 features", "ReducedSVC", FEATURES_3, rsvm, keep, _rsvm_fit,
                  centers),
        Contender("ReducedSVC, 8 variables, raw SD", "ReducedSVC", FEATURES_8_SD, rsvm, keep,
                  _rsvm_fit, centers),
    ]


@dataclass
class Row:
    setting: str
    contender: Contender
    n_train: int
    n_test: int
    best: dict[str, float]
    val_accuracy: float
    accuracy: float
    seconds_fit: float
    seconds_select: float
    basis: int
    notes: list[str] = field(default_factory=list)


def _accuracy(model: Any, X: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean(model.predict(X) == y))


def evaluate(setting: str, c: Contender, train: Scene, train_rows: Any, test: Scene,
             test_rows: Any, repeat: int) -> Row:
    """Choose (ω, C) on halves of the training rows, refit on all of them, test once."""
    from sklearn.exceptions import ConvergenceWarning

    X, y = train.X(c.features, train_rows), train.y[train_rows]
    Xt, yt = test.X(c.features, test_rows), test.y[test_rows]
    perm = np.random.default_rng(1).permutation(len(y))
    a, b = perm[: len(y) // 2], perm[len(y) // 2:]
    points = [dict(zip(c.grid, v, strict=True)) for v in product(*c.grid.values())]
    notes: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        t0 = time.perf_counter()
        prepared = c.prepare(X[a], y[a])
        scores = [_accuracy(c.fit(prepared, p), X[b], y[b]) for p in points]
        seconds_select = time.perf_counter() - t0
        best = points[int(np.argmax(scores))]
        times, model = [], None
        for _ in range(repeat):
            t1 = time.perf_counter()
            model = c.fit(c.prepare(X, y), best)
            times.append(time.perf_counter() - t1)
    unconverged = sum(issubclass(w.category, ConvergenceWarning) for w in caught)
    if unconverged:
        notes.append(f"{unconverged} fit(s) not converged")
    edge = [k for k, v in best.items() if len(c.grid[k]) > 1
            and v in (min(c.grid[k]), max(c.grid[k]))]
    if edge:
        notes.append(f"best on the grid's edge: {', '.join(edge)}")
    if c.model == "ReducedSVC":
        r = model.fit_report_
        notes.append(f"{r['iterations']} Newton iterations")
    return Row(setting, c, len(y), len(yt), best, max(scores), _accuracy(model, Xt, yt),
               min(times), seconds_select, c.basis(model), notes)


def _scene_paths() -> list[Path] | None:
    from bigkern.datasets import shared_data_dir

    root = shared_data_dir()
    if root is None:
        return None
    paths = [root / "misr" / s for s in SCENES]
    return paths if all(p.exists() for p in paths) else None


def _secs(s: float) -> str:
    """Seconds to three significant digits (binned fits take milliseconds)."""
    return f"{s:.3g}" if s < 100 else f"{s:.0f}"


def _print_rows(rows: list[Row]) -> None:
    C.print_table(
        ["training → test", "model", "train rows", "test rows", "chosen (ω, C)",
         "val acc %", "test acc %", "fit s", "selection s", "basis", "notes"],
        [[r.setting, r.contender.name, f"{r.n_train:,}", f"{r.n_test:,}",
          f"{r.best['omega']:g}, {r.best['C']:g}", f"{100 * r.val_accuracy:.2f}",
          f"{100 * r.accuracy:.2f}", _secs(r.seconds_fit), _secs(r.seconds_select), r.basis,
          "; ".join(r.notes)] for r in rows],
        align="llrrrrrrrrl")


def _print_summary(rows: list[Row]) -> None:
    by = {(r.setting, r.contender.name): r for r in rows}
    settings = list(dict.fromkeys(r.setting for r in rows))
    base, main = "BinnedSVC, 3 features", "ReducedSVC, 8 variables"
    table = []
    for s in settings:
        b, m = by[(s, base)], by[(s, main)]
        table.append([s, f"{100 * b.accuracy:.2f}", f"{100 * m.accuracy:.2f}",
                      f"{100 * (m.accuracy - b.accuracy):+.2f}", _secs(b.seconds_fit),
                      _secs(m.seconds_fit), f"{m.seconds_fit / b.seconds_fit:.3g}"])
    print("\nside by side: BinnedSVC (NDAI, logSD, CORR) vs ReducedSVC (all eight variables)")
    C.print_table(["training → test", "BinnedSVC acc %", "ReducedSVC-8 acc %", "Δ points",
                   "BinnedSVC fit s", "ReducedSVC-8 fit s", "ReducedSVC-8 / BinnedSVC fit time"],
                  table)


def run(args: Any) -> None:
    from threadpoolctl import threadpool_limits

    C.header("ReducedSVC (8 MISR variables) vs BinnedSVC (NDAI, logSD, CORR), real MISR "
             "scenes")
    paths = _scene_paths()
    if paths is None:
        print("skipped: the real MISR scenes (../shared/data/misr/image1.txt, image2.txt) are "
              "not present; set BIGKERN_SHARED_DATA to the folder that holds misr/")
        return
    import dask

    scenes = [load_scene(p) for p in paths]
    if args.small:  # smoke size: a random 3,000 pixels per scene
        for s in scenes:
            pick = np.sort(np.random.default_rng(2).choice(len(s.y), 3000, replace=False))
            s.columns = {k: v[pick] for k, v in s.columns.items()}
            s.y, s.counts["used"] = s.y[pick], len(pick)
    for s in scenes:
        c = s.counts
        print(f"# {s.name}: {c['used']:,} labelled pixels used ({c['cloud']:,} cloud, "
              f"{c['clear']:,} clear; {c['dropped']:,} dropped for a non-finite variable or "
              f"SD <= 0) of {c['pixels']:,} present")
    models = contenders(args.small)
    for c in models:
        grid = " x ".join(f"{k} {list(v)}" for k, v in c.grid.items())
        print(f"# {c.name}: features {' '.join(c.features)}; grid {grid}")
    print(f"# load before the runs {C.load()} (1/5/15 min)")
    rows: list[Row] = []
    with threadpool_limits(limits=1), dask.config.set(scheduler="threads"):
        for s in scenes:
            n = len(s.y)
            perm = np.random.default_rng(0).permutation(n)
            tr, te = perm[: n // 2], perm[n // 2:]
            for c in models:
                rows.append(evaluate(f"{s.name} halves", c, s, tr, s, te, args.repeat))
                print(f"  [{C.load()}] {rows[-1].setting}: {c.name} "
                      f"{100 * rows[-1].accuracy:.2f}%", flush=True)
        for i, j in ((0, 1), (1, 0)):
            a, b = scenes[i], scenes[j]
            for c in models:
                rows.append(evaluate(f"{a.name} → {b.name}", c, a, slice(None), b,
                                     slice(None), args.repeat))
                print(f"  [{C.load()}] {rows[-1].setting}: {c.name} "
                      f"{100 * rows[-1].accuracy:.2f}%", flush=True)
    print()
    _print_rows(rows)
    _print_summary(rows)
    print("\nval acc: accuracy of the chosen point on the held-out half of the training set "
          "(the selection); test acc: the model refitted on the whole training set at that "
          f"point, on the test set; fit s: that refit, best of {args.repeat} (BinnedSVC: "
          "binning + fit); selection s: every grid fit + scoring on the training set's "
          "halves; basis: bins with a support vector (BinnedSVC) or reduced-set centers "
          "(ReducedSVC).")
    print(f"# load after the runs {C.load()} (1/5/15 min)")


def main(argv: list[str] | None = None) -> None:
    p = C.parser(__doc__.split("\n")[0], "misr_reduced")
    p.add_argument("--repeat", type=int, default=2, help="timed refits (best kept)")
    p.add_argument("--out", type=Path, default=None, help="output file")
    args = p.parse_args(argv)
    C.run_teed("misr_reduced", args.small, args.out, lambda: run(args))


if __name__ == "__main__":
    main()
