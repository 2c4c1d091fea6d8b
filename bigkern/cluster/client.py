"""Where bigkern's computations run: a Dask distributed Client.

:func:`connect` returns a :class:`distributed.Client` to a scheduler given by
address, scheduler file, :class:`~distributed.deploy.Cluster` object,
``DASK_SCHEDULER_ADDRESS`` or the existing default client, or to a cluster it
builds from a named profile of ``bigkern.cluster.profiles`` (``local``,
``slurm``, ``pbs``, ``kubernetes``). Every worker, including those that join
later, is set up by the ``PinBlasThreads`` worker plugin.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import time
from typing import Any

import dask

from bigkern import config
from bigkern.cluster.profiles import build_cluster
from bigkern.errors import ClusterError

# BigkernClient and PinBlasThreads (subclasses of distributed's Client and WorkerPlugin)
# are built on first access, by the module __getattr__ below.
__all__ = ["connect", "connection_line", "owns_cluster", "pin_blas_threads"]



def pin_blas_threads(n: int | None = None) -> None:
    """Limit BLAS/OpenMP threads in this process so dask's threads do not oversubscribe.

    Parameters
    ----------
    n : int, optional
        Threads per BLAS call; default the ``bigkern.blas_threads`` setting.
    """
    n = int(n or config.get("blas_threads") or 1)
    try:
        import numpy  # noqa: F401  (load the BLAS libraries so their pools are limited)
        import scipy.linalg  # noqa: F401
        from threadpoolctl import threadpool_limits

        threadpool_limits(n)
    except ImportError:  # pragma: no cover - threadpoolctl ships with scikit-learn
        pass


@functools.cache
def _plugin_class() -> type:
    """:class:`~bigkern.cluster.worker_plugins.PinBlasThreads`, imported when distributed is needed.

    It lives in :mod:`bigkern.cluster.worker_plugins`, which workers receive by value:
    registering it does not import bigkern on them.
    """
    from bigkern.cluster.worker_plugins import PinBlasThreads

    return PinBlasThreads


@functools.cache
def _client_class() -> type:
    """:class:`BigkernClient`, defined once, when distributed is first needed."""
    from distributed import Client

    class BigkernClient(Client):
        """A :class:`distributed.Client` that closes the cluster :func:`connect` built and
        never waits silently.

        Each synchronous :meth:`gather` — and so ``dask.compute``, ``.load()``,
        ``.values`` on this client — runs under :func:`bigkern.cluster.watchdog.watching`:
        paused or lost workers and a computation without progress are reported
        on stderr and, past ``bigkern.stall_timeout``, end the wait with a
        :class:`~bigkern.errors.ClusterError` naming the cause.
        """

        _bigkern_cluster: Any = None

        def gather(self, futures: Any, errors: str = "raise", direct: Any = None,
                   asynchronous: Any = None) -> Any:
            """``Client.gather``, watched when it waits synchronously for unfinished futures."""
            from distributed.client import futures_of

            from bigkern.cluster.watchdog import is_watching, watching

            plain = super().gather
            if asynchronous or self.asynchronous or is_watching():
                return plain(futures, errors=errors, direct=direct, asynchronous=asynchronous)
            pending = [f for f in futures_of(futures) if not f.done()]
            if not pending:  # nothing to wait for: not even a thread
                return plain(futures, errors=errors, direct=direct, asynchronous=asynchronous)
            with watching(self, pending):
                return plain(futures, errors=errors, direct=direct, asynchronous=asynchronous)

        def close(self, *args: Any, **kwargs: Any) -> Any:
            result = super().close(*args, **kwargs)
            cluster, self._bigkern_cluster = self._bigkern_cluster, None
            if cluster is not None:
                cluster.close()
            return result

    BigkernClient.__module__ = __name__
    BigkernClient.__qualname__ = "BigkernClient"
    return BigkernClient


def __getattr__(name: str) -> Any:
    # The two distributed subclasses are built on first use, so that importing
    # bigkern does not import distributed; pickle finds them here by name.
    if name == "PinBlasThreads":
        return _plugin_class()
    if name == "BigkernClient":
        return _client_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def connect(
    address: Any = None,
    *,
    scheduler_file: str | os.PathLike[str] | None = None,
    cluster: Any = None,
    profile: str | None = None,
    n_workers: int | None = None,
    threads_per_worker: int | None = None,
    memory_limit: str | None = None,
    adapt: dict[str, int] | None = None,
    timeout: float | None = None,
    quiet: bool = False,
    verbose: bool = False,
    **options: Any,
) -> Any:
    """Return a :class:`distributed.Client` to the cluster bigkern should use.

    The first that applies: a ``cluster`` object (or one passed as
    ``address``); ``address``; ``scheduler_file``; ``profile``;
    ``DASK_SCHEDULER_ADDRESS`` (dask's ``scheduler-address`` setting); the
    existing default client; the profile named by
    ``bigkern.cluster.default_profile`` (``local``: an embedded LocalCluster).

    Use it as ``client = connect(...)`` or ``with connect(...) as client:``.
    Closing the client (or leaving the ``with`` block) closes the cluster
    :func:`connect` built from a profile, and nothing else: never a cluster
    object passed in, nor a client that existed before.

    Parameters
    ----------
    address : str or Cluster, optional
        A scheduler address such as ``tcp://10.0.0.5:8786``, or a Cluster.
    scheduler_file : path, optional
        A JSON file written by ``dask scheduler --scheduler-file``; waited
        for up to ``timeout`` seconds.
    cluster : distributed.deploy.Cluster, optional
        A running cluster (e.g. a user's ``SLURMCluster``).
    profile : str, optional
        A key of ``bigkern.cluster.profiles``.
    n_workers : int, optional
        Workers of a profile's cluster (overrides the profile's); with a
        scheduler address or file, wait until this many workers have joined.
    threads_per_worker, memory_limit
        Sizing of a ``local`` profile's cluster.
    adapt : dict, optional
        ``{"minimum": m, "maximum": M}``: scale a profile's cluster adaptively.
    timeout : float, optional
        Seconds to reach the scheduler (default dask's
        ``distributed.comm.timeouts.connect``); workers are waited for up to
        ``bigkern.cluster.worker_timeout`` seconds.
    quiet : bool
        Print nothing on connecting. By default one line goes to stderr: the
        scheduler's address, its workers and, when the scheduler can serve
        dask's dashboard (it has bokeh), the dashboard's link.
    verbose : bool
        Also say why there is no dashboard link when the scheduler cannot
        serve one (``bigkern --verbose``); without it a batch log gets no line
        about a dashboard nobody asked for.
    **options
        More keyword arguments of the profile's cluster class.

    Returns
    -------
    distributed.Client

    Raises
    ------
    ClusterError
        The scheduler cannot be reached, the workers do not come, the
        profile is unknown or its package is not installed (one line).

    Examples
    --------
    A small cluster in this process, closed with the ``with`` block:

    >>> import bigkern
    >>> with bigkern.connect(profile="local", n_workers=1, processes=False,
    ...                      quiet=True) as client:
    ...     print(len(client.scheduler_info()["workers"]))
    1

    A scheduler started elsewhere (``dask scheduler``) is reached by its
    address; that needs the scheduler running, so this line is not run as a test:

    >>> client = bigkern.connect("tcp://10.0.0.5:8786")  # doctest: +SKIP
    """
    from distributed.deploy import Cluster

    if isinstance(address, Cluster):
        address, cluster = None, address
    given = [n for n, v in (("address", address), ("scheduler_file", scheduler_file),
                            ("cluster", cluster), ("profile", profile)) if v is not None]
    if len(given) > 1:
        raise ValueError(f"give at most one of address, scheduler_file, cluster and profile; "
                         f"got {' and '.join(given)}")
    if timeout is None:
        timeout = dask.utils.parse_timedelta(dask.config.get("distributed.comm.timeouts.connect"))
    if cluster is not None or address is not None or scheduler_file is not None:
        client = _client_of_given(address, scheduler_file, cluster, timeout)
    elif profile is None and dask.config.get("scheduler-address", None):
        client = _client(dask.config.get("scheduler-address"), timeout)
    elif profile is None and (existing := _default_client()) is not None:
        client = _client(existing.scheduler.address, timeout, set_as_default=False,
                         security=existing.security)
    else:
        client, n_workers = _client_of_profile(profile, n_workers, threads_per_worker,
                                               memory_limit, adapt, options, timeout)
    try:
        client.register_plugin(_plugin_class()(int(config.get("blas_threads") or 1)))
        if n_workers:
            _wait_for_workers(client, n_workers)
    except BaseException:
        client.close()
        raise
    if not quiet:
        print(connection_line(client, verbose=verbose), file=sys.stderr)
    return client


def connection_line(client: Any, *, verbose: bool = False) -> str:
    """The line :func:`connect` prints: the scheduler's address, its workers, the dashboard.

    Examples
    --------
    >>> import bigkern
    >>> with bigkern.connect(profile="local", n_workers=1, processes=False,
    ...                      quiet=True) as client:
    ...     connection_line(client).startswith("bigkern: connected to inproc://")
    True
    """
    n = len(client.scheduler_info(n_workers=-1).get("workers", {}))
    dashboard = _dashboard_text(client, verbose=verbose)
    return (f"bigkern: connected to {client.scheduler.address} with {n} workers"
            + (f" ({dashboard})" if dashboard else ""))


def _scheduler_has_bokeh() -> bool:
    """Whether this process (the scheduler's, when run there) can serve dask's dashboard."""
    import importlib.util

    return importlib.util.find_spec("bokeh") is not None


def _dashboard_text(client: Any, *, verbose: bool = False) -> str:
    """Where the dashboard is; why there is none only if ``verbose`` (else ``""``).

    A link is given only to a page that can serve: without bokeh the
    scheduler's dashboard address answers with a page saying that bokeh is
    missing, so a link to it would be a dead end.
    """
    try:
        serves = bool(client.run_on_scheduler(_scheduler_has_bokeh))
    except Exception:  # a scheduler that runs no code of ours: say where it would be
        serves = True
    if serves:
        return f"dashboard {client.dashboard_link}"
    if verbose:
        return "no dashboard: the scheduler lacks bokeh; pip install 'bigkern[notebook]'"
    return ""


def _client_of_given(address: Any, scheduler_file: str | os.PathLike[str] | None,
                     cluster: Any, timeout: float) -> Any:
    """A client of the one scheduler given: a cluster object, an address or a scheduler file."""
    if cluster is not None:
        return _client(cluster, timeout, where=f"cluster {cluster!r}")
    if address is not None:
        return _client(address, timeout)
    return _client(None, timeout, scheduler_file=_await_file(scheduler_file, timeout),
                   where=f"the scheduler of {os.fspath(scheduler_file)}")


def _client_of_profile(profile: str | None, n_workers: int | None,
                       threads_per_worker: int | None, memory_limit: str | None,
                       adapt: dict[str, int] | None, options: dict[str, Any],
                       timeout: float) -> tuple[Any, int | None]:
    """A client of a cluster built from a profile (closed with it), and the workers to await."""
    profile = profile or config.get("cluster.default_profile") or "local"
    built, n_wait = build_cluster(profile, n_workers, threads_per_worker, memory_limit,
                                   adapt, options)
    try:
        client = _client(built, timeout, where=f"the {profile!r} cluster")
    except BaseException:
        built.close()
        raise
    client._bigkern_cluster = built
    return client, n_wait


def owns_cluster(client: Any) -> bool:
    """Whether :func:`connect` built ``client``'s cluster, which closing ``client`` closes.

    Parameters
    ----------
    client : distributed.Client
        A client, usually one :func:`connect` returned.

    Returns
    -------
    bool
        True for a cluster built from a profile (the embedded LocalCluster
        among them); False for a scheduler address, scheduler file, Cluster
        object or default client given or found.
    """
    return getattr(client, "_bigkern_cluster", None) is not None


def _default_client() -> Any:
    """The running default client, or None."""
    from distributed import default_client

    try:
        client = default_client()
    except ValueError:
        return None
    return client if client.status == "running" else None


def _client(target: Any, timeout: float, where: str | None = None, **kwargs: Any) -> Any:
    """A client to ``target``; a failure to connect is a one-line :class:`ClusterError`."""
    try:
        address = target if isinstance(target, str) else _file_address(kwargs)
        if address is not None:
            _probe(address, timeout, kwargs.get("security"))
        return _client_class()(target, timeout=timeout, **kwargs)
    except (OSError, TimeoutError) as err:
        reason = (str(err).strip().splitlines() or [type(err).__name__])[0]
        where = where or f"the Dask scheduler at {target}"
        raise ClusterError(f"cannot connect to {where}: {reason}") from None


def _file_address(kwargs: dict[str, Any]) -> str | None:
    """The scheduler address in a ``scheduler_file=`` keyword's file, if one is given."""
    path = kwargs.get("scheduler_file")
    if path is None:
        return None
    try:
        with open(path) as f:
            return str(json.load(f)["address"])
    except (OSError, ValueError, KeyError, TypeError):
        return None  # the client reads it again and says what is wrong


def _probe(address: str, timeout: float, security: Any = None) -> None:
    """Raise TimeoutError unless the scheduler at ``address`` answers within ``timeout``.

    A port that accepts the connection and never answers (a hung or foreign
    process, a proxy with nothing behind it) holds ``distributed.Client``, and
    ``distributed.comm.connect`` with it, in its handshake whatever their
    ``timeout`` (distributed 2026.8); this asks for the scheduler's identity
    under a deadline of its own, in a thread with its own event loop (a
    notebook's loop may be running in this one).
    """
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from distributed.comm import connect

    args = security.get_connection_args("client") if security is not None else {}

    async def identity() -> None:
        comm = await connect(address, timeout=timeout, **args)
        try:
            await comm.write({"op": "identity", "reply": True})
            await comm.read()
        finally:
            await comm.close()

    async def bounded() -> None:
        try:
            await asyncio.wait_for(identity(), timeout)
        except asyncio.TimeoutError:
            raise TimeoutError(f"no answer in {timeout:g} s (the port is open, but nothing "
                               f"there speaks to a Dask client)") from None

    with ThreadPoolExecutor(1, thread_name_prefix="bigkern-probe") as pool:
        pool.submit(asyncio.run, bounded()).result()


def _await_file(path: str | os.PathLike[str], timeout: float) -> str:
    """``path`` once it exists (a scheduler writes its file a moment after it starts)."""
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise ClusterError(f"cannot connect to the Dask scheduler: its scheduler file "
                               f"{os.fspath(path)} did not appear in {timeout:g} s")
        time.sleep(0.05)
    return os.fspath(path)


def _wait_for_workers(client: Any, n: int) -> None:
    limit = dask.utils.parse_timedelta(config.get("cluster.worker_timeout", 300))
    t = time.monotonic()
    try:
        client.wait_for_workers(n, timeout=limit)
    except TimeoutError:
        have = len(client.scheduler_info(n_workers=-1).get("workers", {}))
        raise ClusterError(f"only {have} of {n} workers joined {client.scheduler.address} in "
                           f"{time.monotonic() - t:.0f} s (bigkern.cluster.worker_timeout)"
                           ) from None
