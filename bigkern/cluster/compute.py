"""Where a computation's tasks run, and computing there with progress.

:func:`current_client` is the distributed client bigkern computes on (unless
dask's ``scheduler`` setting names another); :func:`compute` is ``dask.compute``
there with a progress bar, under the watchdog of :mod:`bigkern.cluster.watchdog`
(paused or lost workers, no progress: reported, then a ``ClusterError``)
and, on dask's local threaded scheduler, BLAS pinned to
``bigkern.blas_threads`` threads per task; :func:`task_threads` says how many
tasks run at once, so heavy passes can split in-memory rows among them.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Iterator, Sequence
from typing import Any

import dask

from bigkern import config
from bigkern.cluster.progress import distributed_lines, local_lines
from bigkern.cluster.watchdog import current_client

__all__ = ["blas_controller", "compute", "current_client", "gather_watching", "task_threads"]


def compute(*collections: Any, label: str | None = None,
            optimize_graph: bool = True) -> tuple[Any, ...]:
    """``dask.compute`` with a progress bar when ``bigkern.progress`` is on.

    ``optimize_graph=False`` computes the graphs as they are (already optimized, say).

    On a distributed client the bar is :func:`distributed.progress` — its widget
    form in a Jupyter kernel (with ipywidgets), else text on stderr; without a
    client the local :class:`dask.diagnostics.ProgressBar`. Bars are shown when
    stderr is a terminal or the code runs in a Jupyter kernel, or always when
    ``bigkern.progress`` is ``"always"``; elsewhere (a batch job's log) progress is
    printed as lines (:mod:`bigkern.cluster.progress`).
    """
    setting = config.get("progress")
    widget = _notebook_widgets()
    show = setting == "always" or (bool(setting) and (sys.stderr.isatty() or widget))
    lines = bool(setting) and not show  # a log, not a terminal: progress as lines
    client = current_client()
    if client is not None:
        from bigkern.cluster.watchdog import watching

        futures = client.compute(list(collections), optimize_graph=optimize_graph)
        # the watchdog covers the text bar too: it blocks until its keys finish or are cancelled
        with watching(client, futures):
            if show:
                from distributed import progress

                if label:
                    print(f"bigkern: {label}", file=sys.stderr)
                bar = progress(futures, notebook=widget)
                if widget:  # the widget updates itself while gather waits
                    from IPython.display import display

                    display(bar)
                else:
                    print(file=sys.stderr)
            elif lines:
                with distributed_lines(futures, label):
                    return tuple(client.gather(futures))
            return tuple(client.gather(futures))
    kwargs: dict[str, Any] = {"optimize_graph": optimize_graph}
    if _no_client_possible():
        kwargs["scheduler"] = _no_client_scheduler()
    with _local_blas_limit(collections):
        if show:
            from dask.diagnostics import ProgressBar

            with ProgressBar(out=sys.stderr):
                return dask.compute(*collections, **kwargs)
        if lines:
            with local_lines(label):
                return dask.compute(*collections, **kwargs)
        return dask.compute(*collections, **kwargs)


def _no_client_possible() -> bool:
    """No scheduler is set and distributed was never imported, so no client exists.

    dask then imports distributed to look for one, which takes longer than the rest
    of a small fit in a fresh process; bigkern names the threaded scheduler instead,
    dask's default for its arrays and delayed objects.
    """
    return dask.config.get("scheduler", None) is None and "distributed" not in sys.modules


def _no_client_scheduler() -> Any:
    import dask.threaded

    return dask.threaded.get


def _local_scheduler_threads(collections: Sequence[Any] = ()) -> int:
    """Threads dask's local scheduler runs tasks on: 1 for ``sync`` (or processes)."""
    import dask.base
    import dask.threaded

    if _no_client_possible():
        return _threads()
    chosen = dask.base.get_scheduler(collections=list(collections) or None)
    if (chosen or dask.threaded.get) is not dask.threaded.get:  # None: dask's default, threads
        return 1
    return _threads()


def _threads() -> int:
    """The threaded scheduler's threads: ``num_workers``, else the CPUs."""
    from dask.system import CPU_COUNT

    return int(dask.config.get("num_workers", None) or CPU_COUNT)


def task_threads() -> int:
    """How many tasks run at once: the client's worker threads, else dask's local threads.

    Passes whose chunk work is heavy (``n·m̃²`` per chunk) split in-memory input
    into at least this many row chunks, so both cores work while BLAS is pinned to
    ``bigkern.blas_threads`` threads per task.
    """
    client = current_client()
    if client is not None:
        info = client.scheduler_info(n_workers=-1).get("workers", {})
        return max(1, sum(int(w.get("nthreads", 1)) for w in info.values()))
    return _local_scheduler_threads()


@contextlib.contextmanager
def _local_blas_limit(collections: Sequence[Any]) -> Iterator[None]:
    """Pin BLAS to ``bigkern.blas_threads`` while dask's *threaded* scheduler computes.

    Its threads run tasks side by side; each task's BLAS call then starting a pool
    of its own (numpy's and scipy's OpenBLAS are two pools) oversubscribes the
    cores, and a pass then runs far slower than on one BLAS thread per task, the more
    so when another process holds a core. Distributed workers are pinned by
    :class:`PinBlasThreads`; the synchronous scheduler is left alone (one task at a
    time may use every core).
    """
    if _local_scheduler_threads(collections) <= 1:
        yield
        return
    with blas_controller().limit(limits=int(config.get("blas_threads") or 1)):
        yield


@functools.cache
def blas_controller() -> Any:
    """One :class:`threadpoolctl.ThreadpoolController` for the process, made once.

    Making one reads the process's loaded libraries (``/proc/self/maps``), which
    takes about as long as a small fit's whole solve. Libraries loaded after the first call are not
    seen; numpy's and scipy's BLAS are loaded with bigkern.
    """
    from threadpoolctl import ThreadpoolController  # a dependency of scikit-learn

    return ThreadpoolController()


def _notebook_widgets() -> bool:
    """Whether this runs in a Jupyter kernel that can show ipywidgets."""
    shell = sys.modules.get("IPython")
    if shell is None:
        return False
    try:
        ip = shell.get_ipython()
        if ip is None or type(ip).__name__ != "ZMQInteractiveShell":
            return False
        import ipywidgets  # noqa: F401
    except (ImportError, AttributeError):
        return False
    return True


def gather_watching(client: Any, futures: list[Any], poll: float | None = None) -> list[Any]:
    """``client.gather(futures)`` under the watchdog of :mod:`bigkern.cluster.watchdog`.

    Kept for callers of bigkern 0.1; :func:`bigkern.cluster.watchdog.gather` is the same.
    """
    from bigkern.cluster.watchdog import gather

    return gather(client, futures, poll=poll)
