"""Scene stores: open/validate errors, stacking, prediction written back aligned."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest
import xarray as xr

from bigkern.datasets import make_scenes
from bigkern.errors import LabelError, StoreError
from bigkern.features import with_features
from bigkern.jobs.predict import predict_scenes, write_predictions
from bigkern.models import BinnedSVC
from bigkern.reduce.sampling import random_split
from bigkern.scenes import open_scenes, stack_samples, write_scenes
from bigkern.store.zarr_store import open_zarr

FEATURES = ["NDAI", "SD", "CORR"]


def _tiny(n=2, shape=(16, 20), seed=0) -> xr.Dataset:
    return make_scenes(n, shape, seed=seed, radiances=False).compute()


def test_open_is_lazy_and_chunked_like_the_store(scene_store):
    ds = open_scenes(scene_store, features=FEATURES)
    assert isinstance(ds["NDAI"].data, da.Array)
    assert ds["NDAI"].data.chunks[0] == (2, 1)
    assert ds["NDAI"].dims == ("scene", "y", "x")


def test_open_scenes_masks_fills_and_ranges_lazily(scene_store):
    plain = open_scenes(scene_store)
    ndai = plain["NDAI"].values
    fill = float(ndai[0, 0, 0])  # pretend the first value is an undeclared fill
    ds = open_scenes(scene_store, features=FEATURES, fill_values={"NDAI": fill},
                     valid_ranges={"SD": (0, 10), "CORR": None})
    assert isinstance(ds["NDAI"].data, da.Array)
    assert ds["NDAI"].data.chunks == plain["NDAI"].data.chunks  # the store's chunks
    assert int(np.isnan(ds["NDAI"]).sum()) == int(np.isnan(ndai).sum() + (ndai == fill).sum())
    sd = plain["SD"].values
    assert int(np.isnan(ds["SD"]).sum()) == int(np.isnan(sd).sum() + (sd > 10).sum())
    assert ds["SD"].attrs["bigkern_valid_max"] == 10.0
    assert "bigkern_valid_min" not in ds["CORR"].attrs  # range check turned off
    np.testing.assert_array_equal(ds["label"].values, plain["label"].values)
    with pytest.raises(StoreError, match=r"valid_ranges names 'ndai', which is not a feature"):
        open_scenes(scene_store, valid_ranges={"ndai": (0, 1)})


def test_missing_path(tmp_path):
    with pytest.raises(StoreError, match="does not exist"):
        open_scenes(tmp_path / "nope.zarr")


def test_not_a_store(tmp_path):
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "file.txt").write_text("hello")
    with pytest.raises(StoreError, match="is a directory but not a zarr store"):
        open_scenes(tmp_path / "junk")


def test_empty_store(tmp_path):
    xr.Dataset().to_zarr(tmp_path / "empty.zarr")
    with pytest.raises(StoreError, match="empty"):
        open_scenes(tmp_path / "empty.zarr")


def test_missing_feature(tmp_path):
    write_scenes(_tiny().drop_vars("CORR"), tmp_path / "s.zarr")
    with pytest.raises(StoreError, match=r"lacks feature\(s\) \['CORR'\]"):
        open_scenes(tmp_path / "s.zarr", features=FEATURES)


def test_mismatched_dims(tmp_path):
    ds = _tiny()
    ds["SD"] = ds["SD"].transpose("scene", "x", "y")
    with pytest.raises(StoreError, match=r"'SD' .* has dims \('scene', 'x', 'y'\)"):
        stack_samples(ds, FEATURES)


def test_label_outside_allowed_values_names_the_scene(tmp_path):
    ds = _tiny(3)
    ds["label"][2, 3, 4] = 7
    message = r"outside \{-1, 0, 1\}, first in scene 2: \[7\]"
    ds.to_zarr(tmp_path / "theirs.zarr")  # a store written by someone else
    with pytest.raises(LabelError, match=message):
        open_scenes(tmp_path / "theirs.zarr")
    # write_scenes refuses what open_scenes would, with the same words, before writing
    with pytest.raises(LabelError, match=message):
        write_scenes(ds, tmp_path / "s.zarr")
    assert not (tmp_path / "s.zarr").exists()
    assert not list(tmp_path.glob(".s.zarr*"))


def test_write_refuses_to_overwrite(tmp_path):
    write_scenes(_tiny(), tmp_path / "s.zarr")
    with pytest.raises(StoreError, match="exists"):
        write_scenes(_tiny(), tmp_path / "s.zarr")


def test_stack_samples_covers_every_pixel_and_masks_labels(scene_store):
    ds = open_scenes(scene_store)
    s = stack_samples(ds, FEATURES)
    n = 3 * 96 * 128
    assert s.X.shape == (n, 3) and s.y.shape == (n,) and s.pixel.shape == (n,)
    X, y, mask, pixel = (np.asarray(a) for a in da.compute(s.X, s.y, s.mask, s.pixel))
    # the pixel index maps each row back to its (scene, y, x)
    cube = np.stack([ds[f].values for f in FEATURES], axis=-1).reshape(-1, 3)
    np.testing.assert_array_equal(X, cube[pixel])
    np.testing.assert_array_equal(y, ds["label"].values.reshape(-1)[pixel])
    np.testing.assert_array_equal(mask, y != 0)
    assert sorted(pixel) == list(range(n))
    counts = s.counts()
    assert counts["pixels"] == n
    assert counts["absent"] == int((~np.isfinite(cube).any(axis=1)).sum()) > 0
    assert counts["unlabelled"] == int((y == 0).sum())


def test_random_split_does_not_depend_on_chunking(tmp_path):
    ds = _tiny(3)
    a = stack_samples(ds.chunk({"scene": 1}), FEATURES)
    b = stack_samples(ds.chunk({"scene": 3, "y": 5}), FEATURES)
    ta, _ = random_split(a.pixel, a.mask, seed=4)
    tb, _ = random_split(b.pixel, b.mask, seed=4)
    pa, pb = da.compute(a.pixel[ta], b.pixel[tb])
    assert sorted(pa) == sorted(pb)
    assert 0.4 < len(pa) / int(a.mask.sum()) < 0.6


def test_predict_scenes_aligned_and_written(scene_store, tmp_path):
    ds = with_features(open_scenes(scene_store), ["NDAI", "logSD", "CORR"])
    s = stack_samples(ds, ["NDAI", "logSD", "CORR"])
    model = BinnedSVC(C=3.0).fit(s.as_dataarray(), s.y, mask=s.mask)
    pred = predict_scenes(model, ds)
    assert isinstance(pred["cloud_mask"].data, da.Array)
    assert pred["cloud_mask"].dims == ("scene", "y", "x")
    write_predictions(pred, tmp_path / "p.zarr")
    back = open_zarr(tmp_path / "p.zarr")
    mask = back["cloud_mask"].values
    xr.testing.assert_equal(back["scene"], ds["scene"])
    # every pixel predicted, unlabelled ones too; 0 only where a feature is missing
    finite = np.isfinite(np.stack([ds[f].values for f in ["NDAI", "logSD", "CORR"]])).all(0)
    np.testing.assert_array_equal(mask != 0, finite)
    assert set(np.unique(mask)) <= {-1, 0, 1}
    # same as predicting the stacked samples directly
    X = np.stack([ds[f].values.reshape(-1) for f in ["NDAI", "logSD", "CORR"]], axis=1)
    rows = finite.reshape(-1)
    np.testing.assert_array_equal(mask.reshape(-1)[rows], model.predict(X[rows]))
    truth = ds["cloud_truth"].values
    assert (mask[finite] == truth[finite]).mean() > 0.75


def test_predict_splits_large_chunks_into_tasks_and_keeps_store_chunks(scene_store):
    from bigkern import config
    from bigkern.jobs.predict import task_chunks

    features = ["NDAI", "logSD", "CORR"]
    ds = with_features(open_scenes(scene_store), features)
    s = stack_samples(ds, features)
    model = BinnedSVC(C=3.0).fit(s.as_dataarray(), s.y, mask=s.mask)
    whole = predict_scenes(model, ds)
    with config.set(predict_block_pixels=1000):  # 14 row bands per scene
        split = predict_scenes(model, ds)
    assert split["decision"].data.chunks == ds["NDAI"].data.chunks
    assert split["decision"].data.npartitions == whole["decision"].data.npartitions
    np.testing.assert_array_equal(split["cloud_mask"].values, whole["cloud_mask"].values)
    # float32 kernel blocks of other shapes round differently (BLAS): float32-level agreement
    np.testing.assert_allclose(split["decision"].values, whole["decision"].values, rtol=1e-4,
                               atol=1e-5)
    assert task_chunks(((2, 1), (96,), (128,)), 1000) == ((1, 1, 1), (7,) * 12 + (6, 6), (128,))
    assert task_chunks(((2, 1), (96,), (128,)), 10**6) == ((2, 1), (96,), (128,))
    assert task_chunks(((1,), (50, 46), (10,)), 200) == ((1,), (17, 17, 16, 16, 15, 15),
                                                         (10,))
