"""The log filter that keeps an interrupted command's stderr to one line."""

from __future__ import annotations

import logging
import sys

from bigkern.cli_signals import _AbandonedGather, quiet_abandoned_gathers


class AllExit(Exception):
    """Stands in for distributed's AllExit: the filter matches by name."""


def _record(exc: BaseException, name: str = "asyncio") -> logging.LogRecord:
    try:
        raise exc
    except BaseException:
        info = sys.exc_info()
    return logging.LogRecord(name, logging.ERROR, __file__, 1, "Exception in callback", None, info)


def test_the_records_an_interrupted_gather_leaves_are_dropped():
    keep = _AbandonedGather().filter
    assert not keep(_record(AllExit()))
    unbound = NameError("cannot access free variable 'future'")
    assert not keep(_record(unbound, "tornado.application"))


def test_other_errors_are_kept():
    keep = _AbandonedGather().filter
    assert keep(_record(NameError("name 'x' is not defined")))
    assert keep(_record(ValueError("future")))
    assert keep(logging.LogRecord("asyncio", logging.ERROR, __file__, 1, "plain", None, None))


def test_the_filter_is_installed_once_on_both_loggers():
    quiet_abandoned_gathers()
    quiet_abandoned_gathers()
    for name in ("asyncio", "tornado.application"):
        filters = [f for f in logging.getLogger(name).filters if isinstance(f, _AbandonedGather)]
        assert len(filters) == 1
