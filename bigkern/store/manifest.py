"""Per-array chunk manifests: a digest of every chunk's values *and of where it belongs*.

Every chunk of a store bigkern writes carries a CRC-32C of its encoded bytes
(:mod:`bigkern.store.zarr_store`), which catches flipped or truncated bytes but
not a chunk that is valid and in the wrong place: two chunks of a feature
swapped in storage (``CORR/c/0/0/0`` ↔ ``CORR/c/1/0/0``), or a chunk copied
in from another variable or another store, each pass their own checksum.

A **chunk manifest** closes that gap. For every chunk of an array it records
:func:`chunk_digest`: a CRC-32C over the variable's name, the chunk index,
the dtype and shape, then the chunk's values as xarray reads them back
(decoded: a declared non-NaN fill value reads as NaN, every NaN counts as the
canonical NaN). The digests are computed on the workers from the very blocks
being written (:func:`manifest_digests`, computed together with the write),
and stored as the array attribute ``bigkern_manifest`` (:func:`write_manifests`)
before the store is marked complete. :func:`bigkern.store.open_checked` checks
every chunk it reads against it.

A variable gets a manifest only when what is written reads back as the same
values (:func:`manifest_eligible`): numbers or booleans, stored in their own
dtype, not packed (``scale_factor``/``add_offset``), not times, and, for an
integer variable, without a fill value (it would read back as floats with
NaN). Other variables — text coordinates such as ``source`` — are covered by
their chunk checksums alone.

The manifest attribute itself is metadata, like the shapes and codecs: it is
not checksummed, so removing it (or the metadata of a whole array) turns the
check off for that array rather than raising. What it guards against is data
put in the wrong place, by accident or by a tool, not a forger.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr

from bigkern.errors import StoreError

__all__ = [
    "MANIFEST_ATTR",
    "ChunkManifest",
    "chunk_digest",
    "manifest_digests",
    "manifest_eligible",
    "read_manifest",
    "write_manifests",
]

#: The array attribute holding a variable's chunk manifest.
MANIFEST_ATTR = "bigkern_manifest"
_FORMAT = 1
_ALGORITHM = "crc32c(name, chunk index, dtype, shape, decoded values)"


def _crc32c(data: Any, crc: int | None = None) -> int:
    import google_crc32c  # zarr's own CRC-32C (hardware-accelerated where the CPU has it)

    try:
        return int(google_crc32c.value(data) if crc is None else google_crc32c.extend(crc, data))
    except TypeError:  # the pure-Python fallback takes bytes only
        raw = bytes(data)
        return int(google_crc32c.value(raw) if crc is None else google_crc32c.extend(crc, raw))


def _canonical_nan(values: np.ndarray) -> np.ndarray:
    """``values`` with every NaN made the canonical NaN (a copy only if it holds a NaN)."""
    if values.dtype.kind in "fc":
        nan = np.isnan(values)
        if nan.any():
            return np.where(nan, np.array(np.nan, dtype=values.dtype), values)
    return values


def chunk_digest(name: str, index: Sequence[int], values: np.ndarray, *,
                 canonical: bool = False) -> int:
    """CRC-32C of a chunk's name, index, dtype, shape and values, as an unsigned 32-bit int.

    Parameters
    ----------
    name : str
        The variable the chunk belongs to.
    index : sequence of int
        The chunk's index in the array's chunk grid, e.g. ``(1, 0, 0)``.
    values : numpy.ndarray
        The chunk's decoded values (an edge chunk holds only the part inside
        the array).
    canonical : bool
        Make every NaN the canonical NaN first (NaN payloads are not data).

    Returns
    -------
    int
        The digest; the same values at another index or in another variable
        give another digest.
    """
    arr = np.ascontiguousarray(values)
    if canonical:
        arr = np.ascontiguousarray(_canonical_nan(arr))
    header = "\0".join(("bigkern-chunk-v1", name, ",".join(str(int(i)) for i in index),
                        arr.dtype.str, ",".join(str(n) for n in arr.shape)))
    crc = _crc32c(header.encode())
    return _crc32c(arr.reshape(-1).view(np.uint8), crc) if arr.size else crc


@dataclass(frozen=True)
class ChunkManifest:
    """The digests of every chunk of one array.

    Attributes
    ----------
    name : str
        The variable.
    chunks : tuple of int
        The zarr chunk shape the digests are for.
    digests : numpy.ndarray
        ``uint32``, one per chunk, shaped like the chunk grid.
    """

    name: str
    chunks: tuple[int, ...]
    digests: np.ndarray

    def matches(self, index: tuple[int, ...], values: np.ndarray) -> bool:
        """Whether ``values`` are what the store wrote at chunk ``index`` of this variable."""
        expected = int(self.digests[index])
        if chunk_digest(self.name, index, values) == expected:
            return True  # the usual case: no NaN, or NaNs read back bit for bit
        return chunk_digest(self.name, index, values, canonical=True) == expected

    def to_attr(self) -> dict[str, Any]:
        """The JSON-able attribute that stores this manifest."""
        raw = np.ascontiguousarray(self.digests, dtype="<u4").tobytes()
        return {"format": _FORMAT, "algorithm": _ALGORITHM, "chunks": list(self.chunks),
                "grid": list(self.digests.shape), "digests": base64.b64encode(raw).decode()}


_REWRITE_HINT = (f"write the data with bigkern.write_scenes (or bigkern ingest) for new "
                 f"checksums, or delete the {MANIFEST_ATTR} attributes to read it unchecked")


def read_manifest(store: str, name: str, attr: Any, shape: Sequence[int],
                  chunks: Sequence[int]) -> ChunkManifest:
    """Parse the ``bigkern_manifest`` attribute of array ``name`` of ``store``.

    Raises
    ------
    StoreError
        The attribute is malformed, of an unknown format, or describes another
        chunk grid than the array's (its metadata was altered).
    """
    where = f"store {store}: variable {name!r}"
    try:
        fmt = int(attr["format"])
        grid = tuple(int(g) for g in attr["grid"])
        mchunks = tuple(int(c) for c in attr["chunks"])
        raw = base64.b64decode(attr["digests"], validate=True)
    except Exception as err:  # any malformed piece: say so, never guess
        raise StoreError(f"{where}: its chunk manifest ({MANIFEST_ATTR}) is malformed "
                         f"({type(err).__name__}: {err}): the attribute was edited after "
                         f"bigkern wrote it; {_REWRITE_HINT}") from None
    if fmt != _FORMAT:
        raise StoreError(f"{where}: its chunk manifest has format {fmt}, this bigkern reads "
                         f"format {_FORMAT}: read it with the bigkern that wrote it")
    want = tuple(-(-int(n) // int(c)) if c else 0 for n, c in zip(shape, chunks, strict=True))
    if mchunks != tuple(int(c) for c in chunks) or grid != want or len(raw) != 4 * int(
            np.prod(grid, dtype=np.int64)):
        raise StoreError(f"{where}: its chunk manifest ({MANIFEST_ATTR}) checksums chunks "
                         f"{mchunks} in a grid {grid}, but the array has chunks "
                         f"{tuple(chunks)} in a grid {want}: the array was rewritten after "
                         f"bigkern wrote it (as xarray's to_zarr does in other chunks, "
                         f"keeping the attributes), or the attribute edited; "
                         f"{_REWRITE_HINT}")
    digests = np.frombuffer(raw, dtype="<u4").reshape(grid)
    return ChunkManifest(name, mchunks, digests)


def manifest_eligible(var: xr.Variable) -> bool:
    """Whether ``var``, written by xarray to zarr, reads back as the very same values.

    Numbers and booleans in their own dtype, not packed, not times; an integer
    variable without a fill value. Only these get a manifest.
    """
    enc, dtype = var.encoding, var.dtype
    if dtype.kind not in "biuf":
        return False
    if "scale_factor" in enc or "add_offset" in enc or "calendar" in enc:
        return False
    if "since" in str(enc.get("units", var.attrs.get("units", ""))):
        return False  # a time, decoded to datetimes
    if "dtype" in enc and np.dtype(enc["dtype"]) != dtype:
        return False
    has_fill = any(enc.get(k) is not None or var.attrs.get(k) is not None
                   for k in ("_FillValue", "missing_value"))
    return not (has_fill and dtype.kind != "f")


def _fills(var: xr.Variable) -> tuple[float, ...]:
    """Declared non-NaN fill values of a float variable: they read back as NaN."""
    out = []
    for key in ("_FillValue", "missing_value"):
        for source in (var.encoding, var.attrs):
            value = source.get(key)
            if value is not None:
                out.extend(float(v) for v in np.atleast_1d(value) if not np.isnan(v))
    return tuple(out)


def _block_digest(block: np.ndarray, name: str, fills: tuple[float, ...],
                  block_info: Any = None) -> np.ndarray:
    values = block
    if fills:
        values = np.where(np.isin(block, fills), np.array(np.nan, dtype=block.dtype), block)
    index = block_info[0]["chunk-location"]
    digest = chunk_digest(name, index, values, canonical=True)
    return np.full((1,) * block.ndim, digest, dtype=np.uint32)


def manifest_digests(ds: xr.Dataset) -> dict[str, da.Array]:
    """Lazy per-chunk digests of every eligible dask-backed variable of ``ds``.

    Compute them in the same ``compute`` as the write of ``ds``: dask then
    digests the very blocks it writes. Each dask chunk must be one zarr chunk
    (regular chunks, the last one smaller), as when xarray writes dask arrays.

    Returns
    -------
    dict of str to dask.array.Array
        ``uint32`` digests shaped like each variable's chunk grid.
    """
    out: dict[str, da.Array] = {}
    for name, var in ds.variables.items():
        data = var.data
        if not isinstance(data, da.Array) or name in ds.indexes or not manifest_eligible(var):
            continue
        if any(len(set(c[:-1])) > 1 or (len(c) > 1 and c[-1] > c[0]) for c in data.chunks):
            continue  # irregular chunks are not zarr chunks (xarray would refuse them anyway)
        out[str(name)] = da.map_blocks(
            _block_digest, data, str(name), _fills(var), dtype=np.uint32,
            chunks=tuple((1,) * len(c) for c in data.chunks),
            name=f"bigkern-manifest-{name}-{data.name}")
    return out


def write_manifests(store: Any, digests: Mapping[str, np.ndarray],
                    chunks: Mapping[str, Sequence[int]]) -> None:
    """Record each variable's chunk digests as its ``bigkern_manifest`` attribute.

    Call it once every chunk is written and before the store is marked
    complete (:func:`bigkern.store.zarr_store.finish_store` consolidates the
    metadata, manifests included).

    Parameters
    ----------
    store : str, Path, URL or Location
        The store being written.
    digests : mapping of str to numpy.ndarray
        Per variable, ``uint32`` digests shaped like its chunk grid (as
        computed from :func:`manifest_digests`, or by a writer's own tasks with
        :func:`chunk_digest`).
    chunks : mapping of str to sequence of int
        Per variable, its zarr chunk shape.
    """
    import zarr

    from bigkern.store.urls import location

    group = zarr.open_group(location(store).zarr_store(), mode="r+", use_consolidated=False)
    for name, values in digests.items():
        manifest = ChunkManifest(name, tuple(int(c) for c in chunks[name]),
                                 np.asarray(values, dtype=np.uint32))
        group[name].attrs[MANIFEST_ATTR] = manifest.to_attr()
