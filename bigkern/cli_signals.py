"""SIGTERM handled like Ctrl-C, so that an interrupted command cleans up after itself.

A batch scheduler (SLURM, PBS, Kubernetes) stops a job with SIGTERM, whose
default action ends the process at once: no ``finally`` block runs, so hidden
partial outputs stay behind and a cluster the command built is not closed.
:func:`sigterm_raises` installs a handler that raises :class:`Terminated` — a
:class:`KeyboardInterrupt`, so every ``except KeyboardInterrupt`` and every
context manager treats it as it treats Ctrl-C — and :func:`exit_code` gives the
shell's codes for both (130 for SIGINT, 143 for SIGTERM).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = ["Terminated", "exit_code", "sigterm_raises"]


class Terminated(KeyboardInterrupt):
    """The process received SIGTERM (raised in the main thread by :func:`sigterm_raises`)."""


def exit_code(err: KeyboardInterrupt) -> int:
    """The exit status of a command stopped by ``err``: 128 + the signal's number."""
    return 128 + (signal.SIGTERM if isinstance(err, Terminated) else signal.SIGINT)


@contextmanager
def sigterm_raises() -> Iterator[None]:
    """Within the block, SIGTERM raises :class:`Terminated` in the main thread.

    Only the first SIGTERM raises: later ones (a scheduler repeating itself)
    are ignored, so the clean-up that the first one started is not cut short.
    The previous handler is restored on exit. Outside the main thread (where
    Python cannot install handlers) this does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    raised = False

    def handler(signum: int, frame: FrameType | None) -> None:
        nonlocal raised
        if raised:
            return
        raised = True
        raise Terminated(f"signal {signal.Signals(signum).name}")

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
