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

from bigkern.cli_checks import UsageError, validity_keywords

__all__ = ["check_inputs", "dims_keyword", "open_inputs"]


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


def open_inputs(args: argparse.Namespace) -> tuple[Any, Any]:
    """The scenes (with their derived features) and, for ``predict``, the model: no cluster yet.

    Raises
    ------
    UsageError
        ``--features`` or ``--target`` names a variable the store lacks (and no
        feature derived from one it has).
    """
    from bigkern.features import with_features
    from bigkern.io.scenes import open_scenes

    scenes = open_scenes(args.store, dims=dims_keyword(args), **validity_keywords(args))
    if args.command == "predict":
        from bigkern.models.persistence import load_model

        model = load_model(args.model)
        return with_features(scenes, [str(f) for f in model.feature_names_in_]), model
    _check_names(args, map(str, scenes.data_vars))
    return scenes, None


def check_inputs(args: argparse.Namespace) -> None:
    """Refuse a missing store or model, or features the store lacks, from metadata alone.

    Raises
    ------
    StoreError
        No store (or, for ``predict``, no model) at the path given.
    UsageError
        ``--features`` or ``--target`` names a variable the store lacks.
    """
    from bigkern.errors import StoreError
    from bigkern.io.urls import location
    from bigkern.io.zarr_store import stored_variables

    if not location(args.store).exists():
        raise StoreError(f"no scene store at {args.store}: the path does not exist")
    if args.command == "predict":
        if not location(args.model).exists():
            raise StoreError(f"no model at {args.model}")
        return
    stored = stored_variables(args.store)
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
            raise UsageError(f"{flag}: {args.store} has no variable {', '.join(absent)}; it "
                             f"has {', '.join(sorted(stored))}, and the derived {derived}")
