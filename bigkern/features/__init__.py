"""Per-pixel features derived from the stored ones (MISR NDAI, SD, CORR)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import xarray as xr

from bigkern.errors import StoreError
from bigkern.features.variables import VARIABLE_ATTRS

__all__ = ["DERIVED", "VARIABLE_ATTRS", "with_features"]

#: Derived feature name → (source variable, description). ``logSD`` is the
#: log of the standard deviation of nadir radiances used by Shi & Yu.
DERIVED = {"logSD": ("SD", "natural log of SD")}


def with_features(ds: xr.Dataset, features: Sequence[str]) -> xr.Dataset:
    """Return ``ds`` with every derived feature in ``features`` added (lazily).

    ``logSD = log(SD)``; SD ≤ 0 gives NaN there, which is counted downstream
    like any non-finite feature.
    """
    out = ds
    for name in features:
        if name in out.data_vars or name not in DERIVED:
            continue
        source, description = DERIVED[name]
        if source not in out.data_vars:
            raise StoreError(f"feature {name!r} needs variable {source!r}, absent from the store")
        src = out[source]
        logged = np.log(src.where(src > 0))
        out = out.assign({name: logged.astype(src.dtype).assign_attrs(long_name=description)})
    return out
