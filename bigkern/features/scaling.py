"""The one robust scale of bigkern: median and σ from the 10 % and 90 % quantiles.

Every model that standardizes its features, and the outlier check of the
binning, use ``offset = q50`` and ``σ = (q90 − q10) / (2 z₉₀)`` per feature,
where ``z₉₀`` is the standard normal's 90 % quantile: σ is the standard
deviation for normal data and unmoved by heavy tails such as SD's. A zero σ
(a constant feature) becomes 1.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["FAR_SCALED", "ROBUST_QUANTILES", "Z90", "far_features", "robust_scale",
           "robust_standardizer"]

#: The standard normal's 90 % quantile.
Z90 = 1.2815515655446004
#: The quantiles the scale is made of, in the order :func:`robust_scale` takes them.
ROBUST_QUANTILES = (0.1, 0.5, 0.9)
#: Standardized values beyond ± this many robust σ: such a feature's differences outweigh
#: every other feature's in a Gaussian kernel's distances (normal data stays within ±6).
FAR_SCALED = 20.0


def robust_scale(q10: Any, q50: Any, q90: Any) -> tuple[np.ndarray, np.ndarray]:
    """Offset and scale (float64, per feature) from each feature's 10, 50 and 90 % quantiles.

    Examples
    --------
    >>> robust_scale([0.0, 1.0], [1.0, 1.0], [2 * Z90, 1.0])
    (array([1., 1.]), array([1., 1.]))
    """
    spread = (np.asarray(q90, dtype=np.float64) - q10) / (2 * Z90)
    scale = np.where(spread > 0, spread, 1.0)
    return np.asarray(q50, dtype=np.float64), scale.astype(np.float64)


def robust_standardizer(rows: Any) -> tuple[np.ndarray, np.ndarray]:
    """:func:`robust_scale` of the columns of ``rows`` (n, d), quantiles computed here.

    Examples
    --------
    >>> offset, scale = robust_standardizer(np.arange(11.0)[:, None])
    >>> offset, np.round(scale, 4)
    (array([5.]), array([3.1212]))
    """
    q10, q50, q90 = np.quantile(np.asarray(rows, dtype=np.float64), ROBUST_QUANTILES, axis=0)
    return robust_scale(q10, q50, q90)


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
