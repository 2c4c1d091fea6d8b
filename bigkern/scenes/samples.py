"""The pixels of a scene dataset as samples: ``X (sample, feature)``, labels and a mask.

Lazy and aligned with the store's chunks: every pixel in a fixed order, rows
with a non-finite feature kept as NaN for the reductions to count.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr

from bigkern.errors import StoreError
from bigkern.scenes.dims import DimMapping, to_scene_dims
from bigkern.scenes.reading import default_chunks, validate_scenes
from bigkern.scenes.validity import FillValues, ValidRanges, ensure_validity

__all__ = ["Samples", "as_dask_array", "stack_samples"]


@dataclass(frozen=True)
class Samples:
    """Pixels of a scene dataset as samples.

    ``X`` (sample, feature) and ``y`` (sample) cover **every** pixel in a fixed
    order (dask chunk by chunk, each chunk in C order), so their chunks are
    known and aligned with the store's; ``mask`` marks the rows to fit on
    (labelled pixels when ``labelled_only``). Rows with a non-finite feature
    stay in ``X`` as NaN: every bigkern reduction leaves them out and counts
    them. :meth:`counts` reports what is masked.

    Examples
    --------
    >>> from bigkern import stack_samples
    >>> from bigkern.datasets import make_scenes
    >>> s = stack_samples(make_scenes(1, (16, 16), radiances=False), ["NDAI", "SD", "CORR"])
    >>> s.X.shape, s.features, s.as_dataarray().dims
    ((256, 3), ('NDAI', 'SD', 'CORR'), ('sample', 'feature'))
    >>> s.counts()
    {'pixels': 256, 'absent': 0, 'nonfinite': 0, 'unlabelled': 74, 'labelled_usable': 182}
    """

    X: da.Array
    y: da.Array | None
    mask: da.Array | None
    features: tuple[str, ...]
    pixel: da.Array  # C-order index of (scene, y, x): the same whatever the chunking

    def as_dataarray(self) -> xr.DataArray:
        """``X`` as a DataArray with dims (sample, feature) and the feature coordinate."""
        return xr.DataArray(self.X, dims=("sample", "feature"),
                            coords={"feature": list(self.features)})

    def counts(self) -> dict[str, int]:
        """Pixels in all, with every feature absent, with some feature non-finite, unlabelled.

        One pass over the features and labels.
        """
        finite = da.isfinite(self.X)
        all_f = finite.all(axis=1)
        none_f = ~finite.any(axis=1)
        parts = {
            "pixels": da.asarray(self.X.shape[0]),
            "absent": none_f.sum(),
            "nonfinite": (~all_f & ~none_f).sum(),
        }
        if self.y is not None:
            parts["unlabelled"] = (self.y == 0).sum()
            parts["labelled_usable"] = ((self.y != 0) & all_f).sum()
        from bigkern.cluster.compute import compute

        values = compute(*parts.values(), label="counting samples")
        return {k: int(v) for k, v in zip(parts, values, strict=True)}


def stack_samples(
    ds: xr.Dataset,
    features: Sequence[str],
    *,
    labelled_only: bool = True,
    label: str = "label",
    fill_values: FillValues = None,
    valid_ranges: ValidRanges = None,
    dims: DimMapping = None,
) -> Samples:
    """Stack the pixels of a scene dataset into ``X (sample, feature)`` and ``y``.

    Parameters
    ----------
    ds : xarray.Dataset
        Scene dataset (dims scene, y, x), e.g. from :func:`open_scenes`.
    features : sequence of str
        Feature variables, in order; they become the ``feature`` coordinate.
    labelled_only : bool
        Set ``mask`` to the labelled pixels (label ≠ 0). When false, ``mask``
        is None and every pixel with finite features is used.
    label : str
        Name of the label variable; if absent, ``y`` and ``mask`` are None.
    fill_values, valid_ranges : optional
        The validity rules, as for :func:`open_scenes`. Features that have not
        been through them (a Dataset built in memory rather than opened with
        :func:`open_scenes`) get them here: declared CF attributes, these
        arguments, and the ``bigkern.valid_ranges`` defaults (see
        :func:`bigkern.scenes.validity.ensure_validity`).
    dims : mapping of str to str, optional
        For a dataset whose dims are not named ``(scene, y, x)``: bigkern's dim
        → the dataset's, e.g. ``{"scene": "time"}`` (see :func:`to_scene_dims`).

    Returns
    -------
    Samples

    Examples
    --------
    >>> from bigkern import stack_samples
    >>> from bigkern.datasets import make_scenes
    >>> s = stack_samples(make_scenes(1, (32, 48), seed=0), ["NDAI", "CORR"])
    >>> s.X.shape, s.features
    ((1536, 2), ('NDAI', 'CORR'))
    """
    features = tuple(features)
    if not features:
        raise ValueError("no features given")
    ds = to_scene_dims(ds, dims)
    validate_scenes(ds, features=features, check_labels=False)
    ds = ensure_validity(ds, features, fill_values=fill_values, valid_ranges=valid_ranges)
    arrays = [as_dask_array(ds[f]) for f in features]
    chunks = arrays[0].chunks
    arrays = [a if a.chunks == chunks else a.rechunk(chunks) for a in arrays]
    dtype = np.result_type(*[a.dtype for a in arrays], np.float32)
    cube = da.stack([a.astype(dtype) for a in arrays], axis=-1).rechunk({3: -1})
    X = _flatten_blocks(cube, trailing=(len(features),))
    pixel = _flatten_blocks(_pixel_index(chunks), trailing=())
    y = mask = None
    if label in ds:
        lab = as_dask_array(ds[label])
        if lab.chunks != chunks:
            lab = lab.rechunk(chunks)
        y = _flatten_blocks(lab, trailing=())
        if labelled_only:
            mask = y != 0
    elif labelled_only:
        raise StoreError(f"the dataset has no {label!r} variable; pass labelled_only=False")
    return Samples(X, y, mask, features, pixel)


def _pixel_index_block(shape: tuple[int, ...], block_info: Any = None) -> np.ndarray:
    loc = block_info[None]["array-location"]
    grids = np.meshgrid(*[np.arange(a, b) for a, b in loc], indexing="ij")
    return np.ravel_multi_index(grids, shape).astype(np.int64)


def _pixel_index(chunks: tuple[tuple[int, ...], ...]) -> da.Array:
    shape = tuple(sum(c) for c in chunks)
    return da.map_blocks(_pixel_index_block, shape, chunks=chunks, dtype=np.int64,
                         token="bigkern-pixel-index")


def as_dask_array(var: xr.DataArray) -> da.Array:
    """The data of ``var`` as a dask array: its own if dask-backed, else chunked by default.

    Parameters
    ----------
    var : xarray.DataArray
        A ``(scene, y, x)`` variable, lazy or in memory.

    Returns
    -------
    dask.array.Array
        ``var.data`` itself when it is a dask array, else a dask array with
        :func:`default_chunks` (about ``bigkern.chunk_bytes`` per chunk).
    """
    data = var.data
    if isinstance(data, da.Array):
        return data
    return da.from_array(np.asarray(data), chunks=tuple(default_chunks(var.shape).values()))


def _flatten_blocks(arr: da.Array, trailing: tuple[int, ...]) -> da.Array:
    """Concatenate the blocks of a (scene, y, x, ...) array, each flattened in C order."""
    lead = arr.numblocks[:3]
    pieces = []
    for idx in np.ndindex(*lead):
        block = arr.blocks[idx + (0,) * (arr.ndim - 3)]
        pieces.append(block.reshape((-1, *trailing)))
    return da.concatenate(pieces, axis=0)
