"""The watchdog's judgement of a cluster, apart from any cluster: what to say, when to give up.

:class:`Watchdog` takes one :class:`ClusterState` at a time — workers, paused
ones with their memory, a progress counter, whether the scheduler answered —
and returns the lines to tell the user and, once a cause has lasted its
timeout, the message of the :class:`~bigkern.errors.ClusterError` to raise.
:mod:`bigkern.cluster.watchdog` feeds it from a real cluster.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ClusterState", "Watchdog", "describe_paused"]


@dataclass(frozen=True)
class ClusterState:
    """What the watchdog sees of a cluster at one moment.

    Attributes
    ----------
    n_workers : int
        Workers the scheduler knows.
    paused : tuple of (int, int)
        ``(memory in use, memory limit)`` in bytes of each paused worker.
    progress : object
        Changes whenever a task changes state; None when unknown.
    answered : bool
        False when the scheduler did not answer (then the rest is empty).
    error : str
        Why the scheduler did not answer.
    """

    n_workers: int = 0
    paused: tuple[tuple[int, int], ...] = ()
    progress: Any = None
    answered: bool = True
    error: str = ""


def _size(nbytes: int) -> str:
    """A memory limit as people write it: ``300 MiB``, ``2 GiB``, ``1,000 MB``."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20)):
        if nbytes >= scale and nbytes % scale == 0:
            return f"{nbytes // scale:,} {unit}"
    return f"{nbytes / 1e6:,.0f} MB"


def describe_paused(state: ClusterState) -> str:
    """``"2 of 2 workers paused at 83 % of their memory limit (300 MiB)"``."""
    used = [m / lim for m, lim in state.paused if lim]
    limits = sorted({lim for _, lim in state.paused if lim})
    n = len(state.paused)
    text = f"{n} of {state.n_workers} worker{'s' if state.n_workers != 1 else ''} paused"
    if used:
        low, high = round(100 * min(used)), round(100 * max(used))
        share = f"{low} %" if low == high else f"{low}-{high} %"
        text += (f" at {share} of {'their' if n > 1 else 'its'} memory limit"
                 f"{'s' if len(limits) > 1 else ''} ({', '.join(_size(x) for x in limits)})")
    return text


@dataclass
class Watchdog:
    """The watchdog's judgement, apart from any cluster: feed it states, it says what to do.

    Parameters
    ----------
    stall_timeout : float
        Seconds without progress, without workers or without an answer
        before giving up.
    paused_timeout : float
        Seconds every worker may stay paused before giving up (the shorter
        of this and ``stall_timeout`` applies).
    start : float
        When the wait began (``time.monotonic()``).
    known_workers : int
        Workers the cluster had when the wait began, as far as the client knows.
    empty_timeout : float
        Seconds the cluster may have no worker before giving up (the shorter
        of this and ``stall_timeout`` applies).
    """

    stall_timeout: float
    paused_timeout: float
    start: float
    known_workers: int = 0
    empty_timeout: float = float("inf")
    _progress: Any = None
    _progress_since: float = 0.0
    _paused_since: float | None = None
    _empty_since: float | None = None
    _silent_since: float | None = None
    _most_workers: int = 0
    _looks: int = 0
    _said: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self._progress_since = self.start
        self._most_workers = self.known_workers

    def observe(self, state: ClusterState, now: float) -> tuple[list[str], str | None]:
        """Take in one look at the cluster.

        Parameters
        ----------
        state : ClusterState
            What the scheduler said.
        now : float
            ``time.monotonic()`` of the look.

        Returns
        -------
        reports : list of str
            Lines to tell the user now (each situation once, until it clears).
        verdict : str or None
            The :class:`ClusterError` message when the wait must end.
        """
        reports: list[str] = []
        # a state seen at the first look is taken to hold since the wait began
        self._looks += 1
        first = self.start if self._looks == 1 else now

        def once(kind: str, text: str) -> None:
            if kind not in self._said:
                self._said.add(kind)
                reports.append(text)

        if not state.answered:
            if self._silent_since is None:
                self._silent_since = now
            once("silent", f"the scheduler does not answer ({state.error}); giving up after "
                           f"{self.stall_timeout:g} s without an answer")
            if now - self._silent_since >= self.stall_timeout:
                silent = now - self._silent_since
                return reports, (f"the scheduler has not answered for {silent:.0f} s "
                                 f"({state.error}): the computation was abandoned")
            return reports, None
        if self._silent_since is not None:
            self._silent_since = None
            self._said.discard("silent")
            reports.append("the scheduler answers again")
        if state.progress is not None and state.progress != self._progress:
            # moved since the last look; the first look cannot tell, and counts as a move
            self._progress, self._progress_since = state.progress, now
            self._said.discard("stalled")
        self._most_workers = max(self._most_workers, state.n_workers)
        verdict = self._judge_workers(state, now, first, once)
        if verdict is None and self._judge_progress(state, now, once):
            # without progress for stall_timeout; a cause already seen is named as the cause
            verdict = (self._paused_verdict(state, now) if self._paused_since is not None
                       else self._empty_verdict(now) if self._empty_since is not None
                       else self._stalled_verdict(state, now))
        return reports, verdict

    def _lost(self) -> str:
        if self._most_workers > 1:
            return f"it lost all {self._most_workers} during this computation"
        if self._most_workers == 1:
            return "it lost its only worker during this computation"
        return "none has joined during this computation"

    def _empty_limit(self) -> float:
        return min(self.empty_timeout, self.stall_timeout)

    def _empty_verdict(self, now: float) -> str:
        empty = now - (now if self._empty_since is None else self._empty_since)
        setting = ("bigkern.empty_timeout" if self.empty_timeout < self.stall_timeout
                   else "--timeout / bigkern.stall_timeout")
        return (f"no workers for {empty:.0f} s: {self._lost()}; restart the workers (or "
                f"raise {setting} to wait longer for them)")

    def _paused_verdict(self, state: ClusterState, now: float) -> str:
        paused = now - (now if self._paused_since is None else self._paused_since)
        limit = min(self.paused_timeout, self.stall_timeout)
        shown = f"{limit:g}" if paused >= limit else f"{paused:.0f}"
        return (f"every worker has been paused for {shown} s with its memory over distributed's "
                f"pause threshold (distributed.worker.memory.pause): {describe_paused(state)}; "
                f"no task can run: give the workers more memory or use smaller chunks")

    def _stalled_verdict(self, state: ClusterState, now: float) -> str:
        paused = f" ({describe_paused(state)})" if state.paused else ""
        return (f"no task finished for {now - self._progress_since:.0f} s on "
                f"{state.n_workers} worker(s){paused}: the computation is stuck (raise "
                f"--timeout / bigkern.stall_timeout if its tasks are that long)")

    def _judge_workers(self, state: ClusterState, now: float, first: float,
                       once: Callable[[str, str], None]) -> str | None:
        """The verdict on the workers: none at all, or every one paused."""
        if state.n_workers == 0:
            if self._empty_since is None:
                self._empty_since = first
            once("empty", f"the cluster has no workers ({self._lost()}); giving up unless one "
                          f"joins within {self._empty_limit():g} s")
            if now - self._empty_since >= self._empty_limit():
                return self._empty_verdict(now)
            return None
        if self._empty_since is not None:
            self._empty_since = None
            self._said.discard("empty")
            once("joined", f"{state.n_workers} worker(s) joined")
        if not state.paused:
            self._paused_since = None
            self._said.discard("paused")
            return None
        limit = min(self.paused_timeout, self.stall_timeout)
        every = len(state.paused) >= state.n_workers
        once("paused", describe_paused(state) + (
            f"; giving up if they stay paused for {limit:g} s" if every else ""))
        if not every:
            self._paused_since = None
            return None
        if self._paused_since is None:
            self._paused_since = first
        if now - self._paused_since < limit:
            return None
        return self._paused_verdict(state, now)

    def _judge_progress(self, state: ClusterState, now: float,
                        once: Callable[[str, str], None]) -> bool:
        """Whether no task has finished for ``stall_timeout`` (said once at half of it)."""
        if state.progress is None:
            return False
        idle = now - self._progress_since
        quiet = self._paused_since is not None or self._empty_since is not None
        if idle >= self.stall_timeout / 2 and not quiet:  # else the cause is said already
            once("stalled", f"no task has finished for {idle:.0f} s on {state.n_workers} "
                            f"worker(s); giving up after {self.stall_timeout:g} s")
        return idle >= self.stall_timeout
