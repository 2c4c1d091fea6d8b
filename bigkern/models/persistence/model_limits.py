"""Model files that cannot be bombed: declared sizes checked from metadata alone.

A model file is small, but its metadata may *declare* anything: a shape of
10^12 elements, or 10^8 chunks of one element. Reading such a file would try
to allocate (or list) what it declares. :func:`check_model_limits` reads only
the metadata — zarr: every array's ``zarr.json`` and the consolidated copy in
the root; netCDF: the file's header — and refuses, before anything is
allocated, a variable of more than ``bigkern.max_model_elements`` elements or a
model of more than ``bigkern.max_model_chunks`` chunks in all, naming the
model, the variable, the declared size and the setting.
"""

from __future__ import annotations

import contextlib
import math
import struct
from collections.abc import Iterator
from typing import Any

from bigkern import config
from bigkern.errors import StoreError
from bigkern.store.urls import Location

__all__ = ["check_model_limits", "netcdf_header_shapes"]


def _limits() -> tuple[int, int]:
    return int(config.get("max_model_elements")), int(config.get("max_model_chunks"))


def _check_shape(where: str, name: str, shape: tuple[int, ...], max_elements: int) -> None:
    if any(int(s) < 0 for s in shape):
        raise StoreError(f"model {where}: variable {name!r} declares a negative shape {shape}")
    n = math.prod(int(s) for s in shape)
    if n > max_elements:
        raise StoreError(
            f"model {where}: variable {name!r} declares shape {tuple(int(s) for s in shape)} "
            f"({n:.3g} elements), over the limit of {max_elements:,} "
            f"(bigkern.max_model_elements); refused before reading it")


def _zarr_arrays(loc: Location, consolidated: bool) -> Iterator[tuple[str, Any]]:
    import zarr

    group = zarr.open_group(loc.zarr_store(read_only=True), mode="r",
                            use_consolidated=consolidated)
    yield from group.arrays()


def _check_zarr(loc: Location, where: str) -> None:
    max_elements, max_chunks = _limits()
    try:
        views = [list(_zarr_arrays(loc, False))]
        # without consolidated metadata, the arrays' own are what xarray reads
        with contextlib.suppress(ValueError, KeyError, TypeError, FileNotFoundError):
            views.append(list(_zarr_arrays(loc, True)))
    except StoreError:
        raise
    except Exception as err:  # zarr raises several types for unreadable metadata
        raise StoreError(f"{where} is not a readable model store: {err}") from err
    for arrays in views:
        total = 0
        for name, arr in arrays:
            shape = tuple(int(s) for s in arr.shape)
            _check_shape(where, name, shape, max_elements)
            grid = getattr(arr.metadata, "chunk_grid", None)
            chunk = tuple(int(c) for c in getattr(grid, "chunk_shape", arr.chunks))
            if any(c <= 0 for c in chunk):
                raise StoreError(f"model {where}: variable {name!r} declares chunks {chunk}")
            n = math.prod(-(-s // c) for s, c in zip(shape, chunk, strict=False))
            total += n
            if total > max_chunks:
                raise StoreError(
                    f"model {where}: variable {name!r} declares {n:,} chunks (shape {shape}, "
                    f"chunks {chunk}), bringing the model to {total:,}, over the limit of "
                    f"{max_chunks:,} (bigkern.max_model_chunks); refused before reading it")


_SIZES = {1: 1, 2: 1, 3: 2, 4: 4, 5: 4, 6: 8, 7: 1, 8: 2, 9: 4, 10: 8, 11: 8}


class _Header:
    """A reader of a netCDF classic header (CDF-1, CDF-2 and CDF-5)."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 4
        if data[:3] != b"CDF" or data[3] not in (1, 2, 5):
            raise ValueError("not a netCDF classic file (no CDF magic)")
        self.cdf5 = data[3] == 5

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ValueError("header truncated")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def int(self, big: bool = False) -> int:
        return struct.unpack(">q" if big else ">i", self.take(8 if big else 4))[0]

    def count(self) -> int:
        return self.int(self.cdf5)

    def name(self) -> str:
        n = self.count()
        text = self.take(n).decode("utf-8", "replace")
        self.take(-n % 4)
        return text

    def attrs(self) -> None:
        tag, n = self.int(), self.count()
        if tag not in (0, 12):
            raise ValueError(f"bad attribute list tag {tag}")
        for _ in range(n):
            self.name()
            kind, nelems = self.int(), self.count()
            size = _SIZES.get(kind)
            if size is None:
                raise ValueError(f"bad attribute type {kind}")
            self.take(nelems * size + (-(nelems * size) % 4))


def netcdf_header_shapes(data: bytes) -> dict[str, tuple[int, ...]]:
    """The declared shape of every variable in a netCDF classic file, from its header alone.

    Parameters
    ----------
    data : bytes
        The file's bytes (only the header is read).

    Returns
    -------
    dict
        Variable name -> shape (the record dimension counts its records).

    Raises
    ------
    ValueError
        The header is not a netCDF classic header or is damaged.
    """
    h = _Header(data)
    numrecs = h.count()
    tag, ndims = h.int(), h.count()
    if tag not in (0, 10):
        raise ValueError(f"bad dimension list tag {tag}")
    dims = []
    for _ in range(ndims):
        h.name()
        size = h.count()
        dims.append(numrecs if size == 0 else size)
    h.attrs()
    tag, nvars = h.int(), h.count()
    if tag not in (0, 11):
        raise ValueError(f"bad variable list tag {tag}")
    shapes = {}
    for _ in range(nvars):
        name = h.name()
        ids = [h.count() for _ in range(h.count())]
        if any(not 0 <= i < len(dims) for i in ids):
            raise ValueError(f"variable {name!r} names a dimension that does not exist")
        h.attrs()
        h.int()  # type
        h.count()  # vsize
        h.int(big=h.data[3] != 1)  # begin
        shapes[name] = tuple(dims[i] for i in ids)
    return shapes


def _check_netcdf(data: bytes, where: str) -> None:
    max_elements, _ = _limits()
    try:
        shapes = netcdf_header_shapes(data)
    except (ValueError, struct.error) as err:
        raise StoreError(f"model {where}: not a readable netCDF model ({err})") from None
    for name, shape in shapes.items():
        _check_shape(where, name, shape, max_elements)


def check_model_limits(loc: Location, where: str, data: bytes | None = None) -> None:
    """Refuse a model whose metadata declares more than the configured limits.

    Parameters
    ----------
    loc : Location
        The model file or store.
    where : str
        The model's path or URL, for messages.
    data : bytes, optional
        A netCDF model's bytes, when already read.

    Raises
    ------
    StoreError
        A variable declares more than ``bigkern.max_model_elements`` elements,
        the model more than ``bigkern.max_model_chunks`` chunks, or the
        metadata cannot be read: naming the model, the variable, the declared
        size and the setting.
    """
    if loc.suffix == ".nc":
        if data is None:
            data = loc.local_path.read_bytes() if loc.local else loc.fs.cat_file(loc.path)
        _check_netcdf(data, where)
    else:
        _check_zarr(loc, where)
