"""Lazy prediction over whole scenes: a decision value and a cloud mask for every pixel."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr

from bigkern import config
from bigkern.errors import StoreError
from bigkern.io._zarr import to_zarr
from bigkern.io.scenes import SCENE_DIMS, _as_dask, validate_scenes

__all__ = ["predict_scenes", "write_predictions"]


def _decision_block(block: np.ndarray, expansion: Any) -> np.ndarray:
    flat = block.reshape(-1, block.shape[-1])
    return expansion.decision(flat).astype(np.float32).reshape(block.shape[:-1])


def task_chunks(
    chunks: tuple[tuple[int, ...], ...], max_pixels: int
) -> tuple[tuple[int, ...], ...]:
    """``(scene, y, x)`` chunks no larger than ``max_pixels``, splitting scenes, then rows.

    Chunks already small enough are kept; a larger one is cut into single
    scenes and, if a scene is still too large, into bands of whole rows.
    """
    scene_c, y_c, x_c = chunks
    width = max(x_c)
    if max(scene_c) * max(y_c) * width <= max_pixels:
        return chunks
    new_scene = tuple(1 for c in scene_c for _ in range(c))
    rows = max(1, max_pixels // width)
    new_y = tuple(part for c in y_c for part in _split(c, rows))
    return new_scene, new_y, x_c


def _split(n: int, size: int) -> list[int]:
    """``n`` as near-equal parts of at most ``size``."""
    k = -(-n // size)
    base, extra = divmod(n, k)
    return [base + 1] * extra + [base] * (k - extra)


def predict_scenes(
    model: Any, ds: xr.Dataset, features: Sequence[str] | None = None
) -> xr.Dataset:
    """Predict every pixel of every scene, lazily (tasks of ~``bigkern.predict_block_pixels``).

    Parameters
    ----------
    model : fitted bigkern estimator
        Anything with ``expansion_`` and ``classes_`` (all bigkern models).
    ds : xarray.Dataset
        Scene dataset with the model's features as ``(scene, y, x)`` variables.
    features : sequence of str, optional
        Feature variables in the model's order; defaults to the names the model
        was fitted with.

    Returns
    -------
    xarray.Dataset
        ``decision`` (float32; NaN where a feature is missing) and
        ``cloud_mask`` (int8: the model's classes, e.g. 1 cloud / -1 clear,
        and 0 where no prediction is possible), aligned with ``ds``. Unlabelled
        pixels are predicted too.
    """
    if features is None:
        names = getattr(model, "feature_names_in_", None)
        if names is None:
            raise ValueError("the model has no feature names: pass features=[...]")
        features = [str(f) for f in names]
    features = list(features)
    if len(features) != model.n_features_in_:
        raise ValueError(f"{len(features)} features given; the model takes "
                         f"{model.n_features_in_}")
    validate_scenes(ds, features=features, check_labels=False)
    arrays = [_as_dask(ds[f]) for f in features]
    chunks = arrays[0].chunks
    arrays = [a if a.chunks == chunks else a.rechunk(chunks) for a in arrays]
    cube = da.stack(arrays, axis=-1).rechunk({3: -1})
    tasks = task_chunks(chunks, int(config.get("predict_block_pixels")))
    cube = cube.rechunk((*tasks, -1))
    decision = cube.map_blocks(
        _decision_block, expansion=model.expansion_, drop_axis=3, dtype=np.float32,
        token="bigkern-decision",
    )
    if decision.chunks != chunks:
        decision = decision.rechunk(chunks)
    neg, pos = (int(c) for c in model.classes_)
    mask = da.where(da.isnan(decision), 0, da.where(decision > 0, pos, neg)).astype(np.int8)
    coords = {d: ds[d] for d in SCENE_DIMS if d in ds.coords}
    out = xr.Dataset(
        {
            "decision": (SCENE_DIMS, decision),
            "cloud_mask": (SCENE_DIMS, mask),
        },
        coords=coords,
        attrs={
            "model": type(model).__name__,
            "features": features,
            "classes": [neg, pos],
        },
    )
    out["cloud_mask"].attrs = {
        "long_name": "predicted class",
        "flag_values": [neg, 0, pos],
        "flag_meanings": "negative no_prediction positive" if (neg, pos) != (-1, 1)
        else "clear no_prediction cloud",
    }
    out["decision"].attrs = {"long_name": "kernel decision value (> 0: positive class)"}
    return out


def write_predictions(pred: xr.Dataset, path: str | Path, *, overwrite: bool = False) -> Path:
    """Write :func:`predict_scenes` output to zarr, one zarr chunk per dask chunk."""
    path = Path(path)
    if path.exists() and not overwrite:
        raise StoreError(f"{path} exists; pass overwrite=True (CLI: --overwrite) to replace it")
    from bigkern.cluster import compute

    for name in pred.variables:
        pred[name].encoding.pop("chunks", None)
    delayed = to_zarr(pred, path, compute=False)
    compute(delayed, label=f"predicting and writing {path}")
    return path
