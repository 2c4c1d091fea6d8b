"""No silent waits: one watchdog over every computation bigkern waits for on a cluster.

While the client waits for a computation, a background thread asks the
scheduler, about once a second, how its workers are: how many there are,
which are paused because their memory passed distributed's ``pause``
fraction of their limit, and whether any task has changed state since the
last look (the scheduler's transition counter: it stands still exactly when
no task finishes, starts or moves). It reports on stderr what it sees as soon
as it sees it, and gives up with a :class:`~bigkern.errors.ClusterError`
naming the cause when

* every worker has been paused for ``bigkern.paused_timeout`` seconds (or
  ``bigkern.stall_timeout``, whichever is shorter): the memory limit and how
  full the workers are;
* the cluster has had no worker for ``bigkern.stall_timeout`` seconds: how many
  it lost;
* no task has finished for ``bigkern.stall_timeout`` seconds (a stuck task,
  workers that cannot reach each other …);
* the scheduler has not answered for ``bigkern.stall_timeout`` seconds.

Giving up cancels the computation's futures (a local state change plus a
message to the scheduler, so it cannot itself hang), which ends the client's
wait with a cancellation that :func:`watching` turns into the ClusterError.

It costs nothing per task: one thread per wait, no scheduler call for waits
shorter than the poll interval, then one small call every 1-5 s
(:func:`poll_interval`) whose answer does not grow with the number of tasks.
:func:`watching` watches any block of code;
:class:`bigkern.cluster.BigkernClient` (what :func:`bigkern.connect`, and so
every CLI command, returns) watches each of its ``gather`` calls, so
``dask.compute``, ``.load()``, ``.values`` and ``client.gather`` are covered
wherever they are called; :func:`bigkern.scheduling.compute` watches on any
client.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from bigkern import config
from bigkern.errors import ClusterError

__all__ = ["ClusterState", "Watchdog", "cluster_state", "gather", "is_watching", "poll_interval",
           "watching"]

def poll_interval(stall_timeout: float) -> float:
    """Seconds between two looks at the cluster for a given ``stall_timeout``.

    Never more often than once a second, and a twentieth of the timeout up to
    5 s (the default 300 s: every 5 s), so a long computation costs the
    scheduler little and a cause is still seen well within the timeout.
    """
    return min(5.0, max(1.0, stall_timeout / 20))

_local = threading.local()


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


def _probe_function() -> Callable[..., dict[str, Any]]:
    """The function run on the scheduler; made here so that it is pickled by value.

    A nested function cannot be pickled by reference, so the scheduler gets
    its code and never imports bigkern (which it may not have installed).
    """

    def bigkern_watchdog_probe(dask_scheduler: Any = None) -> dict[str, Any]:
        workers = list(dask_scheduler.workers.values())
        paused = [(int(ws.memory.process), int(ws.memory_limit or 0))
                  for ws in workers if getattr(ws.status, "name", ws.status) == "paused"]
        return {"n_workers": len(workers), "paused": paused,
                "progress": getattr(dask_scheduler, "transition_counter", None)}

    return bigkern_watchdog_probe


def cluster_state(client: Any, timeout: float = 10.0) -> ClusterState:
    """Ask the scheduler of ``client`` how its workers are (one small call).

    Parameters
    ----------
    client : distributed.Client
        A synchronous client.
    timeout : float
        Seconds to wait for the answer.

    Returns
    -------
    ClusterState
        With ``answered=False`` when the scheduler did not answer in time.
        A scheduler that will not run the probe (an older or locked-down
        distributed) is asked for ``scheduler_info`` instead, which says nothing
        of progress: then only paused and missing workers are judged.
    """
    try:
        try:
            info = client.sync(client._run_on_scheduler, _probe_function(),
                               callback_timeout=timeout)
        except Exception:  # refused (no pickle on the scheduler …) or gone: ask the usual way
            workers = client.scheduler_info(n_workers=-1).get("workers", {}).values()
            info = {"n_workers": len(workers), "progress": None,
                    "paused": [(int((w.get("metrics") or {}).get("memory") or 0),
                                int(w.get("memory_limit") or 0))
                               for w in workers if w.get("status") == "paused"]}
    except Exception as err:  # a closed comm, a timeout: the scheduler does not answer
        reason = (str(err).strip().splitlines() or [type(err).__name__])[0]
        return ClusterState(answered=False, error=reason or type(err).__name__)
    return ClusterState(int(info["n_workers"]), tuple(tuple(p) for p in info["paused"]),
                        info.get("progress"))


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
    """

    stall_timeout: float
    paused_timeout: float
    start: float
    known_workers: int = 0
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

    def _empty_verdict(self, now: float) -> str:
        empty = now - (now if self._empty_since is None else self._empty_since)
        return (f"no workers for {empty:.0f} s: {self._lost()}; restart the workers (or "
                f"raise --timeout / bigkern.stall_timeout)")

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
                          f"joins within {self.stall_timeout:g} s")
            if now - self._empty_since >= self.stall_timeout:
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


def is_watching() -> bool:
    """Whether this thread is inside :func:`watching` already (watches do not nest)."""
    return bool(getattr(_local, "active", False))


def _report(line: str) -> None:
    print(f"bigkern: {line}", file=sys.stderr, flush=True)


class _Watch(threading.Thread):
    """The background thread: look every ``poll`` seconds, report, cancel on a verdict."""

    def __init__(self, client: Any, futures: Sequence[Any] | None, poll: float | None) -> None:
        super().__init__(name="bigkern-watchdog", daemon=True)
        stall = float(config.get("stall_timeout", 300))
        self.client, self.futures = client, futures
        self.poll = poll_interval(stall) if poll is None else poll
        # the workers the client last heard of (its cached scheduler info: no call)
        known = len((getattr(client, "_scheduler_identity", None) or {}).get("workers", {}))
        self.dog = Watchdog(stall, float(config.get("paused_timeout", 30)), time.monotonic(),
                            known)
        self.verdict: str | None = None
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(self.poll):
            try:
                state = cluster_state(self.client, timeout=max(self.poll, 5.0))
                if self.done.is_set():
                    return
                reports, verdict = self.dog.observe(state, time.monotonic())
                for line in reports:
                    _report(line)
                if verdict:
                    self.verdict = verdict
                    self._cancel()
                    return
            except Exception:  # the watchdog must never break the computation it watches
                continue

    def _cancel(self) -> None:
        from distributed import Future

        futures = self.futures
        if futures is None:  # everything this client still waits for
            futures = [Future(key, self.client) for key, st in list(self.client.futures.items())
                       if st.status == "pending"]
        self.client.cancel(list(futures), reason="bigkern-watchdog", msg=self.verdict)


@contextlib.contextmanager
def watching(client: Any = None, futures: Sequence[Any] | None = None, *,
             poll: float | None = None) -> Iterator[None]:
    """Watch the cluster while the block waits for a computation; end it with a clear error.

    Parameters
    ----------
    client : distributed.Client, optional
        Default: the current client (:func:`bigkern.scheduling.current_client`);
        without one (dask's local schedulers) nothing is watched.
    futures : sequence of distributed.Future, optional
        What to cancel when giving up; default every future of ``client``
        still pending then.
    poll : float, optional
        Seconds between looks at the cluster; default :func:`poll_interval`.

    Raises
    ------
    ClusterError
        The watchdog gave up (see the module's docstring); the message
        names the cause with its figures.

    Examples
    --------
    ::

        with bigkern.watchdog.watching(client):
            ds.load()       # any computation on client, however it is started
    """
    if client is None:
        from bigkern.scheduling import current_client

        client = current_client()
    if client is None or is_watching() or getattr(client, "asynchronous", False):
        yield
        return
    watch = _Watch(client, futures, poll)
    _local.active = True
    watch.start()
    try:
        yield
    except BaseException:
        if watch.verdict is not None:
            raise ClusterError(watch.verdict) from None
        raise
    finally:
        watch.done.set()
        _local.active = False


def gather(client: Any, futures: Sequence[Any], *, poll: float | None = None) -> list[Any]:
    """``client.gather(futures)`` under :func:`watching`.

    Parameters
    ----------
    client : distributed.Client
        A synchronous client.
    futures : sequence of distributed.Future
        What to wait for (and cancel when the watchdog gives up).
    poll : float, optional
        Seconds between looks at the cluster; default :func:`poll_interval`.

    Returns
    -------
    list
        The results, as ``client.gather`` returns them.
    """
    futures = list(futures)
    with watching(client, futures, poll=poll):
        return client.gather(futures)
