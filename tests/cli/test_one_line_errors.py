"""One clean line per expected error: no worker log, no traceback above it.

A corrupt chunk is read by a worker of the embedded cluster, which shares the
command's terminal: distributed logs the failed task there ("Compute Failed",
the task, a traceback) before the command prints its one-line error, and
closing the cluster after the error adds warnings of its own. The CLI filters
those records in its process and in every worker of a cluster it built
(:mod:`bigkern.cluster.logs`), so stderr holds the status line of the
connection and the error; ``--verbose`` brings the logs back. The filter keeps
every record that is not an expected bigkern error: real bugs still show their
tracebacks and their workers' logs.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from distributed import Client, LocalCluster
from distributed.comm.core import CommClosedError

from bigkern.cli.main import main
from bigkern.cli.parser import build_parser
from bigkern.cluster.client import connect, owns_cluster
from bigkern.cluster.logs import ExpectedErrorFilter, QuietExpectedErrors
from bigkern.datasets import make_scenes
from bigkern.errors import DataQualityError, StoreError
from bigkern.jobs.fit import fit_scenes
from bigkern.models import save_model
from bigkern.scenes import write_scenes

pytestmark = [pytest.mark.slow_file(seconds=40), pytest.mark.timeout(300)]

#: The line bigkern.connect prints on connecting: the one line allowed beside the error.
_STATUS = re.compile(r"bigkern: connected to \S+ with \d+ workers"
                     r"( \((dashboard \S+|no dashboard: [^()]*)\))?$")
#: Warnings distributed logs about a loaded machine, whatever the command does.
_LOAD = re.compile(r"\S+ \S+ - distributed\.[\w.]+ - WARNING - "
                   r"(Event loop was unresponsive|full garbage collections took)")
#: Progress lines (bigkern.cluster.progress) of a computation that ran past progress_delay.
_PROGRESS = re.compile(r"bigkern: .+: (\d+% of \d+ tasks, [\d.]+ s|(done|stopped), \d+ tasks "
                       r"in [\d.]+ s)$")
#: The UserWarning (and its source line) of a worker slow to create its scratch directory.
_SLOW_DISK = re.compile(r"^\S+: UserWarning: Creating scratch directories is taking a "
                        r"surprisingly long time.*\n(?:[ \t]+\S.*\n)?", re.MULTILINE)


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> dict[str, Path]:
    """A clean scene store, a copy with a corrupt CORR chunk, and a model of the clean one."""
    root = tmp_path_factory.mktemp("cli-errors")
    ds = make_scenes(2, (48, 64), seed=2, radiances=False).compute()
    clean = write_scenes(ds, root / "clean.zarr")
    bad = write_scenes(ds, root / "bad.zarr")
    chunk = next(p for p in (bad / "CORR").rglob("*") if p.is_file() and p.name != "zarr.json")
    data = bytearray(chunk.read_bytes())
    data[len(data) // 2] ^= 0xFF
    chunk.write_bytes(bytes(data))
    model = save_model(fit_scenes(ds, search=False, params={"omega": 0.8, "C": 1.0}).model,
                       root / "model.zarr")
    return {"clean": clean, "bad": bad, "model": model, "root": root}


def _bigkern(*args: str | Path, cwd: Path, workers: int = 2,
             env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """The real command, in a fresh process, on an embedded cluster of ``workers`` workers."""
    return subprocess.run(
        [sys.executable, "-m", "bigkern", *map(str, args), "--workers", str(workers)],
        cwd=cwd, capture_output=True, text=True, timeout=240, env={**os.environ, **(env or {})})


def _the_error_line(stderr: str) -> str:
    """The error line, after checking that stderr holds nothing else to speak of.

    Nothing but the connection's status line first and the error line last;
    beside them only progress lines (a computation that ran past
    ``bigkern.progress_delay``) and distributed's warnings about a loaded machine
    (an event loop held up by a busy CI machine, a slow scratch directory), which
    any command may log while it starts or computes. No traceback, no record of
    the failed task, no closing chatter.
    """
    assert "Traceback" not in stderr and "Compute Failed" not in stderr, stderr
    lines = [line for line in _SLOW_DISK.sub("", stderr).splitlines() if line.strip()]
    told = [line for line in lines if not (_LOAD.match(line) or _PROGRESS.match(line))]
    assert len(told) == 2 and _STATUS.match(told[0]) and told[1] == lines[-1], stderr
    assert told[1].startswith("bigkern: error: "), stderr
    return told[1]


# --- the command, on a real embedded cluster ------------------------------------------------

def test_fit_on_a_corrupt_chunk_prints_one_line(stores):
    out = _bigkern("fit", "bad.zarr", "-o", "fitted.zarr", cwd=stores["root"])
    assert out.returncode == 1
    line = _the_error_line(out.stderr)
    assert line == ("bigkern: error: store bad.zarr: variable 'CORR', chunk (0, 0, 0): it "
                    "fails its CRC-32C checksum (corrupt or truncated bytes)"), line
    assert not (stores["root"] / "fitted.zarr").exists()


def test_predict_on_a_corrupt_chunk_prints_one_line(stores):
    out = _bigkern("predict", "bad.zarr", "model.zarr", "-o", "pred.zarr", cwd=stores["root"])
    assert out.returncode == 1
    line = _the_error_line(out.stderr)
    assert line.startswith("bigkern: error: store bad.zarr: variable 'CORR', chunk (0, 0, 0): "
                           "it fails its CRC-32C checksum"), line


def test_verbose_shows_the_worker_log_and_the_traceback(stores):
    out = _bigkern("fit", "bad.zarr", "-o", "verbose.zarr", "--verbose", cwd=stores["root"],
                   workers=1)
    assert out.returncode == 1
    assert "distributed.worker - ERROR - Compute Failed" in out.stderr
    assert "StoreError" in out.stderr and "Traceback (most recent call last)" in out.stderr
    assert out.stderr.rstrip().splitlines()[-1].startswith("bigkern: error: store bad.zarr")


def test_an_unexpected_error_keeps_its_traceback_and_worker_log(stores):
    """A setting of the wrong type (a list where a fraction belongs) fails in a worker task
    with a TypeError, no error bigkern expects: its worker log and traceback are shown."""
    out = _bigkern("fit", "clean.zarr", "-o", "bug.zarr", cwd=stores["root"], workers=1,
                   env={"BIGKERN_SUSPECT_FILL_FRACTION": "[1]"})
    assert out.returncode == 1
    assert "distributed.worker - ERROR - Compute Failed" in out.stderr
    assert "Traceback (most recent call last)" in out.stderr
    assert out.stderr.rstrip().splitlines()[-1].startswith("TypeError: float() argument")
    assert "bigkern: error:" not in out.stderr


@pytest.mark.parametrize("command", [
    ["demo"], ["synth", "-o", "s.zarr"], ["ingest", "misr-text", "a.txt", "-o", "s.zarr"],
    ["fit", "s.zarr", "-o", "m.zarr"], ["predict", "s.zarr", "m.zarr", "-o", "p.zarr"],
])
def test_every_command_takes_verbose(command):
    parser = build_parser()
    assert parser.parse_args([*command, "--verbose"]).verbose
    assert parser.parse_args([*command, "-v"]).verbose
    assert not parser.parse_args(command).verbose


def test_a_cluster_connected_to_is_left_alone(client, tmp_path):
    """The CLI filters neither the workers of a scheduler it was given (their logs are the
    operator's record, not on this terminal), nor, once done, its own process."""
    with connect(client.scheduler.address, quiet=True) as other:
        assert not owns_cluster(other)
    assert main(["synth", "-o", str(tmp_path / "s.zarr"), "--scenes", "1", "--shape", "8", "8",
                 "--scheduler", client.scheduler.address]) == 0
    plugins = client.run(lambda dask_worker: sorted(dask_worker.plugins))
    assert not any(QuietExpectedErrors.name in names for names in plugins.values()), plugins
    handlers = [*logging.getLogger("distributed").handlers, logging.lastResort]
    assert not any(isinstance(f, ExpectedErrorFilter) for h in handlers for f in h.filters)


# --- the filter ------------------------------------------------------------------------------

def _record(msg: str, *args: object, level: int = logging.ERROR, exc: BaseException | None = None,
            name: str = "distributed.worker") -> logging.LogRecord:
    exc_info = (type(exc), exc, None) if exc is not None else None
    return logging.LogRecord(name, level, __file__, 1, msg, args, exc_info)


_COMPUTE_FAILED = ("Compute Failed\nKey:       %s\nState:     %s\nTask:  %s\n"
                   "Exception: %r\nTraceback: %r\n")


def test_filter_judges_by_the_exception_not_by_any_mention():
    keep = ExpectedErrorFilter().filter
    # distributed's record of a failed task carries the exception's repr only
    assert not keep(_record(_COMPUTE_FAILED, "k", "executing", "<Task k f(...)>",
                            "StoreError('store s.zarr: variable …')", "  File …"))
    assert not keep(_record(_COMPUTE_FAILED, "k", "executing", "<Task k f(...)>",
                            'DataQualityError("3 of 4 rows")', ""))
    # a bug's record is kept, even if the task's text mentions an expected error
    assert keep(_record(_COMPUTE_FAILED, "k", "executing", "<Task k raise_(StoreError(...))>",
                        "TypeError('x')", ""))
    assert not keep(_record("Error in callback", exc=DataQualityError("too damaged")))
    assert keep(_record("Error in callback", exc=ZeroDivisionError("bug")))
    assert not keep(_record("Compute Failed\nException: 'StoreError(\"x\")'\n"))  # pre-formatted
    assert keep(_record("a StoreError( mentioned in passing"))
    assert not keep(_record(StoreError("logged as the message")))  # type: ignore[arg-type]


def test_filter_drops_closing_chatter_only_while_closing():
    closing = [False]
    keep = ExpectedErrorFilter(lambda: closing[0]).filter
    cancelled = _record("Async instruction for <Task …> ended with CancelledError",
                        level=logging.WARNING, name="distributed.worker.state_machine")
    killed = _record("Worker process still alive after 4.0 seconds, killing",
                     level=logging.WARNING, name="distributed.nanny")
    closed = _record("Failed to communicate", exc=CommClosedError("Stream is closed"))
    bug = _record("Unhandled exception", exc=ZeroDivisionError("bug"))
    other = _record("not distributed's", level=logging.WARNING, name="myapp")
    assert all(keep(r) for r in (cancelled, killed, closed, bug, other))
    closing[0] = True
    assert not any(keep(r) for r in (cancelled, killed, closed))
    assert keep(bug) and keep(other)


def test_a_worker_of_an_owned_cluster_drops_closed_connection_errors_at_any_time():
    """The heartbeat of a worker of a cluster the command closes may find the scheduler gone
    before the worker's status says closing (it failed CI once, a traceback on stderr)."""
    keep = ExpectedErrorFilter(lambda: False, closed_connections=True).filter
    heartbeat = _record("Failed to communicate with scheduler during heartbeat.",
                        exc=CommClosedError("Stream is closed"))
    bug = _record("Unhandled exception", exc=ZeroDivisionError("bug"))
    slow = _record("Event loop was unresponsive", level=logging.WARNING,
                   name="distributed.core")
    assert not keep(heartbeat)
    assert keep(bug) and keep(slow)  # other errors, and warnings, until the cluster closes
    assert ExpectedErrorFilter(lambda: False).filter(heartbeat)  # a cluster not owned


class _Keep(logging.Handler):
    """Keeps the records distributed's logger hands it (a worker in this process)."""

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture()
def kept():
    handler = _Keep()
    logging.getLogger("distributed").addHandler(handler)
    yield handler
    logging.getLogger("distributed").removeHandler(handler)


def _raise(error: type[Exception]) -> None:
    raise error("raised by a task on purpose")


def _in_process_cluster() -> LocalCluster:
    """A one-worker cluster in this process: its worker's records reach this process's
    handlers, which the plugin filters like any handler of distributed's logger."""
    return LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                        dashboard_address=":0")


def test_worker_filter_drops_expected_errors_only(kept):
    """On a real worker: a StoreError's "Compute Failed" record is dropped, a bug's is kept."""
    with _in_process_cluster() as cluster, Client(cluster, set_as_default=False) as client:
        client.register_plugin(QuietExpectedErrors())
        for error in (StoreError, ZeroDivisionError):
            with pytest.raises(error):
                client.submit(_raise, error, pure=False).result(timeout=60)
        filtered = any(isinstance(f, ExpectedErrorFilter) for f in kept.filters)
        client.unregister_worker_plugin(QuietExpectedErrors.name)
        # the plugin's teardown takes the filter off again
        assert filtered
        assert not any(isinstance(f, ExpectedErrorFilter) for f in kept.filters)
    failed = [r.getMessage() for r in kept.records if "Compute Failed" in r.getMessage()]
    assert len(failed) == 1 and "ZeroDivisionError" in failed[0], failed


def _sleep(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


@pytest.mark.parametrize("quiet", [False, True])
def test_worker_closing_with_a_task_running_is_quiet(kept, quiet):
    """A worker closed while it runs a task (the cluster closing after an error) warns that
    the task was cancelled; with the plugin, that warning is dropped."""
    with _in_process_cluster() as cluster, Client(cluster, set_as_default=False) as client:
        if quiet:
            client.register_plugin(QuietExpectedErrors())
        running = client.submit(_sleep, 1.5, pure=False)
        deadline = time.monotonic() + 30
        while not cluster.workers[0].state.executing and time.monotonic() < deadline:
            time.sleep(0.02)
        assert cluster.workers[0].state.executing and running.status == "pending"
    cancelled = [r for r in kept.records if "ended with CancelledError" in r.getMessage()]
    assert len(cancelled) == (0 if quiet else 1), [r.getMessage() for r in kept.records]
