"""Writing and reading zarr the same way everywhere in bigkern.

Every store bigkern writes is zarr v3 with a CRC-32C checksum codec on every
array (so a flipped, truncated or overwritten chunk is detected when read),
every chunk written even when it holds only fill values (so a *missing* chunk
is an error, not a silent NaN), and the root attributes

``bigkern_kind``
    what the store holds (``scenes``, ``predictions``, ``model``);
``bigkern_status``
    ``writing`` until the last chunk is in place, then ``complete``;
``bigkern_version``
    the bigkern version that wrote it;
``bigkern_publishing``
    only on an output being replaced on an object store: the hidden sibling
    holding its complete successor (see :mod:`bigkern.store.staging`).

:func:`bigkern.store.outputs.is_bigkern_store` recognises such stores; only they
may be replaced with ``overwrite=True``.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bigkern.store.urls import Location, PathOrURL, StorageOptions, location

__all__ = [
    "KIND_ATTR",
    "PUBLISHING_ATTR",
    "STATUS_ATTR",
    "VERSION_ATTR",
    "finish_store",
    "open_zarr",
    "quiet_zarr_notes",
    "read_root_attrs",
    "stored_variables",
    "to_zarr",
]

if TYPE_CHECKING:  # xarray only where a Dataset is written or opened: the CLI's checks skip it
    import xarray as xr

KIND_ATTR = "bigkern_kind"
STATUS_ATTR = "bigkern_status"
VERSION_ATTR = "bigkern_version"
PUBLISHING_ATTR = "bigkern_publishing"

# encoding keys a variable carries from its source that a rewrite must keep
_CF_ENCODING = ("_FillValue", "missing_value", "dtype", "scale_factor", "add_offset",
                "units", "calendar")


# A predictions store keeps its regions' commit records in the hidden folder
# .bigkern-regions (bigkern.store.regions), which is not a zarr node: zarr says so whenever it
# lists the store's root. That is expected of bigkern's own folder, and of it alone.
warnings.filterwarnings(
    "ignore", message=r"Object at \.bigkern-regions is not recognized as a component",
    category=UserWarning)


# zarr's notes on consolidated metadata (one read to open a store on object storage): not in
# the zarr v3 spec yet; zarr-python supports it and warns, which bigkern acknowledges here
_CONSOLIDATED_NOTES = (("Consolidated metadata", UserWarning),
                       ("Failed to open Zarr store with consolidated", RuntimeWarning))


@contextmanager
def _quiet_consolidated() -> Iterator[None]:
    """Silence zarr's consolidated-metadata notes in the block, not on every write and read."""
    with warnings.catch_warnings():
        for message, category in _CONSOLIDATED_NOTES:
            warnings.filterwarnings("ignore", message=message, category=category)
        yield


def quiet_zarr_notes() -> None:
    """Silence zarr's notes about stores bigkern writes in the whole process (for the CLI).

    :func:`_quiet_consolidated` covers bigkern's own reads and writes, but zarr warns from
    its own I/O thread too, which a ``catch_warnings`` block of the main thread does not
    reliably cover: an interrupt that ends the block while zarr lists a half-made store
    lets its notes through — the consolidated ones, and one "Object at … is not
    recognized" per array whose metadata is not written yet.
    """
    for message, category in _CONSOLIDATED_NOTES:
        warnings.filterwarnings("ignore", message=message, category=category)
    warnings.filterwarnings("ignore", message=r"Object at .* is not recognized as a component",
                            category=UserWarning)


def _portable_strings(ds: xr.Dataset) -> xr.Dataset:
    """Fixed-width unicode arrays have no zarr v3 spec; store them as variable-length strings."""
    fixes = {k: v.astype(object) for k, v in ds.variables.items() if v.dtype.kind == "U"}
    return ds.assign_coords({k: v for k, v in fixes.items() if k in ds.coords}).assign(
        {k: v for k, v in fixes.items() if k not in ds.coords}
    )


def checksum_encoding(ds: xr.Dataset) -> dict[str, dict[str, Any]]:
    """Encoding that puts zstd compression and a CRC-32C checksum on every variable.

    Variable-length strings keep zarr's default codecs (their serializer is not
    the plain byte codec) plus the checksum.
    """
    from zarr.codecs import Crc32cCodec, ZstdCodec

    encoding: dict[str, dict[str, Any]] = {}
    for name, var in ds.variables.items():
        if var.dtype == object:
            encoding[str(name)] = {"compressors": (Crc32cCodec(),)}
        else:
            encoding[str(name)] = {"compressors": (ZstdCodec(level=3), Crc32cCodec())}
    return encoding


def to_zarr(
    ds: xr.Dataset,
    path: PathOrURL | Location,
    *,
    kind: str,
    compute: bool = True,
    consolidated: bool = True,
    storage_options: StorageOptions = None,
    **kwargs: Any,
) -> Any:
    """Write ``ds`` as a new checksummed zarr v3 store marked as bigkern's, status ``writing``.

    The target must not exist (``mode="w-"``): replacing an output is decided
    by :mod:`bigkern.store.outputs`, never here. Call :func:`finish_store` once
    every chunk is written.

    Parameters
    ----------
    ds : xarray.Dataset
        What to write.
    path : str, Path, URL or Location
        New store: a local path or an fsspec URL.
    kind : str
        Recorded as ``bigkern_kind`` (``scenes``, ``predictions``, ``model``).
    compute : bool
        As in :meth:`xarray.Dataset.to_zarr`: with False, metadata and
        in-memory variables are written now and dask variables are returned as
        a delayed write.
    consolidated : bool
        Consolidate metadata now (False for a template still being filled).
    storage_options : mapping, optional
        fsspec options for a URL (see :func:`bigkern.store.urls.location`).
    """
    from bigkern.version import __version__

    out = _portable_strings(ds)
    for var in out.variables.values():  # codecs are bigkern's choice, not the source's
        for key in ("compressor", "compressors", "filters", "serializer", "object_codec"):
            var.encoding.pop(key, None)
    out.attrs = {**out.attrs, KIND_ATTR: kind, STATUS_ATTR: "writing",
                 VERSION_ATTR: __version__}
    encoding = checksum_encoding(out)
    for name, var in out.variables.items():  # keep what the variable declares (fills, packing)
        kept = {k: v for k, v in var.encoding.items() if k in _CF_ENCODING}
        encoding[str(name)] = {**kept, **encoding[str(name)]}
    for name, extra in kwargs.pop("encoding", {}).items():
        encoding.setdefault(name, {}).update(extra)
    with _quiet_consolidated():
        return out.to_zarr(location(path, storage_options).zarr_store(), mode="w-",
                           consolidated=consolidated, compute=compute, zarr_format=3,
                           write_empty_chunks=True, encoding=encoding, **kwargs)


def finish_store(path: PathOrURL | Location, storage_options: StorageOptions = None) -> None:
    """Mark a store ``complete`` and consolidate its metadata: the last write of all.

    On a local path and on an object store alike this rewrites only the root
    ``zarr.json`` (one object, replaced whole), so the store reads as complete
    only once every chunk and array's metadata is in place.
    """
    import zarr

    store = location(path, storage_options).zarr_store()
    group = zarr.open_group(store, mode="r+")
    group.attrs[STATUS_ATTR] = "complete"
    with _quiet_consolidated():
        zarr.consolidate_metadata(store)


def read_root_attrs(
    path: PathOrURL | Location, storage_options: StorageOptions = None
) -> dict[str, Any] | None:
    """The root group's attributes of a zarr store, or None if ``path`` is not one."""
    import zarr

    try:
        store = location(path, storage_options).zarr_store(read_only=True)
        with _quiet_consolidated():
            group = zarr.open_group(store, mode="r")
        return dict(group.attrs)
    except Exception:  # zarr raises several types for "not a group"
        return None


def stored_variables(
    path: PathOrURL | Location, storage_options: StorageOptions = None
) -> list[str] | None:
    """The names of the variables at a zarr store's root, or None if ``path`` is not one.

    Read from the metadata alone (no xarray): the command line checks the
    features it is given against them before it opens the store. A local zarr v3
    store's metadata is read as JSON, without importing zarr (a quarter of a
    second a refused command need not spend); other stores are opened with
    zarr. Dimension coordinates (an array named as its only dim) are left out,
    as xarray leaves them out of ``data_vars``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from bigkern.datasets import make_scenes
    >>> from bigkern.scenes.writing import write_scenes
    >>> store = write_scenes(make_scenes(1, (8, 8), seed=0),
    ...                      pathlib.Path(tempfile.mkdtemp()) / "s.zarr")
    >>> stored_variables(store)[:4]
    ['AF', 'AN', 'BF', 'CF']
    """
    loc = location(path, storage_options)
    if loc.local:
        names = _v3_variables(loc.local_path)
        if names is not None:
            return names
    import zarr

    try:
        store = location(path, storage_options).zarr_store(read_only=True)
        with _quiet_consolidated():
            group = zarr.open_group(store, mode="r")
        return sorted(name for name, array in group.arrays() if _dims(array) != (name,))
    except Exception:  # zarr raises several types for "not a group"
        return None


def _dims(array: Any) -> tuple[str, ...]:
    """An array's dimension names: zarr v3 metadata, or xarray's attribute in zarr v2."""
    names = getattr(array.metadata, "dimension_names", None)
    return tuple(names or array.attrs.get("_ARRAY_DIMENSIONS", ()))


def _v3_variables(root: Path) -> list[str] | None:
    """:func:`stored_variables` of a local zarr v3 group from its JSON; None if it is not one.

    The root ``zarr.json`` lists every array when the store is consolidated (as
    bigkern writes them); otherwise each child's own ``zarr.json`` is read.
    """
    try:
        node = json.loads((root / "zarr.json").read_text())
        if not isinstance(node, dict) or node.get("node_type") != "group":
            return None
        children = (node.get("consolidated_metadata") or {}).get("metadata")
        if children is None:
            children = {child.name: json.loads((child / "zarr.json").read_text())
                        for child in root.iterdir() if (child / "zarr.json").is_file()}
        return sorted(name for name, meta in children.items()
                      if "/" not in name and meta.get("node_type") == "array"
                      and tuple(meta.get("dimension_names") or ()) != (name,))
    except (OSError, ValueError, AttributeError):  # unreadable, or not this layout
        return None


def open_zarr(
    path: PathOrURL | Location, *, storage_options: StorageOptions = None, **kwargs: Any
) -> xr.Dataset:
    """``xarray.open_zarr`` for stores bigkern wrote (consolidated) or others (either way)."""
    import xarray as xr

    with _quiet_consolidated():
        ds = xr.open_zarr(location(path, storage_options).zarr_store(read_only=True), **kwargs)
    for name, var in ds.variables.items():
        if var.dtype == object and name in ds.coords and var.size and isinstance(
                var.values.flat[0], str):
            ds = ds.assign_coords({name: var.astype(str)})
    return ds
