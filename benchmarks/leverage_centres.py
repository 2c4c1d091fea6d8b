"""Centers by approximate ridge leverage scores against uniform and stratified draws (issue 43).

    python benchmarks/leverage_centres.py [--small] [--sets ionosphere pima ...]
        [--sizes 50 100 200 500 1000] [--seeds 0 1] [--max-train 5000]
        [--svc] [--model nystrom|reduced-svc] [--out FILE]

Output also written to ``benchmarks/results/leverage_centres.txt``
(``leverage_centres_reduced_svc.txt`` for ``--model reduced-svc``; ``--small``: a
temporary file). Needs the shared data folder (:func:`bigkern.datasets.shared_data_dir`);
an absent set is named and skipped.

Protocol
--------
* Sets: every classification set of the shared data — ionosphere, pima, mushroom (22
  categorical columns one-hot), pendigits (10 classes), page-blocks (5, imbalanced) —
  and the two MISR scenes (labelled pixels with the eight variables NDAI, log SD, CORR
  and the five radiances finite). One stratified split, 70 % train / 30 % test
  (``random_state`` 0); the training rows are capped at ``--max-train`` (a stratified
  subset), so that the full kernel machine can be solved, and the test rows at 10,000.
* Features: ``StandardScaler`` fitted on the training rows; every model takes the same
  standardized rows (``standardize=False`` for bigkern).
* Width and penalty, per set: chosen once by ``NystromKernelRidgeClassifier``'s own
  3-fold cross-validation over ω ∈ {1, 2, 4, 8} × λ ∈ {1e-3, 1e-2, 1e-1, 1} with 300
  uniform centers on the training rows, then fixed for every model of the set.
* The full kernel machine: kernel ridge regression of the ±1 one-vs-rest targets on
  all training rows at the same (ω, λ), an unpenalized intercept (the targets' mean),
  the class of the largest value — the limit of ``NystromKernelRidgeClassifier`` as m̃
  reaches n (scikit-learn's ``KernelRidge`` solves the same system without the
  intercept). ``--svc``: scikit-learn's ``SVC`` (C = 1 / λ) printed beside it.
  ``--model reduced-svc``: ``ReducedSVC(loss="squared_hinge", C = 1 / λ)`` in place of
  the Nyström model (its leverage scores at ``1 / C`` = λ), against ``SVC`` at the same
  (ω, C) as the full machine.
* Centers: for each m̃ of ``--sizes`` (up to the training rows), ``NystromKernelRidgeClassifier``
  at (ω, λ) with ``centers="uniform", stratified=False`` (uniform),
  ``"uniform", stratified=True`` (stratified, bigkern's default) and
  ``"leverage", stratified=False`` / ``True``; test accuracy averaged over the draws of
  ``--seeds`` (``random_state``), with its standard deviation.
* Needed m̃: the smallest m̃ of the grid whose mean accuracy is within 0.2 points of the
  full machine's (">" the largest when none is).
* Seconds: the mean fit time per model, ratio leverage / uniform (under whatever load
  the machine has; the draw's two extra reads are in it).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C

SETS = ("ionosphere", "pima", "mushroom", "pendigits", "page-blocks", "misr1", "misr2")
MISR_VARIABLES = ("NDAI", "SD", "CORR", "DF", "CF", "BF", "AF", "AN")
VARIANTS = (("uniform", "uniform", False), ("stratified", "uniform", True),
            ("leverage", "leverage", False), ("leverage+strat", "leverage", True))
OMEGAS = (1.0, 2.0, 4.0, 8.0)
LAMS = (1e-3, 1e-2, 1e-1, 1.0)
WITHIN = 0.2  # points


@dataclass
class DataSet:
    name: str
    X: np.ndarray
    y: np.ndarray
    note: str


def load(name: str, root: Path) -> DataSet:
    """Features and labels of one set."""
    if name in ("ionosphere", "pima", "mushroom"):
        import lee_huang_tables as lh

        d = lh.load_set(name, root)
        return DataSet(name, d.X, np.asarray(d.y), d.note)
    if name in ("pendigits", "page-blocks"):
        raw = np.loadtxt(root / "classification" / f"{name}.csv", delimiter=",", skiprows=1)
        return DataSet(name, raw[:, :-1], raw[:, -1].astype(np.int64), "")
    from bigkern import read_misr_text

    ds = read_misr_text(root / "misr" / f"image{name[-1]}.txt")
    label = ds["label"].values[0].ravel().astype(np.int64)
    cols = [ds[v].values[0].ravel().astype(np.float64) for v in MISR_VARIABLES]
    with np.errstate(divide="ignore", invalid="ignore"):
        cols[1] = np.log(np.where(cols[1] > 0, cols[1], np.nan))
    X = np.column_stack(cols)
    keep = np.isfinite(X).all(axis=1) & (label != 0)
    return DataSet(name, X[keep], label[keep], "labelled pixels, NDAI logSD CORR + 5 radiances")


def split(data: DataSet, max_train: int, max_test: int = 10_000
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    Xtr, Xte, ytr, yte = train_test_split(data.X, data.y, test_size=0.3, random_state=0,
                                          stratify=data.y)
    if len(Xtr) > max_train:
        Xtr, _, ytr, _ = train_test_split(Xtr, ytr, train_size=max_train, random_state=0,
                                          stratify=ytr)
    if len(Xte) > max_test:
        Xte, _, yte, _ = train_test_split(Xte, yte, train_size=max_test, random_state=0,
                                          stratify=yte)
    scaler = StandardScaler().fit(Xtr)
    keep = scaler.scale_ > 0
    return scaler.transform(Xtr)[:, keep], scaler.transform(Xte)[:, keep], ytr, yte


def full_krr_accuracy(Xtr: np.ndarray, ytr: np.ndarray, Xte: np.ndarray, yte: np.ndarray,
                      omega: float, lam: float) -> float:
    """Kernel ridge on all training rows, ±1 one-vs-rest targets, intercept by centering
    in feature space: ``(K_c + λI) c = y − ȳ`` with ``K_c`` the doubly centered kernel."""
    import scipy.linalg
    from sklearn.metrics.pairwise import rbf_kernel

    classes = np.unique(ytr)
    Y = np.where(ytr[:, None] == classes[None, :], 1.0, -1.0)
    if len(classes) == 2:
        Y = Y[:, 1:]
    gamma = 1.0 / (2.0 * omega**2)
    K = rbf_kernel(Xtr, Xtr, gamma=gamma)
    n = len(K)
    mean_col = K.mean(axis=0)
    Kc = K - mean_col[None, :] - mean_col[:, None] + mean_col.mean()
    ybar = Y.mean(axis=0)
    coef = scipy.linalg.solve(Kc + lam * np.eye(n), Y - ybar, assume_a="pos")
    Kt = rbf_kernel(Xte, Xtr, gamma=gamma)
    F = (Kt - Kt.mean(axis=1, keepdims=True) - mean_col[None, :] + mean_col.mean()) @ coef
    F += ybar
    pred = classes[(F[:, 0] > 0).astype(int)] if len(classes) == 2 else classes[F.argmax(1)]
    return float(np.mean(pred == yte))


def svc_accuracy(Xtr, ytr, Xte, yte, omega: float, lam: float) -> float:
    from sklearn.svm import SVC

    svc = SVC(C=1.0 / lam, gamma=1.0 / (2.0 * omega**2)).fit(Xtr, ytr)
    return float(svc.score(Xte, yte))


def run_set(data: DataSet, args: argparse.Namespace) -> list[str]:
    from bigkern import NystromKernelRidgeClassifier, ReducedSVC

    Xtr, Xte, ytr, yte = split(data, args.max_train)
    n = len(Xtr)
    t = time.perf_counter()
    tune = NystromKernelRidgeClassifier(omega=list(OMEGAS), lam=list(LAMS), size=min(300, n),
                                        standardize=False, random_state=0).fit(Xtr, ytr)
    omega, lam = float(tune.omega_), float(tune.lam_)
    t_tune = time.perf_counter() - t
    svm = args.model == "reduced-svc"
    t = time.perf_counter()
    full = 100 * (svc_accuracy if svm else full_krr_accuracy)(Xtr, ytr, Xte, yte, omega, lam)
    t_full = time.perf_counter() - t
    lines = [f"## {data.name}, {'ReducedSVC' if svm else 'NystromKernelRidgeClassifier'}: "
             f"{n} train × {Xtr.shape[1]} features, {len(Xte)} test, "
             f"{len(np.unique(ytr))} classes{'; ' + data.note if data.note else ''}",
             f"ω = {omega:g}, λ = {lam:g} (tuned in {t_tune:.1f} s); full "
             f"{'SVC (C = 1/λ)' if svm else 'kernel ridge'} {full:.2f} % ({t_full:.1f} s)"]
    if args.svc and not svm:
        lines.append(f"SVC (C = 1/λ) {100 * svc_accuracy(Xtr, ytr, Xte, yte, omega, lam):.2f} %")
    sizes = [m for m in args.sizes if m < n]
    head = "| m̃ | " + " | ".join(v[0] for v in VARIANTS) + " | s lev/unif |"
    lines += ["", head, "|" + "---|" * (len(VARIANTS) + 2)]
    means: dict[str, list[float]] = {v[0]: [] for v in VARIANTS}
    for m in sizes:
        cells, secs = [], {}
        for name, centers, strat in VARIANTS:
            acc, took = [], []
            for seed in args.seeds:
                model = ReducedSVC(omega=omega, C=1.0 / lam, size=m, centers=centers,
                                   stratified=strat, standardize=False, random_state=seed,
                                   loss="squared_hinge") if svm else \
                    NystromKernelRidgeClassifier(omega=omega, lam=lam, size=m, centers=centers,
                                                 stratified=strat, standardize=False,
                                                 random_state=seed, solver="direct")
                t = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    model.fit(Xtr, ytr)
                took.append(time.perf_counter() - t)
                acc.append(100 * model.score(Xte, yte))
            means[name].append(float(np.mean(acc)))
            secs[name] = float(np.mean(took))
            cells.append(f"{np.mean(acc):.2f} ± {np.std(acc):.2f}")
        lines.append(f"| {m} | " + " | ".join(cells)
                     + f" | {secs['leverage'] / secs['uniform']:.1f} |")
        print(lines[-1], flush=True)
    need = []
    for name, *_ in VARIANTS:
        hit = [m for m, a in zip(sizes, means[name], strict=True) if a >= full - WITHIN]
        need.append(f"{name} {hit[0] if hit else '>' + str(sizes[-1])}")
    lines += ["", f"m̃ within {WITHIN} points of the full machine ({full:.2f} %): "
              + ", ".join(need), ""]
    return lines


def _write(out: Path, lines: list[str]) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--small", action="store_true", help="two small sets, two sizes, one seed")
    p.add_argument("--sets", nargs="+", default=list(SETS), choices=SETS)
    p.add_argument("--sizes", nargs="+", type=int, default=[50, 100, 200, 500, 1000])
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    p.add_argument("--max-train", type=int, default=5000)
    p.add_argument("--svc", action="store_true", help="also print SVC's accuracy")
    p.add_argument("--model", choices=("nystrom", "reduced-svc"), default="nystrom",
                   help="reduced-svc: ReducedSVC(loss='squared_hinge', C = 1/λ) against "
                        "SVC at the same (ω, C) as the full machine")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args()
    if args.small:
        args.sets, args.sizes, args.seeds = ["ionosphere", "pima"], [50, 100], [0]
    stem = "leverage_centres" + ("_reduced_svc" if args.model == "reduced-svc" else "")
    out = args.out or (Path(tempfile.gettempdir()) / f"{stem}.txt" if args.small
                       else Path(__file__).resolve().parent / "results" / f"{stem}.txt")
    from bigkern.datasets import shared_data_dir

    root = shared_data_dir()
    lines = [f"$ {C.command_line()}", f"# leverage-score centers vs uniform (issue 43), "
             f"load {C.load()} at start", ""]
    print("\n".join(lines), flush=True)
    for name in args.sets:
        try:
            data = load(name, root) if root is not None else None
        except OSError as err:
            data, why = None, str(err)
        else:
            why = "the shared data folder is absent"
        if data is None:
            lines.append(f"## {name}: skipped ({why})")
            print(lines[-1], flush=True)
            continue
        got = run_set(data, args)
        print("\n".join(got), flush=True)
        lines += got
        _write(out, lines)  # after each set: a long run keeps what it has
    lines.append(f"load {C.load()} at the end")
    _write(out, lines)
    print(f"written to {out}")


if __name__ == "__main__":
    main()
