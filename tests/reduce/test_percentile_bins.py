"""Percentile bins: equal to a plain numpy computation; identical for any chunking and cluster."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest
import xarray as xr
from hypothesis import given
from hypothesis import strategies as st

from bigkern.errors import LabelError
from bigkern.models import BinnedSVC
from bigkern.reduce import bin_statistics, percentile_bins, quantile_summary
from bigkern.reduce.binning.bins import OutlierWarning
from tests.reduce.plan_attrs import without_plan


def _data(n=20_000, seed=0, nan_every=97):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 3)).astype(np.float32)
    x[::nan_every, 1] = np.nan
    y = np.where(x[:, 0] + 0.5 * rng.standard_normal(n) > 0, 1, -1).astype(np.int8)
    return x, y


def test_matches_numpy_reference():
    x, y = _data()
    bins = percentile_bins(da.from_array(x, chunks=(3000, 3)), da.from_array(y, chunks=3000))
    ok = np.isfinite(x).all(axis=1)
    edges = np.quantile(x[ok].astype(np.float64), np.arange(1, 10) / 10, axis=0).T
    cells = [np.searchsorted(edges[f], x[ok, f], side="left") for f in range(3)]
    ids = np.ravel_multi_index(cells, (10, 10, 10))
    uniq, counts = np.unique(ids, return_counts=True)
    np.testing.assert_array_equal(bins["bin"].values, uniq)
    np.testing.assert_array_equal(bins["count"].values, counts)
    centers = np.array([x[ok][ids == b].astype(np.float64).mean(axis=0) for b in uniq])
    # fixed-point sums: within max|x| / 2**30 of the exact float64 mean
    np.testing.assert_allclose(bins["center"].values, centers, rtol=0, atol=1e-8)
    pos = np.array([(y[ok][ids == b] == 1).sum() for b in uniq])
    np.testing.assert_array_equal(bins["positive"].values, pos)
    np.testing.assert_allclose(bins["fuzzy_label"].values, pos / counts)
    np.testing.assert_array_equal(bins["majority_label"].values, np.where(2 * pos >= counts, 1, -1))
    assert bins.attrs["n_nonfinite"] == (~ok).sum()
    assert bins.attrs["n_bins_empty"] == 1000 - len(uniq)
    np.testing.assert_array_equal(bins["cell"].values, np.stack(np.unravel_index(uniq, (10,) * 3),
                                                                axis=1))


@pytest.mark.determinism
@given(chunk=st.integers(50, 5000), seed=st.integers(0, 3))
def test_identical_for_any_chunking(chunk, seed):
    x, y = _data(4000, seed)
    one = percentile_bins(x, y, plan="fused-or-three-pass")  # one dask chunk
    many = percentile_bins(da.from_array(x, chunks=(chunk, 3)), da.from_array(y, chunks=chunk),
                           plan="fused-or-three-pass")
    xr.testing.assert_identical(one, many)


@pytest.mark.parametrize("n_workers", [1, 2])
def test_identical_across_worker_counts(n_workers, tmp_path):
    from distributed import Client, LocalCluster

    x, y = _data(30_000, 5)
    x[[5, 17_000], 2] = [1e12, -3e30]  # outliers: summed in several limbs
    x[9_001, 1] = 5e9
    X = da.from_array(x, chunks=(1700, 3))
    Y = da.from_array(y, chunks=1700)
    with pytest.warns(OutlierWarning):
        reference = percentile_bins(x, y, plan="fused-or-three-pass")
    with LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as cluster, Client(cluster), \
            pytest.warns(OutlierWarning):
        got = percentile_bins(X, Y, plan="fused-or-three-pass")
        default = percentile_bins(X, Y)  # the one-read plan: its sample fits the workers
    xr.testing.assert_identical(reference, got)
    assert default.attrs["plan"] == "one-read" and default.attrs["passes"] == 1
    xr.testing.assert_identical(without_plan(default), without_plan(reference))
    assert got.attrs["n_outliers"] == 3


def test_empty_bins_counted_and_sparse_ids():
    # two perfectly correlated features: only the diagonal cells are occupied
    x = np.repeat(np.linspace(0, 1, 1000, dtype=np.float32)[:, None], 2, axis=1)
    bins = percentile_bins(x, None, quantiles=[0.25, 0.5, 0.75])
    assert bins.sizes["bin"] == 4
    assert bins.attrs["n_bins_empty"] == 16 - 4
    np.testing.assert_array_equal(bins["cell"].values[:, 0], bins["cell"].values[:, 1])


def test_labels_must_be_two_classes_or_more():
    x, _ = _data(1000)
    with pytest.raises(LabelError, match="one class only"):
        percentile_bins(x, np.ones(1000))
    three = percentile_bins(x, np.arange(1000) % 3 - 1)  # k classes: counted per class
    assert three["class"].values.tolist() == [-1, 0, 1]
    assert "positive" not in three


def test_labels_outside_given_classes():
    x, y = _data(1000)
    s = quantile_summary(x)
    with pytest.raises(LabelError, match="not one of the classes"):
        bin_statistics(x, np.where(y > 0, 2, -1), s, classes=(-1, 1))


def test_edges_must_be_increasing():
    x, _ = _data(100)
    with pytest.raises(ValueError, match="non-decreasing"):
        bin_statistics(x, edges=[[1.0, 0.0], [0.0], [0.0]], value_range=[1, 1, 1])


def test_custom_edges_compute_value_range():
    x, y = _data(2000)
    bins = bin_statistics(x, y, [[0.0], [0.0], [0.0]], classes=(-1, 1))
    assert bins.sizes["bin"] == 8
    assert int(bins["count"].sum()) == bins.attrs["n_valid"]


@given(
    chunk=st.integers(200, 6000),
    seed=st.integers(0, 50),
    ties=st.booleans(),
    dtype=st.sampled_from([np.float32, np.float64]),
)
def test_fused_two_read_plan_equals_three_pass_plan(chunk, seed, ties, dtype):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((6000, 3)) * [1, 10, 0.01]).astype(dtype)
    if ties:  # values sitting exactly on edges, and signed zeros
        x[::3, 0] = np.round(x[::3, 0], 1)
        x[::5, 2] = 0.0
        x[1::5, 2] = -0.0
    x[::89, 1] = np.nan
    y = np.where(rng.random(6000) < 0.4, 1, -1)
    X, Y = da.from_array(x, chunks=(chunk, 3)), da.from_array(y, chunks=chunk)
    fused = percentile_bins(X, Y, plan="fused")
    three = percentile_bins(X, Y, plan="three-pass")
    assert fused.attrs["plan"] == "fused" and three.attrs["plan"] == "three-pass"
    assert fused.attrs["passes"] == (2 if dtype == np.float32 else fused.attrs["passes"])
    assert three.attrs["passes"] == fused.attrs["passes"] + 1
    assert 0 <= fused.attrs["n_kept"] <= fused.attrs["n_valid"]
    for name in ("bin", "count", "center", "positive", "cell", "edge", "quantile_edges",
                 "outliers"):
        np.testing.assert_array_equal(fused[name].values, three[name].values, err_msg=name)


def test_fused_or_three_pass_plan_reads_twice_and_falls_back_on_heavy_ties():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((50_000, 2)).astype(np.float32)
    assert percentile_bins(x, plan="fused-or-three-pass").attrs["plan"] == "fused"
    x[: 30_000, 1] = 0.0  # 60 % of one feature sits on several edges
    heavy = percentile_bins(x, plan="fused-or-three-pass")
    assert heavy.attrs["plan"] == "three-pass" and heavy.attrs["kept_fraction_bound"] > 0.05


@pytest.mark.parametrize("d", [1, 5])  # 5 deciles features: 10**5 possible bins, sparse sums
def test_fused_plan_equals_three_pass_plan_for_few_and_many_features(d):
    rng = np.random.default_rng(d)
    x = rng.standard_normal((20_000, d)).astype(np.float32)
    y = np.where(rng.random(20_000) < 0.3, 1, -1).astype(np.int8)
    X, Y = da.from_array(x, chunks=(3000, d)), da.from_array(y, chunks=3000)
    fused = percentile_bins(X, Y, plan="fused")
    three = percentile_bins(X, Y, plan="three-pass")
    for name in ("bin", "count", "center", "positive", "cell", "edge"):
        np.testing.assert_array_equal(fused[name].values, three[name].values, err_msg=name)


@pytest.mark.parametrize(
    "labels",
    [np.array([-1, 1], dtype=np.int8), np.array([0.0, 1.0]), np.array([3, 7], dtype=np.uint16),
     np.array(["clear", "cloud"])],
)
def test_positive_counts_and_unknown_labels_for_any_label_dtype(labels):
    x, y = _data(5000)
    ok = np.isfinite(x).all(axis=1)
    y_typed = labels[(y > 0).astype(int)]
    bins = percentile_bins(x, y_typed)
    assert bins.attrs["classes"] == [labels[0].item(), labels[1].item()]
    assert int(bins["positive"].sum()) == int((y[ok] > 0).sum())
    # a third label on a used row is named; on an unused (non-finite) row it is ignored
    other = np.array(["haze"]) if labels.dtype.kind == "U" else np.array([5], dtype=labels.dtype)
    unused = y_typed.astype(np.result_type(y_typed, other))
    unused[np.flatnonzero(~ok)[0]] = other[0]
    summary = quantile_summary(x)
    classes = tuple(labels.tolist())
    assert bin_statistics(x, unused, summary, classes=classes).attrs["n_valid"] == ok.sum()
    used = unused.copy()
    used[np.flatnonzero(ok)[7]] = other[0]
    expected = f"label value {other[0].item()!r} .* not one of the classes"
    with pytest.raises(LabelError, match=expected):
        bin_statistics(x, used, summary, classes=classes)


@pytest.mark.parametrize("bad", ["y", "mask"])
def test_a_numpy_y_or_mask_of_the_wrong_length_is_named_on_the_dask_path(bad):
    x, y = _data(1000, 0)
    args = {"y": y, "mask": np.ones(1000, dtype=bool)}
    args[bad] = args[bad][:-1]
    with pytest.raises(ValueError, match=rf"{bad} must be 1-D with one entry per row of X "
                                         rf"\(1000\); got shape \(999,\)"):
        percentile_bins(da.from_array(x, chunks=(300, 3)), args["y"], mask=args["mask"])


@pytest.mark.parametrize("lazy", [False, True], ids=["numpy", "dask"])
def test_a_dataarray_gives_its_feature_names_and_stays_lazy(lazy):
    """percentile_bins(DataArray) names the bins' features from its coordinate (they were
    f0, f1 ...) and a dask-backed one is not pulled into the client's memory first."""
    from bigkern.models import BinnedSVC

    rng = np.random.default_rng(3)
    data = rng.normal(size=(3000, 2))
    y = np.where(data[:, 0] > 0, 1, -1)
    arr = xr.DataArray(da.from_array(data, chunks=(700, 2)) if lazy else data,
                       dims=("sample", "feature"), coords={"feature": ["NDAI", "CORR"]})
    bins = percentile_bins(arr, xr.DataArray(y, dims="sample"), classes=(-1, 1))
    assert list(bins["feature"].values) == ["NDAI", "CORR"]
    assert (bins.attrs["plan"] == "in-memory") == (not lazy)
    plain = percentile_bins(data, y, classes=(-1, 1), features=["NDAI", "CORR"])
    np.testing.assert_array_equal(bins["count"].values, plain["count"].values)
    model = BinnedSVC(omega=1.0, C=1.0).fit_bins(bins)
    assert list(model.feature_names_in_) == ["NDAI", "CORR"]


def test_more_features_than_bin_ids_can_number_is_a_clear_error():
    """At deciles, 10^19 cells overflow an int64 bin id: 18 features bin, 19 are refused
    before any pass, naming the limit and the models that take any number of features."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 19))
    y = np.where(X[:, 0] > 0, 1, -1)
    assert percentile_bins(X[:, :18], y).attrs["n_bins_possible"] == 10**18
    with pytest.raises(ValueError, match=r"19 features at 9 quantiles have up to 10\^19 cells"
                                         r".*at most 18 features.*ReducedSVC"):
        percentile_bins(X, y)
    with pytest.raises(ValueError, match="at most 18 features"):
        BinnedSVC().fit(X, y)
    # judged on the samples as normalized: a (feature, sample) DataArray of 3 features bins
    Xt = xr.DataArray(X[:, :3].T, dims=("feature", "sample"))
    assert percentile_bins(Xt, y).sizes["feature"] == 3
    assert percentile_bins(da.from_array(X[:, :3], chunks=50), y).sizes["feature"] == 3
