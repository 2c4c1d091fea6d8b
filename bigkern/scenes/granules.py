"""Granules as they come — netCDF4/HDF5, GeoTIFF/COG, kerchunk references, zarr — read lazily.

:func:`open_granules` opens one granule or many with the library that keeps
each format best (:mod:`bigkern.scenes.granule_formats` tells them apart), in the
file's own chunks, and combines them into one Dataset in the source's own
dims: files that have a scene dim (``time`` …) are concatenated along it, files
of one 2-D scene each become the scenes of a new ``scene`` dim. Nothing is read
but metadata and index coordinates; every chunk a task reads names the file,
the variable and the chunk when it fails, as :mod:`bigkern.store.integrity` does
for zarr.

Coordinates (1-D or 2-D ``lat``/``lon``, ``time``), the CRS (rioxarray's
``spatial_ref`` coordinate and the variables' ``grid_mapping``) and the
attributes are kept. A GeoTIFF's bands become variables named by their band
descriptions (``NDAI``, ``SD`` …; ``band_1`` … when a band has none).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr
from dask.base import tokenize

from bigkern import config
from bigkern.errors import StoreError
from bigkern.extras import require
from bigkern.scenes.dims import DimMapping, find_scene_dims
from bigkern.scenes.granule_formats import granule_format, reference_target
from bigkern.store.integrity import CheckedChunks
from bigkern.store.limits import ArrayMeta, check_declared_sizes
from bigkern.store.urls import Location, PathOrURL, StorageOptions, location

__all__ = ["native_chunks", "open_granule", "open_granules"]

#: The new dim of files that each hold one 2-D scene, and its coordinate of file names.
SCENE_DIM = "scene"
SOURCE_COORD = "source_file"


def _contiguous_chunks(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """Chunks of about ``bigkern.chunk_bytes`` for an unchunked array: whole trailing rows."""
    target = max(1, int(config.get("chunk_bytes")) // max(1, itemsize))
    chunks = list(shape)
    for axis in range(len(shape)):
        rest = math.prod(chunks[axis + 1:]) or 1
        chunks[axis] = max(1, min(shape[axis], target // rest))
        if math.prod(chunks) <= target:
            break
    return tuple(int(c) for c in chunks)


def native_chunks(var: xr.Variable | xr.DataArray) -> tuple[int, ...]:
    """A variable's chunk shape in its file: HDF5/zarr chunks, else ~``chunk_bytes`` pieces.

    Parameters
    ----------
    var : xarray.Variable or DataArray
        Opened lazily (``chunks=None``); its encoding says how it is stored.

    Returns
    -------
    tuple of int

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> v = xr.Variable(("y", "x"), np.zeros((4, 6)), encoding={"chunksizes": (2, 3)})
    >>> native_chunks(v)
    (2, 3)
    """
    enc = var.encoding
    chunks = enc.get("chunksizes") or enc.get("chunks")
    preferred = enc.get("preferred_chunks")
    if chunks is None and isinstance(preferred, Mapping) and preferred:
        chunks = tuple(preferred.get(d, n) for d, n in zip(var.dims, var.shape, strict=True))
    if chunks is None or len(chunks) != var.ndim:
        return _contiguous_chunks(tuple(var.shape), np.dtype(var.dtype).itemsize)
    return tuple(max(1, min(int(c), int(n))) for c, n in zip(chunks, var.shape, strict=True))


def _open_netcdf(loc: Location) -> xr.Dataset:
    with loc.open("rb") as f:
        classic = f.read(3) == b"CDF"
    if classic:  # netCDF 3 (classic, 64-bit offset): SciPy reads it, a core dependency
        source: Any = loc.local_path if loc.local else loc.fs.open(loc.path, "rb")
        return xr.open_dataset(source, engine="scipy", chunks=None, cache=False,
                               decode_coords="all")
    require("h5netcdf", extra="formats", purpose=f"reading the netCDF4/HDF5 file {loc.url}",
            package="h5netcdf")
    source = str(loc.local_path) if loc.local else loc.fs.open(loc.path, "rb")
    # phony_dims: a plain HDF5 file (no netCDF dimension scales) still opens, its dims named
    # phony_dim_0 … in a stable order, for --dims to map
    # decode_coords="all": a CF grid mapping (the CRS) and bounds are coordinates, as
    # rioxarray and the writers of predictions expect, not data variables
    return xr.open_dataset(source, engine="h5netcdf", chunks=None, cache=False,
                           phony_dims="sort", decode_coords="all")


def _band_names(ds: xr.Dataset) -> dict[str, str]:
    """``band_1`` … renamed to their band descriptions, when every band has a distinct one."""
    names = {str(k): str(v.attrs.get("long_name", "") or "") for k, v in ds.data_vars.items()}
    wanted = list(names.values())
    if all(wanted) and len(set(wanted)) == len(wanted) and not set(wanted) & set(ds.coords):
        return {k: v for k, v in names.items() if k != v}
    return {}


def _open_geotiff(loc: Location) -> tuple[xr.Dataset, tuple[int, int]]:
    rioxarray = require("rioxarray", extra="formats",
                        purpose=f"reading the GeoTIFF {loc.url}", package="rioxarray")
    import rasterio

    source = str(loc.local_path) if loc.local else loc.url
    with rasterio.open(source) as f:
        block = tuple(int(b) for b in f.block_shapes[0]) if f.block_shapes else (f.height, 1)
    ds = rioxarray.open_rasterio(source, chunks=None, band_as_variable=True,
                                 mask_and_scale=False, cache=False)
    ds = ds.rename(_band_names(ds))
    for var in ds.data_vars.values():
        var.attrs.pop("long_name", None)  # the band's name is now the variable's
        if var.attrs.get("scale_factor", 1.0) == 1.0:
            var.attrs.pop("scale_factor", None)  # rasterio's default: no packing
        if var.attrs.get("add_offset", 0.0) == 0.0:
            var.attrs.pop("add_offset", None)
    return ds, (block[0], block[1])


def _unpacked(ds: xr.Dataset) -> xr.Dataset:
    """A GeoTIFF's packed bands (a scale or offset of their own) as physical values, lazily.

    rioxarray is opened without ``mask_and_scale`` (the bands keep their dtype, and
    nodata stays a declared ``_FillValue`` for bigkern's validity rules), so a band's
    packing is applied here: never a feature in packed units.
    """
    out = {}
    for name, var in ds.data_vars.items():
        scale = var.attrs.get("scale_factor", 1.0)
        offset = var.attrs.get("add_offset", 0.0)
        if scale == 1.0 and offset == 0.0:
            continue
        fill = var.attrs.get("_FillValue")
        values = var.astype(np.float32) * np.float32(scale) + np.float32(offset)
        if fill is not None:
            values = values.where(var != fill)
        values.attrs = {k: v for k, v in var.attrs.items()
                        if k not in ("scale_factor", "add_offset", "_FillValue")}
        out[name] = values
    return ds.assign(out) if out else ds


def _open_reference(loc: Location, storage_options: StorageOptions) -> xr.Dataset:
    import fsspec

    refs = reference_target(loc)
    entries = refs.get("refs", refs)
    remote = None
    if isinstance(entries, Mapping):
        for value in entries.values():
            if isinstance(value, list) and value and isinstance(value[0], str):
                url = value[0]
                remote = url.split("://", 1)[0] if "://" in url else "file"
                break
    # asynchronous: zarr drives the store from its own event loop; a synchronous filesystem
    # called from there was seen to hang now and then (zarr warns about it)
    fs = fsspec.filesystem("reference", fo=refs, remote_protocol=remote,
                           remote_options=dict(storage_options or {}), asynchronous=True)
    from zarr.storage import FsspecStore

    store = FsspecStore(fs, read_only=True, path="")
    v3 = isinstance(entries, Mapping) and "zarr.json" in entries
    return xr.open_dataset(store, engine="zarr", chunks=None, consolidated=False,
                           zarr_format=3 if v3 else 2, cache=False, decode_coords="all")


def _as_dask(ds: xr.Dataset, where: str, chunk_shapes: Mapping[str, tuple[int, ...]],
             stamp: Any) -> xr.Dataset:
    """Every non-index variable as a dask array read through :class:`CheckedChunks`."""
    replaced: dict[str, xr.Variable] = {}
    for name, var in ds.variables.items():
        if name in ds.indexes or var.ndim == 0:
            continue
        shape = chunk_shapes[str(name)]
        reader = CheckedChunks(where, str(name), var, shape, stamp)
        data = da.from_array(
            reader, chunks=shape, lock=False, asarray=False,
            name=f"bigkern-read-{name}-{tokenize(where, name, stamp, shape)}",
            meta=np.empty((0,) * var.ndim, dtype=var.dtype))
        replaced[str(name)] = xr.Variable(var.dims, data, var.attrs, var.encoding)
    return ds.assign({k: v for k, v in replaced.items() if k in ds.data_vars}).assign_coords(
        {k: v for k, v in replaced.items() if k in ds.coords})


def _stamp(loc: Location) -> Any:
    try:
        if loc.local:
            stat = loc.local_path.stat()
            return (stat.st_mtime_ns, stat.st_size)
        return loc.fs.ukey(loc.path)
    except Exception:  # the filesystem cannot say
        return None


def open_granule(path: PathOrURL | Location, *, fmt: str | None = None,
                 storage_options: StorageOptions = None) -> xr.Dataset:
    """One granule, lazily, in its own dims and chunks (dask arrays whose reads name the chunk).

    Parameters
    ----------
    path : str, Path, URL or Location
        A netCDF4/HDF5 or netCDF classic file, a GeoTIFF, a reference file or
        a zarr store.
    fmt : str, optional
        The format (:func:`~bigkern.scenes.granule_formats.granule_format` finds it).
    storage_options : mapping, optional
        fsspec options for a URL (and for the files a reference file points to).

    Returns
    -------
    xarray.Dataset
        Dask-backed, in the file's dims and chunks (an unchunked variable in
        pieces of about ``bigkern.chunk_bytes``).

    Raises
    ------
    StoreError
        Not a readable granule; declared sizes beyond ``bigkern.store_limits``.
    MissingExtraError
        The format's library is not installed (the ``formats`` extra).

    Examples
    --------
    >>> import tempfile, numpy as np, xarray as xr
    >>> path = f"{tempfile.mkdtemp()}/scene.nc"
    >>> xr.Dataset({"NDAI": (("lat", "lon"), np.ones((4, 6), "f4"))}).to_netcdf(
    ...     path, engine="h5netcdf")
    >>> granule = open_granule(path)
    >>> granule["NDAI"].dims, type(granule["NDAI"].data).__name__
    (('lat', 'lon'), 'Array')
    """
    loc = location(path, storage_options)
    where = str(path)
    fmt = fmt or granule_format(loc)
    block: tuple[int, int] | None = None
    try:
        if fmt == "netcdf":
            ds = _open_netcdf(loc)
        elif fmt == "geotiff":
            ds, block = _open_geotiff(loc)
        elif fmt == "reference":
            ds = _open_reference(loc, storage_options)
        elif fmt == "zarr":
            from bigkern.store.integrity import open_checked

            return open_checked(loc)
        else:
            raise StoreError(f"{where}: unknown granule format {fmt!r}")
    except (StoreError, ImportError):
        raise
    except Exception as err:  # each library raises its own types for "not readable"
        raise StoreError(f"{where} is not a readable {fmt} granule: "
                         f"{type(err).__name__}: {err}") from err
    shapes = {}
    for name, var in ds.variables.items():
        if block is not None and var.ndim == 2 and name not in ds.indexes:
            shapes[str(name)] = (min(block[0], var.shape[0]), min(block[1], var.shape[1]))
        else:
            shapes[str(name)] = native_chunks(var)
    metas = {str(k): ArrayMeta(str(k), tuple(map(str, v.dims)), tuple(map(int, v.shape)),
                               shapes[str(k)], np.dtype(v.dtype) if v.dtype != object
                               else np.dtype(object))
             for k, v in ds.variables.items() if v.ndim}
    check_declared_sizes(where, metas)
    ds = _as_dask(ds, where, shapes, _stamp(loc))
    return _unpacked(ds) if fmt == "geotiff" else ds


def _name(path: str) -> str:
    return PurePosixPath(path.split("://", 1)[-1]).name


def _combine(parts: list[xr.Dataset], paths: list[str], scene: str | None) -> xr.Dataset:
    """Granules as one Dataset: along their scene dim, or each a scene of a new ``scene``."""
    names = [_name(p) for p in paths]
    if scene is not None:
        combined_dim, members = scene, parts
    else:
        combined_dim = SCENE_DIM
        members = [p.expand_dims(SCENE_DIM) for p in parts]
    # per-file coordinates (a swath's 2-D lat/lon, a time per file) are stacked along the
    # scenes, never compared (that would read them) nor taken from the first file; index
    # coordinates must be equal (join="exact"); scalars (the CRS) are the first file's
    own = sorted({str(k) for m in members for k, c in m.coords.items()
                  if c.ndim and k not in m.indexes and combined_dim not in c.dims})
    try:
        out = xr.concat(members, dim=combined_dim, data_vars="minimal", coords=own,
                        compat="override", join="exact", combine_attrs="drop_conflicts")
    except ValueError as err:
        raise StoreError(
            f"the granules {names[0]} … {names[-1]} do not share one grid and one set of "
            f"variables, so they cannot be the scenes of one dataset ({err}); give the files "
            f"of one grid together (one command per grid)") from err
    if scene is None:
        out = out.assign_coords({SOURCE_COORD: (SCENE_DIM, np.array(names, dtype=object))})
    return out


def open_granules(paths: Sequence[PathOrURL], *, dims: DimMapping = None,
                  storage_options: StorageOptions = None,
                  where: str | None = None) -> tuple[xr.Dataset, dict[str, str], dict[str, str]]:
    """Granules as one lazy Dataset in their own dims, with the dims that play scene, y, x.

    Parameters
    ----------
    paths : sequence of str, Path or URL
        The granules (see :func:`~bigkern.scenes.granule_formats.expand_paths` for
        globs); their formats may differ only if their variables and grids agree.
    dims : mapping of str to str, optional
        bigkern's dim → the files' dim, for the dims the files do not declare
        (:func:`~bigkern.scenes.dims.find_scene_dims` finds the others).
    storage_options : mapping, optional
        fsspec options for URLs.
    where : str, optional
        How to name the input in messages (default: the paths).

    Returns
    -------
    dataset : xarray.Dataset
        In the files' dims, plus ``scene`` (with a ``source_file`` coordinate)
        when each file holds one 2-D scene; dask-backed.
    mapping : dict of str to str
        bigkern's dim → the dataset's (as ``open_scenes``' ``dims=``).
    reasons : dict of str to str
        Why each dim not given was chosen.

    Raises
    ------
    StoreError
        An unreadable granule; dims that cannot be told apart (the message
        names the ``--dims`` to pass); granules of different grids or variables.

    Examples
    --------
    Three one-scene GeoTIFF-like netCDF files (2-D ``lat``/``lon``) become three scenes:

    >>> import tempfile, numpy as np, xarray as xr
    >>> folder = tempfile.mkdtemp()
    >>> scene = xr.Dataset({"NDAI": (("lat", "lon"), np.ones((4, 6), "f4"))},
    ...                    coords={"lat": np.arange(4.0), "lon": np.arange(6.0)})
    >>> files = [f"{folder}/g{i}.nc" for i in range(3)]
    >>> for f in files:
    ...     scene.to_netcdf(f, engine="h5netcdf")
    >>> ds, mapping, reasons = open_granules(files)
    >>> dict(ds.sizes), mapping
    ({'scene': 3, 'lat': 4, 'lon': 6}, {'y': 'lat', 'x': 'lon'})
    >>> ds["source_file"].values.tolist()
    ['g0.nc', 'g1.nc', 'g2.nc']
    """
    paths = [str(p) for p in paths]
    where = where or (paths[0] if len(paths) == 1 else f"{paths[0]} … ({len(paths)} files)")
    parts = [open_granule(p, storage_options=storage_options) for p in paths]
    mapping, reasons = find_scene_dims(parts[0], dims, where=paths[0])
    scene = mapping.get("scene", "scene" if "scene" in parts[0].dims else None)
    if len(parts) == 1:
        ds = parts[0]
        if scene is None:
            ds = ds.expand_dims(SCENE_DIM).assign_coords(
                {SOURCE_COORD: (SCENE_DIM, np.array([_name(paths[0])], dtype=object))})
    else:
        ds = _combine(parts, paths, scene)
    if scene is None:
        reasons["scene"] = "each file one scene"
    return ds, mapping, reasons
