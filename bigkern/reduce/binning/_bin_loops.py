"""Compiled per-chunk loops of the binning (numba): the bin of each row, bin sums, and
the class of each row and class counts per bin (for more than two classes).

One sweep over a chunk's rows each, as the loops of
:mod:`bigkern.reduce.row_loops`; the numpy reference semantics are in each
docstring and checked by the tests.
"""

from __future__ import annotations

import numba
import numpy as np

from bigkern.reduce.row_loops import JIT_OPTIONS

__all__ = ["bin_ids", "bin_sums_dense", "bin_sums_sparse"]


@numba.njit(**JIT_OPTIONS)
def _cell(edges: np.ndarray, n_edges: int, x: float) -> int:
    """Number of edges strictly below x (``searchsorted(edges, x, side="left")``)."""
    lo, hi = 0, n_edges
    while lo < hi:
        mid = (lo + hi) // 2
        if edges[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


_ID_BLOCK = 1024  #: rows of a block of :func:`bin_ids` (its arrays stay in the L1 cache)


@numba.njit(**JIT_OPTIONS)
def bin_ids(
    X: np.ndarray, valid: np.ndarray, edges: np.ndarray, n_edges: np.ndarray
) -> np.ndarray:
    """C-order mixed-radix bin id of every valid row (-1 for others). By blocks of rows and
    features: up to 32 edges, a cell counts the edges below it, one edge at a time over the
    block (branch-free; the loop over rows vectorizes), beyond by binary search (_cell)."""
    n, d = X.shape
    ids = np.full(n, -1, dtype=np.int64)
    x = np.empty(_ID_BLOCK)
    cell = np.empty(_ID_BLOCK, dtype=np.int64)
    b = np.empty(_ID_BLOCK, dtype=np.int64)
    for lo in range(0, n, _ID_BLOCK):
        m = min(_ID_BLOCK, n - lo)
        b[:m] = 0
        for f in range(d):
            n_f = n_edges[f]
            for j in range(m):
                x[j] = X[lo + j, f]
            if n_f <= 32:
                cell[:m] = 0
                for k in range(n_f):
                    e = edges[f, k]
                    for j in range(m):
                        cell[j] += e < x[j]
            else:
                for j in range(m):
                    cell[j] = _cell(edges[f], n_f, x[j])
            for j in range(m):
                b[j] = b[j] * (n_f + 1) + cell[j]
        for j in range(m):
            if valid[lo + j]:
                ids[lo + j] = b[j]
    return ids


_TOP_LIMIT = 2.0**62  # a top limb's digit beyond this would overflow int64 sums


@numba.njit(**JIT_OPTIONS)
def _add_wide(sums, b, f, v, down, up, index, bounds, outside, extreme) -> None:
    """Add ``rint(v · 2**s_f)`` to bin ``b``'s base-2**32 limbs of feature ``f``; count outliers.

    The digits of ``|v| · 2**s_f`` are taken from the top limb down by
    ``floor`` and subtraction of exact powers of two (``down[f, k]`` and
    ``up[f, k]``), which is exact; the sign is applied to every digit. A
    value outside ``bounds[f, 2:4]`` is counted in ``outside[f]``, and the one
    of largest magnitude (ties: the larger) kept in ``extreme[f]``.
    """
    if v < bounds[f, 2] or v > bounds[f, 3]:
        outside[f] += 1
        e = extreme[f]
        if np.isnan(e) or abs(v) > abs(e) or (abs(v) == abs(e) and v > e):
            extreme[f] = v
    a = abs(v)
    sgn = np.int64(-1) if v < 0 else np.int64(1)
    top = 0
    while top + 1 < index.shape[1] and index[f, top + 1] >= 0:
        top += 1
    for k in range(top, 0, -1):
        q = np.floor(a * down[f, k])
        if q > 0:
            if q >= _TOP_LIMIT:
                raise OverflowError("a value is beyond the fixed-point sums' range (value_range "
                                    "understates max|x|)")
            a -= q * up[f, k]
            sums[b, index[f, k]] += sgn * np.int64(q)
    r = np.rint(a * down[f, 0])
    if r >= _TOP_LIMIT:
        raise OverflowError("a value is beyond the fixed-point sums' range (value_range "
                            "understates max|x|)")
    sums[b, f] += sgn * np.int64(r)


@numba.njit(**JIT_OPTIONS)
def bin_sums_dense(
    X: np.ndarray,
    ids: np.ndarray,
    is_positive: np.ndarray,
    down: np.ndarray,
    up: np.ndarray,
    index: np.ndarray,
    bounds: np.ndarray,
    n_possible: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per-bin count, fixed-point feature sums and positive count, in dense arrays.

    Each value of feature ``f`` is rounded to ``rint(x · 2**s_f)`` and summed
    as an integer, so the sums are exact and do not depend on the order of
    the rows. ``down``, ``up``, ``index`` and ``bounds`` are
    :meth:`~bigkern.reduce.binning.fixed_point.FixedPointGrid.kernel_args`: feature
    ``f``'s integer is held in the base-2**32 limbs ``sums[:, index[f, k]]``
    (``k = 0, 1, …``, least significant first; ``index[f, 0] = f``). A value
    in ``bounds[f, 0:2]`` goes straight to the first limb; any other is split
    over the limbs (``_add_wide``), and counted in ``outside[f]`` when outside
    the outlier limits ``bounds[f, 2:4]``, the one of largest magnitude (ties:
    the larger) kept in ``extreme[f]`` (NaN if none).
    """
    d = X.shape[1]
    count = np.zeros(n_possible, dtype=np.int64)
    sums = np.zeros((n_possible, index.max() + 1), dtype=np.int64)
    positive = np.zeros(n_possible, dtype=np.int64)
    outside = np.zeros(d, dtype=np.int64)
    extreme = np.full(d, np.nan)
    for i in range(X.shape[0]):
        b = ids[i]
        if b < 0:
            continue
        count[b] += 1
        positive[b] += is_positive[i]
        for f in range(d):  # written out in each kernel: a helper call per value costs more
            v = np.float64(X[i, f])
            if (bounds[f, 0] <= v) & (v <= bounds[f, 1]):
                sums[b, f] += np.int64(np.rint(v * down[f, 0]))
            else:
                _add_wide(sums, b, f, v, down, up, index, bounds, outside, extreme)
    return count, sums, positive, outside, extreme


@numba.njit(**JIT_OPTIONS)
def bin_sums_sparse(
    X: np.ndarray,
    ids: np.ndarray,
    is_positive: np.ndarray,
    down: np.ndarray,
    up: np.ndarray,
    index: np.ndarray,
    bounds: np.ndarray,
    order: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """As :func:`bin_sums_dense` for rows visited in ``order`` (sorted by id, valid rows only).

    Returns the occupied bin ids first.
    """
    d = X.shape[1]
    m = 0
    last = -1
    for k in range(order.shape[0]):
        b = ids[order[k]]
        if b != last:
            m += 1
            last = b
    uniq = np.empty(m, dtype=np.int64)
    count = np.zeros(m, dtype=np.int64)
    sums = np.zeros((m, index.max() + 1), dtype=np.int64)
    positive = np.zeros(m, dtype=np.int64)
    outside = np.zeros(d, dtype=np.int64)
    extreme = np.full(d, np.nan)
    j = -1
    last = -1
    for k in range(order.shape[0]):
        i = order[k]
        b = ids[i]
        if b != last:
            j += 1
            uniq[j] = b
            last = b
        count[j] += 1
        positive[j] += is_positive[i]
        for f in range(d):
            v = np.float64(X[i, f])
            if (bounds[f, 0] <= v) & (v <= bounds[f, 1]):
                sums[j, f] += np.int64(np.rint(v * down[f, 0]))
            else:
                _add_wide(sums, j, f, v, down, up, index, bounds, outside, extreme)
    return uniq, count, sums, positive, outside, extreme


