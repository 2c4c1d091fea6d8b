"""Tests of bigkern.datasets: synthetic MISR-like scenes and the shared-data lookup."""

from __future__ import annotations

import dask
import dask.array as da
import numpy as np
import pytest

from bigkern.datasets import FEATURES, RADIANCES, make_scenes, shared_data_dir

SHAPE = (96, 128)


@pytest.fixture(scope="module")
def small():
    """Two small scenes, computed once."""
    return make_scenes(2, SHAPE, seed=11).compute()


@pytest.fixture(scope="module")
def default_scenes():
    """The default three 384x512 scenes of seed 0, computed once."""
    return make_scenes(seed=0).compute()


def test_dims_dtypes_coords_and_attrs(small):
    assert set(small.data_vars) == {*FEATURES, *RADIANCES, "label", "cloud_truth"}
    for name, var in small.data_vars.items():
        assert var.dims == ("scene", "y", "x"), name
        assert var.shape == (2, *SHAPE), name
    for name in (*FEATURES, *RADIANCES):
        assert small[name].dtype == np.float32, name
        assert small[name].attrs["long_name"]
        assert "units" in small[name].attrs
    assert small.label.dtype == np.int8
    assert small.cloud_truth.dtype == np.int8
    for dim, n in zip(("scene", "y", "x"), (2, *SHAPE), strict=True):
        np.testing.assert_array_equal(small[dim].values, np.arange(n))
        assert np.issubdtype(small[dim].dtype, np.integer)
    assert small.attrs["seed"] == 11
    assert small.attrs["generator"] == "bigkern.datasets.make_scenes"
    assert small.attrs["description"]


def test_label_values_and_truth(small):
    assert set(np.unique(small.label.values)) <= {-1, 0, 1}
    assert set(np.unique(small.cloud_truth.values)) == {-1, 1}
    labelled = small.label.values != 0
    np.testing.assert_array_equal(
        small.label.values[labelled], small.cloud_truth.values[labelled]
    )
    # Small scenes too keep the unlabelled share in range (the edge band narrows).
    frac = (small.label == 0).mean(("y", "x")).values
    assert ((frac >= 0.20) & (frac <= 0.35)).all(), frac


def test_feature_ranges(default_scenes):
    ds = default_scenes
    ndai, sd, corr = (ds[name].values for name in FEATURES)
    valid = np.isfinite(ndai)
    assert np.nanmin(ndai) > -3 and np.nanmax(ndai) < 6
    assert np.nanmin(sd) > 0
    assert np.nanmin(corr) >= -1 and np.nanmax(corr) <= 1
    for name in RADIANCES:
        r = ds[name].values[valid]
        assert r.min() > 0 and 100 < np.median(r) < 350, name
    # NDAI and SD are higher over cloud, CORR lower: the classes differ on average.
    cloud = (ds.cloud_truth.values == 1) & valid
    clear = (ds.cloud_truth.values == -1) & valid
    assert np.median(ndai[cloud]) > np.median(ndai[clear]) + 1
    assert np.median(sd[cloud]) > np.median(sd[clear])
    assert np.median(corr[cloud]) < np.median(corr[clear])


def test_cloud_cover_and_unlabelled_fraction(default_scenes):
    for i in range(default_scenes.sizes["scene"]):
        scene = default_scenes.isel(scene=i)
        cover = float((scene.cloud_truth == 1).mean())
        unlabelled = float((scene.label == 0).mean())
        assert 0.25 <= cover <= 0.65, (i, cover)
        assert 0.20 <= unlabelled <= 0.35, (i, unlabelled)


def test_dropouts_are_nan_everywhere_with_label_zero(default_scenes):
    ds = default_scenes
    nan_ndai = np.isnan(ds.NDAI.values)
    rate = nan_ndai.mean()
    assert 2e-4 < rate < 5e-3
    for name in (*FEATURES, *RADIANCES):
        np.testing.assert_array_equal(np.isnan(ds[name].values), nan_ndai, err_msg=name)
    assert (ds.label.values[nan_ndai] == 0).all()
    assert set(np.unique(ds.cloud_truth.values[nan_ndai])) <= {-1, 1}


def test_same_seed_same_data_and_scene_independent_of_count():
    a = make_scenes(2, SHAPE, seed=5).compute()
    b = make_scenes(3, SHAPE, seed=5).compute()
    for name in a.data_vars:
        np.testing.assert_array_equal(a[name].values, b[name].isel(scene=slice(0, 2)).values)
    c = make_scenes(2, SHAPE, seed=6).compute()
    assert not np.array_equal(a.NDAI.values, c.NDAI.values, equal_nan=True)
    # Scenes of one seed differ from each other.
    assert not np.array_equal(b.NDAI.values[0], b.NDAI.values[1], equal_nan=True)


def test_radiances_flag_does_not_change_other_variables(small):
    without = make_scenes(2, SHAPE, seed=11, radiances=False).compute()
    assert not set(RADIANCES) & set(without.data_vars)
    for name in without.data_vars:
        np.testing.assert_array_equal(without[name].values, small[name].values)


def test_lazy_one_task_per_scene_and_nothing_computed():
    calls = []

    def forbid(*args, **kwargs):
        calls.append(args)
        raise AssertionError("make_scenes computed something at construction")

    with dask.config.set(scheduler=forbid):
        ds = make_scenes(4, SHAPE, seed=1)
    assert not calls
    for name in ds.data_vars:
        assert isinstance(ds[name].data, da.Array), name
        assert ds[name].chunks == ((1, 1, 1, 1), (SHAPE[0],), (SHAPE[1],)), name
    # One generating task per scene, shared by all variables.
    graph = dict(ds.__dask_graph__())
    generators = {k for k, v in graph.items() if "_scene_arrays" in repr(v)}
    assert len(generators) == 4


def test_chunks_are_honoured_and_values_unchanged(small):
    ds = make_scenes(2, SHAPE, seed=11, chunks={"scene": 2, "y": 48})
    assert ds.NDAI.chunks == ((2,), (48, 48), (SHAPE[1],))
    np.testing.assert_array_equal(ds.SD.values, small.SD.values)


def test_zero_scenes_and_bad_arguments():
    assert make_scenes(0, SHAPE).NDAI.shape == (0, *SHAPE)
    with pytest.raises(ValueError, match="n_scenes"):
        make_scenes(-1)
    with pytest.raises(ValueError, match="shape"):
        make_scenes(1, (0, 10))


def test_orbit_sized_scene():
    ds = make_scenes(1, (512, 2048), seed=2)
    assert ds.NDAI.shape == (1, 512, 2048)
    scene = ds.isel(scene=0)[["NDAI", "label"]].compute()
    assert np.isfinite(scene.NDAI.values).mean() > 0.99
    assert 0.20 <= float((scene.label == 0).mean()) <= 0.35


def _labelled(ds):
    """NDAI, SD, CORR and label of the labelled, finite pixels of ``ds`` (all scenes)."""
    keep = (ds.label.values != 0) & np.isfinite(ds.NDAI.values)
    return tuple(ds[name].values[keep] for name in (*FEATURES, "label"))


def _rule(thresholds, ndai, sd, corr):
    """The expert-style rule: cloud if NDAI > t1 and (SD > t2 or CORR < t3)."""
    t1, t2, t3 = thresholds
    return np.where((ndai > t1) & ((sd > t2) | (corr < t3)), 1, -1)


def _fit_rule(ndai, sd, corr, label, rng):
    """Grid search of the rule's thresholds over feature quantiles; best accuracy wins."""
    pick = rng.choice(ndai.size, size=min(20_000, ndai.size), replace=False)
    ndai, sd, corr, label = ndai[pick], sd[pick], corr[pick], label[pick]
    q = np.linspace(0.05, 0.95, 13)
    best, best_acc = None, -1.0
    for t1 in np.quantile(ndai, q):
        for t2 in np.quantile(sd, q):
            for t3 in np.quantile(corr, q):
                acc = np.mean(_rule((t1, t2, t3), ndai, sd, corr) == label)
                if acc > best_acc:
                    best, best_acc = (t1, t2, t3), acc
    return best, best_acc


def test_threshold_rule_is_good_but_not_perfect(default_scenes):
    rng = np.random.default_rng(0)
    thresholds, fit_acc = _fit_rule(*_labelled(default_scenes), rng)
    assert 0.70 <= fit_acc <= 0.95, fit_acc
    for seed in (1, 2, 3, 4):
        test = make_scenes(2, seed=seed, radiances=False).compute()
        ndai, sd, corr, label = _labelled(test)
        acc = np.mean(_rule(thresholds, ndai, sd, corr) == label)
        assert 0.70 <= acc <= 0.95, (seed, acc)


def test_shared_data_dir_env(tmp_path, monkeypatch):
    monkeypatch.setenv("BIGKERN_SHARED_DATA", str(tmp_path))
    assert shared_data_dir() == tmp_path
    monkeypatch.setenv("BIGKERN_SHARED_DATA", str(tmp_path / "absent"))
    assert shared_data_dir() is None


def test_shared_data_dir_default(monkeypatch):
    monkeypatch.delenv("BIGKERN_SHARED_DATA", raising=False)
    found = shared_data_dir()
    assert found is None or found.is_dir()
