"""The inputs of ``bigkern fit`` and ``bigkern predict``, checked and opened before a cluster.

A missing store or model, a ``--features``/``--target`` the store lacks and a
malformed ``--dims`` are said at once, before any cluster is built or reached:
:func:`check_inputs` reads only the store's metadata, with zarr (no xarray, no
Dask arrays, no scikit-learn), so a mistyped command is refused in well under a
second; :func:`open_inputs` then opens the scenes and the model.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from typing import Any

from bigkern.cli.checks import UsageError, validity_keywords

__all__ = ["check_inputs", "dims_found_text", "dims_keyword", "open_inputs", "stores_text"]


def dims_keyword(args: argparse.Namespace) -> dict[str, str] | None:
    """``--dims OURS=THEIRS`` as ``open_scenes``' ``dims=`` (None without the flag).

    Raises
    ------
    UsageError
        An item that is not ``OURS=THEIRS``, a key that is not one of bigkern's dims
        (``scene``, ``y``, ``x``), or a dim named twice.
    """
    mapping: dict[str, str] = {}
    for item in getattr(args, "dims", []):
        ours, sep, theirs = item.partition("=")
        if not (sep and ours and theirs):
            raise UsageError(f"--dims takes OURS=THEIRS, e.g. --dims scene=time; got {item!r}")
        if ours not in ("scene", "y", "x"):
            raise UsageError(f"--dims {item}: {ours!r} is not one of bigkern's dims scene, y, x "
                             f"(the left side is bigkern's dim, the right the store's)")
        if ours in mapping or theirs in mapping.values():
            raise UsageError(f"--dims {item}: {ours if ours in mapping else theirs!r} is named "
                             f"twice")
        mapping[ours] = theirs
    return mapping or None


def stores_text(args: argparse.Namespace) -> str:
    """The command's scene inputs as one string, for messages."""
    stores = list(args.store)
    return stores[0] if len(stores) == 1 else f"{stores[0]} … ({len(stores)} inputs)"


def _scenes_argument(args: argparse.Namespace) -> Any:
    """``open_scenes``' ``path``: the one store or file, or the list of them."""
    stores = list(args.store)
    return stores[0] if len(stores) == 1 else stores


def open_inputs(args: argparse.Namespace) -> tuple[Any, Any]:
    """The scenes (with their derived features) and, for ``predict``, the model: no cluster yet.

    The dims found in the input (where ``--dims`` did not name them) are printed.

    Raises
    ------
    UsageError
        ``--features`` or ``--target`` names a variable the store lacks (and no
        feature derived from one it has).
    """
    from bigkern.features import with_features
    from bigkern.scenes.reading import open_scenes

    scenes = open_scenes(_scenes_argument(args), dims=dims_keyword(args),
                         **validity_keywords(args))
    found = dims_found_text(scenes)
    if found:
        print(f"bigkern: dims of {stores_text(args)}: {found}", flush=True)
    if args.command == "predict":
        from bigkern.models.persistence.model_files import load_model

        model = load_model(args.model)
        return with_features(scenes, [str(f) for f in model.feature_names_in_]), model
    _check_names(args, map(str, scenes.data_vars))
    return scenes, None


def dims_found_text(scenes: Any) -> str:
    """``scene=time (its datetime values), y=lat (…), x=lon (…)`` for dims the input declared."""
    import json

    from bigkern.scenes.dims import FOUND_ATTR

    raw = scenes.attrs.get(FOUND_ATTR)
    if not raw:
        return ""
    found = json.loads(raw)
    parts = []
    for ours in ("scene", "y", "x"):
        if ours in found:
            theirs, _, why = str(found[ours]).partition(": ")
            parts.append(f"{ours}={theirs} ({why})" if why else f"{ours}: {theirs}")
    return ", ".join(parts)


def check_inputs(args: argparse.Namespace) -> None:
    """Refuse a missing store or model, or features the store lacks, from metadata alone.

    Every scene input must exist and be a format bigkern reads (its first bytes
    are read); the names of ``--features``/``--target`` are checked against a
    zarr store's metadata (granules are checked once opened).

    Raises
    ------
    StoreError
        No store or file (or, for ``predict``, no model) at a path given; a
        file that is not a format bigkern reads; a glob that matches nothing.
    UsageError
        ``--features`` or ``--target`` names a variable the store lacks.
    """
    from bigkern.errors import StoreError
    from bigkern.scenes.granule_formats import expand_paths, granule_format
    from bigkern.store.urls import location
    from bigkern.store.zarr_store import stored_variables

    stores = expand_paths(list(args.store))
    formats = [granule_format(s) for s in stores]
    if formats[0] == "netcdf":  # dims that cannot be found: said before xarray is loaded
        from bigkern.scenes.dims import find_dims
        from bigkern.scenes.granule_formats import netcdf_variables

        described = netcdf_variables(stores[0])
        if described is not None:
            find_dims(described, dims_keyword(args), where=stores[0])
            if args.command == "fit":
                _check_names(args, [k for k, v in described.items() if not v.coordinate])
    if args.command == "predict":
        if not location(args.model).exists():
            raise StoreError(f"no model at {args.model}")
        return
    if formats == ["zarr"]:
        stored = stored_variables(stores[0])
        if stored is not None:  # else not a zarr group: open_scenes says what it is
            _check_names(args, stored)


def _check_names(args: argparse.Namespace, variables: Iterable[str]) -> None:
    """Refuse ``--features``/``--target`` names neither stored nor derived from one stored."""
    from bigkern.features import DEFAULT_FEATURES, DERIVED

    stored = set(variables)
    for flag, names in (("--features", args.features or DEFAULT_FEATURES),
                        ("--target", [args.target] if args.target else [])):
        absent = [n for n in names if n not in stored and DERIVED.get(n, ("",))[0] not in stored]
        if absent:
            derived = ", ".join(f"{k} (from {v[0]})" for k, v in DERIVED.items())
            raise UsageError(f"{flag}: {stores_text(args)} has no variable "
                             f"{', '.join(absent)}; it has {', '.join(sorted(stored))}, and "
                             f"the derived {derived}")
