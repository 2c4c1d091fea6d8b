"""Reading stores so that damage is an error naming the store, the variable and the chunk.

:func:`open_checked` opens a zarr store lazily like :func:`xarray.open_zarr`,
but every dask task reads its chunk through :class:`CheckedChunks`: a chunk
that fails its CRC-32C checksum, is truncated, or cannot be decoded raises
:class:`~bigkern.errors.StoreError` naming the store, the variable and the
zarr chunk index, on whichever worker reads it. For a store bigkern wrote
(every chunk is always written), a chunk *missing* from storage is found when
the store is opened — by listing, not reading — and is an error too, never a
silent NaN. Stores written elsewhere may legitimately omit chunks that hold
only fill values; for them a missing chunk reads as the fill value, as zarr
specifies.

A store bigkern wrote also carries a **chunk manifest** per array
(:mod:`bigkern.store.manifest`): a digest of each chunk's values together with
its variable and chunk index. Every chunk a task reads is checked against it,
so a valid chunk in the wrong place — two chunks swapped, a chunk copied from
another variable or store — is an error naming the chunk, not a silent wrong
answer. A task whose dask chunk covers only part of a zarr chunk reads that
zarr chunk whole once more to check it (zarr decodes whole chunks anyway; the
extra cost is a second read of that chunk). Stores without a manifest (written
elsewhere, or by an older bigkern) read as before.

Before anything is listed, allocated or graphed, the sizes the metadata
declares are checked against the ``bigkern.store_limits`` settings
(:func:`bigkern.store.limits.check_declared_sizes`).

Stores are local paths or fsspec URLs (``s3://``, ``memory://`` …) with
``storage_options``; messages name the store as it was given.
"""

from __future__ import annotations

import itertools
import os
import posixpath
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr
from dask.base import tokenize

from bigkern.errors import StoreError
from bigkern.store.limits import array_metadata, check_declared_sizes
from bigkern.store.manifest import MANIFEST_ATTR, ChunkManifest, read_manifest
from bigkern.store.urls import Location, PathOrURL, StorageOptions, location
from bigkern.store.zarr_store import KIND_ATTR, PUBLISHING_ATTR, STATUS_ATTR, _quiet_consolidated

__all__ = ["CheckedChunks", "check_store_complete", "missing_chunks", "open_checked"]


def _reason(err: BaseException) -> str:
    text = str(err)
    if "checksum" in text.lower():
        return "it fails its CRC-32C checksum (corrupt or truncated bytes)"
    return f"it cannot be decoded ({type(err).__name__}: {text})"


class CheckedChunks:
    """Array-like view of one stored variable whose reads name the chunk that fails.

    Parameters
    ----------
    store : str
        The store's path or URL (for messages).
    name : str
        The variable's name.
    variable : xarray.Variable
        The lazily indexed (not yet loaded) variable, CF-decoded by xarray.
    chunk_shape : tuple of int
        The zarr chunk shape, to name the failing chunk.
    stamp : object, optional
        Identifies this version of the store (e.g. its metadata's modification
        time) in dask tokens.
    manifest : ChunkManifest, optional
        The variable's chunk manifest: every zarr chunk a read touches is
        checked against it (a chunk only partly read is read whole to check it).
    """

    def __init__(self, store: str, name: str, variable: xr.Variable,
                 chunk_shape: Sequence[int], stamp: Any = None,
                 manifest: ChunkManifest | None = None) -> None:
        self.store = store
        self.manifest = manifest
        self.stamp = stamp
        self.name = name
        self.variable = variable
        self.chunk_shape = tuple(int(c) for c in chunk_shape)
        self.shape = variable.shape
        self.dtype = variable.dtype
        self.ndim = variable.ndim

    def __dask_tokenize__(self) -> tuple[Any, ...]:
        """The same token for the same stored variable (store, name, modification stamp),
        so that two opens of one store build graphs with identical keys and tasks."""
        return ("bigkern-checked-chunks", self.store, self.name, self.stamp, self.chunk_shape,
                self.shape, str(self.dtype), self.manifest is not None)

    def __getitem__(self, key: Any) -> np.ndarray:
        try:
            values = np.asarray(self.variable[key].values)
        except StoreError:
            raise
        except Exception as err:
            index, cause = self._locate(key, err)
            raise StoreError(
                f"store {self.store}: variable {self.name!r}, chunk {index}: {_reason(cause)}"
            ) from None
        if self.manifest is not None:
            self._verify(key, values)
        return values

    def _region(self, index: tuple[int, ...]) -> tuple[slice, ...]:
        return tuple(slice(i * c, min((i + 1) * c, n))
                     for i, c, n in zip(index, self.chunk_shape, self.shape, strict=True))

    def _verify(self, key: Any, values: np.ndarray) -> None:
        """Check every zarr chunk under ``key`` against the manifest; raise naming a misfit.

        A chunk that ``key`` covers whole is checked in ``values``; one it
        covers in part is read whole to be checked.
        """
        assert self.manifest is not None
        keys = key if isinstance(key, tuple) else (key,)
        starts: list[int] | None = []
        for dim in range(self.ndim):
            k = keys[dim] if dim < len(keys) else slice(None)
            if not isinstance(k, slice) or k.indices(self.shape[dim])[2] != 1:
                starts = None  # not a plain box: every chunk is read whole to check it
                break
            starts.append(k.indices(self.shape[dim])[0])
        for index in self._chunks_in(key):
            region = self._region(index)
            whole = starts is not None and all(
                r.start >= s and r.stop <= s + n
                for r, s, n in zip(region, starts, values.shape, strict=True))
            if whole:
                assert starts is not None
                part = values[tuple(slice(r.start - s, r.stop - s)
                                    for r, s in zip(region, starts, strict=True))]
            else:
                part = np.asarray(self.variable[region].values)
            if not self.manifest.matches(index, part):
                raise StoreError(
                    f"store {self.store}: variable {self.name!r}, chunk {index} holds data "
                    f"that belongs elsewhere or was altered (its values do not match the "
                    f"store's chunk manifest for that chunk): the store is damaged")

    def _chunks_in(self, key: Any) -> Iterable[tuple[int, ...]]:
        keys = key if isinstance(key, tuple) else (key,)
        ranges = []
        for dim, (size, step) in enumerate(zip(self.shape, self.chunk_shape, strict=True)):
            k = keys[dim] if dim < len(keys) else slice(None)
            start, stop, _ = k.indices(size) if isinstance(k, slice) else (int(k), int(k) + 1, 1)
            ranges.append(range(start // step, max(start // step + 1, -(-stop // step))))
        return itertools.product(*ranges)

    def _locate(self, key: Any, err: BaseException) -> tuple[tuple[int, ...], BaseException]:
        """The first zarr chunk under ``key`` that fails to read, and why."""
        if not isinstance(key, tuple) or not all(isinstance(k, slice) for k in key):
            return (), err
        candidates = list(self._chunks_in(key))
        if len(candidates) == 1:
            return candidates[0], err
        for index in candidates:
            region = tuple(slice(i * c, min((i + 1) * c, n))
                           for i, c, n in zip(index, self.chunk_shape, self.shape, strict=True))
            try:
                np.asarray(self.variable[region].values)
            except Exception as inner:
                return index, inner
        return candidates[0], err


def _chunk_shape(var: xr.Variable) -> tuple[int, ...]:
    chunks = var.encoding.get("chunks") or var.encoding.get("preferred_chunks")
    if isinstance(chunks, Mapping):
        return tuple(int(chunks.get(d, n)) for d, n in zip(var.dims, var.shape, strict=True))
    if chunks is None:
        return tuple(var.shape)
    return tuple(int(c) for c in chunks)


def _dask_chunks(var: xr.Variable, zchunks: tuple[int, ...],
                 chunks: Mapping[str, Any] | str | None) -> Any:
    if chunks is None or (isinstance(chunks, Mapping) and not chunks):
        spec: Any = zchunks
    elif isinstance(chunks, str):
        spec = chunks
    else:
        spec = tuple(chunks.get(d, z) for d, z in zip(var.dims, zchunks, strict=True))
    return da.core.normalize_chunks(spec, var.shape, dtype=var.dtype, previous_chunks=zchunks)


def _stamp(loc: Location) -> Any:
    """Something that changes when the store's root metadata is rewritten (None if unknown)."""
    meta = loc.joinpath("zarr.json")
    try:
        if loc.local:
            return os.stat(meta.path).st_mtime_ns
        return loc.fs.ukey(meta.path)  # a digest of the object's info: ETag, size, time
    except Exception:  # no root metadata, or the filesystem cannot say
        return None


def open_checked(
    path: PathOrURL | Location, *, chunks: Mapping[str, Any] | str | None = None,
    storage_options: StorageOptions = None,
) -> xr.Dataset:
    """Open a zarr store lazily; every chunk read names the store, variable and chunk on failure.

    Parameters
    ----------
    path : str, Path or URL
        The store: a local path or an fsspec URL.
    chunks : dict or "auto", optional
        Dask chunks per dimension; by default the store's own zarr chunks.
    storage_options : mapping, optional
        fsspec options for a URL (see :func:`bigkern.store.urls.location`).

    Raises
    ------
    StoreError
        The metadata declares sizes beyond the ``bigkern.store_limits``
        settings (checked before anything is read); for a bigkern store: it is
        incomplete (``bigkern_status`` is not ``complete``) or a chunk is
        missing from storage; a chunk manifest that does not fit its array.
    """
    import zarr

    loc = location(path, storage_options)
    where = loc.url
    with _quiet_consolidated():
        group = zarr.open_group(loc.zarr_store(read_only=True), mode="r")
    check_declared_sizes(str(path), array_metadata(group), chunks)
    with _quiet_consolidated():
        ds = xr.open_dataset(loc.zarr_store(read_only=True), engine="zarr", chunks=None,
                             cache=False)
    if KIND_ATTR in ds.attrs:
        check_store_complete(loc, ds)
    stamp = _stamp(loc)
    replaced: dict[str, xr.Variable] = {}
    for name, var in ds.variables.items():
        if name in ds.indexes:
            continue
        zchunks = _chunk_shape(var)
        attrs = dict(var.attrs)
        manifest = None
        if MANIFEST_ATTR in attrs:  # bigkern's record, not a property of the data
            manifest = read_manifest(where, str(name), attrs.pop(MANIFEST_ATTR), var.shape,
                                     zchunks)
            var = var.copy(deep=False)
            var.attrs = attrs
        reader = CheckedChunks(where, str(name), var, zchunks, stamp, manifest)
        data = da.from_array(
            reader, chunks=_dask_chunks(var, zchunks, chunks),
            name=f"bigkern-read-{name}-{tokenize(where, name, stamp, chunks)}",
            lock=False, asarray=False, meta=np.empty((0,) * var.ndim, dtype=var.dtype),
        )
        replaced[str(name)] = xr.Variable(var.dims, data, attrs, var.encoding)
    return ds.assign({k: v for k, v in replaced.items() if k in ds.data_vars}).assign_coords(
        {k: v for k, v in replaced.items() if k in ds.coords})


def _present_keys(array_root: Location) -> set[str]:
    """Relative keys (``c/0/1``, ``zarr.json``) of the objects stored under an array."""
    if array_root.local:
        root = str(array_root.local_path)
        keys = set()
        for folder, _, files in os.walk(root):  # scandir underneath: no stat per file
            rel = os.path.relpath(folder, root)
            prefix = "" if rel == "." else rel.replace(os.sep, "/") + "/"
            keys.update(prefix + f for f in files)
        return keys
    array_root.refresh()
    base = array_root.path.rstrip("/")
    return {posixpath.relpath(f, base) for f in array_root.fs.find(base)}


def missing_chunks(
    path: PathOrURL | Location, names: Iterable[str] | None = None,
    storage_options: StorageOptions = None,
) -> dict[str, list[tuple[int, ...]]]:
    """Chunk indices that the store's arrays should hold but storage lacks, per variable.

    One listing of each array's folder (or object prefix); nothing is read or decoded.
    """
    import zarr

    loc = location(path, storage_options)
    with _quiet_consolidated():
        group = zarr.open_group(loc.zarr_store(read_only=True), mode="r")
    missing: dict[str, list[tuple[int, ...]]] = {}
    wanted = None if names is None else set(names)
    for name, arr in group.arrays():
        if wanted is not None and name not in wanted:
            continue
        present = _present_keys(loc.joinpath(name))
        grid = arr.cdata_shape
        lost = [idx for idx in itertools.product(*(range(n) for n in grid))
                if arr.metadata.encode_chunk_key(idx) not in present]
        if lost:
            missing[name] = lost
    return missing


def check_store_complete(
    path: PathOrURL | Location, ds: xr.Dataset, storage_options: StorageOptions = None
) -> None:
    """Raise :class:`StoreError` if the bigkern store ``ds`` (opened from ``path``) is
    unfinished or lacks a chunk."""
    status = ds.attrs.get(STATUS_ATTR)
    successor = ds.attrs.get(PUBLISHING_ATTR)
    if status != "complete" and successor:
        raise StoreError(
            f"store {path} is incomplete: it was being replaced when its writer stopped; the "
            f"complete new output waits beside it in {successor}. Rerun the command that "
            f"writes {path} (with --overwrite) and it is put in place first")
    if status != "complete":
        raise StoreError(
            f"store {path} is incomplete (bigkern_status={status!r}): the command that wrote "
            f"it did not finish; rerun it (bigkern predict resumes) or write it again with "
            f"--overwrite")
    lost = missing_chunks(path, storage_options=storage_options)
    if lost:
        name, chunks = next(iter(lost.items()))
        total = sum(len(v) for v in lost.values())
        raise StoreError(
            f"store {path}: variable {name!r}, chunk {chunks[0]} is missing from storage "
            f"({total} chunk(s) missing in all, in {sorted(lost)}): the store is damaged")
