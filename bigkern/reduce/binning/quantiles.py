"""Exact per-feature quantiles of chunked data, by distributed radix selection.

``dask.array.percentile`` merges per-chunk percentiles and is approximate with
no error bound. bigkern instead finds the exact order statistics that
:func:`numpy.quantile` would interpolate between, in two passes for float32
data (and, in the worst case, a few more for float64):

1. Every finite value is mapped to an unsigned integer *key* with the same
   order (flip the sign bit of non-negatives, all bits of negatives). Pass 1
   counts the top 20 bits of the keys per feature (sign, exponent and 11
   mantissa bits: 2,048 *groups* per binade), which locates the group of
   keys holding each wanted rank.
2. Later passes look only at the values inside those groups: the distinct
   keys themselves with their counts (float32: the last 12 bits, so the key
   is then known exactly), or, for a huge float64 group, a histogram of its
   next 16 bits.

Each pass is one chunk → combine → aggregate reduction whose partials are at
most a few MB whatever the data size. Counts are integers, so the result is
identical for every chunking and every number of workers.

Rows with a non-finite feature, or masked out, are left out of every feature
(the quantiles are those of the rows that can be binned) and counted.

This module holds the public API and the rank bookkeeping of each numpy method;
the passes themselves are in :mod:`bigkern.reduce.binning.radix_select`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr

from bigkern.reduce.binning.radix_select import (
    RadixSelection,
    dense_histograms,
    finish_selection,
    histogram_pass,
)
from bigkern.reduce.extremes import EXTREMES_KEY, warn_suspected_fills
from bigkern.reduce.passes import as_row_chunked, int_counts, unwrap_samples

__all__ = ["DECILES", "QUANTILE_METHODS", "quantile_edges", "quantile_summary"]

DECILES: tuple[float, ...] = tuple(float(q) for q in np.round(np.arange(1, 10) / 10, 2))
"""The paper's split points, 10% to 90%: the default quantiles of the percentile bins.

Examples
--------
>>> import bigkern
>>> bigkern.DECILES
(0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
>>> bigkern.BinnedSVC().quantiles == bigkern.DECILES  # up to 10**d bins of d features
True
"""
#: The :func:`numpy.quantile` methods reproduced exactly.
QUANTILE_METHODS = ("linear", "lower", "higher", "nearest", "midpoint", "inverted_cdf")


# ---------------------------------------------------------------------------
# ranks wanted by each numpy method
# ---------------------------------------------------------------------------
def _ranks_and_weights(
    n: int, probs: np.ndarray, method: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """0-based ranks (lower, upper) and interpolation weight, as numpy.quantile computes them."""
    if method not in QUANTILE_METHODS:
        raise ValueError(f"method must be one of {QUANTILE_METHODS}; got {method!r}")
    q = np.asarray(probs, dtype=np.float64)
    if method == "inverted_cdf":
        idx = np.clip(np.ceil(n * q).astype(np.int64) - 1, 0, n - 1)
        return idx, idx, np.zeros_like(q)
    # Hyndman & Fan type 7, with the same floating-point expression as numpy.
    virtual = (n - 1) * q
    lower = np.floor(virtual)
    if method == "lower":
        idx = np.clip(lower.astype(np.int64), 0, n - 1)
        return idx, idx, np.zeros_like(q)
    if method == "higher":
        idx = np.clip(np.ceil(virtual).astype(np.int64), 0, n - 1)
        return idx, idx, np.zeros_like(q)
    if method == "nearest":
        idx = np.clip(np.around(virtual).astype(np.int64), 0, n - 1)
        return idx, idx, np.zeros_like(q)
    gamma = virtual - lower
    if method == "midpoint":
        gamma = np.where(gamma == 0, 0.0, 0.5)
    lo = np.clip(lower.astype(np.int64), 0, n - 1)
    hi = np.clip(lo + 1, 0, n - 1)
    return lo, hi, gamma


def _lerp(a: np.ndarray, b: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Linear interpolation in the form numpy.quantile uses (exact at t = 0 and t = 1)."""
    diff = b - a
    return np.where(t >= 0.5, b - diff * (1 - t), a + diff * t)


@dataclass(frozen=True)
class QuantilePlan:
    """Ranks to select for ``probs`` under ``method`` among ``n`` values."""

    probs: np.ndarray
    method: str
    n: int
    lo: np.ndarray
    hi: np.ndarray
    gamma: np.ndarray

    @classmethod
    def make(cls, probs: Sequence[float], method: str, n: int) -> QuantilePlan:
        probs_arr = check_probs(probs)
        lo, hi, gamma = _ranks_and_weights(n, probs_arr, method)
        return cls(probs_arr, method, n, lo, hi, gamma)

    def wanted(self, d: int) -> list[tuple[int, int]]:
        """(feature, rank) pairs: the quantiles' ranks plus the minimum and maximum."""
        ranks = np.concatenate([self.lo, self.hi, [0, self.n - 1]])
        return [(f, int(r)) for f in range(d) for r in ranks]

    def edges(self, values: dict[tuple[int, int], float], d: int) -> np.ndarray:
        out = np.empty((d, len(self.probs)))
        for f in range(d):
            a = np.array([values[(f, int(r))] for r in self.lo])
            b = np.array([values[(f, int(r))] for r in self.hi])
            out[f] = _lerp(a, b, self.gamma)
        return out


def check_probs(probs: Sequence[float]) -> np.ndarray:
    """``probs`` as a float array, or a ValueError naming what is wrong."""
    probs_arr = np.asarray(probs, dtype=np.float64).ravel()
    if probs_arr.size == 0 or np.any(~np.isfinite(probs_arr)) or np.any(
        (probs_arr < 0) | (probs_arr > 1)
    ):
        raise ValueError(f"probs must be a non-empty list of numbers in [0, 1]; got {probs!r}")
    return probs_arr


def summary_dataset(
    first: dict[str, Any], plan: QuantilePlan, values: dict[tuple[int, int], float],
    names: Sequence[str],
) -> xr.Dataset:
    """The :func:`quantile_summary` Dataset from a finished selection."""
    d = len(names)
    attrs: dict[str, Any] = int_counts(first["counts"])
    attrs["method"] = plan.method
    ds = xr.Dataset(
        {
            "edges": (("feature", "quantile"), plan.edges(values, d)),
            "min": ("feature", [values[(f, 0)] for f in range(d)]),
            "max": ("feature", [values[(f, plan.n - 1)] for f in range(d)]),
        },
        coords={"feature": list(names), "quantile": plan.probs},
        attrs=attrs,
    )
    if isinstance(first["labels"], np.ndarray):
        ds["labels"] = ("label", first["labels"])
    elif first["labels"] == "continuous":
        ds.attrs["labels"] = "continuous"
    return ds


def prepare_samples(
    X: Any, y: Any, mask: Any, features: Sequence[str] | None
) -> tuple[da.Array, da.Array | None, da.Array | None, list[str]]:
    """Row-chunked float dask arrays and feature names, validated."""
    X, y, mask, features = unwrap_samples(X, y, mask, features)
    X, y, mask = as_row_chunked(X, y, mask)
    if X.dtype not in (np.float32, np.float64):
        X = X.astype(np.float64)
    d = X.shape[1]
    names = list(features) if features is not None else [f"f{i}" for i in range(d)]
    if len(names) != d:
        raise ValueError(f"{len(names)} feature names given for {d} columns of X")
    return X, y, mask, [str(n) for n in names]


def quantile_summary(
    X: Any,
    probs: Sequence[float] = DECILES,
    *,
    method: str = "linear",
    mask: Any = None,
    y: Any = None,
    features: Sequence[str] | None = None,
) -> xr.Dataset:
    """Exact quantiles, minimum and maximum per feature, with the row counts of the passes.

    Parameters
    ----------
    X : array-like or dask array, shape (n, d)
        Samples. float32 data are selected in two passes, float64 in two to
        four; other dtypes are promoted to float64.
    probs : sequence of float
        Probabilities in [0, 1]; deciles by default.
    method : str
        A :func:`numpy.quantile` method out of :data:`QUANTILE_METHODS`. The
        result equals ``numpy.quantile(X_valid.astype(float64), probs,
        axis=0, method=method)`` where ``X_valid`` are the rows left after
        dropping masked and non-finite rows.
    mask : array-like of bool, shape (n,), optional
        Rows to use; ``False`` rows are left out and counted as ``masked``.
    y : array-like, shape (n,), optional
        Labels; their distinct values among valid rows are collected in the
        same pass (variable ``labels``), or ``continuous`` is recorded in the
        attrs when there are more than 256.
    features : sequence of str, optional
        Names for the ``feature`` coordinate.

    Returns
    -------
    xarray.Dataset
        ``edges (feature, quantile)``, exact ``min`` and ``max`` ``(feature)``;
        attrs ``n_rows``, ``n_valid``, ``n_masked``, ``n_absent``, ``n_nonfinite``,
        ``method``.

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern import quantile_summary
    >>> X = np.arange(20, dtype=np.float64).reshape(10, 2)
    >>> X[0, 1] = np.nan  # the row is left out, and counted
    >>> summary = quantile_summary(X, [0.5], features=["a", "b"])
    >>> summary["edges"].sel(quantile=0.5).values.tolist(), summary["min"].values.tolist()
    ([10.0, 11.0], [2.0, 3.0])
    >>> summary.attrs["n_valid"], summary.attrs["n_nonfinite"]
    (9, 1)
    """
    check_probs(probs)
    if method not in QUANTILE_METHODS:
        raise ValueError(f"method must be one of {QUANTILE_METHODS}; got {method!r}")
    X, y, mask, names = prepare_samples(X, y, mask, features)
    first = histogram_pass(X, y, mask)
    warn_suspected_fills(first["counts"].get(EXTREMES_KEY), names)
    plan = QuantilePlan.make(probs, method, first["counts"]["valid"])
    selection = RadixSelection(X.dtype, dense_histograms(first), plan.wanted(X.shape[1]))
    finish_selection(X, mask, selection)
    return summary_dataset(first, plan, selection.values(), names)


def quantile_edges(
    X: Any,
    probs: Sequence[float] = DECILES,
    *,
    method: str = "linear",
    mask: Any = None,
    features: Sequence[str] | None = None,
) -> xr.DataArray:
    """Exact per-feature quantiles of a (possibly out-of-core) sample array.

    Equal to ``numpy.quantile(X_valid.astype(float64), probs, axis=0,
    method=method).T`` where ``X_valid`` are the rows of ``X`` that are not
    masked and have every feature finite — computed without gathering the
    data, in two passes over float32 data. See :func:`quantile_summary` for
    the parameters; the row counts are in the result's ``attrs``.

    Returns
    -------
    xarray.DataArray
        dims ``(feature, quantile)``.

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern.reduce import quantile_edges
    >>> x = np.arange(11, dtype=np.float32).reshape(-1, 1)
    >>> quantile_edges(x, [0.25, 0.5]).values
    array([[2.5, 5. ]])
    """
    summary = quantile_summary(X, probs, method=method, mask=mask, features=features)
    edges = summary["edges"]
    edges.attrs = dict(summary.attrs)
    return edges
