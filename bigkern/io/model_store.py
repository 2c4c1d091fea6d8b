"""Saving and loading fitted models (small xarray Datasets) as zarr or netCDF."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import xarray as xr

from bigkern.errors import StoreError
from bigkern.io.integrity import open_checked
from bigkern.io.outputs import staged_output
from bigkern.io.zarr_store import KIND_ATTR, VERSION_ATTR, finish_store, to_zarr

__all__ = ["load_model", "save_model"]


def save_model(
    model: Any, path: str | Path, *, overwrite: bool = False,
    inputs: Sequence[str | Path] = (),
) -> Path:
    """Save a fitted bigkern model; ``.nc`` paths are netCDF, anything else zarr.

    Parameters
    ----------
    model : fitted bigkern estimator
        Anything with a ``to_dataset`` method.
    path : str or Path
        Target file (``.nc``) or zarr store.
    overwrite : bool
        Replace an existing model file that bigkern wrote (never anything else).
    inputs : sequence of paths
        What the model was fitted from: ``path`` may not be, contain or lie in them.

    The file is written to a hidden temporary sibling and moved into place when
    complete; zarr models carry checksums on every array. Every model file records
    the bigkern version that wrote it (``bigkern_version``) next to its format
    (``bigkern_format``); nothing is pickled.
    """
    if not callable(getattr(model, "to_dataset", None)):
        raise TypeError(f"{type(model).__name__} cannot be saved: save_model takes bigkern's "
                        f"fitted estimators (anything with a to_dataset method)")
    path = Path(path)
    ds = model.to_dataset()
    with staged_output(path, overwrite=overwrite, inputs=inputs) as temp:
        if path.suffix == ".nc":
            from bigkern.version import __version__

            ds.attrs.update({KIND_ATTR: "model", VERSION_ATTR: __version__})
            ds.to_netcdf(temp)
        else:
            to_zarr(ds, temp, kind="model")
            finish_store(temp)
    return path


def load_model(path: str | Path) -> Any:
    """Load a model saved by :func:`save_model`.

    Raises
    ------
    StoreError
        No model at ``path``, an unfinished or damaged model store (a chunk
        missing or failing its checksum), not a bigkern model, or a model
        format newer than this bigkern reads (both versions named).
    """
    from bigkern.models import load_model_dataset

    path = Path(path)
    if not path.exists():
        raise StoreError(f"no model at {path}")
    if path.suffix == ".nc":
        with xr.open_dataset(path) as ds:
            return load_model_dataset(ds.load())
    try:
        ds = open_checked(path)
    except StoreError:
        raise
    except Exception as err:  # zarr raises several types for "not a store"
        raise StoreError(f"{path} is not a readable model store: {err}") from err
    return load_model_dataset(ds.load())
