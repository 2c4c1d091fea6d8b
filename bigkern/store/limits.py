"""Declared sizes checked from metadata alone, before anything is allocated or listed.

A zarr store's metadata is a few bytes that may declare anything: an array of
10¹² × 10¹² elements, a chunk grid of 10⁸ chunks, a dimension coordinate of
10¹⁰ values (which xarray loads whole when it opens the store). Opening such a
store must not try to allocate, list or graph what it declares.
:func:`check_declared_sizes` reads each array's shape and chunk shape from the
(consolidated) metadata and refuses, with :class:`~bigkern.errors.StoreError`
naming the store, the array and the figure, anything beyond the
``bigkern.store_limits`` settings; :func:`array_metadata` gives what it read,
and :func:`planned_read_chunks` plans a scene store's tasks from it and applies
``bigkern.chunk_guidance.too_many_tasks`` (:mod:`bigkern.cluster.chunking`), so
that :func:`bigkern.scenes.open_scenes` refuses or rechunks a store of too many
small chunks before it lists, reads or computes anything.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bigkern import config
from bigkern.errors import StoreError

__all__ = ["ArrayMeta", "array_metadata", "check_declared_sizes", "count_blocks",
           "guided_chunks", "planned_read_chunks"]

_DEFAULTS = {"max_elements": 10**12, "max_chunks": 10**6, "max_index_length": 10**8}


@dataclass(frozen=True)
class ArrayMeta:
    """What a store's metadata declares about one array."""

    name: str
    dims: tuple[str, ...]
    shape: tuple[int, ...]
    chunks: tuple[int, ...]
    dtype: np.dtype


def _limit(name: str) -> int:
    return int(config.get(f"store_limits.{name}", _DEFAULTS[name]))


def array_metadata(group: Any) -> dict[str, ArrayMeta]:
    """Dims, shape, zarr chunk shape and dtype of every array of an open zarr group."""
    out = {}
    for name, arr in group.arrays():
        meta = arr.metadata
        dims = getattr(meta, "dimension_names", None) or arr.attrs.get("_ARRAY_DIMENSIONS")
        dims = tuple(str(d) for d in dims) if dims else tuple(
            f"dim_{i}" for i in range(len(arr.shape)))
        try:
            dtype = np.dtype(arr.dtype)
        except TypeError:  # zarr's variable-length strings
            dtype = np.dtype(object)
        out[str(name)] = ArrayMeta(str(name), dims, tuple(int(n) for n in arr.shape),
                                   tuple(int(c) for c in arr.chunks), dtype)
    return out


def count_blocks(meta: ArrayMeta, chunks: Mapping[str, Any] | str | None) -> int | None:
    """Dask blocks of ``meta`` read with ``chunks`` (as for ``open_scenes``), by arithmetic.

    None when the count is not known without dask's normalization (``"auto"``,
    explicit tuples), which is then safe to run: it never makes more blocks
    than the sizes it is given.
    """
    if chunks is None or isinstance(chunks, str):
        spec: Mapping[str, Any] = {}
    else:
        spec = chunks
    total = 1
    for dim, n, z in zip(meta.dims, meta.shape, meta.chunks, strict=True):
        c = spec.get(dim, z)
        if c in (-1, None):
            c = n
        if isinstance(c, (int, np.integer)) and not isinstance(c, bool):
            if c <= 0:
                raise StoreError(f"chunks: {dim}={c} is not a positive chunk size")
            total *= max(1, math.ceil(n / int(c))) if n else 1
        elif isinstance(c, (tuple, list)):
            total *= max(1, len(c))
        elif isinstance(chunks, str) or c == "auto":
            return None
        else:
            raise StoreError(f"chunks: {dim}={c!r} is not a chunk size")
    return total


def check_declared_sizes(where: str, arrays: Mapping[str, ArrayMeta],
                         chunks: Mapping[str, Any] | str | None = None) -> None:
    """Refuse a store whose metadata declares more than the ``bigkern.store_limits``.

    Parameters
    ----------
    where : str
        The store as the user gave it (for messages).
    arrays : mapping of str to ArrayMeta
        From :func:`array_metadata`.
    chunks : mapping or str, optional
        The dask chunks the store will be read with (``open_scenes``'s
        ``chunks=``): they may not make more blocks than the limit either.

    Raises
    ------
    StoreError
        An array of more than ``store_limits.max_elements`` elements or
        ``store_limits.max_chunks`` zarr chunks (or dask blocks with
        ``chunks``), or a dimension coordinate (loaded whole on open) longer
        than ``store_limits.max_index_length``.
    """
    max_elements, max_chunks = _limit("max_elements"), _limit("max_chunks")
    max_index = _limit("max_index_length")
    for name, meta in arrays.items():
        what = f"store {where}: array {name!r} declares"
        elements = math.prod(meta.shape)
        if elements > max_elements:
            raise StoreError(f"{what} shape {meta.shape} ({elements:.3g} elements), more than "
                             f"bigkern.store_limits.max_elements ({max_elements:.3g}): refused "
                             f"before reading; raise the limit if the store is genuine")
        if any(c <= 0 for c in meta.chunks) and elements:
            raise StoreError(f"{what} chunk shape {meta.chunks}: not a valid chunking")
        n_chunks = math.prod(math.ceil(n / c) for n, c in zip(meta.shape, meta.chunks,
                                                                   strict=True)) if elements else 0
        if n_chunks > max_chunks:
            raise StoreError(f"{what} {n_chunks:,} chunks (shape {meta.shape} in chunks of "
                             f"{meta.chunks}), more than bigkern.store_limits.max_chunks "
                             f"({max_chunks:,}): refused before listing or reading them; "
                             f"rewrite the store with larger chunks, or raise the limit")
        if meta.dims == (name,) and elements > max_index:
            raise StoreError(f"{what} a coordinate {name!r} of {elements:,} values, more than "
                             f"bigkern.store_limits.max_index_length ({max_index:,}) (opening "
                             f"loads it whole): refused before reading")
        blocks = count_blocks(meta, chunks) if chunks is not None else None
        if blocks is not None and blocks > max_chunks:
            raise StoreError(f"store {where}: chunks={chunks!r} would read array {name!r} in "
                             f"{blocks:,} tasks, more than bigkern.store_limits.max_chunks "
                             f"({max_chunks:,}): choose larger chunks")


def planned_read_chunks(loc: Any, where: str, chunks: Mapping[str, Any] | str | None,
                        features: Sequence[str] | None, dims: tuple[str, ...],
                        stacklevel: int = 4) -> Mapping[str, Any] | str | None:
    """The chunks to read a scene store with, decided from its metadata alone.

    The declared sizes are checked (:func:`check_declared_sizes`), the tasks
    of the feature (an array of ``dims``, not ``label``) whose chunks make the
    most are planned (:func:`bigkern.cluster.task_plans.planned_tasks`), and
    ``bigkern.chunk_guidance.too_many_tasks`` is applied
    (:func:`bigkern.cluster.chunking.guide_chunks`) — all before anything is
    listed, read or computed.

    Parameters
    ----------
    loc : Location
        The store.
    where : str
        The store as the user gave it (for messages).
    chunks : mapping or str, optional
        The chunks the caller asked for (None: the store's own).
    features : sequence of str, optional
        The features to plan for (None: every array of ``dims``).
    dims : tuple of str
        The dims of a feature, ``("scene", "y", "x")``.

    Returns
    -------
    mapping, str or None
        ``chunks``, or the recommended chunks when the policy rechunks.
    """
    import zarr

    from bigkern.store.zarr_store import _quiet_consolidated

    with _quiet_consolidated():
        group = zarr.open_group(loc.zarr_store(read_only=True), mode="r")
    return guided_chunks(array_metadata(group), where, chunks, features, dims,
                         stacklevel=stacklevel + 1)


def guided_chunks(arrays: Mapping[str, ArrayMeta], where: str,
                  chunks: Mapping[str, Any] | str | None, features: Sequence[str] | None,
                  dims: tuple[str, ...], stacklevel: int = 3) -> Mapping[str, Any] | str | None:
    """:func:`planned_read_chunks` for arrays described by ``arrays`` (any format's metadata).

    Examples
    --------
    >>> meta = {"NDAI": ArrayMeta("NDAI", ("scene", "y", "x"), (4, 100, 100), (4, 100, 100),
    ...                           np.dtype("f4"))}
    >>> guided_chunks(meta, "s.nc", None, None, ("scene", "y", "x")) is None  # nothing to do
    True
    """
    from bigkern.cluster.chunking import guide_chunks
    from bigkern.cluster.task_plans import planned_tasks

    check_declared_sizes(where, arrays, chunks)
    plans = []
    for name, meta in arrays.items():
        if meta.dims != dims or name == "label" or (features is not None
                                                     and name not in features):
            continue
        spec: Any = meta.chunks
        if isinstance(chunks, str):
            spec = chunks
        elif chunks:
            spec = tuple(chunks.get(d, z) for d, z in zip(meta.dims, meta.chunks, strict=True))
        plans.append((name, planned_tasks(meta.dims, meta.shape, meta.dtype, spec)))
    if not plans:
        return chunks
    name, plan = max(plans, key=lambda p: (p[1].n_tasks, -p[1].pixels_per_task_median))
    better = guide_chunks(plan, what=f"scene store {where} (variable {name!r})",
                          explicit=bool(chunks), stacklevel=stacklevel)
    return better if better is not None else chunks
