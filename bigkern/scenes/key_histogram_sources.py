"""Which samples a store's recorded key histograms stand for.

A scene store written by :func:`~bigkern.scenes.writing.write_scenes` records
what the first read of exact percentile binning would find among its labelled
pixels (:mod:`bigkern.scenes.key_histogram_recording`). :func:`mark_opened`
marks a Dataset that :func:`~bigkern.scenes.open_scenes` opened from such a
store with the store and the dask names of the arrays it opened, and
:func:`~bigkern.scenes.stack_samples` hands samples stacked from those very
arrays a :class:`~bigkern.store.key_histograms.KeyHistogramSource`
(:func:`samples_source`), which
:func:`~bigkern.reduce.binning.percentile.percentile_bins` takes as ``recorded``.
A variable changed after opening (another array: another name) gets none.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import dask.array as da
import xarray as xr

from bigkern.features import with_features
from bigkern.scenes.validity import validity_report
from bigkern.store.key_histograms import (
    KEY_HISTOGRAMS_SOURCE_ATTR,
    KeyHistogramSource,
    has_key_histograms,
)
from bigkern.store.urls import Location

__all__ = ["mark_opened", "recorded_rules", "samples_source"]

_RULES = ("fill_values", "valid_min", "valid_max")


def recorded_rules(ds: xr.Dataset, features: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Per feature, the validity rules its attributes record, as JSON-able values.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> from bigkern.scenes import apply_validity
    >>> ds = xr.Dataset({"NDAI": (("scene", "y", "x"), np.zeros((1, 2, 2), "f4"))})
    >>> rules = recorded_rules(apply_validity(ds, valid_ranges={"NDAI": (-1, 1)}), ["NDAI"])
    >>> rules["NDAI"]["valid_min"], rules["NDAI"]["valid_max"]
    (-1.0, 1.0)
    """
    report = validity_report(ds)
    out = {}
    for f in features:
        entry = report.get(f, {})
        out[f] = json.loads(json.dumps({k: entry.get(k) for k in _RULES}, default=float))
    return out


def mark_opened(ds: xr.Dataset, loc: Location) -> xr.Dataset:
    """``ds`` opened from the store at ``loc``, marked when the store has a record.

    A mark read from the store itself (an output copied with its attributes) is dropped.
    """
    ds.attrs.pop(KEY_HISTOGRAMS_SOURCE_ATTR, None)
    if not has_key_histograms(loc):
        return ds
    names = {str(k): v.data.name for k, v in ds.data_vars.items() if isinstance(v.data, da.Array)}
    ds.attrs[KEY_HISTOGRAMS_SOURCE_ATTR] = json.dumps({"store": loc.url, "names": names})
    return ds


def samples_source(ds: xr.Dataset, features: Sequence[str], label: str,
                   samples: tuple[da.Array, da.Array | None, da.Array | None],
                   rebuild: Callable[[xr.Dataset], tuple[da.Array, da.Array, da.Array]],
                   ) -> KeyHistogramSource | None:
    """The record that ``samples`` (``X``, ``y``, ``mask``) of ``ds`` may stand for, or None.

    ``ds`` is the dataset the samples were stacked from, after the validity rules.
    ``rebuild(ref)`` stacks the labelled samples of ``features`` from a dataset
    ``ref`` of the variables of ``ds`` that are still the arrays :func:`mark_opened`
    saw opened (derived features are derived again, as the fit derives them): the
    samples stand for the store only when they are those, name for name.
    """
    mark = ds.attrs.get(KEY_HISTOGRAMS_SOURCE_ATTR)
    X, y, mask = samples
    if not mark or mask is None or y is None:
        return None
    found = json.loads(mark)
    opened = found["names"]
    kept = [k for k, v in ds.data_vars.items() if isinstance(v.data, da.Array)
            and opened.get(str(k)) == v.data.name]
    if label not in kept:
        return None
    base = ds[kept]
    base.attrs = {k: v for k, v in ds.attrs.items() if k != KEY_HISTOGRAMS_SOURCE_ATTR}
    try:
        ref = rebuild(with_features(base, features))
    except Exception:  # a feature changed after opening and not derivable: no record
        return None
    if tuple(a.name for a in ref) != (X.name, y.name, mask.name):
        return None  # changed after opening: the data decide
    return KeyHistogramSource(found["store"], tuple(features), recorded_rules(ds, features),
                              (X.name, y.name, mask.name), label)
