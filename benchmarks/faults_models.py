"""Issue 23, models checksummed whole and loads that cannot be bombed.

* **fuzz**: a small ridge classifier (``KernelRidgeClassifier(omega=1.0)`` on 40 rows
  of seeded ``make_scenes`` pixels: 40 basis rows x 3 features) is saved as zarr and as
  netCDF. Every byte of every file of the model (zarr: every ``zarr.json`` and chunk of
  the store; netCDF: the one file) is flipped in turn — **xor 0xFF**, the byte
  inverted — and the model loaded with ``load_model`` and used to predict the masks of a
  small scene (``make_scenes(1, (32, 32), seed=4)``, 1,024 pixels). Each flip is
  *refused* (a ``BigkernError``), *loaded with identical masks*, *loaded with changed
  masks* (a silent change: must be 0) or *another error* (a traceback: must be 0).
  ``--quick`` flips every 7th byte.
* **bombs**: the zarr model's ``coef`` declaring 10^9 and 10^12 elements, or 10^8
  chunks of one element, and the netCDF model's ``basis`` dimension declaring 10^9: the
  time to the refusal and the peak memory the load added (``ru_maxrss`` of a forked
  child, after minus before).

    python benchmarks/faults_models.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import resource
import shutil
import struct
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C

FEATURES = ["NDAI", "SD", "CORR"]


def _setup(tmp: Path) -> tuple[object, pd.DataFrame, np.ndarray, dict[str, Path]]:
    from bigkern.datasets import make_scenes
    from bigkern.models import KernelRidgeClassifier, save_model

    def rows(ds):
        X = pd.DataFrame({f: ds[f].values.ravel() for f in FEATURES})
        y = ds["label"].values.ravel() if "label" in ds else None
        return X, y

    X, y = rows(make_scenes(1, (32, 32), seed=3, radiances=False).compute())
    keep = np.flatnonzero(np.isfinite(X.values).all(axis=1) & (y != 0))
    train = np.concatenate([keep[y[keep] > 0][:20], keep[y[keep] < 0][:20]])
    model = KernelRidgeClassifier(omega=1.0).fit(X.iloc[train], y[train])
    scene, _ = rows(make_scenes(1, (32, 32), seed=4, radiances=False).compute())
    scene = scene[np.isfinite(scene.values).all(axis=1)]
    paths = {s: save_model(model, tmp / f"clean.{s}") for s in ("zarr", "nc")}
    return model, scene, np.asarray(model.predict(scene)), paths


def _files(path: Path) -> list[Path]:
    return [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())


def _try(path: Path, scene: pd.DataFrame, clean: np.ndarray) -> str:
    from bigkern.errors import BigkernError
    from bigkern.models import load_model

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            masks = np.asarray(load_model(path).predict(scene))
    except BigkernError:
        return "refused"
    except Exception as err:
        return f"error {type(err).__name__}"
    return "identical" if np.array_equal(masks, clean) else "changed"


def fuzz(tmp: Path, suffix: str, clean_path: Path, scene: pd.DataFrame, clean: np.ndarray,
         stride: int) -> dict:
    """Flip (xor 0xFF) every ``stride``-th byte of every file of a copy of the model."""
    work = tmp / f"fuzz.{suffix}"
    if work.exists():
        shutil.rmtree(work) if work.is_dir() else work.unlink()
    if clean_path.is_dir():
        shutil.copytree(clean_path, work)
    else:
        shutil.copy2(clean_path, work)
    counts: dict[str, int] = {}
    errors: dict[str, int] = {}
    files = _files(work)
    n_bytes = sum(f.stat().st_size for f in files)
    start = time.perf_counter()
    for f in files:
        original = f.read_bytes()
        for i in range(0, len(original), stride):
            data = bytearray(original)
            data[i] ^= 0xFF
            f.write_bytes(bytes(data))
            what = _try(work, scene, clean)
            kind = "error" if what.startswith("error") else what
            counts[kind] = counts.get(kind, 0) + 1
            if kind == "error":
                errors[what] = errors.get(what, 0) + 1
        f.write_bytes(original)
    seconds = time.perf_counter() - start
    flips = sum(counts.values())
    changed, other = counts.get("changed", 0), counts.get("error", 0)
    outcome = (f"{flips:,} flips: {counts.get('refused', 0):,} refused, "
               f"{counts.get('identical', 0):,} loaded with identical masks, {changed} loaded "
               f"with changed masks, {other} other errors"
               + (f" ({', '.join(f'{k}: {v}' for k, v in errors.items())})" if errors else "")
               + f"; {seconds:.0f} s")
    every = "every byte" if stride == 1 else f"every {stride}th byte"
    return {"case": f"{suffix} model: {every} of {len(files)} file(s), {n_bytes:,} bytes, "
                    f"flipped (xor 0xFF), loaded and used to predict a 32x32 scene",
            "outcome": outcome, "ok": changed == 0 and other == 0, "lost": changed > 0}


def _declare_zarr(path: Path, shape: list[int], chunks: list[int] | None) -> None:
    root = json.loads((path / "zarr.json").read_text())
    metas = [json.loads((path / "coef" / "zarr.json").read_text()),
             root["consolidated_metadata"]["metadata"]["coef"]]
    for meta in metas:
        meta["shape"] = shape
        if chunks is not None:
            meta["chunk_grid"]["configuration"]["chunk_shape"] = chunks
    (path / "coef" / "zarr.json").write_text(json.dumps(metas[0]))
    (path / "zarr.json").write_text(json.dumps(root))


def _declare_netcdf(path: Path, size: int) -> None:
    from bigkern.models.persistence.model_limits import netcdf_header_shapes

    data = bytearray(path.read_bytes())
    n = netcdf_header_shapes(bytes(data))["coef"][0]
    at = bytes(data).find(b"basis\x00\x00\x00" + struct.pack(">i", n))
    data[at + 8:at + 12] = struct.pack(">i", size)
    path.write_bytes(bytes(data))


def _load_in_child(path: str, queue: multiprocessing.Queue) -> None:
    from bigkern.models import load_model

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    try:
        load_model(path)
        outcome = "loaded"
    except Exception as err:
        outcome = f"{type(err).__name__}: {err}"
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    queue.put((outcome, seconds, (after - before) / 1024))


def bomb(tmp: Path, name: str, clean_path: Path, declare) -> dict:
    """Load a model whose metadata declares too much, in a forked child; time and memory."""
    slug = "".join(c if c.isalnum() else "-" for c in name.split(" (")[0]).strip("-")
    path = tmp / f"bomb-{slug}{clean_path.suffix}"
    if clean_path.is_dir():
        shutil.copytree(clean_path, path)
    else:
        shutil.copy2(clean_path, path)
    declare(path)
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_load_in_child, args=(str(path), queue))
    child.start()
    outcome, seconds, mib = queue.get(timeout=600)
    child.join()
    refused = outcome.startswith("StoreError")
    short = outcome.replace(str(path), path.name)
    return {"case": f"model declaring {name}: load_model",
            "outcome": f"{short} — in {seconds:.3f} s, peak memory +{mib:.1f} MiB",
            "ok": refused and seconds < 1.0, "lost": False}


def run_cases(tmp: Path, quick: bool = False) -> list[dict]:
    """The cases above; each a dict with ``case``, ``outcome``, ``ok`` and ``lost``."""
    _, scene, clean, paths = _setup(tmp)
    stride = 7 if quick else 1
    rows = [fuzz(tmp, s, paths[s], scene, clean, stride) for s in ("zarr", "nc")]
    rows += [
        bomb(tmp, "a shape of 10^9 (zarr)", paths["zarr"],
             lambda p: _declare_zarr(p, [10**9], None)),
        bomb(tmp, "a shape of 10^12 (zarr)", paths["zarr"],
             lambda p: _declare_zarr(p, [10**12], None)),
        bomb(tmp, "10^8 chunks (zarr)", paths["zarr"],
             lambda p: _declare_zarr(p, [10**8], [1])),
        bomb(tmp, "a dimension of 10^9 (netCDF)", paths["nc"],
             lambda p: _declare_netcdf(p, 10**9)),
    ]
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="flip every 7th byte, not every byte")
    args = p.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bigkern-faults-models-"))
    try:
        rows = run_cases(tmp, args.quick)
        C.print_fault_rows(rows)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(0 if all(r["ok"] and not r["lost"] for r in rows) else 1)


if __name__ == "__main__":
    main()
