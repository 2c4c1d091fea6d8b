"""bigkern's k-class classifiers beside scikit-learn's SVC on pendigits and page-blocks (issue 42).

    python benchmarks/classes.py [--small] [--data DIR] [--sets pendigits page-blocks]
        [--parts accuracy cost probabilities] [--folds 5] [--seed 0] [--omegas 1 2 4]
        [--Cs 1 10 100] [--lams 1e-4 1e-3 1e-2 0.1] [--scaling own|zscore] [--repeats 2]
        [--chunk 2000] [--centers N] [--models NystromKRClassifier] [--note TEXT]
        [--out FILE]
    python benchmarks/classes.py --probabilities-only [--chosen-from FILE] [--sets ...]

Output also written to ``benchmarks/results/classes.txt`` (``--small``: a temporary
file). Needs ``classification/pendigits.csv`` (10 classes) and ``page-blocks.csv`` (5,
imbalanced) of the shared data folder (``--data``, else
:func:`bigkern.datasets.shared_data_dir`); exits with a message naming the absent files.

Runs on whatever the checkout has: a model that refuses k classes ("Only binary
classification is supported"), has no ``calibration`` parameter or no
``predict_proba`` gets the row "not available in this build" instead of a failure.

Protocol
--------
* Outer loop: ``--folds`` (5) -fold ``StratifiedKFold``, shuffled with ``--seed`` (0).
  Every model takes the raw features and standardizes them as it expects: scikit-learn's
  ``SVC`` (one-vs-one, libsvm) behind a ``StandardScaler`` fitted on its training rows;
  ``ReducedSVC`` and ``NystromKernelRidgeClassifier`` (one model for all k classes) by
  their own ``standardize=True`` (median and quantile σ of a sample of the training
  rows, clipped to ±5 σ). ``--scaling zscore`` gives them the ``StandardScaler`` too
  (``standardize=False``). Centers: the bigkern default (10 % of the rows, at most 500),
  ``random_state`` = seed + fold; ``--centers N`` gives both bigkern models N centers.
* Tuning, the same grid for all: ω ∈ ``--omegas`` (SVC's ``gamma = 1 / (2 ω²)``) × C ∈
  ``--Cs`` (SVC and ReducedSVC) or λ ∈ ``--lams`` (Nyström), chosen on a **held-out
  part** of each outer training fold: a stratified 25 % of it (seed + fold) scores every
  grid point fitted on the other 75 %, by accuracy; ties go to the first point in the
  order (C or λ the most regularizing first, then ω widest first). The chosen point is
  refitted on the whole outer training fold and scored on the outer test fold, which
  takes no part in the choice. The tuning's seconds are printed apart.
* Timing: wall seconds of that refit and of ``predict`` on the test fold, on one core
  for every model (BLAS pinned to one thread with ``threadpoolctl``; libsvm is
  single-threaded; dask's synchronous scheduler for bigkern on numpy input).

Parts
-----
1. ``accuracy``: per set, mean test accuracy ± SD over the folds per model, the
   difference to SVC in points, fit and predict seconds and their ratio to SVC's
   (model / SVC), the grid points chosen. Goal (acceptance 1): within 1 point of SVC
   (at most 1 point below it).
2. ``cost``: the cost of k classes on pendigits — the 10-class ``ReducedSVC`` fit on
   the first outer training fold against its binary fits on the same rows (digits 0-4
   against 5-9, and digit 0 against the rest), at the same parameters (the point part 1
   chose most often for ReducedSVC, else ω 2, C 10): seconds (best of ``--repeats``),
   Newton ``passes`` and data ``reads`` from ``fit_report_``, once on the numpy rows (the
   in-memory path) and once on a dask array of ``--chunk``-row chunks (one read per
   Newton pass). Goal: the 10-class fit at most 2x its binary fit.
3. ``probabilities``: on the same outer folds, each model at the point part 1 chose for
   that fold, with ``calibration="sigmoid"`` and ``"isotonic"``, against
   ``SVC(probability=True)`` (Platt scaling by libsvm's internal 5-fold CV): log loss,
   expected calibration error (15 equal-width bins of the largest probability;
   ``bigkern.models.calibration.expected_calibration_error`` when the build has it, else
   this script's own :func:`expected_calibration_error`, the same definition), the
   largest ``|Σ_j p_j − 1|`` over the test rows, and fit seconds with their ratio to
   SVC's. Goals (acceptance 2): ECE ≤ 0.03, log loss within 10 % of SVC's, at a
   fraction of its time.

``--probabilities-only``: part 3 alone, at the points a previous run's part 1 chose per
fold (read from its output, ``--chosen-from``, default ``results/classes.txt``), without
the tuning (minutes instead of ten); output to ``results/classes_probabilities.txt``.

``--small``: at most 1,500 rows per set (stratified draw), 3 folds, a 2 x 2 grid, one
repeat: a smoke run (~20 s).

Measured (``results/classes.txt``, main at a66cbd5 merged, 633 s on 2 shared cores):
accuracy, ReducedSVC − SVC −0.24 pt on pendigits (99.39 %), +0.27 pt on page-blocks;
Nyström −0.22 / +0.73 pt (fits 7.3 s / 2.5 s for ReducedSVC, ~10-28x SVC's; Nyström
0.3-0.7x). 10 classes against the digits in two halves on the same 8,793 rows (ω 2,
C 100): 2.14x in memory, 3.45x on dask (16 reads for 15 passes, against 20 for 19): the
2x goal is missed. Probabilities: rows sum to 1 within 7e-16 everywhere; ECE
0.0045-0.0158 (goal met by all four); log loss against SVC(probability=True)'s 0.0203 /
0.1227: pendigits sigmoid +45 % (Nyström) / +99 % (ReducedSVC), isotonic +500-660 %;
page-blocks sigmoid −12 % / −3 % (met), isotonic +66-79 %.
Fit with sigmoid 0.84-0.92x SVC's for Nyström, 2.7-3.6x for ReducedSVC.

``results/classes_probabilities.txt`` (``--probabilities-only`` at 02a1806, isotonic fitted
to Platt's targets, light load): log loss against SVC(probability=True)'s 0.0203 / 0.1227:
pendigits sigmoid +35 % (Nyström) / +55 % (ReducedSVC), isotonic +92 % / +89 %;
page-blocks sigmoid −11 % / −8 %, isotonic −16 % / −8 % (met). ECE 0.004-0.016.
``results/classes_nystrom_2000.txt`` (``--centers 2000 --models NystromKRClassifier``,
loaded machine): pendigits sigmoid +9.5 % (met), at 8.3x SVC(probability=True)'s fit time.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C

NAME = "classes"
FILES = {"pendigits": "classification/pendigits.csv",
         "page-blocks": "classification/page-blocks.csv"}
NOT_AVAILABLE = "not available in this build"
BINARY_ONLY = "Only binary classification is supported"
ACCURACY_POINTS = 1.0  # acceptance 1: within 1 point of SVC
COST_RATIO = 2.0  # acceptance 1: 10 classes at most 2x the binary fit
ECE_GOAL = 0.03  # acceptance 2
LOG_LOSS_GOAL = 0.10  # acceptance 2: within 10 % of SVC's
ECE_BINS = 15
HELD_OUT = 0.25  # share of an outer training fold that scores the grid
COST_DEFAULT = {"omega": 2.0, "C": 10.0}
SMALL_ROWS = 1500
GRID = {"omegas": (1.0, 2.0, 4.0), "Cs": (1.0, 10.0, 100.0), "lams": (1e-4, 1e-3, 1e-2, 1e-1)}
SYMBOLS = {"omega": "ω", "lam": "λ"}
SMALL_GRID = {"omegas": (2.0, 4.0), "Cs": (1.0, 10.0), "lams": (1e-3, 1e-2)}


# ---------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------
@dataclass
class DataSet:
    """One multi-class set: float64 features, integer labels."""

    name: str
    X: np.ndarray
    y: np.ndarray
    note: str = ""


def data_root(given: Path | None) -> Path | None:
    """``given``, else the shared data folder bigkern finds (None when there is none)."""
    if given is not None:
        return given
    from bigkern.datasets import shared_data_dir

    return shared_data_dir()


def missing_files(root: Path | None, names: Sequence[str]) -> list[str]:
    """The files of ``names`` absent under ``root`` (all of them when there is no root)."""
    if root is None:
        return [f"<shared data>/{FILES[n]}" for n in names]
    return [str(root / FILES[n]) for n in names if not (root / FILES[n]).is_file()]


def exit_unless_present(root: Path | None, names: Sequence[str]) -> None:
    """Exit with status 2 and a message naming the absent files, unless all are there."""
    absent = missing_files(root, names)
    if absent:
        where = "no shared data folder found" if root is None else f"looked in {root}"
        print(f"{NAME}: the data this benchmark needs are absent ({where}): "
              f"{', '.join(absent)}; pass --data DIR (the folder holding classification/) "
              f"or set BIGKERN_SHARED_DATA", file=sys.stderr)
        raise SystemExit(2)


def load_set(root: Path, name: str, max_rows: int | None = None, seed: int = 0) -> DataSet:
    """A set's CSV (header row, last column ``class``); at most ``max_rows`` rows, drawn
    stratified with ``seed``."""
    import pandas as pd

    frame = pd.read_csv(root / FILES[name])
    X = frame.iloc[:, :-1].to_numpy(np.float64)
    y = frame.iloc[:, -1].to_numpy()
    note = f"{len(y):,} x {X.shape[1]}, {len(np.unique(y))} classes"
    if max_rows is not None and len(y) > max_rows:
        from sklearn.model_selection import train_test_split

        keep, _ = train_test_split(np.arange(len(y)), train_size=max_rows, stratify=y,
                                   random_state=seed)
        keep = np.sort(keep)
        X, y = X[keep], y[keep]
        note += f"; a stratified {max_rows:,} of them"
    counts = ", ".join(f"{c}: {n}" for c, n in zip(*np.unique(y, return_counts=True),
                                                     strict=True))
    return DataSet(name, X, y, f"{note} (class: rows {counts})")


# ---------------------------------------------------------------------------
# measures
# ---------------------------------------------------------------------------
def expected_calibration_error(y_true: Any, proba: Any, *, classes: Any = None,
                               n_bins: int = ECE_BINS) -> float:
    """ECE of class probabilities: equal-width bins ``(i/n_bins, (i+1)/n_bins]`` of each
    row's largest probability, ``Σ_b |b|/n · |accuracy(b) − mean confidence(b)|``.

    The fallback for builds without ``bigkern.models.calibration``; the same
    definition (Guo et al. 2017).
    """
    y = np.asarray(y_true)
    p = np.asarray(proba, dtype=np.float64)
    classes = np.unique(y) if classes is None else np.asarray(classes)
    if p.ndim != 2 or p.shape != (len(y), len(classes)):
        raise ValueError(f"proba must be (n, k) = ({len(y)}, {len(classes)}); got {p.shape}")
    confidence = p.max(axis=1)
    correct = classes[p.argmax(axis=1)] == y
    bins = np.clip(np.ceil(confidence * n_bins).astype(np.int64) - 1, 0, n_bins - 1)
    error = 0.0
    for b in np.unique(bins):
        in_bin = bins == b
        error += in_bin.sum() * abs(correct[in_bin].mean() - confidence[in_bin].mean())
    return float(error / len(y))


def calibration_error_function() -> tuple[Callable[..., float], str]:
    """bigkern's ``expected_calibration_error`` when the build has it, else the local one.

    Looked up at run time (not a static import: a build without the module runs too).
    """
    try:
        module = importlib.import_module("bigkern.models.calibration")
        return module.expected_calibration_error, "bigkern.models.calibration"
    except (ImportError, AttributeError):
        return expected_calibration_error, "this script's (bigkern has none)"


def max_sum_error(proba: Any) -> float:
    """The largest ``|Σ_j p_ij − 1|`` over the rows."""
    return float(np.max(np.abs(np.asarray(proba, dtype=np.float64).sum(axis=1) - 1.0)))


def mean_sd(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample SD (0 for one value)."""
    v = np.asarray(values, dtype=np.float64)
    return float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else 0.0


def ratio(a: float, b: float) -> str:
    """``a / b`` as ``"1.23x"`` (``"-"`` when ``b`` is not positive)."""
    return f"{a / b:.2f}x" if b > 0 else "-"


# ---------------------------------------------------------------------------
# models and what this build supports
# ---------------------------------------------------------------------------
class NotAvailable(Exception):
    """This build's model cannot do what a row asks (k classes, calibration, probabilities)."""


def unavailable_reason(exc: BaseException) -> str | None:
    """Why a fit's error means "not in this build" (a two-class model given k classes,
    a missing ``calibration`` parameter), or None for a real failure."""
    text = str(exc)
    if BINARY_ONLY in text:
        return "two classes only"
    if isinstance(exc, TypeError) and "calibration" in text:
        return "no calibration parameter"
    return None


def supports(estimator_class: type, parameter: str) -> bool:
    """Whether ``estimator_class`` takes ``parameter`` (scikit-learn's ``get_params``)."""
    return parameter in estimator_class().get_params()


@dataclass(frozen=True)
class ModelSpec:
    """One contender: its table name, its grid, how to build it at a point."""

    name: str
    grid: tuple[dict[str, float], ...]
    build: Callable[[dict[str, float], int, str | None], Any]

    def label(self, point: dict[str, float]) -> str:
        return point_label(point)


def point_label(point: dict[str, float]) -> str:
    """``"ω 2, C 10"``: a grid point as the tables print it."""
    return ", ".join(f"{SYMBOLS.get(k, k)} {v:g}" for k, v in point.items())


def grid_points(second: str, values: Sequence[float], omegas: Sequence[float]
                ) -> tuple[dict[str, float], ...]:
    """The grid in tie-break order: ``second`` (C ascending, λ descending) outer, ω
    widest first: the most regularizing points come first."""
    order = sorted(values, reverse=second == "lam")
    return tuple({"omega": w, second: v} for v in order for w in sorted(omegas, reverse=True))


def model_specs(args: argparse.Namespace) -> list[ModelSpec]:
    """SVC, ReducedSVC and NystromKernelRidgeClassifier on ``args``' grid."""
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    from bigkern import NystromKernelRidgeClassifier, ReducedSVC
    from bigkern.kernels import omega_to_gamma

    zscore = args.scaling == "zscore"

    def svc(p: dict[str, float], seed: int, calibration: str | None) -> Any:
        return make_pipeline(StandardScaler(), SVC(
            C=p["C"], gamma=omega_to_gamma(p["omega"]), probability=calibration is not None,
            random_state=seed))

    def bigkern_model(cls: type) -> Callable[[dict[str, float], int, str | None], Any]:
        def build(p: dict[str, float], seed: int, calibration: str | None) -> Any:
            extra: dict[str, Any] = {}
            if calibration is not None:
                if not supports(cls, "calibration"):
                    raise NotAvailable("no calibration parameter")
                extra["calibration"] = calibration
            if args.centers is not None:
                extra["size"] = args.centers
            model = cls(**p, standardize=not zscore, random_state=seed, **extra)
            return make_pipeline(StandardScaler(), model) if zscore else model
        return build

    specs = [ModelSpec("SVC (one-vs-one)", grid_points("C", args.Cs, args.omegas), svc),
             ModelSpec("ReducedSVC", grid_points("C", args.Cs, args.omegas),
                       bigkern_model(ReducedSVC)),
             ModelSpec("NystromKRClassifier", grid_points("lam", args.lams, args.omegas),
                       bigkern_model(NystromKernelRidgeClassifier))]
    return [s for s in specs if args.models is None or s.name.startswith("SVC")
            or s.name in args.models]


def final_step(model: Any) -> Any:
    """The estimator itself, or a pipeline's last step."""
    return model.steps[-1][1] if hasattr(model, "steps") else model


class Warnings:
    """Counts the warnings raised during fits, per model and first line of the message."""

    def __init__(self) -> None:
        self.counts: Counter[tuple[str, str, str]] = Counter()

    @contextmanager
    def recording(self, model: str) -> Iterator[None]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield
        for w in caught:  # numbers become "#", so that one kind of warning is one line
            first = re.sub(r"-?\d[\d.,e+-]*", "#", str(w.message).splitlines()[0])
            self.counts[(model, w.category.__name__, first[:110])] += 1

    def report(self, title: str) -> None:
        if self.counts:
            print(f"\nwarnings during the fits ({title}):")
            for (model, category, text), n in sorted(self.counts.items()):
                print(f"  {n} x {model}: {category}: {text} ...")
        self.counts.clear()


def fit_timed(model: Any, X: np.ndarray, y: np.ndarray) -> float:
    """Fit; wall seconds. A fit refusing what this build lacks raises :class:`NotAvailable`."""
    t = time.perf_counter()
    try:
        model.fit(X, y)
    except Exception as exc:
        reason = unavailable_reason(exc)
        if reason is None:
            raise
        raise NotAvailable(reason) from exc
    return time.perf_counter() - t


# ---------------------------------------------------------------------------
# parts 1 and 3: outer CV, tuning on a held-out part, probabilities
# ---------------------------------------------------------------------------
@dataclass
class Result:
    """One model on one set over the outer folds."""

    name: str
    status: str = ""  # "" when it ran; else why it did not
    accuracy: list[float] = field(default_factory=list)
    fit: list[float] = field(default_factory=list)
    predict: list[float] = field(default_factory=list)
    tune: list[float] = field(default_factory=list)
    chosen: list[dict[str, float]] = field(default_factory=list)
    log_loss: list[float] = field(default_factory=list)
    ece: list[float] = field(default_factory=list)
    sum_error: list[float] = field(default_factory=list)

    @property
    def ran(self) -> bool:
        return not self.status and bool(self.accuracy or self.log_loss)


def tune(spec: ModelSpec, X: np.ndarray, y: np.ndarray, seed: int, log: Warnings
         ) -> tuple[dict[str, float], float]:
    """The grid point with the best accuracy on a held-out stratified share of the rows
    (first in grid order on ties); the tuning's wall seconds."""
    from sklearn.model_selection import train_test_split

    t0 = time.perf_counter()
    fit_rows, score_rows = train_test_split(np.arange(len(y)), test_size=HELD_OUT,
                                            stratify=y, random_state=seed)
    best, best_accuracy = spec.grid[0], -1.0
    for point in spec.grid:
        model = spec.build(point, seed, None)
        with log.recording(spec.name):
            fit_timed(model, X[fit_rows], y[fit_rows])
        accuracy = float(np.mean(model.predict(X[score_rows]) == y[score_rows]))
        if accuracy > best_accuracy:
            best, best_accuracy = point, accuracy
    return best, time.perf_counter() - t0


def parse_point(label: str) -> dict[str, float]:
    """``"ω 2, C 10"`` back to ``{"omega": 2.0, "C": 10.0}`` (:func:`point_label` undone)."""
    names = {v: k for k, v in SYMBOLS.items()}
    point = {}
    for part in label.split(","):
        symbol, value = part.split()
        point[names.get(symbol, symbol)] = float(value)
    return point


def chosen_points(path: Path, set_name: str, specs: Sequence[ModelSpec], n_folds: int
                  ) -> dict[str, Result]:
    """The points a previous run's part 1 chose on each fold of ``set_name``, read from its
    output lines ``<set> fold k/n <model>: <point>; accuracy …``, as part 1's results."""
    pattern = re.compile(rf"^\s*{re.escape(set_name)} fold (\d+)/(\d+) (.+?): (.+?); accuracy")
    found: dict[str, dict[int, dict[str, float]]] = {}
    for line in path.read_text().splitlines():
        m = pattern.match(line)
        if m and int(m.group(2)) == n_folds:
            found.setdefault(m.group(3), {})[int(m.group(1)) - 1] = parse_point(m.group(4))
    results = {}
    for spec in specs:
        res = Result(spec.name)
        points = found.get(spec.name, {})
        if sorted(points) != list(range(n_folds)):
            res.status = f"no chosen point for every fold in {path}"
        else:
            res.chosen = [points[k] for k in range(n_folds)]
        results[spec.name] = res
    return results


def outer_folds(y: np.ndarray, folds: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    from sklearn.model_selection import StratifiedKFold

    return list(StratifiedKFold(folds, shuffle=True, random_state=seed).split(
        np.zeros((len(y), 1)), y))


def accuracy_part(data: DataSet, specs: Sequence[ModelSpec], folds: Sequence[Any],
                  seed: int, log: Warnings) -> dict[str, Result]:
    """Tune, refit and score every model on every outer fold."""
    results = {}
    for spec in specs:
        res = Result(spec.name)
        results[spec.name] = res
        for k, (tr, te) in enumerate(folds):
            try:
                point, tune_s = tune(spec, data.X[tr], data.y[tr], seed + k, log)
                model = spec.build(point, seed + k, None)
                with log.recording(spec.name):
                    fit_s = fit_timed(model, data.X[tr], data.y[tr])
            except NotAvailable as exc:
                res.status = f"{NOT_AVAILABLE} ({exc})"
                break
            except Exception as exc:  # a real failure: reported, the other models go on
                res.status = f"failed: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}"
                break
            t = time.perf_counter()
            predicted = model.predict(data.X[te])
            res.predict.append(time.perf_counter() - t)
            res.accuracy.append(float(np.mean(predicted == data.y[te])))
            res.fit.append(fit_s)
            res.tune.append(tune_s)
            res.chosen.append(point)
            print(f"  {data.name} fold {k + 1}/{len(folds)} {spec.name}: {spec.label(point)}; "
                  f"accuracy {100 * res.accuracy[-1]:.2f}%, fit {fit_s:.2f} s, tuning "
                  f"{tune_s:.1f} s", flush=True)
        if res.status:
            print(f"  {data.name} {spec.name}: {res.status}", flush=True)
    return results


def most_chosen(points: Sequence[dict[str, float]]) -> str:
    """The most frequent point and how often it was chosen."""
    if not points:
        return "-"
    top, n = Counter(tuple(p.items()) for p in points).most_common(1)[0]
    return f"{point_label(dict(top))} ({n}/{len(points)})"


def print_accuracy(data: DataSet, results: dict[str, Result]) -> None:
    svc = results["SVC (one-vs-one)"]
    svc_acc = mean_sd(svc.accuracy)[0] if svc.ran else float("nan")
    rows = []
    for res in results.values():
        if not res.ran:
            rows.append([res.name, res.status, "", "", "", "", "", "", ""])
            continue
        acc, sd = mean_sd(res.accuracy)
        fit, pred = float(np.mean(res.fit)), float(np.mean(res.predict))
        rows.append([res.name, f"{100 * acc:.2f} ± {100 * sd:.2f}",
                     f"{100 * (acc - svc_acc):+.2f}", f"{fit:.2f}",
                     ratio(fit, np.mean(svc.fit)), f"{pred:.3f}",
                     ratio(pred, np.mean(svc.predict)), f"{np.mean(res.tune):.1f}",
                     most_chosen(res.chosen)])
    print(f"\n### {data.name}: accuracy, {len(svc.accuracy)} outer folds "
          f"(times per fold; ratios model / SVC)")
    C.print_table(["model", "accuracy % ± sd", "vs SVC pt", "fit s", "fit / SVC",
                   "predict s", "predict / SVC", "tuning s", "chosen most often"],
                  rows, "lrrrrrrrl")


def probability_part(data: DataSet, specs: Sequence[ModelSpec], folds: Sequence[Any],
                     tuned: dict[str, Result], seed: int, log: Warnings,
                     ece: Callable[..., float]) -> dict[str, Result]:
    """Each model at its chosen point per fold: SVC(probability=True), the bigkern
    models with calibration "sigmoid" and "isotonic"."""
    from sklearn.metrics import log_loss

    contenders = []
    for spec in specs:
        if spec.name.startswith("SVC"):
            contenders.append((f"{spec.name}, probability=True", spec, "platt"))
        else:
            contenders += [(f"{spec.name}, {c}", spec, c) for c in ("sigmoid", "isotonic")]
    results = {}
    for name, spec, calibration in contenders:
        res = Result(name)
        results[name] = res
        points = tuned[spec.name].chosen
        if len(points) < len(folds):  # part 1 could not fit it on every fold
            res.status = tuned[spec.name].status or "not tuned on every fold"
            print(f"  {data.name} {name}: {res.status}", flush=True)
            continue
        for k, (tr, te) in enumerate(folds):
            try:
                model = spec.build(points[k], seed + k, calibration)
                with log.recording(spec.name):
                    fit_s = fit_timed(model, data.X[tr], data.y[tr])
                if not hasattr(model, "predict_proba"):
                    raise NotAvailable("no predict_proba")
                proba = model.predict_proba(data.X[te])
            except NotAvailable as exc:
                res.status = f"{NOT_AVAILABLE} ({exc})"
                break
            except Exception as exc:
                res.status = f"failed: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}"
                break
            classes = final_step(model).classes_
            res.fit.append(fit_s)
            res.accuracy.append(float(np.mean(classes[np.argmax(proba, axis=1)] == data.y[te])))
            res.sum_error.append(max_sum_error(proba))
            res.ece.append(ece(data.y[te], proba, classes=classes, n_bins=ECE_BINS))
            with warnings.catch_warnings():  # log_loss warns when rows do not sum to 1
                warnings.simplefilter("ignore", UserWarning)
                res.log_loss.append(float(log_loss(data.y[te], proba, labels=classes)))
            print(f"  {data.name} fold {k + 1}/{len(folds)} {name}: log loss "
                  f"{res.log_loss[-1]:.4f}, ECE {res.ece[-1]:.4f}, fit {fit_s:.2f} s",
                  flush=True)
        if res.status:
            print(f"  {data.name} {name}: {res.status}", flush=True)
    return results


def print_probabilities(data: DataSet, results: dict[str, Result]) -> None:
    svc = next(r for name, r in results.items() if name.startswith("SVC"))
    svc_loss = float(np.mean(svc.log_loss)) if svc.ran else float("nan")
    rows = []
    for res in results.values():
        if not res.ran:
            rows.append([res.name, res.status] + [""] * 6)
            continue
        loss, loss_sd = mean_sd(res.log_loss)
        e, e_sd = mean_sd(res.ece)
        fit = float(np.mean(res.fit))
        rows.append([res.name, f"{100 * np.mean(res.accuracy):.2f}",
                     f"{loss:.4f} ± {loss_sd:.4f}", f"{100 * (loss / svc_loss - 1):+.1f}%",
                     f"{e:.4f} ± {e_sd:.4f}", f"{max(res.sum_error):.1e}", f"{fit:.2f}",
                     ratio(fit, np.mean(svc.fit))])
    print(f"\n### {data.name}: probabilities, {len(svc.log_loss)} outer folds (ECE: "
          f"{ECE_BINS} equal-width bins of the largest probability; fit / SVC: model / "
          f"SVC(probability=True))")
    C.print_table(["model", "accuracy %", "log loss ± sd", "vs SVC", "ECE ± sd",
                   "max |Σp − 1|", "fit s", "fit / SVC"], rows, "lrrrrrrr")


# ---------------------------------------------------------------------------
# part 2: the cost of k classes
# ---------------------------------------------------------------------------
def cost_targets(y: np.ndarray) -> dict[str, np.ndarray]:
    """The k-class labels and two binary labellings of the same rows: the classes split
    in two halves (sorted), and the first class against the rest."""
    classes = np.unique(y)
    low = classes[: len(classes) // 2]
    halves = f"{low[0]}" if len(low) == 1 else f"{low[0]}-{low[-1]}"
    return {f"{len(classes)} classes": y,
            f"binary: {halves} vs rest": np.where(np.isin(y, low), 1, -1),
            f"binary: {classes[0]} vs rest": np.where(y == classes[0], 1, -1)}


def cost_part(data: DataSet, rows: np.ndarray, point: dict[str, float], args: Any,
              log: Warnings) -> list[dict[str, Any]]:
    """ReducedSVC's k-class fit against its binary fits on the same rows and parameters,
    on numpy rows and on a dask array; best of ``args.repeats`` fits each."""
    import dask.array as da

    from bigkern import ReducedSVC

    X, y = data.X[rows], data.y[rows]
    out = []
    for input_kind in ("numpy", "dask"):
        Xin = X if input_kind == "numpy" else da.from_array(X, chunks=(args.chunk, -1))
        for target, labels in cost_targets(y).items():
            entry: dict[str, Any] = {"input": input_kind, "target": target}
            seconds = []
            try:
                for _ in range(args.repeats):
                    model = ReducedSVC(**point, standardize=args.scaling != "zscore",
                                       random_state=args.seed)
                    with log.recording("ReducedSVC"):
                        seconds.append(fit_timed(model, Xin, labels))
            except NotAvailable as exc:
                entry["status"] = f"{NOT_AVAILABLE} ({exc})"
            else:
                rep = model.fit_report_
                entry.update(seconds=min(seconds), passes=rep.get("passes"),
                             reads=rep.get("reads"), iterations=rep.get("iterations"),
                             solver=rep.get("solver", ""), converged=rep.get("converged"))
            out.append(entry)
            print(f"  cost {input_kind} {target}: "
                  + (entry.get("status") or f"{entry['seconds']:.2f} s, {entry['passes']} "
                     f"passes, {entry['reads']} reads"), flush=True)
    return out


def print_cost(data: DataSet, n_rows: int, point: dict[str, float],
               entries: list[dict[str, Any]]) -> list[tuple[str, float | None]]:
    """The table and, per input, the k-class / binary (halves) time ratio."""
    print(f"\n### the cost of k classes: ReducedSVC on {data.name}'s first outer training "
          f"fold ({n_rows:,} rows), {point_label(point)}")
    rows, ratios = [], []
    for input_kind in ("numpy", "dask"):
        mine = [e for e in entries if e["input"] == input_kind]
        multi, halves = mine[0], mine[1]
        for e in mine:
            if "status" in e:
                rows.append([input_kind, e["target"], e["status"], "", "", "", "", ""])
                continue
            base = halves.get("seconds")
            rows.append([input_kind, e["target"], f"{e['seconds']:.2f}",
                         ratio(e["seconds"], base) if base else "-", e["iterations"],
                         e["passes"], e["reads"], e["solver"]])
        both = "seconds" in multi and "seconds" in halves
        ratios.append((input_kind, multi["seconds"] / halves["seconds"] if both else None))
    C.print_table(["input", "labels", "fit s (best)", "/ binary halves", "iterations",
                   "passes", "reads", "solver"], rows, "llrrrrrl")
    return ratios


# ---------------------------------------------------------------------------
# the run
# ---------------------------------------------------------------------------
def verdict(ok: bool | None) -> str:
    return "not available in this build" if ok is None else ("MET" if ok else "MISSED")


def run(args: argparse.Namespace) -> None:
    import dask
    from threadpoolctl import threadpool_limits

    C.header(f"issue 42: k-class classifiers and probabilities vs scikit-learn SVC, "
             f"{args.folds}-fold CV")
    if args.note:
        print(f"# note: {args.note}")
    ece, ece_source = calibration_error_function()
    specs = model_specs(args)
    print(f"# outer {args.folds}-fold StratifiedKFold (seed {args.seed}); tuning on a "
          f"held-out stratified {HELD_OUT:.0%} of each outer training fold; grid ω "
          f"{list(args.omegas)} x C {list(args.Cs)} (SVC, ReducedSVC) / λ {list(args.lams)} "
          f"(Nyström); scaling: SVC StandardScaler, bigkern "
          f"{'StandardScaler' if args.scaling == 'zscore' else 'its own standardize=True'}; "
          f"one core (BLAS 1 thread, dask 'sync'); ECE: {ece_source}", flush=True)
    summary: list[tuple[str, str, str]] = []
    log = Warnings()
    t_all = time.perf_counter()
    with threadpool_limits(limits=1), dask.config.set(scheduler="sync"):
        for name in args.sets:
            t_set = time.perf_counter()
            data = load_set(args.root, name, args.max_rows, args.seed)
            print(f"\n## {name}: {data.note}", flush=True)
            folds = outer_folds(data.y, args.folds, args.seed)
            if args.probabilities_only:
                results = chosen_points(args.chosen_from, name, specs, args.folds)
                print(f"  points chosen per fold: read from {args.chosen_from}", flush=True)
            else:
                results = accuracy_part(data, specs, folds, args.seed, log)
            svc = results["SVC (one-vs-one)"]
            if "accuracy" in args.parts:
                print_accuracy(data, results)
                for res in list(results.values())[1:]:
                    gap = (100 * (np.mean(res.accuracy) - np.mean(svc.accuracy))
                           if res.ran and svc.ran else None)
                    summary.append((name, f"{res.name} accuracy at most {ACCURACY_POINTS:g} pt "
                                          f"below SVC's",
                                    verdict(None if gap is None else gap >= -ACCURACY_POINTS)
                                    + ("" if gap is None else f" ({gap:+.2f} pt)")))
            if "cost" in args.parts and name == "pendigits":
                reduced = results["ReducedSVC"]
                point = (dict(Counter(tuple(p.items()) for p in reduced.chosen)
                              .most_common(1)[0][0]) if reduced.chosen else COST_DEFAULT)
                rows = folds[0][0]
                for input_kind, r in print_cost(data, len(rows), point,
                                                cost_part(data, rows, point, args, log)):
                    summary.append((name, f"ReducedSVC 10 classes <= {COST_RATIO:g}x binary "
                                          f"({input_kind} input)",
                                    verdict(None if r is None else r <= COST_RATIO)
                                    + ("" if r is None else f" ({r:.2f}x)")))
            if "probabilities" in args.parts:
                probs = probability_part(data, specs, folds, results, args.seed, log, ece)
                print_probabilities(data, probs)
                svc_p = next(r for n, r in probs.items() if n.startswith("SVC"))
                for res in list(probs.values())[1:]:
                    avail = res.ran and svc_p.ran
                    e = float(np.mean(res.ece)) if avail else 0.0
                    loss = (float(np.mean(res.log_loss)) / float(np.mean(svc_p.log_loss)) - 1
                            if avail else 0.0)
                    time_ratio = (float(np.mean(res.fit)) / float(np.mean(svc_p.fit))
                                  if avail else 0.0)
                    summary.append((name, f"{res.name}: ECE <= {ECE_GOAL}",
                                    verdict(e <= ECE_GOAL if avail else None)
                                    + (f" ({e:.4f})" if avail else "")))
                    summary.append((name, f"{res.name}: log loss within "
                                          f"{LOG_LOSS_GOAL:.0%} of SVC's",
                                    verdict(loss <= LOG_LOSS_GOAL if avail else None)
                                    + (f" ({100 * loss:+.1f}%, fit {time_ratio:.2f}x SVC's)"
                                       if avail else "")))
            log.report(name)
            print(f"# {name}: {C.fmt_seconds(time.perf_counter() - t_set)} s", flush=True)
    print("\n## Acceptance (issue 42, 1 and 2)")
    C.print_table(["set", "goal", "result"], summary, "lll")
    print(f"\ntotal wall time {C.fmt_seconds(time.perf_counter() - t_all)} s")


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = C.parser(__doc__.splitlines()[0], NAME)
    p.add_argument("--data", type=Path, default=None,
                   help="the shared data folder (holding classification/); default "
                        "bigkern.datasets.shared_data_dir()")
    p.add_argument("--sets", nargs="+", default=list(FILES), choices=list(FILES))
    p.add_argument("--parts", nargs="+", default=["accuracy", "cost", "probabilities"],
                   choices=["accuracy", "cost", "probabilities"])
    p.add_argument("--folds", type=int, default=5, help="outer CV folds (default %(default)s)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--omegas", type=float, nargs="+", default=None,
                   help=f"widths ω (default {' '.join(f'{v:g}' for v in GRID['omegas'])})")
    p.add_argument("--Cs", type=float, nargs="+", default=None,
                   help=f"C of SVC and ReducedSVC (default "
                        f"{' '.join(f'{v:g}' for v in GRID['Cs'])})")
    p.add_argument("--lams", type=float, nargs="+", default=None,
                   help=f"λ of Nyström (default {' '.join(f'{v:g}' for v in GRID['lams'])})")
    p.add_argument("--scaling", choices=["own", "zscore"], default="own",
                   help="bigkern's inputs: its own standardize=True (default) or "
                        "StandardScaler as SVC's")
    p.add_argument("--max-rows", type=int, default=None,
                   help="a stratified draw of at most this many rows per set")
    p.add_argument("--repeats", type=int, default=2,
                   help="fits per row of part 2 (the fastest kept)")
    p.add_argument("--chunk", type=int, default=2000, help="rows per chunk of part 2's dask input")
    p.add_argument("--centers", type=int, default=None,
                   help="centers of ReducedSVC and Nyström (default: bigkern's, 10%% of the "
                        "rows, at most 500)")
    p.add_argument("--models", nargs="+", default=None,
                   choices=["ReducedSVC", "NystromKRClassifier"],
                   help="the bigkern models to run beside SVC (default both)")
    p.add_argument("--note", default="", help="a line printed under the header (e.g. which "
                                              "branches the build merges)")
    p.add_argument("--probabilities-only", action="store_true",
                   help="part 3 alone, at the points per fold read from --chosen-from")
    p.add_argument("--chosen-from", type=Path,
                   default=Path(__file__).resolve().parent / "results" / "classes.txt",
                   help="a previous full run's output (default %(default)s)")
    p.add_argument("--out", type=Path, default=None, help="write the output here instead")
    args = p.parse_args(argv)
    if args.probabilities_only:
        args.parts = ["probabilities"]
    grid = SMALL_GRID if args.small else GRID
    for key in ("omegas", "Cs", "lams"):
        setattr(args, key, tuple(getattr(args, key) or grid[key]))
    if args.small:
        args.folds, args.repeats = min(args.folds, 3), 1
        args.max_rows = args.max_rows or SMALL_ROWS
    return args


def main(argv: Sequence[str] | None = None) -> None:
    args = parse(argv)
    args.root = data_root(args.data)
    exit_unless_present(args.root, args.sets)
    name = f"{NAME}_probabilities" if args.probabilities_only else NAME
    C.run_teed(name, args.small, args.out, lambda: run(args))


if __name__ == "__main__":
    main()
