"""Reduced SVM vs libsvm (issue 14, benchmark part a): fit time, predict time, accuracy.

Rows are labelled pixels of seeded synthetic MISR-like scenes
(``make_scenes(4, (512, 2048), seed=0)``) with all eight variables (NDAI, SD, CORR
and the five camera radiances), standardized by scikit-learn's ``StandardScaler``
fitted on the training rows (so both models see the same features and the same
γ = 1 / (2ω²)). A random ``--n`` rows (default 27,000) train, another
``--test`` rows (default 100,000) score, and ``--predict-rows`` pixels (default
10^6) are predicted for timing. In one process, with no distributed client
(dask's local scheduler; BLAS may use both cores in either model):

* scikit-learn ``SVC(C, gamma)`` — libsvm, the full kernel;
* bigkern ``ReducedSVC(omega, C, size)`` — the smooth reduced SVM on ``--size``
  stratified random centers, Newton–Armijo with one read per pass.

It prints fit and predict seconds, accuracy, the ratios, and ReducedSVC's
iterations and passes.

Part (b), ``--nystrom``: scikit-learn ``Nystroem(n_components=--size, gamma)`` +
``RidgeClassifier(alpha=--lam)`` vs bigkern ``NystromKernelRidgeClassifier(omega,
lam, size)`` — the same m̃, γ and λ (the two solve the same problem; bigkern's
centers are a stratified draw, scikit-learn's a plain one) on ``--n`` rows
(default 10^6 with ``--nystrom``).

    python benchmarks/reduced.py [--n 27000] [--size 500] [--omega 1] [--C 1] [--rsvm-C 10]
    python benchmarks/reduced.py --nystrom [--n 1000000] [--size 1000] [--lam 1]
    ... [--small] [--out benchmarks/results/reduced.txt]  (output appended to --out too)
"""

from __future__ import annotations

import argparse
import platform
import shlex
import sys
import time

import numpy as np

FEATURES = ("NDAI", "SD", "CORR", "DF", "CF", "BF", "AF", "AN")


def pixels(n_scenes: int, shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Every labelled pixel with finite features: X (n, 8) float32, y (n,) in {-1, 1}."""
    from bigkern.datasets import make_scenes

    ds = make_scenes(n_scenes, shape, seed=0).load()
    X = np.stack([ds[v].values.ravel() for v in FEATURES], axis=1).astype(np.float32)
    y = ds["label"].values.ravel()
    use = (y != 0) & np.isfinite(X).all(axis=1)
    return X[use], y[use]


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=27_000, help="training rows")
    p.add_argument("--test", type=int, default=100_000, help="scored rows")
    p.add_argument("--predict-rows", type=int, default=1_000_000, help="rows timed in predict")
    p.add_argument("--size", type=int, default=500, help="ReducedSVC centers")
    p.add_argument("--omega", type=float, default=1.0)
    p.add_argument("--C", type=float, default=1.0, help="C of scikit-learn's SVC")
    p.add_argument("--rsvm-C", type=float, default=None,
                   help="C of ReducedSVC (default --C; Lee & Huang use a larger one)")
    p.add_argument("--hessian", default="float64", help="ReducedSVC's Hessian precision")
    p.add_argument("--nystrom", action="store_true", help="part (b): Nyström kernel ridge")
    p.add_argument("--lam", type=float, default=1.0, help="λ = RidgeClassifier's alpha")
    p.add_argument("--out", default=None, help="also append the output to this file")
    p.add_argument("--small", action="store_true", help="smoke size (n 3000, 20,000 predicted)")
    args = p.parse_args(argv)
    if args.nystrom and args.n == 27_000:
        args.n, args.size = 1_000_000, max(args.size, 1000)
    if args.small:
        args.n, args.test, args.predict_rows, args.size = 3000, 10_000, 20_000, 100
    if args.out:
        sys.stdout = _Tee(args.out)

    import os

    import dask
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    import bigkern
    from bigkern.models.reduced import ReducedSVC

    print("\n# " + "python " + shlex.join(sys.argv))
    print(f"# load average at start: {os.getloadavg()[0]:.2f} (other jobs on this machine make "
          f"timings noisy)")
    print(f"# bigkern {bigkern.__version__}, numpy {np.__version__}, "
          f"{platform.processor() or platform.machine()}")
    X, y = pixels(4, (512, 2048))
    if args.nystrom:
        return nystrom(args, X, y)
    rng = np.random.default_rng(0)
    order = rng.permutation(len(X))
    train, test = order[:args.n], order[args.n:args.n + args.test]
    big = rng.choice(len(X), size=args.predict_rows, replace=args.predict_rows > len(X))
    scaler = StandardScaler().fit(X[train])
    Xtr, Xte = scaler.transform(X[train]), scaler.transform(X[test])
    Xbig = scaler.transform(X[big]).astype(np.float32)
    gamma = 1.0 / (2.0 * args.omega**2)
    print(f"# {len(X):,} labelled pixels x {len(FEATURES)} features; train {len(train):,}, "
          f"test {len(test):,}, predict {len(big):,}; omega {args.omega} (gamma {gamma:g}), "
          f"C {args.C}, reduced set {args.size}")

    rows = {}
    with dask.config.set(scheduler="threads"):
        for name, make in (("sklearn SVC", lambda: SVC(C=args.C, gamma=gamma)),
                           ("bigkern ReducedSVC", lambda: ReducedSVC(
                               omega=args.omega, C=args.rsvm_C or args.C, size=args.size,
                               standardize=False, hessian=args.hessian, random_state=0))):
            model = make()
            t = time.perf_counter()
            model.fit(Xtr, y[train])
            fit = time.perf_counter() - t
            t = time.perf_counter()
            model.predict(Xbig)
            pred = time.perf_counter() - t
            acc = float(np.mean(model.predict(Xte) == y[test]))
            basis = (int(model.support_.size) if hasattr(model, "support_")
                     else model.expansion_.n_basis)
            rows[name] = (fit, pred, acc, basis, model)
    print(f"\n{'model':<20} {'fit s':>9} {'predict s':>10} {'pixels/s':>10} {'accuracy':>9} "
          f"{'basis':>6}")
    for name, (fit, pred, acc, basis, _) in rows.items():
        print(f"{name:<20} {fit:9.2f} {pred:10.2f} {len(big) / pred:10.3g} {100 * acc:8.2f}% "
              f"{basis:6d}")
    s, r = rows["sklearn SVC"], rows["bigkern ReducedSVC"]
    rep = r[4].fit_report_
    print(f"\nfit: ReducedSVC {s[0] / r[0]:.1f}x faster; predict: {s[1] / r[1]:.1f}x faster; "
          f"accuracy {100 * (r[2] - s[2]):+.2f} points")
    print(f"ReducedSVC: {rep['iterations']} Newton iterations, {rep['passes']} passes "
          f"({rep['backtracked']} backtracked), {rep['reads']} reads of the data, "
          f"|grad| {rep['grad_norm']:.2e} ({rep['grad_norm'] / rep['grad_norm0']:.1e} of the "
          f"initial)")


class _Tee:
    """stdout that is also appended to a file."""

    def __init__(self, path: str) -> None:
        self.file, self.out = open(path, "a"), sys.__stdout__  # noqa: SIM115

    def write(self, text: str) -> None:
        self.out.write(text)
        self.file.write(text)

    def flush(self) -> None:
        self.out.flush()
        self.file.flush()


def nystrom(args: argparse.Namespace, X: np.ndarray, y: np.ndarray) -> None:
    """Part (b): scikit-learn Nystroem + RidgeClassifier vs NystromKernelRidgeClassifier."""
    import dask
    from sklearn.kernel_approximation import Nystroem
    from sklearn.linear_model import RidgeClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from bigkern.models.nystrom import NystromKernelRidgeClassifier

    rng = np.random.default_rng(1)
    order = rng.permutation(len(X))
    n = min(args.n, len(X) - args.test)
    train, test = order[:n], order[n:n + args.test]
    scaler = StandardScaler().fit(X[train])
    Xtr = scaler.transform(X[train]).astype(np.float32)
    Xte = scaler.transform(X[test]).astype(np.float32)
    gamma = 1.0 / (2.0 * args.omega**2)
    print(f"# Nystrom kernel ridge: train {n:,}, test {len(test):,} x {X.shape[1]} features "
          f"(float32); m {args.size}, omega {args.omega} (gamma {gamma:g}), lambda {args.lam}")
    rows = {}
    with dask.config.set(scheduler="threads"):
        for name, make in (
                ("sklearn Nystroem+Ridge", lambda: make_pipeline(
                    Nystroem(gamma=gamma, n_components=args.size, random_state=0),
                    RidgeClassifier(alpha=args.lam))),
                ("bigkern NystromKRC", lambda: NystromKernelRidgeClassifier(
                    omega=args.omega, lam=args.lam, size=args.size, standardize=False,
                    random_state=0))):
            model = make()
            t = time.perf_counter()
            model.fit(Xtr, y[train])
            fit = time.perf_counter() - t
            rows[name] = (fit, float(np.mean(model.predict(Xte) == y[test])))
    print(f"\n{'model':<24} {'fit s':>9} {'accuracy':>9}")
    for name, (fit, acc) in rows.items():
        print(f"{name:<24} {fit:9.2f} {100 * acc:8.2f}%")
    s, b = rows["sklearn Nystroem+Ridge"], rows["bigkern NystromKRC"]
    print(f"\nfit: NystromKernelRidgeClassifier {s[0] / b[0]:.1f}x faster; accuracy "
          f"{100 * (b[1] - s[1]):+.2f} points")


if __name__ == "__main__":
    main()
