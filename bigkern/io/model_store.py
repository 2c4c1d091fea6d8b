"""Saving and loading fitted models (small xarray Datasets) as zarr or netCDF."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import xarray as xr

from bigkern.errors import StoreError
from bigkern.io._zarr import open_zarr, to_zarr

__all__ = ["load_model", "save_model"]


def save_model(model: Any, path: str | Path, *, overwrite: bool = False) -> Path:
    """Save a fitted bigkern model; ``.nc`` paths are netCDF, anything else zarr."""
    if not callable(getattr(model, "to_dataset", None)):
        raise TypeError(f"{type(model).__name__} cannot be saved: save_model takes the binned, "
                        f"compact and OHT / RM models (anything with a to_dataset method)")
    path = Path(path)
    if path.exists() and not overwrite:
        raise StoreError(f"{path} exists; pass overwrite=True (CLI: --overwrite) to replace it")
    ds = model.to_dataset()
    if path.suffix == ".nc":
        ds.to_netcdf(path)
    else:
        to_zarr(ds, path)
    return path


def load_model(path: str | Path) -> Any:
    """Load a model saved by :func:`save_model`."""
    from bigkern.models import load_model_dataset

    path = Path(path)
    if not path.exists():
        raise StoreError(f"no model at {path}")
    ds = xr.open_dataset(path) if path.suffix == ".nc" else open_zarr(path)
    with ds:
        return load_model_dataset(ds.load())
