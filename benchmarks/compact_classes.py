"""k classes in the compact classifiers and the kernel ridge baseline against scikit-learn SVC.

On ``pendigits.csv`` (10 classes, 10,992 rows × 16) and ``page-blocks.csv`` (5 classes,
imbalanced, 5,473 rows × 10; its counts log-transformed) of ``../shared/data/classification``,
stratified 5-fold CV, features standardized on each training fold: accuracy and fit time
of scikit-learn ``SVC`` (libsvm, one-vs-one), :class:`~bigkern.KernelRidgeClassifier`
(one Cholesky for the k indicator columns), :class:`~bigkern.CompactLSSVC` (one sparse
factorization for the k ±1 columns) and :class:`~bigkern.CompactSVC` (k one-vs-rest SMO
problems on the one sparse Gram matrix), all at the same Gaussian width ``omega`` (SVC's
``gamma = 1 / (2 omega²)``) and, for the SVMs, the same ``C``. ``--ovo`` also fits the
compact SVM one-vs-one (k(k−1)/2 SMO problems on sub-matrices of the same Gram matrix,
voting), the alternative that :class:`~bigkern.CompactSVC`'s docs weigh against.

Usage::

    python benchmarks/compact_classes.py [--small] [--ovo] [--tau 0.5 0.2] [--sets pendigits]
"""

from __future__ import annotations

import itertools
import time
import warnings
from pathlib import Path

import numpy as np
from _common import header, parser, print_table

from bigkern import CompactLSSVC, CompactSVC, KernelRidgeClassifier
from bigkern.datasets import shared_data_dir
from bigkern.reduce.compact.sparse_gram import sparse_gram
from bigkern.solvers.sparse_svm import solve_svm_dual

SETS = {  # name: (omega, C of the SVMs, lam of the kernel ridge, lam of the LS-SVM)
    "pendigits": (3.0, 10.0, 0.1, 1e-4),
    "page-blocks": (1.0, 10.0, 0.1, 1e-4),
}


def read_set(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Features and labels (the last column, ``class``) of a shared classification CSV."""
    raw = np.loadtxt(path, delimiter=",", skiprows=1)
    X, y = raw[:, :-1], raw[:, -1].astype(int)
    if path.stem == "page-blocks":  # counts and areas spanning 4 decades
        X = np.log1p(X - X.min(axis=0))
    return X, y


def one_vs_one(model: CompactSVC, X: np.ndarray, y: np.ndarray, Z: np.ndarray) -> np.ndarray:
    """The compact SVM one-vs-one on ``model``'s radius: predicted labels of ``Z`` by vote
    (its time includes building both Gram matrices and predicting)."""
    classes, codes = np.unique(y, return_inverse=True)
    K = sparse_gram(X, model.kernel_)
    Kz = sparse_gram(Z, model.kernel_, X)
    votes = np.zeros((len(Z), len(classes)))
    for i, j in itertools.combinations(range(len(classes)), 2):
        rows = np.flatnonzero((codes == i) | (codes == j))
        s = solve_svm_dual(K[rows][:, rows], np.where(codes[rows] == i, 1.0, -1.0),
                           float(model.C), eps=model.tol)
        f = Kz[:, rows] @ s.dual_coef + s.intercept
        votes[:, i] += f > 0
        votes[:, j] += f <= 0
    return classes[votes.argmax(axis=1)]


def main() -> None:
    from sklearn.base import clone
    from sklearn.model_selection import StratifiedKFold
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    p = parser(__doc__.splitlines()[0], "compact-classes")
    p.add_argument("--ovo", action="store_true", help="also the compact SVM one-vs-one")
    p.add_argument("--tau", type=float, nargs="+", default=[0.5],
                   help="sparsity targets of the compact models (rule 10)")
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--sets", nargs="+", choices=sorted(SETS), default=list(SETS))
    args = p.parse_args()
    header("k classes: KernelRidgeClassifier, CompactLSSVC, CompactSVC vs scikit-learn SVC")
    root = shared_data_dir()
    rows = []
    for name in args.sets:
        omega, C, lam_krc, lam_ls = SETS[name]
        path = None if root is None else root / "classification" / f"{name}.csv"
        if path is None or not path.exists():
            print(f"# {name}: ../shared/data/classification/{name}.csv is absent, skipped")
            continue
        X, y = read_set(path)
        if args.small:
            X, y = X[:1500], y[:1500]
        models = {"SVC (libsvm, ovo)": SVC(C=C, gamma=1 / (2 * omega**2)),
                  "KernelRidgeClassifier": KernelRidgeClassifier(omega, lam_krc)}
        for tau in args.tau:
            models[f"CompactLSSVC tau={tau}"] = CompactLSSVC(omega, lam_ls, tau=tau)
            models[f"CompactSVC tau={tau}"] = CompactSVC(omega, C, tau=tau)
        scores: dict[str, list[float]] = {m: [] for m in models}
        seconds: dict[str, list[float]] = {m: [] for m in models}
        folds = StratifiedKFold(args.folds, shuffle=True, random_state=0).split(X, y)
        for fold, (train, test) in enumerate(folds):
            scaler = StandardScaler().fit(X[train])
            Xtr, Xte = scaler.transform(X[train]), scaler.transform(X[test])
            for label, prototype in models.items():
                t0 = time.perf_counter()
                with warnings.catch_warnings():  # rows without a neighbour are reported
                    warnings.simplefilter("ignore")
                    model = clone(prototype).fit(Xtr, y[train])
                seconds[label].append(time.perf_counter() - t0)
                scores[label].append(float(np.mean(model.predict(Xte) == y[test])))
                if args.ovo and isinstance(model, CompactSVC):
                    key = label.replace("CompactSVC", "CompactSVC one-vs-one")
                    t0 = time.perf_counter()
                    predicted = one_vs_one(model, Xtr, y[train], Xte)
                    seconds.setdefault(key, []).append(time.perf_counter() - t0)
                    scores.setdefault(key, []).append(float(np.mean(predicted == y[test])))
            print(f"# {name} fold {fold}: " + ", ".join(
                f"{m} {s[-1]:.4f}" for m, s in scores.items()), flush=True)
        reference = float(np.mean(scores["SVC (libsvm, ovo)"]))
        svc_time = float(np.mean(seconds["SVC (libsvm, ovo)"]))
        for label in scores:
            acc = float(np.mean(scores[label]))
            rows.append([name, label, f"{100 * acc:.2f}", f"{100 * (acc - reference):+.2f}",
                         f"{np.mean(seconds[label]):.1f}",
                         f"{np.mean(seconds[label]) / svc_time:.1f}"])
    print()
    print_table(["set", "model", "accuracy %", "vs SVC (pts)", "fit s", "fit / SVC"], rows)


if __name__ == "__main__":
    main()
