"""Progress of a long computation as log lines, for a batch job's log rather than a terminal.

A progress bar redraws one line with carriage returns: on a terminal it moves, in
a SLURM or Kubernetes log it is one long line written at the end. Where stderr is
not a terminal (and not a notebook), :func:`bigkern.cluster.compute.compute`
prints lines instead::

    bigkern: binning: 30% of 412 tasks, 12.4 s
    bigkern: binning: 60% of 412 tasks, 24.9 s
    bigkern: binning: done, 412 tasks in 40.2 s

The first line comes once the computation has run ``bigkern.progress_delay``
seconds (a short computation prints nothing), then one each time another tenth
of the tasks is done or ``bigkern.progress_interval`` seconds have passed.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any, TextIO

from bigkern import config

__all__ = ["ProgressLines", "distributed_lines", "local_lines"]


class ProgressLines:
    """When to print a line, and the line: the policy of both schedulers' adapters.

    Parameters
    ----------
    label : str
        What is computed (``"binning"``), the lines' prefix after ``bigkern:``.
    delay, interval : float, optional
        Seconds before the first line and at most between two; default the
        ``bigkern.progress_delay`` and ``bigkern.progress_interval`` settings.
    out : file, optional
        Where the lines go (default ``sys.stderr``).

    Examples
    --------
    >>> import io
    >>> out = io.StringIO()
    >>> lines = ProgressLines("binning", delay=1.0, interval=60.0, out=out)
    >>> for frac, t in [(0.05, 0.5), (0.12, 1.5), (0.15, 2.0), (0.31, 3.0)]:
    ...     lines.update(frac, t, 200)
    >>> lines.finish(4.0, 200)
    >>> print(out.getvalue(), end="")
    bigkern: binning: 12% of 200 tasks, 1.5 s
    bigkern: binning: 31% of 200 tasks, 3.0 s
    bigkern: binning: done, 200 tasks in 4.0 s
    """

    def __init__(self, label: str | None, *, delay: float | None = None,
                 interval: float | None = None, out: TextIO | None = None) -> None:
        self.label = label or "computing"
        self.delay = float(config.get("progress_delay") if delay is None else delay)
        self.interval = float(config.get("progress_interval") if interval is None
                              else interval)
        self.out = out
        self.tasks = 0  # the computation's tasks, as last reported
        self._tenth = -1  # the last tenth of the tasks a line reported
        self._last = -float("inf")  # when the last line was printed
        self._printed = False

    def _say(self, text: str) -> None:
        print(f"bigkern: {self.label}: {text}", file=self.out or sys.stderr, flush=True)

    def update(self, fraction: float, elapsed: float, tasks: int) -> None:
        """Print a line if one is due: after the delay, a new tenth done or the interval."""
        self.tasks = tasks
        if elapsed < self.delay or fraction >= 1:
            return
        tenth = int(10 * fraction)
        if tenth > self._tenth or elapsed - self._last >= self.interval:
            self._say(f"{int(100 * fraction)}% of {tasks} tasks, {elapsed:.1f} s")
            self._tenth, self._last, self._printed = tenth, elapsed, True

    def finish(self, elapsed: float, tasks: int, *, failed: bool = False) -> None:
        """The closing line, if the computation lasted past the delay."""
        if self._printed or elapsed >= self.delay:
            self._say(f"{'stopped' if failed else 'done'}, {tasks} tasks in {elapsed:.1f} s")


@contextlib.contextmanager
def distributed_lines(futures: list[Any], label: str | None) -> Iterator[None]:
    """Print lines while the block gathers ``futures`` from their client's scheduler.

    The lines come from a thread of their own, which never holds the block up: the
    block's gather (under the watchdog) decides when the computation is over, and
    on leaving the block the follower is stopped and the closing line said. A
    computation that ends within ``bigkern.progress_delay`` is not followed at all.

    Parameters
    ----------
    futures : list of distributed.Future
        The computation's outputs (their tasks' progress is followed).
    label : str or None
        What is computed, for the lines.
    """
    import asyncio

    from distributed.diagnostics.progressbar import ProgressBar

    lines = ProgressLines(label)
    started = time.perf_counter()
    stop = threading.Event()
    running: dict[str, Any] = {}

    class _Follower(ProgressBar):
        def _draw_bar(self, remaining: int, all: int, **kwargs: Any) -> None:
            lines.update((1 - remaining / all) if all else 1.0,
                         time.perf_counter() - started, all)

    follower = _Follower(futures, interval="1s", complete=True)

    async def follow() -> None:
        running["loop"], running["task"] = asyncio.get_running_loop(), asyncio.current_task()
        while time.perf_counter() - started < lines.delay:
            if stop.is_set():
                return
            await asyncio.sleep(0.1)
        await follower.listen()

    def run() -> None:
        with contextlib.suppress(BaseException):  # cancelled, or the scheduler gone
            asyncio.run(follow())

    thread = threading.Thread(target=run, daemon=True, name="bigkern-progress")
    thread.start()
    failed = True
    try:
        yield
        failed = False
    finally:
        stop.set()
        loop, task = running.get("loop"), running.get("task")
        if loop is not None and task is not None:
            with contextlib.suppress(RuntimeError):  # its loop already closed
                loop.call_soon_threadsafe(task.cancel)
        thread.join(timeout=2)
        lines.finish(time.perf_counter() - started, lines.tasks, failed=failed)


def local_lines(label: str | None) -> Any:
    """A :class:`dask.callbacks.Callback` printing lines for dask's local schedulers.

    Use it as dask's progress bar is used: ``with local_lines("binning"):
    dask.compute(x)``. Its clock thread sleeps on an event that the end of the
    computation sets, so a short computation ends at once (dask's own bar joins a
    thread that sleeps its full interval).
    """
    from dask.callbacks import Callback

    lines = ProgressLines(label)

    class _Lines(Callback):
        def _start(self, dsk: Any) -> None:
            self._started = time.perf_counter()
            self._state: dict[str, Any] | None = None
            self._done = threading.Event()
            self._tasks = len(dsk)
            self._clock = threading.Thread(target=self._tick, daemon=True,
                                           name="bigkern-progress")
            self._clock.start()

        def _pretask(self, key: Any, dsk: Any, state: dict[str, Any]) -> None:
            self._state = state

        def _tick(self) -> None:
            while not self._done.wait(0.5):
                state = self._state
                if not state:
                    continue
                finished = len(state["finished"])
                total = finished + sum(len(state[k]) for k in ("ready", "waiting",
                                                                "running"))
                if total:
                    self._tasks = total
                    lines.update(finished / total, time.perf_counter() - self._started,
                                 total)

        def _finish(self, dsk: Any, state: Any, errored: bool) -> None:
            self._done.set()
            self._clock.join()
            lines.finish(time.perf_counter() - self._started, self._tasks, failed=errored)

    return _Lines()
