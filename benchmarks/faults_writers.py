"""Issue 23, one writer per output: races, remote relative paths, a full disk, another kind.

Every case runs the real ``bigkern`` command in subprocesses on seeded synthetic scenes
(``make_scenes(2, (64, 64), seed=3)``, store chunks 1 x 16 x 64: 8 regions) and two
ridge models fitted on them with different omegas:

* **race**: two ``bigkern predict … -o R.zarr --overwrite`` started together on an
  existing ``R.zarr``, one per model, on one running cluster (a ``dask scheduler`` and one
  ``dask worker`` started as users start them); ``trials`` times. Each outcome is read
  from the exit codes and from whether ``R.zarr`` reads as complete and equals one
  model's prediction as a whole (mixed = regions of both).
* **remote relative path**: ``bigkern predict … -o victim.zarr --scheduler …`` run from
  one directory while the workers run in another that holds a complete, unrelated
  ``victim.zarr``.
* **full disk**: a prediction store on a tmpfs barely larger than it (``mount -t tmpfs``,
  root only; else the case is skipped, saying so), replaced with ``--overwrite`` by
  another model's prediction, which cannot fit beside it.
* **another kind**: ``predict … -o S.zarr --overwrite`` where ``S.zarr`` is a scenes store.

    python benchmarks/faults_writers.py [--quick]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C

REPO = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(REPO)}
CLI = [sys.executable, "-m", "bigkern"]


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(path.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(path)).encode())
            h.update(p.read_bytes())
    return h.hexdigest()


def _run(*args: Any, cwd: Path | None = None, timeout: float = 300) -> tuple[int, str]:
    done = subprocess.run([*CLI, *map(str, args)], cwd=cwd, env=ENV, capture_output=True,
                          text=True, timeout=timeout)
    lines = [ln for ln in done.stderr.splitlines() if ln.startswith("bigkern: error")]
    return done.returncode, (lines[-1] if lines else "")


def _decision(path: Path) -> np.ndarray | None:
    from bigkern.store.integrity import open_checked

    try:
        return open_checked(path)["decision"].values
    except Exception:
        return None


@contextmanager
def _cluster(cwd: Path) -> Iterator[str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    bin_dir = Path(sys.executable).parent
    procs = [subprocess.Popen([bin_dir / "dask", "scheduler", "--host", "127.0.0.1", "--port",
                               str(port), "--no-dashboard"], cwd=cwd, env=ENV,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    procs.append(subprocess.Popen([bin_dir / "dask", "worker", f"tcp://127.0.0.1:{port}",
                                   "--nthreads", "1", "--no-dashboard"], cwd=cwd, env=ENV,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    try:
        yield f"tcp://127.0.0.1:{port}"
    finally:
        for p in reversed(procs):
            p.terminate()
            p.wait(timeout=60)


def _setup(tmp: Path) -> tuple[Path, list[Path]]:
    from bigkern.datasets import make_scenes
    from bigkern.scenes import write_scenes

    store = tmp / "s.zarr"
    write_scenes(make_scenes(2, (64, 64), seed=3, radiances=False), store,
                 chunks={"scene": 1, "y": 16, "x": 64})
    models = []
    for i, omega in enumerate((0.9, 0.3)):
        out = tmp / f"m{i}.zarr"
        code, err = _run("fit", store, "-o", out, "--model", "ridge", "--no-search",
                         "--param", f"omega={omega}", "--param", "lam=0.05", "--workers", "1")
        assert code == 0, err
        models.append(out)
    return store, models


def race(tmp: Path, store: Path, models: list[Path], address: str, trials: int) -> dict:
    refs = []
    for m in models:
        assert _run("predict", store, m, "-o", tmp / f"ref-{m.name}", "--scheduler",
                    address)[0] == 0
        refs.append(_decision(tmp / f"ref-{m.name}"))
    out = tmp / "R.zarr"
    assert _run("predict", store, models[0], "-o", out, "--scheduler", address)[0] == 0
    tally = {"one refused": 0, "both ran, one after the other": 0, "mixed or unreadable": 0,
             "both failed": 0}
    for _ in range(trials):
        procs = [subprocess.Popen([*CLI, "predict", str(store), str(m), "-o", str(out),
                                   "--overwrite", "--scheduler", address], env=ENV,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                 for m in models]
        codes = [p.wait(timeout=300) for p in procs]
        for p in procs:
            p.stderr.close()
        got = _decision(out)
        whole = got is not None and any(np.array_equal(got, r, equal_nan=True) for r in refs)
        if not whole:
            tally["mixed or unreadable"] += 1
        elif codes.count(0) == 2:
            tally["both ran, one after the other"] += 1
        elif codes.count(0) == 1:
            tally["one refused"] += 1
        else:
            tally["both failed"] += 1
    outcome = "; ".join(f"{k}: {v}" for k, v in tally.items() if v)
    return {"case": f"race: 2 x predict --overwrite on one R.zarr, {trials} trials",
            "outcome": outcome, "ok": tally["mixed or unreadable"] == 0
            and tally["both failed"] == 0, "lost": tally["mixed or unreadable"] > 0}


def remote_relative(tmp: Path, store: Path, models: list[Path], address: str,
                    worker_dir: Path) -> dict:
    client_dir = tmp / "client"
    client_dir.mkdir()
    victim = worker_dir / "victim.zarr"
    assert _run("predict", store, models[1], "-o", victim, "--scheduler", address)[0] == 0
    before = _digest(victim)
    code, err = _run("predict", store, models[0], "-o", "victim.zarr", "--scheduler", address,
                     cwd=client_dir)
    intact = _digest(victim) == before
    written = _decision(client_dir / "victim.zarr") is not None
    return {"case": "predict -o victim.zarr (relative) with workers in another directory",
            "outcome": f"exit {code}; the workers' victim.zarr "
                       f"{'untouched' if intact else 'REWRITTEN'}; the client's "
                       f"{'written, complete' if written else 'missing'} {err}".strip(),
            "ok": intact and written and code == 0, "lost": not intact}


def full_disk(tmp: Path, store: Path, models: list[Path], address: str) -> dict:
    case = "predict --overwrite onto a full disk (tmpfs barely larger than the output)"
    if os.geteuid() != 0:
        return {"case": case, "outcome": "skipped: mounting a tmpfs needs root", "ok": True,
                "lost": False}
    mount = tmp / "small-disk"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(mount)], check=True)
    try:
        out = mount / "P.zarr"
        code, err = _run("predict", store, models[0], "-o", out, "--scheduler", address)
        assert code == 0, err
        # shrink the disk to 1.4 times what the output takes: a second one cannot fit beside
        used = shutil.disk_usage(mount).used
        kib = int(used * 1.4 / 1024)
        subprocess.run(["mount", "-o", f"remount,size={kib}k", str(mount)], check=True)
        size = used
        before = _digest(out)
        t = time.perf_counter()
        code, err = _run("predict", store, models[1], "-o", out, "--overwrite", "--scheduler",
                         address)
        seconds = time.perf_counter() - t
        if code == 0:  # it fitted after all: the new output must be whole
            whole = _decision(out) is not None
            return {"case": f"{case} ({size / 1024:.0f} KiB output, {kib} KiB disk)",
                    "outcome": f"exit 0 in {seconds:.1f} s: the new output fitted "
                               f"({'complete' if whole else 'BROKEN'}); disk not full enough",
                    "ok": whole, "lost": not whole}
        intact = _digest(out) == before and _decision(out) is not None
        return {"case": f"{case} ({size / 1024:.0f} KiB output, {kib} KiB disk)",
                "outcome": f"exit {code} in {seconds:.1f} s; old output "
                           f"{'complete and untouched' if intact else 'LOST'}; {err}",
                "ok": intact, "lost": not intact}
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def other_kind(tmp: Path, store: Path, models: list[Path], address: str) -> dict:
    from bigkern.datasets import make_scenes
    from bigkern.scenes import write_scenes

    target = tmp / "S.zarr"
    write_scenes(make_scenes(1, (16, 16), seed=1, radiances=False), target)
    before = _digest(target)
    code, err = _run("predict", store, models[0], "-o", target, "--overwrite", "--scheduler",
                     address)
    intact = _digest(target) == before
    return {"case": "predict -o S.zarr --overwrite where S.zarr is a scenes store",
            "outcome": f"exit {code}; {err}", "ok": code != 0 and intact, "lost": not intact}


def run_cases(tmp: Path, quick: bool = False) -> list[dict]:
    """The cases above; each a dict with ``case``, ``outcome``, ``ok`` and ``lost``."""
    store, models = _setup(tmp)
    worker_dir = tmp / "workers-cwd"
    worker_dir.mkdir()
    with _cluster(worker_dir) as address:
        rows = [race(tmp, store, models, address, trials=3 if quick else 10),
                remote_relative(tmp, store, models, address, worker_dir),
                full_disk(tmp, store, models, address),
                other_kind(tmp, store, models, address)]
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="3 race trials instead of 10")
    args = p.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bigkern-faults-writers-"))
    try:
        C.print_fault_rows(run_cases(tmp, args.quick))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
