"""Granules as they come (netCDF4/HDF5, GeoTIFF, kerchunk references) opened as scenes."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
import xarray as xr

from bigkern import open_scenes, write_scenes
from bigkern.errors import LabelError, StoreError
from bigkern.scenes.granule_formats import expand_paths, granule_format

h5py = pytest.importorskip("h5py", reason="h5py is in the formats extra")
pytest.importorskip("h5netcdf", reason="h5netcdf is in the formats extra")

from tests import granule_files as gf  # noqa: E402


@pytest.fixture(scope="module")
def data() -> xr.Dataset:
    return gf.scenes()


def test_netcdf_opens_lazily_in_its_chunks_with_its_dims_found(tmp_path, data):
    path = gf.netcdf_time_lat_lon(tmp_path / "mine.nc", data)
    assert granule_format(path) == "netcdf"
    ds = open_scenes(path)
    assert ds["NDAI"].dims == ("scene", "y", "x")
    assert ds["NDAI"].data.chunks == ((1, 1, 1), (24, 24), (32, 32))  # the file's own chunks
    found = json.loads(ds.attrs["bigkern_dims_found"])
    assert found == {"scene": "time: its CF axis T", "y": "lat: its standard_name latitude",
                     "x": "lon: its standard_name longitude"}
    # coordinates, their attributes and the user's attributes are kept
    np.testing.assert_array_equal(ds["scene"].values, gf.TIMES)
    assert ds["y"].attrs["standard_name"] == "latitude"
    assert ds.attrs["title"] == gf.USER_ATTRS["title"]
    for name in [*gf.FEATURES, "label"]:
        np.testing.assert_array_equal(ds[name].values, data[name].values)


def test_netcdf_reads_as_the_same_data_written_to_zarr_first(tmp_path, data):
    nc = open_scenes(gf.netcdf_time_lat_lon(tmp_path / "mine.nc", data))
    store = write_scenes(xr.open_dataset(tmp_path / "mine.nc", engine="h5netcdf"),
                         tmp_path / "mine.zarr")
    zs = open_scenes(store)
    assert zs.attrs["bigkern_dims"] == nc.attrs["bigkern_dims"]  # found alike
    for name in [*gf.FEATURES, "label"]:
        np.testing.assert_array_equal(nc[name].values, zs[name].values)
    np.testing.assert_array_equal(nc["y"].values, zs["y"].values)


def test_an_unchunked_netcdf_is_read_in_pieces_of_the_chunk_size(tmp_path, data):
    import dask

    path = gf.netcdf_time_lat_lon(tmp_path / "flat.nc", data, chunks=None)
    with dask.config.set({"bigkern.chunk_bytes": 48 * 64 * 4}):  # one scene of float32
        ds = open_scenes(path)
    assert ds["NDAI"].data.chunks[0] == (1, 1, 1)
    np.testing.assert_array_equal(ds["SD"].values, data["SD"].values)


def test_many_netcdf_files_are_concatenated_along_their_scene_dim(tmp_path, data):
    paths = []
    for i in range(3):
        paths.append(gf.netcdf_time_lat_lon(tmp_path / f"t{i}.nc", data.isel(scene=[i])))
    # each file's time is its own: give them distinct times
    for i, p in enumerate(paths):
        with xr.open_dataset(p, engine="h5netcdf") as one:
            one = one.load().assign_coords(time=gf.TIMES[i:i + 1])
        one.to_netcdf(p, engine="h5netcdf")
    ds = open_scenes(str(tmp_path / "t*.nc"))
    assert ds.sizes["scene"] == 3
    np.testing.assert_array_equal(ds["scene"].values, gf.TIMES)
    np.testing.assert_array_equal(ds["CORR"].values, data["CORR"].values)


def test_geotiffs_are_scenes_with_their_bands_named_and_their_crs_kept(tmp_path, data):
    pytest.importorskip("rioxarray", reason="rioxarray is in the formats extra")
    paths = gf.geotiffs(tmp_path / "tifs", data)
    assert granule_format(paths[0]) == "geotiff"
    ds = open_scenes([str(p) for p in paths])
    assert sorted(ds.data_vars) == sorted([*gf.FEATURES, "label"])
    assert ds["source_file"].values.tolist() == ["scene0.tif", "scene1.tif", "scene2.tif"]
    assert ds["NDAI"].data.chunks[1:] == ((16, 16, 16), (32, 32))  # the files' blocks
    assert ds.rio.crs.to_string() == gf.EPSG
    y, x = gf.projected_xy(data.sizes["y"], data.sizes["x"])
    np.testing.assert_allclose(ds["x"].values, x)
    np.testing.assert_allclose(ds["y"].values, y)
    for name in [*gf.FEATURES, "label"]:
        np.testing.assert_array_equal(ds[name].values, data[name].values.astype("f4"))


def test_geotiffs_of_different_grids_are_refused_naming_them(tmp_path, data):
    pytest.importorskip("rioxarray", reason="rioxarray is in the formats extra")
    a = gf.geotiffs(tmp_path / "a", data.isel(scene=[0]))[0]
    b = gf.geotiffs(tmp_path / "b", data.isel(scene=[1], x=slice(0, 40)))[0]
    with pytest.raises(StoreError, match="do not share one grid"):
        open_scenes([str(a), str(b)])


def test_2d_lat_lon_say_which_dims_are_y_and_x(tmp_path, data):
    ds = open_scenes(gf.hdf5_2d_latlon(tmp_path / "swath.h5", data))
    found = json.loads(ds.attrs["bigkern_dims_found"])
    assert found["y"].startswith("row: the first dim of the 2-D coordinate")
    assert found["x"].startswith("col: the second dim")
    assert found["scene"] == "granule: its name"
    assert ds["lat"].dims == ("y", "x") and ds["lat"].attrs["standard_name"] == "latitude"
    np.testing.assert_array_equal(ds["granule_time"].values, gf.TIMES)
    np.testing.assert_array_equal(ds["NDAI"].values, data["NDAI"].values)


def test_plain_hdf5_without_dims_is_refused_naming_the_dims_to_pass(tmp_path, data):
    path = tmp_path / "plain.h5"
    with h5py.File(path, "w") as f:
        for name in [*gf.FEATURES, "label"]:
            f.create_dataset(name, data=data[name].values)
    with pytest.raises(StoreError) as refused:
        open_scenes(path)
    text = str(refused.value)
    assert "\n" not in text
    assert "--dims scene=phony_dim_0 --dims y=phony_dim_1 --dims x=phony_dim_2" in text
    ds = open_scenes(path, dims={"scene": "phony_dim_0", "y": "phony_dim_1",
                                 "x": "phony_dim_2"})
    np.testing.assert_array_equal(ds["SD"].values, data["SD"].values)


# run in a fresh process: reads are counted there alone, and fsspec's I/O thread there has
# seen no cluster (after in-process clusters of other test files, it was seen to hang here)
_COUNTED_READ = """
import json, sys
import dask, fsspec, numpy as np
from fsspec.implementations.local import LocalFileSystem
from bigkern import open_scenes

class CountingFileSystem(LocalFileSystem):
    protocol = ("countfile",)
    bytes_read = 0

    def cat_file(self, path, start=None, end=None, **kwargs):
        data = super().cat_file(path, start=start, end=end, **kwargs)
        CountingFileSystem.bytes_read += len(data)
        return data

fsspec.register_implementation("countfile", CountingFileSystem, clobber=True)
ds = open_scenes(sys.argv[1])
with dask.config.set(scheduler="synchronous"):
    values = {name: ds[name].values for name in sys.argv[2:]}  # each read once
sums = {name: float(np.nansum(v.astype("f8"))) for name, v in values.items()}
nbytes = sum(v.nbytes for v in values.values())
print(json.dumps({"read": CountingFileSystem.bytes_read, "nbytes": nbytes, "sums": sums}))
"""


_REFERENCE = """
import json, sys
from kerchunk.hdf import SingleHdf5ToZarr
print(json.dumps(SingleHdf5ToZarr(sys.argv[1]).translate()))
"""


def test_a_kerchunk_reference_reads_the_netcdf_in_place(tmp_path, data):
    """The reference's reads go to the netCDF file, and no more bytes than it holds."""
    import subprocess
    import sys

    pytest.importorskip("kerchunk.hdf", reason="kerchunk is in the formats extra")
    nc = gf.netcdf_time_lat_lon(tmp_path / "mine.nc", data)
    # kerchunk's translation drives zarr's event loop: in a test process that ran clusters
    # before it, it was seen to hang (all threads idle), so it runs in a fresh process too
    made = subprocess.run([sys.executable, "-c", _REFERENCE, str(nc)], capture_output=True,
                          text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    refs = json.loads(made.stdout)
    for key, value in refs["refs"].items():
        if isinstance(value, list):
            refs["refs"][key] = [f"countfile://{nc}", *value[1:]]
    ref_path = tmp_path / "mine.json"
    ref_path.write_text(json.dumps(refs))
    assert granule_format(ref_path) == "reference"
    before = sorted(p.name for p in tmp_path.iterdir())
    names = [*gf.FEATURES, "label"]
    done = subprocess.run([sys.executable, "-c", _COUNTED_READ, str(ref_path), *names],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.strip().splitlines()[-1])
    for name in names:
        expected = float(np.nansum(data[name].values.astype("f8")))
        assert found["sums"][name] == pytest.approx(expected, rel=1e-12)
    assert 0.5 * found["nbytes"] < found["read"] <= nc.stat().st_size
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing copied


@pytest.mark.parametrize("content, name, words", [
    (b"hello", "notes.xyz", r"is not a format bigkern reads \(suffix \.xyz"),
    (b"\x0e\x03\x13\x01" + bytes(60), "misr.hdf", "is an HDF4 file"),
    (b"garbage", "broken.nc", "has the suffix .nc but is not a netcdf file"),
])
def test_what_cannot_be_read_is_named_in_one_line(tmp_path, content, name, words):
    (tmp_path / name).write_bytes(content)
    with pytest.raises(StoreError, match=words) as refused:
        open_scenes(tmp_path / name)
    assert "\n" not in str(refused.value)


def test_a_glob_that_matches_nothing_is_refused(tmp_path):
    with pytest.raises(StoreError, match="no file matches"):
        expand_paths(str(tmp_path / "*.nc"))


def test_a_corrupt_chunk_names_the_file_the_variable_and_the_chunk(tmp_path, data):
    path = gf.netcdf_time_lat_lon(tmp_path / "mine.nc", data)
    with h5py.File(path, "r") as f:
        offset = f["SD"].id.get_chunk_info_by_coord((1, 24, 0)).byte_offset
    raw = bytearray(path.read_bytes())
    raw[offset:offset + 16] = bytes(16)  # the zlib stream of one chunk, destroyed
    path.write_bytes(bytes(raw))
    ds = open_scenes(path)
    with pytest.raises(StoreError, match=r"mine\.nc: variable 'SD', chunk \(1, 1, 0\)"):
        ds["SD"].values  # noqa: B018


def test_write_scenes_refuses_before_writing_what_open_scenes_refuses(tmp_path, data):
    three = data.copy()
    three["label"] = three["label"].where(three["label"] != 1, 2)  # classes -1, 0, 2
    start = time.perf_counter()
    with pytest.raises(LabelError, match=r"outside \{-1, 0, 1\}") as refused:
        write_scenes(three, tmp_path / "three.zarr")
    assert time.perf_counter() - start < 1.0
    assert "\n" not in str(refused.value)
    abc = data.rename(scene="a", y="b", x="c")
    with pytest.raises(StoreError, match="--dims scene=a --dims y=b --dims x=c"):
        write_scenes(abc, tmp_path / "abc.zarr")
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # nothing written, nothing hidden


def test_a_packed_geotiff_band_is_read_in_physical_units(tmp_path):
    """A band with a scale and an offset of its own is unpacked; nodata stays missing."""
    rasterio = pytest.importorskip("rasterio", reason="rasterio is in the formats extra")
    from rasterio.transform import from_origin

    packed = np.arange(2 * 8 * 8, dtype="int16").reshape(2, 8, 8)
    packed[0, 0, 0] = -1  # nodata
    path = tmp_path / "packed.tif"
    with rasterio.open(path, "w", driver="GTiff", height=8, width=8, count=2, dtype="int16",
                       crs=gf.EPSG, transform=from_origin(0, 80, 10, 10), nodata=-1) as f:
        f.write(packed)
        f.scales, f.offsets = (0.01, 1.0), (1.0, 0.0)
        f.set_band_description(1, "NDAI")
        f.set_band_description(2, "SD")
    ds = open_scenes(path, validate=False, valid_ranges=False)
    ndai = ds["NDAI"].values[0]
    assert np.isnan(ndai[0, 0])
    np.testing.assert_allclose(ndai.ravel()[1:], 0.01 * packed[0].ravel()[1:] + 1.0, rtol=1e-6)
    np.testing.assert_array_equal(ds["SD"].values[0], packed[1])  # scale 1, offset 0: as stored
