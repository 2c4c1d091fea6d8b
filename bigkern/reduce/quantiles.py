"""Exact per-feature quantiles of chunked data, by distributed radix selection.

``dask.array.percentile`` merges per-chunk percentiles and is approximate with
no error bound. bigkern instead finds the exact order statistics that
:func:`numpy.quantile` would interpolate between, in two passes for float32
data (and, in the worst case, a few more for float64):

1. Every finite value is mapped to an unsigned integer *key* with the same
   order (flip the sign bit of non-negatives, all bits of negatives). Pass 1
   counts the top 16 bits of the keys per feature: a 65,536-bin histogram
   that locates the group of keys holding each wanted rank.
2. Later passes look only at the values inside those groups: a histogram of
   the next 16 bits (float32: the last 16, so the key is then known exactly),
   or, when a group is small, the distinct keys themselves with their counts.

Each pass is one chunk → combine → aggregate reduction whose partials are at
most a few MB whatever the data size. Counts are integers, so the result is
identical for every chunking and every number of workers.

Rows with a non-finite feature, or masked out, are left out of every feature
(the quantiles are those of the rows that can be binned) and counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr

from bigkern.cluster import compute
from bigkern.reduce._kernels import key_histogram, select_digits
from bigkern.reduce._tree import (
    add_counts,
    as_float_block,
    as_row_chunked,
    row_partials,
    tree_reduce,
    valid_rows,
)

__all__ = ["DECILES", "QUANTILE_METHODS", "quantile_edges", "quantile_summary"]

#: The paper's split points: 10%, 20%, ..., 90%.
DECILES: tuple[float, ...] = tuple(np.round(np.arange(1, 10) / 10, 2))
#: The :func:`numpy.quantile` methods reproduced exactly.
QUANTILE_METHODS = ("linear", "lower", "higher", "nearest", "midpoint", "inverted_cdf")

_DIGIT_BITS = 16
_COLLECT_LIMIT = 1 << 20  # groups this small send their distinct keys instead of a histogram
_MAX_LABELS = 256  # beyond this many distinct y values, y is taken as continuous


# ---------------------------------------------------------------------------
# order-preserving keys
# ---------------------------------------------------------------------------
def _key_dtype(dtype: np.dtype) -> tuple[type, int]:
    if dtype == np.float32:
        return np.uint32, 32
    return np.uint64, 64


def float_keys(values: np.ndarray) -> np.ndarray:
    """Map finite float32/float64 values to unsigned keys that sort in the same order."""
    values = np.ascontiguousarray(values)
    if values.dtype not in (np.float32, np.float64):
        values = values.astype(np.float64)
    ukind, width = _key_dtype(values.dtype)
    bits = values.view(ukind)
    sign = ukind(1 << (width - 1))
    return np.where(bits & sign, ~bits, bits | sign)


def keys_to_floats(keys: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Inverse of :func:`float_keys`."""
    ukind, width = _key_dtype(np.dtype(dtype))
    keys = np.asarray(keys, dtype=ukind)
    sign = ukind(1 << (width - 1))
    bits = np.where(keys & sign, keys & ~sign, ~keys)
    return bits.view(np.dtype(dtype))


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


# ---------------------------------------------------------------------------
# per-chunk work
# ---------------------------------------------------------------------------
def _distinct_labels(yv: np.ndarray) -> np.ndarray | str:
    """Sorted distinct labels, or "continuous" past ``_MAX_LABELS``."""
    if yv.dtype.kind in "iub" and len(yv):
        lo, hi = int(yv.min()), int(yv.max())
        if hi - lo < (1 << 16):
            labels = np.flatnonzero(np.bincount(yv.astype(np.int64) - lo)) + lo
            labels = labels.astype(yv.dtype)
        else:
            labels = np.unique(yv)
    else:
        labels = np.unique(yv)
    return labels if len(labels) <= _MAX_LABELS else "continuous"


def _first_pass_chunk(
    Xb: np.ndarray, yb: np.ndarray | None, mb: np.ndarray | None
) -> dict[str, Any]:
    X = as_float_block(Xb)
    valid, counts = valid_rows(X, mb)
    ukind, width = _key_dtype(X.dtype)
    hist = key_histogram(X.view(ukind), valid, width, _DIGIT_BITS)
    part: dict[str, Any] = {"counts": counts, "hist": hist, "labels": None}
    if yb is not None:
        part["labels"] = _distinct_labels(np.asarray(yb)[valid])
    return part


def _combine_first(parts: list[dict[str, Any]]) -> dict[str, Any]:
    labels: Any = None
    for p in parts:
        if p["labels"] is None:
            continue
        if isinstance(p["labels"], str) or isinstance(labels, str):
            labels = "continuous"
        else:
            labels = p["labels"] if labels is None else np.union1d(labels, p["labels"])
            if len(labels) > _MAX_LABELS:
                labels = "continuous"
    return {
        "counts": add_counts([p["counts"] for p in parts]),
        "hist": np.sum([p["hist"] for p in parts], axis=0),
        "labels": labels,
    }


@dataclass(frozen=True)
class _Bucket:
    """Groups of one feature refined together: keys whose top ``nbits`` equal a prefix."""

    feature: int
    nbits: int  # bits already resolved
    step: int  # bits resolved by this pass
    prefixes: tuple[int, ...]  # sorted


def _refine_chunk(
    Xb: np.ndarray, mb: np.ndarray | None, buckets: Sequence[_Bucket]
) -> dict[tuple[int, int, int], tuple[np.ndarray, np.ndarray]]:
    X = as_float_block(Xb)
    valid, _ = valid_rows(X, mb)
    ukind, width = _key_dtype(X.dtype)
    bits = X.view(ukind)
    out = {}
    for b in buckets:
        prefixes = np.asarray(b.prefixes, dtype=np.uint64)
        combined = select_digits(bits, valid, b.feature, width, b.nbits, b.step, prefixes)
        size = len(prefixes) << b.step
        if size <= max(1 << 16, len(combined)):
            counts = np.bincount(combined.astype(np.intp), minlength=size)
            uniq = np.flatnonzero(counts).astype(np.uint64)
            out[(b.feature, b.nbits, b.step)] = (uniq, counts[uniq.astype(np.intp)])
        else:
            uniq, cnt = np.unique(combined, return_counts=True)
            out[(b.feature, b.nbits, b.step)] = (uniq, cnt.astype(np.int64))
    return out


def _combine_refine(
    parts: list[dict[tuple[int, int, int], tuple[np.ndarray, np.ndarray]]],
) -> dict[tuple[int, int, int], tuple[np.ndarray, np.ndarray]]:
    out = {}
    for key in parts[0]:
        uniq = np.concatenate([p[key][0] for p in parts])
        cnt = np.concatenate([p[key][1] for p in parts])
        u, inv = np.unique(uniq, return_inverse=True)
        out[key] = (u, np.bincount(inv, weights=cnt, minlength=len(u)).astype(np.int64))
    return out


# ---------------------------------------------------------------------------
# selection driver
# ---------------------------------------------------------------------------
@dataclass
class _Target:
    feature: int
    rank: int  # rank still wanted inside the current group
    prefix: int = 0
    nbits: int = 0
    group_size: int = 0
    value_key: int | None = None
    extra: dict = field(default_factory=dict)


def _select_ranks(
    X: da.Array, mask: da.Array | None, first: dict[str, Any], wanted: list[tuple[int, int]]
) -> dict[tuple[int, int], float]:
    """Exact value of each (feature, 0-based rank) among the valid rows."""
    ukind, width = _key_dtype(X.dtype)
    targets = [_Target(f, r) for f, r in sorted(set(wanted))]

    def descend(t: _Target, digits: np.ndarray, counts: np.ndarray, step: int) -> None:
        cum = np.cumsum(counts)
        i = int(np.searchsorted(cum, t.rank, side="right"))
        below = int(cum[i - 1]) if i else 0
        t.rank -= below
        t.prefix = (t.prefix << step) | int(digits[i])
        t.nbits += step
        t.group_size = int(counts[i])
        if t.nbits == width:
            t.value_key = t.prefix

    for t in targets:
        descend(t, np.arange(1 << _DIGIT_BITS), first["hist"][t.feature], _DIGIT_BITS)

    while any(t.value_key is None for t in targets):
        pending = [t for t in targets if t.value_key is None]
        plan: dict[tuple[int, int, int], set[int]] = {}
        for t in pending:
            remaining = width - t.nbits
            step = remaining if t.group_size <= _COLLECT_LIMIT else min(_DIGIT_BITS, remaining)
            plan.setdefault((t.feature, t.nbits, step), set()).add(t.prefix)
        buckets = [_Bucket(f, nb, st, tuple(sorted(p))) for (f, nb, st), p in plan.items()]
        partials = row_partials(_refine_chunk, X, mask, name="quantile-refine", buckets=buckets)
        (result,) = compute(tree_reduce(partials, _combine_refine, name="quantile-refine-combine"),
                            label="exact quantiles: refining")
        for t in pending:
            remaining = width - t.nbits
            step = remaining if t.group_size <= _COLLECT_LIMIT else min(_DIGIT_BITS, remaining)
            bucket = next(b for b in buckets if (b.feature, b.nbits, b.step)
                          == (t.feature, t.nbits, step))
            uniq, cnt = result[(t.feature, t.nbits, step)]
            pos = bucket.prefixes.index(t.prefix)
            group = (uniq >> np.uint64(step)) == pos
            digits = uniq[group] & np.uint64((1 << step) - 1)
            descend(t, digits.astype(np.uint64), cnt[group], step)

    out = {}
    for t, (f, r) in zip(targets, sorted(set(wanted)), strict=True):
        out[(f, r)] = float(keys_to_floats(np.asarray([t.value_key], dtype=ukind), X.dtype)[0])
    return out


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
    """
    probs_arr = np.asarray(probs, dtype=np.float64).ravel()
    if probs_arr.size == 0 or np.any((probs_arr < 0) | (probs_arr > 1)) or np.any(
        ~np.isfinite(probs_arr)
    ):
        raise ValueError(f"probs must be a non-empty list of numbers in [0, 1]; got {probs!r}")
    if method not in QUANTILE_METHODS:
        raise ValueError(f"method must be one of {QUANTILE_METHODS}; got {method!r}")
    X, y, mask = as_row_chunked(X, y, mask)
    if X.dtype not in (np.float32, np.float64):
        X = X.astype(np.float64)
    d = X.shape[1]
    names = list(features) if features is not None else [f"f{i}" for i in range(d)]
    if len(names) != d:
        raise ValueError(f"{len(names)} feature names given for {d} columns of X")

    partials = row_partials(_first_pass_chunk, X, y, mask, name="quantile-histogram")
    (first,) = compute(tree_reduce(partials, _combine_first, name="quantile-histogram-combine"),
                       label="exact quantiles: histogram pass")
    counts = first["counts"]
    n = counts["valid"]
    attrs = {f"n_{k}": int(v) for k, v in counts.items()}
    attrs["method"] = method
    if n == 0:
        from bigkern.errors import DataQualityError

        raise DataQualityError(
            f"no usable rows: all {counts['rows']} rows are masked ({counts['masked']}), "
            f"absent ({counts['absent']}) or have a non-finite feature ({counts['nonfinite']})"
        )
    lo, hi, gamma = _ranks_and_weights(n, probs_arr, method)
    wanted = [(f, int(r)) for f in range(d) for r in np.concatenate([lo, hi, [0, n - 1]])]
    values = _select_ranks(X, mask, first, wanted)
    edges = np.empty((d, len(probs_arr)))
    for f in range(d):
        a = np.array([values[(f, int(r))] for r in lo])
        b = np.array([values[(f, int(r))] for r in hi])
        edges[f] = _lerp(a, b, gamma)

    ds = xr.Dataset(
        {
            "edges": (("feature", "quantile"), edges),
            "min": ("feature", [values[(f, 0)] for f in range(d)]),
            "max": ("feature", [values[(f, n - 1)] for f in range(d)]),
        },
        coords={"feature": names, "quantile": probs_arr},
        attrs=attrs,
    )
    if isinstance(first["labels"], np.ndarray):
        ds["labels"] = ("label", first["labels"])
    elif first["labels"] == "continuous":
        ds.attrs["labels"] = "continuous"
    return ds


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
