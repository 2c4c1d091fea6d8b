"""The grammar of the ``bigkern`` command line: its subcommands and their flags.

What the values mean, and their checks, are :mod:`bigkern.cli.main` and
:mod:`bigkern.cli.checks`; this module only declares them.
"""

from __future__ import annotations

import argparse

__all__ = ["build_parser"]


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
    p.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                   help="cancel the command with an error naming the cause when the cluster "
                        "makes no progress for this long (paused or lost workers); sets "
                        "bigkern.stall_timeout for the command (default: that setting)")
    p.add_argument("--connect-timeout", type=float, default=None, metavar="SECONDS",
                   help="give up reaching the scheduler (--scheduler, --scheduler-file, "
                        "DASK_SCHEDULER_ADDRESS) after this long, with an error naming it "
                        "(default: distributed.comm.timeouts.connect, 30 s)")
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


def _add_validity_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--fill-value", action="append", default=[], metavar="[FEATURE=]VALUE",
                   help="a fill value to mask, for every feature or one (repeatable), "
                        "e.g. --fill-value -9999 or --fill-value CORR=-999")
    p.add_argument("--valid-range", action="append", default=[], metavar="FEATURE=MIN:MAX",
                   help="mask values of FEATURE outside [MIN, MAX] (an empty bound is open), "
                        "e.g. --valid-range SD=0: ; replaces the CF attributes and the "
                        "bigkern.valid_ranges default for that feature")


def _add_dims_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dims", action="append", default=[], metavar="OURS=THEIRS",
                   help="the store's name of one of bigkern's dims scene, y, x (repeatable), "
                        "e.g. --dims scene=time for a (time, y, x) store; needed only where "
                        "the data do not say (CF axis, standard_name, units, 2-D lat/lon and "
                        "common names are read, and the dims found are printed); outputs keep "
                        "the store's names")


def _examples(*commands: str) -> dict[str, object]:
    """An epilog of example command lines, kept as written (not re-wrapped)."""
    return {"epilog": "examples:\n" + "\n".join(f"  {c}" for c in commands),
            "formatter_class": argparse.RawDescriptionHelpFormatter}


def build_parser() -> argparse.ArgumentParser:
    """The parser of the ``bigkern`` command line and its five subcommands."""
    parser = argparse.ArgumentParser(
        prog="bigkern",
        description="Out-of-core Gaussian-kernel learning on satellite scenes (zarr + Dask).",
        **_examples("bigkern demo", "bigkern fit scenes.zarr -o model.zarr",
                    "bigkern predict scenes.zarr model.zarr -o masks.zarr",
                    "bigkern COMMAND --help"),
    )
    from bigkern.models.registry import cli_names
    from bigkern.version import __version__

    parser.add_argument("--version", action="version", version=f"bigkern {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("demo", help="synthetic MISR-like scenes → bins → model → cloud masks",
                       **_examples("bigkern demo",
                                   "bigkern demo -o /tmp/demo --scenes 1 --shape 128 256",
                                   "bigkern demo --scheduler tcp://10.0.0.5:8786"))
    p.add_argument("-o", "--out", default="bigkern-demo",
                   help="output folder: scenes.zarr, model.zarr, predictions.zarr and "
                        "scene0.png go there, replacing those of an earlier demo (only what "
                        "bigkern wrote) (default %(default)s)")
    p.add_argument("--scenes", type=int, default=3,
                   help="number of synthetic scenes (default %(default)s)")
    p.add_argument("--shape", type=int, nargs=2, default=(384, 512), metavar=("NY", "NX"),
                   help="pixels of each scene, rows and columns (default 384 512)")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the scenes and of the train / held-out halves; the same "
                        "seed gives the same model on any cluster (default %(default)s)")
    p.add_argument("--model", choices=("svc", "ridge"), default="svc",
                   help="binned SVM (svc) or binned kernel ridge classifier (ridge) "
                        "(default %(default)s)")
    _add_cluster_args(p)

    p = sub.add_parser("synth", help="write seeded synthetic scenes to a zarr store",
                       **_examples("bigkern synth -o scenes.zarr --scenes 4 --shape 512 2048"))
    p.add_argument("-o", "--out", required=True, help="zarr store to write")
    p.add_argument("--scenes", type=int, default=3,
                   help="number of scenes (default %(default)s)")
    p.add_argument("--shape", type=int, nargs=2, default=(384, 512), metavar=("NY", "NX"),
                   help="pixels of each scene, rows and columns (default 384 512)")
    p.add_argument("--classes", type=int, choices=(2, 3), default=2,
                   help="label classes: 2 (cloud 1, clear -1; the default) or 3 (clear 1, "
                        "low cloud 2, high cloud 3)")
    p.add_argument("--seed", type=int, default=0,
                   help="seed: the same seed writes the same scenes (default %(default)s)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing store that bigkern wrote (never anything else)")
    _add_cluster_args(p)

    p = sub.add_parser("ingest", help="convert scene files to a zarr scene store",
                       **_examples("bigkern ingest misr-text image1.txt image2.txt -o "
                                   "misr.zarr",
                                   "bigkern ingest auto 'granules/*.nc' -o scenes.zarr",
                                   "bigkern ingest geotiff a.tif b.tif c.tif -o scenes.zarr"))
    p.add_argument("format", choices=("auto", "netcdf", "geotiff", "reference", "misr-text"),
                   help="input format: auto (by content and suffix: zarr, netCDF4/HDF5, "
                        "GeoTIFF, kerchunk references), netcdf, geotiff, reference, or "
                        "misr-text (the expert-labelled MISR text files)")
    p.add_argument("files", nargs="+",
                   help="input files or globs: misr-text, one scene each; netCDF/GeoTIFF "
                        "granules, concatenated along their scene dim or each a scene")
    p.add_argument("-o", "--out", required=True, help="zarr store to write")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing store that bigkern wrote (never anything else)")
    _add_validity_args(p)
    _add_dims_arg(p)
    _add_verbose_arg(p, cluster=False)

    p = sub.add_parser("fit", help="fit a binned or reduced-kernel model on a store",
                       **_examples("bigkern fit scenes.zarr -o model.zarr",
                                   "bigkern fit scenes.zarr -o model.zarr --param 'C=[1,3,10]'",
                                   "bigkern fit mine.nc -o model.zarr --dims scene=time",
                                   "bigkern fit scenes.zarr -o svr.zarr --model reduced-svr "
                                   "--features NDAI CORR --target SD",
                                   "bigkern fit scenes.zarr -o model.zarr --profile slurm "
                                   "--workers 16"))
    p.add_argument("store", nargs="+", metavar="SCENES",
                   help="a zarr scene store, or granule files (netCDF4/HDF5, GeoTIFF, kerchunk "
                        "references; a glob or several files: each a scene, or concatenated "
                        "along their scene dim)")
    p.add_argument("-o", "--out", required=True, help="model file (.zarr or .nc)")
    p.add_argument("--model", choices=cli_names(), default="svc",
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
                   help="estimator parameter (repeatable, once per name), e.g. omega=0.8, "
                        "C=3, lam=0.1, size=500, epsilon=0.05. svc, ridge: a value is fixed "
                        "and the grid search runs over the other parameters; a JSON list "
                        "(C=[1,3,10]) is searched instead of the default candidates. "
                        "nystrom-krr: a list of omega or lam gives candidates")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the random train / held-out halves (and of a reduced model's "
                        "centers unless --param random_state=… is given)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing model file that bigkern wrote (never anything "
                        "else)")
    _add_validity_args(p)
    _add_dims_arg(p)
    _add_cluster_args(p)

    p = sub.add_parser("predict", help="predict a cloud mask for every pixel of a store",
                       **_examples("bigkern predict scenes.zarr model.zarr -o masks.zarr",
                                   "bigkern predict scenes.zarr model.zarr -o masks.zarr "
                                   "--png scene0.png",
                                   "bigkern predict 'granules/*.nc' model.zarr -o masks.nc",
                                   "bigkern predict s3://bucket/scenes.zarr model.zarr -o "
                                   "s3://bucket/masks.zarr --scheduler-file sched.json"))
    p.add_argument("store", nargs="+", metavar="SCENES",
                   help="a zarr scene store, or granule files (as for 'bigkern fit')")
    p.add_argument("model", help="model file written by 'bigkern fit' (the last positional)")
    p.add_argument("-o", "--out", required=True,
                   help="the predictions: a zarr store (resumable, the default), a .nc file "
                        "(CF netCDF4) or a .tif file (cloud-optimized GeoTIFF, a band per "
                        "scene, with the input's CRS)")
    p.add_argument("--probability", choices=("all", "max", "none"), default="all",
                   help="for a model fitted with calibration: write a probability map per "
                        "class (all; two classes: cloud_probability), of the predicted class "
                        "only (max), or none (default: all)")
    p.add_argument("--png", default=None, metavar="PATH.png",
                   help="also draw scene 0 to this PNG (a path ending in .png); an existing "
                        "file is replaced only with --overwrite and only if bigkern drew it")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing prediction store (and --png figure) that bigkern "
                        "wrote")
    p.add_argument("--no-resume", action="store_true",
                   help="do not resume an unfinished prediction store of the same job "
                        "(resuming is the default)")
    _add_validity_args(p)
    _add_dims_arg(p)
    _add_cluster_args(p)
    return parser
