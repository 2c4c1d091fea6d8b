"""Predictions as one CF netCDF file or cloud-optimized GeoTIFF.

(:mod:`bigkern.store.formats.prediction_files`)

Predictions of a real fitted model on small scenes, written without a client
and on the session's LocalCluster, read back with xarray (h5netcdf) and
rioxarray: the masks, coordinates, CRS and attributes are those of the
prediction; the netCDF's chunks are checksummed; the outputs follow the rules
of every bigkern output (overwrite only bigkern's, nothing left by a failure).
"""

from __future__ import annotations

import io
import os
import sys
import warnings

import dask.array as da
import numpy as np
import pytest
import xarray as xr

pytest.importorskip("h5netcdf")
rasterio = pytest.importorskip("rasterio")
rioxarray = pytest.importorskip("rioxarray")

from bigkern import BinnedSVC, NystromKernelRidge, StoreError, predict_scenes, stack_samples  # noqa: E402
from bigkern.datasets import make_scenes  # noqa: E402
from bigkern.jobs.predict import _count_predictions  # noqa: E402
from bigkern.store.formats.prediction_files import prediction_file_format, write_prediction_file  # noqa: E402
from bigkern.store.outputs import store_kind  # noqa: E402

FEATURES = ["NDAI", "SD", "CORR"]
SHAPE = (64, 96)
TIMES = np.datetime64("2021-03-01T10:30", "ns") + np.arange(3) * np.timedelta64(16, "D")


@pytest.fixture(autouse=True)
def _rioxarray_internals_quiet():
    """rioxarray's own use of affine's ``*`` (PendingDeprecationWarning) is not under test."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PendingDeprecationWarning)
        yield


@pytest.fixture(scope="module")
def classifier():
    scenes = make_scenes(2, (32, 48), seed=0, radiances=False)
    s = stack_samples(scenes, FEATURES)
    return BinnedSVC(omega=0.8, C=1.0).fit(s.as_dataarray(), s.y, mask=s.mask)


def utm_scenes() -> xr.Dataset:
    """(time, y, x) on a UTM grid (spatial_ref via rioxarray), lazy 2-D lat/lon, 2×2 chunks."""
    ny, nx = SHAPE
    s = make_scenes(3, SHAPE, seed=4, radiances=False, chunks={"scene": 1, "y": 40, "x": 48})
    s = s.rename(scene="time").assign_coords(
        time=TIMES, x=500_000 + 30.0 * np.arange(nx) + 15, y=4_100_000 - 30.0 * np.arange(ny) - 15)
    rows, cols = da.meshgrid(da.arange(ny, chunks=32), da.arange(nx, chunks=32), indexing="ij")
    s = s.assign_coords(lat=(("y", "x"), 37.0 - rows * 3e-4 + cols * 1e-5),
                        lon=(("y", "x"), -117.0 + cols * 3.4e-4))
    s = s.rio.write_crs("EPSG:32611")
    s.attrs.update(title="UTM scenes", campaign="spring 2021")
    return s


def latlon_scenes() -> xr.Dataset:
    """(time, lat, lon) with 1-D coordinates and no CRS."""
    s = make_scenes(3, SHAPE, seed=5, radiances=False).rename(scene="time", y="lat", x="lon")
    s = s.assign_coords(time=TIMES, lat=70.0 - 0.01 * np.arange(SHAPE[0]),
                        lon=-150.0 + 0.01 * np.arange(SHAPE[1]))
    s.attrs["title"] = "lat/lon scenes"
    return s


def rowcol_scenes() -> xr.Dataset:
    """(scene, row, col) and no coordinate values at all: nothing to georeference."""
    s = make_scenes(2, SHAPE, seed=6, radiances=False).rename(y="row", x="col")
    return s.drop_vars(["scene", "row", "col"])


DIMS = {"utm": {"scene": "time"}, "latlon": {"scene": "time", "y": "lat", "x": "lon"},
        "rowcol": {"y": "row", "x": "col"}}
SCENES = {"utm": utm_scenes, "latlon": latlon_scenes, "rowcol": rowcol_scenes}


@pytest.fixture(scope="module")
def predictions(classifier):
    """Each kind of scenes: (lazy prediction, its computed values)."""
    out = {}
    for name, make in SCENES.items():
        pred = predict_scenes(classifier, make(), dims=DIMS[name])
        out[name] = (pred, pred.compute())
    return out


@pytest.fixture(params=["local", "cluster"])
def on(request):
    """No client (dask's threads), or the session's LocalCluster as the current client."""
    if request.param == "local":
        yield None
        return
    client = request.getfixturevalue("client")
    with client.as_current():
        from bigkern.cluster.compute import current_client

        assert current_client() is client
        yield client


def _expected_summary(values: xr.Dataset) -> dict[str, int]:
    return _count_predictions(values["decision"].values, values["cloud_mask"].values)


def _open_nc(path) -> xr.Dataset:
    return xr.open_dataset(path, engine="h5netcdf")


def _open_tif(path) -> xr.DataArray:
    return rioxarray.open_rasterio(path, mask_and_scale=False)


def _only(tmp_path) -> list[str]:
    return sorted(os.listdir(tmp_path))


# --- netCDF ---------------------------------------------------------------------------------

def test_netcdf_round_trip_on_a_projected_grid(predictions, on, tmp_path):
    pred, values = predictions["utm"]
    path = tmp_path / "masks.nc"
    report = write_prediction_file(pred, path, summarize=_count_predictions)

    assert (report.path, report.n_regions, report.n_computed) == (path, 12, 12)
    assert (report.n_reused, report.n_damaged, report.resumed) == (0, 0, False)
    assert report.summary == _expected_summary(values)
    assert _only(tmp_path) == ["masks.nc"]
    with _open_nc(path) as ds:
        np.testing.assert_array_equal(ds["cloud_mask"].values, values["cloud_mask"].values)
        assert ds["cloud_mask"].dtype == np.int8
        np.testing.assert_array_equal(ds["decision"].values, values["decision"].values)
        assert np.isnan(ds["decision"].encoding["_FillValue"])
        np.testing.assert_array_equal(ds["time"].values, TIMES)
        for name in ("x", "y", "lat", "lon"):
            np.testing.assert_array_equal(ds[name].values, values[name].values)
        assert ds["lat"].dims == ("y", "x") and "lat" in ds.coords
        assert "spatial_ref" in ds.coords
        assert ds["cloud_mask"].attrs.get("grid_mapping", "spatial_ref") == "spatial_ref"
        assert ds.rio.crs.to_epsg() == 32611
        assert ds.rio.transform() == pred.rio.transform()
        mask = ds["cloud_mask"].attrs
        np.testing.assert_array_equal(mask["flag_values"], [-1, 0, 1])
        assert mask["flag_meanings"] == "clear no_prediction cloud"
        assert mask["long_name"] == pred["cloud_mask"].attrs["long_name"]
        assert ds["decision"].attrs["units"] == "1"
        attrs = ds.attrs
        assert (attrs["title"], attrs["campaign"]) == ("UTM scenes", "spring 2021")
        assert attrs["history"] == pred.attrs["history"]
        assert (attrs["Conventions"], attrs["model"]) == ("CF-1.10", "BinnedSVC")
        assert attrs["features"] == "NDAI, SD, CORR"
        np.testing.assert_array_equal(attrs["classes"], [-1, 1])
        assert (attrs["bigkern_kind"], attrs["bigkern_status"]) == ("predictions", "complete")
    assert store_kind(path) == "predictions"


def test_netcdf_with_its_own_dim_names_and_1d_lat_lon(predictions, tmp_path):
    pred, values = predictions["latlon"]
    path = tmp_path / "masks.nc4"
    report = write_prediction_file(pred, path)
    assert report.summary == {} and report.n_regions == 3
    with _open_nc(path) as ds:
        assert ds["cloud_mask"].dims == ("time", "lat", "lon")
        np.testing.assert_array_equal(ds["cloud_mask"].values, values["cloud_mask"].values)
        np.testing.assert_array_equal(ds["lat"].values, values["lat"].values)
        np.testing.assert_array_equal(ds["lon"].values, values["lon"].values)
        np.testing.assert_array_equal(ds["time"].values, TIMES)
        assert ds.attrs["title"] == "lat/lon scenes"


def test_netcdf_chunks_match_the_dask_chunks_and_carry_fletcher32(predictions, tmp_path):
    import h5py

    pred, _ = predictions["utm"]
    path = tmp_path / "masks.nc"
    write_prediction_file(pred, path)
    with h5py.File(path, "r") as f:
        for name in ("decision", "cloud_mask"):
            assert f[name].fletcher32 and f[name].compression == "gzip"
            assert f[name].chunks == (1, 40, 48)  # the prediction's dask chunks
        assert f["lat"].chunks == (40, 48) and f["lat"].fletcher32


def test_irregular_dask_chunks_become_whole_hdf5_chunks(tmp_path):
    import h5py

    values = np.arange(3 * 64 * 96, dtype=np.float32).reshape(3, 64, 96)
    data = da.from_array(values, chunks=((1, 1, 1), (22, 21, 21), (96,)))
    pred = xr.Dataset({"prediction": (("scene", "y", "x"), data)})
    report = write_prediction_file(pred, tmp_path / "p.nc")
    assert report.n_regions == 9
    with h5py.File(tmp_path / "p.nc", "r") as f:
        assert f["prediction"].chunks == (1, 22, 96)
        np.testing.assert_array_equal(f["prediction"][...], values)


def test_a_damaged_netcdf_chunk_fails_its_checksum(predictions, tmp_path):
    import h5py

    pred, values = predictions["utm"]
    path = tmp_path / "masks.nc"
    write_prediction_file(pred, path)
    with h5py.File(path, "r") as f:
        chunk = f["cloud_mask"].id.get_chunk_info(5)
    raw = bytearray(path.read_bytes())
    raw[chunk.byte_offset + chunk.size // 2] ^= 0x10
    path.write_bytes(bytes(raw))
    with _open_nc(path) as ds:
        np.testing.assert_array_equal(ds["decision"].values, values["decision"].values)
        with pytest.raises(OSError):
            ds["cloud_mask"].values  # noqa: B018 - reading is the test


# --- GeoTIFF --------------------------------------------------------------------------------

def test_the_batches_of_a_file_writer_agree_on_every_task(classifier, client, tmp_path,
                                                          monkeypatch):
    """The file writers compute a few regions at a time. Optimized batch by batch, such a
    graph fused the scenes' shared tasks differently in each batch: one key, two tasks,
    and a KeyError from the cluster (dask/dask#9888). The writer optimizes every region
    once and cuts the batches from that graph: the files equal the prediction."""
    import bigkern.scenes.samples as samples

    # every chunk's cube one task fused with the scenes' shared per-scene tasks
    monkeypatch.setattr(samples, "FUSED_CUBE_BYTES", 1 << 62)
    pred = predict_scenes(classifier, utm_scenes(), dims=DIMS["utm"])
    with client.as_current():
        values = pred.compute()
        for i in range(3):  # the first write as every later one
            path = tmp_path / f"masks-{i}.tif"
            write_prediction_file(pred, path, summarize=_count_predictions)
            tif = _open_tif(path)
            for band in range(3):
                np.testing.assert_array_equal(tif.isel(band=band).values,
                                              values["cloud_mask"].values[band])
            tif.close()



def test_geotiff_round_trip_on_a_projected_grid(predictions, on, tmp_path):
    pred, values = predictions["utm"]
    path = tmp_path / "masks.tif"
    report = write_prediction_file(pred, path, summarize=_count_predictions)

    assert (report.path, report.n_regions, report.n_computed, report.n_reused) == \
        (path, 12, 12, 0)
    assert report.summary == _expected_summary(values)
    assert _only(tmp_path) == ["masks.tif"]
    tif = _open_tif(path)
    assert tif.dtype == np.int8 and tif.sizes["band"] == 3
    for i in range(3):  # band i is scene i
        np.testing.assert_array_equal(tif.isel(band=i).values, values["cloud_mask"].values[i])
    assert tif.rio.crs.to_epsg() == 32611
    assert tif.rio.transform() == pred.rio.transform()
    np.testing.assert_array_equal(tif["x"].values, values["x"].values)
    np.testing.assert_array_equal(tif["y"].values, values["y"].values)
    assert tif.rio.nodata == 0
    with rasterio.open(path) as src:
        assert src.descriptions == ("2021-03-01T10:30:00", "2021-03-17T10:30:00",
                                    "2021-04-02T10:30:00")
        assert src.tags(ns="IMAGE_STRUCTURE")["LAYOUT"] == "COG"
        tags = src.tags()
    assert (tags["bigkern_kind"], tags["bigkern_status"]) == ("predictions", "complete")
    assert (tags["flag_values"], tags["flag_meanings"]) == ("-1 0 1",
                                                            "clear no_prediction cloud")
    assert tags["history"] == pred.attrs["history"]
    assert (tags["model"], tags["features"], tags["Conventions"]) == \
        ("BinnedSVC", "NDAI, SD, CORR", "CF-1.10")
    assert (tags["title"], tags["campaign"]) == ("UTM scenes", "spring 2021")
    assert store_kind(path) == "predictions"


def test_geotiff_of_lat_lon_scenes_has_their_grid_and_no_crs(predictions, tmp_path):
    pred, values = predictions["latlon"]
    path = tmp_path / "masks.tiff"
    write_prediction_file(pred, path)
    tif = _open_tif(path)
    np.testing.assert_array_equal(tif.values, values["cloud_mask"].values)
    assert tif.rio.crs is None  # never guessed
    np.testing.assert_allclose(tif["y"].values, values["lat"].values)
    np.testing.assert_allclose(tif["x"].values, values["lon"].values)


def test_geotiff_without_georeference_is_written_without_a_warning(predictions, tmp_path):
    pred, values = predictions["rowcol"]
    path = tmp_path / "masks.tif"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        report = write_prediction_file(pred, path)
    assert report.n_regions == 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rasterio.errors.NotGeoreferencedWarning)
        with rasterio.open(path) as src:
            assert src.crs is None and src.transform.is_identity
            assert src.descriptions == ("scene 0", "scene 1")
            np.testing.assert_array_equal(src.read(), values["cloud_mask"].values)


def test_a_regressor_is_written_as_float32_with_nan_nodata(tmp_path):
    scenes = make_scenes(2, (32, 48), seed=7, radiances=False)
    s = stack_samples(scenes, FEATURES)
    X = s.as_dataarray()
    X = X[np.isfinite(X.values).all(axis=1)]
    model = NystromKernelRidge(omega=1.0, lam=1e-2, size=20, random_state=0).fit(
        X, 2 * np.asarray(X.sel(feature="NDAI")) + 1)
    pred = predict_scenes(model, scenes)
    expected = pred["prediction"].values
    write_prediction_file(pred, tmp_path / "p.tif")
    write_prediction_file(pred, tmp_path / "p.nc")
    tif = _open_tif(tmp_path / "p.tif")
    assert tif.dtype == np.float32 and np.isnan(tif.rio.nodata)
    np.testing.assert_array_equal(tif.values, expected)
    with _open_nc(tmp_path / "p.nc") as ds:
        np.testing.assert_array_equal(ds["prediction"].values, expected)
        assert ds.attrs["model"] == "NystromKernelRidge"


# --- the rules of every output --------------------------------------------------------------

def _foreign(path) -> None:
    if path.suffix == ".nc":
        xr.Dataset({"a": ("x", [1, 2])}).to_netcdf(path, engine="h5netcdf")
    else:
        with rasterio.open(path, "w", driver="GTiff", width=4, height=4, count=1,
                           dtype="uint8", crs="EPSG:4326",
                           transform=rasterio.transform.from_origin(0, 4, 1, 1)) as dst:
            dst.write(np.ones((1, 4, 4), np.uint8))


@pytest.mark.parametrize("suffix", [".nc", ".tif"])
def test_overwrite_replaces_only_bigkerns_prediction_file(predictions, suffix, tmp_path):
    pred, _ = predictions["latlon"]
    path = tmp_path / f"masks{suffix}"
    write_prediction_file(pred, path)
    with pytest.raises(StoreError, match="exists; pass overwrite=True"):
        write_prediction_file(pred, path)
    changed = pred.assign_attrs(title="second run")
    write_prediction_file(changed, path, overwrite=True)
    with rasterio.open(path) if suffix == ".tif" else _open_nc(path) as out:
        title = out.tags()["title"] if suffix == ".tif" else out.attrs["title"]
    assert title == "second run"
    assert _only(tmp_path) == [path.name]

    foreign = tmp_path / f"theirs{suffix}"
    _foreign(foreign)
    before = foreign.read_bytes()
    assert store_kind(foreign) is None
    with pytest.raises(StoreError, match="not written by bigkern"):
        write_prediction_file(pred, foreign, overwrite=True)
    assert foreign.read_bytes() == before
    with pytest.raises(StoreError, match="is the input"):
        write_prediction_file(pred, path, overwrite=True, inputs=[path])


def _fail_on_scene_one(block: np.ndarray, block_info=None) -> np.ndarray:
    if block_info[0]["chunk-location"][0] == 1:
        raise RuntimeError("disk gone while predicting scene 1")
    return block


def _failing(pred: xr.Dataset) -> xr.Dataset:
    mask = pred["cloud_mask"]
    return pred.assign(cloud_mask=mask.copy(
        data=mask.data.map_blocks(_fail_on_scene_one, dtype=np.int8)))


@pytest.mark.parametrize("suffix", [".nc", ".tif"])
def test_a_failure_mid_write_leaves_no_file(predictions, suffix, tmp_path):
    pred, _ = predictions["latlon"]
    with pytest.raises(RuntimeError, match="disk gone"):
        write_prediction_file(_failing(pred), tmp_path / f"masks{suffix}")
    assert _only(tmp_path) == []  # no file, no hidden sibling, no claim


def test_a_failure_on_the_cluster_leaves_no_file_and_the_old_one(predictions, client, tmp_path):
    import cloudpickle

    pred, _ = predictions["latlon"]
    path = tmp_path / "masks.nc"
    write_prediction_file(pred, path)
    before = path.read_bytes()
    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers import no tests
    try:
        with pytest.raises(RuntimeError, match="disk gone"):
            write_prediction_file(_failing(pred), path, overwrite=True)
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    assert path.read_bytes() == before and _only(tmp_path) == ["masks.nc"]


# --- paths ----------------------------------------------------------------------------------

def test_prediction_file_format_and_refusals(predictions, tmp_path):
    assert [prediction_file_format(p) for p in ("a.nc", "a.NC4", "s3://b/a.tiff", "a.zarr",
                                                tmp_path / "a.tif")] == \
        ["netcdf", "netcdf", "geotiff", None, "geotiff"]
    pred, _ = predictions["latlon"]
    with pytest.raises(ValueError, match="netCDF"):
        write_prediction_file(pred, tmp_path / "masks.zarr")
    with pytest.raises(ValueError, match="cloud_mask"):
        write_prediction_file(pred[["decision"]], tmp_path / "masks.tif")
    assert _only(tmp_path) == []


def test_a_url_is_written_whole_and_replaced_only_with_overwrite(predictions):
    import fsspec

    pred, values = predictions["latlon"]
    fs = fsspec.filesystem("memory")
    root = "memory://bigkern-prediction-files"
    try:
        for suffix in (".nc", ".tif"):
            url = f"{root}/masks{suffix}"
            report = write_prediction_file(pred, url)
            assert report.path == url and store_kind(url) == "predictions"
            data = fs.cat_file(f"/bigkern-prediction-files/masks{suffix}")
            if suffix == ".nc":
                with xr.open_dataset(io.BytesIO(data), engine="h5netcdf") as ds:
                    mask = ds["cloud_mask"].values
            else:
                with rasterio.MemoryFile(data) as mem, mem.open() as src:
                    mask = src.read()
            np.testing.assert_array_equal(mask, values["cloud_mask"].values)
            with pytest.raises(StoreError, match="exists"):
                write_prediction_file(pred, url)
            write_prediction_file(pred, url, overwrite=True)
        names = sorted(p.rsplit("/", 1)[-1] for p in fs.ls("/bigkern-prediction-files",
                                                            detail=False))
        assert names == ["masks.nc", "masks.tif"]
    finally:
        if fs.exists("/bigkern-prediction-files"):
            fs.rm("/bigkern-prediction-files", recursive=True)
