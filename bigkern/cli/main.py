"""The ``bigkern`` command's entry: parse, check, dispatch, and end with one line and a code.

:func:`console_main` is the console script; :func:`main` runs one command in this
process. Each command is a module of :mod:`bigkern.cli` — ``demo_command``,
``synth_command``, ``ingest``, ``fit_command``, ``predict_command`` — run on the
cluster of :mod:`bigkern.cli.command_cluster` (all but ``ingest``), its outputs
claimed (and those of ``fit`` and ``predict`` checked) by
:mod:`bigkern.cli.command_outputs`.

No flag is ever ignored or taken out of range: every value is checked before
any file is read (:mod:`bigkern.cli.checks`, exit code 2). An expected failure
is one line ``bigkern: error: …`` (exit code 1), never a traceback; Ctrl-C and
SIGTERM end the command with ``bigkern: interrupted`` / ``bigkern: terminated``
after its clean-up ran: SIGTERM with exit code 143, Ctrl-C by SIGINT (which a shell
reports as 130) (:mod:`bigkern.cli.signals`).
"""

from __future__ import annotations

import argparse
import errno
import sys
import traceback
from collections.abc import Sequence

from bigkern.cli.checks import UsageError, check_counts, validity_keywords
from bigkern.cli.command_cluster import command_cluster, stall_timeout
from bigkern.cli.command_outputs import check_png_flag, claimed_outputs, prepare_outputs
from bigkern.cli.demo_command import run_demo
from bigkern.cli.fit_command import check_fit_flags, run_fit
from bigkern.cli.ingest import run_ingest
from bigkern.cli.inputs import check_inputs, dims_keyword, open_inputs
from bigkern.cli.parser import build_parser
from bigkern.cli.predict_command import run_predict
from bigkern.cli.signals import exit_code, exit_process, quiet_abandoned_gathers, sigterm_raises
from bigkern.cli.synth_command import run_synth

__all__ = ["console_main", "main"]


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
            args = build_parser().parse_args(argv)
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
        validity_keywords(args)  # --fill-value and --valid-range parsed, to refuse them now
    dims_keyword(args)
    check_png_flag(args)
    with claimed_outputs(args):
        return _work(args, params)


def _work(args: argparse.Namespace, params: dict[str, object]) -> int:
    """The command's work, its outputs claimed."""
    if args.command == "ingest":
        return run_ingest(args)  # on no cluster

    inputs = None
    if args.command in ("fit", "predict"):
        check_inputs(args)
        prepare_outputs(args)
        # the inputs are opened (metadata only) before a cluster starts: a missing store,
        # model or feature is said at once
        inputs = open_inputs(args)
    try:
        with stall_timeout(args), command_cluster(args):
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


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
