"""Fill values and valid ranges: mask what is not data, lazily, and record what was masked.

A sentinel such as ``-9999`` that is not declared as a fill value is a number
like any other: it goes into the quantiles, the scaling and the bins, and the
pixel gets a cloud/clear mask. :func:`apply_validity` replaces by NaN every
value of a feature that

* equals a **fill value**: one declared by the variable (CF ``_FillValue`` or
  ``missing_value``, in its attributes or, once xarray has decoded them, in its
  encoding), one given with ``fill_values=``, or else one of the
  ``bigkern.fill_values`` setting; or
* lies outside its **valid range**: given with ``valid_ranges=``, else the
  variable's CF ``valid_range`` or ``valid_min``/``valid_max`` attributes, else
  the ``bigkern.valid_ranges`` setting for that variable name (defaults for the
  MISR features NDAI, SD, CORR, logSD and the radiances DF CF BF AF AN).

Masked values are NaN like any other missing value, so every bigkern reduction
leaves their rows out and counts them per feature (see
:func:`bigkern.reduce.passes.per_feature_counts`). ``label`` (and ``cloud_truth``) and
coordinates are never touched.

Each masked variable records what was applied in its attributes
(``bigkern_fill_values``, ``bigkern_valid_min``, ``bigkern_valid_max`` and
their sources); :func:`validity_report` collects them. For in-memory data the
number of values masked as fill and as out of range is counted on the way
(``bigkern_n_fill``, ``bigkern_n_out_of_range``); for dask data it is not, as
that would need an extra read: their rows are counted by the fit instead.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import dask
import numpy as np
import xarray as xr

from bigkern.scenes.validity_sources import (
    _OWN_ATTRS,
    ATTR_CHECKED,
    ATTR_FILL_SOURCE,
    ATTR_FILL_VALUES,
    ATTR_N_FILL,
    ATTR_N_OUT_OF_RANGE,
    ATTR_RANGE_SOURCE,
    ATTR_VALID_MAX,
    ATTR_VALID_MIN,
    NOT_FEATURES,
    FillValues,
    ValidityRule,
    ValidRanges,
    _as_list,
    validity_rules,
)

__all__ = [
    "NOT_FEATURES",
    "ValidityRule",
    "apply_validity",
    "ensure_validity",
    "validity_report",
    "validity_rules",
]


def apply_validity(
    ds: xr.Dataset,
    features: Sequence[str] | None = None,
    *,
    fill_values: FillValues = None,
    valid_ranges: ValidRanges = None,
) -> xr.Dataset:
    """Replace fill values and out-of-range values of the features by NaN (lazily).

    Parameters
    ----------
    ds : xarray.Dataset
        Scene dataset (or any dataset of feature variables); dask-backed data
        stay lazy: nothing is computed.
    features : sequence of str, optional
        Variables to check; by default every numeric data variable except
        ``label`` and ``cloud_truth``. Coordinates are never touched.
    fill_values : number, sequence of numbers or mapping, optional
        Extra fill values: one number or a sequence of them for every feature,
        or per feature, e.g. ``{"NDAI": -9999}``. Per feature they replace the
        ``bigkern.fill_values`` setting; fill values the variable declares (CF
        ``_FillValue``, ``missing_value``) are always honoured.
    valid_ranges : mapping or False, optional
        Per feature ``(min, max)``, ``None`` for an open bound, e.g.
        ``{"CORR": (-1, 1), "SD": (0, None)}``; a feature mapped to ``None``
        gets no range check. A feature not given takes its CF ``valid_range``
        (or ``valid_min``/``valid_max``) attribute, else the
        ``bigkern.valid_ranges`` setting. ``False`` turns range checks off.

    Returns
    -------
    xarray.Dataset
        ``ds`` with the features masked; each checked variable's attributes
        record what was applied (``bigkern_fill_values``, ``bigkern_fill_source``,
        ``bigkern_valid_min``, ``bigkern_valid_max``, ``bigkern_valid_range_source``)
        and, for in-memory data, how many values were masked
        (``bigkern_n_fill``, ``bigkern_n_out_of_range``). Integer features that
        need masking become floating point.

    Raises
    ------
    StoreError
        See :func:`validity_rules`.

    Examples
    --------
    >>> ds = apply_validity(ds, fill_values={"NDAI": -9999})  # doctest: +SKIP
    >>> validity_report(ds)["NDAI"]  # doctest: +SKIP
    {'fill_values': [-9999.0], 'fill_source': 'argument', 'valid_min': -10.0, ...}
    """
    rules = validity_rules(ds, features, fill_values=fill_values, valid_ranges=valid_ranges)
    updates: dict[Hashable, xr.DataArray] = {}
    for name, rule in rules.items():
        var = ds[name]
        attrs = {k: v for k, v in var.attrs.items() if k not in _OWN_ATTRS}
        attrs.update(rule.attrs())
        attrs[ATTR_CHECKED] = 1
        out = var
        if rule.active:
            fill = rule.is_fill(var)
            outside = rule.is_out_of_range(var)
            out = var.where(~(fill | outside))
            if not dask.is_dask_collection(var.data):
                attrs[ATTR_N_FILL] = int(np.count_nonzero(fill.values))
                attrs[ATTR_N_OUT_OF_RANGE] = int(np.count_nonzero((outside & ~fill).values))
        out = out.copy(deep=False)
        out.attrs = attrs
        out.encoding = dict(var.encoding)
        updates[name] = out
    return ds.assign(updates) if updates else ds


def ensure_validity(
    ds: xr.Dataset,
    features: Sequence[str] | None = None,
    *,
    fill_values: FillValues = None,
    valid_ranges: ValidRanges = None,
) -> xr.Dataset:
    """Apply the validity rules to the ``features`` of ``ds`` that have not been through them.

    Scenes enter bigkern by more than one door: :func:`~bigkern.scenes.open_scenes`
    applies the rules at the store, but a Dataset built in memory (synthetic
    scenes, a user's own reader) has not met them. :func:`~bigkern.scenes.stack_samples`,
    :func:`~bigkern.predict_scenes` and the fit jobs call this, so every door
    masks the same values: a feature :func:`apply_validity` already checked (it
    carries the ``bigkern_validity_checked`` attribute) is left as it is, the
    others are checked now. Given ``fill_values`` or ``valid_ranges``, every
    feature is checked with them (masking is idempotent: a masked value stays NaN).

    Parameters
    ----------
    ds : xarray.Dataset
        Scene dataset, lazy or in memory.
    features : sequence of str, optional
        The feature variables about to be used (labels are skipped); by default
        every numeric data variable but ``label`` and ``cloud_truth``.
    fill_values, valid_ranges : optional
        As for :func:`apply_validity`.

    Returns
    -------
    xarray.Dataset
        ``ds`` with every feature checked; the same object when nothing was to do.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> ndai = np.array([[[0.5, -9999.0], [1.0, 2.0]]], dtype=np.float32)
    >>> ds = xr.Dataset({"NDAI": (("scene", "y", "x"), ndai)})
    >>> ensure_validity(ds, ["NDAI"])["NDAI"].values.ravel().tolist()
    [0.5, nan, 1.0, 2.0]
    """
    if features is None:
        features = [str(k) for k, v in ds.data_vars.items() if v.dtype.kind in "iuf"]
    features = [str(f) for f in features if str(f) not in NOT_FEATURES]
    if fill_values is not None or valid_ranges is not None:
        todo = features
    else:
        todo = [f for f in features if f in ds and ATTR_CHECKED not in ds[f].attrs]
    if not todo:
        return ds
    return apply_validity(ds, todo, fill_values=fill_values, valid_ranges=valid_ranges)


def validity_report(ds: xr.Dataset) -> dict[str, dict[str, Any]]:
    """What :func:`apply_validity` applied to each variable of ``ds``, from its attributes.

    Returns
    -------
    dict
        Per variable that carries any record: ``fill_values`` (list),
        ``fill_source``, ``valid_min``, ``valid_max`` (None when open),
        ``valid_range_source``, and ``n_fill``, ``n_out_of_range`` when they
        were counted (in-memory data).
    """
    keys = {ATTR_FILL_VALUES: "fill_values", ATTR_FILL_SOURCE: "fill_source",
            ATTR_VALID_MIN: "valid_min", ATTR_VALID_MAX: "valid_max",
            ATTR_RANGE_SOURCE: "valid_range_source", ATTR_N_FILL: "n_fill",
            ATTR_N_OUT_OF_RANGE: "n_out_of_range"}
    out: dict[str, dict[str, Any]] = {}
    for name, var in ds.data_vars.items():
        if not any(k in var.attrs for k in keys):
            continue
        entry: dict[str, Any] = {"fill_values": [], "valid_min": None, "valid_max": None}
        for attr, key in keys.items():
            if attr in var.attrs:
                value = var.attrs[attr]
                entry[key] = _as_list(value) if key == "fill_values" else value
        out[str(name)] = entry
    return out
