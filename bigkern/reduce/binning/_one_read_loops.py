"""Compiled sweeps of the one-read binning plan (numba): histograms, guessed bins, sums.

One sweep over a chunk's rows counts the key-group histograms of every feature,
gives each row its bin from the sample's guessed cell tables (or keeps it) and
sums the certain rows at each candidate fixed-point scale
(:mod:`bigkern.reduce.binning.one_read`). Compiled once per number of features,
so that the loops over the features unroll.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numba
import numpy as np

from bigkern.reduce.binning._key_loops import _key, _key_split
from bigkern.reduce.row_loops import JIT_OPTIONS

__all__ = ["one_read_ids", "one_read_sums"]


@numba.njit(inline="always")  # inlined by numba: a call per value costs the sweep dearly
def _counted_guessed_bin(bits, i, sign, shift, tables, n_cells, hist, d) -> np.int64:
    """Bin of row i by the guessed tables, counting its key groups into ``hist``; -1 when
    a value's group is kept. ``d`` is a compile-time constant of the calling kernel."""
    b = np.int64(0)
    keep = False
    for f in range(d):
        g = np.intp(_key(bits[i, f], sign) >> shift)
        hist[f, g] += 1
        cell = tables[f, g]
        keep |= cell == 65535
        b = b * n_cells[f] + np.int64(cell)
    return np.int64(-1) if keep else b


@functools.cache
def _one_read_kernels(d: int) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """:func:`one_read_sums` and :func:`one_read_ids` compiled for ``d`` features.

    Loops over the features of known length are unrolled into straight-line code per
    row, rather than run to a length read from the array's shape. numba caches each
    ``d``'s kernels on disk (the closure's ``d`` is part of the cache key).
    """

    @numba.njit(**JIT_OPTIONS)
    def sums_kernel(X, bits, valid, is_positive, width, group_bits, tables, n_cells, down,
                    n_possible, hist):
        n = bits.shape[0]
        n_grids = down.shape[0]
        sign, shift = _key_split(bits, width, group_bits)
        count = np.zeros(n_possible, dtype=np.int64)
        sums = np.zeros((n_possible, n_grids * d), dtype=np.int64)
        positive = np.zeros(n_possible, dtype=np.int64)
        kept = np.empty(n, dtype=np.int64)
        n_kept = 0
        for i in range(n):
            if not valid[i]:
                continue
            b = _counted_guessed_bin(bits, i, sign, shift, tables, n_cells, hist, d)
            if b < 0:
                kept[n_kept] = i
                n_kept += 1
                continue
            count[b] += 1
            positive[b] += is_positive[i]
            for c in range(n_grids):
                for f in range(d):
                    sums[b, c * d + f] += np.int64(np.rint(np.float64(X[i, f]) * down[c, f]))
        return count, sums, positive, kept[:n_kept]

    @numba.njit(**JIT_OPTIONS)
    def ids_kernel(bits, valid, width, group_bits, tables, n_cells, hist):
        n = bits.shape[0]
        sign, shift = _key_split(bits, width, group_bits)
        ids = np.full(n, -1, dtype=np.int64)
        kept = np.empty(n, dtype=np.int64)
        n_kept = 0
        for i in range(n):
            if not valid[i]:
                continue
            b = _counted_guessed_bin(bits, i, sign, shift, tables, n_cells, hist, d)
            if b < 0:
                kept[n_kept] = i
                n_kept += 1
            else:
                ids[i] = b
        return ids, kept[:n_kept]

    return sums_kernel, ids_kernel


def one_read_sums(
    X: np.ndarray, bits: np.ndarray, valid: np.ndarray, is_positive: np.ndarray, width: int,
    group_bits: int, tables: np.ndarray, n_cells: np.ndarray, down: np.ndarray,
    n_possible: int, hist: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The one-read plan's sweep of a chunk: key-group histograms, certain bins summed at
    several fixed-point grids at once, and the kept rows.

    Every valid row adds 1 to ``hist[f, g]`` (zeros on entry, shape ``(d,
    2**group_bits)``) for the key group ``g`` of each of its values. A valid
    row is *kept* (its index returned in ``kept``, increasing) when a value's
    key group is ``KEEP`` (65535) in the guessed ``tables`` (as
    :func:`~bigkern.reduce.binning._key_loops.certain_bin_ids`); every other row
    adds 1 to ``count[b]``, its flag to ``positive[b]`` and, for each candidate grid
    ``c`` (a row of ``down``: ``2**s_cf``), ``rint(x · down[c, f])`` to
    ``sums[b, c·d + f]``. The
    tables must keep every group whose values could reach ``2**31`` at a
    candidate grid (:func:`~bigkern.reduce.binning.one_read_sample.window_tables`
    does), so one int64 limb holds each such integer.
    """
    sums_kernel, _ = _one_read_kernels(bits.shape[1])
    return sums_kernel(X, bits, valid, is_positive, width, group_bits, tables, n_cells, down,
                       n_possible, hist)


def one_read_ids(
    bits: np.ndarray, valid: np.ndarray, width: int, group_bits: int, tables: np.ndarray,
    n_cells: np.ndarray, hist: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`one_read_sums` without the sums: histograms, certain bin ids (-1 elsewhere)
    and the kept rows' indices.

    For many possible bins, whose sums are accumulated sparsely afterwards.
    """
    _, ids_kernel = _one_read_kernels(bits.shape[1])
    return ids_kernel(bits, valid, width, group_bits, tables, n_cells, hist)
