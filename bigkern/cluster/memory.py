"""How much memory the workers of the current cluster have: the one place it is asked.

The binning plans ask how large a sample the smallest worker can hold; the prediction
asks how many pixels one task may take. Both read the workers' declared memory limits
from the scheduler of the current client.
"""

from __future__ import annotations

__all__ = ["machine_memory", "worker_memory"]


def worker_memory(*, per_task: bool = False) -> int | None:
    """Bytes of memory of the smallest worker of the current client, or None.

    Parameters
    ----------
    per_task : bool
        What one task may use there instead: the worker's limit per thread, times
        distributed's ``distributed.worker.memory.target`` fraction (above it a worker
        starts spilling; above ``pause`` it stops running tasks, which is how an
        oversized task hangs a computation).

    Returns
    -------
    int or None
        None without a client (dask's local schedulers) or when no worker declares a
        memory limit.

    Examples
    --------
    >>> from bigkern.cluster.memory import worker_memory
    >>> worker_memory() is None  # no client here: the caller decides
    True
    """
    import dask

    from bigkern.cluster.compute import current_client

    client = current_client()
    if client is None:
        return None
    workers = client.scheduler_info(n_workers=-1).get("workers", {}).values()
    limits = [int(w["memory_limit"]) / (max(1, int(w.get("nthreads", 1))) if per_task else 1)
              for w in workers if w.get("memory_limit")]
    if not limits:
        return None
    if not per_task:
        return int(min(limits))
    fraction = dask.config.get("distributed.worker.memory.target", 0.6) or 0.6
    return int(min(limits) * float(fraction))


def machine_memory() -> int:
    """Bytes of memory of this machine (where there is no cluster to ask).

    Examples
    --------
    >>> machine_memory() > 0
    True
    """
    import psutil  # a dependency of distributed

    return int(psutil.virtual_memory().total)
