"""Percentile binning: per-bin statistics of chunked samples in one distributed pass.

Each feature is cut at its quantile edges into cells ``0 … len(edges)``; a
value ``x`` falls in cell ``j`` when ``edges[j-1] < x <= edges[j]`` (the value
at a quantile belongs to the lower cell). A sample's bin is the mixed-radix
(C-order) index of its cells, as :func:`numpy.ravel_multi_index` gives it.
Only occupied bins ever exist: each chunk reports the bins it sees (sorted
ids and sums), partials are merged in a tree, and empty bins are counted.

Sums of features are accumulated in **fixed point** — every value is rounded
to a grid of ``B / 2**30``, where ``B`` is the largest ``|x|`` that is not an
outlier (about 100 times finer than float32's own resolution), and summed as
exact multi-limb integers (see :mod:`bigkern.reduce.binning.fixed_point`) — so that
bin centers are bit-for-bit the same whatever the chunking and the number of
workers (integer sums are exact and associative, float sums are not), and a
wild value (say ``1e12``) changes no other bin's center. Features with values
far outside their robust scale are reported with an :class:`OutlierWarning`
(see :mod:`bigkern.reduce.binning.outliers`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import xarray as xr

from bigkern.errors import LabelError
from bigkern.reduce.binning._bin_loops import bin_ids
from bigkern.reduce.binning.fixed_point import (
    FixedPointGrid,
    exact_means,
    fixed_point_scales,
)
from bigkern.reduce.binning.outliers import (
    OutlierWarning,
    histogram_grid,
    record_outliers,
    robust_scaler,
    summary_grid,
)
from bigkern.reduce.binning.partials import (
    accumulate_bins,
    combine_bins,
    padded_edges,
    row_labels,
)
from bigkern.reduce.binning.radix_select import dense_histograms, histogram_pass
from bigkern.reduce.passes import (
    RowReduction,
    as_float_block,
    as_row_chunked,
    int_counts,
    run_reduction,
    valid_rows,
)

__all__ = [
    "OutlierWarning",
    "bin_index",
    "bin_rows",
    "bin_statistics",
    "bins_dataset",
    "bins_parts",
    "check_cell_count",
    "checked_classes",
    "fixed_point_scales",
    "n_classes_of",
    "robust_scaler",
]


def bin_index(X: np.ndarray, edges: Sequence[np.ndarray]) -> np.ndarray:
    """Flat bin id of each row of ``X`` (n, d) for per-feature ``edges`` (C-order mixed radix)."""
    X = np.asarray(X)
    cells = [np.searchsorted(np.asarray(e), X[:, f], side="left") for f, e in enumerate(edges)]
    dims = tuple(len(e) + 1 for e in edges)
    if not cells:
        return np.zeros(len(X), dtype=np.int64)
    return np.ravel_multi_index(cells, dims).astype(np.int64)



def bin_statistics(
    X: Any,
    y: Any = None,
    edges: xr.DataArray | xr.Dataset | Sequence[Sequence[float]] | None = None,
    *,
    mask: Any = None,
    classes: Sequence[Any] | None = None,
    value_range: Any = None,
    features: Sequence[str] | None = None,
) -> xr.Dataset:
    """Statistics of every occupied percentile bin, in one distributed pass.

    Parameters
    ----------
    X : array-like or dask array, shape (n, d)
        Samples; rows with a non-finite feature or a false ``mask`` are left
        out and counted.
    y : array-like, shape (n,), optional
        Labels. With two ``classes`` (the second is the *positive* class,
        e.g. ``(-1, 1)`` clear/cloud) the number of positive samples per bin
        is counted, giving fuzzy and majority labels; with more, the number
        of samples of each class per bin.
    edges : xarray.Dataset, xarray.DataArray or list of arrays
        Per-feature cut points: the output of
        :func:`~bigkern.reduce.quantile_summary` (whose ``min``/``max`` and
        10%, 50% and 90% quantiles also fix the fixed-point grid and the
        outlier limits), an ``edges (feature, quantile)`` DataArray, or one
        increasing array per feature.
    mask : array-like of bool, shape (n,), optional
        Rows to use.
    classes : sequence of two or more distinct labels, optional
        ``(negative, positive)``, or k classes in the order of the ``class``
        coordinate. Labels outside it raise :class:`LabelError`.
    value_range : array-like, shape (d,), optional
        ``max |x|`` per feature, which then sets the fixed-point grid. Without
        it and without a quantile summary, an extra pass (the key histogram
        of :func:`~bigkern.reduce.quantile_summary`) finds a grid that
        outliers do not coarsen.
    features : sequence of str, optional
        Feature names (taken from ``edges`` when it has a ``feature`` coordinate).

    Returns
    -------
    xarray.Dataset
        dims ``(bin, feature)``: ``bin`` (flat id), ``cell (bin, feature)``,
        ``count (bin)``, ``center (bin, feature)``; with two classes also
        ``positive``, ``fuzzy_label`` (share of the positive class),
        ``majority_label`` (ties go to the positive class) and ``label_sum``
        (positives minus negatives); with k > 2 classes ``class_count (bin,
        class)`` (rows of each class, the ``class`` coordinate holding the
        classes) and ``majority_label`` (the most frequent class; ties go to
        the class later in ``classes``, as in the binary case). With labels
        the attrs also hold ``classes`` and ``n_majority_ties``. attrs: ``n_bins_possible``,
        ``n_bins_empty``, and the row counts ``n_rows``, ``n_valid``,
        ``n_masked``, ``n_absent``, ``n_nonfinite``. When ``edges`` is a
        quantile summary with the 10%, 50% and 90% quantiles, also
        ``outliers (feature)``, the number of values more than 1000 robust σ
        from the median (see :func:`robust_scaler`), and their total
        ``n_outliers``; a feature that has any gets an :class:`OutlierWarning`.

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern.reduce import bin_statistics
    >>> X = np.array([[0.0, 1.0], [0.5, 3.0], [0.75, 3.5], [2.0, 4.0]])
    >>> bins = bin_statistics(X, edges=[[0.75], [2.5]])
    >>> bins["cell"].values.tolist(), bins["count"].values.tolist()
    ([[0, 0], [0, 1], [1, 1]], [1, 2, 1])
    >>> bins["center"].values[1].tolist()
    [0.625, 3.25]
    """
    if edges is None:
        raise ValueError("edges are required: pass the output of quantile_summary")
    X, y, mask = as_row_chunked(X, y, mask)
    edge_list, names, summary = _edge_arrays(edges, X.shape[1], features)
    grid = _statistics_grid(X, mask, value_range, summary)
    if classes is not None:
        classes = checked_classes(classes)
        if y is None:
            raise LabelError("classes were given but no labels y")

    res = binning_pass(X, y, mask, edge_list, grid, classes)
    bins = bins_dataset(res, edge_list, grid, names, classes)
    if np.isfinite(grid.limits).any():
        record_outliers(bins, res["outside"], res["extreme"], grid.limits, names)
    return bins


def _edge_arrays(
    edges: xr.DataArray | xr.Dataset | Sequence[Sequence[float]], d: int,
    features: Sequence[str] | None,
) -> tuple[tuple[np.ndarray, ...], list[str], xr.Dataset | None]:
    """:func:`bin_statistics`' ``edges`` as one checked float64 array per feature.

    Also the feature names (``features``, else those of ``edges``, else
    ``f0, f1, …``) and the quantile summary when ``edges`` is one.
    """
    names = list(features) if features is not None else None
    summary = None
    if isinstance(edges, xr.Dataset):
        summary = edges
        names = names or [str(f) for f in edges["feature"].values]
        edges = edges["edges"]
    if isinstance(edges, xr.DataArray):
        names = names or [str(f) for f in edges["feature"].values]
        edge_list = tuple(np.asarray(edges.sel(feature=f).values, dtype=np.float64).ravel()
                          for f in edges["feature"].values)
    else:
        edge_list = tuple(np.asarray(e, dtype=np.float64).ravel() for e in edges)
    if len(edge_list) != d:
        raise ValueError(f"edges are given for {len(edge_list)} features but X has {d} columns")
    for f, e in enumerate(edge_list):
        if np.any(np.diff(e) < 0) or not np.all(np.isfinite(e)):
            raise ValueError(f"edges of feature {f} must be finite and non-decreasing; got {e}")
    names = names or [f"f{i}" for i in range(d)]
    dims = tuple(len(e) + 1 for e in edge_list)
    n_possible = int(np.prod(dims, dtype=object))
    if n_possible >= 2**62:
        raise ValueError(f"{n_possible} possible bins do not fit a 64-bit bin id; use fewer "
                         "features or fewer quantiles")
    return edge_list, names, summary


def _statistics_grid(
    X: Any, mask: Any, value_range: Any, summary: xr.Dataset | None
) -> FixedPointGrid:
    """The fixed-point grid of :func:`bin_statistics`' sums.

    From ``value_range``, else from the quantile summary, else from an extra
    histogram pass over ``X``, whose grid outliers do not coarsen.
    """
    grid = None
    if value_range is not None:
        absmax = np.asarray(value_range, dtype=np.float64)
        grid = FixedPointGrid.make(absmax, absmax)
    elif summary is not None:
        grid = summary_grid(summary)
    if grid is None:
        dtype = X.dtype if X.dtype in (np.float32, np.float64) else np.dtype(np.float64)
        grid = histogram_grid(dense_histograms(histogram_pass(X, None, mask)), dtype)
    return grid


def _bin_chunk(
    Xb: np.ndarray,
    yb: np.ndarray | None,
    mb: np.ndarray | None,
    *,
    edges: tuple[np.ndarray, ...],
    grid: FixedPointGrid,
    classes: tuple[Any, ...] | None,
) -> dict[str, Any]:
    """The binning pass's chunk function: the partial bins of one chunk for known edges."""
    X = as_float_block(Xb)
    valid, counts = valid_rows(X, mb)
    return bin_rows(X, yb, valid, counts, edges=edges, grid=grid, classes=classes)


def bin_rows(
    X: np.ndarray,
    yb: np.ndarray | None,
    valid: np.ndarray,
    counts: dict[str, Any],
    *,
    edges: tuple[np.ndarray, ...],
    grid: FixedPointGrid,
    classes: tuple[Any, ...] | None,
) -> dict[str, Any]:
    """:func:`_bin_chunk` for rows already checked: ``X`` a C-contiguous float32/float64
    block, ``valid`` and ``counts`` what :func:`~bigkern.reduce.passes.valid_rows` gives
    for it (the in-memory plan's first pass has them). ``classes`` are those counted
    (None: no labels)."""
    padded, n_edges = padded_edges(edges)
    ids = bin_ids(X, valid, padded, n_edges)
    labels = row_labels(yb, valid, classes)
    n_possible = int(np.prod(n_edges + 1, dtype=object))
    return accumulate_bins(X, ids, labels, grid, n_possible, counts, classes is not None,
                           n_classes_of(classes))


def checked_classes(classes: Sequence[Any]) -> tuple[Any, ...]:
    """``classes`` as a tuple of two or more distinct labels, else :class:`LabelError`."""
    classes = tuple(classes)
    if len(classes) < 2:
        raise LabelError(f"classes must be two or more labels (for two: negative, positive); "
                         f"got {list(classes)}")
    if len(set(classes)) != len(classes):
        raise LabelError(f"classes must be distinct; got {list(classes)}")
    return classes


def n_classes_of(classes: Sequence[Any] | None) -> int:
    """How many classes the bins count (0 without labels)."""
    return 0 if classes is None else len(classes)


#: Bin ids are int64 flat indices into the product of the features' cells.
MAX_CELLS = 2**63 - 1


def check_cell_count(d: int, n_quantiles: int) -> None:
    """Refuse a binning whose ``(n_quantiles + 1) ** d`` possible cells overflow a bin id.

    Past that, flat bin ids would wrap around and distinct cells would share a bin
    (at deciles: more than 18 features).
    """
    per_feature = n_quantiles + 1
    if d and per_feature ** d > MAX_CELLS:
        most = 1
        while per_feature ** (most + 1) <= MAX_CELLS:
            most += 1
        raise ValueError(
            f"percentile bins of {d} features at {n_quantiles} quantiles have up to "
            f"{per_feature}^{d} cells, more than a 64-bit bin id can number: bin at most "
            f"{most} features at these quantiles, or fit a reduced-kernel model "
            f"(ReducedSVC, NystromKernelRidgeClassifier), which takes any number")


#: The binning pass: per chunk, the statistics of each occupied bin (counts, exact
#: fixed-point sums, labels); combined by adding bin by bin.
BIN_STATISTICS = RowReduction("bin-statistics", chunk=_bin_chunk, combine=combine_bins)


def binning_pass(
    X: Any, y: Any, mask: Any, edge_list: tuple[np.ndarray, ...], grid: FixedPointGrid,
    classes: tuple[Any, ...] | None,
) -> dict[str, Any]:
    """One distributed pass: the combined partial bins of row-chunked ``X`` (the labels
    ``y`` of ``classes`` counted; none when ``classes`` is None)."""
    return run_reduction(BIN_STATISTICS, X, y if classes is not None else None, mask,
                         edges=edge_list, grid=grid, classes=classes,
                         label="binning: bin statistics pass")


def bins_dataset(
    res: dict[str, Any], edge_list: Sequence[np.ndarray], grid: FixedPointGrid,
    names: Sequence[str], classes: Sequence[Any] | None,
) -> xr.Dataset:
    """The bins Dataset from a combined partial (see :func:`bin_statistics`)."""
    data_vars, coords, attrs = bins_parts(res, edge_list, grid, names, classes)
    return xr.Dataset(data_vars, coords=coords, attrs=attrs)


def bins_parts(
    res: dict[str, Any], edge_list: Sequence[np.ndarray], grid: FixedPointGrid,
    names: Sequence[str], classes: Sequence[Any] | None,
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The variables, coordinates and attrs of :func:`bins_dataset`, in its order.

    For a caller that adds variables of its own and builds the Dataset once
    (each added variable would align the whole Dataset again).
    """
    dims = tuple(len(e) + 1 for e in edge_list)
    n_possible = int(np.prod(dims, dtype=object))
    d = len(edge_list)
    n = res["n"]
    cells = (np.stack(np.unravel_index(res["bin"], dims), axis=1).astype(np.int32) if len(n)
             else np.zeros((0, d), dtype=np.int32))
    center = exact_means(res["sum"], n, grid)
    data_vars: dict[str, Any] = {
        "cell": (("bin", "feature"), cells),
        "count": ("bin", n),
        "center": (("bin", "feature"), center),
        "edge": (("feature", "edge_index"),
                 np.array([np.pad(e, (0, max(dims) - 1 - len(e)), constant_values=np.nan)
                           for e in edge_list])),
    }
    coords: dict[str, Any] = {"bin": res["bin"], "feature": list(names)}
    attrs: dict[str, Any] = {
        "n_bins_possible": n_possible,
        "n_bins_occupied": len(n),
        "n_bins_empty": n_possible - len(n),
        **int_counts(res["counts"]),
    }
    if res["positive"] is not None and classes is not None:
        pos = res["positive"]
        data_vars["positive"] = ("bin", pos)
        data_vars["fuzzy_label"] = ("bin", pos / n)
        data_vars["majority_label"] = ("bin", np.where(2 * pos >= n, classes[1], classes[0]))
        data_vars["label_sum"] = ("bin", 2 * pos - n)
        attrs["classes"] = [c.item() if hasattr(c, "item") else c for c in classes]
        attrs["n_majority_ties"] = int(np.sum(2 * pos == n))
    elif res.get("class_count") is not None and classes is not None:
        counted = res["class_count"]
        k = len(classes)
        # the most frequent class; ties to the later one, as two classes' ties go to the positive
        last_max = k - 1 - np.argmax(counted[:, ::-1], axis=1)
        data_vars["class_count"] = (("bin", "class"), counted)
        data_vars["majority_label"] = ("bin", np.asarray(classes)[last_max])
        coords["class"] = np.asarray(classes)
        attrs["classes"] = [c.item() if hasattr(c, "item") else c for c in classes]
        attrs["n_majority_ties"] = int(np.sum(
            (counted == counted.max(axis=1, initial=0)[:, None]).sum(axis=1) > 1))
    return data_vars, coords, attrs
