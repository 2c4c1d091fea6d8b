"""The ``bigkern`` command: demo, synth, ingest, fit, predict.

Every command runs on a Dask cluster: ``--scheduler ADDRESS`` (or
``DASK_SCHEDULER_ADDRESS``) or ``--scheduler-file FILE`` connects to a running
one, ``--profile NAME`` builds one from ``bigkern.cluster.profiles`` (``local``,
``slurm``, ``pbs``, ``kubernetes``); by default an embedded LocalCluster is
started for the duration of the command (:func:`bigkern.cluster.client.connect`).

No flag is ever ignored or taken out of range: every value is checked before
any file is read (:mod:`bigkern.cli.checks`, exit code 2). An expected failure
is one line ``bigkern: error: …`` (exit code 1), never a traceback; Ctrl-C and
SIGTERM end the command with ``bigkern: interrupted`` / ``bigkern: terminated``
after its clean-up ran: SIGTERM with exit code 143, Ctrl-C by SIGINT (which a shell
reports as 130) (:mod:`bigkern.cli.signals`).
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import sys
import traceback
from collections.abc import Iterator, Sequence
from typing import Any

from bigkern.cli.checks import UsageError, check_counts, validity_keywords
from bigkern.cli.demo_command import run_demo
from bigkern.cli.fit_command import check_fit_flags, run_fit
from bigkern.cli.inputs import check_inputs, dims_keyword, open_inputs
from bigkern.cli.parser import build_parser as _parser
from bigkern.cli.predict_command import run_predict
from bigkern.cli.signals import (
    children_ignore_sigint,
    exit_code,
    exit_process,
    quiet_abandoned_gathers,
    sigterm_raises,
)
from bigkern.cli.synth_command import run_synth

__all__ = ["UsageError", "main"]


def _validity(args: argparse.Namespace) -> dict[str, Any]:
    """``fill_values=`` and ``valid_ranges=`` keywords from the CLI flags."""
    return validity_keywords(args)


def console_main() -> None:
    """The ``bigkern`` console script: run :func:`main` and end the process with its code.

    After Ctrl-C the process ends by SIGINT, as a shell expects
    (:func:`bigkern.cli.signals.exit_process`).
    """
    exit_process(main())


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``bigkern`` command in this process.

    Returns 0 on success, 1 after an expected error (one line on stderr), 2
    after a usage error, 130 after Ctrl-C and 143 after SIGTERM; the
    interrupted command's ``finally`` blocks have run (hidden partial outputs
    removed, an unfinished prediction store left to resume).
    """
    args: argparse.Namespace | None = None
    try:
        with sigterm_raises():
            args = _parser().parse_args(argv)
            if not args.verbose:
                from bigkern.store.zarr_store import quiet_zarr_notes

                quiet_abandoned_gathers()
                quiet_zarr_notes()  # --verbose keeps zarr's notes, as it keeps tracebacks
            return _main(args)
    except KeyboardInterrupt as err:  # Ctrl-C, or SIGTERM (bigkern.cli.signals.Terminated)
        if args is not None and args.verbose:
            traceback.print_exc()
        code = exit_code(err)
        print(f"bigkern: {'terminated' if code == 143 else 'interrupted'}", file=sys.stderr,
              flush=True)
        return code


def _main(args: argparse.Namespace) -> int:
    """Run the command; an expected error becomes one line and exit code 1 (usage: 2)."""
    from bigkern.errors import BigkernError

    try:
        return _run(args)
    except UsageError as err:
        print(f"bigkern {args.command}: error: {err}", file=sys.stderr)
        return 2
    except BigkernError as err:
        return _one_line(f"bigkern: error: {err}", args.verbose)
    except ValueError as err:
        if args.command != "fit":
            raise
        # a parameter value an estimator refuses (omega=-1, size larger than the rows…)
        return _one_line(f"bigkern fit: error: {err}", args.verbose)
    except (OSError, TimeoutError) as err:
        if args.command != "ingest" and _is_connection_error(err):
            where = getattr(args, "scheduler", None) or "the Dask scheduler"
            return _one_line(f"bigkern: error: cannot connect to {where}: {err}", args.verbose)
        # a file that cannot be read or written: say which, in one line
        return _one_line(f"bigkern: error: {_where(str(err), args, err)}", args.verbose)
    except Exception as err:
        if not _is_storage_service_error(err):
            raise
        # the object store refused (no credentials, a bucket gone …): its word, and where
        hint = (" (give credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, an AWS "
                "profile, or storage options)" if type(err).__name__ == "NoCredentialsError"
                else "")
        return _one_line(f"bigkern: error: {_where(str(err), args)}{hint}", args.verbose)


def _is_storage_service_error(err: BaseException) -> bool:
    """Whether ``err`` is an object store's client library refusing (botocore, google-auth)."""
    module = type(err).__module__ or ""
    return module.split(".")[0] in {"botocore", "aiobotocore", "google", "gcsfs", "s3fs"}


# errors of a write that found no room: the output they were writing is what the user knows
_NO_ROOM = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS}


def _where(text: str, args: argparse.Namespace, err: BaseException | None = None) -> str:
    """``text``, followed by the output a full disk stopped, or by the command's URLs
    when it names none of its paths."""
    from bigkern.store.urls import is_url

    out = getattr(args, "out", None)
    if out and isinstance(err, OSError) and err.errno in _NO_ROOM and str(out) not in text:
        return f"{text} (while writing {out})"
    paths = [getattr(args, name, None) for name in ("model", "out", "png")]
    paths = [str(p) for p in [*paths, *getattr(args, "store", []), *getattr(args, "files", [])]
             if p]
    urls = [p for p in paths if is_url(p)]
    if not urls or any(p in text or p.split("://", 1)[-1] in text for p in paths):
        return text
    return f"{text} (the command's remote paths: {', '.join(urls)})"


def _one_line(message: str, verbose: bool) -> int:
    """Print an expected error's one line (after its traceback if ``verbose``); return 1."""
    if verbose:
        traceback.print_exc()
    print(message, file=sys.stderr)
    return 1


def _is_connection_error(err: BaseException) -> bool:
    """Whether ``err`` came from reaching the Dask scheduler (not from a file)."""
    return isinstance(err, (TimeoutError, ConnectionError)) or "connect" in str(err).lower()


def _run(args: argparse.Namespace) -> int:
    # usage errors first, before any file is looked at; then the inputs, from their metadata;
    # none of this loads xarray, Dask arrays or scikit-learn, so a mistyped command is refused
    # at once (tests/cli/test_input_checks.py)
    check_counts(args)
    params = check_fit_flags(args) if args.command == "fit" else {}
    if hasattr(args, "fill_value"):
        _validity(args)
    dims_keyword(args)
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
    with _claimed_outputs(args):
        return _work(args, params)


@contextlib.contextmanager
def _claimed_outputs(args: argparse.Namespace) -> Iterator[None]:
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


def _work(args: argparse.Namespace, params: dict[str, object]) -> int:
    """The command's work, its outputs claimed."""
    if args.command == "ingest":
        from bigkern.cli.ingest import run_ingest

        return run_ingest(args)

    if args.command in ("fit", "predict"):
        from bigkern.store.outputs import check_not_input, prepare_output

        check_inputs(args)
        inputs = [*args.store] + ([args.model] if args.command == "predict" else [])
        check_not_input(args.out, inputs)  # fail fast, before any reading
        if getattr(args, "png", None):
            from bigkern.store.figure_files import check_figure_output

            check_not_input(args.png, [*inputs, args.out])
            check_figure_output(args.png, overwrite=args.overwrite)
        if not (args.command == "predict" and _resumable(args.out)):
            prepare_output(args.out, overwrite=args.overwrite, inputs=inputs)

    # the inputs are opened (metadata only) before a cluster starts: a missing store, model
    # or feature is said at once
    inputs = open_inputs(args) if args.command in ("fit", "predict") else None
    try:
        with _stall_timeout(args), _cluster(args):
            if args.command == "demo":
                run_demo(args)
            elif args.command == "synth":
                run_synth(args)
            elif args.command == "fit":
                run_fit(args, inputs, params)
            elif args.command == "predict":
                return run_predict(args, inputs)
    finally:
        # once the cluster is closed no task can write: a hidden partial output that a task
        # still running at the failure recreated is removed for good
        from bigkern.store.staging import remove_abandoned

        remove_abandoned()
    return 0


def _stall_timeout(args: argparse.Namespace) -> contextlib.AbstractContextManager[Any]:
    """``--timeout``: ``bigkern.stall_timeout`` for the duration of the command."""
    if args.timeout is None:
        return contextlib.nullcontext()
    import dask.config

    return dask.config.set({"bigkern.stall_timeout": args.timeout})


@contextlib.contextmanager
def _cluster(args: argparse.Namespace) -> Iterator[Any]:
    """The command's Dask client; unless ``--verbose``, expected errors stay off the terminal.

    The filter of :mod:`bigkern.cluster.logs` covers this process (an embedded
    cluster's scheduler and nannies run here) from before the connection to
    after the cluster closed; the workers of a cluster built here, which lives
    and dies with the command (an embedded one's share the terminal); and,
    once the command's work is over, the chatter of the cluster closing. The
    error itself is printed as one line by :func:`main`.
    """
    from bigkern.cluster.client import connect, owns_cluster
    from bigkern.cluster.logs import QuietLogs

    def connected() -> Any:
        # the worker processes of an embedded cluster leave Ctrl-C to the command
        with children_ignore_sigint() if _embedded(args) else contextlib.nullcontext():
            return connect(args.scheduler, scheduler_file=args.scheduler_file,
                           profile=args.profile, n_workers=args.workers,
                           timeout=args.connect_timeout, verbose=args.verbose)

    if args.verbose:
        with connected() as client:
            yield client
        return
    with QuietLogs() as quiet, connected() as client, \
            quiet.cluster(client, owned=owns_cluster(client)):
        yield client


def _embedded(args: argparse.Namespace) -> bool:
    """Whether the command builds a cluster of local worker processes (a ``local`` profile)."""
    import os

    import dask.config

    if args.scheduler or args.scheduler_file or os.environ.get("DASK_SCHEDULER_ADDRESS"):
        return False
    name = args.profile or dask.config.get("bigkern.cluster.default_profile", "local")
    profile = dask.config.get(f"bigkern.cluster.profiles.{name}", None) or {}
    return profile.get("kind", name) == "local"


def _resumable(out: str) -> bool:
    """Whether ``out`` is a prediction store (``predict`` decides whether it resumes it)."""
    from bigkern.store.zarr_store import KIND_ATTR, read_root_attrs

    return (read_root_attrs(out) or {}).get(KIND_ATTR) == "predictions"


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
