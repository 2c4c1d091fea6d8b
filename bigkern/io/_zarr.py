"""Writing and reading zarr the same way everywhere in bigkern."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import xarray as xr

__all__ = ["open_zarr", "to_zarr"]


def _portable_strings(ds: xr.Dataset) -> xr.Dataset:
    """Fixed-width unicode arrays have no zarr v3 spec; store them as variable-length strings."""
    fixes = {k: v.astype(object) for k, v in ds.variables.items() if v.dtype.kind == "U"}
    return ds.assign_coords({k: v for k, v in fixes.items() if k in ds.coords}).assign(
        {k: v for k, v in fixes.items() if k not in ds.coords}
    )


def to_zarr(ds: xr.Dataset, path: str | Path, *, compute: bool = True, **kwargs: Any) -> Any:
    """``ds.to_zarr(path, mode="w", consolidated=True)``, quiet about consolidated metadata.

    Consolidated metadata (one read to open a store on object storage) is not
    in the zarr v3 spec yet; zarr-python supports it and warns, which we
    acknowledge here once rather than on every write.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Consolidated metadata", category=UserWarning)
        return _portable_strings(ds).to_zarr(path, mode="w", consolidated=True, compute=compute,
                                             **kwargs)


def open_zarr(path: str | Path, **kwargs: Any) -> xr.Dataset:
    """``xarray.open_zarr`` for stores bigkern wrote (consolidated) or others (either way)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Consolidated metadata", category=UserWarning)
        warnings.filterwarnings("ignore", message="Failed to open Zarr store with consolidated",
                                category=RuntimeWarning)
        ds = xr.open_zarr(path, **kwargs)
    for name, var in ds.variables.items():
        if var.dtype == object and name in ds.coords and var.size and isinstance(
                var.values.flat[0], str):
            ds = ds.assign_coords({name: var.astype(str)})
    return ds
