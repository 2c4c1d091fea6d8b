"""Compiled per-chunk loops over the order-preserving keys of the values (numba).

The key of a float is its bits with the sign bit set (non-negative) or all
bits flipped (negative), so keys sort like the floats and their top bits
name a *key group*. These loops build the key-group histograms of the
radix selection of exact order statistics, select the next digits within
candidate groups, and bin the rows whose bin the key groups alone decide
(the two-read plan's second read; the one-read plan's sweeps are in
:mod:`bigkern.reduce.binning._one_read_loops`). As in
:mod:`bigkern.reduce.binning._bin_loops`, each sweeps a chunk's rows once.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numba
import numpy as np

from bigkern.reduce.binning._bin_loops import _add_wide
from bigkern.reduce.row_loops import JIT_OPTIONS

__all__ = ["add_group_counts", "certain_bin_ids", "certain_bin_sums", "group_histogram",
           "group_histograms", "key_histogram", "key_histograms", "select_digits",
           "sparse_histograms"]


@numba.njit(**JIT_OPTIONS)
def _key(b, sign):
    """Order-preserving key of a float's bits; -0.0 and +0.0 share the key of +0.0."""
    if b == sign:  # -0.0: the key of +0.0 (its bits, 0, with the sign bit set)
        return sign
    return ~b if b & sign else b | sign


@numba.njit(inline="always")
def _key_split(bits, width, group_bits):
    """(the sign bit of ``bits``' unsigned type, the shift from a key to its group)."""
    utype = bits.dtype.type
    return utype(1) << utype(width - 1), utype(width - group_bits)


@numba.njit(**JIT_OPTIONS)
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


#: Prefix widths up to this many bits are first looked up in a bitmap of all prefixes
#: (128 KiB at 20 bits): most keys match no prefix and skip the binary search, whose
#: branches are unpredictable, while the bitmap's answer (mostly no) is predictable.
_SCREEN_BITS = 20


@numba.njit(**JIT_OPTIONS)
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
    screen = nbits <= _SCREEN_BITS
    bitmap = np.zeros(((1 << nbits) >> 6) + 1 if screen else 0, dtype=np.uint64)
    if screen:
        for j in range(n_pref):
            p = prefixes[j]
            bitmap[np.intp(p >> np.uint64(6))] |= np.uint64(1) << (p & np.uint64(63))
    out = np.empty(bits.shape[0], dtype=np.uint64)
    m = 0
    for i in range(bits.shape[0]):
        if not valid[i]:
            continue
        key = _key(bits[i, feature], sign)
        high = np.uint64(key >> high_shift)
        if screen and not (bitmap[np.intp(high >> np.uint64(6))]
                           >> (high & np.uint64(63))) & np.uint64(1):
            continue
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


@numba.njit(inline="always")
def _certain_bin(bits, i, sign, shift, tables, n_cells, d) -> np.int64:
    """Bin of row i from its key groups alone, or -1 when a value's group holds an edge.
    ``d`` is a compile-time constant of the calling kernel."""
    b = np.int64(0)
    keep = False
    for f in range(d):
        cell = tables[f, np.intp(_key(bits[i, f], sign) >> shift)]
        keep |= cell == 65535
        b = b * n_cells[f] + np.int64(cell)
    return np.int64(-1) if keep else b


@functools.cache
def _certain_kernels(d: int) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """:func:`certain_bin_ids` and :func:`certain_bin_sums` compiled for ``d`` features (the
    loops over them unrolled, as :func:`_one_read_kernels`)."""

    @numba.njit(**JIT_OPTIONS)
    def ids_kernel(bits, valid, width, group_bits, tables, n_cells):
        n = bits.shape[0]
        sign, shift = _key_split(bits, width, group_bits)
        ids = np.full(n, -1, dtype=np.int64)
        kept = np.zeros(n, dtype=np.bool_)
        for i in range(n):
            if not valid[i]:
                continue
            b = _certain_bin(bits, i, sign, shift, tables, n_cells, d)
            if b < 0:
                kept[i] = True
            else:
                ids[i] = b
        return ids, kept

    @numba.njit(**JIT_OPTIONS)
    def sums_kernel(X, bits, valid, is_positive, width, group_bits, tables, n_cells, down, up,
                    index, bounds, n_possible):
        n = bits.shape[0]
        sign, shift = _key_split(bits, width, group_bits)
        count = np.zeros(n_possible, dtype=np.int64)
        sums = np.zeros((n_possible, index.max() + 1), dtype=np.int64)
        positive = np.zeros(n_possible, dtype=np.int64)
        outside = np.zeros(d, dtype=np.int64)
        extreme = np.full(d, np.nan)
        kept = np.zeros(n, dtype=np.bool_)
        for i in range(n):
            if not valid[i]:
                continue
            b = _certain_bin(bits, i, sign, shift, tables, n_cells, d)
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

    return ids_kernel, sums_kernel


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
    ids_kernel, _ = _certain_kernels(bits.shape[1])
    return ids_kernel(bits, valid, width, group_bits, tables, n_cells)


def certain_bin_sums(
    X: np.ndarray, bits: np.ndarray, valid: np.ndarray, is_positive: np.ndarray, width: int,
    group_bits: int, tables: np.ndarray, n_cells: np.ndarray, down: np.ndarray, up: np.ndarray,
    index: np.ndarray, bounds: np.ndarray, n_possible: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`certain_bin_ids` and :func:`~bigkern.reduce.binning._bin_loops.bin_sums_dense`
    in one sweep.

    Returns the dense per-bin count, fixed-point limb sums, positive count,
    outlier counts and examples (as
    :func:`~bigkern.reduce.binning._bin_loops.bin_sums_dense`) of the rows whose bin is
    certain, and the kept rows.
    """
    _, sums_kernel = _certain_kernels(bits.shape[1])
    return sums_kernel(X, bits, valid, is_positive, width, group_bits, tables, n_cells, down,
                       up, index, bounds, n_possible)


@functools.cache
def _key_histograms_kernel(d: int) -> Callable[..., None]:
    """:func:`key_histograms` compiled for ``d`` features (the loop over them unrolled)."""

    @numba.njit(**JIT_OPTIONS)
    def key_histograms_d(bits, valid, width, group_bits, hist):
        sign, shift = _key_split(bits, width, group_bits)
        for i in range(bits.shape[0]):
            if valid[i]:
                for f in range(d):
                    hist[f, np.intp(_key(bits[i, f], sign) >> shift)] += 1

    return key_histograms_d


def key_histograms(bits: np.ndarray, valid: np.ndarray, width: int, group_bits: int,
                   hist: np.ndarray) -> None:
    """:func:`key_histogram` of every feature in one sweep, added into ``hist`` (d,
    ``2**group_bits``), with the sparse form taken after: one pass over the rows
    rather than one :func:`group_histogram` sweep per feature."""
    _key_histograms_kernel(bits.shape[1])(bits, valid, width, group_bits, hist)


@numba.njit(**JIT_OPTIONS)
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


@numba.njit(**JIT_OPTIONS)
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


#: Up to this many features, a chunk's key-group histograms are counted in one sweep into
#: dense counts (4 MB a feature); beyond, one sweep per feature into a shared table.
_DENSE_FEATURES = 8


def group_histograms(bits: np.ndarray, valid: np.ndarray, width: int, group_bits: int
                     ) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per feature, the occupied key groups (top ``group_bits`` of the keys) of the valid
    rows, increasing, and their counts.

    Up to ``_DENSE_FEATURES`` features, one sweep (:func:`key_histograms`) into dense
    counts, then their nonzero entries; beyond, one :func:`group_histogram` sweep per
    feature, which lists the groups as it first counts them, so that no sweep of all
    ``2**group_bits`` groups is needed.
    """
    d = bits.shape[1]
    if d <= _DENSE_FEATURES:
        dense = np.zeros((d, 1 << group_bits), dtype=np.int32)
        key_histograms(bits, valid, width, group_bits, dense)
        return sparse_histograms(dense)
    hist = np.zeros(1 << group_bits, dtype=np.int32)
    occupied = np.empty(min(len(bits), 1 << group_bits), dtype=np.int32)
    out = []
    for f in range(d):
        m = group_histogram(bits, valid, width, f, group_bits, hist, occupied)
        groups = np.sort(occupied[:m]).astype(np.intp)
        out.append((groups, hist[groups].astype(np.int64)))
        hist[groups] = 0
    return out


def sparse_histograms(hist: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """:func:`group_histograms`' form of dense per-feature counts ``hist`` (d, 2**group_bits)."""
    out = []
    for dense in hist:
        groups = np.flatnonzero(dense)
        out.append((groups, dense[groups].astype(np.int64)))
    return out
