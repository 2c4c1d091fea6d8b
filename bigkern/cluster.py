"""Where bigkern's computations run: a Dask distributed Client.

By default an embedded :class:`distributed.LocalCluster` sized to the machine
is started; pass a scheduler address (or set ``DASK_SCHEDULER_ADDRESS``) to
use a running cluster, e.g. one started by dask-jobqueue on SLURM/PBS or by
dask-kubernetes.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator
from typing import Any

import dask

from bigkern import config

__all__ = ["compute", "connect", "current_client", "pin_blas_threads"]


def pin_blas_threads(n: int | None = None) -> None:
    """Limit BLAS/OpenMP threads in this process so dask's threads do not oversubscribe.

    Run on every worker with ``client.run(pin_blas_threads)``; the embedded
    cluster does it for you.
    """
    n = int(n or config.get("blas_threads") or 1)
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(n)
    except ImportError:  # pragma: no cover - threadpoolctl ships with scikit-learn
        pass


@contextlib.contextmanager
def connect(
    address: str | None = None,
    *,
    n_workers: int | None = None,
    threads_per_worker: int | None = None,
    memory_limit: str | None = None,
    quiet: bool = False,
) -> Iterator[Any]:
    """Yield a :class:`distributed.Client`: to ``address`` if given, else an embedded cluster.

    Parameters
    ----------
    address : str, optional
        A scheduler address such as ``tcp://10.0.0.5:8786``. Defaults to
        ``DASK_SCHEDULER_ADDRESS`` (dask's ``scheduler-address`` setting); when
        neither is set an embedded :class:`~distributed.LocalCluster` is started
        and closed on exit.
    n_workers, threads_per_worker, memory_limit
        Sizing of the embedded cluster (defaults: one worker per core, one
        thread each, memory split evenly).
    quiet : bool
        Do not print where the dashboard is.
    """
    from distributed import Client, LocalCluster

    address = address or dask.config.get("scheduler-address", None)
    if address:
        client = Client(address)
        try:
            client.run(pin_blas_threads)
            if not quiet:
                print(f"bigkern: connected to {address} (dashboard {client.dashboard_link})",
                      file=sys.stderr)
            yield client
        finally:
            client.close()
        return
    n_workers = n_workers or max(1, os.cpu_count() or 1)
    cluster = LocalCluster(
        n_workers=n_workers,
        threads_per_worker=threads_per_worker or 1,
        memory_limit=memory_limit or "auto",
        processes=True,
        dashboard_address=":0",
    )
    client = Client(cluster)
    try:
        client.run(pin_blas_threads)
        if not quiet:
            print(f"bigkern: embedded LocalCluster with {n_workers} workers "
                  f"(dashboard {client.dashboard_link})", file=sys.stderr)
        yield client
    finally:
        client.close()
        cluster.close()


def compute(*collections: Any, label: str | None = None) -> tuple[Any, ...]:
    """``dask.compute`` with a progress bar when ``bigkern.progress`` is on.

    On a distributed client the bar is :func:`distributed.progress`; otherwise
    the local :class:`dask.diagnostics.ProgressBar`. The bar is written to
    stderr only when stderr is a terminal or ``bigkern.progress`` is ``"always"``.
    """
    show = config.get("progress")
    show = show == "always" or (bool(show) and sys.stderr.isatty())
    client = current_client()
    if client is not None:
        futures = client.compute(list(collections))
        if show:
            from distributed import progress

            if label:
                print(f"bigkern: {label}", file=sys.stderr)
            progress(futures, notebook=False)
            print(file=sys.stderr)
        return tuple(gather_watching(client, futures))
    if show:
        from dask.diagnostics import ProgressBar

        with ProgressBar(out=sys.stderr):
            return dask.compute(*collections)
    return dask.compute(*collections)


def _paused_workers(client: Any) -> tuple[int, list[int]]:
    """Number of workers, and the memory limits of the paused ones."""
    workers = client.scheduler_info(n_workers=-1).get("workers", {}).values()
    paused = [int(w.get("memory_limit") or 0) for w in workers if w.get("status") == "paused"]
    return len(workers), paused


def gather_watching(client: Any, futures: list[Any], poll: float = 1.0) -> list[Any]:
    """``client.gather(futures)``, but fail instead of hanging when every worker is paused.

    A worker pauses when its memory passes distributed's ``pause`` fraction of
    its limit and runs no task until it drops; if every worker stays paused
    for ``bigkern.paused_timeout`` seconds the computation cannot progress:
    it is cancelled and :class:`~bigkern.errors.ClusterError` names the limit.
    A failed task stops the wait at once.

    The wait is a done-callback and an event, not ``distributed.wait`` with a
    timeout: a caught ``TimeoutError`` would keep the futures (and their
    results on the workers) alive in a reference cycle until the next garbage
    collection.
    """
    import threading

    from bigkern.errors import ClusterError

    limit = float(config.get("paused_timeout", 30))
    finished = threading.Event()
    remaining = [len(futures)]
    lock = threading.Lock()

    def on_done(future: Any) -> None:
        with lock:
            remaining[0] -= 1
            if remaining[0] <= 0 or future.status == "error":
                finished.set()

    if not futures:
        finished.set()
    for future in futures:
        future.add_done_callback(on_done)
    paused_since = None
    while not finished.wait(poll):
        n_workers, paused = _paused_workers(client)
        if not n_workers or len(paused) < n_workers:
            paused_since = None
            continue
        now = time.monotonic()
        paused_since = paused_since or now
        if now - paused_since >= limit:
            client.cancel(futures)
            fraction = dask.config.get("distributed.worker.memory.pause", 0.8)
            limits = ", ".join(sorted({f"{m / 1e6:,.0f} MB" for m in paused}))
            raise ClusterError(
                f"every worker has been paused for {limit:g} s because its memory is above "
                f"{fraction:.0%} of its memory limit ({limits}): the computation cannot "
                f"progress; give the workers more memory or use smaller chunks")
    return client.gather(futures)


def current_client() -> Any:
    """The default distributed client, unless dask's ``scheduler`` setting names another.

    ``with dask.config.set(scheduler="threads"):`` runs bigkern's computations on
    local threads even while a client exists, as it does for ``dask.compute``.
    """
    chosen = dask.config.get("scheduler", None)
    if chosen is not None and chosen not in ("dask.distributed", "distributed"):
        return None
    try:
        from distributed import default_client

        return default_client()
    except (ImportError, ValueError):
        return None
