"""Chunk manifests: a valid chunk in the wrong place is an error naming it.

Each chunk of a feature passes its own CRC-32C wherever it lies, so before the
manifests two chunks swapped in place fitted with exit 0. Real stores on disk,
a real LocalCluster (the session's ``client``), and the real command.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import zarr

from bigkern.datasets import make_scenes
from bigkern.errors import StoreError
from bigkern.scenes import open_scenes, write_scenes
from bigkern.store.integrity import open_checked
from bigkern.store.manifest import MANIFEST_ATTR, chunk_digest

DIMS = ("scene", "y", "x")


def _swap(a: Path, b: Path) -> None:
    tmp = a.with_name(a.name + ".swap")
    os.rename(a, tmp)
    os.rename(b, a)
    os.rename(tmp, b)


@pytest.fixture
def store(tmp_path, client):
    """Three synthetic scenes, one zarr chunk per scene and half-height (6 chunks a feature)."""
    return write_scenes(make_scenes(3, (48, 64), seed=5), tmp_path / "s.zarr",
                        chunks={"scene": 1, "y": 24, "x": 64})


def test_every_numeric_variable_has_a_manifest_that_reads_back(store):
    group = zarr.open_group(str(store), mode="r")
    with_manifest = {name for name, arr in group.arrays() if MANIFEST_ATTR in arr.attrs}
    assert {"NDAI", "SD", "CORR", "label", "DF", "AN", "cloud_truth"} <= with_manifest
    ds = open_scenes(store)
    assert all(MANIFEST_ATTR not in v.attrs for v in ds.variables.values())  # not data
    ds.load()  # every chunk checked, none refused: NaN dropouts, int8 labels, bools


def test_swapped_chunks_of_a_feature_are_refused_naming_the_chunk(store):
    ds = open_scenes(store)
    before = ds["CORR"].values
    _swap(store / "CORR" / "c" / "0" / "0" / "0", store / "CORR" / "c" / "1" / "0" / "0")
    with pytest.raises(StoreError, match=r"variable 'CORR', chunk \((0|1), 0, 0\) holds data "
                                         r"that belongs elsewhere or was altered"):
        open_scenes(store)["CORR"].load()
    _swap(store / "CORR" / "c" / "0" / "0" / "0", store / "CORR" / "c" / "1" / "0" / "0")
    np.testing.assert_array_equal(open_scenes(store)["CORR"].values, before)


@pytest.mark.parametrize("chunks", [{"y": 8}, {"y": 30, "x": 50}, {"scene": 3, "y": 48}],
                         ids=["inside-one-zarr-chunk", "straddling", "several-zarr-chunks"])
def test_reads_of_any_dask_chunking_are_checked(store, chunks):
    # within a chunk (each task reads part of one), across chunk borders, and many per task
    _swap(store / "NDAI" / "c" / "2" / "1" / "0", store / "NDAI" / "c" / "1" / "1" / "0")
    ds = open_checked(store, chunks=chunks)
    with pytest.raises(StoreError, match=r"variable 'NDAI', chunk \((1|2), 1, 0\) holds data"):
        ds["NDAI"].load()
    ds["SD"].load()  # the other variables are intact


def test_a_chunk_copied_from_another_variable_is_refused(store):
    # SD and NDAI are both float32 chunks of the same shape: each valid anywhere
    src = store / "SD" / "c" / "0" / "0" / "0"
    (store / "NDAI" / "c" / "0" / "0" / "0").write_bytes(src.read_bytes())
    with pytest.raises(StoreError, match=r"variable 'NDAI', chunk \(0, 0, 0\)"):
        open_scenes(store)["NDAI"].load()


def test_the_same_chunk_from_another_store_is_refused(tmp_path, store, client):
    other = write_scenes(make_scenes(3, (48, 64), seed=6), tmp_path / "o.zarr",
                         chunks={"scene": 1, "y": 24, "x": 64})
    chunk = Path("CORR", "c", "1", "0", "0")
    (store / chunk).write_bytes((other / chunk).read_bytes())
    with pytest.raises(StoreError, match=r"variable 'CORR', chunk \(1, 0, 0\)"):
        open_scenes(store)["CORR"].load()


def test_fill_values_nans_and_edge_chunks_read_back_without_false_alarms(tmp_path, client):
    rng = np.random.default_rng(0)
    ndai = rng.normal(size=(2, 37, 29)).astype(np.float32)
    ndai[0, :3] = -9999.0  # a declared fill value: reads back as NaN
    ndai[1, 5] = np.nan
    ds = xr.Dataset({"NDAI": (DIMS, ndai), "label": (DIMS, rng.integers(-1, 2, (2, 37, 29),
                                                                          dtype=np.int8))})
    ds["NDAI"].encoding["_FillValue"] = -9999.0
    path = write_scenes(ds, tmp_path / "f.zarr", chunks={"scene": 1, "y": 16, "x": 16})
    assert MANIFEST_ATTR in zarr.open_group(str(path), mode="r")["NDAI"].attrs
    back = open_checked(path, chunks={"y": 10}).load()  # edge chunks, partial covers
    expect = np.where(ndai == -9999.0, np.nan, ndai)
    np.testing.assert_array_equal(back["NDAI"].values, expect)
    np.testing.assert_array_equal(back["label"].values, ds["label"].values)


def test_a_manifest_for_another_grid_is_refused(store):
    arr = zarr.open_array(str(store), path="CORR", mode="r+")
    manifest = dict(arr.attrs[MANIFEST_ATTR])
    manifest["grid"] = [3, 1, 1]
    arr.attrs[MANIFEST_ATTR] = manifest
    zarr.consolidate_metadata(str(store))
    with pytest.raises(StoreError, match=r"variable 'CORR': its chunk manifest "
                                         r"\(bigkern_manifest\) checksums chunks"):
        open_scenes(store)


def test_a_store_resaved_by_xarray_in_other_chunks_says_so(tmp_path, store):
    """Said as arrays rewritten in other chunks (xarray's to_zarr), never "altered"."""
    resaved = tmp_path / "resaved.zarr"
    opened = xr.open_zarr(store, consolidated=False)
    for var in opened.variables.values():
        var.encoding.pop("chunks", None)
        var.encoding.pop("preferred_chunks", None)
    opened.chunk({"scene": 3, "y": 48, "x": 64}).to_zarr(resaved, consolidated=True)
    with pytest.raises(StoreError, match=r"the array was rewritten after bigkern wrote it "
                                         r"\(as xarray's to_zarr does in other chunks") as err:
        open_scenes(resaved)
    assert "write the data with bigkern.write_scenes" in str(err.value)
    assert "altered" not in str(err.value)


def test_a_store_rewritten_from_an_opened_one_gets_its_own_manifest(tmp_path, store):
    again = write_scenes(open_scenes(store), tmp_path / "again.zarr",
                         chunks={"scene": 3, "y": 48, "x": 64})
    arr = zarr.open_array(str(again), path="NDAI", mode="r")
    assert arr.attrs[MANIFEST_ATTR]["grid"] == [1, 1, 1]
    open_scenes(again).load()


def test_chunk_digest_depends_on_place_name_and_values():
    v = np.arange(6, dtype=np.float32).reshape(2, 3)
    base = chunk_digest("NDAI", (0, 1), v)
    assert base == chunk_digest("NDAI", (0, 1), v.copy())
    assert len({base, chunk_digest("NDAI", (1, 0), v), chunk_digest("SD", (0, 1), v),
                chunk_digest("NDAI", (0, 1), v[::-1]), chunk_digest("NDAI", (0, 1), v.ravel()),
                chunk_digest("NDAI", (0, 1), v.astype(np.float64))}) == 6


@pytest.mark.slow
def test_fit_of_a_store_with_swapped_chunks_fails_in_one_line(tmp_path, client):
    # the probe's case: `bigkern fit` on a scenes store whose CORR chunks were swapped in place
    write_scenes(make_scenes(2, (64, 96), seed=1), tmp_path / "t.zarr",
                 chunks={"scene": 1, "y": 64, "x": 96})
    _swap(tmp_path / "t.zarr" / "CORR" / "c" / "0" / "0" / "0",
          tmp_path / "t.zarr" / "CORR" / "c" / "1" / "0" / "0")
    fit = subprocess.run([sys.executable, "-m", "bigkern", "fit", "t.zarr", "-o", "m.zarr",
                          "--workers", "1"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=240, env={**os.environ, "BIGKERN_PROGRESS": "false"})
    assert fit.returncode != 0
    assert "Traceback" not in fit.stderr, fit.stderr
    last = fit.stderr.strip().splitlines()[-1]
    assert last.startswith("bigkern: error: store ") and "variable 'CORR', chunk (" in last, last
    assert "belongs elsewhere or was altered" in last
    assert not (tmp_path / "m.zarr").exists()
