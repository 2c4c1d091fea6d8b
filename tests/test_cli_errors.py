"""One clean line per expected error (issue 22): no worker log, no traceback above it.

A corrupt chunk is read by a worker of the embedded cluster, which shares the
command's terminal: distributed logs the failed task there ("Compute Failed",
the task, a traceback) before the command prints its one-line error. The CLI
filters those records in every worker (:mod:`bigkern.cluster_logs`), so stderr
holds the status line and the error; ``--verbose`` brings the logs back. The
filter keeps every record that is not an expected bigkern error: real bugs
still show their tracebacks.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest
from distributed import Client, LocalCluster

from bigkern.cluster_logs import QuietExpectedErrors
from bigkern.datasets import make_scenes
from bigkern.errors import StoreError
from bigkern.io import write_scenes
from bigkern.models import save_model
from bigkern.workflow import fit_scenes


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
    model = save_model(fit_scenes(ds, grid={}, params={"omega": 0.8, "C": 1.0}).model,
                       root / "model.zarr")
    return {"clean": clean, "bad": bad, "model": model, "root": root}


def _bigkern(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bigkern", *map(str, args), "--workers", "1"],
                          cwd=cwd, capture_output=True, text=True, timeout=300)


def _one_error_line(stderr: str) -> str:
    """The error line, after checking that the error is told once, last, and only there.

    Status lines (the cluster it connected to) and lines distributed logs about the
    machine (an event loop slowed by a loaded CI machine) may stand before it; no
    traceback, and no log record of the failed task, may.
    """
    assert "Traceback" not in stderr and "Compute Failed" not in stderr, stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert lines and lines[-1].startswith("bigkern: error: "), stderr
    assert sum("CRC-32C" in line for line in lines) == 1, stderr  # the error, said once
    assert not [line for line in lines if " - ERROR - " in line], stderr
    return lines[-1]


def test_fit_on_a_corrupt_chunk_prints_one_line(stores):
    out = _bigkern("fit", stores["bad"], "-o", stores["root"] / "fitted.zarr", cwd=stores["root"])
    assert out.returncode == 1
    line = _one_error_line(out.stderr)
    assert line.startswith("bigkern: error: store ")
    assert "variable 'CORR', chunk (0, 0, 0)" in line and "CRC-32C" in line
    assert not (stores["root"] / "fitted.zarr").exists()


def test_predict_on_a_corrupt_chunk_prints_one_line(stores):
    out = _bigkern("predict", stores["bad"], stores["model"], "-o",
                   stores["root"] / "pred.zarr", cwd=stores["root"])
    assert out.returncode == 1
    assert "variable 'CORR', chunk (0, 0, 0)" in _one_error_line(out.stderr)


def test_verbose_shows_the_worker_log_and_the_traceback(stores):
    out = _bigkern("fit", stores["bad"], "-o", stores["root"] / "verbose.zarr", "--verbose",
                   cwd=stores["root"])
    assert out.returncode == 1
    assert "distributed.worker - ERROR - Compute Failed" in out.stderr
    assert "Traceback" in out.stderr
    assert out.stderr.rstrip().splitlines()[-1].startswith("bigkern: error: store ")


def _raise(error: type[Exception]) -> None:
    raise error("raised by a task on purpose")


def test_worker_filter_drops_expected_errors_only():
    """On a real worker: a StoreError's "Compute Failed" record is dropped, a bug's is kept.

    The worker runs in this process (``processes=False``), so its log records reach the
    handler added here, which the plugin filters like any handler of distributed's logger.
    """
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = Keep(level=logging.WARNING)
    logging.getLogger("distributed").addHandler(handler)
    try:
        with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                          dashboard_address=":0") as cluster, \
                Client(cluster, set_as_default=False) as client:
            client.register_plugin(QuietExpectedErrors())
            for error in (StoreError, ZeroDivisionError):
                with pytest.raises(error):
                    client.submit(_raise, error, pure=False).result(timeout=60)
            filtered = any(type(f).__name__ == "ExpectedErrorFilter" for f in handler.filters)
            client.unregister_worker_plugin(QuietExpectedErrors.name)
            # the plugin's teardown takes the filter off again
            assert filtered
            assert not any(type(f).__name__ == "ExpectedErrorFilter" for f in handler.filters)
    finally:
        logging.getLogger("distributed").removeHandler(handler)
    failed = [r.getMessage() for r in records if "Compute Failed" in r.getMessage()]
    assert len(failed) == 1 and "ZeroDivisionError" in failed[0], failed
