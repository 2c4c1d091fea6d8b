"""Percentile bins of chunked samples in two reads of the data.

Binning needs the exact quantile edges, and exact quantiles need two passes
(see :mod:`bigkern.reduce.binning.quantiles`). The obvious plan reads the data three
times: histogram, refine, bin. bigkern fuses the last two:

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

When the histogram shows that too many rows would be kept (heavy ties at an
edge, e.g. a feature that is mostly zeros), the three-pass plan (histogram,
refine, bin) is used instead. Both plans give bit-identical bins.

``plan="one-read"`` (:mod:`bigkern.reduce.binning.one_read`) places the edges from a
seeded sample instead of the histogram pass and counts the histograms during
the bin-or-keep read: one full read. When that read shows the sample misplaced
an edge, it serves as the fused plan's first read and the fused plan finishes;
the bins are the same in every case.

The histogram also fixes the fixed-point grid of the sums (outliers left
out, see :func:`~bigkern.reduce.binning.outliers.histogram_grid`) and, with the
exact quantiles, counts the outliers: neither costs a read.

Small numpy inputs (at most ``bigkern.in_memory_rows`` rows) skip both
plans' fixed costs — task graphs and 2**20-group tables — and are binned in
memory, in one read, by the same chunk functions (see
:mod:`bigkern.reduce.binning.in_memory`); the bins are the same, bit for bit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import dask
import numpy as np
import xarray as xr

from bigkern import config
from bigkern.cluster.compute import compute
from bigkern.errors import LabelError
from bigkern.reduce.binning._bin_kernels import bin_ids
from bigkern.reduce.binning._key_kernels import certain_bin_ids, certain_bin_sums
from bigkern.reduce.binning.bins import (
    _bin_chunk,
    accumulate_bins,
    binning_pass,
    bins_dataset,
    check_cell_count,
    combine_bins,
    dense_partial,
    padded_edges,
    positive_flags,
    use_dense_sums,
)
from bigkern.reduce.binning.fixed_point import FixedPointGrid
from bigkern.reduce.binning.in_memory import (
    as_numpy_samples,
    first_pass,
    kept_fraction_bound,
    order_statistics,
    use_in_memory,
)
from bigkern.reduce.binning.one_read import OneRead, OneReadSample
from bigkern.reduce.binning.outliers import (
    extreme_examples,
    histogram_grid,
    histogram_outliers,
    outlier_limits,
    record_outliers,
    robust_scaler,
)
from bigkern.reduce.binning.quantiles import (
    DECILES,
    QuantilePlan,
    prepare_samples,
    summary_dataset,
)
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
from bigkern.reduce.extremes import EXTREMES_KEY, warn_suspected_fills
from bigkern.reduce.passes import as_float_block, row_partials, tree_reduce, valid_rows
from bigkern.reduce.row_kernels import take_rows

__all__ = ["PLANS", "OneReadSample", "percentile_bins"]


def _bin_or_keep_chunk(
    Xb: np.ndarray,
    yb: np.ndarray | None,
    mb: np.ndarray | None,
    *,
    tables: np.ndarray,
    n_cells: np.ndarray,
    grid: FixedPointGrid,
    positive: Any,
    classes: tuple[Any, ...] | None,
) -> dict[str, Any]:
    """Bin the rows whose cells are already certain; keep the others (and count all).

    ``tables`` are :func:`cell_tables`; ``n_cells`` the number of cells per feature.
    """
    X = as_float_block(Xb)
    valid, counts = valid_rows(X, mb)
    ukind, width = key_dtype(X.dtype)
    is_positive = positive_flags(yb, valid, positive, classes)
    with_labels = positive is not None
    n_possible = int(np.prod(n_cells, dtype=object))
    if use_dense_sums(n_possible, len(X)):
        count, sums, pos, outside, extreme, kept = certain_bin_sums(
            X, X.view(ukind), valid, is_positive, width, GROUP_BITS, tables, n_cells,
            *grid.kernel_args(), n_possible)
        bins = dense_partial(count, sums, pos, outside, extreme, counts, grid.limb_index,
                             with_labels)
    else:
        ids, kept = certain_bin_ids(X.view(ukind), valid, width, GROUP_BITS, tables, n_cells)
        bins = accumulate_bins(X, ids, is_positive, grid, n_possible, counts, with_labels)
    rows = np.flatnonzero(kept)
    return {"bins": bins, "kept_X": take_rows(X, rows), "kept_positive": is_positive[rows]}


def _refine_kept(part: dict[str, Any], *, buckets: Sequence[Bucket]) -> dict[Any, Any]:
    return refine_rows(part["kept_X"], buckets)


def _finish_chunk(
    part: dict[str, Any], *, edges: tuple[np.ndarray, ...], grid: FixedPointGrid,
    with_labels: bool,
) -> dict[str, Any]:
    X = part["kept_X"]
    padded, n_edges = padded_edges(edges)
    ids = bin_ids(X, np.ones(len(X), dtype=bool), padded, n_edges)
    n_possible = int(np.prod(n_edges + 1, dtype=object))
    kept = accumulate_bins(X, ids, part["kept_positive"], grid, n_possible,
                           {"kept": len(X)}, with_labels)
    return combine_bins([part["bins"], kept])


def percentile_bins(
    X: Any,
    y: Any = None,
    *,
    quantiles: Sequence[float] = DECILES,
    mask: Any = None,
    classes: Sequence[Any] | None = None,
    features: Sequence[str] | None = None,
    fused: bool | None = None,
    in_memory: bool | None = None,
    plan: str | None = None,
    sample: OneReadSample | None = None,
) -> xr.Dataset:
    """Percentile bins of ``X``: exact per-feature quantile edges, then per-bin statistics.

    Parameters
    ----------
    X : array-like or dask array, shape (n, d)
        Samples.
    y : array-like, shape (n,), optional
        Labels with exactly two distinct values among the used rows (or give
        ``classes``); more or fewer raise :class:`~bigkern.errors.LabelError`.
    quantiles : sequence of float
        Split points per feature (deciles: up to 10**d bins).
    mask : array-like of bool, optional
        Rows to use (e.g. labelled pixels).
    classes : (negative, positive), optional
        Class labels; by default the two sorted distinct labels.
    features : sequence of str, optional
        Feature names.
    fused : bool, optional
        Force (True) or forbid (False) the two-read plan; by default it is used
        when at most ``bigkern.max_deferred_fraction`` of the rows would wait
        for the exact edges. Giving it selects a dask plan.
    in_memory : bool, optional
        Force (True: dask inputs are computed into memory first) or forbid
        (False) the in-memory path; by default it is taken when ``X``, ``y``
        and ``mask`` are not dask collections, ``X`` has at most
        ``bigkern.in_memory_rows`` rows and ``fused`` is not given. It gives
        the same bins with no task graph (see :mod:`bigkern.reduce.binning.in_memory`).
    plan : {"one-read", "fused", "three-pass", "in-memory"}, optional
        Choose the plan by name (instead of ``fused``/``in_memory``).
        ``"one-read"`` (see :mod:`bigkern.reduce.binning.one_read`) places the edges
        from a sample, reads the data once, and falls back to the fused plan
        (whose first read it then was) when the read shows that the sample
        misplaced an edge; the bins are the same in every case.
    sample : OneReadSample, optional
        How the one-read plan samples the rows (default ``OneReadSample()``).

    Returns
    -------
    xarray.Dataset
        The :func:`~bigkern.reduce.bin_statistics` result plus ``offset`` and
        ``scale (feature)`` from :func:`~bigkern.reduce.robust_scaler`, the
        quantile edges of ``quantiles`` ∪ {0.1, 0.5, 0.9} as ``quantile_edges``,
        ``outliers (feature)`` (values more than 1000 robust σ from the median;
        a value within 2**-11 relative of that limit, 2**-8 for float64, may
        be left uncounted) and attrs ``n_outliers`` (their total), ``passes``
        (full reads of the data), ``plan`` (``"one-read"``, ``"fused"``,
        ``"three-pass"`` or ``"in-memory"``: the plan that finished), ``n_kept``
        (rows binned after the edges were exact; 0 but in the fused and
        one-read plans) and ``kept_fraction_bound`` (the share of rows the
        fused plan may keep, whichever plan ran). When the one-read plan was
        asked for, also ``one_read`` (``"ok"``, ``"fallback: <why>"`` or
        ``"skipped: <why>"``), ``sample_rows`` (usable rows in the sample) and
        ``sample_chunks_held`` (chunks read for the sample and held in memory
        until the full read reached them: they are not read twice).

    Warns
    -----
    OutlierWarning
        Once per feature with outliers, naming it, their count and the most
        extreme value. They are binned exactly and do not change the other
        bins' centers, but they dominate their own bins.
    SuspectedFillWarning
        Once per feature where a large share of the rows hold one isolated
        extreme value: an undeclared fill value (:mod:`bigkern.reduce.extremes`).
    """
    q = np.asarray(quantiles, dtype=np.float64).ravel()
    fused, in_memory = _plan_choice(plan, fused, in_memory)
    probs = np.union1d(q, [0.1, 0.5, 0.9])
    where = np.searchsorted(probs, q)
    columns = None
    one: OneRead | None = None
    if use_in_memory(X, y, mask, in_memory, fused):
        X, y, mask, names = as_numpy_samples(X, y, mask, features)
        check_cell_count(X.shape[1], len(q))
        first, columns = first_pass(X, y, mask)
    else:
        X, y, mask, names = prepare_samples(X, y, mask, features)
        check_cell_count(X.shape[1], len(q))
        if plan == "one-read":
            user = None if classes is None else tuple(classes)
            one = OneRead(X, y, mask, probs, where, user, names, sample or OneReadSample())
            if not np.all((probs >= 0) & (probs <= 1)):  # the two-read plan names the error
                one.status = "skipped: probabilities outside [0, 1]"
            elif user is not None and len(user) != 2:
                one.status = "skipped: classes are not two labels"
            elif len(where) >= KEEP:
                one.status = f"skipped: {len(where)} quantiles per feature"
            elif one.draw_sample(float(config.get("max_deferred_fraction"))):
                first = one.read()
        if one is None or one.status != "not run":
            first = histogram_pass(X, y, mask)
    if y is not None and classes is None:
        classes = _two_classes(first)
    if classes is not None:
        classes = tuple(classes)
        if len(classes) != 2:
            raise LabelError(f"classes must be two labels (negative, positive); got {classes}")
    positive = classes[1] if classes is not None and y is not None else None

    warn_suspected_fills(first["counts"].get(EXTREMES_KEY), names)
    quantile_plan = QuantilePlan.make(probs, "linear", first["counts"]["valid"])
    done = None
    if one is not None and one.status == "not run":
        done = one.finish(first, quantile_plan, classes, positive)
    if columns is not None:
        res, edge_list, values, hist, grid, kept_bound = _in_memory_plan(
            X, y, mask, first, columns, quantile_plan, where, positive, classes)
        passes, plan_name = 1, "in-memory"
    elif done is not None:
        res, edge_list, values, hist, grid, kept_bound, passes = done
        plan_name = "one-read"
    else:
        res, edge_list, values, hist, grid, kept_bound, passes, plan_name = _dask_plan(
            X, y, mask, first, quantile_plan, where, positive, classes, fused)
    bins = bins_dataset(res, edge_list, grid, names, classes)
    summary = summary_dataset(first, quantile_plan, values, names)
    offset, scale = robust_scaler(summary)
    bins["offset"] = ("feature", offset)
    bins["scale"] = ("feature", scale)
    bins["quantile_edges"] = summary["edges"]
    limits = outlier_limits(offset, scale)
    record_outliers(bins, histogram_outliers(hist, X.dtype, limits),
                    extreme_examples(summary["min"].values, summary["max"].values, limits),
                    limits, names)
    bins.attrs["passes"] = passes
    bins.attrs["plan"] = plan_name
    bins.attrs["kept_fraction_bound"] = float(kept_bound)
    if one is not None:
        bins.attrs.update(one.attrs())
    return bins


PLANS = ("one-read", "fused", "three-pass", "in-memory")


def _plan_choice(
    plan: str | None, fused: bool | None, in_memory: bool | None
) -> tuple[bool | None, bool | None]:
    """``(fused, in_memory)`` of a plan named by ``plan=`` (which excludes the other two)."""
    if plan is None:
        return fused, in_memory
    if plan not in PLANS:
        raise ValueError(f"plan must be one of {PLANS}; got {plan!r}")
    if fused is not None or in_memory is not None:
        raise ValueError("give plan= or fused=/in_memory=, not both")
    return {"one-read": (None, False), "fused": (True, False), "three-pass": (False, False),
            "in-memory": (None, True)}[plan]


def _in_memory_plan(
    X: np.ndarray, y: np.ndarray | None, mask: np.ndarray | None, first: dict[str, Any],
    columns: list[np.ndarray], plan: QuantilePlan, where: np.ndarray, positive: Any,
    classes: tuple[Any, ...] | None,
) -> tuple[Any, ...]:
    """Edges, grid and combined bins of in-memory ``X`` (one chunk), as :func:`_dask_plan`'s."""
    d = X.shape[1]
    hist = first["hist"]  # sparse: no 2**20 table
    wanted = plan.wanted(d)
    kept_bound = kept_fraction_bound(first, columns, wanted, X.dtype)
    grid = histogram_grid(hist, X.dtype)
    if len(where) >= KEEP:
        raise ValueError(f"at most {KEEP - 1} quantiles per feature; got {len(where)}")
    values = order_statistics(columns, wanted)
    edge_values = plan.edges(values, d)[:, where]
    edge_list = tuple(edge_values[f] for f in range(d))
    res = _bin_chunk(X, y if positive is not None else None, mask, edges=edge_list, grid=grid,
                     positive=positive, classes=classes)
    res["counts"]["kept"] = 0
    return res, edge_list, values, hist, grid, kept_bound


def _dask_plan(
    X: Any, y: Any, mask: Any, first: dict[str, Any], plan: QuantilePlan, where: np.ndarray,
    positive: Any, classes: tuple[Any, ...] | None, fused: bool | None,
) -> tuple[Any, ...]:
    """Edges, grid and combined bins of row-chunked ``X`` by the fused or three-pass plan."""
    d = X.shape[1]
    hist = dense_histograms(first)
    selection = RadixSelection(X.dtype, hist, plan.wanted(d))
    groups = selection.top_groups(dict.fromkeys(range(d), plan.hi[where]))
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
        # the look-up tables (2**20 cells per feature) are built once, on a worker
        tables = dask.delayed(cell_tables, pure=True)(upper, keep_groups)
        parts = row_partials(
            _bin_or_keep_chunk, X, y, mask, name="bin-or-keep",
            tables=tables, n_cells=np.full(d, upper.shape[1] + 1, dtype=np.int64),
            grid=grid, positive=positive, classes=classes,
        )
        parts = list(dask.persist(*parts))  # kept rows stay on their workers
        refine = dask.delayed(_refine_kept, pure=True)

        def kept_graph(buckets: Sequence[Bucket]) -> Any:
            return tree_reduce([refine(p, buckets=buckets) for p in parts], combine_refine,
                               name="quantile-refine-combine")

        finish_selection(X, mask, selection, graph=kept_graph)
        values = selection.values()
        edge_values = plan.edges(values, d)[:, where]
        edge_list = tuple(edge_values[f] for f in range(d))
        finals = [dask.delayed(_finish_chunk, pure=True)(
            p, edges=edge_list, grid=grid, with_labels=positive is not None) for p in parts]
        (res,) = compute(tree_reduce(finals, combine_bins, name="bin-finish-combine"),
                         label="percentile bins: binning the kept rows")
        passes = selection.passes + 1
        plan_name = "fused"
    else:
        finish_selection(X, mask, selection)
        values = selection.values()
        edge_values = plan.edges(values, d)[:, where]
        edge_list = tuple(edge_values[f] for f in range(d))
        res = binning_pass(X, y if positive is not None else None, mask, edge_list, grid,
                           positive, classes)
        res["counts"]["kept"] = 0
        passes = selection.passes + 1
        plan_name = "three-pass"
    return res, edge_list, values, first["hist"], grid, kept_bound, passes, plan_name


def _two_classes(first: dict[str, Any]) -> tuple[Any, Any]:
    labels = first["labels"]
    if labels is None or isinstance(labels, str):
        raise LabelError("y has more than 256 distinct values: binned classifiers need two classes")
    if len(labels) < 2:
        raise LabelError(
            f"y has one class only ({labels.tolist()}) among the {first['counts']['valid']} "
            "usable rows: a classifier needs two"
        )
    if len(labels) > 2:
        raise LabelError(
            f"y has {len(labels)} classes ({labels.tolist()[:10]}): binned classifiers take two; "
            "mask out the others (e.g. unlabelled pixels, label 0)"
        )
    return labels[0].item(), labels[1].item()
