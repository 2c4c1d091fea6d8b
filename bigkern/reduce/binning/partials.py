"""A chunk's partial bins: per occupied bin its count, exact fixed-point sums and classes.

Every plan of :func:`~bigkern.reduce.binning.percentile.percentile_bins` and the
binning pass of :func:`~bigkern.reduce.binning.bins.bin_statistics` build their
partials here: :func:`accumulate_bins` sums the rows of known bin ids (dense
accumulators when the possible bins are no more than the chunk's rows, else
sorted sparse ones), :func:`combine_bins` merges partials bin by bin (integer
limb sums: exact and associative, so the chunking never shows), and
:func:`row_labels` turns labels into what the bins count of them.

Two classes are counted as today's positives: a flag per row, summed per bin by
the compiled sweeps (the partial's ``positive``). More classes are counted per
bin and class (the partial's ``class_count``, shape (bins, k)) from each row's
class index and bin id (:func:`~bigkern.reduce.class_counts.bin_class_counts`), after
the sweep that gives the bin ids: the compiled sweeps are the binary ones, unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from bigkern.errors import LabelError
from bigkern.reduce.binning._bin_loops import (
    bin_sums_dense,
    bin_sums_sparse,
)
from bigkern.reduce.binning.fixed_point import FixedPointGrid, normalize_limbs
from bigkern.reduce.class_counts import bin_class_counts, class_codes
from bigkern.reduce.passes import add_counts
from bigkern.reduce.row_loops import label_flags

__all__ = ["accumulate_bins", "combine_bins", "dense_partial", "padded_edges", "positive_flags",
           "row_labels", "use_dense_sums"]


def row_labels(
    yb: np.ndarray | None, valid: np.ndarray, classes: tuple[Any, ...] | None
) -> np.ndarray:
    """What the bins count of each row's label: for two ``classes`` whether it is the
    positive one (:func:`positive_flags`, bool), for more the index of its class
    (:func:`~bigkern.reduce.class_counts.class_codes`); all False without labels (``yb``
    or ``classes`` None)."""
    if yb is None or classes is None:
        return np.zeros(len(valid), dtype=bool)
    if len(classes) == 2:
        return positive_flags(yb, valid, classes[1], classes)
    return class_codes(yb, valid, classes)


def positive_flags(
    yb: np.ndarray | None, valid: np.ndarray, positive: Any, classes: tuple[Any, ...] | None
) -> np.ndarray:
    """Whether each row has the positive class; labels outside ``classes`` raise."""
    if yb is None or positive is None:
        return np.zeros(len(valid), dtype=bool)
    y = np.asarray(yb)
    typed = _typed_classes(classes, positive, y.dtype) if classes is not None else None
    if typed is not None and y.ndim == 1 and len(y) == len(valid):
        flags, bad = label_flags(np.ascontiguousarray(y), valid, *typed)
        if bad >= 0:
            raise LabelError(
                f"label value {y[bad].item()!r} (row {bad} of its chunk) is not one of the "
                f"classes {list(classes)}")
        return flags
    if classes is not None:
        unknown = valid & ~np.isin(y, np.asarray(classes))
        if unknown.any():
            raise LabelError(
                f"label value {y[unknown][0].item()!r} (row {np.flatnonzero(unknown)[0]} of its "
                f"chunk) is not one of the classes {list(classes)}"
            )
    return np.ascontiguousarray(y == positive)


def _typed_classes(
    classes: Sequence[Any], positive: Any, dtype: np.dtype
) -> tuple[Any, Any] | None:
    """(negative, positive) as scalars of the labels' numeric dtype, if they convert exactly."""
    if dtype.kind not in "iuf" or len(classes) != 2 or positive != classes[1]:
        return None
    try:
        typed = tuple(dtype.type(c) for c in classes)
    except (TypeError, ValueError, OverflowError):
        return None
    if any(t != c for t, c in zip(typed, classes, strict=True)):
        return None
    return typed


def use_dense_sums(n_possible: int, n_rows: int) -> bool:
    """Whether per-bin sums go to dense accumulators (no larger than the chunk) or sparse."""
    return n_possible <= max(1 << 16, n_rows)


def dense_partial(
    count: np.ndarray, sums: np.ndarray, positive: np.ndarray, outside: np.ndarray,
    extreme: np.ndarray, counts: dict[str, int], limb_index: np.ndarray, with_labels: bool,
) -> dict[str, Any]:
    """A chunk's partial bins from dense accumulators (empty bins dropped)."""
    uniq = np.flatnonzero(count)
    return _partial(counts, uniq, count[uniq], sums[uniq], positive[uniq], outside, extreme,
                    limb_index, with_labels)


def _partial(counts: dict[str, int], uniq: np.ndarray, count: np.ndarray, sums: np.ndarray,
             positive: np.ndarray, outside: np.ndarray, extreme: np.ndarray,
             limb_index: np.ndarray, with_labels: bool) -> dict[str, Any]:
    return {
        "counts": counts,
        "bin": uniq.astype(np.int64),
        "n": count,
        "sum": normalize_limbs(sums, limb_index),
        "limb_index": limb_index,
        "positive": positive if with_labels else None,
        "class_count": None,
        "outside": outside,
        "extreme": extreme,
    }


def accumulate_bins(
    X: np.ndarray, ids: np.ndarray, labels: np.ndarray, grid: FixedPointGrid,
    n_possible: int, counts: dict[str, int], with_labels: bool, n_classes: int = 2,
) -> dict[str, Any]:
    """Per-bin count, fixed-point limb sums and classes of the rows with ``ids >= 0``.

    ``labels`` are :func:`row_labels`: positive flags for two classes (summed
    as ``positive``), class indices for ``n_classes`` > 2 (counted as
    ``class_count``).
    """
    args = grid.kernel_args()
    several = with_labels and n_classes > 2
    flags = np.zeros(len(X), dtype=bool) if several else labels
    binary = with_labels and not several
    order = None
    if use_dense_sums(n_possible, len(X)):
        count, sums, pos, outside, extreme = bin_sums_dense(X, ids, flags, *args, n_possible)
        part = dense_partial(count, sums, pos, outside, extreme, counts, grid.limb_index, binary)
    else:
        order = np.flatnonzero(ids >= 0)
        order = order[np.argsort(ids[order], kind="stable")]
        uniq, count, sums, pos, outside, extreme = bin_sums_sparse(X, ids, flags, *args, order)
        part = _partial(counts, uniq, count, sums, pos, outside, extreme, grid.limb_index,
                        binary)
    if several:
        part["class_count"] = bin_class_counts(ids, labels, part["bin"], n_classes, order)
    return part


def padded_edges(edges: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Edges as one (d, max_edges) array padded with +inf, and the count per feature."""
    n_edges = np.array([len(e) for e in edges], dtype=np.int64)
    padded = np.full((len(edges), max(1, int(n_edges.max(initial=0)))), np.inf)
    for f, e in enumerate(edges):
        padded[f, : len(e)] = e
    return padded, n_edges


def _most_extreme(values: np.ndarray) -> np.ndarray:
    """Per column, the value of largest magnitude (ties: the larger; NaN = none)."""
    mag = np.where(np.isnan(values), -np.inf, np.abs(values))
    best = np.max(mag, axis=0, initial=-np.inf)
    pick = np.where(mag == best, values, -np.inf)
    return np.where(np.isinf(best) & (best < 0), np.nan, np.max(pick, axis=0, initial=-np.inf))


def combine_bins(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """Merge partial bins: counts and limb sums add (then carries are normalized)."""
    ids = np.concatenate([p["bin"] for p in parts])
    uniq, inv = np.unique(ids, return_inverse=True)
    m = len(uniq)

    def add(arrs: list[np.ndarray]) -> np.ndarray:
        stacked = np.concatenate(arrs)
        out = np.zeros((m, *stacked.shape[1:]), dtype=np.int64)
        np.add.at(out, inv, stacked)
        return out

    limb_index = parts[0]["limb_index"]
    return {
        "counts": add_counts([p["counts"] for p in parts]),
        "bin": uniq,
        "n": add([p["n"] for p in parts]),
        "sum": normalize_limbs(add([p["sum"] for p in parts]), limb_index),
        "limb_index": limb_index,
        "positive": None if parts[0]["positive"] is None else add([p["positive"] for p in parts]),
        "class_count": (None if parts[0].get("class_count") is None
                        else add([p["class_count"] for p in parts])),
        "outside": np.sum([p["outside"] for p in parts], axis=0),
        "extreme": _most_extreme(np.stack([p["extreme"] for p in parts])),
    }

