"""Issue 23, no silent waits: paused and killed workers under ``bigkern predict``.

Every case runs the real ``bigkern predict`` command in a subprocess, with
``--scheduler`` pointing at a cluster started here, on seeded synthetic scenes
(``make_scenes(2, (64, 64), seed=3)``) and a ridge model fitted on them:

* **paused on memory (300 MiB)**: two workers with a 300 MiB memory limit and
  distributed's default pause fraction (80 %), the probe's setting; the command
  either finishes or is told why not.
* **paused on memory (forced)**: the same with the pause fraction at 5 %, so both
  workers are paused from the start whatever bigkern imports.
* **every worker killed**: two ``dask worker --no-nanny`` processes, killed with
  SIGKILL one second after the command connected.

For each: the time until the user is told (a ``bigkern:`` line on stderr naming
the paused or missing workers, counted from when the fault began: the kill, or
for a cluster paused already, the command's connection to it), the time
until the command ends, its exit code and its last ``bigkern: error`` line. The
command runs with ``--timeout`` (``bigkern.stall_timeout``) of 20 s, 10 s with
``--quick``.

Standalone, it also prints the worker plugins' memory footprint: a worker's
resident memory before and after bigkern's two worker plugins are registered,
and after ``import bigkern`` (what registering them cost before they were
pickled by value).

    python benchmarks/faults_hangs.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C

REPO = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(REPO)}
CLI = [sys.executable, "-m", "bigkern"]
#: stderr lines that tell the user what the watchdog sees
TOLD = re.compile(r"^bigkern: (\d+ of \d+ workers? paused|the cluster has no workers|"
                  r"no task has finished|the scheduler does not answer)")


def _setup(tmp: Path) -> tuple[Path, Path]:
    from bigkern.datasets import make_scenes
    from bigkern.scenes import write_scenes

    store, model = tmp / "s.zarr", tmp / "m.zarr"
    write_scenes(make_scenes(2, (64, 64), seed=3, radiances=False), store,
                 chunks={"scene": 1, "y": 16, "x": 64})
    subprocess.run([*CLI, "fit", str(store), "-o", str(model), "--model", "ridge",
                    "--no-search", "--param", "omega=0.9", "--param", "lam=0.05",
                    "--workers", "1"], env=ENV, check=True, capture_output=True, timeout=300)
    return store, model


class _Command:
    """A ``bigkern`` subprocess whose stderr lines are read with their arrival times."""

    def __init__(self, *args: Any, cwd: Path, timeout: float) -> None:
        self.start = time.monotonic()
        self.proc = subprocess.Popen([*CLI, *map(str, args)], cwd=cwd, env=ENV, text=True,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.lines: list[tuple[float, str]] = []
        self.connected = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.timeout = timeout

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append((time.monotonic(), line.rstrip("\n")))
            if line.startswith("bigkern: connected to"):
                self.connected.set()

    def finish(self) -> tuple[int | None, float]:
        """Exit code (None: killed after ``timeout``) and when it ended."""
        try:
            code: int | None = self.proc.wait(self.timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            code = None
        ended = time.monotonic()
        self._reader.join(5)
        return code, ended

    def told(self) -> float | None:
        return next((t for t, line in self.lines if TOLD.match(line)), None)

    def error(self) -> str:
        errors = [line for _, line in self.lines if line.startswith("bigkern: error")]
        return errors[-1] if errors else ""

    def tracebacks(self) -> int:
        return sum(line.startswith("Traceback") for _, line in self.lines)


def _row(case: str, command: _Command, fault_at: float, code: int | None,
         ended: float) -> dict:
    told = command.told()
    said = f"told after {told - fault_at:.1f} s" if told is not None else "NEVER told"
    if code is None:
        outcome = f"{said}; still waiting after {ended - fault_at:.0f} s (killed)"
    else:
        outcome = (f"{said}; ended after {ended - fault_at:.1f} s, exit {code}"
                   f"{f', {command.tracebacks()} traceback(s)' if command.tracebacks() else ''}"
                   f": {command.error() or '(no error)'}")
    clear = code == 0 or (code is not None and bool(command.error())
                          and not command.tracebacks() and told is not None)
    return {"case": case, "outcome": outcome, "ok": clear, "lost": False}


def paused(tmp: Path, store: Path, model: Path, timeout: float, fraction: float | None) -> dict:
    """``bigkern predict`` on two workers limited to 300 MiB (pause fraction ``fraction``)."""
    import dask
    from distributed import LocalCluster

    settings = {} if fraction is None else {"distributed.worker.memory.pause": fraction}
    with dask.config.set(settings):
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, memory_limit="300MiB",
                               dashboard_address=":0", silence_logs=50)
    try:
        out = tmp / f"paused-{fraction}.zarr"
        command = _Command("predict", store, model, "-o", out, "--scheduler",
                           cluster.scheduler_address, "--timeout", timeout, cwd=tmp,
                           timeout=timeout + 120)
        code, ended = command.finish()
    finally:
        cluster.close()
    how = ("default pause fraction 80 %" if fraction is None
           else f"pause fraction {fraction:.0%}: paused from the start")
    connected = next((t for t, line in command.lines if line.startswith("bigkern: connected")),
                     command.start)  # the cluster was paused before: count from the connection
    return _row(f"predict --timeout {timeout:g} on 2 workers of 300 MiB ({how})", command,
                connected, code, ended)


def killed(tmp: Path, store: Path, model: Path, timeout: float) -> dict:
    """``bigkern predict`` whose two (nanny-less) workers are killed once it has connected."""
    from distributed import LocalCluster

    with LocalCluster(n_workers=0, dashboard_address=":0", silence_logs=50) as cluster:
        workers = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker",
                                     cluster.scheduler_address, "--no-nanny", "--nthreads", "1",
                                     "--no-dashboard"], cwd=tmp, env=ENV,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                   for _ in range(2)]
        try:
            deadline = time.monotonic() + 60
            while len(cluster.scheduler.workers) < 2 and time.monotonic() < deadline:
                time.sleep(0.1)
            command = _Command("predict", store, model, "-o", tmp / "killed.zarr",
                               "--scheduler", cluster.scheduler_address, "--timeout", timeout,
                               cwd=tmp, timeout=timeout + 120)
            command.connected.wait(60)
            time.sleep(1.0)
            for w in workers:
                w.send_signal(signal.SIGKILL)
            fault_at = time.monotonic()
            code, ended = command.finish()
        finally:
            for w in workers:
                w.kill()
                w.wait()
    return _row(f"predict --timeout {timeout:g}: both workers killed (SIGKILL, no nanny) 1 s "
                f"after it connected", command, fault_at, code, ended)


def run_cases(tmp: Path, quick: bool = False) -> list[dict]:
    """The cases above; each a dict with ``case``, ``outcome``, ``ok`` and ``lost``."""
    store, model = _setup(tmp)
    timeout = 10.0 if quick else 20.0
    return [paused(tmp, store, model, timeout, None),
            paused(tmp, store, model, timeout, 0.05),
            killed(tmp, store, model, timeout)]


def plugin_footprint() -> dict[str, float]:
    """A worker's resident memory (MiB) before and after bigkern's plugins, and with bigkern.

    One worker process of a LocalCluster with a plain ``distributed.Client``; the
    memory is the process's RSS, as distributed's memory monitor reads it.
    """
    from distributed import Client, LocalCluster

    from bigkern.cluster.logs import QuietExpectedErrors
    from bigkern.cluster.worker_plugins import PinBlasThreads

    def rss() -> tuple[float, list[str]]:
        import sys as _sys

        import psutil

        heavy = [m for m in ("bigkern", "numba", "scipy", "sklearn", "xarray", "zarr", "pandas")
                 if m in _sys.modules]
        return psutil.Process().memory_info().rss / 2**20, heavy

    def import_bigkern() -> None:
        import bigkern  # noqa: F401

    with LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=":0",
                      silence_logs=50) as cluster, Client(cluster) as client:
        before, _ = next(iter(client.run(rss).values()))
        client.register_plugin(PinBlasThreads(1))
        client.register_plugin(QuietExpectedErrors())
        after, loaded = next(iter(client.run(rss).values()))
        client.run(import_bigkern)
        full, _ = next(iter(client.run(rss).values()))
    return {"before": before, "plugins": after, "imported": ", ".join(loaded) or "none of them",
            "bigkern": full}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="--timeout 10 instead of 20")
    args = p.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bigkern-faults-hangs-"))
    try:
        C.print_fault_rows(run_cases(tmp, args.quick))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    f = plugin_footprint()
    print(f"\nworker plugins' footprint (RSS of one worker): {f['before']:.0f} MiB before, "
          f"{f['plugins']:.0f} MiB with bigkern's two plugins (heavy modules loaded: "
          f"{f['imported']}), {f['bigkern']:.0f} MiB after import bigkern")


if __name__ == "__main__":
    main()
