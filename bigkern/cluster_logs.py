"""Keep expected errors out of the workers' logs on a terminal: one clear line per error.

When a task raises an error bigkern expects — a corrupt chunk
(:class:`~bigkern.errors.StoreError`), data over a quality limit
(:class:`~bigkern.errors.DataQualityError`) … — the ``bigkern`` command prints
it as one line. The workers of an embedded cluster share its terminal,
though, and distributed logs every failed task there first: "Compute Failed",
the task, the exception and a traceback full of file paths. The user reads a
traceback before the sentence meant for them.

:class:`ExpectedErrorFilter` drops exactly those records: log records whose
exception is a :class:`~bigkern.errors.BigkernError`, or whose text names one
as the exception of a failed task. Anything else, a real bug above all, is
logged as before. The CLI installs it (unless ``--verbose``) in its own
process, where an embedded cluster's scheduler runs, and through the worker
plugin :class:`QuietExpectedErrors` in every worker, present and future.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from distributed import WorkerPlugin

from bigkern.errors import BigkernError

__all__ = ["ExpectedErrorFilter", "QuietExpectedErrors", "install_filter"]

#: Loggers whose handlers get the filter (records of child loggers pass through them).
_LOGGERS = ("distributed", "")


@functools.cache
def _error_names() -> tuple[str, ...]:
    """Class names of every :class:`BigkernError`, as a task failure's text shows them."""
    seen: list[str] = []
    todo = [BigkernError]
    while todo:
        cls = todo.pop()
        seen.append(cls.__name__)
        todo.extend(cls.__subclasses__())
    return tuple(f"{name}(" for name in seen)


class ExpectedErrorFilter(logging.Filter):
    """A logging filter that drops records of errors bigkern expects and reports itself.

    Examples
    --------
    >>> import logging
    >>> record = logging.LogRecord("distributed.worker", logging.ERROR, __file__, 1,
    ...                            "Compute Failed\\nException: %r", ("StoreError('x')",), None)
    >>> ExpectedErrorFilter().filter(record)
    False
    """

    def filter(self, record: logging.LogRecord) -> bool:
        """Whether to keep ``record``: False for an expected bigkern error."""
        if record.levelno < logging.WARNING:
            return True
        if record.exc_info and isinstance(record.exc_info[1], BigkernError):
            return False
        try:
            text = record.getMessage()
        except Exception:  # a record whose arguments do not format: keep it as it is
            return True
        return not any(name in text for name in _error_names())


def install_filter(log_filter: logging.Filter) -> list[logging.Handler]:
    """Add ``log_filter`` to the handlers of distributed's and the root logger; return them."""
    handlers = []
    for name in _LOGGERS:
        for handler in logging.getLogger(name).handlers:
            if log_filter not in handler.filters:
                handler.addFilter(log_filter)
                handlers.append(handler)
    return handlers


class QuietExpectedErrors(WorkerPlugin):
    """Worker plugin: filter expected errors out of each worker's log handlers.

    Register it with ``client.register_plugin(QuietExpectedErrors())``; the
    scheduler runs it on workers that join later too, and its teardown removes
    the filter.
    """

    name = "bigkern-quiet-expected-errors"

    def setup(self, worker: Any) -> None:
        """Add an :class:`ExpectedErrorFilter` to the worker process's log handlers."""
        self._filter = ExpectedErrorFilter()
        self._handlers = install_filter(self._filter)

    def teardown(self, worker: Any) -> None:
        """Remove the filter again."""
        for handler in getattr(self, "_handlers", []):
            handler.removeFilter(self._filter)
