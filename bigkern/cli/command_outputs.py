"""The outputs of a ``bigkern`` command (``-o``, ``--png``): checked, claimed and prepared
before any work.

:func:`check_png_flag` refuses a ``--png`` that is not a ``.png`` path, or that
matplotlib could not draw, with the other usage errors. :func:`claimed_outputs` holds
the one-writer claim of the outputs for the whole command; :func:`prepare_outputs`
then refuses, for ``fit`` and ``predict``, an output that is one of the inputs or
that bigkern did not write, before anything is read.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator

from bigkern.cli.checks import UsageError

__all__ = ["check_png_flag", "claimed_outputs", "prepare_outputs"]


def check_png_flag(args: argparse.Namespace) -> None:
    """Refuse a ``--png`` path that does not end in ``.png``, or one without matplotlib."""
    if getattr(args, "png", None):
        from bigkern.extras import available
        from bigkern.store.figure_files import check_png_suffix

        try:
            check_png_suffix(args.png)
        except ValueError as err:
            raise UsageError(f"--png {err}") from None
        if not available("matplotlib"):
            raise UsageError("--png draws with matplotlib, which is not installed: pip "
                             "install 'bigkern[plot]'")


@contextlib.contextmanager
def claimed_outputs(args: argparse.Namespace) -> Iterator[None]:
    """Hold the one-writer claim of the command's outputs (``-o``, ``--png``) from the start.

    A second command writing the same output is refused at once, before it reads
    anything, not after a whole fit; the writers called at the end take the same
    claim again (claims are reentrant in a process, :mod:`bigkern.store.claims`).
    """
    if args.command not in ("fit", "predict", "synth", "ingest"):
        yield
        return
    from bigkern.store.claims import claim_output, shared_claim
    from bigkern.store.outputs import check_not_input

    inputs = [*getattr(args, "store", []), *getattr(args, "files", [])]
    if args.command == "predict":
        inputs.append(args.model)
    with contextlib.ExitStack() as held:
        for output in (args.out, getattr(args, "png", None)):
            if output:
                check_not_input(output, inputs)  # no claim beside (or inside) an input
                held.enter_context(shared_claim(held.enter_context(claim_output(output))))
        yield


def prepare_outputs(args: argparse.Namespace) -> None:
    """``fit`` and ``predict``: refuse an output that is an input, or that bigkern did not
    write (or that exists, without ``--overwrite``), before any reading.

    A prediction store ``predict`` may resume is left as it is: ``predict`` decides.
    """
    from bigkern.store.outputs import check_not_input, prepare_output

    inputs = [*args.store] + ([args.model] if args.command == "predict" else [])
    check_not_input(args.out, inputs)  # fail fast, before any reading
    if getattr(args, "png", None):
        from bigkern.store.figure_files import check_figure_output

        check_not_input(args.png, [*inputs, args.out])
        check_figure_output(args.png, overwrite=args.overwrite)
    if not (args.command == "predict" and _resumable(args.out)):
        prepare_output(args.out, overwrite=args.overwrite, inputs=inputs)


def _resumable(out: str) -> bool:
    """Whether ``out`` is a prediction store (``predict`` decides whether it resumes it)."""
    from bigkern.store.zarr_store import KIND_ATTR, read_root_attrs

    return (read_root_attrs(out) or {}).get(KIND_ATTR) == "predictions"
