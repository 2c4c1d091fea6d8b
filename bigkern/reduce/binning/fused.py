"""The fused two-read plan and the three-pass plan of percentile binning.

Binning needs the exact quantile edges, and exact quantiles need two passes
(see :mod:`bigkern.reduce.binning.quantiles`). The obvious plan reads the data three
times: histogram, refine, bin. The fused plan merges the last two:

1. **Histogram pass** — top-20-bit key histograms per feature. Each edge is
   now known to lie between two order statistics in known key *groups*.
2. **Binning pass** — every chunk bins at once each row none of whose
   values falls in a group holding an edge (its cells follow from the group
   order alone, by one table look-up per value), and keeps the few rows
   that do (typically well under 1 %) in its worker's memory.
3. The kept rows contain every value of the groups that hold an edge, so
   the exact edges are selected from them alone, then they are binned where
   they are and merged into the partial bins. Only small partials travel,
   and the store is read twice.

When the histogram shows that too many rows would be kept (more than
``bigkern.max_deferred_fraction``: heavy ties at an edge, e.g. a feature that
is mostly zeros), the ``"fused-or-three-pass"`` plan runs the three-pass plan
(histogram, refine, bin) instead. Both give bit-identical bins. The one-read
plan (:mod:`bigkern.reduce.binning.one_read`) finishes here too when its
sample misplaced an edge: its read was then this plan's histogram pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import dask
import numpy as np

from bigkern import config
from bigkern.cluster.compute import compute
from bigkern.reduce.binning._bin_loops import bin_ids
from bigkern.reduce.binning._key_loops import certain_bin_ids, certain_bin_sums
from bigkern.reduce.binning.bins import binning_pass, n_classes_of
from bigkern.reduce.binning.fixed_point import FixedPointGrid
from bigkern.reduce.binning.outliers import histogram_grid
from bigkern.reduce.binning.partials import (
    accumulate_bins,
    combine_bins,
    dense_partial,
    padded_edges,
    row_labels,
    use_dense_sums,
)
from bigkern.reduce.binning.plan import PlanResult
from bigkern.reduce.binning.quantiles import QuantilePlan
from bigkern.reduce.binning.radix_select import (
    GROUP_BITS,
    KEEP,
    Bucket,
    RadixSelection,
    cell_tables,
    combine_refine,
    dense_histograms,
    finish_selection,
    histogram_pass,
    key_dtype,
    refine_rows,
)
from bigkern.reduce.passes import as_float_block, row_partials, tree_reduce, valid_rows
from bigkern.reduce.row_loops import take_rows

__all__ = ["HistogramRun", "histogram_plan_bins"]


@dataclass
class HistogramRun:
    """A run of the ``"fused"``, ``"three-pass"`` or ``"fused-or-three-pass"`` plan.

    ``fused`` is True, False or None (the histogram decides). ``X``, ``y`` and
    ``mask`` are row-chunked dask arrays
    (:func:`~bigkern.reduce.binning.quantiles.prepare_samples`).
    """

    X: Any
    y: Any
    mask: Any
    names: list[str]
    where: np.ndarray
    fused: bool | None = None

    def first_read(self) -> dict[str, Any]:
        """The histogram pass."""
        return histogram_pass(self.X, self.y, self.mask)

    def finish(self, first: dict[str, Any], quantile_plan: QuantilePlan,
               classes: tuple[Any, ...] | None) -> PlanResult:
        """The fused or three-pass plan's reads after the histogram pass."""
        return histogram_plan_bins(self.X, self.y, self.mask, first, quantile_plan, self.where,
                                   classes, self.fused)

    def attrs(self) -> dict[str, Any]:
        """No attrs beyond the plan's result."""
        return {}


def histogram_plan_bins(
    X: Any, y: Any, mask: Any, first: dict[str, Any], quantile_plan: QuantilePlan,
    where: np.ndarray, classes: tuple[Any, ...] | None, fused: bool | None,
) -> PlanResult:
    """Edges, grid and combined bins of row-chunked ``X`` by the fused or three-pass plan.

    ``first`` is the histogram pass's result; ``classes`` those whose labels
    are counted (None: none); ``fused`` None lets the share of rows the fused
    plan would keep decide (at most ``bigkern.max_deferred_fraction``: fused).
    """
    d = X.shape[1]
    hist = dense_histograms(first)
    selection = RadixSelection(X.dtype, hist, quantile_plan.wanted(d))
    groups = selection.top_groups(dict.fromkeys(range(d), quantile_plan.hi[where]))
    upper = np.stack([groups[f] for f in range(d)])
    keep_groups = tuple(selection.target_groups(f) for f in range(d))
    n_valid = first["counts"]["valid"]
    kept_bound = sum(int(hist[f, keep_groups[f]].sum()) for f in range(d)) / n_valid
    if fused is None:
        fused = kept_bound <= float(config.get("max_deferred_fraction"))
    grid = histogram_grid(first["hist"], X.dtype)  # the sparse form: no 2**20 scan
    if len(where) >= KEEP:
        raise ValueError(f"at most {KEEP - 1} quantiles per feature; got {len(where)}")

    if fused:
        res, edge_list = _fused_bins(X, y, mask, selection, upper, keep_groups, grid,
                                     quantile_plan, where, classes)
    else:
        finish_selection(X, mask, selection)
        edge_list = _selected_edges(selection, quantile_plan, where, d)
        res = binning_pass(X, y, mask, edge_list, grid, classes)
        res["counts"]["kept"] = 0
    return PlanResult(res, edge_list, selection.values(), first["hist"], grid, kept_bound,
                      selection.passes + 1, "fused" if fused else "three-pass")


def _selected_edges(selection: RadixSelection, quantile_plan: QuantilePlan, where: np.ndarray,
                    d: int) -> tuple[np.ndarray, ...]:
    """Per feature, the edges of a finished selection."""
    edge_values = quantile_plan.edges(selection.values(), d)[:, where]
    return tuple(edge_values[f] for f in range(d))


def _fused_bins(
    X: Any, y: Any, mask: Any, selection: RadixSelection, upper: np.ndarray,
    keep_groups: tuple[np.ndarray, ...], grid: FixedPointGrid, quantile_plan: QuantilePlan,
    where: np.ndarray, classes: tuple[Any, ...] | None,
) -> tuple[dict[str, Any], tuple[np.ndarray, ...]]:
    """The fused plan's bin-or-keep read, the selection from the kept rows, their binning."""
    d = X.shape[1]
    # the look-up tables (2**20 cells per feature) are built once, on a worker
    tables = dask.delayed(cell_tables, pure=True)(upper, keep_groups)
    parts = row_partials(
        _bin_or_keep_chunk, X, y, mask, name="bin-or-keep",
        tables=tables, n_cells=np.full(d, upper.shape[1] + 1, dtype=np.int64),
        grid=grid, classes=classes,
    )
    parts = list(dask.persist(*parts))  # kept rows stay on their workers
    refine = dask.delayed(_refine_kept, pure=True)

    def kept_graph(buckets: Sequence[Bucket]) -> Any:
        return tree_reduce([refine(p, buckets=buckets) for p in parts], combine_refine,
                           name="quantile-refine-combine")

    finish_selection(X, mask, selection, graph=kept_graph)
    edge_list = _selected_edges(selection, quantile_plan, where, d)
    finals = [dask.delayed(_finish_chunk, pure=True)(
        p, edges=edge_list, grid=grid, n_classes=n_classes_of(classes)) for p in parts]
    (res,) = compute(tree_reduce(finals, combine_bins, name="bin-finish-combine"),
                     label="percentile bins: binning the kept rows")
    return res, edge_list


def _bin_or_keep_chunk(
    Xb: np.ndarray,
    yb: np.ndarray | None,
    mb: np.ndarray | None,
    *,
    tables: np.ndarray,
    n_cells: np.ndarray,
    grid: FixedPointGrid,
    classes: tuple[Any, ...] | None,
) -> dict[str, Any]:
    """Bin the rows whose cells are already certain; keep the others (and count all).

    ``tables`` are :func:`cell_tables`; ``n_cells`` the number of cells per
    feature. More than two classes are counted from the bin ids (the dense
    sweep does not give them).
    """
    X = as_float_block(Xb)
    valid, counts = valid_rows(X, mb)
    ukind, width = key_dtype(X.dtype)
    labels = row_labels(yb, valid, classes)
    n_classes = n_classes_of(classes)
    n_possible = int(np.prod(n_cells, dtype=object))
    if use_dense_sums(n_possible, len(X)) and n_classes <= 2:
        count, sums, pos, outside, extreme, kept = certain_bin_sums(
            X, X.view(ukind), valid, labels, width, GROUP_BITS, tables, n_cells,
            *grid.kernel_args(), n_possible)
        bins = dense_partial(count, sums, pos, outside, extreme, counts, grid.limb_index,
                             n_classes > 0)
    else:
        ids, kept = certain_bin_ids(X.view(ukind), valid, width, GROUP_BITS, tables, n_cells)
        bins = accumulate_bins(X, ids, labels, grid, n_possible, counts, n_classes > 0,
                               n_classes)
    rows = np.flatnonzero(kept)
    return {"bins": bins, "kept_X": take_rows(X, rows), "kept_labels": labels[rows]}


def _refine_kept(part: dict[str, Any], *, buckets: Sequence[Bucket]) -> dict[Any, Any]:
    return refine_rows(part["kept_X"], buckets)


def _finish_chunk(
    part: dict[str, Any], *, edges: tuple[np.ndarray, ...], grid: FixedPointGrid,
    n_classes: int,
) -> dict[str, Any]:
    X = part["kept_X"]
    padded, n_edges = padded_edges(edges)
    ids = bin_ids(X, np.ones(len(X), dtype=bool), padded, n_edges)
    n_possible = int(np.prod(n_edges + 1, dtype=object))
    kept = accumulate_bins(X, ids, part["kept_labels"], grid, n_possible,
                           {"kept": len(X)}, n_classes > 0, n_classes)
    return combine_bins([part["bins"], kept])
