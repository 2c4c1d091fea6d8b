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
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr

from bigkern.cluster import compute
from bigkern.errors import DataQualityError
from bigkern.reduce._kernels import int_label_range, key_histogram, select_digits
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

GROUP_BITS = 20  # key bits resolved by the first pass
_DIGIT_BITS = 16  # key bits resolved by a histogram refine pass
_COLLECT_LIMIT = 1 << 20  # groups this small send their distinct keys instead of a histogram
_MAX_LABELS = 256  # beyond this many distinct y values, y is taken as continuous


# ---------------------------------------------------------------------------
# order-preserving keys
# ---------------------------------------------------------------------------
def key_dtype(dtype: np.dtype) -> tuple[type, int]:
    if dtype == np.float32:
        return np.uint32, 32
    return np.uint64, 64


def float_keys(values: np.ndarray) -> np.ndarray:
    """Map finite float32/float64 values to unsigned keys that sort in the same order.

    Equal values get equal keys (so -0.0 and +0.0 share one).
    """
    values = np.ascontiguousarray(values)
    if values.dtype not in (np.float32, np.float64):
        values = values.astype(np.float64)
    ukind, width = key_dtype(values.dtype)
    bits = values.view(ukind)
    sign = ukind(1 << (width - 1))
    bits = np.where(bits == sign, ukind(0), bits)  # -0.0 sorts with (and as) +0.0
    return np.where(bits & sign, ~bits, bits | sign)


def keys_to_floats(keys: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Inverse of :func:`float_keys`."""
    ukind, width = key_dtype(np.dtype(dtype))
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
def _distinct_labels(y: np.ndarray, valid: np.ndarray) -> np.ndarray | str:
    """Sorted distinct labels of the valid rows, or "continuous" past ``_MAX_LABELS``."""
    if y.ndim == 1 and (y.dtype.kind in "ib" or (y.dtype.kind == "u" and y.dtype.itemsize < 8)):
        lo, present = int_label_range(np.ascontiguousarray(y), valid, 1 << 16)
        if len(present) or not valid.any():
            labels = (np.flatnonzero(present) + lo).astype(y.dtype)
            return labels if len(labels) <= _MAX_LABELS else "continuous"
    labels = np.unique(y[valid])
    return labels if len(labels) <= _MAX_LABELS else "continuous"


def _first_pass_chunk(
    Xb: np.ndarray, yb: np.ndarray | None, mb: np.ndarray | None
) -> dict[str, Any]:
    X = as_float_block(Xb)
    valid, counts = valid_rows(X, mb)
    ukind, width = key_dtype(X.dtype)
    if counts["valid"] < (1 << 16):  # small chunk: sorting beats a 2**20-bin histogram
        V = X[valid]
        hist = []
        for f in range(X.shape[1]):
            groups, cnt = np.unique(float_keys(V[:, f]) >> ukind(width - GROUP_BITS),
                                    return_counts=True)
            hist.append((groups.astype(np.intp), cnt.astype(np.int64)))
    else:
        bits = X.view(ukind)
        hist = [_sparse(key_histogram(bits, valid, width, f, GROUP_BITS))
                for f in range(X.shape[1])]
    part: dict[str, Any] = {"counts": counts, "hist": hist, "labels": None}
    if yb is not None:
        part["labels"] = _distinct_labels(np.asarray(yb), valid)
    return part


def _sparse(dense: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    nz = np.flatnonzero(dense)
    return nz, dense[nz]


def _add_sparse(parts: Sequence[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    idx = np.concatenate([p[0] for p in parts])
    cnt = np.concatenate([p[1] for p in parts])
    if len(idx) < (1 << 16):
        groups, inv = np.unique(idx, return_inverse=True)
        return groups, np.bincount(inv, weights=cnt, minlength=len(groups)).astype(np.int64)
    return _sparse(np.bincount(idx, weights=cnt, minlength=1 << GROUP_BITS).astype(np.int64))


def dense_histograms(first: dict[str, Any]) -> np.ndarray:
    """The first pass's histograms as a dense (feature, 2**GROUP_BITS) array."""
    out = np.zeros((len(first["hist"]), 1 << GROUP_BITS), dtype=np.int64)
    for f, (idx, cnt) in enumerate(first["hist"]):
        out[f, idx] = cnt
    return out


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
        "hist": [_add_sparse([p["hist"][f] for p in parts]) for f in range(len(parts[0]["hist"]))],
        "labels": labels,
    }


@dataclass(frozen=True)
class Bucket:
    """Groups of one feature refined together: keys whose top ``nbits`` equal a prefix."""

    feature: int
    nbits: int  # bits already resolved
    step: int  # bits resolved by this pass
    prefixes: tuple[int, ...]  # sorted


def refine_counts(
    bits: np.ndarray, valid: np.ndarray, width: int, buckets: Sequence[Bucket]
) -> dict[tuple[int, int, int], tuple[np.ndarray, np.ndarray]]:
    """A chunk's sparse counts of the next digits of the keys in each bucket's groups."""
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


def _refine_chunk(
    Xb: np.ndarray, mb: np.ndarray | None, buckets: Sequence[Bucket]
) -> dict[tuple[int, int, int], tuple[np.ndarray, np.ndarray]]:
    X = as_float_block(Xb)
    valid, _ = valid_rows(X, mb)
    ukind, width = key_dtype(X.dtype)
    return refine_counts(X.view(ukind), valid, width, buckets)


def combine_refine(
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
    top_group: int = -1  # the top-GROUP_BITS group, fixed by the first pass


class RadixSelection:
    """State of an exact distributed selection of order statistics.

    Built from the first pass's per-feature histograms of the top
    :data:`GROUP_BITS` key bits; each further pass refines the targets still pending
    (:meth:`plan` → one refine pass → :meth:`update`) until every target's
    key, hence its value, is known.
    """

    def __init__(self, dtype: np.dtype, hist: np.ndarray, wanted: Sequence[tuple[int, int]]):
        self.dtype = np.dtype(dtype)
        self.ukind, self.width = key_dtype(self.dtype)
        self.wanted = sorted(set(wanted))
        self.targets = [_Target(f, r) for f, r in self.wanted]
        self.passes = 1  # the histogram pass
        cums = {f: np.cumsum(hist[f]) for f in {t.feature for t in self.targets}}
        for t in self.targets:  # the first descent: the digits are the group numbers
            self._descend(t, None, hist[t.feature], GROUP_BITS, cum=cums[t.feature])
            t.top_group = t.prefix

    def _descend(
        self, t: _Target, digits: np.ndarray | None, counts: np.ndarray, step: int,
        cum: np.ndarray | None = None,
    ) -> None:
        """Move ``t`` into the group of ``counts`` holding its rank (``digits=None``: 0, 1, …)."""
        cum = np.cumsum(counts) if cum is None else cum
        i = int(np.searchsorted(cum, t.rank, side="right"))
        t.rank -= int(cum[i - 1]) if i else 0
        t.prefix = (t.prefix << step) | (i if digits is None else int(digits[i]))
        t.nbits += step
        t.group_size = int(counts[i])
        if t.nbits == self.width:
            t.value_key = t.prefix

    def _step(self, t: _Target) -> int:
        remaining = self.width - t.nbits
        return remaining if t.group_size <= _COLLECT_LIMIT else min(_DIGIT_BITS, remaining)

    @property
    def pending(self) -> bool:
        """Whether another refine pass is needed."""
        return any(t.value_key is None for t in self.targets)

    def plan(self) -> list[Bucket]:
        """The groups the next refine pass must histogram or collect."""
        plan: dict[tuple[int, int, int], set[int]] = {}
        for t in self.targets:
            if t.value_key is None:
                plan.setdefault((t.feature, t.nbits, self._step(t)), set()).add(t.prefix)
        return [Bucket(f, nb, st, tuple(sorted(p))) for (f, nb, st), p in plan.items()]

    def update(
        self, buckets: Sequence[Bucket],
        result: dict[tuple[int, int, int], tuple[np.ndarray, np.ndarray]],
        read_data: bool = True,
    ) -> None:
        """Descend every pending target with a refine pass's combined result."""
        self.passes += int(read_data)
        by_key = {(b.feature, b.nbits, b.step): b for b in buckets}
        for t in self.targets:
            if t.value_key is not None:
                continue
            step = self._step(t)
            bucket = by_key[(t.feature, t.nbits, step)]
            uniq, cnt = result[(t.feature, t.nbits, step)]
            group = (uniq >> np.uint64(step)) == bucket.prefixes.index(t.prefix)
            digits = uniq[group] & np.uint64((1 << step) - 1)
            self._descend(t, digits.astype(np.uint64), cnt[group], step)

    def top_groups(self, ranks_by_feature: dict[int, Sequence[int]]) -> dict[int, np.ndarray]:
        """Top-:data:`GROUP_BITS` group of each listed (feature, rank), in the order given."""
        lookup = {(t.feature, r): t.top_group for t, (_, r) in zip(self.targets, self.wanted,
                                                                   strict=True)}
        return {f: np.array([lookup[(f, int(r))] for r in ranks], dtype=np.int64)
                for f, ranks in ranks_by_feature.items()}

    def target_groups(self, feature: int) -> np.ndarray:
        """Sorted distinct top groups of all of one feature's targets."""
        return np.unique([t.top_group for t in self.targets if t.feature == feature])

    def values(self) -> dict[tuple[int, int], float]:
        """Value of every (feature, rank) asked for."""
        if self.pending:
            raise RuntimeError("selection not finished")
        keys = np.array([t.value_key for t in self.targets], dtype=self.ukind)
        vals = keys_to_floats(keys, self.dtype)
        return {w: float(v) for w, v in zip(self.wanted, vals, strict=True)}


def histogram_pass(X: da.Array, y: da.Array | None, mask: da.Array | None) -> dict[str, Any]:
    """First pass: row counts, distinct labels and top-20-bit key histograms per feature."""
    partials = row_partials(_first_pass_chunk, X, y, mask, name="quantile-histogram")
    (first,) = compute(tree_reduce(partials, _combine_first, name="quantile-histogram-combine"),
                       label="exact quantiles: histogram pass")
    counts = first["counts"]
    if counts["valid"] == 0:
        raise DataQualityError(
            f"no usable rows: all {counts['rows']} rows are masked ({counts['masked']}), "
            f"absent ({counts['absent']}) or have a non-finite feature ({counts['nonfinite']})"
        )
    return first


def refine_graph(X: da.Array, mask: da.Array | None, buckets: Sequence[Bucket]) -> Any:
    """Delayed combined result of one refine pass over ``X``."""
    partials = row_partials(_refine_chunk, X, mask, name="quantile-refine", buckets=buckets)
    return tree_reduce(partials, combine_refine, name="quantile-refine-combine")


def finish_selection(
    X: da.Array, mask: da.Array | None, selection: RadixSelection,
    graph: Callable[[Sequence[Bucket]], Any] | None = None,
) -> None:
    """Run refine passes until every target is known.

    ``graph(buckets)`` builds one pass's delayed combined counts; by default
    a pass over ``X`` (percentile binning passes one over rows it kept in
    worker memory instead).
    """
    while selection.pending:
        buckets = selection.plan()
        pass_graph = refine_graph(X, mask, buckets) if graph is None else graph(buckets)
        (result,) = compute(pass_graph, label="exact quantiles: refining")
        selection.update(buckets, result, read_data=graph is None)


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
    attrs: dict[str, Any] = {f"n_{k}": int(v) for k, v in first["counts"].items()}
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
    """
    check_probs(probs)
    if method not in QUANTILE_METHODS:
        raise ValueError(f"method must be one of {QUANTILE_METHODS}; got {method!r}")
    X, y, mask, names = prepare_samples(X, y, mask, features)
    first = histogram_pass(X, y, mask)
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
