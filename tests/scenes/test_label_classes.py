"""Labels of k classes in scene stores: classes from the label's values or its CF flags, the
unlabelled value, and the refusal of values that are no class."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from bigkern import open_scenes, stack_samples, write_scenes
from bigkern.datasets import make_scenes
from bigkern.errors import LabelError
from bigkern.scenes.labels import check_label_values, class_names, label_classes


def _three_classes(flags: dict | None = None) -> xr.Dataset:
    """bigkern's synthetic scenes with the label recoded 1 clear, 2 thin, 3 thick (0 none)."""
    ds = make_scenes(2, (16, 20), seed=3, radiances=False).compute()
    lab = ds["label"].values
    ndai = ds["NDAI"].values
    three = np.where(lab == -1, 1, np.where(lab == 1, np.where(ndai > np.nanmedian(ndai), 3, 2),
                                             0)).astype(np.int8)
    ds["label"] = (ds["label"].dims, three, {"long_name": "cloud type"} | (flags or {}))
    return ds


def test_undeclared_integer_classes_are_classes_and_0_is_unlabelled(tmp_path):
    ds = _three_classes()
    found = check_label_values(ds["label"], "here")
    assert found.values is None and found.unlabelled == 0 and found.bigkern_codes is False
    store = write_scenes(ds, tmp_path / "three.zarr")
    back = open_scenes(store)
    # not bigkern's codes: written without bigkern's flags, which would misname them
    assert "flag_values" not in back["label"].attrs
    s = stack_samples(back, ["NDAI", "SD", "CORR"])
    y, mask = s.y.compute(), s.mask.compute()
    assert set(np.unique(y[mask]).tolist()) == {1, 2, 3}
    assert s.counts()["unlabelled"] == int((ds["label"].values == 0).sum())


def test_declared_flags_name_the_classes_and_the_unlabelled_value(tmp_path):
    flags = {"flag_values": np.array([1, 2, 3, 9], dtype=np.int8),
             "flag_meanings": "clear thin_cloud thick_cloud unlabelled"}
    ds = _three_classes(flags)
    ds["label"] = ds["label"].where(ds["label"] != 0, 9).astype(np.int8)
    ds["label"].attrs.update(flags)
    found = label_classes(ds["label"])
    assert found.values == (1, 2, 3) and found.unlabelled == 9
    assert class_names([1, 2, 3], found) == ["clear", "thin_cloud", "thick_cloud"]
    back = open_scenes(write_scenes(ds, tmp_path / "named.zarr"))
    np.testing.assert_array_equal(back["label"].attrs["flag_values"], [1, 2, 3, 9])
    s = stack_samples(back, ["NDAI", "SD"])
    assert not (s.y.compute()[s.mask.compute()] == 9).any()
    assert s.counts()["unlabelled"] == int((ds["label"].values == 9).sum())
    # a value the flags do not declare is refused, naming the scene and the value
    ds["label"][1, 2, 3] = 4
    with pytest.raises(LabelError, match=r"outside \{1, 2, 3, 9\}, first in scene 1: \[4\]"):
        write_scenes(ds, tmp_path / "bad.zarr")
    assert not (tmp_path / "bad.zarr").exists()


@pytest.mark.parametrize("value", [255, -9999, 2.5, np.nan])
def test_undeclared_values_outside_int8_or_not_whole_are_refused(value):
    ds = _three_classes()
    label = ds["label"].astype(np.float64)
    label[0, 1, 1] = value
    with pytest.raises(LabelError, match=r"outside the integers in \[-127, 127\], first in "
                                         r"scene 0"):
        check_label_values(label, "the store")


def test_bigkern_codes_get_bigkern_flags(tmp_path):
    ds = make_scenes(1, (8, 8), seed=0, radiances=False).compute()
    ds["label"].attrs = {}
    assert check_label_values(ds["label"], "here").bigkern_codes is True
    back = open_scenes(write_scenes(ds, tmp_path / "own.zarr"))
    assert back["label"].attrs["flag_meanings"] == "clear unlabelled cloud"


def test_flags_that_do_not_pair_declare_nothing():
    label = xr.DataArray(np.zeros((1, 2, 2), "i1"), dims=("scene", "y", "x"),
                         attrs={"flag_values": [-1, 1], "flag_meanings": "clear no label cloud"})
    assert label_classes(label).values is None
    assert class_names([-1, 1]) == ["clear", "cloud"]
    assert class_names([4, 7]) == ["class_4", "class_7"]


def test_three_class_synthetic_scenes_are_the_two_class_clouds_by_height():
    two = make_scenes(2, (32, 40), seed=5, radiances=False).compute()
    three = make_scenes(2, (32, 40), seed=5, radiances=False, classes=3).compute()
    for name in ("NDAI", "SD", "CORR"):  # the same features
        np.testing.assert_array_equal(two[name].values, three[name].values)
    t2, t3 = two["cloud_truth"].values, three["cloud_truth"].values
    np.testing.assert_array_equal(t3 != 1, t2 == 1)  # low or high cloud where cloud
    np.testing.assert_array_equal(three["label"].values == 0, two["label"].values == 0)
    labelled = three["label"].values != 0
    np.testing.assert_array_equal(three["label"].values[labelled], t3[labelled])
    assert set(np.unique(t3).tolist()) == {1, 2, 3}
    assert label_classes(three["label"]).names == ("clear", "low_cloud", "high_cloud")
    with pytest.raises(ValueError, match="classes must be 2"):
        make_scenes(1, (8, 8), classes=4)
