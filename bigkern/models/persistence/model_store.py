"""Model files: a fitted model's small :class:`xarray.Dataset` as zarr or netCDF.

This module writes and reads the dataset only; turning an estimator into one
and back is :mod:`bigkern.models.persistence.model_files` (io never imports models).
Model paths are local paths or fsspec URLs (``s3://bucket/model.zarr``,
``memory://m.nc`` …) with ``storage_options``.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

import xarray as xr

from bigkern.errors import ClusterError, StoreError
from bigkern.models.persistence.model_digest import DIGEST_ATTR, model_digest, verify_model_digest
from bigkern.models.persistence.model_limits import check_model_limits
from bigkern.store.integrity import open_checked
from bigkern.store.staging import staged_output
from bigkern.store.urls import Location, PathOrURL, StorageOptions, location
from bigkern.store.zarr_store import KIND_ATTR, VERSION_ATTR, finish_store, to_zarr

__all__ = ["read_model_dataset", "write_model_dataset"]


def write_model_dataset(
    ds: xr.Dataset, path: PathOrURL | Location, *, overwrite: bool = False,
    inputs: Sequence[PathOrURL | Location] = (), storage_options: StorageOptions = None,
) -> Path | str:
    """Write a model's dataset; ``.nc`` paths are netCDF, anything else zarr.

    The file is written to a hidden temporary sibling and moved (on object
    stores: copied, root metadata last) into place when complete; zarr models
    carry checksums on every array, and every model file records the bigkern
    version that wrote it (``bigkern_version``) and a digest of all its
    attributes and arrays (``bigkern_digest``, see
    :mod:`bigkern.models.persistence.model_digest`), verified by
    :func:`read_model_dataset`. An existing ``path`` is replaced only with
    ``overwrite`` and only if bigkern wrote it; ``path`` may not be, contain or lie
    inside ``inputs``.

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
        fsspec options for a URL (see :func:`bigkern.store.urls.location`).

    Returns
    -------
    pathlib.Path or str
        A :class:`~pathlib.Path` for a local path, the URL as given for a URL.
    """
    from bigkern.version import __version__

    loc = location(path, storage_options)
    ds = ds.copy()
    ds.attrs = {**{k: v for k, v in ds.attrs.items() if k != DIGEST_ATTR},
                KIND_ATTR: "model", VERSION_ATTR: __version__}
    ds.attrs[DIGEST_ATTR] = model_digest(ds)
    with staged_output(loc, overwrite=overwrite, inputs=inputs, kind="model") as temp:
        if loc.suffix == ".nc":
            if isinstance(temp, Location):  # one object, put whole
                temp.fs.pipe_file(temp.path, bytes(ds.to_netcdf(engine="scipy")))
            else:
                ds.to_netcdf(temp, engine="scipy")
        else:
            to_zarr(ds, temp, kind="model")
            finish_store(temp)
    return loc.local_path if loc.local else str(path)


def read_model_dataset(
    path: PathOrURL | Location, storage_options: StorageOptions = None, *, verify: bool = True
) -> xr.Dataset:
    """Read a model's dataset (loaded into memory) from a zarr store or netCDF file.

    Parameters
    ----------
    path : str, Path or URL
        The model file or store: a local path or an fsspec URL.
    storage_options : mapping, optional
        fsspec options for a URL (see :func:`bigkern.store.urls.location`).
    verify : bool
        Verify the digest here; False leaves it to the caller, who must call
        :func:`bigkern.models.persistence.model_digest.verify_model_digest` before trusting
        anything in the dataset (``load_model`` first checks the format, so
        that a newer model says "upgrade bigkern").

    Raises
    ------
    StoreError
        No model at ``path``; metadata declaring a variable or chunk count over
        ``bigkern.max_model_elements`` / ``bigkern.max_model_chunks`` (refused
        before anything is allocated); an unfinished or damaged model store (a
        chunk missing or failing its checksum); a missing digest, or an
        attribute part or array that does not match it (the message names the
        model and the part).
    """
    loc = location(path, storage_options)
    where = str(path)
    if not loc.exists():
        raise StoreError(f"no model at {path}")
    if loc.suffix == ".nc":
        data = loc.local_path.read_bytes() if loc.local else loc.fs.cat_file(loc.path)
        check_model_limits(loc, where, data)
        try:
            with xr.open_dataset(io.BytesIO(data), engine="scipy") as opened:
                ds = opened.load()
        except Exception as err:  # scipy raises several types for a damaged file
            raise StoreError(f"model {where} is not a readable netCDF model: "
                             f"{type(err).__name__}: {err}") from None
    else:
        check_model_limits(loc, where)
        try:
            ds = open_checked(loc).load()
        except (StoreError, ClusterError):  # a damaged store; a cluster that cannot read it
            raise
        except Exception as err:  # zarr raises several types for "not a store"
            raise StoreError(f"{path} is not a readable model store: "
                             f"{type(err).__name__}: {err}") from err
    if verify:
        verify_model_digest(ds, where)
    return ds
