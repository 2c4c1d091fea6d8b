"""Prediction tasks: store chunks split into 10⁶-pixel tasks against whole chunks (issue 44).

On ``benchmarks/scale.py``'s store (synthetic scenes of 1024 × 2048, one scene per
chunk, ``--pixels-per-worker`` pixels per worker), for 1 and 2 workers, it fits a
``BinnedSVC`` on the default bins and times ``write_predictions(predict_scenes(...))``
with ``bigkern.predict_block_pixels`` at 2²⁰ (every chunk split into 10⁶-pixel tasks,
the default before issue 44) and at the default (whole chunks, unless a store has
too few for 4 tasks per worker thread), the two alternating, best of ``--repeat``.
It prints the seconds, the scheduler's tasks per run, the ratio of the two, and the
weak-scaling efficiency 1 → 2 workers of each.

    python benchmarks/predict_tasks.py [--pixels-per-worker N] [--repeat N] [--small]

Output is also written to ``benchmarks/results/predict_tasks.txt`` (``--out``; with
``--small``, the temporary directory).
"""

from __future__ import annotations

import argparse
import math
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C
import scale as S

SPLIT = 1 << 20  # pixels per task when every chunk is split


def run_workers(args: argparse.Namespace, workers: int) -> dict[str, Any]:
    """Best seconds and tasks per run of each setting, with ``workers`` workers."""
    import bigkern

    store = args.workdir / f"predict-tasks-{workers}.zarr"
    pixels = S.make_store(store, args.pixels_per_worker * workers, args.scene_shape)
    default = int(bigkern.config.get("predict_block_pixels"))
    best = {SPLIT: math.inf, default: math.inf}
    tasks: dict[int, int] = {}
    with C.cluster(n_workers=workers) as client:
        scenes = bigkern.with_features(bigkern.open_scenes(store), S.FEATURES)
        s = bigkern.stack_samples(scenes, S.FEATURES)
        bins = bigkern.percentile_bins(s.as_dataarray(), s.y, mask=s.mask, classes=(-1, 1),
                                       recorded=s.recorded)
        model = bigkern.BinnedSVC(omega=0.8, C=3.0).fit_bins(bins)
        for _ in range(args.repeat):
            for block in best:
                with bigkern.config.set(predict_block_pixels=block):
                    C.trim_memory(client)
                    before = S._tasks_done(client)
                    target = args.workdir / "masks.zarr"
                    t = time.perf_counter()
                    bigkern.write_predictions(bigkern.predict_scenes(model, scenes), target)
                    best[block] = min(best[block], time.perf_counter() - t)
                    tasks[block] = S._tasks_done(client) - before
                    shutil.rmtree(target)
    print(f"  {workers} worker(s), {pixels:,} pixels: split {best[SPLIT]:.2f} s "
          f"({tasks[SPLIT]:,} tasks), whole chunks {best[default]:.2f} s "
          f"({tasks[default]:,} tasks); load {C.load()}", flush=True)
    return {"pixels": pixels, "split": best[SPLIT], "whole": best[default],
            "split_tasks": tasks[SPLIT], "whole_tasks": tasks[default]}


def run(args: argparse.Namespace) -> None:
    C.header("prediction tasks: 10^6-pixel splits against whole store chunks (issue 44)")
    args.workdir.mkdir(parents=True, exist_ok=True)
    found = {w: run_workers(args, w) for w in (1, 2)}
    C.print_table(
        ["workers", "pixels", "split s", "tasks", "whole s", "tasks", "split / whole"],
        [[w, f"{r['pixels']:,}", f"{r['split']:.2f}", f"{r['split_tasks']:,}",
          f"{r['whole']:.2f}", f"{r['whole_tasks']:,}", f"{r['split'] / r['whole']:.2f}x"]
         for w, r in found.items()])
    for kind in ("split", "whole"):
        print(f"weak-scaling efficiency 1 -> 2 workers, {kind}: "
              f"{found[1][kind] / found[2][kind]:.2f}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    S.add_store_arguments(p)
    p.add_argument("--repeat", type=int, default=3, help="timed runs per setting (best taken)")
    p.add_argument("--workdir", type=Path,
                   default=Path(tempfile.gettempdir()) / "bigkern-bench-predict-tasks")
    p.add_argument("--small", action="store_true",
                   help="smoke run: 2M pixels per worker, 1 repeat")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args()
    if args.small:
        args.pixels_per_worker, args.scene_shape, args.repeat = 2_000_000, (512, 1024), 1
    C.run_teed("predict_tasks", args.small, args.out, lambda: run(args))


if __name__ == "__main__":
    main()
