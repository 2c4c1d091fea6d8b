"""Compiled per-chunk loops that count k classes (numba): each row's class index (by a
lookup table of small integer labels, or a binary search of sorted ones) and the rows of
each class per bin (by a table of bin slots, or in sorted order).

Used by the binning of k-class labels (:mod:`bigkern.reduce.class_counts`,
:mod:`bigkern.reduce.binning.partials`); two classes keep the binning's own sweeps.
"""

from __future__ import annotations

import numba
import numpy as np

from bigkern.reduce.row_loops import JIT_OPTIONS

__all__ = ["class_counts_by_slot", "class_counts_sorted", "class_index", "class_index_lut"]


@numba.njit(**JIT_OPTIONS)
def class_index(y: np.ndarray, valid: np.ndarray, table: np.ndarray, order: np.ndarray,
                codes: np.ndarray) -> int:
    """Each valid row's class index into ``codes`` (0 for the others); the first valid row
    whose label is no class (-1 when there is none).

    ``table`` holds the classes sorted, in ``y``'s dtype, and ``order[t]`` the index
    in the caller's classes of ``table[t]``: a binary search per row
    (``searchsorted``, then an equality test).
    """
    k = table.shape[0]
    bad = -1
    for i in range(y.shape[0]):
        if not valid[i]:
            codes[i] = 0
            continue
        v = y[i]
        lo, hi = 0, k
        while lo < hi:
            mid = (lo + hi) // 2
            if table[mid] < v:
                lo = mid + 1
            else:
                hi = mid
        if lo < k and table[lo] == v:
            codes[i] = order[lo]
        else:
            codes[i] = 0
            if bad < 0:
                bad = i
    return bad


@numba.njit(**JIT_OPTIONS)
def class_counts_by_slot(ids: np.ndarray, codes: np.ndarray, slot: np.ndarray, n_slots: int,
                         n_classes: int) -> np.ndarray:
    """Rows of each class per occupied bin: row ``i`` with ``ids[i] >= 0`` adds 1 to
    ``out[slot[ids[i]], codes[i]]`` (``slot`` maps a bin id to its place among the
    occupied bins)."""
    out = np.zeros((n_slots, n_classes), dtype=np.int64)
    for i in range(ids.shape[0]):
        b = ids[i]
        if b >= 0:
            out[slot[b], codes[i]] += 1
    return out


@numba.njit(**JIT_OPTIONS)
def class_counts_sorted(ids: np.ndarray, codes: np.ndarray, order: np.ndarray, n_slots: int,
                        n_classes: int) -> np.ndarray:
    """As :func:`class_counts_by_slot` for rows visited in ``order`` (valid rows sorted by
    id, as :func:`bin_sums_sparse` visits them): the slot advances with each new id."""
    out = np.zeros((n_slots, n_classes), dtype=np.int64)
    j = -1
    last = -1
    for t in range(order.shape[0]):
        i = order[t]
        b = ids[i]
        if b != last:
            j += 1
            last = b
        out[j, codes[i]] += 1
    return out


@numba.njit(**JIT_OPTIONS)
def class_index_lut(y: np.ndarray, valid: np.ndarray, lo: int, lut: np.ndarray,
                    codes: np.ndarray) -> int:
    """:func:`class_index` for integer labels by a table look-up: ``lut[v - lo]`` is the
    class index of label ``v`` (-1: no class); labels outside the table are no class."""
    span = lut.shape[0]
    bad = -1
    for i in range(y.shape[0]):
        if not valid[i]:
            codes[i] = 0
            continue
        at = np.int64(y[i]) - lo
        j = lut[at] if 0 <= at < span else -1
        if j < 0:
            codes[i] = 0
            if bad < 0:
                bad = i
        else:
            codes[i] = j
    return bad
