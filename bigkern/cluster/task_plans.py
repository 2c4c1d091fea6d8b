"""How many tasks a chunking makes, how large they are, and what to use instead.

Every bigkern pass runs one task per chunk (see :mod:`bigkern.cluster.chunking` for
why the count and the size of those tasks matter at scale).
:func:`task_plan` counts the tasks of an array's chunking and recommends
chunks of about ``bigkern.chunk_guidance.target_pixels_per_task`` pixels
(10⁷) and at most ``bigkern.chunk_bytes`` bytes (100 MB) per task, each made
of whole existing chunks; :func:`planned_tasks` does the same from an array's
metadata alone, before anything is read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr
from dask.array.core import normalize_chunks

from bigkern import config

__all__ = ["TaskPlan", "planned_tasks", "task_plan"]

#: Defaults of the ``bigkern.chunk_guidance`` settings, used when a key is absent
#: (e.g. after ``dask.config.set({"bigkern.chunk_guidance": {"enabled": True}})``).
_DEFAULTS = {
    "enabled": True,
    "max_tasks": 1_000_000,
    "min_pixels_per_task": 1_000_000,
    "target_pixels_per_task": 10_000_000,
    "too_many_tasks": "rechunk",
}
_POLICIES = ("rechunk", "error", "warn")

Chunks = tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class TaskPlan:
    """The tasks one task per chunk makes, and the recommended chunking.

    "Pixels" are the elements of the array (the pixels of a scene variable).

    Attributes
    ----------
    dims : tuple of str
        Dimension names (``dim_0``, ``dim_1`` … for an array without names).
    shape : tuple of int
        The array's shape.
    chunks : tuple of tuple of int
        The chunks the plan is for, in dask's form (sizes along each dim).
    n_tasks : int
        Number of chunks: one task per chunk and pass.
    pixels : int
        Pixels of the whole array.
    pixels_per_task_min, pixels_per_task_median : int, float
        Smallest and median pixels of a chunk.
    bytes_per_task : int
        Bytes of the largest chunk.
    recommended : dict of str to int
        Chunk size along each dim: a multiple of the existing chunk size (the
        largest chunk along a dim whose chunks are irregular), grown from the
        last dim to the first, so that a task holds about
        ``bigkern.chunk_guidance.target_pixels_per_task`` pixels and at most
        ``bigkern.chunk_bytes`` bytes. Chunks already larger are kept.
    recommended_tasks : int
        Number of tasks with the recommended chunks.
    recommended_pixels_per_task : int
        Pixels of the largest recommended chunk.
    recommended_bytes_per_task : int
        Bytes of the largest recommended chunk.
    """

    dims: tuple[str, ...]
    shape: tuple[int, ...]
    chunks: Chunks = field(repr=False)
    n_tasks: int
    pixels: int
    pixels_per_task_min: int
    pixels_per_task_median: float
    bytes_per_task: int
    recommended: dict[str, int] = field(hash=False)
    recommended_tasks: int
    recommended_pixels_per_task: int
    recommended_bytes_per_task: int


def _setting(name: str) -> Any:
    return config.get(f"chunk_guidance.{name}", _DEFAULTS[name])


def _dims_and_data(array: Any) -> tuple[tuple[str, ...], Any]:
    """Dimension names and the underlying array (dask or numpy-like) of ``array``."""
    if isinstance(array, xr.Dataset):
        raise TypeError("task_plan takes one array; check_chunks takes a Dataset")
    if isinstance(array, xr.DataArray):
        return tuple(str(d) for d in array.dims), array.data
    if not hasattr(array, "shape"):
        array = np.asarray(array)
    return tuple(f"dim_{i}" for i in range(len(array.shape))), array


def _normalized_chunks(data: Any, dims: tuple[str, ...], chunks: Any) -> Chunks:
    """``chunks`` (or the array's own; one chunk when it is not dask) in dask's form."""
    if any(np.isnan(n) for n in data.shape):
        raise ValueError("the array's chunk sizes are unknown (NaN): compute them first "
                         "(dask's compute_chunk_sizes)")
    shape = tuple(int(n) for n in data.shape)
    own = data.chunks if isinstance(data, da.Array) else tuple((n,) for n in shape)
    if chunks is None:
        return tuple(tuple(int(c) for c in cs) for cs in own)
    if isinstance(chunks, Mapping):
        unknown = [k for k in chunks if isinstance(k, str) and k not in dims]
        if unknown:
            raise ValueError(f"chunks name dims {unknown} that the array lacks; it has {dims}")
        by_axis = {(dims.index(k) if isinstance(k, str) else int(k)): v
                   for k, v in chunks.items()}
        chunks = tuple(by_axis.get(i, own[i]) for i in range(len(shape)))
    out = normalize_chunks(chunks, shape, dtype=data.dtype, previous_chunks=own)
    return tuple(tuple(int(c) for c in cs) for cs in out)


def _task_sizes(chunks: Chunks) -> tuple[np.ndarray, np.ndarray]:
    """Distinct pixels per chunk and how many chunks have each, without listing every chunk."""
    values, counts = np.ones(1, dtype=np.int64), np.ones(1, dtype=np.int64)
    for cs in chunks:
        u, c = np.unique(np.asarray(cs, dtype=np.int64), return_counts=True)
        values = np.multiply.outer(values, u).ravel()
        counts = np.multiply.outer(counts, c).ravel()
        values, inverse = np.unique(values, return_inverse=True)
        counts = np.bincount(inverse.ravel(), weights=counts).astype(np.int64)
    return values, counts


def _weighted_median(values: np.ndarray, counts: np.ndarray) -> float:
    """Median of the multiset holding ``counts[i]`` copies of the sorted ``values[i]``."""
    total = int(counts.sum())
    cum = np.cumsum(counts)
    lo = values[np.searchsorted(cum, (total - 1) // 2, side="right")]
    hi = values[np.searchsorted(cum, total // 2, side="right")]
    return (float(lo) + float(hi)) / 2


def _recommend(shape: tuple[int, ...], chunks: Chunks, itemsize: int,
               dims: tuple[str, ...]) -> dict[str, int]:
    """Whole-chunk multiples, last dim first, up to the target pixels and the byte limit."""
    limit = max(1, min(int(_setting("target_pixels_per_task")),
                       int(config.get("chunk_bytes")) // max(1, itemsize)))
    sizes = [max(cs) if cs else 0 for cs in chunks]
    inner = 1
    for axis in range(len(shape) - 1, -1, -1):
        base, length = sizes[axis], shape[axis]
        if base == 0:
            continue
        k = max(1, min(len(chunks[axis]), limit // (base * inner)))
        size = length if k >= len(chunks[axis]) else min(length, k * base)
        sizes[axis] = size
        if size < length:
            break  # a larger outer chunk would be at least twice this task: over the limit
        inner *= size
    return dict(zip(dims, sizes, strict=True))


def task_plan(array: Any, chunks: Any = None) -> TaskPlan:
    """Count the tasks (one per chunk) of ``array`` and recommend a chunking.

    Parameters
    ----------
    array : dask array, xarray.DataArray or array-like
        The array whose chunks are planned; an array that is not dask-backed
        is one chunk.
    chunks : dict, tuple, int or str, optional
        Chunks to plan instead of the array's own: anything dask accepts
        (``{"y": 512}``, ``(1, 512, 2048)``, ``"auto"``); a mapping may name
        dims (of a DataArray) or axes, and keeps the array's chunks along the
        others.

    Returns
    -------
    TaskPlan
        Task count, pixels and bytes per task, and the recommended chunks.

    Examples
    --------
    >>> import dask.array as da
    >>> plan = task_plan(da.zeros((10, 1000, 1000), chunks=(1, 100, 1000)))
    >>> plan.n_tasks, plan.pixels_per_task_min, plan.recommended
    (100, 100000, {'dim_0': 10, 'dim_1': 1000, 'dim_2': 1000})
    """
    dims, data = _dims_and_data(array)
    norm = _normalized_chunks(data, dims, chunks)
    return _plan(dims, tuple(int(n) for n in data.shape), np.dtype(data.dtype), norm)


def planned_tasks(dims: tuple[str, ...], shape: tuple[int, ...], dtype: Any,
                  chunks: Any) -> TaskPlan:
    """:func:`task_plan` of an array known only by its metadata (nothing allocated or graphed).

    Parameters
    ----------
    dims, shape, dtype
        The array's dimension names, shape and dtype (e.g. from a store's metadata).
    chunks : tuple, mapping or str
        Its chunks, in any form dask accepts; a mapping by dim name.

    Returns
    -------
    TaskPlan
    """
    if isinstance(chunks, Mapping):
        chunks = tuple(chunks.get(d, n) for d, n in zip(dims, shape, strict=True))
    norm = normalize_chunks(chunks, shape, dtype=np.dtype(dtype))
    return _plan(tuple(dims), tuple(int(n) for n in shape), np.dtype(dtype),
                 tuple(tuple(int(c) for c in cs) for cs in norm))


def _plan(dims: tuple[str, ...], shape: tuple[int, ...], dtype: np.dtype,
          norm: Chunks) -> TaskPlan:
    itemsize = int(dtype.itemsize)
    values, counts = _task_sizes(norm)
    n_tasks = int(counts.sum())
    recommended = _recommend(shape, norm, itemsize, dims)
    rec_sizes = [recommended[d] for d in dims]
    rec_tasks = int(np.prod([-(-n // s) if s else 1 for n, s in zip(shape, rec_sizes,
                                                                       strict=True)]))
    return TaskPlan(
        dims=dims,
        shape=shape,
        chunks=norm,
        n_tasks=n_tasks,
        pixels=int(np.prod(shape)),
        pixels_per_task_min=int(values[0]),
        pixels_per_task_median=_weighted_median(values, counts),
        bytes_per_task=int(values[-1]) * itemsize,
        recommended=recommended,
        recommended_tasks=rec_tasks,
        recommended_pixels_per_task=int(np.prod(rec_sizes)),
        recommended_bytes_per_task=int(np.prod(rec_sizes)) * itemsize,
    )
