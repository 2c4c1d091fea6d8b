"""Distributed radix selection of exact order statistics, per feature.

The machinery behind :func:`bigkern.reduce.quantile_summary` (see
:mod:`bigkern.reduce.binning.quantiles` for the method): order-preserving integer keys of
floats, the first pass's per-feature histograms of the keys' top bits (with the
row counts and the distinct labels of ``y``), the refine passes inside the
groups that hold wanted ranks, and :class:`RadixSelection`, which drives them
until every wanted rank is known exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import dask.array as da
import numpy as np

from bigkern.cluster.compute import compute
from bigkern.errors import DataQualityError
from bigkern.reduce.binning._key_loops import (
    add_group_counts,
    group_histograms,
    select_digits,
)
from bigkern.reduce.passes import (
    RowReduction,
    add_counts,
    as_float_block,
    reduction_graph,
    run_reduction,
    valid_rows,
)
from bigkern.reduce.row_loops import int_label_range

GROUP_BITS = 20  # key bits resolved by the first pass
_DIGIT_BITS = 16  # key bits resolved by a histogram refine pass
_COLLECT_LIMIT = 1 << 20  # groups this small send their distinct keys instead of a histogram
_MAX_LABELS = 256  # beyond this many distinct y values, y is taken as continuous
KEEP = 65535  # cell code of a key group holding a selection target (see cell_tables)

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
    valid, counts = valid_rows(X, mb, extremes=True)
    ukind, width = key_dtype(X.dtype)
    if counts["valid"] < (1 << 16):  # small chunk: sorting beats a 2**20-bin histogram
        V = X[valid]
        hist = []
        for f in range(X.shape[1]):
            groups, cnt = np.unique(float_keys(V[:, f]) >> ukind(width - GROUP_BITS),
                                    return_counts=True)
            hist.append((groups.astype(np.intp), cnt.astype(np.int64)))
    else:
        hist = group_histograms(X.view(ukind), valid, width, GROUP_BITS)
    part: dict[str, Any] = {"counts": counts, "hist": hist, "labels": None}
    if yb is not None:
        part["labels"] = _distinct_labels(np.asarray(yb), valid)
    return part


def _add_sparse(parts: Sequence[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    idx = np.concatenate([p[0] for p in parts]).astype(np.intp, copy=False)
    cnt = np.concatenate([p[1] for p in parts]).astype(np.int64, copy=False)
    dense = np.zeros(1 << GROUP_BITS, dtype=np.int64)  # pages touched only where counted
    occupied = np.empty(min(len(idx), 1 << GROUP_BITS), dtype=np.intp)
    m = add_group_counts(idx, cnt, dense, occupied)
    groups = np.sort(occupied[:m])
    counts = dense[groups]
    keep = counts > 0
    return groups[keep], counts[keep]


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


def cell_tables(upper: np.ndarray, keep_groups: Sequence[np.ndarray]) -> np.ndarray:
    """Per feature, the cell of every key group (:data:`KEEP` for groups that must wait).

    ``upper[f]`` holds, per edge of feature ``f``, a key group at or above
    the group of the edge's upper order statistic, and no occupied group
    lies strictly between them unless it is in ``keep_groups[f]``. A value
    whose group is below an edge's *upper* group is then below the edge:
    the edge lies between two consecutive order statistics, and no value's
    key falls strictly between theirs.
    """
    d = upper.shape[0]
    n_groups = 1 << GROUP_BITS
    tables = np.empty((d, n_groups), dtype=np.uint16)
    for f in range(d):  # cell of g: the uppers below g (a cumulative count of uppers + 1)
        above = np.bincount(np.asarray(upper[f], dtype=np.intp) + 1, minlength=n_groups + 1)
        np.cumsum(above[:n_groups], out=tables[f])
        tables[f, keep_groups[f]] = KEEP
    return tables


def refine_rows(
    X: np.ndarray, buckets: Sequence[Bucket]
) -> dict[tuple[int, int, int], tuple[np.ndarray, np.ndarray]]:
    """:func:`refine_counts` of rows that are all usable (rows kept on a worker)."""
    ukind, width = key_dtype(X.dtype)
    return refine_counts(X.view(ukind), np.ones(len(X), dtype=bool), width, buckets)


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
    return run_reduction(_HISTOGRAM_PASS, X, y, mask, label="exact quantiles: histogram pass")


def require_usable_rows(counts: dict[str, int]) -> None:
    """Raise :class:`~bigkern.errors.DataQualityError` when the row counts show no usable row."""
    if counts["valid"] == 0:
        by_column = ", ".join(f"column {k.rsplit('_', 1)[1]}: {v}" for k, v in counts.items()
                              if k.startswith("nonfinite_feature_") and v)
        raise DataQualityError(
            f"no usable rows: all {counts['rows']} rows are masked ({counts['masked']}), "
            f"absent ({counts['absent']}) or have a non-finite feature ({counts['nonfinite']}"
            f"{'; ' + by_column if by_column else ''})"
        )


def _usable_first(first: dict[str, Any]) -> dict[str, Any]:
    require_usable_rows(first["counts"])
    return first


#: The histogram pass (counts, labels, top-group key histograms per feature) and the
#: refine pass (the rows of the candidate groups, or their lower-digit histograms).
_HISTOGRAM_PASS = RowReduction("quantile-histogram", chunk=_first_pass_chunk,
                               combine=_combine_first, finalize=_usable_first)
_REFINE_PASS = RowReduction("quantile-refine", chunk=_refine_chunk, combine=combine_refine)


def refine_graph(X: da.Array, mask: da.Array | None, buckets: Sequence[Bucket]) -> Any:
    """Delayed combined result of one refine pass over ``X``."""
    return reduction_graph(_REFINE_PASS, X, mask, buckets=buckets)


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
