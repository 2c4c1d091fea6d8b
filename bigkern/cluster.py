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
from collections.abc import Iterator
from typing import Any

import dask

from bigkern import config

__all__ = ["compute", "connect", "pin_blas_threads"]


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
    client = _current_client()
    if client is not None:
        futures = client.compute(list(collections))
        if show:
            from distributed import progress

            if label:
                print(f"bigkern: {label}", file=sys.stderr)
            progress(futures, notebook=False)
            print(file=sys.stderr)
        return tuple(client.gather(futures))
    if show:
        from dask.diagnostics import ProgressBar

        with ProgressBar(out=sys.stderr):
            return dask.compute(*collections)
    return dask.compute(*collections)


def _current_client() -> Any:
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
