"""Progress as log lines where stderr is not a terminal (a batch job's log).

On a real LocalCluster and on dask's local scheduler, a computation that runs past
``bigkern.progress_delay`` prints ``bigkern: <label>: N% of T tasks, S s`` lines and
a closing ``done`` line to stderr; a short one prints nothing; ``progress=False``
prints nothing; the command line prints them into a piped stderr.
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import time

import dask
import dask.array as da
import pytest

from bigkern import config
from bigkern.cluster.compute import compute
from bigkern.cluster.progress import ProgressLines

LINE = re.compile(r"^bigkern: (?P<label>.+): (?P<pct>\d+)% of (?P<tasks>\d+) tasks, [\d.]+ s$")


def _slow_sum(n_chunks: int = 8, pause: float = 0.15):
    """A sum whose chunks each take ``pause`` seconds: long enough to report."""
    def slow(block):
        time.sleep(pause)
        return block

    x = da.ones(n_chunks * 10, chunks=10).map_blocks(slow, dtype=float)
    return x.sum()


def _lines(err: str) -> tuple[list[re.Match], list[str]]:
    rows = [line for line in err.splitlines() if line.startswith("bigkern: ")]
    return [m for m in map(LINE.match, rows) if m], rows


def test_the_policy_waits_for_the_delay_then_reports_each_tenth_and_the_interval():
    out = io.StringIO()
    lines = ProgressLines("x", delay=2.0, interval=5.0, out=out)
    for frac, t in [(0.5, 1.0), (0.51, 2.0), (0.55, 3.0), (0.55, 7.1), (0.61, 7.5), (1.0, 8)]:
        lines.update(frac, t, 100)
    lines.finish(8.0, 100)
    assert out.getvalue().splitlines() == [
        "bigkern: x: 51% of 100 tasks, 2.0 s",  # after the delay
        "bigkern: x: 55% of 100 tasks, 7.1 s",  # the interval, no new tenth
        "bigkern: x: 61% of 100 tasks, 7.5 s",  # a new tenth
        "bigkern: x: done, 100 tasks in 8.0 s",
    ]
    quiet = io.StringIO()
    short = ProgressLines("x", delay=2.0, interval=5.0, out=quiet)
    short.update(0.5, 1.0, 10)
    short.finish(1.5, 10)
    assert quiet.getvalue() == ""  # a short computation says nothing
    failed = io.StringIO()
    ProgressLines("x", delay=0.0, interval=5.0, out=failed).finish(3.0, 7, failed=True)
    assert failed.getvalue() == "bigkern: x: stopped, 7 tasks in 3.0 s\n"


def test_lines_on_the_local_scheduler(capsys):
    with config.set(progress=True, progress_delay=0.2, progress_interval=60.0), \
            dask.config.set(scheduler="threads", num_workers=1):
        (total,) = compute(_slow_sum(), label="summing")
    assert total == 80
    err = capsys.readouterr().err
    progress, rows = _lines(err)
    assert progress and all(m["label"] == "summing" for m in progress), err
    assert rows[-1].startswith("bigkern: summing: done, "), err
    pcts = [int(m["pct"]) for m in progress]
    assert pcts == sorted(pcts) and len({p // 10 for p in pcts}) == len(pcts), err


def test_lines_on_a_distributed_cluster(client, capsys):
    with config.set(progress=True, progress_delay=0.2, progress_interval=60.0):
        (total,) = compute(_slow_sum(16), label="summing on the cluster")
    assert total == 160
    err = capsys.readouterr().err
    progress, rows = _lines(err)
    assert progress, err
    assert {m["label"] for m in progress} == {"summing on the cluster"}
    assert rows[-1].startswith("bigkern: summing on the cluster: done, "), err


def test_nothing_when_progress_is_off_or_the_computation_is_short(capsys):
    with config.set(progress=False, progress_delay=0.0):
        compute(_slow_sum(4, 0.05), label="off")
    with config.set(progress=True, progress_delay=30.0):
        compute(_slow_sum(4, 0.05), label="short")
    assert "bigkern:" not in capsys.readouterr().err


@pytest.mark.slow
def test_the_command_line_logs_progress_lines_into_a_pipe(tmp_path):
    env = dict(os.environ, BIGKERN_PROGRESS_DELAY="0", BIGKERN_PROGRESS_INTERVAL="1")
    done = subprocess.run(
        [sys.executable, "-m", "bigkern", "synth", "-o", str(tmp_path / "s.zarr"),
         "--scenes", "2", "--shape", "64", "96", "--workers", "1"],
        capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    _progress, rows = _lines(done.stderr)
    assert any(r.startswith("bigkern: writing ") and ": done, " in r for r in rows), done.stderr
    assert "\r" not in done.stderr  # no bar redrawn into the log
