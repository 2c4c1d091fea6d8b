"""``bigkern fit``, ``predict`` and ``ingest`` on granules as users have them.

For a netCDF4 file ``(time, lat, lon)``, three one-scene GeoTIFFs and an HDF5 swath
file with 2-D lat/lon: the command line fits on the files, predicts into zarr, netCDF
and GeoTIFF with a figure, and the masks equal those of the same data ingested into a
zarr store first; coordinates, CRS and the user's attributes reach every output.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

pytest.importorskip("h5netcdf", reason="h5netcdf is in the formats extra")
rioxarray = pytest.importorskip("rioxarray", reason="rioxarray is in the formats extra")
pytest.importorskip("matplotlib", reason="--png needs the plot extra")

from tests import granule_files as gf  # noqa: E402

pytestmark = pytest.mark.slow_file(seconds=180)

FIT_FLAGS = ("--no-search", "--param", "omega=0.8", "--param", "C=1")


def _bigkern(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bigkern", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=300, env=dict(os.environ))


@pytest.fixture(scope="module")
def scheduler() -> Iterator[str]:
    """One worker process for every command of the module (an embedded cluster per command
    cost 3-4 s of its start and stop, 15 times)."""
    from distributed import LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=":0") as cluster:
        yield cluster.scheduler_address


def _command(*args: str | Path) -> subprocess.CompletedProcess:
    """``bigkern ARGS`` run in this process (as the shell would, less the interpreter's start)."""
    from bigkern.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


def _inputs(kind: str, folder: Path) -> list[Path]:
    data = gf.scenes()
    if kind == "netcdf":
        return [gf.netcdf_time_lat_lon(folder / "mine.nc", data)]
    if kind == "geotiff":
        return gf.geotiffs(folder / "tifs", data)
    return [gf.hdf5_2d_latlon(folder / "swath.h5", data)]


def _masks(path: Path) -> np.ndarray:
    """The class masks of an output, scenes first."""
    if path.suffix == ".tif":
        return rioxarray.open_rasterio(path).values
    if path.suffix == ".nc":
        with xr.open_dataset(path, engine="h5netcdf") as ds:
            return ds["cloud_mask"].values
    from bigkern.store.integrity import open_checked

    return open_checked(path)["cloud_mask"].values


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["netcdf", "geotiff", "hdf5"])
def test_fit_and_predict_granules_into_zarr_netcdf_and_geotiff(tmp_path, kind, scheduler):
    from bigkern import open_scenes, predict_scenes, stack_samples
    from bigkern.features import with_features
    from bigkern.models.persistence.model_files import load_model
    from bigkern.reduce import percentile_bins
    from bigkern.reduce.recorded_split import recorded_split

    files = _inputs(kind, tmp_path)
    fit = _command("fit", *files, "-o", tmp_path / "m.zarr", *FIT_FLAGS, "--scheduler",
                   scheduler)
    assert fit.returncode == 0, fit.stderr
    assert "dims of" in fit.stdout  # the dims found are said
    # the same data written to zarr first, by `bigkern ingest`: the reference masks
    ingest = _command("ingest", "auto", *files, "-o", tmp_path / "s.zarr")
    assert ingest.returncode == 0, ingest.stderr
    model = load_model(tmp_path / "m.zarr")
    scenes = open_scenes(tmp_path / "s.zarr")
    scenes = with_features(scenes, [str(f) for f in model.feature_names_in_])
    expected = predict_scenes(model, scenes)["cloud_mask"].values
    # the ingested store recorded the default fit's training half: its bins take one read
    samples = stack_samples(scenes, [str(f) for f in model.feature_names_in_])
    train, _, source = recorded_split(samples)
    bins = percentile_bins(samples.X, samples.y, mask=train, recorded=source)
    assert bins.attrs["recorded"] == "ok" and bins.attrs["passes"] == 1
    assert (expected != 0).mean() > 0.95
    for suffix in (".zarr", ".nc", ".tif"):
        out, png = tmp_path / f"masks{suffix}", tmp_path / f"p{suffix[1:]}.png"
        done = _command("predict", *files, tmp_path / "m.zarr", "-o", out, "--png", png,
                        "--scheduler", scheduler)
        assert done.returncode == 0, (suffix, done.stderr)
        assert png.stat().st_size > 10_000
        assert f"masks written to {out}" in done.stdout
        np.testing.assert_array_equal(_masks(out), expected, err_msg=suffix)
        _check_kept(out, kind)


def _check_kept(out: Path, kind: str) -> None:
    """lat/lon, time, CRS and the user's attributes are in the output."""
    if out.suffix == ".tif":
        raster = rioxarray.open_rasterio(out)
        if kind == "geotiff":
            assert raster.rio.crs.to_string() == gf.EPSG
            y, x = gf.projected_xy(raster.sizes["y"], raster.sizes["x"])
            np.testing.assert_allclose(raster["x"].values, x)
            np.testing.assert_allclose(raster["y"].values, y)
        return
    if out.suffix == ".nc":
        ds = xr.open_dataset(out, engine="h5netcdf")
    else:
        from bigkern.store.integrity import open_checked

        ds = open_checked(out)
    assert ds.attrs["title"] == gf.USER_ATTRS["title"]
    assert ds.attrs["institution"] == gf.USER_ATTRS["institution"]
    if kind == "netcdf":
        assert ds["cloud_mask"].dims == ("time", "lat", "lon")
        np.testing.assert_array_equal(ds["time"].values, gf.TIMES)
        assert ds["lat"].attrs["units"] == "degrees_north"
    elif kind == "hdf5":
        assert ds["lat"].dims == ("granule", "row", "col") or ds["lat"].dims == ("row", "col")
        assert ds["lon"].attrs["standard_name"] == "longitude"
        np.testing.assert_array_equal(ds["granule_time"].values, gf.TIMES)
    else:
        assert "spatial_ref" in ds.coords
        for name in ("cloud_mask", "decision"):
            assert ds[name].attrs.get("grid_mapping") == "spatial_ref", name


@pytest.mark.parametrize("case", ["unknown", "unmappable", "three_classes"])
def test_what_cannot_be_used_is_one_line_in_under_a_second_and_nothing_is_written(tmp_path,
                                                                                    case):
    if case == "unknown":
        (tmp_path / "unknown.xyz").write_text("not a granule")
        args = ["fit", tmp_path / "unknown.xyz", "-o", tmp_path / "m.zarr"]
        words = "is not a format bigkern reads"
    elif case == "unmappable":
        gf.scenes(1, (8, 8)).rename(scene="a", y="b", x="c").to_netcdf(
            tmp_path / "abc.nc", engine="h5netcdf")
        args = ["fit", tmp_path / "abc.nc", "-o", tmp_path / "m.zarr"]
        words = "--dims scene=a --dims y=b --dims x=c"
    else:
        three = gf.scenes(1, (8, 8))
        three["label"] = three["label"].where(three["label"] != 1, 2)
        three.to_netcdf(tmp_path / "three.nc", engine="h5netcdf")
        args = ["ingest", "auto", tmp_path / "three.nc", "-o", tmp_path / "m.zarr"]
        words = "outside {-1, 0, 1}"
    before = sorted(p.name for p in tmp_path.iterdir())
    start = time.perf_counter()
    _bigkern("--version", cwd=tmp_path)  # the command's start alone, under the same load
    startup = time.perf_counter() - start
    start = time.perf_counter()
    done = _bigkern(*args, cwd=tmp_path)
    elapsed = time.perf_counter() - start
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    # the unknown and unmappable files are refused from their first bytes and metadata, at
    # little more than the cost of starting the command (Python, imports), which a loaded
    # machine can stretch several times over: the refusal is measured against it; the
    # labels must be read to be refused
    assert elapsed < 1.5 * startup + (1.0 if case != "three_classes" else 4.0), \
        (elapsed, startup)
