"""Robust per-feature scales, the fixed-point grid they give, and outlier reports.

A value is an *outlier* of its feature when it lies more than
:data:`OUTLIER_SIGMAS` robust σ from the median, with the median and σ of
:func:`robust_scaler` (σ from the exact 10% and 90% quantiles). Outliers do
not set the fixed-point grid of the binning sums (see
:mod:`bigkern.reduce.binning.fixed_point`), so one wild value cannot coarsen every
other bin's center; they are still summed exactly, counted and reported
with an :class:`OutlierWarning`.

Everything here is a function of chunking-independent quantities: the exact
quantile summary, or the first pass's histogram of the top 20 bits of the
order-preserving keys (:mod:`bigkern.reduce.binning.radix_select`).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import xarray as xr

from bigkern.errors import BigkernWarning
from bigkern.features.scaling import ROBUST_QUANTILES, robust_scale
from bigkern.reduce.binning._key_loops import sparse_histograms
from bigkern.reduce.binning.fixed_point import FixedPointGrid
from bigkern.reduce.binning.radix_select import GROUP_BITS, key_dtype, keys_to_floats

__all__ = ["OUTLIER_SIGMAS", "OutlierWarning", "extreme_examples", "histogram_grid",
           "histogram_outliers", "outlier_limits", "quantile_scaler", "record_outliers",
           "robust_scaler", "summary_grid", "warn_outliers"]

#: Distance from the median, in robust σ, beyond which a value is an outlier.
OUTLIER_SIGMAS = 1000.0
#: Per-feature key-group histograms: dense (feature, 2**GROUP_BITS), or one sparse
#: ``(groups, counts)`` pair per feature.
Histograms = np.ndarray | Sequence[tuple[np.ndarray, np.ndarray]]


class OutlierWarning(BigkernWarning):
    """A feature has values far outside its robust scale (binned exactly, but suspicious)."""


def robust_scaler(summary: xr.Dataset, *, by_span: bool = False
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Per-feature offset (median) and scale (robust σ from the 10% and 90% quantiles).

    Exact and deterministic, because they come from exact quantiles; robust to
    the heavy tails of features such as SD. Where the 10% and 90% quantiles
    coincide the scale is 1, or with ``by_span`` (the scale the binned models
    standardize with, as the reduced models do) the feature's exact range
    ``(max − min) / (2 z₉₀)`` (:func:`~bigkern.features.scaling.robust_scale`).
    The outlier check keeps 1: its scale must not come from the extremes it checks.
    """
    q = summary["edges"].transpose("feature", "quantile")
    ends = (summary["min"].values, summary["max"].values) if by_span else (None, None)
    return quantile_scaler(q.values, q["quantile"].values, *ends)


def quantile_scaler(edges: np.ndarray, probs: np.ndarray, vmin: np.ndarray | None = None,
                    vmax: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`robust_scaler` of a quantile summary's arrays, with no Dataset.

    ``edges`` (feature, quantile) at the probabilities ``probs``, which must
    hold each of the 10%, 50% and 90% exactly; with ``vmin`` and ``vmax``
    (each feature's minimum and maximum) the scale is ``by_span``'s.

    Examples
    --------
    >>> import numpy as np
    >>> offset, scale = quantile_scaler(np.array([[0.0, 1.0, 2.0]]), np.array([0.1, 0.5, 0.9]))
    >>> offset.tolist(), bool(np.isclose(scale[0], 1 / 1.2816, rtol=1e-4))
    ([1.0], True)
    """
    where = []
    for p in ROBUST_QUANTILES:
        at = np.flatnonzero(probs == p)
        if not len(at):
            raise KeyError(f"the quantiles {probs.tolist()} lack {p}")
        where.append(int(at[0]))
    span = (None if vmin is None or vmax is None
            else np.asarray(vmax).astype(np.float64) - np.asarray(vmin))
    return robust_scale(*(edges[:, i] for i in where), span=span)


def outlier_limits(offset: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """``[median − K σ, median + K σ]`` per feature (d, 2), ``K`` = :data:`OUTLIER_SIGMAS`."""
    with np.errstate(over="ignore"):
        half = OUTLIER_SIGMAS * np.asarray(scale, dtype=np.float64)
    offset = np.asarray(offset, dtype=np.float64)
    return np.stack([offset - half, offset + half], axis=1)


def _group_bounds(groups: np.ndarray, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """Smallest and largest value (float64) of each key group."""
    ukind, width = key_dtype(dtype)
    shift = width - GROUP_BITS
    first = keys_to_floats(groups.astype(ukind) << ukind(shift), dtype)
    # the last key sets the first's low bits, which the float's bits have clear (a key with
    # the sign bit) or set (flipped): they flip either way
    last = (first.view(ukind) ^ ukind((1 << shift) - 1)).view(first.dtype)
    return first.astype(np.float64), last.astype(np.float64)


def _occupied_groups(hist: Histograms) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per feature, the occupied key groups (increasing) and their counts."""
    if isinstance(hist, np.ndarray):
        return sparse_histograms(hist)
    out = []
    for groups, counts in hist:
        groups, counts = np.asarray(groups, dtype=np.intp), np.asarray(counts, dtype=np.int64)
        occupied = counts > 0
        out.append((groups, counts) if occupied.all() else (groups[occupied], counts[occupied]))
    return out


def histogram_grid(hist: Histograms, dtype: np.dtype) -> FixedPointGrid:
    """The fixed-point grid of the first pass's key histograms (feature, 2**20).

    ``hist`` is dense, or per feature the sparse ``(groups, counts)`` of the
    occupied groups in increasing order (the first pass's own form; the
    in-memory path never builds a 2**20 table); both give the same grid.

    The median and σ are those of :func:`robust_scaler` computed from the
    smallest value of the key groups holding the 10%, 50% and 90% ranks
    (within 2**-11 relative of the exact quantiles for float32, 2**-8 for
    float64); the grid's bound is the
    largest ``|x|`` of the groups that reach into ``median ± K σ``, and the
    number of limbs follows from the largest ``|x|`` of all. Without
    outliers the bound is ``max|x|`` (up to its binade, which is all the
    grid depends on).
    """
    rows = _occupied_groups(hist)
    d = len(rows)
    bound = np.zeros(d)
    absmax = np.zeros(d)
    for f, (groups, group_counts) in enumerate(rows):
        if not len(groups):
            continue
        cum = np.cumsum(group_counts)
        first, last = _group_bounds(groups, dtype)
        ranks = np.floor((cum[-1] - 1) * np.asarray(ROBUST_QUANTILES)).astype(np.int64)
        q = first[np.searchsorted(cum, ranks, side="right")]
        (lo, hi), = outlier_limits(*robust_scale(q[:1], q[1:2], q[2:]))
        magnitude = np.maximum(np.abs(first), np.abs(last))
        inside = (last >= lo) & (first <= hi)
        absmax[f] = magnitude.max()
        bound[f] = magnitude[inside].max(initial=0.0)
    return FixedPointGrid.make(bound, absmax)


def histogram_outliers(hist: Histograms, dtype: np.dtype, limits: np.ndarray) -> np.ndarray:
    """Number of values per feature whose whole key group lies outside ``limits`` (d, 2).

    ``hist`` as for :func:`histogram_grid`. A value within 2**-11 (float32;
    2**-8 for float64) relative of a limit may share its key group with
    values on the other side, and then is not counted.
    """
    rows = _occupied_groups(hist)
    counts = np.zeros(len(rows), dtype=np.int64)
    for f, (groups, group_counts) in enumerate(rows):
        first, last = _group_bounds(groups, dtype)
        beyond = (first > limits[f, 1]) | (last < limits[f, 0])
        counts[f] = int(group_counts[beyond].sum())
    return counts


def extreme_examples(vmin: np.ndarray, vmax: np.ndarray, limits: np.ndarray) -> np.ndarray:
    """Per feature, the one of ``vmin``/``vmax`` farthest outside ``limits`` (NaN if neither is)."""
    below = np.where(vmin < limits[:, 0], limits[:, 0] - vmin, -np.inf)
    above = np.where(vmax > limits[:, 1], vmax - limits[:, 1], -np.inf)
    return np.where(np.isinf(below) & np.isinf(above), np.nan,
                    np.where(above >= below, vmax, vmin))


def summary_grid(summary: xr.Dataset) -> FixedPointGrid | None:
    """The grid of a :func:`~bigkern.reduce.quantile_summary` (``None`` without ``min``/``max``).

    With the 10%, 50% and 90% quantiles the bound is ``max|x|`` of the range
    clipped to the outlier limits, and the pass counts the values outside
    them; otherwise the bound is ``max|x|``.
    """
    if "min" not in summary or "max" not in summary:
        return None
    vmin = summary["min"].values.astype(np.float64)
    vmax = summary["max"].values.astype(np.float64)
    absmax = np.maximum(np.abs(vmin), np.abs(vmax))
    if not set(ROBUST_QUANTILES) <= set(summary["quantile"].values.tolist()):
        return FixedPointGrid.make(absmax, absmax)
    limits = outlier_limits(*robust_scaler(summary))
    bound = np.maximum(np.abs(np.clip(vmin, limits[:, 0], limits[:, 1])),
                       np.abs(np.clip(vmax, limits[:, 0], limits[:, 1])))
    return FixedPointGrid.make(bound, absmax, limits)


def record_outliers(
    ds: xr.Dataset, counts: np.ndarray, examples: np.ndarray, limits: np.ndarray,
    names: Sequence[str], *, stacklevel: int = 3,
) -> None:
    """Put the outlier counts in ``ds`` and warn once per feature that has any.

    Adds the variable ``outliers (feature)`` and the attr ``n_outliers`` (their
    total); the warning names the feature, the count, the limits and the most
    extreme value.
    """
    counts = np.asarray(counts, dtype=np.int64)
    ds["outliers"] = ("feature", counts)
    ds.attrs["n_outliers"] = int(counts.sum())
    warn_outliers(counts, examples, limits, names, stacklevel=stacklevel + 1)


def warn_outliers(
    counts: np.ndarray, examples: np.ndarray, limits: np.ndarray, names: Sequence[str], *,
    stacklevel: int = 3,
) -> None:
    """The :class:`OutlierWarning` of :func:`record_outliers`, once per feature with any."""
    for f in np.flatnonzero(counts):
        warnings.warn(
            f"feature {names[f]!r} has {counts[f]} value(s) more than {OUTLIER_SIGMAS:g} robust "
            f"σ from its median (outside [{limits[f, 0]:.6g}, {limits[f, 1]:.6g}]), e.g. "
            f"{float(examples[f])!r}; they are binned exactly but dominate their bins: "
            "check for fill values or sensor faults",
            OutlierWarning, stacklevel=stacklevel,
        )
