"""Percentile binning of a small in-memory array, with no task graph.

:func:`~bigkern.reduce.percentile_bins` of a dask array pays a fixed cost per
call — building and scheduling two or three task graphs, and per feature
tables of 2**20 key groups (dense histograms, their cumulative sums, the
fused plan's cell look-up tables) — that dwarfs the arithmetic on small
inputs. A numpy input of at most ``bigkern.in_memory_rows`` rows is binned
here instead, in one read of the data:

1. :func:`~bigkern.reduce.passes.valid_rows` (the chunk function of every
   pass) gives the usable rows and the row counts, per feature too; the
   distinct labels come from the first pass's own helper;
2. each feature's usable values are sorted once. The sorted values *are* the
   order statistics that the radix selection finds (so the edges, the
   robust scale, ``min`` and ``max`` follow from the same
   :class:`~bigkern.reduce.binning.quantiles.QuantilePlan`), and their
   order-preserving keys, run-length encoded, are the first pass's sparse
   key-group histograms (so the same fixed-point grid, outlier counts and
   kept-fraction bound) — without a 2**20 table; their ends are the
   first pass's :class:`~bigkern.reduce.extremes.ValueExtremes` (the
   suspected-fill check), with no sweep of their own;
3. the binning pass's chunk function bins the whole array as one chunk, on
   the usable rows and counts of step 1 (:func:`~bigkern.reduce.binning.bins.bin_rows`).

The bins are bit-identical to those of the dask plans
(:func:`xarray.testing.assert_identical`), except for the attrs that describe
the plan: ``plan="in-memory"``, ``passes=1`` and ``n_kept=0`` (no row waited
for the edges, as in the three-pass plan).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import dask
import numpy as np

from bigkern.cluster.compute import compute
from bigkern.reduce.binning.bins import bin_rows, check_cell_count
from bigkern.reduce.binning.outliers import histogram_grid
from bigkern.reduce.binning.plan import PlanResult
from bigkern.reduce.binning.quantiles import QuantilePlan
from bigkern.reduce.binning.radix_select import (
    GROUP_BITS,
    KEEP,
    _distinct_labels,
    float_keys,
    key_dtype,
    require_usable_rows,
)
from bigkern.reduce.extremes import EXTREMES_KEY, check_enabled, sorted_extremes
from bigkern.reduce.passes import as_float_block, unwrap_samples, valid_rows

__all__ = ["InMemoryRun", "as_numpy_samples", "first_pass", "kept_fraction_bound",
           "order_statistics"]


@dataclass
class InMemoryRun:
    """A run of the ``"in-memory"`` plan: ``X``, ``y`` and ``mask`` as numpy arrays.

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern.reduce.binning.in_memory import InMemoryRun
    >>> run = InMemoryRun.start(np.arange(8.0).reshape(4, 2), None, None, None,
    ...                         where=np.array([1]))
    >>> run.names, run.first_read()["counts"]["valid"]
    (['f0', 'f1'], 4)
    """

    X: np.ndarray
    y: np.ndarray | None
    mask: np.ndarray | None
    names: list[str]
    where: np.ndarray
    columns: list[np.ndarray] = field(default_factory=list)
    valid: np.ndarray | None = None

    @classmethod
    def start(cls, X: Any, y: Any, mask: Any, features: Sequence[str] | None, *,
              where: np.ndarray) -> InMemoryRun:
        """Read the inputs into memory (:func:`as_numpy_samples`) and check the cell count."""
        X, y, mask, names = as_numpy_samples(X, y, mask, features)
        check_cell_count(X.shape[1], len(where))
        return cls(X, y, mask, names, where)

    def first_read(self) -> dict[str, Any]:
        """:func:`first_pass`; keeps each feature's sorted usable values, and which rows
        are usable, for :meth:`finish`."""
        first, self.columns, self.valid = first_pass(self.X, self.y, self.mask)
        return first

    def finish(self, first: dict[str, Any], quantile_plan: QuantilePlan,
               classes: tuple[Any, ...] | None) -> PlanResult:
        """Edges from the sorted values, then the whole array binned as one chunk."""
        X, where = self.X, self.where
        d = X.shape[1]
        hist = first["hist"]  # sparse: no 2**20 table
        wanted = quantile_plan.wanted(d)
        kept_bound = kept_fraction_bound(first, self.columns, wanted, X.dtype)
        grid = histogram_grid(hist, X.dtype)
        if len(where) >= KEEP:
            raise ValueError(f"at most {KEEP - 1} quantiles per feature; got {len(where)}")
        values = order_statistics(self.columns, wanted)
        edge_values = quantile_plan.edges(values, d)[:, where]
        edge_list = tuple(edge_values[f] for f in range(d))
        # the binning pass's chunk function on the whole array, on the first pass's rows
        counts = {k: v for k, v in first["counts"].items() if k != EXTREMES_KEY}
        res = bin_rows(X, self.y if classes is not None else None, self.valid, counts,
                       edges=edge_list, grid=grid, classes=classes)
        res["counts"]["kept"] = 0
        return PlanResult(res, edge_list, values, hist, grid, kept_bound, 1, "in-memory")

    def attrs(self) -> dict[str, Any]:
        """No attrs beyond the plan's result."""
        return {}


def as_numpy_samples(
    X: Any, y: Any, mask: Any, features: Sequence[str] | None
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None, list[str]]:
    """``X`` as a C-contiguous float32/float64 array, ``y`` and ``mask`` as arrays, and names.

    The in-memory twin of :func:`~bigkern.reduce.binning.quantiles.prepare_samples`,
    with its checks and messages. Dask inputs are computed.
    """
    X, y, mask, features = unwrap_samples(X, y, mask, features)
    arrays = [X, y, mask]
    lazy = [i for i, a in enumerate(arrays) if dask.is_dask_collection(a)]
    if lazy:
        done = compute(*(arrays[i] for i in lazy), label="percentile bins: reading into memory")
        for i, a in zip(lazy, done, strict=True):
            arrays[i] = a
    X = np.asarray(arrays[0])
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (sample, feature); got shape {X.shape}")
    X = as_float_block(X)
    out: list[np.ndarray | None] = []
    for name, arr in (("y", arrays[1]), ("mask", arrays[2])):
        if arr is None:
            out.append(None)
            continue
        arr = np.asarray(arr)
        if arr.ndim != 1 or arr.shape[0] != X.shape[0]:
            raise ValueError(
                f"{name} must be 1-D with one entry per row of X ({X.shape[0]}); "
                f"got shape {arr.shape}"
            )
        out.append(arr)
    d = X.shape[1]
    names = list(features) if features is not None else [f"f{i}" for i in range(d)]
    if len(names) != d:
        raise ValueError(f"{len(names)} feature names given for {d} columns of X")
    return X, out[0], out[1], [str(n) for n in names]


def first_pass(
    X: np.ndarray, y: np.ndarray | None, mask: np.ndarray | None
) -> tuple[dict[str, Any], list[np.ndarray], np.ndarray]:
    """The histogram pass's result for the whole of ``X``, each feature's sorted usable
    values, and which rows are usable (bool, one per row of ``X``).

    The result has the form of the dask first pass's: ``counts`` (those of
    :func:`~bigkern.reduce.passes.valid_rows`, with the usable rows'
    :class:`~bigkern.reduce.extremes.ValueExtremes` read off the sorted values),
    ``hist`` (per feature the sparse counts of the occupied top-``GROUP_BITS``
    key groups, increasing) and ``labels`` (the distinct labels of the usable
    rows, or None).
    """
    valid, counts = valid_rows(X, mask)
    require_usable_rows(counts)
    ukind, width = key_dtype(X.dtype)
    shift, sign = ukind(width - GROUP_BITS), ukind(1 << (width - 1))
    every = counts["valid"] == len(X)
    hist = []
    columns = []
    for f in range(X.shape[1]):
        values = X[:, f].copy() if every else X[:, f][valid]  # contiguous, a copy
        values.sort()
        groups, below = values.view(ukind).copy(), int(np.searchsorted(values, 0))
        np.invert(groups[:below], out=groups[:below])  # float_keys: the negative values
        groups[below:] |= sign  # (sorted first) flipped, the others (-0.0 too) signed
        groups >>= shift  # non-decreasing, as the values are
        starts = np.flatnonzero(np.concatenate([[True], groups[1:] != groups[:-1]]))
        sizes = np.diff(np.append(starts, len(groups)))
        hist.append((groups[starts].astype(np.intp), sizes.astype(np.int64)))
        columns.append(values)
    if check_enabled():  # as valid_rows(..., extremes=True) adds them, without its sweep
        counts[EXTREMES_KEY] = sorted_extremes(columns)
    labels = None if y is None else _distinct_labels(y, valid)
    return {"counts": counts, "hist": hist, "labels": labels}, columns, valid


def order_statistics(
    columns: Sequence[np.ndarray], wanted: Sequence[tuple[int, int]]
) -> dict[tuple[int, int], float]:
    """Value of every wanted (feature, rank) of the sorted ``columns``.

    As the radix selection gives them: -0.0 and +0.0 share one key, which
    stands for +0.0.
    """
    return {(f, r): float(columns[f][r]) + 0.0 for f, r in wanted}


def kept_fraction_bound(
    first: dict[str, Any], columns: Sequence[np.ndarray], wanted: Sequence[tuple[int, int]],
    dtype: np.dtype,
) -> float:
    """Share of the usable rows whose values share a key group with a wanted order statistic.

    The fused plan's bound on the rows it would keep (see
    :mod:`bigkern.reduce.binning.fused`), reported in the same attr.
    """
    ukind, width = key_dtype(dtype)
    shift = ukind(width - GROUP_BITS)
    total = 0
    for f, (groups, sizes) in enumerate(first["hist"]):
        ranks = np.array([r for g, r in wanted if g == f], dtype=np.int64)
        if not len(ranks):
            continue
        targets = np.unique(float_keys(columns[f][ranks]) >> shift).astype(np.intp)
        total += int(sizes[np.searchsorted(groups, targets)].sum())
    return total / first["counts"]["valid"]
