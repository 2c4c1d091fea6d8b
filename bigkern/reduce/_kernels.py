"""Compiled per-chunk loops of the distributed passes (numba).

Each function makes one sweep over a chunk's rows and touches every value
once, so a pass costs about as much as reading the chunk. The numpy
reference semantics are spelled out in each docstring and checked by the
tests against plain numpy computations.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = [
    "add_group_counts",
    "bin_ids",
    "bin_sums_dense",
    "bin_sums_sparse",
    "certain_bin_ids",
    "certain_bin_sums",
    "group_histogram",
    "int_label_range",
    "key_histogram",
    "label_flags",
    "one_read_ids",
    "one_read_sums",
    "row_status",
    "select_digits",
]

_JIT = {"nogil": True, "cache": True}


@numba.njit(**_JIT)
def _row_is_valid(X: np.ndarray, i: int) -> tuple[bool, int]:
    """(all finite, number of finite features) of row i."""
    n_finite = 0
    for f in range(X.shape[1]):
        if np.isfinite(X[i, f]):
            n_finite += 1
    return n_finite == X.shape[1], n_finite


@numba.njit(**_JIT)
def row_status(X: np.ndarray, mask: np.ndarray, use_mask: bool) -> tuple[np.ndarray, np.ndarray]:
    """Usable rows of a chunk and the counts (rows, masked, absent, nonfinite, valid).

    A row is usable when its mask is true (if ``use_mask``) and every feature is
    finite; an excluded row is *masked*, *absent* (no finite feature) or
    *nonfinite* (some but not all features finite).
    """
    n = X.shape[0]
    valid = np.zeros(n, dtype=np.bool_)
    counts = np.zeros(5, dtype=np.int64)
    counts[0] = n
    for i in range(n):
        if use_mask and not mask[i]:
            counts[1] += 1
            continue
        ok, n_finite = _row_is_valid(X, i)
        if ok:
            valid[i] = True
            counts[4] += 1
        elif n_finite == 0:
            counts[2] += 1
        else:
            counts[3] += 1
    return valid, counts


@numba.njit(**_JIT)
def _key(b, sign):
    """Order-preserving key of a float's bits; -0.0 and +0.0 share the key of +0.0."""
    if b == sign:  # -0.0: the key of +0.0 (its bits, 0, with the sign bit set)
        return sign
    return ~b if b & sign else b | sign


@numba.njit(**_JIT)
def key_histogram(
    bits: np.ndarray, valid: np.ndarray, width: int, feature: int, group_bits: int
) -> np.ndarray:
    """Histogram of the top ``group_bits`` of the order-preserving keys of one feature.

    ``bits`` is the chunk viewed as unsigned integers of ``width`` bits; the
    key of a float is its bits with the sign bit set (non-negative) or all
    bits flipped (negative), which sorts like the floats.
    """
    hist = np.zeros(1 << group_bits, dtype=np.int64)
    sign = bits.dtype.type(1) << bits.dtype.type(width - 1)
    shift = bits.dtype.type(width - group_bits)
    for i in range(bits.shape[0]):
        if valid[i]:
            hist[np.intp(_key(bits[i, feature], sign) >> shift)] += 1
    return hist


@numba.njit(**_JIT)
def select_digits(
    bits: np.ndarray,
    valid: np.ndarray,
    feature: int,
    width: int,
    nbits: int,
    step: int,
    prefixes: np.ndarray,
) -> np.ndarray:
    """For keys whose top ``nbits`` equal one of the sorted ``prefixes``: ``pos << step | digit``.

    ``pos`` is the index of the matching prefix and ``digit`` the next ``step``
    bits of the key. Returned as uint64, one entry per selected value.
    """
    utype = bits.dtype.type
    sign = utype(1) << utype(width - 1)
    high_shift = utype(width - nbits)
    low_shift = utype(width - nbits - step)
    low_mask = (np.uint64(1) << np.uint64(step)) - np.uint64(1)
    n_pref = prefixes.shape[0]
    out = np.empty(bits.shape[0], dtype=np.uint64)
    m = 0
    for i in range(bits.shape[0]):
        if not valid[i]:
            continue
        key = _key(bits[i, feature], sign)
        high = np.uint64(key >> high_shift)
        lo, hi = 0, n_pref
        while lo < hi:  # binary search among a handful of prefixes
            mid = (lo + hi) // 2
            if prefixes[mid] < high:
                lo = mid + 1
            else:
                hi = mid
        if lo < n_pref and prefixes[lo] == high:
            digit = np.uint64(key >> low_shift) & low_mask
            out[m] = (np.uint64(lo) << np.uint64(step)) | digit
            m += 1
    return out[:m]


@numba.njit(**_JIT)
def _certain_bin(bits, i, sign, shift, tables, n_cells) -> np.int64:
    """Bin of row i from its key groups alone, or -1 when a value's group holds an edge."""
    b = np.int64(0)
    for f in range(bits.shape[1]):
        cell = tables[f, np.intp(_key(bits[i, f], sign) >> shift)]
        if cell == 65535:
            return np.int64(-1)
        b = b * n_cells[f] + np.int64(cell)
    return b


@numba.njit(**_JIT)
def certain_bin_ids(
    bits: np.ndarray, valid: np.ndarray, width: int, group_bits: int, tables: np.ndarray,
    n_cells: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Bin ids decided from key groups alone, before the exact edges are known.

    ``tables[f, g]`` is the cell of every value of feature ``f`` whose key
    group is ``g``, or ``KEEP`` (65535) when ``g`` holds an edge (or another
    order statistic still being selected). Rows with a value in such a group
    are *kept* (``ids = -1``, ``kept = True``) until the edges are exact.
    """
    n = bits.shape[0]
    utype = bits.dtype.type
    sign = utype(1) << utype(width - 1)
    shift = utype(width - group_bits)
    ids = np.full(n, -1, dtype=np.int64)
    kept = np.zeros(n, dtype=np.bool_)
    for i in range(n):
        if not valid[i]:
            continue
        b = _certain_bin(bits, i, sign, shift, tables, n_cells)
        if b < 0:
            kept[i] = True
        else:
            ids[i] = b
    return ids, kept


@numba.njit(**_JIT)
def certain_bin_sums(
    X: np.ndarray, bits: np.ndarray, valid: np.ndarray, is_positive: np.ndarray, width: int,
    group_bits: int, tables: np.ndarray, n_cells: np.ndarray, down: np.ndarray, up: np.ndarray,
    index: np.ndarray, bounds: np.ndarray, n_possible: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`certain_bin_ids` and :func:`bin_sums_dense` in one sweep.

    Returns the dense per-bin count, fixed-point limb sums, positive count,
    outlier counts and examples (as :func:`bin_sums_dense`) of the rows whose
    bin is certain, and the kept rows.
    """
    n, d = bits.shape
    utype = bits.dtype.type
    sign = utype(1) << utype(width - 1)
    shift = utype(width - group_bits)
    count = np.zeros(n_possible, dtype=np.int64)
    sums = np.zeros((n_possible, index.max() + 1), dtype=np.int64)
    positive = np.zeros(n_possible, dtype=np.int64)
    outside = np.zeros(d, dtype=np.int64)
    extreme = np.full(d, np.nan)
    kept = np.zeros(n, dtype=np.bool_)
    for i in range(n):
        if not valid[i]:
            continue
        b = _certain_bin(bits, i, sign, shift, tables, n_cells)
        if b < 0:
            kept[i] = True
            continue
        count[b] += 1
        positive[b] += is_positive[i]
        for f in range(d):
            v = np.float64(X[i, f])
            if (bounds[f, 0] <= v) & (v <= bounds[f, 1]):
                sums[b, f] += np.int64(np.rint(v * down[f, 0]))
            else:
                _add_wide(sums, b, f, v, down, up, index, bounds, outside, extreme)
    return count, sums, positive, outside, extreme, kept


@numba.njit(**_JIT)
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


@numba.njit(**_JIT)
def int_label_range(y: np.ndarray, valid: np.ndarray, max_span: int) -> tuple[int, np.ndarray]:
    """(lo, present) with ``present[v - lo]`` true for every integer label ``v`` of a valid row.

    ``present`` is empty when the labels span more than ``max_span`` values
    (or no row is valid).
    """
    lo = np.int64(0)
    hi = np.int64(0)
    seen = False
    for i in range(y.shape[0]):
        if valid[i]:
            v = np.int64(y[i])
            if not seen:
                lo = v
                hi = v
                seen = True
            else:
                lo = min(lo, v)
                hi = max(hi, v)
    if not seen or hi - lo >= max_span:
        return lo, np.zeros(0, dtype=np.bool_)
    present = np.zeros(hi - lo + 1, dtype=np.bool_)
    for i in range(y.shape[0]):
        if valid[i]:
            present[np.int64(y[i]) - lo] = True
    return lo, present


@numba.njit(**_JIT)
def _cell(edges: np.ndarray, n_edges: int, x: float) -> int:
    """Number of edges strictly below x (``searchsorted(edges, x, side="left")``)."""
    if n_edges <= 32:
        # a branch-free count beats a binary search's unpredictable branches
        c = 0
        for k in range(n_edges):
            c += edges[k] < x
        return c
    lo, hi = 0, n_edges
    while lo < hi:
        mid = (lo + hi) // 2
        if edges[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@numba.njit(**_JIT)
def bin_ids(
    X: np.ndarray, valid: np.ndarray, edges: np.ndarray, n_edges: np.ndarray
) -> np.ndarray:
    """C-order mixed-radix bin id of every valid row (-1 for others)."""
    n, d = X.shape
    ids = np.full(n, -1, dtype=np.int64)
    for i in range(n):
        if not valid[i]:
            continue
        b = 0
        for f in range(d):
            b = b * (n_edges[f] + 1) + _cell(edges[f], n_edges[f], np.float64(X[i, f]))
        ids[i] = b
    return ids


_TOP_LIMIT = 2.0**62  # a top limb's digit beyond this would overflow int64 sums


@numba.njit(**_JIT)
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


@numba.njit(**_JIT)
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
    :meth:`~bigkern.reduce.fixed_point.FixedPointGrid.kernel_args`: feature
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
        for f in range(d):  # written out in each kernel: a helper call here is 10x slower
            v = np.float64(X[i, f])
            if (bounds[f, 0] <= v) & (v <= bounds[f, 1]):
                sums[b, f] += np.int64(np.rint(v * down[f, 0]))
            else:
                _add_wide(sums, b, f, v, down, up, index, bounds, outside, extreme)
    return count, sums, positive, outside, extreme


@numba.njit(**_JIT)
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


@numba.njit(**_JIT)
def group_histogram(
    bits: np.ndarray, valid: np.ndarray, width: int, feature: int, group_bits: int,
    hist: np.ndarray, occupied: np.ndarray,
) -> int:
    """:func:`key_histogram` into ``hist`` (zeros on entry), listing the occupied groups.

    Each group counted for the first time is appended to ``occupied``; returns
    how many there are, so that the sparse histogram costs what the chunk's
    distinct groups cost, not a sweep of all ``2**group_bits`` of them.
    """
    sign = bits.dtype.type(1) << bits.dtype.type(width - 1)
    shift = bits.dtype.type(width - group_bits)
    m = 0
    for i in range(bits.shape[0]):
        if valid[i]:
            g = np.intp(_key(bits[i, feature], sign) >> shift)
            c = hist[g]
            if c == 0:
                occupied[m] = g
                m += 1
            hist[g] = c + 1
    return m


@numba.njit(**_JIT)
def _guessed_bin(bits, X, i, sign, shift, tables, n_cells, reach) -> np.int64:
    """Bin of row i by the guessed tables; -1 when a value's group is kept or ``|x| > reach``."""
    b = np.int64(0)
    for f in range(bits.shape[1]):
        cell = tables[f, np.intp(_key(bits[i, f], sign) >> shift)]
        if cell == 65535 or not abs(np.float64(X[i, f])) <= reach[f]:
            return np.int64(-1)
        b = b * n_cells[f] + np.int64(cell)
    return b


@numba.njit(**_JIT)
def one_read_sums(
    X: np.ndarray, bits: np.ndarray, valid: np.ndarray, is_positive: np.ndarray, width: int,
    group_bits: int, tables: np.ndarray, n_cells: np.ndarray, down: np.ndarray,
    reach: np.ndarray, n_possible: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The one-read plan's certain bins, summed at several fixed-point grids at once.

    A valid row is *kept* (returned in ``kept``) when a value's key group is
    ``KEEP`` (65535) in the guessed ``tables`` (as :func:`certain_bin_ids`)
    or ``|x| > reach[f]``; every other row adds 1 to ``count[b]``, its flag to
    ``positive[b]`` and, for each candidate grid ``c`` (a row of ``down``:
    ``2**s_cf``), ``rint(x · down[c, f])`` to ``sums[b, c·d + f]`` (``reach``
    keeps every such integer below ``2**31`` in magnitude: one limb holds it).
    """
    n, d = bits.shape
    n_grids = down.shape[0]
    utype = bits.dtype.type
    sign = utype(1) << utype(width - 1)
    shift = utype(width - group_bits)
    count = np.zeros(n_possible, dtype=np.int64)
    sums = np.zeros((n_possible, n_grids * d), dtype=np.int64)
    positive = np.zeros(n_possible, dtype=np.int64)
    kept = np.zeros(n, dtype=np.bool_)
    for i in range(n):
        if not valid[i]:
            continue
        b = _guessed_bin(bits, X, i, sign, shift, tables, n_cells, reach)
        if b < 0:
            kept[i] = True
            continue
        count[b] += 1
        positive[b] += is_positive[i]
        for c in range(n_grids):
            for f in range(d):
                sums[b, c * d + f] += np.int64(np.rint(np.float64(X[i, f]) * down[c, f]))
    return count, sums, positive, kept


@numba.njit(**_JIT)
def one_read_ids(
    X: np.ndarray, bits: np.ndarray, valid: np.ndarray, width: int, group_bits: int,
    tables: np.ndarray, n_cells: np.ndarray, reach: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`one_read_sums` without the sums: certain bin ids (-1 elsewhere) and kept rows.

    For many possible bins, whose sums are accumulated sparsely afterwards.
    """
    n = bits.shape[0]
    utype = bits.dtype.type
    sign = utype(1) << utype(width - 1)
    shift = utype(width - group_bits)
    ids = np.full(n, -1, dtype=np.int64)
    kept = np.zeros(n, dtype=np.bool_)
    for i in range(n):
        if not valid[i]:
            continue
        b = _guessed_bin(bits, X, i, sign, shift, tables, n_cells, reach)
        if b < 0:
            kept[i] = True
        else:
            ids[i] = b
    return ids, kept


@numba.njit(**_JIT)
def add_group_counts(
    groups: np.ndarray, counts: np.ndarray, dense: np.ndarray, occupied: np.ndarray
) -> int:
    """Add sparse ``(groups, counts)`` into ``dense`` (zeros on entry), listing new groups.

    Returns the number of distinct groups, listed in ``occupied[:m]`` in the
    order first seen.
    """
    m = 0
    for k in range(groups.shape[0]):
        g = groups[k]
        if dense[g] == 0:
            occupied[m] = g
            m += 1
        dense[g] += counts[k]
    return m
