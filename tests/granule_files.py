"""Granules as users have them, made for the tests: netCDF4 (time, lat, lon), one-scene
GeoTIFFs with a CRS, an HDF5 file with 2-D lat/lon, and the same data as a zarr store."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr

from bigkern.datasets import make_scenes

FEATURES = ["NDAI", "SD", "CORR"]
TIMES = np.array(["2013-05-01T12:00", "2013-05-17T12:00", "2013-06-02T12:00"],
                 dtype="datetime64[ns]")
USER_ATTRS = {"title": "my arctic granules", "institution": "a user's lab",
              "Conventions": "CF-1.8"}
EPSG = "EPSG:32611"


def scenes(n: int = 3, shape: tuple[int, int] = (48, 64), seed: int = 3) -> xr.Dataset:
    """Synthetic MISR-like scenes in memory (features, label, truth), bigkern's dims."""
    return make_scenes(n, shape, seed=seed, radiances=False).compute()


def netcdf_time_lat_lon(path: Path, ds: xr.Dataset, *, chunks: tuple[int, int, int] | None
                        = (1, 24, 32)) -> Path:
    """A CF netCDF4 file with dims (time, lat, lon), CF units, an integer label."""
    n, ny, nx = (ds.sizes[d] for d in ("scene", "y", "x"))
    out = ds[[*FEATURES, "label"]].rename(scene="time", y="lat", x="lon").assign_coords(
        time=("time", TIMES[:n], {"standard_name": "time", "axis": "T"}),
        lat=("lat", np.linspace(72.0, 70.0, ny), {"units": "degrees_north",
                                                  "standard_name": "latitude"}),
        lon=("lon", np.linspace(-50.0, -46.0, nx), {"units": "degrees_east",
                                                    "standard_name": "longitude"}))
    out.attrs = dict(USER_ATTRS)
    for name in FEATURES:
        out[name].attrs["units"] = "1"
    encoding = {}
    if chunks is not None:
        encoding = {v: {"chunksizes": chunks, "zlib": True} for v in [*FEATURES, "label"]}
    out.to_netcdf(path, engine="h5netcdf", encoding=encoding)
    return path


def hdf5_2d_latlon(path: Path, ds: xr.Dataset) -> Path:
    """A netCDF4/HDF5 swath file: dims (granule, row, col), 2-D lat(row, col)/lon(row, col)."""
    n, ny, nx = (ds.sizes[d] for d in ("scene", "y", "x"))
    rows, cols = np.meshgrid(np.arange(ny), np.arange(nx), indexing="ij")
    lat = 70.0 + 0.01 * rows + 0.002 * cols
    lon = -50.0 + 0.03 * cols - 0.004 * rows
    out = ds[[*FEATURES, "label"]].rename(scene="granule", y="row", x="col").assign_coords(
        lat=(("row", "col"), lat, {"standard_name": "latitude", "units": "degrees_north"}),
        lon=(("row", "col"), lon, {"standard_name": "longitude", "units": "degrees_east"}),
        granule_time=("granule", TIMES[:n]))
    out.attrs = dict(USER_ATTRS)
    out.to_netcdf(path, engine="h5netcdf",
                  encoding={v: {"chunksizes": (1, ny, nx)} for v in [*FEATURES, "label"]})
    return path


def projected_xy(ny: int, nx: int) -> tuple[np.ndarray, np.ndarray]:
    """Pixel centres of a 275 m UTM grid (y decreasing, as a north-up raster's)."""
    x = 500_000.0 + 275.0 * np.arange(nx) + 137.5
    y = 4_000_000.0 - 275.0 * np.arange(ny) - 137.5
    return y, x


def geotiffs(folder: Path, ds: xr.Dataset) -> list[Path]:
    """One GeoTIFF per scene: bands NDAI, SD, CORR, label (named by their descriptions)."""
    import rioxarray  # noqa: F401  (the .rio accessor)

    folder.mkdir(parents=True, exist_ok=True)
    y, x = projected_xy(ds.sizes["y"], ds.sizes["x"])
    paths = []
    for i in range(ds.sizes["scene"]):
        one = ds.isel(scene=i)[[*FEATURES, "label"]].astype("float32")
        bands = one.to_array("band").assign_coords(x=x, y=y).rio.write_crs(EPSG)
        bands.attrs = {"long_name": (*FEATURES, "label"), **USER_ATTRS}
        path = folder / f"scene{i}.tif"
        bands.rio.to_raster(path, tiled=True, blockxsize=32, blockysize=16)
        paths.append(path)
    return paths
