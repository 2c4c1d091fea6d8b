"""What the stored scene variables are: their ``long_name`` and ``units`` attributes.

The MISR variables (features, camera radiances, labels) described once, for every
package that writes them: :mod:`bigkern.datasets.misr_text` when it ingests the expert
label files, :mod:`bigkern.datasets.synthetic_scenes` when it makes synthetic scenes.
"""

from __future__ import annotations

import math

__all__ = ["DEFAULT_FEATURES", "DERIVED", "VARIABLE_ATTRS", "stored_value"]

_RADIANCE_UNITS = "W m-2 sr-1 um-1"

VARIABLE_ATTRS: dict[str, dict[str, str]] = {
    "NDAI": {
        "long_name": "normalized difference angular index (Shi et al.)",
        "units": "1",
    },
    "SD": {
        "long_name": "standard deviation of nadir (AN) red radiance within the pixel",
        "units": _RADIANCE_UNITS,
    },
    "CORR": {
        "long_name": "mean correlation of multi-angle views (AF, AN, BF)",
        "units": "1",
    },
    "DF": {"long_name": "red radiance, camera Df (70.5 deg forward)", "units": _RADIANCE_UNITS},
    "CF": {"long_name": "red radiance, camera Cf (60.0 deg forward)", "units": _RADIANCE_UNITS},
    "BF": {"long_name": "red radiance, camera Bf (45.6 deg forward)", "units": _RADIANCE_UNITS},
    "AF": {"long_name": "red radiance, camera Af (26.1 deg forward)", "units": _RADIANCE_UNITS},
    "AN": {"long_name": "red radiance, camera An (nadir)", "units": _RADIANCE_UNITS},
    "label": {
        "long_name": "expert label: 1 cloud, -1 clear, 0 unlabelled",
        "units": "1",
    },
    "cloud_truth": {
        "long_name": "true cloud mask: 1 cloud, -1 clear",
        "units": "1",
    },
}
"""``long_name``/``units`` attributes of the scene variables (read-only by convention)."""

#: Derived feature name → (source variable, description). ``logSD`` is the
#: log of the standard deviation of nadir radiances used by Shi & Yu.
DERIVED: dict[str, tuple[str, str]] = {"logSD": ("SD", "natural log of SD")}

def stored_value(feature: str, value: float) -> float | None:
    """The stored variable's value behind a derived ``feature``'s ``value`` (None if unknown).

    ``logSD`` is stored as float32, so the value is SD's to about six digits.

    Examples
    --------
    >>> round(stored_value("logSD", math.log(9999.0)), 6)
    9999.0
    """
    if feature == "logSD":
        capped = min(value, 709.0)  # exp overflows float64 past ~709.8
        return math.exp(capped)
    return None


#: The features a fit uses unless told otherwise: Shi & Yu's three (NDAI, log SD, CORR).
DEFAULT_FEATURES: tuple[str, ...] = ("NDAI", "logSD", "CORR")
