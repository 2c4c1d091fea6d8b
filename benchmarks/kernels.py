"""The kernel as a value: a Laplacian Nyström classifier against scikit-learn, and the
Gaussian's timings against a checkout from before ``kernel=``.

1. **Laplacian at scale.** ``NystromKernelRidgeClassifier(kernel="laplacian")`` against
   scikit-learn's ``Nystroem(kernel="laplacian", gamma=1/ω)`` + ``RidgeClassifier`` at
   equal centres (``--size``), equal width ω and penalty λ (both penalize the function's
   RKHS norm on the centres), no standardization of their own, on ``--n`` rows (default
   10⁶) of the seeded MISR-like scenes of ``benchmarks/reduced.py`` (8 variables,
   standardized by scikit-learn's ``StandardScaler``). bigkern fits from a dask array
   of 100,000-row chunks on a LocalCluster of 2 worker processes × 1 thread; scikit-learn
   in this process with BLAS on both cores. Fit wall time (best of ``--repeat``) and
   held-out accuracy on ``--test`` rows; the ratio is scikit-learn's time / bigkern's.
2. **The same on real data**: the labelled pixels of each real MISR scene
   (``../shared/data/misr``; NDAI, logSD, CORR and the five radiances) in random halves,
   train on one and test on the other, the mean over five draws of the centres;
   skipped when the shared data are absent.
3. **The Gaussian's timings**, with ``--baseline DIR`` (a checkout of bigkern from
   before the kernel became a value, e.g. ``git worktree add /tmp/base <commit>``):
   the Gaussian ``NystromKernelRidgeClassifier`` fit from a dask array and its
   ``predict`` (the fused float32 path), each run ``--pairs`` times alternately with this
   checkout and the baseline in fresh processes (predict: the ``--test`` rows, in
   memory); the ratio of medians is this / baseline.

    python benchmarks/kernels.py [--small] [--n 1000000] [--size 500]
        [--baseline DIR] [--pairs 5]

Output also written to ``benchmarks/results/kernels.txt``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C
from reduced import pixels, split

HERE = Path(__file__).resolve().parent
OMEGA, LAM = 3.0, 1e-3


def _fit_ours(Xtr: np.ndarray, ytr: np.ndarray, size: int, kernel: str, chunk: int,
              seed: int = 0) -> Any:
    import dask.array as da

    from bigkern.models import NystromKernelRidgeClassifier

    Xd = da.from_array(Xtr, chunks=(chunk, -1))
    yd = da.from_array(ytr, chunks=chunk)
    model = NystromKernelRidgeClassifier(omega=OMEGA, lam=LAM, kernel=kernel, size=size,
                                         standardize=False, random_state=seed)
    with warnings.catch_warnings():  # the rows are in this process: their graph is large
        warnings.filterwarnings("ignore", message="Sending large graph")
        return model.fit(Xd, yd)


def _fit_peer(Xtr: np.ndarray, ytr: np.ndarray, size: int, seed: int = 0) -> Any:
    from sklearn.kernel_approximation import Nystroem
    from sklearn.linear_model import RidgeClassifier
    from sklearn.pipeline import make_pipeline

    return make_pipeline(Nystroem(kernel="laplacian", gamma=1 / OMEGA, n_components=size,
                                  random_state=seed),
                         RidgeClassifier(alpha=LAM)).fit(Xtr, ytr)


def _timed(fn: Any, repeat: int) -> tuple[float, Any]:
    best, out = np.inf, None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def laplacian_at_scale(args: Any) -> None:
    print("\n## 1. Laplacian Nyström classifier vs scikit-learn Nystroem + RidgeClassifier")
    X, y = pixels(1 if args.small else 4, (256, 512) if args.small else (512, 2048))
    n = 20_000 if args.small else args.n
    size = 100 if args.small else args.size
    Xtr, ytr, Xte, yte = split(X, y, n, 5_000 if args.small else args.test, seed=0)
    print(f"# {n:,} training rows x {Xtr.shape[1]} features, {len(Xte):,} test rows; "
          f"{size} centres, omega={OMEGA}, lam={LAM}")
    rows = []
    with C.cluster():
        t_ours, ours = _timed(lambda: _fit_ours(Xtr, ytr, size, "laplacian", args.chunk),
                              args.repeat)
        acc_ours = float((ours.predict(Xte) == yte).mean())
    t_peer, peer = _timed(lambda: _fit_peer(Xtr, ytr, size), args.repeat)
    acc_peer = float((peer.predict(Xte) == yte).mean())
    rows.append(["bigkern NystromKernelRidgeClassifier(kernel='laplacian')",
                 C.fmt_seconds(t_ours), f"{acc_ours:.4f}", ""])
    rows.append(["scikit-learn Nystroem(kernel='laplacian') + RidgeClassifier",
                 C.fmt_seconds(t_peer), f"{acc_peer:.4f}", f"{t_peer / t_ours:.2f}"])
    C.print_table(["model", "fit s (best)", "test accuracy", "sklearn / bigkern"], rows)
    print(f"# accuracy difference {100 * (acc_ours - acc_peer):+.2f} points")


def laplacian_on_misr(args: Any) -> None:
    print("\n## 2. The same two on the real MISR scenes (random halves of each scene)")
    from misr_reduced import _scene_paths, load_scene
    from sklearn.preprocessing import StandardScaler

    paths = _scene_paths()
    if paths is None:
        print("# skipped: ../shared/data/misr is absent")
        return
    features = ("NDAI", "logSD", "CORR", "DF", "CF", "BF", "AF", "AN")
    seeds = range(2 if args.small else 5)
    rows = []
    for scene in (load_scene(p) for p in paths):
        X, y = scene.X(features), scene.y
        half = np.random.default_rng(0).permutation(len(y))
        a, b = half[: len(y) // 2], half[len(y) // 2:]
        scaler = StandardScaler().fit(X[a])
        Xa, Xb = (scaler.transform(X[r]).astype(np.float32) for r in (a, b))
        ours, peer = [], []
        with C.cluster():
            for seed in seeds:  # the centres' draw moves both by a point or more
                model = _fit_ours(Xa, y[a], args.size, "laplacian", args.chunk, seed)
                ours.append(float((model.predict(Xb) == y[b]).mean()))
        for seed in seeds:
            peer.append(float((_fit_peer(Xa, y[a], args.size, seed).predict(Xb) == y[b]).mean()))
        rows.append([scene.name, f"{len(a):,}", f"{np.mean(ours):.4f}", f"{np.mean(peer):.4f}",
                     f"{100 * (np.mean(ours) - np.mean(peer)):+.2f}"])
    C.print_table(["scene", "train rows", "bigkern", "scikit-learn", "difference (points)"],
                  rows)
    print(f"# test accuracy on the other half, mean over centre draws (random_state) "
          f"{list(seeds)}; {args.size} centres, omega={OMEGA}, lam={LAM}")


_GAUSSIAN_RUN = """
import json, sys, time, warnings
import numpy as np, dask.array as da
sys.path.insert(0, {here!r})
import _common as C
from reduced import pixels, split
from bigkern.models import NystromKernelRidgeClassifier
X, y = pixels({scenes}, {shape})
Xtr, ytr, Xte, yte = split(X, y, {n}, {test}, seed=0)
with C.cluster():
    Xd, yd = da.from_array(Xtr, chunks=({chunk}, -1)), da.from_array(ytr, chunks={chunk})
    warnings.filterwarnings("ignore", message="Sending large graph")
    t = time.perf_counter()
    model = NystromKernelRidgeClassifier(omega=2.0, lam=1e-3, size={size}, standardize=False,
                                         random_state=0).fit(Xd, yd)
    fit = time.perf_counter() - t
model.predict(Xte[:1000])
t = time.perf_counter()
model.predict(Xte)
predict = time.perf_counter() - t
print(json.dumps({{"fit": fit, "predict": predict}}))
"""


def gaussian_against_baseline(args: Any) -> None:
    print("\n## 3. The Gaussian: fit and predict, this checkout against --baseline")
    if args.baseline is None:
        print("# skipped: no --baseline checkout given")
        return
    here = str(Path(__file__).resolve().parents[1])
    code = _GAUSSIAN_RUN.format(
        here=str(HERE), scenes=1 if args.small else 4,
        shape=(256, 512) if args.small else (512, 2048),
        n=20_000 if args.small else args.n,
        test=5_000 if args.small else args.test, chunk=args.chunk,
        size=100 if args.small else args.size)
    runs: dict[str, list[dict[str, float]]] = {"this": [], "baseline": []}
    for _ in range(args.pairs):
        for name, src in (("this", here), ("baseline", str(args.baseline))):
            env = {**os.environ, "PYTHONPATH": src}
            out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                                 text=True, check=True)
            runs[name].append(json.loads(out.stdout.strip().splitlines()[-1]))
    rows = []
    for what in ("fit", "predict"):
        this = float(np.median([r[what] for r in runs["this"]]))
        base = float(np.median([r[what] for r in runs["baseline"]]))
        rows.append([what, C.fmt_seconds(base), C.fmt_seconds(this), f"{this / base:.3f}"])
    C.print_table(["Gaussian Nyström (size "
                   f"{100 if args.small else args.size})", "baseline s (median)",
                   "this s (median)", "this / baseline"], rows)
    print(f"# {args.pairs} alternating pairs of fresh processes; baseline {args.baseline}")


def run(args: Any) -> None:
    C.header("the kernel as a value: Laplacian vs scikit-learn; Gaussian vs baseline")
    laplacian_at_scale(args)
    laplacian_on_misr(args)
    gaussian_against_baseline(args)


def main(argv: list[str] | None = None) -> None:
    p = C.parser(__doc__.splitlines()[0], "kernels")
    p.add_argument("--n", type=int, default=1_000_000, help="training rows (default 10^6)")
    p.add_argument("--test", type=int, default=100_000, help="held-out rows")
    p.add_argument("--size", type=int, default=500, help="centres of both Nyström fits")
    p.add_argument("--chunk", type=int, default=100_000, help="rows per dask chunk")
    p.add_argument("--repeat", type=int, default=2, help="fits per model (best kept)")
    p.add_argument("--baseline", type=Path, help="a bigkern checkout to compare the "
                                                  "Gaussian's timings with")
    p.add_argument("--pairs", type=int, default=5, help="alternating runs per checkout")
    p.add_argument("--out", type=Path, help="output file")
    args = p.parse_args(argv)
    C.run_teed("kernels", args.small, args.out, lambda: run(args))


if __name__ == "__main__":
    main()
