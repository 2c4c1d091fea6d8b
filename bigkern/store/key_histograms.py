"""Key histograms recorded at write time: stored beside the chunk manifests, read back whole.

A scene store that :func:`bigkern.write_scenes` writes may carry, in the zarr
group ``bigkern_key_histograms`` (a sub-group per feature set), what the first
read of exact percentile binning would find in it
(:mod:`bigkern.reduce.recorded_histograms` computes it on the workers, from the
blocks being written): per feature the sparse histogram of
the top key bits of the usable labelled rows, the row counts per chunk, the
extremes and the distinct labels of those rows. Binning then skips that read.

This module only stores and reads the record; it never computes one. What the
record assumes is stored with it, as attributes of the group: the features and
their order, the dtype they are stacked in, the key scheme, the usability rule,
the validity rules each feature met, and every chunk's manifest digest of every
variable the record was computed from (:func:`current_digests` reads the
store's present ones, so a chunk replaced after the write is seen).

The arrays of a sub-group (``groups_<j>`` and ``counts_<j>`` per feature ``j``,
``row_counts (chunk, count)``, the ``extremes_*`` arrays and ``labels``) are not
scene variables: xarray opens the root group only and never sees them.

A record may also hold, in its sub-group ``first_part``, the same arrays over
the first part only of a random split of those rows (the training half of a
searched fit), with the split they belong to in its ``split`` attribute: a fit
that bins that half then skips its first read too. Stores written before there
were such parts have none; the binning that wants one falls back and says so.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bigkern.store.manifest import MANIFEST_ATTR
from bigkern.store.urls import Location, PathOrURL, StorageOptions, location

__all__ = [
    "KEY_HISTOGRAMS_GROUP",
    "KEY_HISTOGRAMS_SOURCE_ATTR",
    "SPLIT_PART_GROUP",
    "KeyHistogramRecord",
    "KeyHistogramRecorder",
    "KeyHistogramSource",
    "current_digests",
    "has_key_histograms",
    "read_key_histograms",
    "write_key_histograms",
]

#: The zarr group of a scene store that holds its recorded key histograms.
KEY_HISTOGRAMS_GROUP = "bigkern_key_histograms"
#: The attribute :func:`bigkern.open_scenes` sets on a Dataset opened from a store with a
#: record: the store and the names of the arrays it opened (never written to an output).
KEY_HISTOGRAMS_SOURCE_ATTR = "bigkern_key_histograms_source"
#: The sub-group of a record that holds the histograms of the first part of a split.
SPLIT_PART_GROUP = "first_part"
_FORMAT = 1
_EXTREMES = ("low", "n_low", "high", "n_high")


@dataclass(frozen=True)
class KeyHistogramRecord:
    """What the first read of percentile binning would find in a store, and its assumptions.

    Attributes
    ----------
    meta : dict
        JSON-able assumptions: ``features``, ``dtype``, ``group_bits``,
        ``key_scheme``, ``usable``, ``label``, ``unlabelled``, ``validity`` (per
        feature), ``digests`` (per variable, its manifest attribute at write time),
        ``count_keys`` (the columns of ``row_counts``). A :attr:`first_part`'s
        meta holds ``split`` (the split it is the first part of) and ``count_keys``.
    histograms : list of (numpy.ndarray, numpy.ndarray)
        Per feature, the sorted occupied key groups and their row counts.
    row_counts : numpy.ndarray
        ``int64 (chunk, count)``: per chunk (C order of the chunk grid) the row counts.
    extremes : dict of str to numpy.ndarray
        ``low``, ``n_low``, ``high``, ``n_high`` over the usable rows (see
        :class:`bigkern.reduce.extremes.ValueExtremes`).
    labels : numpy.ndarray or str
        Sorted distinct labels of the usable rows, or ``"continuous"``.
    first_part : KeyHistogramRecord or None
        The same over the usable rows of the first part of the split its
        ``meta["split"]`` describes (None: not recorded).

    Examples
    --------
    >>> import numpy as np
    >>> r = KeyHistogramRecord({"features": ["a"]}, [(np.array([3]), np.array([2]))],
    ...                        np.zeros((1, 1), np.int64), {}, np.array([-1, 1]))
    >>> r.features
    ('a',)
    """

    meta: dict[str, Any]
    histograms: list[tuple[np.ndarray, np.ndarray]]
    row_counts: np.ndarray
    extremes: dict[str, np.ndarray]
    labels: np.ndarray | str
    first_part: KeyHistogramRecord | None = None

    @property
    def features(self) -> tuple[str, ...]:
        """The features, in the order of :attr:`histograms`."""
        return tuple(self.meta["features"])

    def stored_bytes(self) -> int:
        """Bytes of the record's arrays before compression, its first part's included."""
        arrays = [a for pair in self.histograms for a in pair]
        arrays += [self.row_counts, *self.extremes.values()]
        if not isinstance(self.labels, str):
            arrays.append(self.labels)
        part = 0 if self.first_part is None else self.first_part.stored_bytes()
        return int(sum(np.asarray(a).nbytes for a in arrays)) + part


@dataclass(frozen=True)
class KeyHistogramSource:
    """Where recorded key histograms are, and the samples they may stand for.

    Made by :func:`bigkern.stack_samples` (as ``Samples.recorded``) when its scene
    dataset was opened from a store with a record and its variables are as opened.

    Attributes
    ----------
    store : str
        The store's path or URL.
    features : tuple of str
        The samples' features, in order.
    validity : dict
        Per feature, the validity rules it met (``fill_values``, ``valid_min``,
        ``valid_max``).
    names : tuple
        The dask names of the samples' ``X``, ``y`` and ``mask``: binning uses the
        record only for these very arrays.
    label : str
        The label variable.
    split : dict or None
        None: ``mask`` is the labelled pixels. Else ``mask`` is the first part of
        a random split of them, and this is the split (its rule, ``seed`` and
        ``fraction``): the record's :attr:`KeyHistogramRecord.first_part` serves
        when it was recorded for this very split.
    """

    store: str
    features: tuple[str, ...]
    validity: dict[str, dict[str, Any]]
    names: tuple[str | None, str | None, str | None]
    label: str = "label"
    split: dict[str, Any] | None = None


@dataclass(frozen=True)
class KeyHistogramRecorder:
    """How a store's write computes its record (given to :func:`bigkern.write_scenes`).

    The computation lives with the reductions
    (:data:`bigkern.reduce.recorded_histograms.KEY_HISTOGRAM_RECORDER`); the writer,
    below them, only calls it.

    Attributes
    ----------
    graph : callable
        ``graph(X, y, mask, pixel)``: the lazy merged first-read result of row-chunked
        samples (``pixel``: their ids, ``Samples.pixel``, with which it also records the
        first part of the default split of a searched fit), to compute in the write's
        own compute.
    record : callable
        ``record(result, meta)``: the :class:`KeyHistogramRecord` of a computed
        result and its assumptions.
    """

    graph: Callable[..., Any]
    record: Callable[[Any, dict[str, Any]], KeyHistogramRecord]


def _group(store: PathOrURL | Location, mode: str, storage_options: StorageOptions = None
           ) -> Any:
    import zarr

    from bigkern.store.zarr_store import _quiet_consolidated

    loc = location(store, storage_options)
    with _quiet_consolidated():
        return zarr.open_group(loc.zarr_store(read_only=mode == "r"), mode=mode,
                               use_consolidated=False if mode != "r" else None)


def write_key_histograms(store: PathOrURL | Location,
                         records: Sequence[KeyHistogramRecord]) -> int:
    """Write ``records`` (one per feature set) into a store being written.

    Record ``i`` goes to the group ``bigkern_key_histograms/<i>``. Call it before
    the store is marked complete (:func:`~bigkern.store.zarr_store.finish_store`
    consolidates the metadata).

    Returns
    -------
    int
        Bytes of the records' arrays before compression.
    """
    root = _group(store, "r+")
    top = root.create_group(KEY_HISTOGRAMS_GROUP, overwrite=True)
    top.attrs.update({"format": _FORMAT, "records": len(records)})
    for i, record in enumerate(records):
        group = top.create_group(str(i))
        _write_record(group, record)
        if record.first_part is not None:
            _write_record(group.create_group(SPLIT_PART_GROUP), record.first_part)
    return sum(r.stored_bytes() for r in records)


def _write_record(group: Any, record: KeyHistogramRecord) -> None:
    """The arrays and attributes of one record (or first part) into ``group``."""
    arrays: dict[str, np.ndarray] = {"row_counts": np.asarray(record.row_counts, np.int64)}
    for j, (groups, counts) in enumerate(record.histograms):
        arrays[f"groups_{j}"] = np.asarray(groups, dtype=np.uint32)
        arrays[f"counts_{j}"] = np.asarray(counts, dtype=np.int64)
    for key in _EXTREMES:
        arrays[f"extremes_{key}"] = np.asarray(record.extremes[key])
    if not isinstance(record.labels, str):
        arrays["labels"] = np.asarray(record.labels)
    for name, values in arrays.items():
        group.create_array(name, data=values)
    group.attrs.update({**record.meta, "labels": record.labels
                        if isinstance(record.labels, str) else None})


def _read_record(group: Any, d: int) -> KeyHistogramRecord:
    """The record (or first part) of ``d`` features that ``group`` holds."""
    meta = dict(group.attrs)
    labels = meta.pop("labels", None)
    histograms = [(group[f"groups_{j}"][...].astype(np.intp),
                   group[f"counts_{j}"][...].astype(np.int64)) for j in range(d)]
    extremes = {key: group[f"extremes_{key}"][...] for key in _EXTREMES}
    found = group["labels"][...] if labels is None else labels
    part = _read_record(group[SPLIT_PART_GROUP], d) if SPLIT_PART_GROUP in group else None
    return KeyHistogramRecord(meta, histograms, group["row_counts"][...], extremes, found,
                              part)


def has_key_histograms(store: PathOrURL | Location,
                       storage_options: StorageOptions = None) -> bool:
    """Whether the store carries a record (a metadata read, nothing more)."""
    try:
        return KEY_HISTOGRAMS_GROUP in _group(store, "r", storage_options)
    except Exception:  # not a zarr store, or unreadable: no record
        return False


def read_key_histograms(store: PathOrURL | Location, storage_options: StorageOptions = None
                        ) -> list[KeyHistogramRecord]:
    """The store's records, one per feature set (none: no record of a known format)."""
    root = _group(store, "r", storage_options)
    if KEY_HISTOGRAMS_GROUP not in root:
        return []
    top = root[KEY_HISTOGRAMS_GROUP]
    if top.attrs.get("format") != _FORMAT:
        return []
    return [_read_record(top[str(i)], len(top[str(i)].attrs["features"]))
            for i in range(int(top.attrs["records"]))]


def current_digests(store: PathOrURL | Location, names: Sequence[str],
                    storage_options: StorageOptions = None) -> dict[str, Any]:
    """The manifest attribute each of ``names`` carries in the store now (None: none)."""
    root = _group(store, "r", storage_options)
    return {n: (dict(root[n].attrs).get(MANIFEST_ATTR) if n in root else None) for n in names}
