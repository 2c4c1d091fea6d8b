"""Compiled per-chunk loops of the distributed passes (numba): row validity and labels.

Each function makes one sweep over a chunk's rows and touches every value
once, so a pass costs about as much as reading the chunk. The numpy
reference semantics are spelled out in each docstring and checked by the
tests against plain numpy computations. The binning's loops (bin ids and
sums) are in :mod:`bigkern.reduce.binning._bin_loops`, those over the
order-preserving keys of the values (radix selection and the one-read plan)
in :mod:`bigkern.reduce.binning._key_loops`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numba
import numpy as np

__all__ = [
    "JIT_OPTIONS",
    "int_label_range",
    "label_flags",
    "row_status",
    "row_status_small",
    "take_rows",
]

#: numba.njit options of every compiled loop of the passes: no GIL, cached on disk.
JIT_OPTIONS = {"nogil": True, "cache": True}


#: Chunks of at most this many values are checked by numpy, not the compiled loop: the
#: first compiled call of a process pays numba's start-up (even with its cache loaded),
#: longer than the rest of a small fit, and numpy is as fast at this size.
SMALL_CHUNK_VALUES = 1 << 18


#: Up to this many features, :func:`row_status_small` counts a row's finite values by
#: adding the columns (in uint8, which this bound keeps from overflowing).
_COLUMN_ADDS = 32


def row_status_small(X: np.ndarray, mask: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`row_status` in numpy (the same rows and counts).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 2.0], [np.nan, 1.0], [np.nan, np.inf], [3.0, 4.0]])
    >>> valid, counts = row_status_small(X, np.array([True, True, True, False]))
    >>> valid.tolist(), counts.tolist()  # rows, masked, absent, nonfinite, valid
    ([True, False, False, False], [4, 1, 1, 1, 1])
    """
    finite = np.isfinite(X)
    d = X.shape[1]
    if d <= _COLUMN_ADDS:  # a sum along the short axis is far slower than d column adds
        n_finite = np.zeros(len(X), dtype=np.uint8)
        for column in finite.T:
            n_finite += column
    else:
        n_finite = finite.sum(axis=1)
    considered = np.ones(len(X), dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    valid = considered & (n_finite == X.shape[1])
    absent = considered & (n_finite == 0) & ~valid
    # count_nonzero: a tenth of the time of a bool sum()
    n_considered, n_absent, n_valid = (np.count_nonzero(a) for a in (considered, absent, valid))
    counts = np.array([len(X), len(X) - n_considered, n_absent, n_considered - n_valid - n_absent,
                       n_valid], dtype=np.int64)
    return valid, counts


@functools.cache
def _row_status_kernel(d: int) -> Callable[..., tuple[np.ndarray, np.ndarray]]:
    """:func:`row_status` compiled for ``d`` features: the loop over them, of known
    length, is unrolled into straight-line code per row (numba caches each ``d``'s
    kernel on disk, the closure's ``d`` in its key)."""

    @numba.njit(**JIT_OPTIONS)
    def row_status(X, mask, use_mask):
        n = X.shape[0]
        valid = np.zeros(n, dtype=np.bool_)
        counts = np.zeros(5, dtype=np.int64)
        counts[0] = n
        for i in range(n):
            if use_mask and not mask[i]:
                counts[1] += 1
                continue
            n_finite = 0
            for f in range(d):
                n_finite += np.isfinite(X[i, f])
            if n_finite == d:
                valid[i] = True
                counts[4] += 1
            elif n_finite == 0:
                counts[2] += 1
            else:
                counts[3] += 1
        return valid, counts

    return row_status


def row_status(X: np.ndarray, mask: np.ndarray, use_mask: bool) -> tuple[np.ndarray, np.ndarray]:
    """Usable rows of a chunk and the counts (rows, masked, absent, nonfinite, valid).

    A row is usable when its mask is true (if ``use_mask``) and every feature is
    finite; an excluded row is *masked*, *absent* (no finite feature) or
    *nonfinite* (some but not all features non-finite). One compiled sweep
    (:func:`row_status_small` is the numpy version, for small chunks).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 2.0], [np.nan, 1.0], [np.nan, np.inf], [3.0, 4.0]])
    >>> valid, counts = row_status(X, np.array([True, True, True, False]), True)
    >>> valid.tolist(), counts.tolist()  # rows, masked, absent, nonfinite, valid
    ([True, False, False, False], [4, 1, 1, 1, 1])
    """
    return _row_status_kernel(X.shape[1])(X, mask, use_mask)


@numba.njit(**JIT_OPTIONS)
def take_rows(X: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``X[rows]`` of a 2-D array, without the per-row overhead of numpy's fancy indexing."""
    out = np.empty((rows.shape[0], X.shape[1]), dtype=X.dtype)
    for k in range(rows.shape[0]):
        i = rows[k]
        for j in range(X.shape[1]):
            out[k, j] = X[i, j]
    return out


@numba.njit(**JIT_OPTIONS)
def label_flags(y: np.ndarray, valid: np.ndarray, negative, positive) -> tuple[np.ndarray, int]:
    """Whether each row's label is ``positive``, and the first valid row with another
    label than ``negative`` or ``positive`` (-1 when there is none)."""
    n = y.shape[0]
    flags = np.zeros(n, dtype=np.bool_)
    bad = -1
    n_bad = 0
    for i in range(n):  # branch-free: the labels' order is random
        v = y[i]
        is_pos = v == positive
        flags[i] = valid[i] & is_pos
        n_bad += valid[i] & (not is_pos) & (v != negative)
    if n_bad:
        for i in range(n):
            if valid[i] and y[i] != positive and y[i] != negative:
                bad = i
                break
    return flags, bad


@numba.njit(**JIT_OPTIONS)
def int_label_range(y: np.ndarray, valid: np.ndarray, max_span: int) -> tuple[int, np.ndarray]:
    """(lo, present) with ``present[v - lo]`` true for every integer label ``v`` of a valid row.

    ``present`` is empty when the labels span more than ``max_span`` values
    (or no row is valid).
    """
    lo = np.int64(np.iinfo(np.int64).max)
    hi = np.int64(np.iinfo(np.int64).min)
    for i in range(y.shape[0]):  # branch-free min/max: cheaper than testing "seen"
        if valid[i]:
            v = np.int64(y[i])
            lo = min(lo, v)
            hi = max(hi, v)
    if lo > hi:  # no valid row
        return np.int64(0), np.zeros(0, dtype=np.bool_)
    if np.uint64(hi) - np.uint64(lo) >= np.uint64(max_span):  # unsigned: no overflow
        return lo, np.zeros(0, dtype=np.bool_)
    present = np.zeros(hi - lo + 1, dtype=np.bool_)
    present[0] = present[-1] = True  # the smallest and the largest were seen
    if hi - lo > 1:
        for i in range(y.shape[0]):
            if valid[i]:
                present[np.int64(y[i]) - lo] = True
    return lo, present
