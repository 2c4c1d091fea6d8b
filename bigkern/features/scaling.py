"""The one robust scale of bigkern: median and σ from the 10 % and 90 % quantiles.

Every model that standardizes its features, and the outlier check of the
binning, use ``offset = q50`` and ``σ = (q90 − q10) / (2 z₉₀)`` per feature,
where ``z₉₀`` is the standard normal's 90 % quantile: σ is the standard
deviation for normal data and unmoved by heavy tails such as SD's.

Where q10 = q90 (over 80 % of a feature's values at one value: a rare category's
one-hot column, a spike at zero) the models take σ = (max − min) / (2 z₉₀)
instead, which is what the quantiles give a two-valued feature whose rarer value
is more common than 10 %: every 0/1 column is scaled alike, whatever its
frequency, and such a feature's values stay within ±2 z₉₀ ≈ ±2.56 of its median.
(With σ = 1 instead, a 0/1 column whose rarer value falls under 10 % would weigh
2 z₉₀ times less in the kernel than one whose rarer value is more common: a
category's weight would hang on its frequency.) The binned models take the same σ
from the exact range; the binning's outlier check keeps σ = 1 there: its scale must
not come from the extremes it checks. A constant feature's σ is 1.

The Gaussian-kernel models (reduced SVMs, Nyström) then clip the standardized
values to ``±CLIP_SCALED`` (5 robust σ): a heavy-tailed feature whose robust σ is
a small part of its spread would otherwise reach hundreds of σ and decide every
kernel distance alone. The benchmark pages compare this default with plain robust
scaling, z-scores and a quantile transform on the project's data sets.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["CLIP_SCALED", "FAR_SCALED", "ROBUST_QUANTILES", "SCALE_SAMPLE_ROWS",
           "SQUASHED_SCALED", "Z90", "far_features", "robust_scale", "robust_standardizer",
           "squashed_features", "standardized"]

#: The standard normal's 90 % quantile.
Z90 = 1.2815515655446004
#: The quantiles the scale is made of, in the order :func:`robust_scale` takes them.
ROBUST_QUANTILES = (0.1, 0.5, 0.9)
#: Rows of the uniform sample the reduced-kernel models take their robust scale from (all
#: usable rows when fewer), drawn in the read that draws Ã: the 10 % and 90 % quantiles of
#: 2,000 normal values have a standard error of 0.04 σ.
SCALE_SAMPLE_ROWS = 2000
#: The Gaussian-kernel models clip robustly standardized values to ± this many robust σ
#: (normal data reaches beyond ±5 σ once in 1.7 million values).
CLIP_SCALED = 5.0
#: Standardized values beyond ± this many robust σ: before clipping, such a feature's
#: differences would outweigh every other feature's in a Gaussian kernel's distances; clipped,
#: its tail collapses onto ±CLIP_SCALED (normal data stays within ±6).
FAR_SCALED = 20.0
#: A feature scaled by its range (q10 = q90) whose values away from its median lie, in
#: the median, within this many σ of it: a few far values set the range, and the rest
#: weigh next to nothing in a kernel's distances. (A 0/1 column's lie at 2 z₉₀ ≈ 2.56;
#: a mostly-zero feature's whose other values spread evenly over its range, at
#: z₉₀ ≈ 1.28; this bound is far below both.)
SQUASHED_SCALED = 0.1


def robust_scale(q10: Any, q50: Any, q90: Any, span: Any = None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Offset and scale (float64, per feature) from each feature's 10, 50 and 90 % quantiles.

    Parameters
    ----------
    q10, q50, q90 : array-like of shape (d,)
        Each feature's 10, 50 and 90 % quantiles.
    span : array-like of shape (d,), optional
        Each feature's range, max − min. Where ``q10 == q90`` the scale is then
        ``span / (2 Z90)`` (the scale a two-valued feature gets from its quantiles
        when its rarer value is more common than 10 %); without it, or where the span
        is 0 (or overflows) too, it is 1.

    Examples
    --------
    >>> robust_scale([0.0, 1.0], [1.0, 1.0], [2 * Z90, 1.0])
    (array([1., 1.]), array([1., 1.]))

    A one-hot column whose category is rare (q10 = q50 = q90 = 0) is scaled as one
    whose category is common:

    >>> robust_scale([0.0, 0.0], [0.0, 0.0], [0.0, 1.0], span=[1.0, 1.0])[1].round(3)
    array([0.39, 0.39])
    """
    spread = (np.asarray(q90, dtype=np.float64) - q10) / (2 * Z90)
    fallback = 1.0
    if span is not None:
        wide = np.asarray(span, dtype=np.float64) / (2 * Z90)
        fallback = np.where(np.isfinite(wide) & (wide > 0), wide, 1.0)
    scale = np.where(spread > 0, spread, fallback)
    return np.asarray(q50, dtype=np.float64), scale.astype(np.float64)


def robust_standardizer(rows: Any) -> tuple[np.ndarray, np.ndarray]:
    """:func:`robust_scale` of the columns of ``rows`` (n, d), quantiles and range computed here.

    Examples
    --------
    >>> offset, scale = robust_standardizer(np.arange(11.0)[:, None])
    >>> offset, np.round(scale, 4)
    (array([5.]), array([3.1212]))

    A feature at one value in over 80 % of the rows is scaled by its range:

    >>> spike = np.r_[np.zeros(19), 5.126][:, None]
    >>> robust_standardizer(spike)[1].round(3)
    array([2.])
    """
    low, q10, q50, q90, high = np.quantile(np.asarray(rows, dtype=np.float64),
                                           (0.0, *ROBUST_QUANTILES, 1.0), axis=0)
    return robust_scale(q10, q50, q90, span=high - low)


def standardized(X: Any, offset: Any, scale: Any, clip: float = math.inf) -> np.ndarray:
    """``clip((X − offset) / scale, −clip, clip)`` in float64, per feature (NaN stays NaN).

    The numpy form of the standardization every Gaussian kernel of bigkern applies to raw
    rows; the compiled kernels (:mod:`bigkern.kernels.fused_loops`) do the same per value.

    Examples
    --------
    >>> standardized([[1.0, 30.0], [3.0, -2.0]], [1.0, 0.0], [2.0, 1.0], clip=5.0).tolist()
    [[0.0, 5.0], [1.0, -2.0]]
    """
    Z = (np.asarray(X, dtype=np.float64) - offset) / scale
    if math.isfinite(clip):
        np.clip(Z, -clip, clip, out=Z)
    return Z


def far_features(z: Any, names: Any = None, limit: float = FAR_SCALED) -> list[str]:
    """The features of standardized rows ``z`` (n, d) whose values reach beyond ``±limit``.

    Each is described by its name and range, e.g. ``"SD (-0.7 … 780)"``: a feature whose
    robust σ is a small part of its spread (heavy tails) decides a Gaussian kernel's
    distances alone.

    Examples
    --------
    >>> z = np.array([[0.0, 1.0], [1.5, 95.0], [-2.0, -0.5]])
    >>> far_features(z, ["NDAI", "SD"])
    ['SD (-0.5 … 95)']
    """
    z = np.asarray(z, dtype=np.float64)
    if z.size == 0:
        return []
    low, high = np.nanmin(z, axis=0), np.nanmax(z, axis=0)
    names = [f"f{j}" for j in range(z.shape[1])] if names is None else [str(n) for n in names]
    return [f"{names[j]} ({low[j]:.3g} … {high[j]:.3g})" for j in range(z.shape[1])
            if max(-low[j], high[j]) > limit]


def squashed_features(rows: Any, offset: Any, scale: Any, names: Any = None,
                      limit: float = SQUASHED_SCALED) -> list[str]:
    """The features of ``rows`` (n, d) that took their σ from their range and are squashed.

    A feature whose 10 % and 90 % quantiles coincide is scaled by its range
    (:func:`robust_scale`); when its values away from the median then lie, in the median,
    within ``±limit`` σ of it, a few far values (a heavy tail, a wild value) set that
    range and the feature hardly counts in a Gaussian kernel. Each is described by its
    name, that median and its largest distance, in σ.

    Examples
    --------
    >>> rain = np.r_[np.zeros(95), np.full(4, 2.0), 900.0][:, None]  # one wild value
    >>> offset, scale = robust_standardizer(rain)
    >>> squashed_features(rain, offset, scale, ["rain"])
    ['rain (0.0057 … 2.56 σ from 0)']
    >>> hot = np.r_[np.zeros(95), np.ones(5)][:, None]  # a rare category: not squashed
    >>> squashed_features(hot, *robust_standardizer(hot))
    []
    """
    rows = np.asarray(rows, dtype=np.float64)
    if rows.size == 0:
        return []
    offset = np.asarray(offset, dtype=np.float64)
    scale = np.asarray(scale, dtype=np.float64)
    names = [f"f{j}" for j in range(rows.shape[1])] if names is None else [str(n) for n in names]
    found = []
    # q10 = q90 needs about 80 % of the values at the median: a cheap test before sorting
    for j in np.flatnonzero((rows == offset).mean(axis=0) >= 0.75):
        q10, q90 = np.quantile(rows[:, j], (0.1, 0.9))
        if q10 != q90:
            continue
        away = np.abs(rows[:, j] - offset[j]) / scale[j]
        away = away[away > 0]
        if len(away) and np.median(away) < limit:
            found.append(f"{names[j]} ({np.median(away):.2g} … {away.max():.3g} σ from "
                         f"{offset[j]:.4g})")
    return found
