"""Exact, order-independent per-bin sums: a robust fixed-point grid and multi-limb integers.

Percentile binning rounds every value ``x`` of feature ``f`` to the grid
``2**-s_f`` and sums the integers ``rint(x · 2**s_f)``; integer sums are exact
and associative, so bin centers are bit-for-bit the same whatever the
chunking and the number of workers.

The grid comes from a *robust* bound ``B_f`` of ``|x|`` (the largest value
that is not an outlier, see :mod:`bigkern.reduce.binning.outliers`):
``|x| <= B_f`` gives ``|x · 2**s_f| < 2**30``. One value far beyond ``B_f``
(say ``1e12``) leaves the grid, hence every other bin's center, unchanged:
its integer is split into base-``2**32`` *limbs* (``L_f`` int64 columns per
feature instead of one), each limb summed on its own. Splitting a float
into base-``2**32`` digits by ``floor`` and subtraction of exact powers of
two is exact. Partials carry normalized limbs (carries moved up with an
arithmetic shift, so every limb but the top one lies in ``[0, 2**32)``), so
no limb overflows in a reduction tree of any size. ``L_f = 1`` for ordinary
data, which then cost what a single int64 sum costs.

A bin's center is the exact integer sum times ``2**-s_f`` divided by the
count, rounded once to float64 (Python integers where int64 falls short).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

__all__ = ["FixedPointGrid", "exact_means", "fixed_point_scales", "normalize_limbs"]

FIXED_BITS = 30  # |x| <= B gives |x| · 2**scale < 2**30
LIMB_BITS = 32  # base of the limbs
_TOP_BITS = 31  # per-value bits of a top limb: 2**32 values per bin before int64 overflows
_MAX_SCALE = 1000  # 2**scale and the limbs' powers stay finite float64 numbers
_EXACT_FLOAT = 1 << 53  # int64 sums beyond this are divided exactly, with Python integers


def fixed_point_scales(absmax: np.ndarray) -> np.ndarray:
    """Per-feature power-of-two scale ``s`` with ``|x| · 2**s < 2**30`` for ``|x| <= absmax``.

    Depends only on the binade of ``absmax`` (``absmax = m · 2**e``, ``0.5 <= m < 1``
    gives ``s = 30 − e``), so any upper bound of ``max|x|`` in the same binade
    gives the same grid.
    """
    absmax = np.asarray(absmax, dtype=np.float64)
    _, exps = np.frexp(absmax)
    return np.where(absmax > 0, FIXED_BITS - exps, 0).astype(np.int64)


@dataclass(frozen=True)
class FixedPointGrid:
    """Per-feature fixed-point grid, limb count and outlier limits of a binning pass.

    Attributes
    ----------
    scales : ndarray of int64, shape (d,)
        Values are summed as ``rint(x · 2**scales)``.
    limbs : ndarray of int64, shape (d,)
        Base-``2**32`` limbs (int64 columns of the partial sums) per feature.
    limits : ndarray of float64, shape (d, 2)
        Values outside ``[limits[f, 0], limits[f, 1]]`` are counted (with the
        most extreme one) as outliers by the pass; ``±inf`` counts none.
    """

    scales: np.ndarray
    limbs: np.ndarray
    limits: np.ndarray

    @classmethod
    def make(
        cls, bound: np.ndarray, absmax: np.ndarray, limits: np.ndarray | None = None
    ) -> FixedPointGrid:
        """The grid of robust bound ``bound`` with enough limbs for values up to ``absmax``.

        Parameters
        ----------
        bound : array-like, shape (d,)
            Robust bound of ``|x|`` per feature: it sets the grid. Any value in
            its binade gives the same grid; 0 (every value that is not an
            outlier is 0) falls back to ``absmax``.
        absmax : array-like, shape (d,)
            ``max|x|`` per feature (or an upper bound in its binade): it sets
            the number of limbs.
        limits : array-like, shape (d, 2), optional
            Outlier limits (see the class); by default none are counted.
        """
        absmax = np.asarray(absmax, dtype=np.float64)
        bound = np.asarray(bound, dtype=np.float64)
        bound = np.where(bound > 0, bound, absmax)
        absmax = np.maximum(absmax, bound)
        scales = np.minimum(fixed_point_scales(bound), _MAX_SCALE)
        _, exps = np.frexp(absmax)
        top_bits = np.where(absmax > 0, exps + scales, 0)  # |x · 2**s| < 2**top_bits
        extra = np.maximum(top_bits - _TOP_BITS, 0)
        limbs = 1 + (extra + LIMB_BITS - 1) // LIMB_BITS
        if limits is None:
            limits = np.tile([-np.inf, np.inf], (len(bound), 1))
        return cls(scales.astype(np.int64), limbs.astype(np.int64),
                   np.asarray(limits, dtype=np.float64).reshape(len(bound), 2))

    @property
    def limb_index(self) -> np.ndarray:
        """Column of limb ``k`` of feature ``f`` in the sums (d, max limbs); -1 past ``limbs[f]``.

        Column ``f`` holds feature ``f``'s first (least significant) limb, as in
        a plain one-column-per-feature layout; the higher limbs follow, feature
        by feature, after column ``d − 1``.
        """
        d = len(self.limbs)
        index = np.full((d, int(self.limbs.max(initial=1))), -1, dtype=np.int64)
        index[:, 0] = np.arange(d)
        start = d
        for f in range(d):
            extra = int(self.limbs[f]) - 1
            index[f, 1 : 1 + extra] = np.arange(start, start + extra)
            start += extra
        return index

    def kernel_args(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(down, up, limb_index, bounds)`` for the bin-sum kernels.

        ``down[f, k] = 2**(s_f − 32k)`` (which takes a value to limb ``k``'s
        units) and ``up[f, k] = 2**(32k − s_f)`` (its inverse), for
        ``k < max(limbs)``; both are exact powers of two. ``bounds[f]`` is
        ``(fast_lo, fast_hi, limit_lo, limit_hi)``: values in
        ``[fast_lo, fast_hi]`` are inside the outlier limits and have
        ``|x · 2**s_f| < 2**31``, so they go straight to the first limb.
        """
        k = np.arange(int(self.limbs.max(initial=1)))
        exps = self.scales[:, None] - LIMB_BITS * k[None, :]
        with np.errstate(over="ignore", under="ignore"):
            down = np.ldexp(1.0, exps)
            up = np.ldexp(1.0, -exps)
            reach = np.nextafter(np.ldexp(1.0, _TOP_BITS - self.scales), 0.0)
        bounds = np.stack([np.maximum(self.limits[:, 0], -reach),
                           np.minimum(self.limits[:, 1], reach),
                           self.limits[:, 0], self.limits[:, 1]], axis=1)
        return down, up, self.limb_index, bounds


def _limb_columns(index: np.ndarray, f: int) -> np.ndarray:
    return index[f][index[f] >= 0]


def normalize_limbs(sums: np.ndarray, index: np.ndarray) -> np.ndarray:
    """Move carries up in place so that every limb but each feature's top one is in [0, 2**32).

    ``index`` is :attr:`FixedPointGrid.limb_index`. The integer each
    feature's limbs stand for is unchanged; the normalized form is unique, so
    equal sums have equal limbs.
    """
    if index.shape[1] == 1 or not len(sums):
        return sums
    for f in range(index.shape[0]):
        cols = _limb_columns(index, f)
        for lo, hi in itertools.pairwise(cols):
            carry = sums[:, lo] >> LIMB_BITS
            sums[:, lo] -= carry << LIMB_BITS
            sums[:, hi] += carry
    return sums


def exact_means(sums: np.ndarray, n: np.ndarray, grid: FixedPointGrid) -> np.ndarray:
    """Per-bin means ``sum · 2**-s / n`` (m, d) of normalized limb sums (m, Σ limbs).

    A sum below ``2**53`` in magnitude is divided in float64 (one rounding);
    a larger one with Python integers (one rounding too). The choice depends
    on the sum alone, not on the number of limbs, so a bin's center does not
    depend on the other bins' values.
    """
    m, d = len(n), len(grid.scales)
    index = grid.limb_index
    out = np.empty((m, d))
    for f in range(d):
        cols = _limb_columns(index, f)
        lo = sums[:, f]
        small = np.ones(m, dtype=bool)
        if len(cols) > 1:
            hi = sums[:, cols[1]]
            small = (np.abs(hi) < (1 << 20)) & ~np.any(sums[:, cols[2:]], axis=1)
            lo = lo + np.where(small, hi, 0) * (1 << LIMB_BITS)
        small &= np.abs(lo) < _EXACT_FLOAT
        out[:, f] = (lo.astype(np.float64) / n) * np.exp2(-float(grid.scales[f]))
        s = int(grid.scales[f])
        for i in np.flatnonzero(~small):
            total = sum(int(sums[i, c]) << (LIMB_BITS * k) for k, c in enumerate(cols))
            if s >= 0:
                out[i, f] = total / (int(n[i]) << s)
            else:
                out[i, f] = (total << -s) / int(n[i])
    return out
