"""Keep expected errors out of the workers' logs on a terminal: one clear line per error.

When a task raises an error bigkern expects — a corrupt chunk
(:class:`~bigkern.errors.StoreError`), data over a quality limit
(:class:`~bigkern.errors.DataQualityError`) … — the ``bigkern`` command prints
it as one line. The workers of an embedded cluster share its terminal,
though, and distributed logs every failed task there first: "Compute Failed",
the task, the exception and a traceback full of file paths. The user reads a
traceback before the sentence meant for them. Closing the cluster after the
error adds its own warnings (a task cancelled because its worker closes, a
worker process killed because it did not stop in time).

:class:`ExpectedErrorFilter` drops exactly those records: a record whose
exception is a :class:`~bigkern.errors.BigkernError` (its ``exc_info``, an
exception among its arguments, or the ``repr`` of one, which is all
distributed's "Compute Failed" record carries), and, once the cluster is
closing, its warnings and the errors of its connections closing. Anything
else, a real bug above all, is logged as before.

The CLI (unless ``--verbose``) filters its own process with
:class:`QuietLogs` — an embedded cluster's scheduler and nannies run there —
and, for a cluster it built and will close, every worker, present and
future, with the worker plugin :class:`QuietExpectedErrors`. It leaves the
workers of a cluster it merely connected to alone: their logs are not on
this terminal but the record their operator keeps.

The worker plugin is light: this module is pickled by value (cloudpickle), so
a worker unpickling :class:`QuietExpectedErrors` gets its code without
importing bigkern — whose package import (numba, scipy, scikit-learn, xarray …)
would add a large share of a worker's memory. Nothing here refers to
:class:`~bigkern.errors.BigkernError` by name; it is looked up in the process's
modules when a record is judged (a process that never imported bigkern cannot
have raised one).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import Callable, Iterator
from typing import Any

import cloudpickle
from distributed import WorkerPlugin

__all__ = [
    "ExpectedErrorFilter",
    "QuietExpectedErrors",
    "QuietLogs",
    "install_filter",
    "is_expected_error",
    "is_shutdown_chatter",
]

#: Top-level loggers whose handlers (and those of their children) get the filter;
#: tornado's share distributed's handler, asyncio reports a task's lost exception.
_LOGGER_FAMILIES = ("distributed", "tornado", "asyncio")


def _bigkern_error() -> type | None:
    """:class:`~bigkern.errors.BigkernError`, if this process has imported it."""
    return getattr(sys.modules.get("bigkern.errors"), "BigkernError", None)


def _expected_names() -> tuple[str, ...]:
    """``"Name("`` for every class of :class:`BigkernError`, as ``repr`` starts with it."""
    base = _bigkern_error()
    if base is None:
        return ()
    names: set[str] = set()
    todo: list[type] = [base]
    while todo:
        cls = todo.pop()
        names.add(cls.__name__)
        todo.extend(cls.__subclasses__())
    return tuple(sorted(f"{name}(" for name in names))


def _is_expected_repr(text: str) -> bool:
    """Whether ``text`` is the ``repr`` of a :class:`BigkernError` (quoted or not)."""
    names = _expected_names()
    return bool(names) and text.strip().lstrip("'\"").startswith(names)


def is_expected_error(record: logging.LogRecord) -> bool:
    """Whether ``record`` reports an error bigkern expects (a :class:`BigkernError`).

    The exception is looked for where logging and distributed put it: the
    record's ``exc_info``; the message or an argument that is the exception
    itself; an argument that is its ``repr`` (the "Exception:" of
    distributed's "Compute Failed" record, which carries no exception
    object); or a message line ``Exception: <repr>`` in a message formatted
    beforehand.

    Parameters
    ----------
    record : logging.LogRecord
        A record about to be handled.

    Returns
    -------
    bool
    """
    base = _bigkern_error()
    if base is None:  # bigkern never imported here: nothing here raised its errors
        return False
    if record.exc_info and record.exc_info[1] is not None:
        return isinstance(record.exc_info[1], base)
    args = record.args if isinstance(record.args, tuple) else ()
    for item in (record.msg, *args):
        if isinstance(item, base):
            return True
        if isinstance(item, str) and _is_expected_repr(item):
            return True
    if isinstance(record.msg, str) and not args:
        lines = record.msg.splitlines()
        return any(line.startswith("Exception:") and _is_expected_repr(line[10:])
                   for line in lines)
    return False


def _closed_connection(exc: BaseException | None) -> bool:
    """Whether ``exc`` says a connection or task was closed (what closing a cluster does)."""
    if exc is None:
        return False
    from distributed.comm.core import CommClosedError
    from tornado.iostream import StreamClosedError

    return isinstance(exc, (CommClosedError, StreamClosedError, asyncio.CancelledError))


def is_shutdown_chatter(record: logging.LogRecord) -> bool:
    """Whether ``record``, logged while a cluster closes, is only about the closing.

    That is any warning of distributed or tornado (a task cancelled because its
    worker closes, a worker process killed after not stopping in time, an
    event loop slowed meanwhile …) and an error whose exception is a closed
    connection or a cancelled task. Errors with any other exception are kept.

    Parameters
    ----------
    record : logging.LogRecord
        A record logged while the cluster closes.

    Returns
    -------
    bool
    """
    if record.name.partition(".")[0] not in ("distributed", "tornado"):
        return False
    if record.levelno < logging.ERROR:
        return True
    exc = record.exc_info[1] if record.exc_info else None
    return record.levelno == logging.ERROR and _closed_connection(exc)


class ExpectedErrorFilter(logging.Filter):
    """A logging filter that drops the records of errors bigkern expects and reports itself.

    Parameters
    ----------
    closing : callable, optional
        Returns True once the cluster is closing: from then on
        :func:`is_shutdown_chatter` records are dropped too. Default: never.
    closed_connections : bool
        Drop distributed's errors about a closed connection at any time, not only
        once ``closing`` says so: right for the workers of a cluster whose scheduler
        runs in the command's own process, where the scheduler's connections close
        only because the command is closing the cluster — and a worker's heartbeat
        may find them closed before the worker itself has heard.

    Examples
    --------
    >>> import logging
    >>> record = logging.LogRecord("distributed.worker", logging.ERROR, __file__, 1,
    ...                            "Compute Failed\\nException: %r", ("StoreError('x')",), None)
    >>> ExpectedErrorFilter().filter(record)
    False
    """

    def __init__(self, closing: Callable[[], bool] | None = None, *,
                 closed_connections: bool = False) -> None:
        super().__init__()
        self._closing = closing or (lambda: False)
        self._closed_connections = closed_connections

    def filter(self, record: logging.LogRecord) -> bool:
        """Whether to keep ``record``: False for an expected error or closing chatter."""
        if record.levelno < logging.WARNING:
            return True
        try:
            if is_expected_error(record):
                return False
            if self._closed_connections and record.levelno >= logging.ERROR \
                    and is_shutdown_chatter(record):
                return False
            return not (self._closing() and is_shutdown_chatter(record))
        except Exception:  # never let the filter lose a record it cannot judge
            return True


def _handlers() -> list[logging.Handler]:
    """The handlers records of distributed, tornado and asyncio can reach, without repeats."""
    loggers: list[Any] = [logging.getLogger()]
    for name, logger in list(logging.Logger.manager.loggerDict.items()):
        if isinstance(logger, logging.Logger) and name.partition(".")[0] in _LOGGER_FAMILIES:
            loggers.append(logger)
    found: list[logging.Handler] = []
    for logger in loggers:
        found.extend(h for h in logger.handlers if h not in found)
    if logging.lastResort is not None and logging.lastResort not in found:
        found.append(logging.lastResort)  # used when a record finds no handler at all
    return found


def install_filter(log_filter: logging.Filter) -> list[logging.Handler]:
    """Add ``log_filter`` to the handlers that distributed's records reach; return them.

    Parameters
    ----------
    log_filter : logging.Filter
        Usually an :class:`ExpectedErrorFilter`.

    Returns
    -------
    list of logging.Handler
        The handlers it was added to, for :func:`remove_filter`.
    """
    added = []
    for handler in _handlers():
        if log_filter not in handler.filters:
            handler.addFilter(log_filter)
            added.append(handler)
    return added


def remove_filter(log_filter: logging.Filter, handlers: list[logging.Handler]) -> None:
    """Take ``log_filter`` off ``handlers`` again."""
    for handler in handlers:
        handler.removeFilter(log_filter)


class QuietExpectedErrors(WorkerPlugin):
    """Worker plugin: filter expected errors and closing chatter out of a worker's logs.

    Register it with ``client.register_plugin(QuietExpectedErrors())``; the
    scheduler runs it on workers that join later too, and its teardown removes
    the filter. A worker's closing chatter is dropped once its status is
    closing, and its errors about closed connections at any time: the CLI
    registers it only on a cluster it built, whose scheduler lives in the
    command's process and closes only when the command closes the cluster.
    """

    name = "bigkern-quiet-expected-errors"

    def setup(self, worker: Any) -> None:
        """Add an :class:`ExpectedErrorFilter` to the worker process's log handlers."""
        from distributed.core import Status

        closing = (Status.closing, Status.closing_gracefully, Status.closed)
        self._filter = ExpectedErrorFilter(lambda: worker.status in closing,
                                           closed_connections=True)
        self._handlers = install_filter(self._filter)

    def teardown(self, worker: Any) -> None:
        """Remove the filter again, unless the worker is closing.

        A closing worker tears its plugins down before its last coroutines end: a
        heartbeat still in flight then finds the scheduler gone and logs it, and
        that record must meet the filter too (the process ends anyway).
        """
        from distributed.core import Status

        if worker.status in (Status.closing, Status.closing_gracefully, Status.closed):
            return
        if hasattr(self, "_filter"):
            remove_filter(self._filter, self._handlers)


class QuietLogs:
    """Context manager of the CLI: expected errors stay out of this process's logs.

    Inside it an :class:`ExpectedErrorFilter` sits on the handlers distributed's
    records reach in this process; :meth:`cluster` extends it to a cluster's
    workers and, when its block is left, to the chatter of the cluster closing.

    Examples
    --------
    ::

        with QuietLogs() as quiet, connect() as client, quiet.cluster(client, owned=True):
            ...  # compute; leaving the block closes the cluster quietly
    """

    def __init__(self) -> None:
        self.closing = False
        self._filter = ExpectedErrorFilter(lambda: self.closing)
        self._handlers: list[logging.Handler] = []

    def __enter__(self) -> QuietLogs:
        self._handlers = install_filter(self._filter)
        return self

    def __exit__(self, *exc: object) -> None:
        remove_filter(self._filter, self._handlers)
        self._handlers = []

    @contextlib.contextmanager
    def cluster(self, client: Any, owned: bool) -> Iterator[None]:
        """Quiet the workers of ``client``'s cluster if ``owned``; mark it closing at exit.

        Parameters
        ----------
        client : distributed.Client
            The client of the computation.
        owned : bool
            Whether this process built the cluster and closes it when the
            block is left (then its workers get :class:`QuietExpectedErrors`,
            which stays until they close). A cluster merely connected to is
            left alone.
        """
        if owned:
            client.register_plugin(QuietExpectedErrors())
        try:
            yield
        finally:
            self.closing = True


# Workers get this module's code with the plugin instead of importing bigkern (see above).
cloudpickle.register_pickle_by_value(sys.modules[__name__])
