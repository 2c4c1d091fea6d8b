"""Percentile bins of k classes: per bin, the rows of each class, in every plan.

The reference is a direct count: each usable row's bin from the bins' own edges
(:func:`bigkern.reduce.bin_index`), then the rows of each class per bin. Every
plan, at any chunking, gives it in the same reads as two classes; two classes
keep today's Dataset (``positive``, ``fuzzy_label``, no ``class_count``).
"""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st

from bigkern import config
from bigkern.errors import LabelError
from bigkern.reduce import bin_index, bin_statistics, percentile_bins
from bigkern.reduce.binning.one_read import OneReadSample, sample_windows
from bigkern.reduce.binning.plan import BinningPlan
from bigkern.reduce.class_counts import bin_class_counts, class_codes
from tests.reduce.plan_attrs import without_plan

PLANS = ("in-memory", "one-read", "fused", "three-pass")
QUARTILES = (0.25, 0.5, 0.75)


def _data(n: int = 6000, seed: int = 0, labels: str = "str"):
    """Three features (NaN in some rows), four classes that depend on them, unlabelled rows."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 3)).astype(np.float32)
    x[::89, 1] = np.nan
    score = x[:, 0] + 0.5 * rng.standard_normal(n)
    code = np.digitize(score, [-0.8, 0.0, 0.9])  # 0..3, uneven shares
    names = {"str": np.array(["clear", "haze", "cloud", "snow"]),
             "int": np.array([3, 1, 2, 7], dtype=np.int16),
             "float": np.array([0.5, 1.5, 2.5, 3.5])}[labels]
    y = names[code]
    mask = rng.random(n) > 0.1  # about a tenth unlabelled
    return x, y, mask


def _direct_counts(x, y, mask, bins):
    """(bin ids, per-class counts (bins, k)) counted row by row from the bins' edges."""
    edges = [e[~np.isnan(e)] for e in bins["edge"].values]
    usable = np.isfinite(x).all(axis=1) & (np.ones(len(x), bool) if mask is None else mask)
    ids = bin_index(x[usable].astype(np.float64), edges)
    classes = bins["class"].values
    counts = np.zeros((bins.sizes["bin"], len(classes)), dtype=np.int64)
    where = np.searchsorted(bins["bin"].values, ids)
    assert np.array_equal(bins["bin"].values[where], ids)  # every row's bin is listed
    for j, c in enumerate(classes):
        np.add.at(counts[:, j], where[y[usable] == c], 1)
    return counts


def _run(x, y, mask, plan, chunk, **kwargs):
    if plan == "in-memory":
        return percentile_bins(x, y, mask=mask, quantiles=QUARTILES, **kwargs)
    X = da.from_array(x, chunks=(chunk, 3))
    Y = da.from_array(y, chunks=chunk)
    M = None if mask is None else da.from_array(mask, chunks=chunk)
    return percentile_bins(X, Y, mask=M, quantiles=QUARTILES, plan=plan, **kwargs)



@pytest.mark.parametrize("labels", ["str", "int", "float"])
@pytest.mark.parametrize("plan", PLANS)
def test_class_counts_equal_a_direct_count_in_every_plan(plan, labels):
    x, y, mask = _data(labels=labels)
    bins = _run(x, y, mask, plan, chunk=1500)
    assert bins.attrs["plan"] == plan
    assert bins["class_count"].dims == ("bin", "class")
    assert bins["class"].values.tolist() == sorted(set(y[mask].tolist()))  # found, sorted
    assert bins.attrs["classes"] == bins["class"].values.tolist()
    np.testing.assert_array_equal(bins["class_count"].values, _direct_counts(x, y, mask, bins))
    np.testing.assert_array_equal(bins["class_count"].sum("class").values, bins["count"].values)
    for name in ("positive", "fuzzy_label", "label_sum"):
        assert name not in bins  # two-class variables


@pytest.mark.parametrize("plan", PLANS)
def test_k_classes_cost_the_reads_two_classes_cost(plan):
    x, y, mask = _data()
    k = _run(x, y, mask, plan, chunk=1500)
    two = _run(x, np.where(y == "clear", "clear", "other"), mask, plan, chunk=1500)
    assert k.attrs["passes"] == two.attrs["passes"]
    assert k.attrs.get("one_read") == two.attrs.get("one_read")
    for name in ("count", "center", "cell", "edge", "offset", "scale", "quantile_edges"):
        xr.testing.assert_identical(k[name], two[name])


@settings(max_examples=12, deadline=None)
@given(chunk=st.integers(150, 6000), seed=st.integers(0, 20),
       plan=st.sampled_from(PLANS[1:]))
def test_any_chunking_gives_the_in_memory_bins(chunk, seed, plan):
    x, y, mask = _data(3000, seed=seed)
    memory = _run(x, y, mask, "in-memory", chunk)
    chunked = _run(x, y, mask, plan, chunk)
    xr.testing.assert_identical(without_plan(chunked), without_plan(memory))


def test_given_classes_set_the_class_order_and_an_absent_class_counts_zero():
    x, y, mask = _data()
    order = ("snow", "clear", "rain", "haze", "cloud")  # "rain" never occurs
    for plan in PLANS:
        bins = _run(x, y, mask, plan, chunk=2000, classes=order)
        assert bins["class"].values.tolist() == list(order)
        counts = bins["class_count"].values
        np.testing.assert_array_equal(counts, _direct_counts(x, y, mask, bins))
        assert counts[:, 2].sum() == 0


def test_majority_label_ties_go_to_the_later_class():
    x = np.array([[0.0], [0.0], [0.0], [0.0], [1.0], [1.0], [1.0]])
    y = np.array([2, 1, 3, 3, 1, 2, 2])
    bins = bin_statistics(x, y, edges=[[0.5]], classes=(1, 2, 3))
    assert bins["class_count"].values.tolist() == [[1, 1, 2], [1, 2, 0]]
    assert bins["majority_label"].values.tolist() == [3, 2]
    tied = bin_statistics(x[:3], y[:3], edges=[[0.5]], classes=(1, 2, 3))
    assert tied["majority_label"].values.tolist() == [3]  # 1:1:1, the last
    assert tied.attrs["n_majority_ties"] == 1


def test_bin_statistics_counts_k_classes_as_percentile_bins():
    x, y, mask = _data()
    bins = percentile_bins(x, y, mask=mask, quantiles=QUARTILES)
    edges = [e[~np.isnan(e)] for e in bins["edge"].values]
    again = bin_statistics(x, y, edges, mask=mask, classes=tuple(bins["class"].values))
    np.testing.assert_array_equal(again["bin"].values, bins["bin"].values)
    np.testing.assert_array_equal(again["class_count"].values, bins["class_count"].values)
    np.testing.assert_array_equal(again["majority_label"].values, bins["majority_label"].values)


def test_two_classes_keep_todays_dataset():
    x, y, mask = _data()
    two = np.where(y == "cloud", 1, -1)
    bins = percentile_bins(x, two, mask=mask, quantiles=QUARTILES)
    assert "class_count" not in bins and "class" not in bins.coords
    assert {"positive", "fuzzy_label", "majority_label", "label_sum"} <= set(bins.data_vars)


@pytest.mark.parametrize("plan", PLANS)
def test_labels_outside_the_classes_raise_naming_them(plan):
    x, y, mask = _data()
    with pytest.raises(LabelError, match=r"'snow' .* is not one of the classes \['clear', "):
        _run(x, y, mask, plan, chunk=1500, classes=("clear", "haze", "cloud"))


@pytest.mark.parametrize("plan", PLANS)
def test_one_class_raises(plan):
    x, _, mask = _data()
    with pytest.raises(LabelError, match="one class only"):
        _run(x, np.full(len(x), "haze"), mask, plan, chunk=1500)


def test_masked_rows_may_hold_any_label():
    x, y, mask = _data()
    y = y.astype(object)
    y[~mask] = None  # unlabelled rows: no class, and not counted
    bins = percentile_bins(x, y.astype(str), mask=mask, quantiles=QUARTILES)
    assert "None" not in bins["class"].values.tolist()
    assert int(bins["class_count"].sum()) == bins.attrs["n_valid"]


def test_a_class_outside_the_one_read_sample_falls_back_with_every_class():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((20_000, 2)).astype(np.float32)
    y = np.where(x[:, 0] > 0, "clear", "haze")
    windows = sample_windows(len(x), OneReadSample(rows=2000))
    y[[i for i in range(0, 20_000, 997) if all(not a <= i < b for a, b in windows)]] = "snow"
    X, Y = da.from_array(x, chunks=(2500, 2)), da.from_array(y, chunks=2500)
    with config.set(max_deferred_fraction=1e9):
        one = percentile_bins(X, Y, plan=BinningPlan("one-read", OneReadSample(rows=2000)))
    fused = percentile_bins(X, Y, plan="fused")
    assert one.attrs["one_read"] == "fallback: the sample did not show the classes of y"
    assert one.attrs["classes"] == ["clear", "haze", "snow"]
    xr.testing.assert_identical(without_plan(one), without_plan(fused))


def test_on_a_cluster_the_bins_are_the_in_memory_bins(client):
    x, y, mask = _data(8000)
    memory = _run(x, y, mask, "in-memory", 0)
    for plan in PLANS[1:]:
        xr.testing.assert_identical(without_plan(_run(x, y, mask, plan, 1100)),
                                    without_plan(memory))


def test_class_codes_of_labels():
    valid = np.array([True, True, True, False, True])
    np.testing.assert_array_equal(
        class_codes(np.array(["b", "c", "a", "zz", "b"]), valid, ("c", "a", "b")), [2, 0, 1, 0, 2])
    np.testing.assert_array_equal(
        class_codes(np.array([2.0, 7.0, 2.0, np.nan, 3.0]), valid, (7, 2, 3)), [1, 0, 1, 0, 2])
    # labels and classes of types that do not order together: compared one class at a time
    np.testing.assert_array_equal(
        class_codes(np.array([1, 2, 1, 0, 2]), valid, (2, "x", 1)), [2, 0, 2, 0, 0])
    with pytest.raises(LabelError, match=r"label value nan \(row 1"):
        class_codes(np.array([2.0, np.nan]), np.array([True, True]), (2, 3, 4))
    assert class_codes(np.arange(300) % 300, np.ones(300, bool), tuple(range(300))).dtype == \
        np.int32
    # integer classes spread too far for a look-up table: a binary search per row
    wide = np.array([10**9, 0, 5, 10**9, -7], dtype=np.int64)
    first_four = np.array([True, True, True, True, False])
    np.testing.assert_array_equal(class_codes(wide, first_four, (5, 10**9, 0)), [1, 2, 0, 1, 0])
    with pytest.raises(LabelError, match=r"label value -7 \(row 4"):
        class_codes(wide, np.ones(5, bool), (5, 10**9, 0))
    # a class the labels' dtype cannot hold (0.5 in int8 labels) never matches
    np.testing.assert_array_equal(
        class_codes(np.array([1, 2], dtype=np.int8), np.ones(2, bool), (0.5, 1, 2)), [1, 2])


@pytest.mark.parametrize("plan", PLANS)
def test_many_possible_bins_count_classes_in_sparse_accumulators(plan):
    """Six features at deciles: 10**6 possible bins, more than any chunk's rows, so the
    partial bins are sparse (sorted ids), as are the class counts."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((12_000, 6)).astype(np.float32)
    y = np.digitize(x[:, 0] + x[:, 1], [-1.0, 0.0, 1.0]) * 10 - 5  # -5, 5, 15, 25
    if plan == "in-memory":
        bins = percentile_bins(x, y)
    else:
        bins = percentile_bins(da.from_array(x, chunks=(2500, 6)), da.from_array(y, chunks=2500),
                               plan=plan)
    assert bins.attrs["n_bins_possible"] == 10**6
    edges = [e[~np.isnan(e)] for e in bins["edge"].values]
    where = np.searchsorted(bins["bin"].values, bin_index(x.astype(np.float64), edges))
    want = np.zeros((bins.sizes["bin"], 4), dtype=np.int64)
    for j, c in enumerate([-5, 5, 15, 25]):
        np.add.at(want[:, j], where[y == c], 1)
    np.testing.assert_array_equal(bins["class_count"].values, want)


def test_bin_class_counts_by_table_and_in_sorted_order():
    rng = np.random.default_rng(1)
    ids = rng.integers(-1, 40, 5000)
    codes = rng.integers(0, 3, 5000).astype(np.uint8)
    occupied = np.unique(ids[ids >= 0])
    want = np.zeros((len(occupied), 3), dtype=np.int64)
    np.add.at(want, (np.searchsorted(occupied, ids[ids >= 0]), codes[ids >= 0]), 1)
    np.testing.assert_array_equal(bin_class_counts(ids, codes, occupied, 3), want)
    far = np.where(ids >= 0, ids * 10**15, -1)  # ids past any table: the sorted sweep
    np.testing.assert_array_equal(bin_class_counts(far, codes, occupied * 10**15, 3), want)
    assert bin_class_counts(np.full(3, -1), codes[:3], occupied[:0], 3).shape == (0, 3)
