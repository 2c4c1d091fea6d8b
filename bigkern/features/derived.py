"""Per-pixel features derived from the stored ones, added lazily to a scene Dataset."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import xarray as xr

from bigkern.errors import StoreError
from bigkern.features.variables import DERIVED

__all__ = ["DERIVED_FROM_ATTR", "with_features"]

#: The attribute that marks a feature derived here, naming the variable it is derived from.
DERIVED_FROM_ATTR = "bigkern_derived_from"


def with_features(ds: xr.Dataset, features: Sequence[str]) -> xr.Dataset:
    """Return ``ds`` with every derived feature in ``features`` added (lazily).

    ``logSD = log(SD)``; SD ≤ 0 gives NaN there, which is counted downstream
    like any non-finite feature.

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern import with_features
    >>> from bigkern.datasets import make_scenes
    >>> ds = with_features(make_scenes(1, (16, 16), radiances=False), ["NDAI", "logSD", "CORR"])
    >>> ds["logSD"].attrs["long_name"], ds["logSD"].dtype
    ('natural log of SD', dtype('float32'))
    >>> bool(np.allclose(ds["logSD"], np.log(ds["SD"]), equal_nan=True))
    True
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
        out = out.assign({name: logged.astype(src.dtype).assign_attrs(
            long_name=description, **{DERIVED_FROM_ATTR: source})})
    return out
