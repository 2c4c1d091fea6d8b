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
        ``count_keys`` (the columns of ``row_counts``).
    histograms : list of (numpy.ndarray, numpy.ndarray)
        Per feature, the sorted occupied key groups and their row counts.
    row_counts : numpy.ndarray
        ``int64 (chunk, count)``: per chunk (C order of the chunk grid) the row counts.
    extremes : dict of str to numpy.ndarray
        ``low``, ``n_low``, ``high``, ``n_high`` over the usable rows (see
        :class:`bigkern.reduce.extremes.ValueExtremes`).
    labels : numpy.ndarray or str
        Sorted distinct labels of the usable rows, or ``"continuous"``.

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

    @property
    def features(self) -> tuple[str, ...]:
        """The features, in the order of :attr:`histograms`."""
        return tuple(self.meta["features"])

    def stored_bytes(self) -> int:
        """Bytes of the record's arrays before compression."""
        arrays = [a for pair in self.histograms for a in pair]
        arrays += [self.row_counts, *self.extremes.values()]
        if not isinstance(self.labels, str):
            arrays.append(self.labels)
        return int(sum(np.asarray(a).nbytes for a in arrays))


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
    """

    store: str
    features: tuple[str, ...]
    validity: dict[str, dict[str, Any]]
    names: tuple[str | None, str | None, str | None]
    label: str = "label"


@dataclass(frozen=True)
class KeyHistogramRecorder:
    """How a store's write computes its record (given to :func:`bigkern.write_scenes`).

    The computation lives with the reductions
    (:data:`bigkern.reduce.recorded_histograms.KEY_HISTOGRAM_RECORDER`); the writer,
    below them, only calls it.

    Attributes
    ----------
    graph : callable
        ``graph(X, y, mask)``: the lazy merged first-read result of row-chunked
        samples, to compute in the write's own compute.
    record : callable
        ``record(result, meta)``: the :class:`KeyHistogramRecord` of a computed
        result and its assumptions.
    """

    graph: Callable[[Any, Any, Any], Any]
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
    return sum(r.stored_bytes() for r in records)


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
    out = []
    for i in range(int(top.attrs["records"])):
        group = top[str(i)]
        meta = dict(group.attrs)
        labels = meta.pop("labels", None)
        d = len(meta["features"])
        histograms = [(group[f"groups_{j}"][...].astype(np.intp),
                       group[f"counts_{j}"][...].astype(np.int64)) for j in range(d)]
        extremes = {key: group[f"extremes_{key}"][...] for key in _EXTREMES}
        found = group["labels"][...] if labels is None else labels
        out.append(KeyHistogramRecord(meta, histograms, group["row_counts"][...], extremes,
                                      found))
    return out


def current_digests(store: PathOrURL | Location, names: Sequence[str],
                    storage_options: StorageOptions = None) -> dict[str, Any]:
    """The manifest attribute each of ``names`` carries in the store now (None: none)."""
    root = _group(store, "r", storage_options)
    return {n: (dict(root[n].attrs).get(MANIFEST_ATTR) if n in root else None) for n in names}
