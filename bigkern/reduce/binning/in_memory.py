"""Percentile binning of a small in-memory array, with no task graph.

:func:`~bigkern.reduce.percentile_bins` of a dask array pays a fixed cost per
call — building and scheduling two or three task graphs, and per feature
tables of 2**20 key groups (dense histograms, their cumulative sums, the
fused plan's cell look-up tables) — that dwarfs the arithmetic on small
inputs (≈ 40 ms against ≈ 2 ms on 50,000 rows × 3 features). A numpy input
of at most ``bigkern.in_memory_rows`` rows is binned here instead, in one
read of the data:

1. :func:`~bigkern.reduce.passes.valid_rows` (the chunk function of every
   pass) gives the usable rows and the row counts, per feature too; the
   distinct labels come from the first pass's own helper;
2. each feature's usable values are sorted once. The sorted values *are* the
   order statistics that the radix selection finds (so the edges, the
   robust scale, ``min`` and ``max`` follow from the same
   :class:`~bigkern.reduce.binning.quantiles.QuantilePlan`), and their
   order-preserving keys, run-length encoded, are the first pass's sparse
   key-group histograms (so the same fixed-point grid, outlier counts and
   kept-fraction bound) — without a 2**20 table;
3. the binning pass's chunk function bins the whole array as one chunk.

The bins are bit-identical to those of the dask plans
(:func:`xarray.testing.assert_identical`), except for the attrs that describe
the plan: ``plan="in-memory"``, ``passes=1`` and ``n_kept=0`` (no row waited
for the edges, as in the three-pass plan).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import dask
import numpy as np

from bigkern import config
from bigkern.cluster.compute import compute
from bigkern.reduce.binning.radix_select import (
    GROUP_BITS,
    _distinct_labels,
    float_keys,
    key_dtype,
    require_usable_rows,
)
from bigkern.reduce.passes import as_float_block, unwrap_samples, valid_rows

__all__ = [
    "as_numpy_samples",
    "first_pass",
    "kept_fraction_bound",
    "order_statistics",
    "use_in_memory",
]


def use_in_memory(X: Any, y: Any, mask: Any, in_memory: bool | None,
                  fused: bool | None) -> bool:
    """Whether :func:`~bigkern.reduce.percentile_bins` takes the in-memory path.

    ``in_memory=None`` (automatic): when no plan is forced (``fused`` is
    None), none of ``X``, ``y``, ``mask`` is a dask collection, and ``X``
    has at most ``bigkern.in_memory_rows`` rows. ``True`` forces it (dask
    inputs are then computed into memory first), ``False`` forbids it.
    """
    if in_memory is not None:
        if in_memory and fused is not None:
            raise ValueError("fused= chooses between the dask plans; it cannot be combined "
                             "with in_memory=True")
        return bool(in_memory)
    if fused is not None or any(dask.is_dask_collection(a) for a in (X, y, mask)):
        return False
    shape = np.shape(X)
    rows = shape[0] if len(shape) else 0
    return rows <= int(config.get("in_memory_rows"))


def as_numpy_samples(
    X: Any, y: Any, mask: Any, features: Sequence[str] | None
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None, list[str]]:
    """``X`` as a C-contiguous float32/float64 array, ``y`` and ``mask`` as arrays, and names.

    The in-memory twin of :func:`~bigkern.reduce.binning.quantiles.prepare_samples`,
    with its checks and messages. Dask inputs are computed.
    """
    X, y, mask, features = unwrap_samples(X, y, mask, features)
    arrays = [X, y, mask]
    lazy = [i for i, a in enumerate(arrays) if dask.is_dask_collection(a)]
    if lazy:
        done = compute(*(arrays[i] for i in lazy), label="percentile bins: reading into memory")
        for i, a in zip(lazy, done, strict=True):
            arrays[i] = a
    X = np.asarray(arrays[0])
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (sample, feature); got shape {X.shape}")
    X = as_float_block(X)
    out: list[np.ndarray | None] = []
    for name, arr in (("y", arrays[1]), ("mask", arrays[2])):
        if arr is None:
            out.append(None)
            continue
        arr = np.asarray(arr)
        if arr.ndim != 1 or arr.shape[0] != X.shape[0]:
            raise ValueError(
                f"{name} must be 1-D with one entry per row of X ({X.shape[0]}); "
                f"got shape {arr.shape}"
            )
        out.append(arr)
    d = X.shape[1]
    names = list(features) if features is not None else [f"f{i}" for i in range(d)]
    if len(names) != d:
        raise ValueError(f"{len(names)} feature names given for {d} columns of X")
    return X, out[0], out[1], [str(n) for n in names]


def first_pass(
    X: np.ndarray, y: np.ndarray | None, mask: np.ndarray | None
) -> tuple[dict[str, Any], list[np.ndarray]]:
    """The histogram pass's result for the whole of ``X``, and each feature's sorted usable values.

    The result has the form of the dask first pass's: ``counts`` (those of
    :func:`~bigkern.reduce.passes.valid_rows`), ``hist`` (per feature the
    sparse counts of the occupied top-``GROUP_BITS`` key groups, increasing)
    and ``labels`` (the distinct labels of the usable rows, or None).
    """
    valid, counts = valid_rows(X, mask, extremes=True)
    require_usable_rows(counts)
    ukind, width = key_dtype(X.dtype)
    shift = ukind(width - GROUP_BITS)
    ordered = np.ascontiguousarray(X[valid].T)  # one row per feature
    ordered.sort(axis=1)
    hist = []
    columns = []
    for values in ordered:
        groups = float_keys(values) >> shift  # non-decreasing, as the values are
        starts = np.flatnonzero(np.concatenate([[True], groups[1:] != groups[:-1]]))
        sizes = np.diff(np.append(starts, len(groups)))
        hist.append((groups[starts].astype(np.intp), sizes.astype(np.int64)))
        columns.append(values)
    labels = None if y is None else _distinct_labels(y, valid)
    return {"counts": counts, "hist": hist, "labels": labels}, columns


def order_statistics(
    columns: Sequence[np.ndarray], wanted: Sequence[tuple[int, int]]
) -> dict[tuple[int, int], float]:
    """Value of every wanted (feature, rank) of the sorted ``columns``.

    As the radix selection gives them: -0.0 and +0.0 share one key, which
    stands for +0.0.
    """
    return {(f, r): float(columns[f][r]) + 0.0 for f, r in wanted}


def kept_fraction_bound(
    first: dict[str, Any], columns: Sequence[np.ndarray], wanted: Sequence[tuple[int, int]],
    dtype: np.dtype,
) -> float:
    """Share of the usable rows whose values share a key group with a wanted order statistic.

    The fused plan's bound on the rows it would keep (see
    :mod:`bigkern.reduce.binning.percentile`), reported in the same attr.
    """
    ukind, width = key_dtype(dtype)
    shift = ukind(width - GROUP_BITS)
    total = 0
    for f, (groups, sizes) in enumerate(first["hist"]):
        ranks = np.array([r for g, r in wanted if g == f], dtype=np.int64)
        if not len(ranks):
            continue
        targets = np.unique(float_keys(columns[f][ranks]) >> shift).astype(np.intp)
        total += int(sizes[np.searchsorted(groups, targets)].sum())
    return total / first["counts"]["valid"]
