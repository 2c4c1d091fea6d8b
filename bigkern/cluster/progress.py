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

import sys
import time
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
        self._tenth = -1  # the last tenth of the tasks a line reported
        self._last = -float("inf")  # when the last line was printed
        self._printed = False

    def _say(self, text: str) -> None:
        print(f"bigkern: {self.label}: {text}", file=self.out or sys.stderr, flush=True)

    def update(self, fraction: float, elapsed: float, tasks: int) -> None:
        """Print a line if one is due: after the delay, a new tenth done or the interval."""
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


def distributed_lines(futures: list[Any], label: str | None) -> None:
    """Follow ``futures`` on their client's scheduler, printing lines; return when done.

    Nothing follows a computation that ends within ``bigkern.progress_delay``: it is
    waited for first, and only a longer one is followed on the scheduler (a
    progress bar of distributed costs a connection and up to one polling interval
    of latency, which thousands of short computations would pay).

    Parameters
    ----------
    futures : list of distributed.Future
        The computation's outputs (their tasks' progress is followed).
    label : str or None
        What is computed, for the lines.
    """
    from distributed import wait
    from distributed.diagnostics.progressbar import TextProgressBar

    lines = ProgressLines(label)
    started = time.perf_counter()
    try:
        wait(futures, timeout=lines.delay)
        return  # done (or failed) within the delay: nothing to say
    except TimeoutError:
        pass

    class _Lines(TextProgressBar):
        def _draw_bar(self, remaining: int, all: int, **kwargs: Any) -> None:
            lines.update((1 - remaining / all) if all else 1.0,
                         time.perf_counter() - started, all)
            self._tasks = all

        def _draw_stop(self, **kwargs: Any) -> None:
            lines.finish(time.perf_counter() - started, getattr(self, "_tasks", 0),
                         failed=kwargs.get("status") == "error")

    _Lines(futures, interval="1s", complete=True)


def local_lines(label: str | None) -> Any:
    """A :class:`dask.callbacks.Callback` printing lines for dask's local schedulers.

    Use it as dask's progress bar is used: ``with local_lines("binning"):
    dask.compute(x)``. Its clock thread sleeps on an event that the end of the
    computation sets, so a short computation ends at once (dask's own bar joins a
    thread that sleeps its full interval).
    """
    import threading

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
