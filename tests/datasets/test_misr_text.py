"""Tests of bigkern.datasets.misr_text: the MISR expert-label text reader and its zarr ingest."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from bigkern.datasets import shared_data_dir
from bigkern.datasets.misr_text import MISR_TEXT_COLUMNS, ingest_misr_text, read_misr_text
from bigkern.errors import StoreError
from bigkern.scenes import apply_validity, open_scenes, validity_report

FEATURE_COLUMNS = MISR_TEXT_COLUMNS[3:]

# Per real file: pixels, then counts of labels -1, 0, +1 (from ../shared/data/INVENTORY.md).
REAL_COUNTS = {
    "image1.txt": (35_480, 18_175, 11_677, 5_628),
    "image2.txt": (36_206, 10_621, 10_398, 15_187),
}


def _line(y, x, label, base: float = 1.0) -> str:
    """One pixel line; features are ``base`` + 0.1 * column index."""
    feats = " ".join(f"{base + 0.1 * k:.6g}" for k in range(len(FEATURE_COLUMNS)))
    return f"{y} {x} {label} {feats}\n"


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(lines))
    return path


@pytest.fixture
def two_files(tmp_path):
    """Two small scenes on overlapping but different pixel sets."""
    a = _write(
        tmp_path / "a.txt",
        [_line(2, 5, 1, 1.0), _line(2.0, 6, -1, 2.0), _line(4, "5.0", 0, 3.0)],
    )
    b = _write(tmp_path / "b.txt", [_line(3, 7, -1, 4.0), _line(2, 5, 1, 5.0)])
    return a, b


def test_columns_constant():
    assert MISR_TEXT_COLUMNS == (
        "y", "x", "label", "NDAI", "SD", "CORR", "DF", "CF", "BF", "AF", "AN",
    )


def test_single_file_grid_rebuild(two_files):
    ds = read_misr_text(two_files[0])
    assert ds.sizes == {"scene": 1, "y": 3, "x": 2}
    np.testing.assert_array_equal(ds.y.values, [2, 3, 4])
    np.testing.assert_array_equal(ds.x.values, [5, 6])
    for name in FEATURE_COLUMNS:
        assert ds[name].dtype == np.float32
        assert ds[name].dims == ("scene", "y", "x")
        assert ds[name].attrs["long_name"]
    assert ds.label.dtype == np.int8
    np.testing.assert_array_equal(ds.label.values[0], [[1, -1], [0, 0], [0, 0]])
    ndai = ds.NDAI.values[0]
    np.testing.assert_allclose(ndai[0], [1.0, 2.0])
    assert np.isnan(ndai[1]).all()  # row y=3 absent
    np.testing.assert_allclose(ndai[2, 0], 3.0)
    assert np.isnan(ndai[2, 1])
    np.testing.assert_allclose(ds.AN.values[0, 0, 0], 1.7, rtol=1e-6)
    assert list(ds.source.values) == ["a.txt"]
    np.testing.assert_array_equal(ds.scene.values, [0])


def test_several_files_share_one_grid(two_files):
    ds = read_misr_text(list(two_files))
    assert ds.sizes == {"scene": 2, "y": 3, "x": 3}
    np.testing.assert_array_equal(ds.y.values, [2, 3, 4])
    np.testing.assert_array_equal(ds.x.values, [5, 6, 7])
    assert list(ds.source.values) == ["a.txt", "b.txt"]
    np.testing.assert_array_equal(ds.scene.values, [0, 1])
    a = ds.isel(scene=0)
    b = ds.isel(scene=1)
    assert np.isnan(a.NDAI.sel(y=3, x=7))
    assert int(a.label.sel(y=3, x=7)) == 0
    np.testing.assert_allclose(float(b.NDAI.sel(y=3, x=7)), 4.0)
    np.testing.assert_allclose(float(b.NDAI.sel(y=2, x=5)), 5.0)
    assert int(b.label.sel(y=3, x=7)) == -1
    assert int(np.isfinite(b.NDAI).sum()) == 2
    # Absent pixels: NaN in every feature, label 0.
    absent = np.isnan(ds.NDAI.values)
    for name in FEATURE_COLUMNS:
        np.testing.assert_array_equal(np.isnan(ds[name].values), absent)
    assert (ds.label.values[absent] == 0).all()


def test_blank_lines_and_nan_features_are_accepted(tmp_path):
    path = _write(
        tmp_path / "c.txt",
        ["\n", _line(0, 0, 1), "   \n", "0 1 -1 nan 1 2 3 4 5 6 7\n"],
    )
    ds = read_misr_text(path)
    assert ds.sizes == {"scene": 1, "y": 1, "x": 2}
    assert np.isnan(ds.NDAI.values[0, 0, 1])
    assert ds.SD.values[0, 0, 1] == 1
    np.testing.assert_array_equal(ds.label.values[0, 0], [1, -1])


@pytest.mark.parametrize(
    ("lines", "match"),
    [
        ([_line(0, 0, 1), "0 1 1 1 2 3\n"], r"bad\.txt: line 2: expected 11 columns.*found 6"),
        ([_line(0, 0, 1), _line(0, 1, 1).strip() + " 9\n"], r"bad\.txt: line 2: expected 11"),
        ([_line(0, 0, 1), _line(0.5, 1, 1)], r"bad\.txt: line 2, column 1 \(y\).*not an integer"),
        ([_line(0, "x1", 1)], r"bad\.txt: line 1, column 2 \(x\).*'x1' is not a number"),
        ([_line(0, 0, 1), _line(1, 0, 2)], r"bad\.txt: line 2, column 3 \(label\).*-1, 0, 1"),
        ([_line(0, 0, 1), _line(0, 1, 0.5)], r"bad\.txt: line 2, column 3 \(label\)"),
        (
            [_line(0, 0, 1), _line(1, 1, 1), _line(0, 0.0, -1)],
            r"bad\.txt: line 3: duplicate pixel \(y=0, x=0\), first given on line 1",
        ),
        ([_line(0, 0, 1), "0 1 1 1 2 abc 4 5 6 7 8\n"], r"line 2, column 6 \(CORR\)"),
        ([], r"bad\.txt: file is empty"),
        (["\n", "   \n"], r"bad\.txt: file is empty"),
    ],
    ids=[
        "too-few-columns",
        "too-many-columns",
        "non-integer-y",
        "non-numeric-x",
        "label-2",
        "label-half",
        "duplicate-pixel",
        "non-numeric-feature",
        "empty",
        "blank-only",
    ],
)
def test_bad_files(tmp_path, lines, match):
    path = _write(tmp_path / "bad.txt", lines)
    with pytest.raises(StoreError, match=match):
        read_misr_text(path)


def test_bad_second_file_is_named(two_files, tmp_path):
    bad = _write(tmp_path / "second.txt", [_line(0, 0, 7)])
    with pytest.raises(StoreError, match=r"second\.txt: line 1, column 3"):
        read_misr_text([two_files[0], bad])


def test_missing_file_and_no_files(tmp_path):
    with pytest.raises(StoreError, match=r"nothere\.txt: file not found"):
        read_misr_text(tmp_path / "nothere.txt")
    with pytest.raises(StoreError, match="no files"):
        read_misr_text([])
    assert issubclass(StoreError, ValueError)


def test_ingest_round_trip(two_files, tmp_path):
    store = tmp_path / "misr.zarr"
    out = ingest_misr_text(list(two_files), store)
    assert out == store and store.is_dir()
    expected = apply_validity(read_misr_text(list(two_files)))
    with xr.open_zarr(store, consolidated=True) as ds:
        assert ds.NDAI.chunks[0] == (2,)  # ~100 MB chunks of whole scenes: both in one
        assert list(ds.source.values) == ["a.txt", "b.txt"]
        for name in (*FEATURE_COLUMNS, "label"):
            assert ds[name].dtype == expected[name].dtype, name
            np.testing.assert_array_equal(ds[name].values, expected[name].values)
        np.testing.assert_array_equal(ds.y.values, expected.y.values)
        np.testing.assert_array_equal(ds.x.values, expected.x.values)
        # The toy CORR values (1.2 ... 5.2) lie outside CORR's valid range [-1, 1]:
        # ingest masks them and the store says so.
        assert np.isnan(ds.CORR.values).all()
        assert (ds.CORR.attrs["valid_min"], ds.CORR.attrs["valid_max"]) == (-1.0, 1.0)
        assert ds.CORR.attrs["bigkern_ingest_n_out_of_range"] == 5
        assert ds.NDAI.attrs["bigkern_ingest_n_out_of_range"] == 0
        assert ds.SD.attrs["valid_min"] == 0.0 and "valid_max" not in ds.SD.attrs
        assert "valid_min" not in ds.label.attrs


def test_ingest_masks_fills_and_out_of_range_values(tmp_path):
    good = _line(0, 0, 1, 0.1)  # NDAI 0.1, SD 0.2, CORR 0.3, DF 0.4 ... AN 0.8
    path = _write(tmp_path / "f.txt", [
        good,
        "0 1 -1 0.1 999 0.3 0.4 0.5 0.6 0.7 0.8\n",  # SD = 999: a sentinel within SD's range
        "0 2 1 0.1 0.2 -9999 0.4 0.5 0.6 0.7 0.8\n",  # CORR = -9999: outside [-1, 1]
        "0 3 1 -9999 0.2 0.3 0.4 0.5 0.6 0.7 0.8\n",  # NDAI = -9999
    ])
    store = ingest_misr_text(path, tmp_path / "f.zarr", fill_values={"SD": 999, "NDAI": -9999})
    with xr.open_zarr(store) as ds:
        np.testing.assert_array_equal(np.isnan(ds.SD.values[0, 0]), [0, 1, 0, 0])
        np.testing.assert_array_equal(np.isnan(ds.CORR.values[0, 0]), [0, 0, 1, 0])
        np.testing.assert_array_equal(np.isnan(ds.NDAI.values[0, 0]), [0, 0, 0, 1])
        np.testing.assert_array_equal(ds.label.values[0, 0], [1, -1, 1, 1])  # labels kept
        sd, corr, ndai = ds.SD.attrs, ds.CORR.attrs, ds.NDAI.attrs
        # netCDF's default fill (undeclared float variables) comes first, then the given one
        assert sd["bigkern_ingest_fill_values"] == [float(np.float32(9.969209968386869e36)),
                                                    999.0]
        assert sd["bigkern_ingest_n_fill"] == 1
        assert corr["bigkern_ingest_n_out_of_range"] == 1 and corr["bigkern_ingest_n_fill"] == 0
        # -9999 is both a given fill and out of NDAI's range: counted once, as a fill
        assert (ndai["bigkern_ingest_n_fill"], ndai["bigkern_ingest_n_out_of_range"]) == (1, 0)
    # Opening the store applies its recorded (CF) ranges again.
    report = validity_report(open_scenes(store))
    assert report["CORR"]["valid_range_source"] == "attribute"
    assert (report["CORR"]["valid_min"], report["CORR"]["valid_max"]) == (-1.0, 1.0)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"valid_ranges": {"CORR": (1, -1)}}, r"valid range of 'CORR' is empty"),
     ({"fill_values": {"logSD": -9999}}, r"'logSD' is derived from 'SD'"),
     ({"fill_values": {"label": 0}}, r"'label', a label, not a feature")],
    ids=["min-above-max", "derived", "label"],
)
def test_ingest_rejects_nonsense_fills_and_ranges(two_files, tmp_path, kwargs, match):
    with pytest.raises(StoreError, match=match):
        ingest_misr_text(list(two_files), tmp_path / "x.zarr", **kwargs)
    assert not (tmp_path / "x.zarr").exists()


def test_ingest_refuses_to_overwrite(two_files, tmp_path):
    store = tmp_path / "misr.zarr"
    ingest_misr_text(two_files[0], store)
    with pytest.raises(StoreError, match=r"misr\.zarr exists; pass overwrite"):
        ingest_misr_text(two_files[1], store)
    ingest_misr_text(two_files[1], store, overwrite=True, chunks={"scene": 1, "y": 2})
    with xr.open_zarr(store) as ds:
        assert list(ds.source.values) == ["b.txt"]
        assert ds.NDAI.chunks[1] == (2,)


def _real_misr_dir() -> Path:
    root = shared_data_dir()
    if root is None or not (root / "misr").is_dir():
        pytest.skip("../shared/data/misr not present: real MISR tests need it")
    return root / "misr"


@pytest.mark.realdata
def test_real_files_counts():
    folder = _real_misr_dir()
    paths = [folder / name for name in REAL_COUNTS]
    ds = read_misr_text(paths)
    assert list(ds.source.values) == list(REAL_COUNTS)
    for i, (n_pixels, n_clear, n_unlabelled, n_cloud) in enumerate(REAL_COUNTS.values()):
        scene = ds.isel(scene=i)
        present = np.isfinite(scene.NDAI.values)
        assert present.sum() == n_pixels
        for name in FEATURE_COLUMNS:
            np.testing.assert_array_equal(np.isfinite(scene[name].values), present)
        label = scene.label.values
        assert (label[~present] == 0).all()
        assert (label[present] == -1).sum() == n_clear
        assert (label[present] == 0).sum() == n_unlabelled
        assert (label[present] == 1).sum() == n_cloud
    # Shared grid from the smallest to the largest pixel index of both files.
    assert int(ds.y.min()) == 2 and int(ds.y.max()) == 383
    assert int(ds.x.min()) == 65 and int(ds.x.max()) == 369


@pytest.mark.realdata
def test_real_files_ingest(tmp_path):
    folder = _real_misr_dir()
    store = ingest_misr_text(folder / "image1.txt", tmp_path / "image1.zarr")
    with xr.open_zarr(store) as ds:
        assert int(np.isfinite(ds.NDAI).sum()) == REAL_COUNTS["image1.txt"][0]
        assert int((ds.label == 1).sum()) == REAL_COUNTS["image1.txt"][3]
        for name in FEATURE_COLUMNS:  # the default valid ranges mask no real data
            assert ds[name].attrs["bigkern_ingest_n_out_of_range"] == 0, name
            assert ds[name].attrs["bigkern_ingest_n_fill"] == 0, name
