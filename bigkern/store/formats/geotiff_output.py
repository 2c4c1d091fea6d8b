"""Predictions as one cloud-optimized GeoTIFF: a band per scene of the class mask.

The file holds one variable: a classifier's ``cloud_mask`` or, for k classes,
``class`` (int8, ``nodata`` the "no prediction" code), or a regressor's
``prediction`` (float32, ``nodata`` NaN), one band per scene. The ``decision``
values and probability maps are not in it (a GeoTIFF band has one data type and
the file one variable): write netCDF or zarr to keep them.

Blocks are computed on the cluster a few at a time
(:func:`bigkern.store.formats.prediction_blocks.compute_blocks`) and written by the calling
process into a tiled GeoTIFF beside the output (``<name>.tiles``), which GDAL's
COG driver then copies into the cloud-optimized file (tiles, overviews, the
metadata first) and which is deleted.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from bigkern.extras import require
from bigkern.store.formats.prediction_blocks import (
    SOURCE_STORE_ATTRS,
    Summary,
    compute_blocks,
    prediction_layout,
    summarize_region,
    tag_text,
)
from bigkern.store.zarr_store import KIND_ATTR, STATUS_ATTR, VERSION_ATTR

__all__ = ["GEOTIFF_VARIABLES", "georeference", "geotiff_variable", "write_geotiff"]

#: The variables a GeoTIFF of predictions holds, the first found: a class mask, else a
#: regressor's values.
GEOTIFF_VARIABLES = ("cloud_mask", "class", "prediction")

# variable attributes that the file says otherwise (nodata, its georeference)
_NOT_TAGS = ("_FillValue", "missing_value", "grid_mapping", "coordinates")


def geotiff_variable(names: Sequence[str]) -> str:
    """The variable of ``names`` a GeoTIFF holds (:data:`GEOTIFF_VARIABLES`); ValueError if none."""
    for name in GEOTIFF_VARIABLES:
        if name in names:
            return name
    raise ValueError(f"a GeoTIFF of predictions holds a class map (cloud_mask, class) or a "
                     f"regressor's prediction; this prediction has {list(names)}: write it "
                     f"as netCDF (.nc) or zarr")


@contextmanager
def _quiet() -> Iterator[None]:
    """Silence rasterio's note on a raster without georeference (written on purpose)."""
    from rasterio.errors import NotGeoreferencedWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotGeoreferencedWarning)
        warnings.simplefilter("ignore", PendingDeprecationWarning)  # affine's `*`, in rioxarray
        yield


def _regular(coord: xr.DataArray) -> bool:
    """A 1-D numeric coordinate of two values or more, evenly spaced."""
    values = np.asarray(coord.values)
    if values.ndim != 1 or values.size < 2 or values.dtype.kind not in "iuf":
        return False
    step = np.diff(values.astype(np.float64))
    return bool(step[0] != 0 and np.allclose(step, step[0], rtol=1e-6, atol=0.0))


def georeference(arr: xr.DataArray, y_dim: str, x_dim: str) -> tuple[Any, Any]:
    """The CRS and affine transform of ``arr``'s grid, each None when it has none.

    The CRS is rioxarray's (``.rio.crs``: the grid mapping coordinate, e.g.
    ``spatial_ref`` as ``ds.rio.write_crs`` makes it, or a ``crs`` attribute).
    The transform comes from the coordinates of ``x_dim`` and ``y_dim`` when
    both are evenly spaced (``.rio.transform(recalc=True)``: pixel centres),
    else from the grid mapping's ``GeoTransform`` attribute, else there is none
    (never a guess).
    """
    from affine import Affine

    require("rioxarray", extra="formats", purpose="writing predictions as GeoTIFF")
    with _quiet():
        arr = arr.rio.set_spatial_dims(x_dim=x_dim, y_dim=y_dim, inplace=False)
        crs = arr.rio.crs
        grid = arr.rio.grid_mapping
        cached = arr.coords[grid].attrs.get("GeoTransform") if grid in arr.coords else None
        stored = Affine.from_gdal(*map(float, str(cached).split())) if cached else None
        if stored is not None and not stored.is_rectilinear:
            return crs, stored  # rotated: the coordinates cannot say it
        if x_dim in arr.coords and y_dim in arr.coords \
                and _regular(arr[x_dim]) and _regular(arr[y_dim]):
            return crs, arr.rio.transform(recalc=True)
    return crs, stored


def _nodata(arr: xr.DataArray, attrs: Mapping[str, Any]) -> float | int | None:
    """NaN for floats; for a class mask its "no prediction" code (its CF flags say which)."""
    if arr.dtype.kind == "f":
        return float("nan")
    meanings = str(arr.attrs.get("flag_meanings", "")).split()
    values = np.atleast_1d(np.asarray(arr.attrs.get("flag_values", [])))
    if "no_prediction" in meanings and len(values) == len(meanings):
        return int(values[meanings.index("no_prediction")])
    classes = attrs.get("classes")
    if classes is not None:  # the rule of bigkern.jobs.predict.mask_codes
        return 0 if 0 not in list(np.asarray(classes).tolist()) else -128
    return None


def _band_names(pred: xr.Dataset, scene_dim: str, n: int) -> list[str]:
    """Each scene's coordinate value (ISO 8601 for times), or ``scene i``."""
    if scene_dim not in pred.coords:
        return [f"scene {i}" for i in range(n)]
    values = pred[scene_dim].values
    if values.dtype.kind == "M":
        import pandas as pd

        return [pd.Timestamp(v).isoformat() for v in values]
    return [str(v) for v in values.tolist()]


def _tags(pred: xr.Dataset, var: str, kind: str) -> dict[str, str]:
    from bigkern.version import __version__

    tags = {str(k): tag_text(v) for k, v in pred.attrs.items() if k not in SOURCE_STORE_ATTRS}
    tags.update({str(k): tag_text(v) for k, v in pred[var].attrs.items()
                 if k not in _NOT_TAGS})
    tags.update({"variable": var, "AREA_OR_POINT": "Area", KIND_ATTR: kind,
                 STATUS_ATTR: "writing", VERSION_ATTR: __version__})
    return tags


def _cog_options(dtype: np.dtype) -> dict[str, Any]:
    import rasterio

    floating = dtype.kind == "f"
    options = {"compress": "deflate", "predictor": "yes" if floating else "no",
               "overview_resampling": "average" if floating else "nearest",
               "bigtiff": "if_safer"}
    version = tuple(int(p) for p in rasterio.__gdal_version__.split(".")[:2])
    if version >= (3, 11):  # band-interleaved COG: one scene is read without the others
        options["interleave"] = "band"
    return options


def write_geotiff(
    pred: xr.Dataset, path: Path, *, kind: str = "predictions",
    summarize: Callable[..., Mapping[str, Any]] | None = None, label: str | None = None,
) -> tuple[int, Summary]:
    """Write ``pred``'s mask (or prediction) as a new COG at the local ``path``; a low-level step.

    Use :func:`bigkern.store.formats.prediction_files.write_prediction_file`, which
    claims and stages the output. Band ``i`` is scene ``i``, described by the
    scene coordinate's value (an ISO 8601 time) or ``scene i``. The file's
    tags hold the root attributes (lists as
    :func:`~bigkern.store.formats.prediction_blocks.tag_text` writes them), the
    variable's (``flag_values``, ``flag_meanings``, ``long_name``),
    ``variable``, and ``bigkern_kind``, ``bigkern_version`` and
    ``bigkern_status = "complete"``. The CRS and transform are
    :func:`georeference`'s: a prediction without them gives a file without
    them (no CRS, no geotransform: pixel coordinates), written without a
    warning (rasterio warns when such a file is *read*).

    Parameters
    ----------
    pred : xarray.Dataset
        3-D data variables on the same dims (scene, rows, columns), among
        them ``cloud_mask`` or ``prediction``.
    path : Path
        The file to create (it must not exist).
    kind : str
        Recorded as the ``bigkern_kind`` tag.
    summarize : callable, optional
        ``summarize(*blocks)`` of each region's blocks of every data variable,
        in their order (``decision`` included); the counts are summed.
    label : str, optional
        Progress label.

    Returns
    -------
    tuple of (int, dict)
        The regions (blocks of the chunk grid) written, and the summed summary.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import dask.array as da
    >>> pred = xr.Dataset({"prediction": (("t", "y", "x"),
    ...                    da.ones((2, 4, 6), dtype="f4", chunks=(1, 4, 6)))},
    ...                   coords={"y": [3.5, 2.5, 1.5, 0.5], "x": np.arange(6) + 0.5})
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "p.tif"
    >>> write_geotiff(pred, out)
    (2, {})
    >>> import rasterio
    >>> with rasterio.open(out) as src:
    ...     src.count, src.crs, src.transform.c, src.descriptions, src.tags()["bigkern_status"]
    (2, None, 0.0, ('scene 0', 'scene 1'), 'complete')
    """
    require("rasterio", extra="formats", purpose="writing predictions as GeoTIFF")
    import rasterio
    import rasterio.shutil
    from rasterio.windows import Window

    pred, layout = prediction_layout(pred)
    var = geotiff_variable(layout.names)
    arr = pred[var]
    dtype = np.dtype(arr.dtype)
    n_scenes, height, width = arr.shape
    crs, transform = georeference(arr, layout.dims[1], layout.dims[2])
    profile = {"driver": "GTiff", "width": width, "height": height, "count": n_scenes,
               "dtype": dtype.name, "nodata": _nodata(arr, pred.attrs), "crs": crs,
               "transform": transform, "tiled": True, "blockxsize": 512, "blockysize": 512,
               "compress": "deflate", "zlevel": 1, "interleave": "band",
               "bigtiff": "if_safer"}
    tiles = path.with_name(f"{path.name}.tiles")
    names = _band_names(pred, layout.dims[0], n_scenes)
    at = layout.names.index(var)
    items = [[pred[n].data.blocks[r] for n in layout.names] if summarize is not None
             else [arr.data.blocks[r]] for r in layout.regions]
    summary: Summary = {}
    try:
        # no .aux.xml sidecars: every tag and description is in the file itself
        with _quiet(), rasterio.Env(GDAL_PAM_ENABLED="NO"):
            with rasterio.open(tiles, "w", **profile) as dst:
                dst.update_tags(**_tags(pred, var, kind))
                for band, name in enumerate(names, start=1):
                    dst.set_band_description(band, name)
                for i, blocks in compute_blocks(items, label=label or f"writing {path}"):
                    s, y, x = layout.slices(layout.regions[i])
                    block = blocks[at if summarize is not None else 0]
                    dst.write(block.astype(dtype, copy=False),
                              indexes=list(range(s.start + 1, s.stop + 1)),
                              window=Window(x.start, y.start, x.stop - x.start,
                                            y.stop - y.start))
                    summarize_region(summarize, blocks, summary)
                dst.update_tags(**{STATUS_ATTR: "complete"})
            rasterio.shutil.copy(tiles, path, driver="COG", **_cog_options(dtype))
    finally:
        # the tiled copy, and the COG driver's temporary overviews named after ``path``:
        # files of this call alone
        for name in (tiles.name, f"{path.name}.ovr.tmp", f"{path.name}.msk.ovr.tmp"):
            path.with_name(name).unlink(missing_ok=True)
    return len(layout.regions), summary

