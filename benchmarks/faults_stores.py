"""Issue 23, feature stores: swapped chunks, an ingest bomb, declared sizes, 10^5 chunks.

Every case runs on real stores on disk, through the real ``bigkern`` command where
users meet it:

* **swapped chunks**: two valid CORR chunks of a scenes store (``make_scenes(2, (64, 96),
  seed=1)``, one zarr chunk per scene) swapped in place, then ``bigkern fit``; and the
  same store read in dask chunks smaller than its zarr chunks (each task reads part of
  a chunk).
* **ingest bomb**: a 63-byte MISR text file whose two pixels lie at y = x = 0 and
  y = x = 100000 (a grid of 10^10 pixels), given to ``bigkern ingest misr-text``; the
  refusal's time and peak memory are measured in-process (``read_misr_text``).
* **declared shape**: a zarr store of metadata only declaring a 10^6 x 10^6 x 10^6
  feature, opened with ``open_scenes``.
* **many chunks**: one 1000 x 1000 scene (NDAI, SD, CORR, label) in chunks of 1 x 1 x 10
  pixels: 10^5 chunks a variable (``--quick``: chunks of 1 x 1 x 500, 2,000 chunks), then
  ``bigkern fit`` with ``bigkern.chunk_guidance.too_many_tasks`` = ``error`` (time to the
  refusal) and = ``rechunk``, the default (time to a finished fit).
* **manifest cost**: read a 100 MB zarr chunk (25 x 10^6 float32) with and without its
  chunk manifest checked (best of 3).

    python benchmarks/faults_stores.py [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C

REPO = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(REPO), "BIGKERN_PROGRESS": "false"}
CLI = [sys.executable, "-m", "bigkern"]
DIMS = ("scene", "y", "x")


def _run(*args: Any, cwd: Path, env: dict[str, str] | None = None,
         timeout: float = 3600) -> tuple[int, str, float]:
    """Exit code, the ``bigkern: error`` line (or the last line) and the wall time."""
    t = time.perf_counter()
    workers = () if args[0] == "ingest" else ("--workers", "2")
    done = subprocess.run([*CLI, *map(str, args), *workers], cwd=cwd,
                          env={**ENV, **(env or {})}, capture_output=True, text=True,
                          timeout=timeout)
    wall = time.perf_counter() - t
    lines = [ln for ln in done.stderr.splitlines() if ln.startswith("bigkern: error")]
    last = lines[-1] if lines else (done.stdout.strip().splitlines() or [""])[-1]
    if "Traceback" in done.stderr:
        last = "TRACEBACK: " + done.stderr.strip().splitlines()[-1]
    return done.returncode, last, wall


def _short(text: str, n: int = 150) -> str:
    return text if len(text) <= n else text[:n] + " …"


def _swap(a: Path, b: Path) -> None:
    tmp = a.with_name(a.name + ".swap")
    os.rename(a, tmp)
    os.rename(b, a)
    os.rename(tmp, b)


def swapped_chunks(tmp: Path) -> list[dict]:
    """Two CORR chunks swapped: ``bigkern fit``, and a read in sub-chunk dask chunks."""
    from bigkern.datasets import make_scenes
    from bigkern.errors import StoreError
    from bigkern.scenes.writing import write_scenes
    from bigkern.store.integrity import open_checked

    store = write_scenes(make_scenes(2, (64, 96), seed=1), tmp / "swap.zarr",
                         chunks={"scene": 1, "y": 64, "x": 96})
    _swap(store / "CORR" / "c" / "0" / "0" / "0", store / "CORR" / "c" / "1" / "0" / "0")
    code, err, wall = _run("fit", store, "-o", tmp / "swap-model.zarr", cwd=tmp)
    fitted = (tmp / "swap-model.zarr").exists()
    rows = [{"case": "bigkern fit on a scenes store with two valid CORR chunks swapped in place",
             "outcome": f"exit {code} in {wall:.1f} s; {_short(err)}",
             "ok": code != 0 and "chunk (" in err and not fitted, "lost": code == 0}]
    try:
        open_checked(store, chunks={"y": 16}).load()
        outcome, ok = "read without error", False
    except StoreError as e:
        outcome, ok = f"StoreError: {_short(str(e))}", True
    rows.append({"case": "the same store read in dask chunks of 16 rows (a quarter zarr chunk)",
                 "outcome": outcome, "ok": ok, "lost": not ok})
    return rows


def misr_text_refusal(path: Path) -> tuple[str | None, float, int]:
    """``read_misr_text(path)``: the refusal's message (None if it read the file), its
    seconds and the peak of traced memory."""
    from bigkern.datasets.misr_text import read_misr_text
    from bigkern.errors import StoreError

    tracemalloc.start()
    t = time.perf_counter()
    try:
        read_misr_text(path)
        message = None
    except StoreError as err:
        message = str(err)
    finally:
        took = time.perf_counter() - t
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return message, took, peak


def ingest_bomb(tmp: Path) -> dict:
    """A 63-byte MISR text file declaring a 10^10-pixel grid."""
    bomb = tmp / "bomb.txt"
    bomb.write_text("0 0 1 0.1 1 0.5 1 1 1 1 1\n100000 100000 -1 0.1 1 0.5 1 1 1 1 1\n")
    message, took, peak = misr_text_refusal(bomb)
    refused = message is not None
    code, err, wall = _run("ingest", "misr-text", bomb, "-o", tmp / "bomb.zarr", cwd=tmp)
    written = (tmp / "bomb.zarr").exists()
    return {"case": f"bigkern ingest misr-text of a {bomb.stat().st_size}-byte file with "
                    f"pixels at y = x = 0 and 100000 (10^10 pixels)",
            "outcome": f"refused in {took * 1e3:.1f} ms, peak {peak / 2**20:.2f} MiB "
                       f"(read_misr_text); CLI exit {code} in {wall:.1f} s: {_short(err)}",
            "ok": refused and code != 0 and not written and took < 1, "lost": False}


def declared_shape(tmp: Path) -> dict:
    """A store of metadata only declaring a 10^18-element feature."""
    import zarr

    from bigkern.errors import StoreError
    from bigkern.scenes.reading import open_scenes

    path = tmp / "declared.zarr"
    group = zarr.open_group(str(path), mode="w", zarr_format=3)
    group.create_array("NDAI", shape=(10**6,) * 3, chunks=(1, 1000, 1000), dtype="float32",
                       dimension_names=DIMS)
    t = time.perf_counter()
    try:
        open_scenes(path)
        outcome, ok = "opened", False
    except StoreError as e:
        outcome, ok = f"StoreError in {(time.perf_counter() - t) * 1e3:.0f} ms: {_short(str(e))}", \
            True
    return {"case": "open_scenes of a store declaring a 10^6 x 10^6 x 10^6 feature (no chunks)",
            "outcome": outcome, "ok": ok, "lost": False}


def _many_chunk_store(path: Path, cx: int) -> float:
    """One 1000 x 1000 scene, chunks 1 x 1 x ``cx``, written as bigkern writes (no dask)."""
    from bigkern.datasets import make_scenes
    from bigkern.store.zarr_store import finish_store, to_zarr

    t = time.perf_counter()
    ds = make_scenes(1, (1000, 1000), seed=0)[["NDAI", "SD", "CORR", "label"]].compute()
    for var in ds.variables.values():
        var.encoding.clear()
    to_zarr(ds, path, kind="scenes", encoding={k: {"chunks": (1, 1, cx)} for k in ds.data_vars})
    finish_store(path)
    return time.perf_counter() - t


def many_chunks(tmp: Path, quick: bool) -> list[dict]:
    """``bigkern fit`` on a store of 10^5 (quick: 2,000) chunks a variable: refused, rechunked."""
    cx = 500 if quick else 10
    n = 1000 * 1000 // cx
    store = tmp / "many.zarr"
    built = _many_chunk_store(store, cx)
    from bigkern import config
    from bigkern.errors import StoreError
    from bigkern.scenes.reading import open_scenes

    t = time.perf_counter()
    with config.set(**{"chunk_guidance.too_many_tasks": "error"}), \
            contextlib.suppress(StoreError):
        open_scenes(store)
    refusal = time.perf_counter() - t
    code, err, wall = _run("fit", store, "-o", tmp / "many-refused.zarr", cwd=tmp,
                           env={"BIGKERN_CHUNK_GUIDANCE__TOO_MANY_TASKS": "error"})
    rows = [{"case": f"bigkern fit, too_many_tasks=error, on a store of {n:,} chunks a variable "
                     f"(10^6 pixels; written in {built:.0f} s)",
             "outcome": f"open_scenes refused it in {refusal * 1e3:.0f} ms; the CLI: exit {code} "
                        f"in {wall:.1f} s (cluster start included): {_short(err)}",
             "ok": code != 0 and "refused before any computation" in err, "lost": False}]
    code, err, wall = _run("fit", store, "-o", tmp / "many-model.zarr", cwd=tmp)
    rows.append({"case": "bigkern fit, too_many_tasks=rechunk (default), on the same store",
                 "outcome": f"exit {code} in {wall:.1f} s: {_short(err)}",
                 "ok": code == 0 and (tmp / "many-model.zarr").exists(), "lost": False})
    return rows


def manifest_cost(tmp: Path) -> dict:
    """Read a 100 MB zarr chunk with and without its manifest checked (best of 3)."""
    import xarray as xr
    import zarr

    from bigkern.scenes.writing import write_scenes
    from bigkern.store.integrity import CheckedChunks
    from bigkern.store.manifest import MANIFEST_ATTR, read_manifest

    values = np.random.default_rng(0).random((1, 5000, 5000), dtype=np.float32)
    path = write_scenes(xr.Dataset({"NDAI": (DIMS, values)}), tmp / "big.zarr",
                        chunks={"scene": 1, "y": 5000, "x": 5000})
    key = (slice(0, 1), slice(0, 5000), slice(0, 5000))
    attr = zarr.open_array(str(path), path="NDAI", mode="r").attrs[MANIFEST_ATTR]
    raw = xr.open_dataset(str(path), engine="zarr", chunks=None)["NDAI"].variable
    manifest = read_manifest(str(path), "NDAI", attr, raw.shape, (1, 5000, 5000))
    readers = {label: CheckedChunks(str(path), "NDAI", raw, (1, 5000, 5000), None, m)
               for label, m in (("plain", None), ("checked", manifest))}
    times = {"plain": np.inf, "checked": np.inf, "digest": np.inf}
    for _ in range(5):  # interleaved, best of 5: the machine may be shared
        for label, reader in readers.items():
            t = time.perf_counter()
            block = reader[key]
            times[label] = min(times[label], time.perf_counter() - t)
        t = time.perf_counter()
        ok = manifest.matches((0, 0, 0), block)
        times["digest"] = min(times["digest"], time.perf_counter() - t)
    return {"case": "read one 100 MB zarr chunk (25e6 float32), with and without its manifest",
            "outcome": f"{times['plain'] * 1e3:.0f} ms plain, {times['checked'] * 1e3:.0f} ms "
                       f"checked (best of 5); the check alone {times['digest'] * 1e3:.1f} ms "
                       f"({100 * times['digest'] / times['plain']:.1f} % of the read)",
            "ok": bool(ok), "lost": False}


def run_cases(tmp: Path, quick: bool = False) -> list[dict]:
    """The cases above; each a dict with ``case``, ``outcome``, ``ok`` and ``lost``."""
    rows = swapped_chunks(tmp)
    rows.append(ingest_bomb(tmp))
    rows.append(declared_shape(tmp))
    rows.extend(many_chunks(tmp, quick))
    rows.append(manifest_cost(tmp))
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true",
                   help="2,000 chunks a variable instead of 10^5 (minutes instead of ~20)")
    args = p.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bigkern-faults-stores-"))
    try:
        C.print_fault_rows(run_cases(tmp, args.quick))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
