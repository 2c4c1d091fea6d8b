"""No silent waits: one watchdog over every computation bigkern waits for on a cluster.

While the client waits for a computation, a background thread asks the
scheduler, every 1 to 5 seconds, how its workers are: how many there are,
which are paused because their memory passed distributed's ``pause``
fraction of their limit, and whether any task has changed state since the
last look (the scheduler's transition counter: it stands still exactly when
no task finishes, starts or moves). It reports on stderr what it sees as soon
as it sees it, and gives up with a :class:`~bigkern.errors.ClusterError`
naming the cause when

* every worker has been paused for ``bigkern.paused_timeout`` seconds (or
  ``bigkern.stall_timeout``, whichever is shorter): the memory limit and how
  full the workers are;
* the cluster has had no worker for ``bigkern.empty_timeout`` seconds (60; or
  ``bigkern.stall_timeout``, whichever is shorter): how many it lost;
* no task has finished for ``bigkern.stall_timeout`` seconds (a stuck task,
  workers that cannot reach each other …);
* the scheduler has not answered for ``bigkern.stall_timeout`` seconds.

Giving up cancels the computation's futures (a local state change plus a
message to the scheduler, so it cannot itself hang), which ends the client's
wait with a cancellation that :func:`watching` turns into the ClusterError.

The judgement itself — what to say, when to give up — is
:class:`~bigkern.cluster.stall_rules.Watchdog`, fed here from the real cluster.

It costs nothing per task: one thread per wait, no scheduler call for waits
shorter than the poll interval, then one small call every 1-5 s
(:func:`poll_interval`) whose answer does not grow with the number of tasks.
:func:`watching` watches any block of code;
:class:`bigkern.cluster.client.BigkernClient` (what :func:`bigkern.connect`, and so
every CLI command, returns) watches each of its ``gather`` calls, so
``dask.compute``, ``.load()``, ``.values`` and ``client.gather`` are covered
wherever they are called; :func:`bigkern.cluster.compute.compute` watches on any
client.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import dask

from bigkern import config
from bigkern.cluster.stall_rules import ClusterState, Watchdog
from bigkern.errors import ClusterError

__all__ = ["ClusterState", "Watchdog", "cluster_state", "current_client", "describe_killed",
           "gather", "is_watching", "poll_interval", "watching"]


def current_client() -> Any:
    """The default distributed client, unless dask's ``scheduler`` setting names another.

    ``with dask.config.set(scheduler="threads"):`` runs bigkern's computations on
    local threads even while a client exists, as it does for ``dask.compute``.
    """
    chosen = dask.config.get("scheduler", None)
    if chosen is not None and chosen not in ("dask.distributed", "distributed"):
        return None
    if "distributed" not in sys.modules:  # no client can exist: spare its costly import
        return None
    try:
        from distributed import default_client

        return default_client()
    except (ImportError, ValueError):
        return None


def poll_interval(stall_timeout: float) -> float:
    """Seconds between two looks at the cluster for a given ``stall_timeout``.

    Never more often than once a second, and a twentieth of the timeout up to
    5 s (the default 300 s: every 5 s), so a long computation costs the
    scheduler little and a cause is still seen well within the timeout.
    """
    return min(5.0, max(1.0, stall_timeout / 20))


_local = threading.local()


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
                            known, empty_timeout=float(config.get("empty_timeout", 60)))
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
        Default: the current client (:func:`current_client`);
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

        with bigkern.cluster.watchdog.watching(client):
            ds.load()       # any computation on client, however it is started
    """
    if client is None:
        client = current_client()
    if client is None or is_watching() or getattr(client, "asynchronous", False):
        yield
        return
    watch = _Watch(client, futures, poll)
    _local.active = True
    watch.start()
    try:
        yield
    except BaseException as err:
        if watch.verdict is not None:
            raise ClusterError(watch.verdict) from None
        if type(err).__name__ == "KilledWorker":
            raise ClusterError(describe_killed(err)) from err
        raise
    finally:
        watch.done.set()
        _local.active = False


def describe_killed(err: BaseException) -> str:
    """One line for distributed's ``KilledWorker``: the task, the workers, the memory limit.

    A task whose workers all died running it is, on a cluster with memory limits,
    almost always a task that needed more memory than a worker may hold: its
    nanny killed the worker. The message names the limit the last worker had.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> killed = SimpleNamespace(task=("read-sum", 3), allowed_failures=2,
    ...                          last_worker=SimpleNamespace(address="tcp://10.0.0.5:4000",
    ...                                                      memory_limit=300 * 2**20))
    >>> print(describe_killed(killed))  # doctest: +NORMALIZE_WHITESPACE
    task ('read-sum', 3) killed 3 workers, each while running it; the last, tcp://10.0.0.5:4000,
    had a memory limit of 300 MiB, which a worker's nanny enforces by killing it: give the
    workers more memory (dask worker --memory-limit), or make the tasks smaller (smaller
    chunks: bigkern.chunk_bytes, bigkern.predict_block_pixels)
    """
    task = getattr(err, "task", "?")
    tries = int(getattr(err, "allowed_failures", 0)) + 1
    worker = getattr(err, "last_worker", None)
    address = getattr(worker, "address", "?")
    limit = getattr(worker, "memory_limit", None)
    said = (f"had a memory limit of {_mib(limit)}, which a worker's nanny enforces by killing "
            f"it" if limit else "had no memory limit (so something else killed it: the "
            "operating system's OOM killer, a signal, a crash)")
    return (f"task {task!r} killed {tries} worker{'s' if tries > 1 else ''}, each while running "
            f"it; the last, {address}, {said}: give the workers more memory (dask worker "
            f"--memory-limit), or make the tasks smaller (smaller chunks: bigkern.chunk_bytes, "
            f"bigkern.predict_block_pixels)")


def _mib(nbytes: float) -> str:
    return f"{nbytes / 2**30:.3g} GiB" if nbytes >= 2**30 else f"{nbytes / 2**20:.0f} MiB"


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
