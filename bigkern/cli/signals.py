"""SIGTERM handled like Ctrl-C, so that an interrupted command cleans up after itself.

A batch scheduler (SLURM, PBS, Kubernetes) stops a job with SIGTERM, whose
default action ends the process at once: no ``finally`` block runs, so hidden
partial outputs stay behind and a cluster the command built is not closed.
:func:`sigterm_raises` installs a handler that raises :class:`Terminated` — a
:class:`KeyboardInterrupt`, so every ``except KeyboardInterrupt`` and every
context manager treats it as it treats Ctrl-C — and :func:`exit_code` gives the
shell's codes for both (130 for SIGINT, 143 for SIGTERM).

A process stopped by Ctrl-C ends *by SIGINT* once its clean-up is over
(:func:`exit_process`), as a shell expects of it: the shell reports ``$?`` 130
and stops a loop that was running the command, where an ordinary exit with
status 130 would let the loop go on to its next round.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any, NoReturn

__all__ = ["Terminated", "children_ignore_sigint", "exit_code", "exit_process",
           "quiet_abandoned_gathers", "sigterm_raises"]


class Terminated(KeyboardInterrupt):
    """The process received SIGTERM (raised in the main thread by :func:`sigterm_raises`)."""


def exit_code(err: KeyboardInterrupt) -> int:
    """The exit status of a command stopped by ``err``: 128 + the signal's number."""
    return 128 + (signal.SIGTERM if isinstance(err, Terminated) else signal.SIGINT)


def exit_process(code: int) -> NoReturn:
    """End the process with ``code``; after Ctrl-C (130), end it by SIGINT.

    CPython ends a process whose ``KeyboardInterrupt`` went uncaught by SIGINT,
    after its own finalization (``atexit`` handlers, flushed streams). It also
    does so, wrongly, after a ``KeyboardInterrupt`` that passed through code run
    by ``exec`` or ``eval`` of a string — :mod:`dataclasses` builds its methods
    so, and an import interrupted there marks the interrupt unhandled even when
    the command caught it — so a caught Ctrl-C ended the process sometimes by
    SIGINT and sometimes with status 130. Raising the interrupt again, with its
    traceback silenced (the command has said ``bigkern: interrupted``), makes it
    always the former: the ending a shell expects.

    Examples
    --------
    >>> exit_process(0)
    Traceback (most recent call last):
    SystemExit: 0
    """
    if code == 128 + signal.SIGINT:
        sys.excepthook = _quiet_interrupt
        raise KeyboardInterrupt
    raise SystemExit(code)


def _quiet_interrupt(kind: type[BaseException], value: BaseException, tb: Any) -> None:
    """``sys.excepthook`` after a Ctrl-C the command reported: no traceback."""
    if not issubclass(kind, KeyboardInterrupt):
        sys.__excepthook__(kind, value, tb)


@contextmanager
def sigterm_raises() -> Iterator[None]:
    """Within the block, SIGTERM raises :class:`Terminated` in the main thread.

    Only the first SIGTERM raises: later ones (a scheduler repeating itself)
    are ignored, so the clean-up that the first one started is not cut short.

    Python runs a signal's handler at the next bytecode of the main thread,
    which may belong to a garbage-collector callback (distributed installs
    one), a ``__del__`` or a weakref callback: there an exception cannot
    propagate, and Python prints it as "Exception ignored in" and carries on.
    An interrupt lost so (SIGTERM, or Ctrl-C's ``KeyboardInterrupt``) is sent
    again, so the command still stops; a lost SIGTERM once let ``synth`` run
    to its end after a scheduler asked it to stop.

    The previous handler and unraisable-exception hook are restored on exit.
    Outside the main thread (where Python cannot install handlers) this does
    nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    raised = False
    pending: list[threading.Timer] = []  # signals to send again, cancelled when the block ends

    def handler(signum: int, frame: FrameType | None) -> None:
        nonlocal raised
        if raised:
            return
        raised = True
        raise Terminated(f"signal {signal.Signals(signum).name}")

    def deliver_again(unraisable: Any) -> None:
        # Raising here would be lost as well (an exception in the hook is only printed):
        # a thread sends the signal again once the hook has returned.
        nonlocal raised
        exc = unraisable.exc_value
        if isinstance(exc, Terminated):
            raised = False
            pending.append(_send_soon(signal.SIGTERM))
        elif (isinstance(exc, KeyboardInterrupt)
              and signal.getsignal(signal.SIGINT) is signal.default_int_handler):
            pending.append(_send_soon(signal.SIGINT))
        else:
            previous_hook(unraisable)

    previous = signal.signal(signal.SIGTERM, handler)
    previous_hook, sys.unraisablehook = sys.unraisablehook, deliver_again
    try:
        yield
    finally:
        # once the block is left an interrupt is being handled, or the work is over: a
        # signal sent again after that would only kill the process while it exits
        for timer in pending:
            timer.cancel()
        signal.signal(signal.SIGTERM, previous)
        sys.unraisablehook = previous_hook


def _send_soon(signum: int, delay: float = 0.02) -> threading.Timer:
    """Send ``signum`` to this process from another thread after ``delay`` seconds."""
    timer = threading.Timer(delay, signal.raise_signal, args=(signum,))
    timer.daemon = True
    timer.start()
    return timer


@contextmanager
def children_ignore_sigint() -> Iterator[None]:
    """Processes started within the block ignore Ctrl-C: the command alone handles it.

    Ctrl-C at a terminal sends SIGINT to the whole process group, which holds
    the worker processes of an embedded cluster: each would print its own
    ``KeyboardInterrupt`` traceback while the command is cleaning up (and
    closing them). A process inherits an *ignored* SIGINT across ``exec``, and
    Python and asyncio then leave it ignored, so SIGINT is ignored here for the
    block (the cluster's start, a few seconds) and restored after it. A Ctrl-C
    within the block is lost: blocking SIGINT instead would hold it, but
    distributed's threads do not inherit a blocked mask. A command therefore
    says it is connected only after the block, once a Ctrl-C is acted on (under
    load, a signal sent on a line printed inside it was lost). Does nothing outside
    the main thread, or when SIGINT is not Python's own handler (already
    ignored, or handled by someone else).
    """
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield
        return
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)


class _AbandonedGather:
    """Drops the two log records an interrupted gather leaves behind.

    A gather interrupted by Ctrl-C or SIGTERM ends with distributed's ``AllExit``,
    raised to stop waiting and retrieved by nobody: asyncio logs "Task exception was
    never retrieved" with a traceback when the task is collected. When the interrupt
    arrives before distributed's ``sync`` has created its future, the cancel callback
    it scheduled finds the name unbound and tornado logs "Exception in callback" with a
    ``NameError`` about ``future``. After an interrupt both are the expected end of the
    wait, not errors.
    """

    def filter(self, record: Any) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if exc is None and isinstance(record.args, dict):
            exc = record.args.get("exception")
        if type(exc).__name__ == "AllExit":
            return False
        return not (isinstance(exc, NameError) and "'future'" in str(exc))


def quiet_abandoned_gathers() -> None:
    """Install :class:`_AbandonedGather` on the ``asyncio`` and tornado loggers (once)."""
    import logging

    for name in ("asyncio", "tornado.application"):
        log = logging.getLogger(name)
        if not any(isinstance(f, _AbandonedGather) for f in log.filters):
            log.addFilter(_AbandonedGather())
