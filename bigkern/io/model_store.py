"""Model files: a fitted model's small :class:`xarray.Dataset` as zarr or netCDF.

This module writes and reads the dataset only; turning an estimator into one
and back is :mod:`bigkern.models.persistence` (io never imports models).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import xarray as xr

from bigkern.errors import StoreError
from bigkern.io.integrity import open_checked
from bigkern.io.outputs import staged_output
from bigkern.io.zarr_store import KIND_ATTR, VERSION_ATTR, finish_store, to_zarr

__all__ = ["read_model_dataset", "write_model_dataset"]


def write_model_dataset(
    ds: xr.Dataset, path: str | Path, *, overwrite: bool = False,
    inputs: Sequence[str | Path] = (),
) -> Path:
    """Write a model's dataset; ``.nc`` paths are netCDF, anything else zarr.

    The file is written to a hidden temporary sibling and moved into place when
    complete; zarr models carry checksums on every array, and every model file
    records the bigkern version that wrote it (``bigkern_version``). An
    existing ``path`` is replaced only with ``overwrite`` and only if bigkern
    wrote it; ``path`` may not be, contain or lie inside ``inputs``.
    """
    path = Path(path)
    with staged_output(path, overwrite=overwrite, inputs=inputs) as temp:
        if path.suffix == ".nc":
            from bigkern.version import __version__

            ds.attrs.update({KIND_ATTR: "model", VERSION_ATTR: __version__})
            ds.to_netcdf(temp)
        else:
            to_zarr(ds, temp, kind="model")
            finish_store(temp)
    return path


def read_model_dataset(path: str | Path) -> xr.Dataset:
    """Read a model's dataset (loaded into memory) from a zarr store or netCDF file.

    Raises
    ------
    StoreError
        No model at ``path``, or an unfinished or damaged model store (a chunk
        missing or failing its checksum).
    """
    path = Path(path)
    if not path.exists():
        raise StoreError(f"no model at {path}")
    if path.suffix == ".nc":
        with xr.open_dataset(path) as ds:
            return ds.load()
    try:
        ds = open_checked(path)
    except StoreError:
        raise
    except Exception as err:  # zarr raises several types for "not a store"
        raise StoreError(f"{path} is not a readable model store: {err}") from err
    return ds.load()
