"""Per-pixel features: the stored MISR variables, the derived ones (log SD), their scale.

``DERIVED``, ``DEFAULT_FEATURES`` and ``VARIABLE_ATTRS`` are plain data (the command
line checks names against them without loading xarray); :func:`with_features` is
imported on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

from bigkern.features.variables import DEFAULT_FEATURES, DERIVED, VARIABLE_ATTRS

__all__ = ["DEFAULT_FEATURES", "DERIVED", "VARIABLE_ATTRS", "with_features"]


def __getattr__(name: str) -> Any:
    if name != "with_features":
        raise AttributeError(f"module 'bigkern.features' has no attribute {name!r}")
    value = importlib.import_module("bigkern.features.derived").with_features
    globals()[name] = value
    return value
