"""The ``bigkern`` command: demo, synth, ingest, fit, predict.

Every command runs on a Dask cluster: ``--scheduler ADDRESS`` (or
``DASK_SCHEDULER_ADDRESS``) connects to a running one; by default an embedded
LocalCluster is started for the duration of the command.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence

__all__ = ["main"]


def _add_cluster_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--scheduler", metavar="ADDRESS", default=None,
                   help="Dask scheduler address (default: DASK_SCHEDULER_ADDRESS, else an "
                        "embedded LocalCluster)")
    p.add_argument("--workers", type=int, default=None,
                   help="workers of the embedded cluster (default: one per core)")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bigkern",
        description="Out-of-core Gaussian-kernel learning on satellite scenes (zarr + Dask).",
    )
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

    p = sub.add_parser("fit", help="fit a binned model on the labelled pixels of a store")
    p.add_argument("store", help="zarr scene store")
    p.add_argument("-o", "--out", required=True, help="model file (.zarr or .nc)")
    p.add_argument("--model", choices=("svc", "ridge"), default="svc")
    p.add_argument("--features", nargs="+", default=None,
                   help="feature variables (default: NDAI logSD CORR)")
    p.add_argument("--no-search", action="store_true",
                   help="skip the held-out grid search; use --param values on all labels")
    p.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                   help="estimator parameter, e.g. omega=0.8, C=3, lam=0.1")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--overwrite", action="store_true")
    _add_cluster_args(p)

    p = sub.add_parser("predict", help="predict a cloud mask for every pixel of a store")
    p.add_argument("store", help="zarr scene store")
    p.add_argument("model", help="model file written by 'bigkern fit'")
    p.add_argument("-o", "--out", required=True, help="zarr store for the predictions")
    p.add_argument("--png", default=None, help="also draw scene 0 to this PNG")
    p.add_argument("--overwrite", action="store_true")
    _add_cluster_args(p)
    return parser


def _parse_params(items: Sequence[str]) -> dict[str, object]:
    params: dict[str, object] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"bigkern: --param takes NAME=VALUE; got {item!r}")
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
    except BigkernError as err:
        print(f"bigkern: error: {err}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace) -> int:
    if args.command == "ingest":
        from bigkern.io.misr_text import ingest_misr_text

        t = time.perf_counter()
        path = ingest_misr_text(args.files, args.out, overwrite=args.overwrite)
        print(f"bigkern: ingested {len(args.files)} file(s) into {path} "
              f"({time.perf_counter() - t:.1f} s)")
        return 0

    from bigkern.cluster import connect

    with connect(args.scheduler, n_workers=args.workers):
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
            _predict(args)
    return 0


def _fit(args: argparse.Namespace) -> None:
    from bigkern.demo import DEFAULT_FEATURES, fit_scenes
    from bigkern.io.model_store import save_model
    from bigkern.io.scenes import open_scenes

    params = _parse_params(args.param)
    features = tuple(args.features or DEFAULT_FEATURES)
    scenes = open_scenes(args.store)
    outcome = fit_scenes(scenes, model=args.model, features=features, seed=args.seed,
                         grid={} if args.no_search else None, params=params)
    path = save_model(outcome.model, args.out, overwrite=args.overwrite)
    report = outcome.model.fit_report_
    print(f"bigkern: fitted {type(outcome.model).__name__} on {report['n_bins_occupied']} bins "
          f"of {report['n_valid']:,} pixels ({report['n_nonfinite']} non-finite rows left out); "
          f"model written to {path}")


def _predict(args: argparse.Namespace) -> None:
    from bigkern.features import with_features
    from bigkern.io.model_store import load_model
    from bigkern.io.scenes import open_scenes
    from bigkern.predict import predict_scenes, write_predictions

    model = load_model(args.model)
    features = [str(f) for f in model.feature_names_in_]
    scenes = with_features(open_scenes(args.store), features)
    t = time.perf_counter()
    path = write_predictions(predict_scenes(model, scenes), args.out, overwrite=args.overwrite)
    n = scenes.sizes["scene"] * scenes.sizes["y"] * scenes.sizes["x"]
    seconds = time.perf_counter() - t
    print(f"bigkern: predicted {n:,} pixels in {seconds:.1f} s ({n / seconds:,.0f} pixels/s); "
          f"masks written to {path}")
    if args.png:
        from bigkern.demo import plot_scene
        from bigkern.io._zarr import open_zarr

        png = plot_scene(scenes, open_zarr(path), args.png)
        print(f"bigkern: figure written to {png}")


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
