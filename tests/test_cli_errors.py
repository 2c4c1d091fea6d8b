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
from distributed.utils_test import gen_cluster

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
    return subprocess.run([sys.executable, "-m", "bigkern", *map(str, args), "--workers", "2"],
                          cwd=cwd, capture_output=True, text=True, timeout=300)


def _one_error_line(stderr: str) -> str:
    """The error line, after checking that nothing but status lines stand beside it."""
    assert "Traceback" not in stderr and "distributed." not in stderr, stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower()]
    assert len(errors) == 1 and lines[-1] == errors[0], stderr
    others = [line for line in lines[:-1] if not line.startswith("bigkern: connected to")]
    assert not others, stderr
    return errors[0]


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


@gen_cluster(client=True, nthreads=[("127.0.0.1", 1)])
async def test_worker_filter_drops_expected_errors_only(c, s, a):
    """On a real worker: a StoreError's "Compute Failed" record is dropped, a bug's is kept."""
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = Keep(level=logging.WARNING)
    logging.getLogger("distributed").addHandler(handler)
    try:
        await c.register_plugin(QuietExpectedErrors())
        for error in (StoreError, ZeroDivisionError):
            with pytest.raises(error):
                await c.submit(_raise, error, pure=False)
    finally:
        logging.getLogger("distributed").removeHandler(handler)
    failed = [r.getMessage() for r in records if "Compute Failed" in r.getMessage()]
    assert len(failed) == 1 and "ZeroDivisionError" in failed[0], failed
    # the plugin's teardown takes the filter off again
    await c.unregister_worker_plugin(QuietExpectedErrors.name)
    assert not any(type(f).__name__ == "ExpectedErrorFilter" for f in handler.filters)
