"""Shared helpers of the benchmarks: arguments, cluster, timing, memory sampling, tables.

Every benchmark runs on a ``distributed.LocalCluster`` of 2 worker processes with
1 thread each (the scheduler and the nannies live in the client process). Peak
memory is the maximum over a stage of the sum of the resident set sizes (RSS)
of the client process and the worker processes, sampled with psutil every 0.2 s
in a background thread. Before each stage the workers' and the client's free
heap memory is handed back to the OS (``malloc_trim``) so that one stage's
leftovers do not count against the next.

Not part of the test suite: run the scripts by hand (see benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import datetime as _dt
import gc
import io
import os
import platform
import shlex
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

GB = 1e9
SAMPLE_SECONDS = 0.2


# ---------------------------------------------------------------------------
# arguments and header
# ---------------------------------------------------------------------------
def parser(description: str, name: str) -> argparse.ArgumentParser:
    """Argument parser with the options every benchmark takes."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--small", action="store_true",
                   help="quick smoke size (< 1 min) to check that the script works")
    p.add_argument("--workdir", type=Path,
                   default=Path(tempfile.gettempdir()) / f"bigkern-bench-{name}",
                   help="where the data stores are created (reused when present with the "
                        "right size); default %(default)s")
    p.add_argument("--profile", action="store_true",
                   help="also print dask task-stream time per task kind and a client cProfile "
                        "of bigkern's steps")
    return p


def command_line() -> str:
    """The command line as it was typed (``python benchmarks/x.py ...``)."""
    return "python " + shlex.join(sys.argv)


def load() -> str:
    """The 1/5/15-minute load averages."""
    return "/".join(f"{v:.2f}" for v in os.getloadavg())


def cpu_model() -> str:
    """The processor's model name (from /proc/cpuinfo; else platform.processor())."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


def header(title: str) -> None:
    """Print the command line, date, machine and library versions."""
    import dask
    import distributed
    import numpy
    import sklearn
    import zarr

    import bigkern

    mem = psutil.virtual_memory().total / 2**30
    print(f"$ {command_line()}")
    print(f"# {title}")
    print(f"# date {_dt.datetime.now().astimezone().isoformat(timespec='seconds')}, "
          f"host {platform.node()}, {cpu_model()}, {os.cpu_count()} cores, {mem:.0f} GiB RAM, "
          f"load {load()} (1/5/15 min)")
    print(f"# bigkern from {bigkern_source()}")
    print(f"# python {platform.python_version()}, bigkern {bigkern.__version__}, "
          f"numpy {numpy.__version__}, dask {dask.__version__}, "
          f"distributed {distributed.__version__}, zarr {zarr.__version__}, "
          f"scikit-learn {sklearn.__version__}")
    sys.stdout.flush()


def bigkern_source() -> str:
    """Where bigkern is imported from, with its git commit and modified files if in a repo."""
    import subprocess

    import bigkern

    pkg = Path(bigkern.__file__).resolve().parent

    def git(*a: str) -> str:
        return subprocess.run(["git", "-C", str(pkg), *a], capture_output=True, text=True,
                              check=True).stdout.rstrip("\n")

    try:
        commit = git("rev-parse", "--short", "HEAD")
        dirty = [ln[3:] for ln in git("status", "--porcelain", "--", ".").splitlines()]
    except (subprocess.CalledProcessError, OSError):
        stamp = pkg.parent / "COMMIT"  # written by hand next to an exported snapshot
        what = stamp.read_text().strip() if stamp.exists() else "not a git checkout"
        return f"{pkg} ({what})"
    mods = f"; uncommitted changes in {', '.join(dirty)}" if dirty else "; clean"
    return f"{pkg} (git {commit}{mods})"


# ---------------------------------------------------------------------------
# cluster and memory
# ---------------------------------------------------------------------------
def _trim() -> int:
    gc.collect()
    try:
        return int(ctypes.CDLL("libc.so.6").malloc_trim(0))
    except OSError:  # pragma: no cover - not glibc
        return 0


@contextlib.contextmanager
def cluster(n_workers: int = 2, threads_per_worker: int = 1) -> Iterator[Any]:
    """A Client on an embedded LocalCluster (2 processes × 1 thread), progress bars off.

    Uses :func:`bigkern.connect`, so BLAS is pinned to 1 thread on the workers
    as bigkern does for its users.
    """
    import bigkern

    with bigkern.config.set(progress=False), bigkern.connect(
        n_workers=n_workers, threads_per_worker=threads_per_worker, quiet=True
    ) as client:
        yield client


class MemorySampler:
    """Sum of the RSS of the client and the worker processes, sampled every 0.2 s."""

    def __init__(self, client: Any, interval: float = SAMPLE_SECONDS) -> None:
        pids = [os.getpid(), *client.run(os.getpid).values()]
        self.procs = [psutil.Process(p) for p in pids]
        self.interval = interval
        self._peak = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="rss-sampler")
        self._thread.start()

    def current(self) -> int:
        total = 0
        for p in self.procs:
            with contextlib.suppress(psutil.Error):
                total += p.memory_info().rss
        return total

    def _run(self) -> None:
        while not self._stop.is_set():
            rss = self.current()
            with self._lock:
                self._peak = max(self._peak, rss)
            self._stop.wait(self.interval)

    def reset(self) -> int:
        """Start a new peak at the current RSS; return it."""
        rss = self.current()
        with self._lock:
            self._peak = rss
        return rss

    @property
    def peak(self) -> int:
        with self._lock:
            return max(self._peak, self.current())

    def close(self) -> None:
        self._stop.set()
        self._thread.join()


def trim_memory(client: Any) -> None:
    """Return free heap memory of the workers and of the client to the OS."""
    client.run(_trim)
    _trim()


# ---------------------------------------------------------------------------
# stages
# ---------------------------------------------------------------------------
@dataclass
class Stage:
    name: str
    seconds: float = 0.0
    peak: int = 0  # bytes, sum of client + worker RSS
    start_rss: int = 0
    items: float | None = None  # pixels / samples, for a throughput column
    note: str = ""
    load_before: str = ""
    load_after: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def rate(self) -> float | None:
        return None if self.items is None or self.seconds <= 0 else self.items / self.seconds


class Bench:
    """Runs stages on a client, timing them and sampling their peak memory."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.sampler = MemorySampler(client)
        trim_memory(client)
        self.idle_rss = self.sampler.current()
        self.stages: list[Stage] = []

    @contextlib.contextmanager
    def stage(self, name: str, *, items: float | None = None, note: str = "",
              quiet: bool = False) -> Iterator[Stage]:
        """Time the body; record wall time, peak RSS, load. Prints a one-line log."""
        trim_memory(self.client)
        st = Stage(name, items=items, note=note, load_before=load())
        st.start_rss = self.sampler.reset()
        t0 = time.perf_counter()
        try:
            yield st
        finally:
            st.seconds = time.perf_counter() - t0
            st.peak = self.sampler.peak
            st.load_after = load()
            self.stages.append(st)
            if not quiet:
                print(f"  [{st.seconds:8.2f} s, peak {st.peak / GB:5.2f} GB, "
                      f"load {st.load_after}] {name}", flush=True)

    def best(self, name: str) -> Stage:
        """The fastest run of stage ``name`` (peak = the largest over its runs)."""
        runs = [s for s in self.stages if s.name == name]
        if not runs:
            raise KeyError(name)
        fastest = min(runs, key=lambda s: s.seconds)
        out = Stage(**{**fastest.__dict__})
        out.peak = max(s.peak for s in runs)
        out.extra = {**fastest.extra, "runs": [s.seconds for s in runs]}
        return out

    def close(self) -> None:
        self.sampler.close()


@contextlib.contextmanager
def benched_cluster() -> Iterator[tuple[Any, Bench]]:
    """The benchmarks' cluster (:func:`cluster`) and a :class:`Bench` on it.

    Prints the idle memory of the cluster; the sampler stops when the block ends.
    """
    with cluster() as client:
        bench = Bench(client)
        print(f"# cluster: 2 worker processes x 1 thread; idle RSS (client + workers) "
              f"{bench.idle_rss / GB:.2f} GB")
        try:
            yield client, bench
        finally:
            bench.close()


def repeat(bench: Bench, name: str, fn: Any, n: int, **kwargs: Any) -> Any:
    """Run ``fn()`` ``n`` times as stage ``name``; return the last result."""
    out = None
    for _ in range(n):
        with bench.stage(name, **kwargs):
            out = fn()
    return out


# ---------------------------------------------------------------------------
# tables and profiles
# ---------------------------------------------------------------------------
def best_of(fn: Any, repeat: int, warmup: int) -> tuple[float, float, Any]:
    """(best, median) seconds of ``repeat`` calls after ``warmup`` untimed ones; last result."""
    import numpy as np

    out = None
    for _ in range(warmup):
        out = fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), float(np.median(times)), out


def fmt_seconds(s: float) -> str:
    return f"{s:.2f}" if s < 100 else f"{s:.0f}"


def fmt_rate(r: float | None) -> str:
    if r is None:
        return ""
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if r >= scale:
            return f"{r / scale:.2f} {unit}/s"
    return f"{r:.1f} /s"


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]],
                align: str | None = None) -> None:
    """A GitHub-markdown table with aligned columns (first column left, others right)."""
    cells = [[str(h) for h in headers]] + [["" if c is None else str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    align = align or "l" + "r" * (len(headers) - 1)

    def line(r: Sequence[str]) -> str:
        parts = [c.ljust(w) if a == "l" else c.rjust(w)
                 for c, w, a in zip(r, widths, align, strict=True)]
        return "| " + " | ".join(parts) + " |"

    print(line(cells[0]))
    print("|" + "|".join((":" + "-" * (w + 1)) if a == "l" else ("-" * (w + 1) + ":")
                         for w, a in zip(widths, align, strict=True)) + "|")
    for r in cells[1:]:
        print(line(r))
    sys.stdout.flush()


@contextlib.contextmanager
def task_profile(client: Any, enabled: bool, title: str) -> Iterator[None]:
    """With ``enabled``: print the task stream's compute time per task kind after the body."""
    if not enabled:
        yield
        return
    from distributed import get_task_stream

    with get_task_stream(client) as ts:
        yield
    summarize_tasks(ts.data, title)


def _prefix(key: Any) -> str:
    from dask.utils import key_split

    return key_split(key)


def summarize_tasks(records: Sequence[dict[str, Any]], title: str) -> None:
    """Compute / transfer / disk time per task kind from ``get_task_stream`` records."""
    per: dict[str, dict[str, float]] = {}
    for rec in records:
        k = _prefix(rec["key"])
        d = per.setdefault(k, {"tasks": 0, "compute": 0.0, "transfer": 0.0, "other": 0.0})
        d["tasks"] += 1
        for part in rec.get("startstops", ()):
            dur = part["stop"] - part["start"]
            action = part["action"]
            if action == "compute":
                d["compute"] += dur
            elif action == "transfer":
                d["transfer"] += dur
            else:
                d["other"] += dur
    print(f"\n  task stream ({title}): summed over both workers")
    rows = sorted(per.items(), key=lambda kv: -kv[1]["compute"])
    print_table(
        ["task kind", "tasks", "compute s", "transfer s", "disk/other s"],
        [[k, int(v["tasks"]), f"{v['compute']:.2f}", f"{v['transfer']:.2f}",
          f"{v['other']:.2f}"] for k, v in rows],
    )


@contextlib.contextmanager
def client_profile(enabled: bool, title: str, top: int = 12) -> Iterator[None]:
    """With ``enabled``: cProfile the client side of the body and print the top entries."""
    if not enabled:
        yield
        return
    import cProfile
    import io
    import pstats

    prof = cProfile.Profile()
    prof.enable()
    try:
        yield
    finally:
        prof.disable()
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(top)
        text = buf.getvalue()
        start = text.find("   ncalls")
        print(f"\n  client cProfile ({title}), top {top} by cumulative time:")
        print("\n".join("    " + ln for ln in text[start:].splitlines() if ln.strip()))
        sys.stdout.flush()


def pendigits() -> tuple[Any, Any]:
    """The rows and integer labels of ``../shared/data/classification/pendigits.csv``
    (10,992 × 16, 10 classes); exits saying so when the shared data are absent."""
    import numpy as np

    from bigkern.datasets import shared_data_dir

    root = shared_data_dir()
    path = None if root is None else Path(root) / "classification" / "pendigits.csv"
    if path is None or not path.exists():
        raise SystemExit("../shared/data/classification/pendigits.csv is not present")
    raw = np.loadtxt(path, delimiter=",", skiprows=1)
    return raw[:, :-1], raw[:, -1].astype(int)


def dir_size(path: Path) -> int:
    """Bytes of the files under ``path``."""
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())


def run_teed(name: str, small: bool, out: Path | None, fn: Any) -> None:
    """Run ``fn()`` with bigkern's progress bars off, printing and writing what it prints.

    The output goes to ``out``, else ``benchmarks/results/<name>.txt`` (a
    temporary file for a ``--small`` smoke run).
    """
    import bigkern

    out = out or (Path(tempfile.gettempdir()) / f"bigkern-bench-{name}.txt" if small
                  else Path(__file__).resolve().parent / "results" / f"{name}.txt")
    out.parent.mkdir(parents=True, exist_ok=True)
    buf = io.StringIO()
    with bigkern.config.set(progress=False), contextlib.redirect_stdout(Tee(sys.stdout, buf)):
        fn()
    out.write_text(buf.getvalue())
    print(f"output written to {out}")


class Tee(io.TextIOBase):
    """Write to several streams."""

    def __init__(self, *streams: Any) -> None:
        self.streams = streams

    def write(self, s: str) -> int:
        for st in self.streams:
            st.write(s)
        return len(s)

    def flush(self) -> None:
        for st in self.streams:
            st.flush()


def print_fault_rows(rows: Sequence[dict[str, Any]]) -> None:
    """Fault cases (``case``, ``outcome``, ``ok``, ``lost``) as an indented list."""
    for row in rows:
        print(f"- {row['case']}\n    {row['outcome']}\n    safe: {'yes' if row['ok'] else 'NO'}"
              f"; lost: {'YES' if row['lost'] else 'nothing'}")
