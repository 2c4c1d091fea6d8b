"""The attrs by which bins say which plan made them, and bins compared without them.

Tests of a binning plan compare its bins with another plan's: the two must be identical
but for the attrs that name the plan and what it did.
"""

from __future__ import annotations

from collections.abc import Sequence

import xarray as xr

#: Attrs every plan sets about itself.
PLAN_ATTRS = ("plan", "passes", "n_kept", "one_read", "sample_rows", "sample_chunks_held")

#: With the recorded plan's (a store's key histograms): what it found in the record.
RECORDED_PLAN_ATTRS = (*PLAN_ATTRS, "recorded", "kept_fraction_bound")


def without_plan(ds: xr.Dataset, attrs: Sequence[str] = PLAN_ATTRS) -> xr.Dataset:
    """``ds`` without the ``attrs`` that describe the plan that ran."""
    ds = ds.copy()
    for key in attrs:
        ds.attrs.pop(key, None)
    return ds


def assert_same_bins(a: xr.Dataset, b: xr.Dataset,
                     attrs: Sequence[str] = RECORDED_PLAN_ATTRS) -> None:
    """``a`` and ``b`` identical but for the plan ``attrs``."""
    xr.testing.assert_identical(without_plan(a, attrs), without_plan(b, attrs))
