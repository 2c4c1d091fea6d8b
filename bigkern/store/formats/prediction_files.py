"""Predictions written as one file: CF netCDF4 (``.nc``) or a cloud-optimized GeoTIFF (``.tif``).

:func:`bigkern.write_predictions` writes zarr, region by region and
resumably. Many tools want one file instead; :func:`write_prediction_file`
writes the same lazy prediction (:func:`bigkern.predict_scenes`) as one,
chosen by the suffix (:func:`prediction_file_format`).

**netCDF** (``.nc``, ``.nc4``; :mod:`bigkern.store.formats.netcdf_output`): netCDF4/HDF5
written with h5netcdf, valid netCDF (``invalid_netcdf=False``) that any
netCDF reader opens. Every variable (``decision``, ``cloud_mask`` or
``prediction``), every coordinate (times, 1-D or 2-D ``lat``/``lon``,
projected ``x``/``y``, the ``spatial_ref`` grid mapping) and the CF
attributes (``flag_values``/``flag_meanings``, ``_FillValue``, ``units``,
``long_name``, ``grid_mapping``, ``Conventions``, ``history``, the user's
own) are kept; a list of strings (``features``) becomes one string, items
separated by ``", "``; a list of numbers (``classes``) an array. Each array is
chunked like the prediction's dask chunks, zlib-compressed, and checksummed:
HDF5's **Fletcher-32** filter on every chunk, verified whenever the chunk is
read, so a damaged chunk fails to read instead of giving wrong values.

**GeoTIFF** (``.tif``, ``.tiff``; :mod:`bigkern.store.formats.geotiff_output`): one
cloud-optimized GeoTIFF (GDAL's COG driver: tiled, overviews, deflate) with a
band per scene of the class mask (int8, ``nodata`` the "no prediction" code)
or of a regressor's prediction (float32, ``nodata`` NaN). Bands are described
by the scene coordinate's values (ISO times) or ``scene i``; the tags hold the
root and the variable's attributes. The CRS and transform are the
prediction's own (its ``spatial_ref``/``grid_mapping`` and evenly spaced
``x``/``y`` coordinates, as rioxarray reads them); without them the file has
neither (pixel coordinates; nothing is guessed). ``decision`` is not written:
use netCDF or zarr for it.

Both follow the rules of every bigkern output (:mod:`bigkern.store.outputs`,
:func:`bigkern.store.staging.staged_output`): the output is claimed, it may not
be an input, an existing file is replaced only with ``overwrite=True`` and
only if bigkern wrote it (root attribute, or GeoTIFF tag,
``bigkern_kind = "predictions"``), and the file is written as a hidden
sibling and published whole, so a crash never leaves a file at the path. Both
record ``bigkern_status = "complete"``. There is **no resume**: a rerun
computes the whole file again (zarr's :func:`bigkern.write_predictions`
resumes). One process writes the file; the blocks are computed on the
cluster (or dask's local threads) a few at a time, so the client holds a few
chunks at once.
"""

from __future__ import annotations

import os
import posixpath
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

import xarray as xr

from bigkern.extras import require
from bigkern.store.regions import RegionReport
from bigkern.store.staging import staged_output
from bigkern.store.urls import Location, PathOrURL, StorageOptions, location

__all__ = ["GEOTIFF_SUFFIXES", "NETCDF_SUFFIXES", "prediction_file_format",
           "write_prediction_file"]

#: Suffixes (any case) of predictions written as netCDF4.
NETCDF_SUFFIXES = (".nc", ".nc4")
#: Suffixes (any case) of predictions written as a cloud-optimized GeoTIFF.
GEOTIFF_SUFFIXES = (".tif", ".tiff")

_KIND = "predictions"


def prediction_file_format(path: PathOrURL | Location) -> Literal["netcdf", "geotiff"] | None:
    """The single-file format of predictions written at ``path``, from its suffix.

    Returns ``"netcdf"`` for ``.nc``/``.nc4``, ``"geotiff"`` for
    ``.tif``/``.tiff`` (any case), None for anything else (a zarr store).

    Examples
    --------
    >>> prediction_file_format("masks.nc"), prediction_file_format("s3://b/masks.TIF")
    ('netcdf', 'geotiff')
    >>> prediction_file_format("masks.zarr") is None
    True
    """
    text = path.url if isinstance(path, Location) else os.fspath(path)
    suffix = posixpath.splitext(text.rstrip("/").replace(os.sep, "/").rsplit("/", 1)[-1])[1]
    if suffix.lower() in NETCDF_SUFFIXES:
        return "netcdf"
    if suffix.lower() in GEOTIFF_SUFFIXES:
        return "geotiff"
    return None


def write_prediction_file(
    pred: xr.Dataset,
    path: PathOrURL | Location,
    *,
    overwrite: bool = False,
    inputs: Iterable[PathOrURL | Location] = (),
    storage_options: StorageOptions = None,
    summarize: Callable[..., Mapping[str, Any]] | None = None,
    label: str | None = None,
) -> RegionReport:
    """Write :func:`bigkern.predict_scenes` output as one netCDF or GeoTIFF file.

    The format comes from the suffix (:func:`prediction_file_format`); what
    each holds, and the guarantees of both, are described in
    :mod:`bigkern.store.formats.prediction_files`. The file is written whole each time:
    no resume.

    Parameters
    ----------
    pred : xarray.Dataset
        The lazy prediction: 3-D data variables on the same dims (scene, rows,
        columns — named as the user's data names them, e.g. ``(time, lat,
        lon)``), dask-backed.
    path : str, Path or URL
        ``….nc``/``….nc4`` or ``….tif``/``….tiff``: a local path or an fsspec
        URL (``s3://…``, ``memory://…``). A URL's file is written to a local
        temporary directory first (it needs the room), then copied to a
        hidden sibling and published there.
    overwrite : bool
        Replace an existing prediction file that bigkern wrote (never
        anything else, nor a bigkern output of another kind).
    inputs : iterable of paths or URLs
        The command's inputs (scenes, model): ``path`` may not be, contain or
        lie inside one.
    storage_options : mapping, optional
        fsspec options for a URL.
    summarize : callable, optional
        ``summarize(*blocks) -> dict[str, int]`` of each region's blocks of the
        data variables in their order (``decision, cloud_mask``, or
        ``prediction``), as :func:`bigkern.store.regions.write_regions` takes it;
        :attr:`RegionReport.summary` is the sum over the regions.
    label : str, optional
        Progress label (default ``writing <path>``).

    Returns
    -------
    RegionReport
        ``path`` (a :class:`~pathlib.Path`, or the URL given), ``n_regions``
        = ``n_computed`` = the blocks written (the prediction's chunk grid),
        nothing reused, damaged or resumed, and ``summary``.

    Raises
    ------
    ValueError
        An unknown suffix, or a prediction that the format cannot hold (not
        3-D variables on shared dims; a GeoTIFF without ``cloud_mask`` or
        ``prediction``).
    bigkern.StoreError
        ``path`` exists and ``overwrite`` is False, or it is not bigkern's
        prediction file; or it is an input.
    bigkern.MissingExtraError
        h5netcdf, or rasterio and rioxarray, are not installed (the
        ``formats`` extra).

    Examples
    --------
    >>> import tempfile
    >>> import xarray as xr
    >>> from bigkern import BinnedSVC, predict_scenes, stack_samples
    >>> from bigkern.datasets import make_scenes
    >>> scenes = make_scenes(2, (24, 32), seed=0, radiances=False)
    >>> s = stack_samples(scenes, ["NDAI", "SD", "CORR"])
    >>> model = BinnedSVC(omega=0.8).fit(s.as_dataarray(), s.y, mask=s.mask)
    >>> pred = predict_scenes(model, scenes)
    >>> tmp = tempfile.TemporaryDirectory()
    >>> def pixels(decision, mask):  # a summary of each region's blocks
    ...     return {"pixels": decision.size}
    >>> report = write_prediction_file(pred, f"{tmp.name}/masks.nc", summarize=pixels)
    >>> report.n_regions, report.summary["pixels"]
    (2, 1536)
    >>> with xr.open_dataset(report.path, engine="h5netcdf") as ds:
    ...     ds.attrs["bigkern_kind"], ds.attrs["features"], ds["cloud_mask"].dims
    ('predictions', 'NDAI, SD, CORR', ('scene', 'y', 'x'))
    >>> tif = write_prediction_file(pred, f"{tmp.name}/masks.tif")
    >>> import rasterio
    >>> with rasterio.open(tif.path) as src:
    ...     src.count, src.dtypes[0], src.nodata, src.tags()["flag_meanings"]
    (2, 'int8', 0.0, 'clear no_prediction cloud')
    >>> tmp.cleanup()
    """
    from bigkern.store.formats.prediction_blocks import prediction_layout

    form = prediction_file_format(path)
    if form is None:
        raise ValueError(f"{path}: a prediction file is netCDF ({', '.join(NETCDF_SUFFIXES)}) "
                         f"or GeoTIFF ({', '.join(GEOTIFF_SUFFIXES)}); other paths are "
                         f"written as zarr stores (write_predictions)")
    _, layout = prediction_layout(pred)  # refuse what the file cannot hold before claiming
    if form == "netcdf":
        require("h5netcdf", extra="formats", purpose="writing predictions as netCDF")
        from bigkern.store.formats.netcdf_output import write_netcdf as write
    else:
        require("rasterio", extra="formats", purpose="writing predictions as GeoTIFF")
        require("rioxarray", extra="formats", purpose="writing predictions as GeoTIFF")
        from bigkern.store.formats.geotiff_output import geotiff_variable
        from bigkern.store.formats.geotiff_output import write_geotiff as write

        geotiff_variable(layout.names)
    loc = location(path, storage_options)
    label = label or f"writing {loc.url}"
    with staged_output(loc, overwrite=overwrite, inputs=inputs, kind=_KIND) as temp:
        if isinstance(temp, Path):
            n, summary = write(pred, temp, kind=_KIND, summarize=summarize, label=label)
        else:  # a URL: HDF5 and GDAL write local files; the finished one is copied there
            with tempfile.TemporaryDirectory(prefix="bigkern-") as scratch:
                local = Path(scratch) / loc.name
                n, summary = write(pred, local, kind=_KIND, summarize=summarize, label=label)
                temp.fs.put_file(str(local), temp.path)
                temp.refresh()
    return RegionReport(loc.local_path if loc.local else str(path), n, n_computed=n,
                        summary=summary)
