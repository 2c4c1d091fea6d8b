"""Per-pixel features: the stored MISR variables, the derived ones (log SD), their scale.

``DERIVED``, ``DEFAULT_FEATURES`` and ``VARIABLE_ATTRS`` are plain data (the command
line checks names against them without loading xarray); :func:`with_features` is
imported on first use.
"""

from __future__ import annotations

from bigkern.features.variables import DEFAULT_FEATURES, DERIVED, VARIABLE_ATTRS
from bigkern.lazy import lazy_names

__all__ = ["DEFAULT_FEATURES", "DERIVED", "VARIABLE_ATTRS", "with_features"]


__getattr__, __dir__ = lazy_names(__name__, {"with_features": "derived"})
