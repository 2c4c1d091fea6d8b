"""The ``bigkern`` command: demo, synth, ingest, fit, predict.

Every command runs on a Dask cluster: ``--scheduler ADDRESS`` (or
``DASK_SCHEDULER_ADDRESS``) or ``--scheduler-file FILE`` connects to a running
one, ``--profile NAME`` builds one from ``bigkern.cluster.profiles`` (``local``,
``slurm``, ``pbs``, ``kubernetes``); by default an embedded LocalCluster is
started for the duration of the command (:func:`bigkern.cluster.connect`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
import traceback
from collections.abc import Iterator, Sequence
from typing import Any

__all__ = ["main"]


def _add_cluster_args(p: argparse.ArgumentParser) -> None:
    where = p.add_mutually_exclusive_group()
    where.add_argument("--scheduler", metavar="ADDRESS", default=None,
                       help="Dask scheduler address (default: DASK_SCHEDULER_ADDRESS, else an "
                            "embedded LocalCluster)")
    where.add_argument("--scheduler-file", metavar="FILE", default=None,
                       help="JSON file written by 'dask scheduler --scheduler-file FILE' "
                            "(waited for while the scheduler starts)")
    where.add_argument("--profile", metavar="NAME", default=None,
                       help="build the cluster of profile NAME of bigkern.cluster.profiles "
                            "(local, slurm, pbs, kubernetes)")
    p.add_argument("--workers", type=int, default=None,
                   help="workers of the embedded or profile's cluster (default: one per core, "
                        "or the profile's); with --scheduler or --scheduler-file, wait until "
                        "this many workers have joined")
    _add_verbose_arg(p)


def _add_verbose_arg(p: argparse.ArgumentParser, cluster: bool = True) -> None:
    if cluster:
        text = ("show what the Dask cluster logs about an error bigkern expects (a corrupt "
                "chunk, data over a quality limit …: the workers' 'Compute Failed' record, "
                "the warnings of the cluster closing) and the error's traceback; without it "
                "such an error is the one line 'bigkern: error: …'. Other errors always "
                "show their traceback and logs")
    else:
        text = ("show the traceback of an error bigkern expects (an unreadable file, a value "
                "it refuses …); without it such an error is one line")
    p.add_argument("-v", "--verbose", action="store_true", help=text)


class UsageError(Exception):
    """A command line that parses but makes no sense: exit code 2, like argparse's errors."""


def _add_validity_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--fill-value", action="append", default=[], metavar="[FEATURE=]VALUE",
                   help="a fill value to mask, for every feature or one (repeatable), "
                        "e.g. --fill-value -9999 or --fill-value CORR=-999")
    p.add_argument("--valid-range", action="append", default=[], metavar="FEATURE=MIN:MAX",
                   help="mask values of FEATURE outside [MIN, MAX] (an empty bound is open), "
                        "e.g. --valid-range SD=0: ; replaces the CF attributes and the "
                        "bigkern.valid_ranges default for that feature")


def _validity(args: argparse.Namespace) -> dict[str, Any]:
    """``fill_values=`` and ``valid_ranges=`` keywords from the CLI flags."""
    fills: dict[str, list[float]] = {}
    everywhere: list[float] = []
    for item in args.fill_value:
        name, sep, value = item.rpartition("=")
        try:
            number = float(value)
        except ValueError:
            raise UsageError(f"--fill-value takes [FEATURE=]VALUE; got {item!r}") from None
        (fills.setdefault(name, []) if sep else everywhere).append(number)
    ranges: dict[str, tuple[float | None, float | None]] = {}
    for item in args.valid_range:
        name, sep, bounds = item.partition("=")
        lo, colon, hi = bounds.partition(":")
        try:
            if not (sep and colon and name):
                raise ValueError
            ranges[name] = (float(lo) if lo else None, float(hi) if hi else None)
        except ValueError:
            raise UsageError(f"--valid-range takes FEATURE=MIN:MAX; got {item!r}") from None
    out: dict[str, Any] = {}
    if fills and everywhere:
        raise UsageError("give --fill-value either for every feature or per feature "
                         "(FEATURE=VALUE), not both")
    if fills or everywhere:
        out["fill_values"] = fills or everywhere
    if ranges:
        out["valid_ranges"] = ranges
    return out


def _fit_usage(args: argparse.Namespace) -> dict[str, object]:
    """The ``fit`` command's parameters, after the checks that need no file."""
    from bigkern.workflow import DEFAULT_FEATURES, estimator_class
    from bigkern.workflow_reduced import check_param_names

    params = _parse_params(args.param)
    try:
        cls = estimator_class(args.model, args.target)
        check_param_names(cls, params)
    except ValueError as err:
        raise UsageError(str(err)) from None
    features = list(args.features or DEFAULT_FEATURES)
    repeated = sorted({f for f in features if features.count(f) > 1})
    if repeated:
        raise UsageError(f"--features names {', '.join(repeated)} more than once")
    if args.target is not None and args.target in features:
        raise UsageError(f"--target {args.target} is also one of the features "
                         f"({' '.join(features)}): a model would only copy it; choose "
                         f"--features without it")
    return params


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bigkern",
        description="Out-of-core Gaussian-kernel learning on satellite scenes (zarr + Dask).",
    )
    from bigkern.version import __version__
    from bigkern.workflow import MODELS

    parser.add_argument("--version", action="version", version=f"bigkern {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("demo", help="synthetic MISR-like scenes → bins → model → cloud masks")
    p.add_argument("-o", "--out", default="bigkern-demo", help="output folder")
    p.add_argument("--scenes", type=int, default=3)
    p.add_argument("--shape", type=int, nargs=2, default=(384, 512), metavar=("NY", "NX"))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--model", choices=("svc", "ridge"), default="svc")
    _add_cluster_args(p)

    p = sub.add_parser("synth", help="write seeded synthetic scenes to a zarr store")
    p.add_argument("-o", "--out", required=True, help="zarr store to write")
    p.add_argument("--scenes", type=int, default=3)
    p.add_argument("--shape", type=int, nargs=2, default=(384, 512), metavar=("NY", "NX"))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--overwrite", action="store_true")
    _add_cluster_args(p)

    p = sub.add_parser("ingest", help="convert scene files to a zarr scene store")
    p.add_argument("format", choices=("misr-text",), help="input format")
    p.add_argument("files", nargs="+", help="input files, one scene each")
    p.add_argument("-o", "--out", required=True, help="zarr store to write")
    p.add_argument("--overwrite", action="store_true")
    _add_validity_args(p)
    _add_verbose_arg(p, cluster=False)

    p = sub.add_parser("fit", help="fit a binned or reduced-kernel model on a store")
    p.add_argument("store", help="zarr scene store")
    p.add_argument("-o", "--out", required=True, help="model file (.zarr or .nc)")
    p.add_argument("--model", choices=MODELS, default="svc",
                   help="svc, ridge: binned SVM / kernel ridge on the labels (grid search on "
                        "a held-out half); reduced-svc: reduced SVM on the labels; "
                        "reduced-svr: reduced SVR of --target; nystrom-krr: Nyström kernel "
                        "ridge, of --target if given, else of the labels (default svc)")
    p.add_argument("--features", nargs="+", default=None, metavar="VARIABLE",
                   help="feature variables of the store, any number, or derived ones "
                        "(logSD); default: NDAI logSD CORR")
    p.add_argument("--target", default=None, metavar="VARIABLE",
                   help="variable a regression predicts (reduced-svr needs one; nystrom-krr "
                        "then fits NystromKernelRidge); regressions fit on every pixel where "
                        "it is finite")
    p.add_argument("--no-search", action="store_true",
                   help="svc, ridge: skip the held-out grid search and use the --param values "
                        "on all labels; reduced models: fit on all their pixels (labelled, or "
                        "with a finite --target) instead of a random half scored on the other "
                        "half")
    p.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                   help="estimator parameter (repeatable), e.g. omega=0.8, C=3, lam=0.1, "
                        "size=500, epsilon=0.05; a JSON list gives Nyström candidates")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the random train / held-out halves (and of a reduced model's "
                        "centers unless --param random_state=… is given)")
    p.add_argument("--overwrite", action="store_true")
    _add_validity_args(p)
    _add_cluster_args(p)

    p = sub.add_parser("predict", help="predict a cloud mask for every pixel of a store")
    p.add_argument("store", help="zarr scene store")
    p.add_argument("model", help="model file written by 'bigkern fit'")
    p.add_argument("-o", "--out", required=True, help="zarr store for the predictions")
    p.add_argument("--png", default=None, help="also draw scene 0 to this PNG")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing prediction store that bigkern wrote")
    p.add_argument("--no-resume", action="store_true",
                   help="do not resume an unfinished prediction store of the same job "
                        "(resuming is the default)")
    _add_validity_args(p)
    _add_cluster_args(p)
    return parser


def _parse_params(items: Sequence[str]) -> dict[str, object]:
    params: dict[str, object] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep:
            raise UsageError(f"--param takes NAME=VALUE; got {item!r}")
        try:
            params[name] = json.loads(value)
        except json.JSONDecodeError:
            params[name] = value
    return params


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``bigkern`` console script."""
    args = _parser().parse_args(argv)
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
        return _one_line(f"bigkern: error: {err}", args.verbose)


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
    # usage errors first, before any file is looked at
    if args.command == "fit":
        _fit_usage(args)
    if hasattr(args, "fill_value"):
        _validity(args)
    if args.command == "ingest":
        from bigkern.io.misr_text import ingest_misr_text

        t = time.perf_counter()
        path = ingest_misr_text(args.files, args.out, overwrite=args.overwrite,
                                **_validity(args))
        print(f"bigkern: ingested {len(args.files)} file(s) into {path} "
              f"({time.perf_counter() - t:.1f} s)")
        return 0

    if args.command in ("fit", "predict"):
        from bigkern.io.outputs import check_not_input, prepare_output

        inputs = [args.store] + ([args.model] if args.command == "predict" else [])
        check_not_input(args.out, inputs)  # fail fast, before any reading
        if getattr(args, "png", None):
            check_not_input(args.png, [*inputs, args.out])
        if not (args.command == "predict" and _resumable(args.out)):
            prepare_output(args.out, overwrite=args.overwrite, inputs=inputs)

    with _cluster(args):
        if args.command == "demo":
            from bigkern.demo import run_demo

            t = time.perf_counter()
            run_demo(args.out, n_scenes=args.scenes, shape=tuple(args.shape), seed=args.seed,
                     model=args.model)
            print(f"bigkern demo finished in {time.perf_counter() - t:.1f} s")
        elif args.command == "synth":
            from bigkern.datasets import make_scenes
            from bigkern.io.scenes import write_scenes

            path = write_scenes(make_scenes(args.scenes, tuple(args.shape), seed=args.seed),
                                args.out, overwrite=args.overwrite)
            print(f"bigkern: wrote {args.scenes} scenes to {path}")
        elif args.command == "fit":
            _fit(args)
        elif args.command == "predict":
            return _predict(args)
    return 0


@contextlib.contextmanager
def _cluster(args: argparse.Namespace) -> Iterator[Any]:
    """The command's Dask client; unless ``--verbose``, expected errors stay off the terminal.

    The filter of :mod:`bigkern.cluster_logs` covers this process (an embedded
    cluster's scheduler and nannies run here) from before the connection to
    after the cluster closed; the workers of a cluster built here, which lives
    and dies with the command (an embedded one's share the terminal); and,
    once the command's work is over, the chatter of the cluster closing. The
    error itself is printed as one line by :func:`main`.
    """
    from bigkern.cluster import connect, owns_cluster
    from bigkern.cluster_logs import QuietLogs

    def connected() -> Any:
        return connect(args.scheduler, scheduler_file=args.scheduler_file,
                       profile=args.profile, n_workers=args.workers)

    if args.verbose:
        with connected() as client:
            yield client
        return
    with QuietLogs() as quiet, connected() as client, \
            quiet.cluster(client, owned=owns_cluster(client)):
        yield client


def _resumable(out: str) -> bool:
    """Whether ``out`` is a prediction store (``predict`` decides whether it resumes it)."""
    from bigkern.io.zarr_store import KIND_ATTR, read_root_attrs

    return (read_root_attrs(out) or {}).get(KIND_ATTR) == "predictions"


def _fit(args: argparse.Namespace) -> None:
    from bigkern.io.scenes import open_scenes
    from bigkern.models.persistence import save_model
    from bigkern.workflow import DEFAULT_FEATURES, fit_scenes
    from bigkern.workflow_reduced import REDUCED_MODELS

    params = _fit_usage(args)
    features = tuple(args.features or DEFAULT_FEATURES)
    scenes = open_scenes(args.store, **_validity(args))
    if args.model in REDUCED_MODELS:
        _fit_reduced(args, scenes, features, params)
        return
    outcome = fit_scenes(scenes, model=args.model, features=features, seed=args.seed,
                         grid={} if args.no_search else None, params=params)
    path = save_model(outcome.model, args.out, overwrite=args.overwrite, inputs=[args.store])
    report = outcome.model.fit_report_
    by_feature = ", ".join(f"{k}: {v:,}" for k, v in
                           report.get("n_nonfinite_by_feature", {}).items() if v)
    print(f"bigkern: fitted {type(outcome.model).__name__} on {report['n_bins_occupied']} bins "
          f"of {report['n_valid']:,} pixels ({report['n_nonfinite']:,} rows with a missing, "
          f"fill or out-of-range feature left out{' — ' + by_feature if by_feature else ''}; "
          f"{report.get('n_outliers', 0):,} extreme values kept); model written to {path}")


def _fit_reduced(args: argparse.Namespace, scenes: Any, features: tuple[str, ...],
                 params: dict[str, object]) -> None:
    from bigkern.models.persistence import save_model
    from bigkern.workflow_reduced import describe_fit, fit_reduced_scenes

    outcome = fit_reduced_scenes(scenes, model=args.model, features=features,
                                 target=args.target, params=params, split=not args.no_search,
                                 seed=args.seed)
    path = save_model(outcome.model, args.out, overwrite=args.overwrite, inputs=[args.store])
    print(f"bigkern: {describe_fit(outcome)}; model written to {path}")


def _predict(args: argparse.Namespace) -> int:
    from sklearn.base import is_classifier

    from bigkern.features import with_features
    from bigkern.io.integrity import open_checked
    from bigkern.io.scenes import open_scenes
    from bigkern.models.persistence import load_model
    from bigkern.predict import predict_scenes, write_predictions

    model = load_model(args.model)
    features = [str(f) for f in model.feature_names_in_]
    scenes = with_features(open_scenes(args.store, **_validity(args)), features)
    t = time.perf_counter()
    report = write_predictions(predict_scenes(model, scenes), args.out,
                               overwrite=args.overwrite, resume=not args.no_resume,
                               inputs=[args.store, args.model])
    seconds = time.perf_counter() - t
    counts = report.summary
    n, missing = counts.get("pixels", 0), counts.get("no_prediction", 0)
    if report.resumed:
        print(f"bigkern: {report.path} was started by the same prediction: "
              f"{report.n_reused} of {report.n_regions} regions were already written and "
              f"verified; {report.n_computed} computed now ({report.n_damaged} of them because "
              f"a chunk failed its checksum)")
    computed = n * report.n_computed // max(1, report.n_regions)
    print(f"bigkern: predicted {n:,} pixels in {seconds:.1f} s "
          f"({computed / seconds:,.0f} pixels/s computed); "
          f"{missing:,} without a prediction ({missing / max(1, n):.1%}); "
          f"{'masks' if is_classifier(model) else 'predicted values'} written to "
          f"{report.path}")
    if args.png:
        from bigkern.workflow import plot_scene

        png = plot_scene(scenes, open_checked(report.path), args.png)
        print(f"bigkern: figure written to {png}")
    if n == 0 or missing == n:
        print(f"bigkern: error: no pixel of {args.store} could be predicted (every pixel lacks "
              f"a finite value of one of the features {features}); the store was written but "
              f"holds no prediction", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
