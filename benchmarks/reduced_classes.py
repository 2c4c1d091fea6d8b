"""What k classes cost a ReducedSVC fit against its binary fit on the same rows (issue 42).

Rows: ``../shared/data/classification/pendigits.csv`` (10,992 rows, 16 features, 10
classes). Each fit draws m̃ centers (``--size``, default 500) stratified over its
classes and fits every usable row, with each loss, as numpy input (in memory: the
kernel rows formed once) and as a dask array (``--chunks`` rows a chunk, the threaded
scheduler: one read of the rows per Newton pass). The 10-class fit (one-vs-rest, the
classes in lockstep) is timed against two binary fits on the same rows: one class
against the rest (``y == 0``) and two halves of the classes (``y < 5``). Each fit is
the best of ``--repeat`` (wall seconds and this process's CPU seconds, which a loaded
machine disturbs less); the ratio goal is ≤ 2.

    python benchmarks/reduced_classes.py [--size 500] [--omega 2] [--C 10] [--repeat 2]
    ... [--small]   (output also written to benchmarks/results/reduced_classes.txt)
"""

from __future__ import annotations

import time
import warnings
from typing import Any

import _common
import dask
import dask.array as da
import numpy as np


def _rows(small: bool) -> tuple[np.ndarray, np.ndarray]:
    X, y = _common.pendigits()
    return (X[:2000], y[:2000]) if small else (X, y)


def _fit(X: np.ndarray, y: np.ndarray, lazy: bool, chunks: int, **params: Any) -> Any:
    from bigkern import ReducedSVC

    if not lazy:
        return ReducedSVC(**params).fit(X, y)
    with dask.config.set(scheduler="threads"):
        return ReducedSVC(**params).fit(da.from_array(X, chunks=(chunks, -1)),
                                        da.from_array(y, chunks=chunks))


def main() -> None:
    p = _common.parser(__doc__.splitlines()[0], "reduced_classes")
    p.add_argument("--size", type=int, default=500)
    p.add_argument("--omega", type=float, default=2.0)
    p.add_argument("--C", type=float, default=10.0)
    p.add_argument("--chunks", type=int, default=2748)
    p.add_argument("--repeat", type=int, default=2)
    args = p.parse_args()

    def run() -> None:
        _common.header("ReducedSVC: 10 classes against binary fits on the same rows")
        X, y = _rows(args.small)
        targets = {"10 classes": y, "class 0 vs rest": np.where(y == 0, 1, -1),
                   "classes 0-4 vs 5-9": np.where(y < 5, 1, -1)}
        size = min(args.size, len(X) // 10) if args.small else args.size
        rows = []
        for loss in ("smooth_hinge", "squared_hinge"):
            for lazy in (False, True):
                wall: dict[str, float] = {}
                cpu: dict[str, float] = {}
                report: dict[str, dict[str, Any]] = {}
                for _ in range(args.repeat):
                    for name, t in targets.items():
                        w0, c0 = time.perf_counter(), time.process_time()
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            model = _fit(X, t, lazy, args.chunks, omega=args.omega, C=args.C,
                                         size=size, loss=loss, random_state=0)
                        w, c = time.perf_counter() - w0, time.process_time() - c0
                        wall[name] = min(wall.get(name, np.inf), w)
                        cpu[name] = min(cpu.get(name, np.inf), c)
                        report[name] = model.fit_report_
                for name in targets:
                    rep = report[name]
                    rows.append([loss, "dask" if lazy else "numpy", name, rep["solver"],
                                 rep["passes"], rep["reads"], f"{wall[name]:.2f}",
                                 f"{cpu[name]:.2f}",
                                 f"{wall[name] / wall['class 0 vs rest']:.2f}",
                                 f"{wall[name] / wall['classes 0-4 vs 5-9']:.2f}",
                                 f"{cpu[name] / cpu['class 0 vs rest']:.2f}"])
        _common.print_table(["loss", "input", "fit", "solver", "passes", "reads", "wall s",
                             "cpu s", "wall / 0-vs-rest", "wall / halves", "cpu / 0-vs-rest"],
                            rows, align="lllllrrrrrr")
        print(f"# {len(X)} rows, {size} centers, omega {args.omega}, C {args.C}; "
              f"load after: {_common.load()}")

    _common.run_teed("reduced_classes", args.small, None, run)


if __name__ == "__main__":
    main()
