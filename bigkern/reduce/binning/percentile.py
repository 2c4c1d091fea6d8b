"""Percentile bins of samples: exact quantile edges, per-bin statistics, robust scale.

:func:`percentile_bins` runs one plan of :mod:`bigkern.reduce.binning.plan` —
by default the fastest exact one that fits the workers' memory — and turns
what it hands back into the bins Dataset. Every plan gives the same bins, bit
for bit; the attrs say which ran.

The first read's key histogram also fixes the fixed-point grid of the sums
(outliers left out, see :func:`~bigkern.reduce.binning.outliers.histogram_grid`)
and, with the exact quantiles, counts the outliers: neither costs a read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import xarray as xr

from bigkern.errors import LabelError
from bigkern.reduce.binning.bins import bins_parts, check_cell_count, checked_classes
from bigkern.reduce.binning.fused import HistogramRun
from bigkern.reduce.binning.in_memory import InMemoryRun
from bigkern.reduce.binning.one_read import OneRead
from bigkern.reduce.binning.outliers import (
    extreme_examples,
    histogram_outliers,
    outlier_limits,
    quantile_scaler,
    warn_outliers,
)
from bigkern.reduce.binning.plan import BinningPlan, PlanResult, PlanRun
from bigkern.reduce.binning.quantiles import DECILES, QuantilePlan, prepare_samples
from bigkern.reduce.extremes import EXTREMES_KEY, warn_suspected_fills
from bigkern.reduce.recorded_histograms import KeyHistogramSource, recorded_run

__all__ = ["percentile_bins", "percentile_bins_parts"]


def percentile_bins(
    X: Any,
    y: Any = None,
    *,
    quantiles: Sequence[float] = DECILES,
    mask: Any = None,
    classes: Sequence[Any] | None = None,
    features: Sequence[str] | None = None,
    plan: str | BinningPlan | None = None,
    recorded: KeyHistogramSource | None = None,
) -> xr.Dataset:
    """Percentile bins of ``X``: exact per-feature quantile edges, then per-bin statistics.

    Parameters
    ----------
    X : array-like or dask array, shape (n, d)
        Samples.
    y : array-like, shape (n,), optional
        Labels: two or more distinct values among the used rows (or give
        ``classes``); one raises :class:`~bigkern.errors.LabelError`, as do
        more than 256 without ``classes``. Every plan counts them in the
        same reads as the features: two classes as positives, k > 2 per
        class (see Returns).
    quantiles : sequence of float
        Split points per feature (deciles: up to 10**d bins).
    mask : array-like of bool, optional
        Rows to use (e.g. labelled pixels).
    classes : sequence of two or more labels, optional
        Class labels: ``(negative, positive)`` for two, or the k classes in
        the order of the ``class`` coordinate; by default the sorted distinct
        labels. Labels outside them raise :class:`~bigkern.errors.LabelError`.
    features : sequence of str, optional
        Feature names.
    plan : str or BinningPlan, optional
        How to read the data: a name out of ``"in-memory"``, ``"one-read"``,
        ``"fused"``, ``"three-pass"``, ``"fused-or-three-pass"``, or a
        :class:`~bigkern.reduce.binning.plan.BinningPlan` (which also holds
        the one-read plan's sample settings). By default
        :meth:`BinningPlan.choose <bigkern.reduce.binning.plan.BinningPlan.choose>`
        picks the fastest that fits the workers' memory. The bins are the same
        whatever the plan.
    recorded : KeyHistogramSource, optional
        ``Samples.recorded``, or the source ``recorded_split`` gives with a first part:
        see :func:`bigkern.reduce.recorded_histograms.recorded_run`.

    Returns
    -------
    xarray.Dataset
        The :func:`~bigkern.reduce.bin_statistics` result (with two classes
        ``positive``, ``fuzzy_label``, ``majority_label`` and ``label_sum``;
        with k > 2 ``class_count (bin, class)`` and ``majority_label``) plus ``offset`` and
        ``scale (feature)`` from :func:`~bigkern.reduce.robust_scaler` (``by_span``), the
        quantile edges of ``quantiles`` ∪ {0.1, 0.5, 0.9} as ``quantile_edges``,
        ``outliers (feature)`` (values more than 1000 robust σ from the median;
        a value within 2**-11 relative of that limit, 2**-8 for float64, may
        be left uncounted) and attrs ``n_outliers`` (their total), ``passes``
        (full reads of the data), ``plan`` (the plan that finished:
        ``"in-memory"``, ``"one-read"``, ``"fused"`` or ``"three-pass"``),
        ``n_kept`` (rows binned after the edges were exact) and
        ``kept_fraction_bound`` (the share of rows the fused plan may keep,
        whichever plan ran). After the one-read plan, also ``one_read``
        (``"ok"``, ``"fallback: <why>"`` or ``"skipped: <why>"``),
        ``sample_rows`` and ``sample_chunks_held`` (chunks read for the sample
        and held in memory until the full read reached them).

    Warns
    -----
    OutlierWarning
        Once per feature with outliers, naming it, their count and the most
        extreme value. They are binned exactly and do not change the other
        bins' centers, but they dominate their own bins.
    SuspectedFillWarning
        Once per feature where a large share of the rows hold one isolated
        extreme value: an undeclared fill value (:mod:`bigkern.reduce.extremes`).

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern.reduce import percentile_bins
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((1000, 2))
    >>> y = np.where(X[:, 0] > 0, 1, -1)
    >>> bins = percentile_bins(X, y, quantiles=[0.25, 0.5, 0.75])
    >>> bins.attrs["plan"], bins.sizes["bin"], int(bins["count"].sum())
    ('in-memory', 16, 1000)
    >>> same = percentile_bins(X, y, quantiles=[0.25, 0.5, 0.75], plan="three-pass")
    >>> bool((same["center"] == bins["center"]).all())
    True

    Three classes are counted per bin and class:

    >>> y3 = np.digitize(X[:, 1], [-0.5, 0.5])  # classes 0, 1, 2
    >>> bins3 = percentile_bins(X, y3, quantiles=[0.25, 0.5, 0.75])
    >>> bins3["class_count"].dims, bins3["class"].values.tolist()
    (('bin', 'class'), [0, 1, 2])
    >>> bins3["class_count"].sum("bin").values.tolist() == np.bincount(y3).tolist()
    True
    """
    return xr.Dataset(*percentile_bins_parts(
        X, y, quantiles=quantiles, mask=mask, classes=classes, features=features, plan=plan,
        recorded=recorded, stacklevel=4))


def percentile_bins_parts(
    X: Any, y: Any = None, *, quantiles: Sequence[float] = DECILES, mask: Any = None,
    classes: Sequence[Any] | None = None, features: Sequence[str] | None = None,
    plan: str | BinningPlan | None = None, recorded: KeyHistogramSource | None = None,
    stacklevel: int = 3,
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """:func:`percentile_bins` as its data variables, coordinates and attrs (``stacklevel``:
    its SuspectedFillWarning's), not built into the Dataset, which costs more than the rest
    of the summary on small inputs: for a fit, which reads the arrays.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> from bigkern.reduce import percentile_bins
    >>> X = np.random.default_rng(0).standard_normal((1000, 2))
    >>> parts = percentile_bins_parts(X, X[:, 0] > 0, quantiles=[0.5])
    >>> xr.Dataset(*parts).identical(percentile_bins(X, X[:, 0] > 0, quantiles=[0.5]))
    True
    """
    q = np.asarray(quantiles, dtype=np.float64).ravel()
    probs = np.union1d(q, [0.1, 0.5, 0.9])
    where = np.searchsorted(probs, q)
    run, plan, note = recorded_run(plan, recorded, X, y, mask, features, where)
    run = run or _start(BinningPlan.resolve(plan, X, y, mask), X, y, mask, features, probs,
                        where, classes)
    first = run.first_read()
    if run.y is not None and classes is None:
        classes = _found_classes(first)
    if classes is not None:
        classes = checked_classes(classes)
    warn_suspected_fills(first["counts"].get(EXTREMES_KEY), run.names, stacklevel=stacklevel)
    quantile_plan = QuantilePlan.make(probs, "linear", first["counts"]["valid"])
    result = run.finish(first, quantile_plan, classes if run.y is not None else None)
    parts = _parts_with_summary(result, first, quantile_plan, run.names, classes, run.X.dtype)
    parts[2].update(run.attrs() if note is None else {**run.attrs(), "recorded": note})
    return parts


def _start(
    plan: BinningPlan, X: Any, y: Any, mask: Any, features: Sequence[str] | None,
    probs: np.ndarray, where: np.ndarray, classes: Sequence[Any] | None,
) -> PlanRun:
    """A run of ``plan`` on the prepared inputs (numpy for in-memory, else row-chunked dask)."""
    if plan.name == "in-memory":
        return InMemoryRun.start(X, y, mask, features, where=where)
    X, y, mask, names = prepare_samples(X, y, mask, features)
    check_cell_count(X.shape[1], len(where))
    if plan.name == "one-read":
        return OneRead(X, y, mask, probs, where, None if classes is None else tuple(classes),
                       names, plan.sample)
    fused = {"fused": True, "three-pass": False}.get(plan.name)  # else the histogram decides
    return HistogramRun(X, y, mask, names, where, fused)


def _parts_with_summary(
    result: PlanResult, first: dict[str, Any], quantile_plan: QuantilePlan,
    names: Sequence[str], classes: tuple[Any, ...] | None, dtype: np.dtype,
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The bins' parts of a plan's result, with the robust scale, quantiles and outliers.

    The quantile summary's edges, minima and maxima (those of
    :func:`~bigkern.reduce.binning.quantiles.summary_dataset`) are taken as
    arrays, and every variable goes into the one Dataset the parts make.
    """
    data_vars, coords, attrs = bins_parts(result.bins, result.edges, result.grid, names,
                                          classes)
    values, d, probs = result.order_statistics, len(names), quantile_plan.probs
    edges = quantile_plan.edges(values, d)
    vmin = np.array([values[(f, 0)] for f in range(d)], dtype=np.float64)
    vmax = np.array([values[(f, quantile_plan.n - 1)] for f in range(d)], dtype=np.float64)
    offset, scale = quantile_scaler(edges, probs, vmin, vmax)
    limits = outlier_limits(*quantile_scaler(edges, probs))
    outliers = np.asarray(histogram_outliers(result.histograms, dtype, limits), dtype=np.int64)
    data_vars["offset"] = ("feature", offset)
    data_vars["scale"] = ("feature", scale)
    data_vars["quantile_edges"] = (("feature", "quantile"), edges)
    data_vars["outliers"] = ("feature", outliers)  # as record_outliers puts them
    coords["quantile"] = probs
    attrs["n_outliers"] = int(outliers.sum())
    attrs["passes"] = result.passes
    attrs["plan"] = result.plan
    attrs["kept_fraction_bound"] = float(result.kept_fraction_bound)
    warn_outliers(outliers, extreme_examples(vmin, vmax, limits), limits, names)
    return data_vars, coords, attrs


def _found_classes(first: dict[str, Any]) -> tuple[Any, ...]:
    """The sorted distinct labels the first read found among the usable rows (two or more)."""
    labels = first["labels"]
    if labels is None or isinstance(labels, str):
        raise LabelError("y has more than 256 distinct values: binned classifiers take at most "
                         "256 classes (give classes= to count more, or mask out the others)")
    if len(labels) < 2:
        raise LabelError(
            f"y has one class only ({labels.tolist()}) among the {first['counts']['valid']} "
            "usable rows: a classifier needs two"
        )
    return tuple(c.item() if hasattr(c, "item") else c for c in labels)
