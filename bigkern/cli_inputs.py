"""The inputs of ``bigkern fit`` and ``bigkern predict``, opened before a cluster starts.

A missing store or model, a ``--features``/``--target`` the store lacks and a
malformed ``--dims`` are said at once, from the store's metadata, before any
cluster is built or reached.
"""

from __future__ import annotations

import argparse
from typing import Any

from bigkern.cli_checks import UsageError, validity_keywords

__all__ = ["dims_keyword", "open_inputs"]


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
    from bigkern.features import DERIVED, with_features
    from bigkern.io.scenes import open_scenes

    scenes = open_scenes(args.store, dims=dims_keyword(args), **validity_keywords(args))
    if args.command == "predict":
        from bigkern.models.persistence import load_model

        model = load_model(args.model)
        return with_features(scenes, [str(f) for f in model.feature_names_in_]), model
    from bigkern.jobs.fit import DEFAULT_FEATURES

    stored = set(map(str, scenes.data_vars))
    for flag, names in (("--features", args.features or DEFAULT_FEATURES),
                        ("--target", [args.target] if args.target else [])):
        absent = [n for n in names if n not in stored and DERIVED.get(n, ("",))[0] not in stored]
        if absent:
            derived = ", ".join(f"{k} (from {v[0]})" for k, v in DERIVED.items())
            raise UsageError(f"{flag}: {args.store} has no variable {', '.join(absent)}; it "
                             f"has {', '.join(sorted(stored))}, and the derived {derived}")
    return scenes, None
