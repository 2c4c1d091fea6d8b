"""The one-read plan's sample: where its windows lie, and the guess it makes.

See :mod:`bigkern.reduce.binning.one_read` for the plan. :class:`OneReadSample` says
how many rows the sample takes and where (:func:`sample_windows`: runs of
consecutive rows at seeded positions that depend on the number of rows only,
never on the chunking); :func:`guess` turns the sample's key-group histograms
into windows of key groups around every order statistic the selection needs,
the cell tables of the groups outside them, and candidate fixed-point scales.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from bigkern.reduce.binning.outliers import histogram_grid
from bigkern.reduce.binning.radix_select import (
    GROUP_BITS,
    KEEP,
    cell_tables,
    float_keys,
    key_dtype,
)
from bigkern.reduce.sampling import uniform_from_index

__all__ = ["Guess", "OneReadSample", "guess", "sample_windows", "summed_limit", "window_tables"]

_N_GROUPS = 1 << GROUP_BITS


@dataclass(frozen=True)
class OneReadSample:
    """How the one-read plan samples the rows.

    Attributes
    ----------
    rows : int
        Rows in the sample windows, together (all the rows when there are
        fewer). The windows' width in key groups, hence the share of rows kept,
        shrinks as ``1/√rows``; the chunks they overlap are held in memory.
    windows : int
        Number of windows of consecutive rows, one per equal stratum of rows.
    z : float
        Half-width of each order statistic's window, in standard deviations of
        its rank in the sample (plus ``z + 1`` ranks): wider windows keep more
        rows but misplace an edge less often.
    seed : int
        Seed of the windows' positions.
    scale_offsets : tuple of int
        Candidate fixed-point scales, relative to the sample's: the sums are
        accumulated at each (0 is the sample's grid, -1 one binade coarser,
        for a maximum the sample did not see).
    """

    rows: int = 1 << 22
    windows: int = 2
    z: float = 4.0
    seed: int = 0
    scale_offsets: tuple[int, ...] = (0, -1)

    def __post_init__(self) -> None:
        if self.rows < 1:
            raise ValueError(f"sample rows must be at least 1; got {self.rows!r}")
        if self.windows < 1:
            raise ValueError(f"sample windows must be at least 1; got {self.windows!r}")
        if not self.z >= 0:
            raise ValueError(f"sample z must be >= 0; got {self.z!r}")
        if not self.scale_offsets:
            raise ValueError("scale_offsets must name at least one candidate scale")


def sample_windows(n_rows: int, sample: OneReadSample) -> list[tuple[int, int]]:
    """Row ranges ``[start, stop)`` of the sample: one per stratum, at a seeded position.

    A function of ``n_rows`` and ``sample`` only, so the sample is the same
    whatever the chunking.
    """
    k = min(sample.windows, max(n_rows, 1))
    bounds = [n_rows * i // k for i in range(k + 1)]
    width = max(1, -(-sample.rows // k))
    u = uniform_from_index(np.arange(k), sample.seed)
    out = []
    for i in range(k):
        lo, hi = bounds[i], bounds[i + 1]
        w = min(width, hi - lo)
        start = lo + int(u[i] * (hi - lo - w + 1))
        if w > 0:
            out.append((start, start + w))
    return out


def window_mask(ranges: np.ndarray) -> np.ndarray:
    """Per feature, whether each key group lies in one of its windows ``ranges`` (d, k, 2)."""
    keep = np.zeros((len(ranges), _N_GROUPS), dtype=bool)
    for f, r in enumerate(ranges):
        for a, b in r:
            keep[f, a:b + 1] = True
    return keep


def summed_limit(scales: np.ndarray) -> np.ndarray:
    """Per feature, the magnitude ``2**(31 − s)`` at the finest candidate scale ``s``: a value
    of it or beyond would not fit one int32-sized limb there, so its row is kept.

    ``scales`` (candidates, d) as :attr:`Guess.scales`.
    """
    with np.errstate(over="ignore"):
        return np.ldexp(1.0, 31 - np.asarray(scales).max(axis=0))


def window_tables(upper: np.ndarray, ranges: np.ndarray, limit: np.ndarray, dtype: np.dtype
                  ) -> np.ndarray:
    """:func:`~bigkern.reduce.binning.radix_select.cell_tables` of the windows (on a worker).

    Besides the windows' groups, every group holding a value of magnitude
    ``limit[f]`` (:func:`summed_limit`) or more is ``KEEP``: groups start at
    binade boundaries, so this keeps exactly the rows with ``|x| ≥ limit``
    (conservatively more, should a limit fall inside a group), and the sweep
    need not compare the values themselves.
    """
    tables = cell_tables(upper, [np.zeros(0, dtype=np.intp)] * len(upper))
    for f, r in enumerate(ranges):
        for a, b in r:
            tables[f, a:b + 1] = KEEP
    _, width = key_dtype(dtype)
    with np.errstate(over="ignore"):
        ends = np.asarray(limit, dtype=np.float64).astype(dtype)
    for f, end in enumerate(ends):
        if np.isfinite(end):  # else no finite value of the dtype reaches the limit
            positive, negative = (float_keys(np.array([end, -end], dtype=dtype))
                                  >> (width - GROUP_BITS)).astype(np.intp)
            tables[f, positive:] = KEEP
            tables[f, :negative + 1] = KEEP
    return tables


@dataclass
class Guess:
    """What the sample predicts: windows of key groups, their cells, candidate scales."""

    ranges: np.ndarray  # (d, k, 2): per feature, the windows [first, last] of key groups
    keep: np.ndarray  # (d, 2**GROUP_BITS) bool: groups whose rows wait for the exact edges
    upper: np.ndarray  # (d, n_edges): per edge, the top group of its window
    scales: np.ndarray  # (n_candidates, d) candidate fixed-point scales
    kept_estimate: float  # share of the sample's rows with a value in a kept group (bound)


def guess(hist: Sequence[tuple[np.ndarray, np.ndarray]], probs: np.ndarray, where: np.ndarray,
           dtype: np.dtype, sample: OneReadSample, share: float) -> Guess:
    """Windows, cell tables' inputs and candidate scales from the sample's histograms.

    ``share`` is the sample's share of the rows (the finite-population
    correction of the ranks' spread: a sample of every row places every
    order statistic exactly).
    """
    d = len(hist)
    p = np.concatenate([[0.0], probs, [1.0]])
    ranges = np.empty((d, len(p), 2), dtype=np.int64)
    upper = np.empty((d, len(where)), dtype=np.int64)
    for f, (groups, cnt) in enumerate(hist):
        m = int(cnt.sum())
        cum = np.cumsum(cnt)
        r = p * (m - 1)
        half = sample.z * np.sqrt(m * p * (1 - p) * max(0.0, 1.0 - share)) + sample.z + 1
        lo = np.floor(r - half).astype(np.int64)
        hi = np.ceil(r + half).astype(np.int64) + 1  # the upper rank of a split point: +1
        a = np.where(lo <= 0, 0, groups[np.searchsorted(cum, np.clip(lo, 0, m - 1), "right")])
        b = np.where(hi >= m - 1, _N_GROUPS - 1,
                     groups[np.searchsorted(cum, np.clip(hi, 0, m - 1), "right")])
        ranges[f] = np.stack([a, b], axis=1)
        upper[f] = b[1:-1][where]
    keep = window_mask(ranges)
    estimate = sum(float(cnt[keep[f, groups]].sum()) / cnt.sum()
                   for f, (groups, cnt) in enumerate(hist))
    grid = histogram_grid(hist, dtype)
    scales = grid.scales[None, :] + np.asarray(sample.scale_offsets, dtype=np.int64)[:, None]
    return Guess(ranges, keep, upper, scales, estimate)
