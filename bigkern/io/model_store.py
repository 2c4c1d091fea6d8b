"""Model files: a fitted model's small :class:`xarray.Dataset` as zarr or netCDF.

This module writes and reads the dataset only; turning an estimator into one
and back is :mod:`bigkern.models.persistence` (io never imports models).
Model paths are local paths or fsspec URLs (``s3://bucket/model.zarr``,
``memory://m.nc`` …) with ``storage_options``.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

import xarray as xr

from bigkern.errors import StoreError
from bigkern.io.integrity import open_checked
from bigkern.io.outputs import staged_output
from bigkern.io.urls import Location, PathOrURL, StorageOptions, location
from bigkern.io.zarr_store import KIND_ATTR, VERSION_ATTR, finish_store, to_zarr

__all__ = ["read_model_dataset", "write_model_dataset"]


def write_model_dataset(
    ds: xr.Dataset, path: PathOrURL | Location, *, overwrite: bool = False,
    inputs: Sequence[PathOrURL | Location] = (), storage_options: StorageOptions = None,
) -> Path | str:
    """Write a model's dataset; ``.nc`` paths are netCDF, anything else zarr.

    The file is written to a hidden temporary sibling and moved (on object
    stores: copied, root metadata last) into place when complete; zarr models
    carry checksums on every array, and every model file records the bigkern
    version that wrote it (``bigkern_version``). An existing ``path`` is
    replaced only with ``overwrite`` and only if bigkern wrote it; ``path``
    may not be, contain or lie inside ``inputs``.

    Parameters
    ----------
    ds : xarray.Dataset
        The model's dataset (small, in memory).
    path : str, Path or URL
        Target file (``.nc``) or zarr store: a local path or an fsspec URL.
    overwrite : bool
        Replace an existing model file that bigkern wrote (never anything else).
    inputs : sequence of paths or URLs
        What the model was fitted from.
    storage_options : mapping, optional
        fsspec options for a URL (see :func:`bigkern.io.urls.location`).

    Returns
    -------
    pathlib.Path or str
        A :class:`~pathlib.Path` for a local path, the URL as given for a URL.
    """
    loc = location(path, storage_options)
    with staged_output(loc, overwrite=overwrite, inputs=inputs) as temp:
        if loc.suffix == ".nc":
            from bigkern.version import __version__

            ds.attrs.update({KIND_ATTR: "model", VERSION_ATTR: __version__})
            if isinstance(temp, Location):  # one object, put whole
                temp.fs.pipe_file(temp.path, bytes(ds.to_netcdf()))
            else:
                ds.to_netcdf(temp)
        else:
            to_zarr(ds, temp, kind="model")
            finish_store(temp)
    return loc.local_path if loc.local else str(path)


def read_model_dataset(
    path: PathOrURL | Location, storage_options: StorageOptions = None
) -> xr.Dataset:
    """Read a model's dataset (loaded into memory) from a zarr store or netCDF file.

    Parameters
    ----------
    path : str, Path or URL
        The model file or store: a local path or an fsspec URL.
    storage_options : mapping, optional
        fsspec options for a URL (see :func:`bigkern.io.urls.location`).

    Raises
    ------
    StoreError
        No model at ``path``, or an unfinished or damaged model store (a chunk
        missing or failing its checksum).
    """
    loc = location(path, storage_options)
    if not loc.exists():
        raise StoreError(f"no model at {path}")
    if loc.suffix == ".nc":
        source = loc.local_path if loc.local else io.BytesIO(loc.fs.cat_file(loc.path))
        with xr.open_dataset(source) as ds:
            return ds.load()
    try:
        ds = open_checked(loc)
    except StoreError:
        raise
    except Exception as err:  # zarr raises several types for "not a store"
        raise StoreError(f"{path} is not a readable model store: {err}") from err
    return ds.load()
