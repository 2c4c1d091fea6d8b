"""k classes in the binned classifiers (issue 42): accuracy against scikit-learn's SVC.

On ``../shared/data/classification/page-blocks.csv`` (10 features, 5 classes, 90 %
in one) and ``pendigits.csv`` (16 features, 10 classes), by stratified 5-fold CV
(seed 0). In each fold:

a. ``BinnedSVC`` and ``BinnedKernelRidgeClassifier`` (one-vs-rest on the bins'
   per-class counts): the fold's training rows split 80/20 (stratified), the 80 %
   binned once (``percentile_bins``) and every grid point fitted on those bins and
   scored on the 20 % (``grid_search_bins``); the chosen model is scored on the
   fold's test rows. The grid: ω ∈ {0.5, 1, 2} × C ∈ {1, 10, 100} (SVC) or
   λ ∈ {10⁻³, 10⁻², 10⁻¹} (ridge);
b. scikit-learn ``SVC`` (one-vs-one) on z-scored features, tuned by 3-fold
   ``GridSearchCV`` on the same grid (γ = 1 / (2ω²)), refitted on the fold's
   training rows.

It prints the mean accuracy, the bins, the seconds per fold and the difference to
SVC in points. Binned models suit few features: the bins of 16 features at the
quartiles are nearly one row each.

    python benchmarks/binned_classes.py [--small] [--sets page-blocks pendigits]
        [--quantiles median quartiles deciles]
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C

OMEGAS = (0.5, 1.0, 2.0)
QUANTILES = {"median": (0.5,), "quartiles": (0.25, 0.5, 0.75),
             "deciles": tuple(np.arange(1, 10) / 10)}
PLANS = {"page-blocks": ("quartiles", "deciles"), "pendigits": ("median", "quartiles")}


def _load(name: str) -> tuple[np.ndarray, np.ndarray] | None:
    import pandas as pd

    from bigkern.datasets import shared_data_dir

    root = shared_data_dir()
    path = None if root is None else root / "classification" / f"{name}.csv"
    if path is None or not path.exists():
        print(f"{name}: ../shared/data/classification/{name}.csv is not present: skipped")
        return None
    frame = pd.read_csv(path)
    return frame.drop(columns="class").to_numpy(np.float64), frame["class"].to_numpy()


def _binned(model, grid, Xtr, ytr, Xte, yte, quantiles):
    from sklearn.model_selection import train_test_split

    from bigkern import grid_search_bins, percentile_bins

    t0 = time.perf_counter()
    Xa, Xv, ya, yv = train_test_split(Xtr, ytr, test_size=0.2, stratify=ytr, random_state=0)
    bins = percentile_bins(Xa, ya, quantiles=quantiles)
    found = grid_search_bins(model, bins, grid, Xv, yv)
    accuracy = float(np.mean(found.best_model.predict(Xte) == yte))
    return accuracy, bins.sizes["bin"], time.perf_counter() - t0, found.best_params


def _svc(Xtr, ytr, Xte, yte):
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    from bigkern.kernels import omega_to_gamma

    t0 = time.perf_counter()
    grid = {"svc__C": [1.0, 10.0, 100.0], "svc__gamma": [omega_to_gamma(w) for w in OMEGAS]}
    search = GridSearchCV(make_pipeline(StandardScaler(), SVC()), grid, cv=3).fit(Xtr, ytr)
    return float(search.score(Xte, yte)), time.perf_counter() - t0


def run(sets: list[str], small: bool, levels: list[str] | None = None) -> None:
    from sklearn.model_selection import StratifiedKFold

    from bigkern import BinnedKernelRidgeClassifier, BinnedSVC

    C.header("binned classifiers of k classes vs scikit-learn SVC (5-fold CV)")
    warnings.simplefilter("ignore")
    for name in sets:
        data = _load(name)
        if data is None:
            continue
        X, y = data
        classes, counts = np.unique(y, return_counts=True)
        print(f"\n## {name}: {X.shape[0]} rows x {X.shape[1]} features, {len(classes)} classes "
              f"(largest {counts.max() / len(y):.1%})")
        folds = list(StratifiedKFold(5, shuffle=True, random_state=0).split(X, y))
        folds = folds[:2] if small else folds
        rows = []
        ref = [_svc(X[tr], y[tr], X[te], y[te]) for tr, te in folds]
        ref_acc = float(np.mean([a for a, _ in ref]))
        rows.append(["SVC (one-vs-one, GridSearchCV)", "rows", f"{ref_acc:.4f}", "",
                     f"{np.mean([s for _, s in ref]):.1f}", ""])
        for label in levels or PLANS[name]:
            q = QUANTILES[label]
            for model, grid in ((BinnedSVC(), {"omega": list(OMEGAS), "C": [1.0, 10.0, 100.0]}),
                                (BinnedKernelRidgeClassifier(),
                                 {"omega": list(OMEGAS), "lam": [1e-3, 1e-2, 1e-1]})):
                got = [_binned(model, grid, X[tr], y[tr], X[te], y[te], q) for tr, te in folds]
                acc = float(np.mean([g[0] for g in got]))
                rows.append([f"{type(model).__name__} ({label})",
                             f"{np.mean([g[1] for g in got]):.0f}", f"{acc:.4f}",
                             f"{100 * (acc - ref_acc):+.2f}",
                             f"{np.mean([g[2] for g in got]):.1f}",
                             "; ".join(str(g[3]) for g in got[:2])])
        C.print_table(["model", "bins", "accuracy", "vs SVC (pt)", "s/fold",
                       "chosen (first folds)"], rows, align="lrrrrl")


def main() -> None:
    p = C.parser(__doc__.splitlines()[0], "binned_classes")
    p.add_argument("--sets", nargs="+", default=["page-blocks", "pendigits"])
    p.add_argument("--quantiles", nargs="+", choices=sorted(QUANTILES), default=None,
                   help="the binnings to run (default: quartiles and deciles for page-blocks, "
                        "median and quartiles for pendigits)")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args()
    C.run_teed("binned_classes", args.small, args.out,
               lambda: run(args.sets, args.small, args.quantiles))


if __name__ == "__main__":
    main()
