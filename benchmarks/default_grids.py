"""Do the models' default (ω, C / λ) grids hold the nested-CV optimum? (issue 24)

    python benchmarks/default_grids.py [--quick] [--sets ionosphere pima mushroom]
        [--models svc ridge reduced-svc nystrom-krr svc-ref] [--outer 5] [--inner 3]
        [--extra 2] [--rounds 3] [--mushroom-rows N] [--seed 0] [--out FILE]

Output also written to ``benchmarks/results/default_grids.txt`` (``--quick``: a
temporary file unless ``--out``). Needs ``../shared/data/classification``
(:func:`bigkern.datasets.shared_data_dir`); exits with a message when it is absent.

What it measures
----------------
Issue 24 asks that, on ionosphere, pima and mushroom, each model's best
(width, C) by nested CV lie inside its default grid and not on the grid's edge,
wherever the optimum is interior. For every classification ``bigkern fit --model``
name (those the registry's ``model_class`` gives a class without a target) and
for scikit-learn's full-kernel ``SVC`` as a reference row:

* The default grid is read from the code: ``bigkern.models.registry.default_grid``
  for the data set's number of features (its widths are multiples of √(d/2)), as
  are the model names and classes. A model with no grid there is probed on a grid
  around its class defaults, ω × 2^k and C (or λ) × 10^k for k = −2 … 2, and
  labelled so. The
  reference ``SVC`` (``gamma = 1 / (2 ω²)``) gets the ``svc`` grid, on inputs
  standardized as bigkern's models do (median, σ from the 10 % / 90 % quantiles,
  :func:`bigkern.features.scaling.robust_standardizer`, fitted on the training rows);
  the bigkern models standardize themselves (``standardize=True``, their default).
* Nested CV: outer ``StratifiedKFold`` (``--outer``, shuffled with ``--seed``); in
  each outer training fold an inner ``StratifiedKFold`` (``--inner``) grid search
  (scikit-learn ``GridSearchCV``, ``n_jobs=1``, accuracy) picks the point of the
  default grid with the lowest mean inner error. Ties go to the most regularized
  point: smallest C (largest λ), then widest ω. The chosen point is refitted on the
  outer training fold and scored on the outer test fold. An *edge* is a chosen value
  equal to the grid's lowest or highest value of that parameter.
* Is the optimum interior? The same inner search runs on an *extended* grid: each
  axis gets ``--extra`` more values past each end, at the ratio of the axis' two
  end values on that side. While the extended best lies on an end of the extended
  grid, that end is extended by ``--extra`` more values (at most ``--rounds``
  extensions in all). The default grid is part of the extended one and the inner
  splits are the same, so the default choice is read off the same scores. The
  extended best is refitted and scored on the outer test fold too. Per fold and
  parameter its place is ``in`` (strictly inside the default range), ``edge`` (on
  a default end: the values past it were worse), ``below`` / ``above`` (outside the
  default range: the default grid misses the optimum) and ``LIMIT`` (still on the
  last extended end: the optimum may be at a limit, e.g. C → ∞, not interior).
* Verdict per data set and model: ``misses`` when in more than half of the outer
  folds some parameter's extended best is outside the default range, ``edge`` when
  not but in more than half it sits on a default end, else ``covers``.
  A model that cannot be fitted on a set at all (the binned models bin on
  per-feature deciles, up to 10^d bins: 33 or 116 features is beyond them) is
  reported so, with the error.

Single core: BLAS pinned to one thread (``threadpoolctl``; with several threads a
135 × 135 Cholesky took 0.16 s on the shared machine) and dask's synchronous
scheduler. The reduced-kernel models use ``random_state=--seed`` and their default
number of centers (10 % of the training rows, at most 500). ``--quick``: 3 outer
folds, mushroom subsampled to 600 rows (a few minutes of CPU); the full run (8.5 min)
subsamples mushroom to ``--mushroom-rows`` (1,000) rows, stratified with ``--seed``:
a ReducedSVC fit costs about n³/100 flops per Newton pass with its default 10 % of
centers (0.3 s at 1,300 training rows), and mushroom is nearly separable anyway.
On these sets the binned models bin every row alone (8 features, deciles: pima's
rows fall in as many bins as rows), so ``svc`` is the reference SVC on the same rows.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C

SETS = ("ionosphere", "pima", "mushroom")
REFERENCE = "svc-ref"
#: Probe grid of a model with no grid in the code: default × base**k for these k.
PROBE_STEPS = (-2, -1, 0, 1, 2)
PROBE_BASE = {"omega": 2.0, "C": 10.0, "lam": 10.0}
Point = tuple[float, float]  # (omega, penalty)


# ---------------------------------------------------------------------------
# models and grids
# ---------------------------------------------------------------------------
class RobustSVC(ClassifierMixin, BaseEstimator):
    """scikit-learn ``SVC(kernel="rbf", gamma=1/(2 ω²))`` on robustly standardized inputs.

    The reference row: the full-kernel SVM in the units bigkern's models use
    (median, σ from the 10 % / 90 % quantiles of the training rows).

    Parameters
    ----------
    omega : float
        Gaussian width ω in standardized units.
    C : float
        SVM cost.
    """

    def __init__(self, omega: float = 1.0, C: float = 1.0) -> None:
        self.omega = omega
        self.C = C

    def fit(self, X: np.ndarray, y: np.ndarray) -> RobustSVC:
        """Standardize with the rows of ``X`` and fit the SVC."""
        from sklearn.svm import SVC

        from bigkern.features.scaling import robust_standardizer
        from bigkern.kernels import omega_to_gamma

        self.offset_, self.scale_ = robust_standardizer(X)
        self.svc_ = SVC(C=self.C, kernel="rbf", gamma=omega_to_gamma(self.omega))
        self.svc_.fit((X - self.offset_) / self.scale_, y)
        self.classes_ = self.svc_.classes_
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Labels of the rows of ``X``."""
        return self.svc_.predict((X - self.offset_) / self.scale_)


@dataclass(frozen=True)
class Model:
    """One row family of the tables: a ``--model`` name, its estimator and its grid."""

    name: str
    label: str  # class name and the fixed parameters
    make: Callable[[], Any]  # a fresh estimator with the fixed parameters
    penalty: str  # "C" or "lam"
    grid: dict[str, tuple[float, ...]]  # {"omega": ..., penalty: ...}, ascending
    source: str  # where the grid comes from


def model_table() -> tuple[Sequence[str], Callable[[str], type],
                          Callable[[str, int], dict[str, list[float]] | None], str]:
    """``bigkern fit``'s model names, name → class, (name, d) → default grid (None: none),
    source.

    All read from :mod:`bigkern.models.registry`.
    """
    from bigkern.models import registry

    return (registry.cli_names(), registry.model_class,
            lambda name, d: registry.default_grid(name, d) or None, "registry.default_grid")


def classification_models() -> list[str]:
    """The ``bigkern fit --model`` names that are classifiers of the labels."""
    names, class_of, _, _ = model_table()
    out = []
    for name in names:
        try:
            class_of(name)
        except ValueError:  # a regression: needs a target
            continue
        out.append(name)
    return out


def make_model(name: str, seed: int, n_features: int) -> Model:
    """The :class:`Model` of a ``--model`` name (or ``svc-ref``) on ``n_features`` features."""
    _, class_of, grid_of, where = model_table()
    if name == REFERENCE:
        grid = {k: tuple(sorted(v)) for k, v in (grid_of("svc", n_features) or {}).items()}
        return Model(name, "sklearn SVC(rbf), robust-standardized inputs", RobustSVC, "C", grid,
                     f"the svc grid ({where}('svc', {n_features})), gamma = 1/(2 ω²)")
    cls = class_of(name)
    defaults = cls().get_params()
    fixed = {"random_state": seed} if "random_state" in defaults else {}
    label = cls.__name__ + "".join(f", {k}={v}" for k, v in fixed.items())
    found = grid_of(name, n_features)
    if found is not None:
        penalty = next(k for k in found if k != "omega")
        grid = {k: tuple(sorted(float(x) for x in v)) for k, v in found.items()}
        source = f"{where}({name!r}, {n_features}) in the code"
    else:
        penalty = "C" if "C" in defaults else "lam"
        grid = {k: tuple(float(defaults[k]) * PROBE_BASE[k] ** s for s in PROBE_STEPS)
                for k in ("omega", penalty)}
        source = (f"none in the code (bigkern fit uses the class defaults omega="
                  f"{defaults['omega']}, {penalty}={defaults[penalty]}): probe grid "
                  f"default x {PROBE_BASE['omega']:g}^k / {PROBE_BASE[penalty]:g}^k, "
                  f"k = {PROBE_STEPS[0]}..{PROBE_STEPS[-1]}")
    return Model(name, label, lambda: cls(**fixed), penalty, grid, source)


def extend(values: Sequence[float], low: int, high: int) -> tuple[float, ...]:
    """``values`` (ascending) with ``low`` / ``high`` more at each end, at that end's ratio.

    Examples
    --------
    >>> extend([1.0, 2.0, 4.0], 1, 2)
    (0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
    """
    v = list(values)
    lo_ratio, hi_ratio = v[1] / v[0], v[-1] / v[-2]
    below = [v[0] / lo_ratio**k for k in range(low, 0, -1)]
    above = [v[-1] * hi_ratio**k for k in range(1, high + 1)]
    return tuple(below + v + above)


def fmt(x: float) -> str:
    """A grid value, 3 significant digits."""
    return f"{x:.3g}"


def fmt_axis(values: Sequence[float]) -> str:
    """``[a, b, c]`` with 3 significant digits."""
    return "[" + ", ".join(fmt(v) for v in values) + "]"


# ---------------------------------------------------------------------------
# nested CV
# ---------------------------------------------------------------------------
@dataclass
class Fold:
    """One outer fold: the default grid's choice, the extended grid's, and their test errors."""

    best: Point
    test: float
    ext_best: Point
    ext_test: float
    ext_axes: dict[str, tuple[float, ...]]
    inner_err: float
    ext_inner_err: float
    n_ties: int  # default-grid points tied with the chosen one
    n_failed: int  # grid points whose inner fits failed


@dataclass
class Result:
    """A data set × model: folds, or why it could not be run."""

    model: Model
    folds: list[Fold] = field(default_factory=list)
    error: str = ""
    cpu: float = 0.0
    warned: Counter = field(default_factory=Counter)
    notes: dict[str, str] = field(default_factory=dict)  # warning category → first message
    failed: set[Point] = field(default_factory=set)  # points with a failed inner fit


class InnerSearch:
    """Inner CV scores of grid points on one outer training fold, computed once each."""

    def __init__(self, model: Model, X: np.ndarray, y: np.ndarray, n_inner: int,
                 seed: int) -> None:
        from sklearn.model_selection import StratifiedKFold

        self.model, self.X, self.y = model, X, y
        self.cv = StratifiedKFold(n_inner, shuffle=True, random_state=seed)
        self.err: dict[Point, float] = {}

    def score(self, points: Sequence[Point]) -> None:
        """Run ``GridSearchCV`` over the points not scored yet (failed fits: error inf)."""
        from sklearn.model_selection import GridSearchCV

        new = [p for p in dict.fromkeys(points) if p not in self.err]
        if not new:
            return
        pen = self.model.penalty
        grid = [{"omega": [o], pen: [c]} for o, c in new]
        gs = GridSearchCV(self.model.make(), grid, scoring="accuracy", cv=self.cv, n_jobs=1,
                          refit=False, error_score=np.nan)
        gs.fit(self.X, self.y)
        for p, s in zip(gs.cv_results_["params"], gs.cv_results_["mean_test_score"],
                        strict=True):
            self.err[(p["omega"], p[pen])] = 1.0 - s if np.isfinite(s) else np.inf

    def best(self, axes: dict[str, Sequence[float]]) -> tuple[Point, int]:
        """Lowest mean inner error on the product of ``axes``; ties: most regularized."""
        pen = self.model.penalty
        points = list(itertools.product(axes["omega"], axes[pen]))
        self.score(points)
        sign = 1.0 if pen == "C" else -1.0  # small C / large λ regularize

        def key(p: Point) -> tuple[float, float, float]:
            return (round(self.err[p], 12), sign * p[1], -p[0])

        best = min(points, key=key)
        ties = sum(round(self.err[p], 12) == round(self.err[best], 12) for p in points)
        return best, ties


def refit_error(model: Model, point: Point, Xtr: np.ndarray, ytr: np.ndarray,
                Xte: np.ndarray, yte: np.ndarray) -> float:
    """Test error of the model at ``point`` fitted on the training rows (1 if it cannot be
    fitted there, as the inner search scores a failed fit, and said)."""
    est = clone(model.make()).set_params(omega=point[0], **{model.penalty: point[1]})
    try:
        est.fit(Xtr, ytr)
    except ValueError as err:
        print(f"  refit at (ω, {model.penalty}) = {point} failed, scored as error 1: {err}")
        return 1.0
    return float(np.mean(est.predict(Xte) != yte))


def extended_search(search: InnerSearch, grid: dict[str, tuple[float, ...]], extra: int,
                    rounds: int) -> tuple[Point, dict[str, tuple[float, ...]]]:
    """Best point of the grid extended by ``extra`` values per end, grown while on an end."""
    names = list(grid)
    grown = {k: [extra, extra] for k in names}  # values added below / above
    for r in range(1, rounds + 1):
        axes = {k: extend(grid[k], *grown[k]) for k in names}
        best, _ = search.best(axes)
        more = False
        for k in names:
            v = best[0] if k == "omega" else best[1]
            end = 0 if v == axes[k][0] else 1 if v == axes[k][-1] else None
            if r < rounds and end is not None:
                grown[k][end] += extra
                more = True
        if not more:
            break
    return best, axes


def run_model(model: Model, X: np.ndarray, y: np.ndarray, args: argparse.Namespace) -> Result:
    """Nested CV of one model on one data set."""
    from sklearn.model_selection import StratifiedKFold

    res = Result(model)
    outer = StratifiedKFold(args.outer, shuffle=True, random_state=args.seed)
    splits = list(outer.split(X, y))
    t0 = time.process_time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tr, _ = splits[0]
        try:  # can it be fitted at all? (the binned models' bins need few features)
            model.make().fit(X[tr], y[tr])
        except Exception as err:  # reported in the table
            res.error = f"{type(err).__name__} on {X.shape[1]} features: {err}"
            res.cpu = time.process_time() - t0
            return res
        for f, (tr, te) in enumerate(splits):
            search = InnerSearch(model, X[tr], y[tr], args.inner, args.seed + f)
            best, ties = search.best(model.grid)
            ext_best, axes = extended_search(search, model.grid, args.extra, args.rounds)
            test = refit_error(model, best, X[tr], y[tr], X[te], y[te])
            ext_test = (test if ext_best == best else
                        refit_error(model, ext_best, X[tr], y[tr], X[te], y[te]))
            failed = {p for p, e in search.err.items() if not np.isfinite(e)}
            res.failed |= failed
            res.folds.append(Fold(best, test, ext_best, ext_test, axes, search.err[best],
                                  search.err[ext_best], ties, len(failed)))
            print(f"  [{C.load()}] {model.name} fold {f + 1}/{len(splits)}: default "
                  f"({fmt(best[0])}, {fmt(best[1])}) err {test:.4f}; extended "
                  f"({fmt(ext_best[0])}, {fmt(ext_best[1])}) err {ext_test:.4f}; "
                  f"{len(search.err)} points, {time.process_time() - t0:.0f} s CPU", flush=True)
    res.warned.update(w.category.__name__ for w in caught)
    for w in caught:  # a failed fit's error is the last line of its warning
        lines = [ln.strip() for ln in str(w.message).splitlines() if ln.strip()]
        if w.category.__name__ != "UserWarning" and lines:
            res.notes.setdefault(w.category.__name__, lines[-1][:160])
    res.cpu = time.process_time() - t0
    return res


# ---------------------------------------------------------------------------
# verdicts and tables
# ---------------------------------------------------------------------------
def edge(value: float, axis: Sequence[float]) -> str:
    """``lo`` / ``hi`` when ``value`` is the lowest / highest of ``axis``, else ``-``."""
    return "lo" if value == axis[0] else "hi" if value == axis[-1] else "-"


def place(value: float, default: Sequence[float], ext: Sequence[float]) -> str:
    """Where an extended best lies against the default axis (see the module docstring)."""
    if value < default[0]:
        where = "below"
    elif value > default[-1]:
        where = "above"
    elif value in (default[0], default[-1]):
        where = "edge"
    else:
        where = "in"
    if value in (ext[0], ext[-1]) and where in ("below", "above"):
        where += " LIMIT"
    return where


def places(model: Model, fold: Fold) -> dict[str, str]:
    """Parameter → place of the fold's extended best."""
    return {k: place(v, model.grid[k], fold.ext_axes[k])
            for k, v in zip(("omega", model.penalty), fold.ext_best, strict=True)}


def verdict(res: Result) -> str:
    """``covers`` / ``edge`` / ``misses`` (or why there is none)."""
    if res.error:
        return "n/a (cannot be fitted)"
    n = len(res.folds)
    pl = [places(res.model, f) for f in res.folds]
    outside = sum(any(p.startswith(("below", "above")) for p in d.values()) for d in pl)
    on_edge = sum(any(p == "edge" for p in d.values()) for d in pl)
    if outside > n / 2:
        return "misses"
    if on_edge > n / 2:
        return "edge"
    return "covers"


def span(values: Sequence[float]) -> str:
    """``a`` or ``a-b`` (min to max)."""
    lo, hi = min(values), max(values)
    return fmt(lo) if lo == hi else f"{fmt(lo)}-{fmt(hi)}"


def where_best(res: Result) -> str:
    """The extended optima's range, e.g. ``ω 2.7-5.4 (above), C 1-3``."""
    parts = []
    for i, k in enumerate(("omega", res.model.penalty)):
        vals = [f.ext_best[i] for f in res.folds]
        kinds = Counter(places(res.model, f)[k] for f in res.folds)
        tag = ", ".join(f"{w} {c}" for w, c in kinds.most_common())
        parts.append(f"{'ω' if k == 'omega' else k} {span(vals)} ({tag})")
    return "; ".join(parts)


def print_result(res: Result, set_name: str) -> None:
    """The per-fold table and summary lines of one data set × model."""
    m = res.model
    pen = m.penalty
    print(f"\n### {set_name} / {m.name} ({m.label})")
    print(f"default grid: ω {fmt_axis(m.grid['omega'])} x {pen} {fmt_axis(m.grid[pen])}"
          f" — {m.source}")
    if res.error:
        print(f"cannot be fitted on {set_name}, so not cross-validated: {res.error}")
        return
    rows = []
    for i, f in enumerate(res.folds):
        pl = places(m, f)
        rows.append([i + 1, fmt(f.best[0]), fmt(f.best[1]),
                     f"{edge(f.best[0], m.grid['omega'])}/{edge(f.best[1], m.grid[pen])}",
                     f.n_ties, f"{f.inner_err:.4f}", f"{f.test:.4f}", fmt(f.ext_best[0]),
                     fmt(f.ext_best[1]), f"{pl['omega']} / {pl[pen]}", f"{f.ext_inner_err:.4f}",
                     f"{f.ext_test:.4f}"])
    C.print_table(["fold", "ω", pen, "edge ω/" + pen, "ties", "inner err", "test err",
                   "ext ω", f"ext {pen}", "ext place ω / " + pen, "ext inner", "ext test"],
                  rows, align="r" * 9 + "l" + "rr")
    widest = {k: max((f.ext_axes[k] for f in res.folds), key=len) for k in m.grid}
    print(f"extended grid (widest over folds): ω {fmt_axis(widest['omega'])} x {pen} "
          f"{fmt_axis(widest[pen])}")
    n = len(res.folds)
    edges = {k: Counter(edge(f.best[i], m.grid[k]) for f in res.folds)
             for i, k in enumerate(("omega", pen))}
    test = np.mean([f.test for f in res.folds])
    ext_test = np.mean([f.ext_test for f in res.folds])
    print(f"test error (mean of {n} outer folds): default grid {test:.4f}, extended "
          f"{ext_test:.4f}; default choice on an edge: "
          + ", ".join(f"{'ω' if k == 'omega' else k} lo {c['lo']} hi {c['hi']}"
                      for k, c in edges.items()))
    warned = ", ".join(f"{k} x{v}" for k, v in res.warned.most_common()) or "none"
    print(f"extended best: {where_best(res)} -> {verdict(res)} "
          f"(CPU {res.cpu:.0f} s; warnings: {warned})")
    if res.failed:
        pts = ", ".join(f"({fmt(o)}, {fmt(c)})" for o, c in sorted(res.failed))
        print(f"inner fits failed (scored as error 1) at (ω, {pen}) = {pts}")
    for k, msg in res.notes.items():
        print(f"  first {k}: {msg}")


def summary(results: dict[str, dict[str, Result]], models: Sequence[str]) -> None:
    """A table of verdicts and one line per model."""
    sets = list(results)
    print("\n## Summary")
    rows = [[name, *(verdict(results[s][name]) for s in sets)] for name in models]
    C.print_table(["model", *sets], rows, align="l" * (len(sets) + 1))
    print()
    for name in models:
        missed = [(s, results[s][name]) for s in sets
                  if verdict(results[s][name]) in ("misses", "edge")]
        unfit = [s for s in sets if results[s][name].error]
        fitted = [s for s in sets if not results[s][name].error]
        if not fitted:
            line = "n/a: cannot be fitted on " + ", ".join(unfit)
        elif not missed:
            line = "covers"
        else:
            line = "misses (best at " + "; ".join(f"{s}: {where_best(r)}" for s, r in missed) + ")"
        if unfit and fitted:
            line += f"; cannot be fitted on {', '.join(unfit)}"
        print(f"{name}: {line}")
        runs = [results[s][name] for s in fitted]
        if runs:
            pen = runs[0].model.penalty
            best = [f.ext_best for r in runs for f in r.folds]
            print(f"    extended optima over every set and fold: ω {span([b[0] for b in best])}, "
                  f"{pen} {span([b[1] for b in best])}")


# ---------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------
def load(name: str, args: argparse.Namespace) -> tuple[np.ndarray, np.ndarray, str]:
    """X, y and a note, with lee_huang_tables' loader (mushroom one-hot, subsampled)."""
    from lee_huang_tables import load_set

    ds = load_set(name)
    X, y, note = ds.X, ds.y, ds.note
    if name == "mushroom" and args.mushroom_rows and args.mushroom_rows < len(y):
        from sklearn.model_selection import train_test_split

        X, _, y, _ = train_test_split(X, y, train_size=args.mushroom_rows, stratify=y,
                                      random_state=args.seed)
        note += f"; stratified subsample of {len(y)} of {len(ds.y)} rows"
    return X, y, note


def run(args: argparse.Namespace) -> None:
    """Every data set × model, then the summary."""
    import dask
    from threadpoolctl import threadpool_limits

    C.header("default grids vs nested-CV optima (issue 24)")
    print(f"# outer {args.outer}-fold, inner {args.inner}-fold (stratified, seed {args.seed}); "
          f"extended grid: {args.extra} more values per end, up to {args.rounds} extensions; "
          f"single core (BLAS 1 thread, dask 'sync')")
    results: dict[str, dict[str, Result]] = {}
    t0 = time.process_time()
    with threadpool_limits(limits=1), dask.config.set(scheduler="sync"):
        for s in args.sets:
            X, y, note = load(s, args)
            counts = ", ".join(f"{k} {v}" for k, v in zip(*np.unique(y, return_counts=True),
                                                          strict=True))
            print(f"\n## {s}: {X.shape[0]} x {X.shape[1]} ({note}); classes {counts}", flush=True)
            results[s] = {}
            models = [make_model(name, args.seed, X.shape[1]) for name in args.models]
            for m in models:
                results[s][m.name] = run_model(m, X, y, args)
                print_result(results[s][m.name], s)
    summary(results, list(args.models))
    print(f"\n# total CPU {time.process_time() - t0:.0f} s")


def main(argv: list[str] | None = None) -> None:
    """Parse the arguments, check the data and run (output teed to the results file)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true",
                   help="3 outer folds, mushroom subsampled to 600 rows")
    p.add_argument("--sets", nargs="+", default=list(SETS), choices=SETS)
    p.add_argument("--models", nargs="+", default=None,
                   help="--model names (default: every classifier) and/or svc-ref")
    p.add_argument("--outer", type=int, default=None, help="outer folds (5; --quick 3)")
    p.add_argument("--inner", type=int, default=3, help="inner folds (%(default)s)")
    p.add_argument("--extra", type=int, default=2,
                   help="values added past each end of the grid (%(default)s)")
    p.add_argument("--rounds", type=int, default=3,
                   help="most extensions while the best is on an extended end (%(default)s)")
    p.add_argument("--mushroom-rows", type=int, default=None,
                   help="stratified subsample of mushroom (1000; --quick 600; 0: all)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=None, help="output file")
    args = p.parse_args(argv)
    args.outer = args.outer or (3 if args.quick else 5)
    if args.mushroom_rows is None:
        args.mushroom_rows = 600 if args.quick else 1000
    known = [*classification_models(), REFERENCE]
    args.models = args.models or known
    unknown = [m for m in args.models if m not in known]
    if unknown:
        p.error(f"unknown model(s) {', '.join(unknown)}; choose from {', '.join(known)}")
    from lee_huang_tables import missing_files

    absent = missing_files(args.sets)
    if absent:
        print("default_grids: the data are absent: " + ", ".join(absent)
              + "\n(put the UCI files in ../shared/data/classification next to the repository "
              "or set BIGKERN_SHARED_DATA)", file=sys.stderr)
        raise SystemExit(2)
    C.run_teed("default_grids", args.quick and args.out is None, args.out, lambda: run(args))


if __name__ == "__main__":
    main()
