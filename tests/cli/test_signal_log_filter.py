"""The log filter that keeps an interrupted command's stderr to one line."""

from __future__ import annotations

import gc
import logging
import signal
import sys
import threading
import time
import types

import pytest

from bigkern.cli.signals import (
    Terminated,
    _AbandonedGather,
    quiet_abandoned_gathers,
    sigterm_raises,
)


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


def _interrupt_inside_gc(sig: int) -> None:
    """Collect garbage with a callback during which ``sig`` arrives: its handler runs in the
    callback, where Python cannot propagate what it raises."""
    fired: list[str] = []

    def callback(phase: str, info: dict) -> None:
        if phase == "start" and not fired:
            fired.append(phase)
            signal.raise_signal(sig)
            for _ in range(100):  # the handler runs at one of these bytecodes
                pass

    gc.callbacks.append(callback)
    try:
        gc.collect()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:  # the interrupt sent again arrives here
            time.sleep(0.001)
    finally:
        gc.callbacks.remove(callback)
    assert fired


main_thread_only = pytest.mark.skipif(
    threading.current_thread() is not threading.main_thread(),
    reason="signal handlers run only in the main thread")


@main_thread_only
def test_a_sigterm_lost_in_a_gc_callback_is_delivered_again():
    with pytest.raises(Terminated), sigterm_raises():
        _interrupt_inside_gc(signal.SIGTERM)
    assert signal.getsignal(signal.SIGTERM) is not None
    assert sys.unraisablehook is sys.__unraisablehook__ or "deliver_again" not in repr(
        sys.unraisablehook)


@main_thread_only
def test_a_ctrl_c_lost_in_a_gc_callback_is_delivered_again():
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        pytest.skip("SIGINT is not Python's default handler in this process")
    with pytest.raises(KeyboardInterrupt) as caught, sigterm_raises():
        _interrupt_inside_gc(signal.SIGINT)
    assert not isinstance(caught.value, Terminated)


@main_thread_only
def test_no_signal_is_sent_again_once_the_block_is_left():
    # an interrupt reported as lost just before the block ends (the command is already
    # handling one, or its work is over) must not arrive afterwards, when no handler of
    # the command's waits for it and the process would die of it while it exits
    received: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: received.append(signum))
    try:
        with sigterm_raises():
            lost = Terminated("signal SIGTERM")  # what the hook gets: the lost exception
            sys.unraisablehook(types.SimpleNamespace(exc_type=Terminated, exc_value=lost,
                                                     exc_traceback=None, err_msg=None,
                                                     object=None))
        time.sleep(0.2)  # past the 20 ms after which it would have been sent
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert received == []
