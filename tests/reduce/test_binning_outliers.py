"""Lose nothing: a wild value is binned exactly and changes no other bin.

The fixed-point grid of the binning sums comes from the values that are not
outliers; outliers are summed exactly in base-2**32 limbs, counted, and
reported with an :class:`OutlierWarning`.
"""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import dask.array as da
import numpy as np
import pytest
import xarray as xr
from hypothesis import given
from hypothesis import strategies as st

from bigkern.reduce import bin_index, bin_statistics, percentile_bins, quantile_summary
from bigkern.reduce.binning.bins import OutlierWarning, accumulate_bins, combine_bins
from bigkern.reduce.binning.fixed_point import FixedPointGrid, exact_means
from bigkern.reduce.binning.outliers import _group_bounds
from bigkern.reduce.binning.radix_select import GROUP_BITS, key_dtype, keys_to_floats

NAMES = ["NDAI", "SD", "CORR"]
F32_MAX = float(np.finfo(np.float32).max)


def _data(n=6000, seed=0):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((n, 3)) * [1.0, 10.0, 0.1] + [0.0, 30.0, 0.5]).astype(np.float32)
    x[::97, 1] = np.nan
    y = np.where(x[:, 0] + 0.5 * rng.standard_normal(n) > 0, 1, -1).astype(np.int8)
    return x, y


def _quiet_bins(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OutlierWarning)
        return percentile_bins(*args, **kwargs)


def _edges(bins):
    return [e[np.isfinite(e)] for e in bins["edge"].values]


def _exact_mean(values):
    return sum(Fraction(float(v)) for v in values) / len(values)


@pytest.mark.parametrize("plan", ["fused", "three-pass"])
@pytest.mark.parametrize("value", [1e12, -1e12, 1e30, F32_MAX])
def test_one_outlier_changes_only_its_own_bin(value, plan):
    x, y = _data()
    row = 1234
    others = np.delete(x[:, 2], row)
    reference = x.copy()  # the same row with an ordinary value in the same (outer) cell
    reference[row, 2] = others.max() if value > 0 else others.min()
    wild = x.copy()
    wild[row, 2] = value
    with pytest.warns(OutlierWarning, match="'CORR' has 1 value"):
        bins = percentile_bins(wild, y, features=NAMES, plan=plan)
    ref = percentile_bins(reference, y, features=NAMES, plan=plan)
    for name in ("bin", "count", "positive", "edge", "offset", "scale"):
        np.testing.assert_array_equal(bins[name].values, ref[name].values, err_msg=name)
    own = bin_index(wild[row : row + 1], _edges(bins))[0]
    others_bins = bins["bin"].values != own
    # every other bin's center is bitwise that of the run without the outlier
    np.testing.assert_array_equal(bins["center"].values[others_bins],
                                  ref["center"].values[others_bins])
    # the outlier's own bin: the exact mean, rounded once to float64
    ok = np.isfinite(wild).all(axis=1)
    members = ok & (bin_index(np.nan_to_num(wild), _edges(bins)) == own)
    center = bins["center"].sel(bin=own).values
    np.testing.assert_array_equal(center[:2], ref["center"].sel(bin=own).values[:2])
    exact = _exact_mean(wild[members, 2])
    assert abs(Fraction(float(center[2])) - exact) <= Fraction(math.ulp(float(exact)))
    assert center[2] == float(exact)


@given(chunk=st.integers(150, 4000), seed=st.integers(0, 30), n_wild=st.integers(1, 6))
def test_outliers_identical_for_any_chunking_and_both_plans(chunk, seed, n_wild):
    x, y = _data(4000, seed)
    rng = np.random.default_rng(seed)
    rows = rng.choice(len(x), 2 * n_wild, replace=False)
    x[rows[:n_wild], 2] = rng.choice([1e12, -1e12, 1e30, -F32_MAX, 7e20], n_wild)
    x[rows[n_wild:], 0] = (rng.standard_normal(n_wild) * 1e8).astype(np.float32)
    X, Y = da.from_array(x, chunks=(chunk, 3)), da.from_array(y, chunks=chunk)
    one = _quiet_bins(x, y, plan="fused-or-three-pass")
    many = _quiet_bins(X, Y, plan="fused-or-three-pass")
    xr.testing.assert_identical(one, many)
    three = _quiet_bins(X, Y, plan="three-pass")
    for name in ("bin", "count", "center", "positive", "cell", "edge", "outliers"):
        np.testing.assert_array_equal(many[name].values, three[name].values, err_msg=name)
    assert 1 <= many.attrs["n_outliers"] <= 2 * n_wild


@given(
    values=st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=40),
    bound_exp=st.integers(-60, 60),
    n_parts=st.integers(1, 5),
    sparse=st.booleans(),
    seed=st.integers(0, 100),
)
def test_limb_sums_are_exact_for_any_finite_values(values, bound_exp, n_parts, sparse, seed):
    x = np.asarray(values, dtype=np.float64)[:, None]
    grid = FixedPointGrid.make([2.0**bound_exp], [np.abs(x).max()])
    s = int(grid.scales[0])
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, 3, len(x)).astype(np.int64)
    n_possible = 100_000 if sparse else 3  # sparse or dense accumulators
    cuts = np.sort(rng.integers(0, len(x) + 1, n_parts - 1))
    parts = [accumulate_bins(x[a:b], ids[a:b], np.zeros(b - a, dtype=bool), grid, n_possible,
                             {"valid": b - a}, False)
             for a, b in zip([0, *cuts], [*cuts, len(x)], strict=True)]
    res = combine_bins(parts)
    got = exact_means(res["sum"], res["n"], grid)[:, 0]
    for b, center in zip(res["bin"], got, strict=True):
        grid_values = [round(Fraction(float(v)) * Fraction(2) ** s) for v in x[ids == b, 0]]
        expected = float(Fraction(sum(grid_values), len(grid_values)) / Fraction(2) ** s)
        assert center == expected


def test_warning_names_feature_count_and_example():
    x, y = _data()
    x[[10, 20, 30], 2] = [1e12, 2e12, -5e11]
    with pytest.warns(OutlierWarning) as record:
        bins = percentile_bins(x, y, features=NAMES)
    messages = [str(w.message) for w in record if issubclass(w.category, OutlierWarning)]
    assert len(messages) == 1
    assert "'CORR' has 3 value(s)" in messages[0]
    assert "e.g. 1999999991808.0" in messages[0]  # the most extreme, as float32 holds it
    assert bins.attrs["n_outliers"] == 3
    np.testing.assert_array_equal(bins["outliers"].values, [0, 0, 3])


def test_no_warning_on_ordinary_data():
    rng = np.random.default_rng(3)
    x = np.stack([rng.standard_normal(20_000), rng.lognormal(0, 1.5, 20_000),
                  rng.standard_t(3, 20_000)], axis=1).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error", OutlierWarning)
        bins = percentile_bins(x, features=NAMES)
        summary_bins = bin_statistics(x, edges=quantile_summary(x))
    assert bins.attrs["n_outliers"] == 0 and summary_bins.attrs["n_outliers"] == 0


def test_bin_statistics_counts_outliers_exactly_from_a_summary():
    x, y = _data()
    x[[3, 4], 0] = [2e6, -7e7]
    summary = quantile_summary(x, features=NAMES)
    with pytest.warns(OutlierWarning, match=r"'NDAI' has 2 value\(s\).*e\.g\. -70000000\.0"):
        bins = bin_statistics(x, y, summary, classes=(-1, 1))
    np.testing.assert_array_equal(bins["outliers"].values, [2, 0, 0])
    assert bins.attrs["n_outliers"] == 2


def test_bin_statistics_with_plain_edges_keeps_other_bins():
    x, y = _data()
    edges = [np.nanquantile(x[:, f], [0.25, 0.5, 0.75]) for f in range(3)]
    wild = x.copy()
    wild[77, 2] = 1e12
    reference = x.copy()
    reference[77, 2] = np.delete(x[:, 2], 77).max()
    bins = bin_statistics(wild, y, edges, classes=(-1, 1))
    ref = bin_statistics(reference, y, edges, classes=(-1, 1))
    others = bins["bin"].values != bin_index(wild[77:78], edges)[0]
    np.testing.assert_array_equal(bins["center"].values[others], ref["center"].values[others])


@pytest.mark.filterwarnings("ignore:.*Zarr V3 specification")
@pytest.mark.filterwarnings("ignore:Consolidated metadata")
def test_outlier_counts_survive_zarr_and_netcdf(tmp_path):
    x, y = _data(3000)
    x[1, 2] = 1e12
    bins = _quiet_bins(x, y, features=NAMES)
    bins.to_zarr(tmp_path / "bins.zarr")
    back = xr.open_zarr(tmp_path / "bins.zarr").load()
    assert back.attrs["n_outliers"] == 1
    np.testing.assert_array_equal(back["outliers"].values, [0, 0, 1])
    bins.to_netcdf(tmp_path / "bins.nc", engine="scipy")
    with xr.open_dataset(tmp_path / "bins.nc", engine="scipy") as nc:
        assert int(nc.attrs["n_outliers"]) == 1
        np.testing.assert_array_equal(nc["outliers"].values, [0, 0, 1])


def test_one_wild_corr_pixel_keeps_scene_accuracy():
    from bigkern.datasets import make_scenes
    from bigkern.features import with_features
    from bigkern.models import BinnedKernelRidgeClassifier
    from bigkern.reduce.sampling import random_split
    from bigkern.scenes import stack_samples

    features = ["NDAI", "logSD", "CORR"]
    ds = with_features(make_scenes(2, (192, 256), seed=1), features)
    s = stack_samples(ds, features)
    X, y = s.X.compute(), s.y.compute()
    train, held_out = (np.asarray(m) for m in random_split(s.pixel, s.mask, fraction=0.5,
                                                            seed=0))

    def accuracy(X):
        model = BinnedKernelRidgeClassifier(omega=0.6, lam=0.03).fit(X, y, mask=train)
        return float(np.mean(model.predict(X[held_out]) == y[held_out]))

    clean = accuracy(X)
    wild = X.copy()
    wild[np.flatnonzero(train)[123], features.index("CORR")] = 1e12
    with pytest.warns(OutlierWarning, match="e.g. 999999995904.0"):
        dirty = accuracy(wild)
    assert clean > 0.8
    assert abs(dirty - clean) < 0.005


@pytest.mark.parametrize("plan", ["fused", "three-pass", "in-memory"])
def test_a_spike_feature_is_standardized_by_its_range_and_still_checked_for_outliers(plan):
    """q10 = q90 (a spike at 0 with 5 % of rows at 5000): the binned models' ``scale`` is
    the exact range over 2·z90, as the reduced models' one scaler gives; the outlier
    check keeps σ = 1, so the 5000s lie beyond its 1000 σ and are counted."""
    x, y = _data()
    x[:, 2] = 0.0
    x[::20, 2] = 5000.0
    if plan == "in-memory":
        bins = _quiet_bins(x, y, features=NAMES)
    else:
        bins = _quiet_bins(da.from_array(x, chunks=(1500, 3)), y, features=NAMES, plan=plan)
    assert bins.attrs["plan"] == plan
    scale = bins["scale"].values
    np.testing.assert_allclose(scale[2], 5000.0 / (2 * 1.2815515655446004))
    assert 5 < scale[1] < 15 and 0.5 < scale[0] < 1.5  # normal features: their robust σ
    usable = np.isfinite(x).all(axis=1)  # rows with a NaN feature are left out
    assert int(bins["outliers"].values[2]) == int((usable & (x[:, 2] == 5000.0)).sum())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_group_bounds_are_the_values_of_each_groups_first_and_last_key(dtype):
    """Every float32 key group; float64 groups at both ends, around zero and at random."""
    rng = np.random.default_rng(0)
    n = 1 << GROUP_BITS
    groups = (np.arange(n) if dtype == np.float32 else
              np.unique(np.r_[0:64, n // 2 - 64:n // 2 + 64, n - 64:n, rng.integers(0, n, 4096)]))
    ukind, width = key_dtype(np.dtype(dtype))
    first_key = groups.astype(ukind) << ukind(width - GROUP_BITS)
    last_key = first_key | ukind((1 << (width - GROUP_BITS)) - 1)
    with np.errstate(invalid="ignore"):  # the groups of NaN keys (signalling ones too)
        got = _group_bounds(groups, np.dtype(dtype))
        want = [keys_to_floats(k, dtype).astype(np.float64) for k in (first_key, last_key)]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g.view(np.uint64), w.view(np.uint64))
