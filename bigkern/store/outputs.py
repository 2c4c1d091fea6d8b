"""Safe outputs: never write over an input, replace only what bigkern wrote, never half-written.

Three rules, applied by every writer in bigkern (scenes, models, predictions):

1. **An output is never an input.** The output path may not be, contain or lie
   inside any input path of the same command (:func:`check_not_input`).
2. **Only bigkern's own outputs are replaced.** An existing path is replaced
   only with ``overwrite=True`` and only if it is a store or model file that
   bigkern wrote, recognised by its metadata, holding nothing else
   (:func:`check_replaceable`); anything else is refused, naming what is there.
3. **A crash never leaves output that reads as complete.** Stores are written
   to a hidden temporary sibling and moved into place when finished
   (:func:`staged_output`), or — for resumable predictions — written in place
   with ``bigkern_status = "writing"`` until the last chunk is in. Staging and
   publishing live in :mod:`bigkern.store.staging`.

Every function takes local paths or fsspec URLs (``s3://``, ``gs://``,
``memory://`` …, with ``storage_options=``; see :mod:`bigkern.store.urls`). Local
paths are handled with :mod:`os` as always. On a URL the same three rules
hold: paths are compared per protocol (an ``s3://`` output never overlaps a
local input), a store is recognised by the same root attributes, and a staged
output is published as :func:`bigkern.store.staging.staged_output` describes.

Two more rules make an output have **one writer** (:mod:`bigkern.store.claims`):
every writer claims its output before writing anything, so a second command
writing the same path fails at once, naming the first; and an existing output
of another kind (scenes, predictions, model) is never replaced, even with
``overwrite`` — a scenes store is not an older prediction. Hidden partial
siblings left by a killed run (``.<name>.bigkern-partial-…``) are removed by
the next writer of the same output, which holds the claim and so knows that
no live writer owns them.
"""

from __future__ import annotations

import os
import posixpath
import shutil
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from bigkern.errors import StoreError
from bigkern.store.claims import LOCK_SUFFIX, OutputClaim
from bigkern.store.urls import Location, PathOrURL, StorageOptions, location
from bigkern.store.zarr_store import KIND_ATTR, STATUS_ATTR, read_root_attrs

__all__ = [
    "PARTIAL_TAG",
    "REGIONS_FOLDER",
    "REPLACED_TAG",
    "check_not_input",
    "check_replaceable",
    "clean_partials",
    "is_bigkern_store",
    "prepare_output",
    "remove_output",
    "store_kind",
]

PARTIAL_TAG = ".bigkern-partial-"
REPLACED_TAG = ".bigkern-replaced-"
# what a zarr array's folder holds: its metadata and its chunks
_ARRAY_ENTRIES = frozenset({"zarr.json", "c"})
# the hidden folder of a predictions store that holds one commit record per region
REGIONS_FOLDER = ".bigkern-regions"


def _resolved(path: str | Path) -> Path:
    return Path(os.path.abspath(os.path.expanduser(str(path)))).resolve()


def _overlap(target: Location, source: Location) -> str | None:
    """How ``target`` relates to ``source``: "is", "contains", "inside" or None."""
    if target.local != source.local or target.protocol != source.protocol:
        return None
    if target.local:
        a: PurePosixPath | Path = _resolved(target.path)
        b: PurePosixPath | Path = _resolved(source.path)
    else:
        a = PurePosixPath("/" + target.path.strip("/"))
        b = PurePosixPath("/" + source.path.strip("/"))
    if a == b:
        return "is"
    if a in b.parents:
        return "contains"
    if b in a.parents:
        return "inside"
    return None


def check_not_input(
    out: PathOrURL | Location, inputs: Iterable[PathOrURL | Location],
    storage_options: StorageOptions = None,
) -> None:
    """Raise :class:`StoreError` if ``out`` is, contains or lies inside one of ``inputs``.

    Local paths are compared after resolving symbolic links and ``..``, so
    ``-o ./a/../s.zarr`` is recognised as ``s.zarr``; URLs are compared by
    protocol and path (``s3://b/x.zarr/`` is ``s3://b/x.zarr``).
    """
    target = location(out, storage_options)
    for item in inputs:
        how = _overlap(target, location(item, storage_options))
        if how == "is":
            raise StoreError(f"the output {out} is the input {item}: bigkern never writes over "
                             f"its input; choose another output path")
        if how == "contains":
            raise StoreError(f"the output {out} contains the input {item}: replacing it would "
                             f"delete the input; choose another output path")
        if how == "inside":
            raise StoreError(f"the output {out} lies inside the input {item}: bigkern never "
                             f"writes into its input; choose another output path")


def _netcdf_attrs(path: Location) -> dict[str, object] | None:
    import io

    import xarray as xr

    try:
        source = path.local_path if path.local else io.BytesIO(path.fs.cat_file(path.path))
        with xr.open_dataset(source) as ds:
            return dict(ds.attrs)
    except Exception:  # not netCDF, or unreadable
        return None


# the first bytes of a TIFF (and BigTIFF) file, little- and big-endian
_TIFF_SIGNATURES = (b"II*\x00", b"MM\x00*", b"II+\x00", b"MM\x00+")


def _geotiff_tags(path: Location) -> dict[str, str] | None:
    """The metadata tags of the TIFF file ``path``; None if it is not a TIFF.

    A TIFF that cannot be read here (rasterio not installed, or a damaged
    file) has no tags: ``{}``, so it is never taken for bigkern's.
    """
    import warnings

    try:
        with path.open("rb") as f:
            if f.read(4) not in _TIFF_SIGNATURES:
                return None
    except (OSError, ValueError):
        return None
    try:
        import rasterio
        from rasterio.errors import NotGeoreferencedWarning

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NotGeoreferencedWarning)
            if path.local:
                with rasterio.open(path.local_path) as src:
                    return dict(src.tags())
            with path.open("rb") as f, rasterio.open(f) as src:
                return dict(src.tags())
    except Exception:  # rasterio absent, or not a TIFF it reads
        return {}


def store_kind(path: PathOrURL | Location, storage_options: StorageOptions = None) -> str | None:
    """What bigkern wrote at ``path`` (``scenes``, ``predictions``, ``model``), or None.

    None when nothing is there or what is there is not bigkern's. A netCDF
    model file (which carries ``bigkern_format``) is a ``model``; a netCDF
    file or GeoTIFF of predictions carries ``bigkern_kind`` (a root attribute,
    a TIFF metadata tag).
    """
    loc = location(path, storage_options)
    if loc.isdir():
        attrs = read_root_attrs(loc)
    elif loc.isfile():
        attrs = _geotiff_tags(loc)
        if attrs is None:
            attrs = _netcdf_attrs(loc)
    else:
        return None
    if not attrs:
        return None
    if KIND_ATTR in attrs:
        return str(attrs[KIND_ATTR])
    return "model" if "bigkern_format" in attrs else None


def is_bigkern_store(path: PathOrURL | Location, storage_options: StorageOptions = None) -> bool:
    """Whether ``path`` is a zarr store, netCDF model file or prediction file bigkern wrote."""
    return store_kind(path, storage_options) is not None


def _store_members(path: Location) -> set[str]:
    """Top-level names a zarr store may hold: its metadata and one folder per array."""
    import zarr

    group = zarr.open_group(path.zarr_store(read_only=True), mode="r")
    names = {name for name, _ in group.members()}
    return names | {"zarr.json", ".zattrs", ".zgroup", ".zmetadata"}


def _entries(path: Location) -> list[tuple[str, bool]]:
    """(name, is a directory) of each entry directly under ``path``."""
    if path.local:
        return [(p.name, p.is_dir()) for p in path.local_path.iterdir()]
    path.refresh()
    return [(posixpath.basename(e["name"].rstrip("/")), e["type"] == "directory")
            for e in path.fs.ls(path.path, detail=True)]


def _half_made_array(path: Location) -> bool:
    """Whether the directory ``path`` holds only what a zarr array holds (or nothing)."""
    return all(name in _ARRAY_ENTRIES for name, _ in _entries(path))


def _foreign_entries(path: Location) -> list[str]:
    """Entries of a bigkern store that are not part of the store (sorted, relative).

    In an unfinished store (``bigkern_status = "writing"``) a directory shaped like
    a zarr array whose metadata never made it to storage (a writer stopped by a
    full disk, or killed) is the store's own, not foreign.
    """
    allowed = _store_members(path) | {REGIONS_FOLDER}
    entries = _entries(path)
    unfinished = (read_root_attrs(path) or {}).get(STATUS_ATTR) == "writing"
    foreign = [name for name, is_dir in entries if name not in allowed
               and not (unfinished and is_dir and _half_made_array(path.joinpath(name)))]
    for member in (allowed - {REGIONS_FOLDER}) & {name for name, is_dir in entries if is_dir}:
        for child, _ in _entries(path.joinpath(member)):
            if child not in _ARRAY_ENTRIES:
                foreign.append(f"{member}/{child}")
    return sorted(foreign)


def _describe(path: Location, limit: int = 5) -> str:
    if path.isfile():
        return "a file"
    entries = sorted(name for name, _ in _entries(path))
    if not entries:
        return "an empty directory"
    shown = ", ".join(entries[:limit]) + (", …" if len(entries) > limit else "")
    return f"a directory holding {len(entries)} entr{'y' if len(entries) == 1 else 'ies'} " \
           f"({shown})"


def check_replaceable(
    path: PathOrURL | Location, storage_options: StorageOptions = None, *,
    kind: str | None = None,
) -> None:
    """Raise :class:`StoreError` unless ``path`` is bigkern's own output and nothing else.

    With ``kind``, it must also be an output of that kind: a scenes store is
    never replaced by predictions, nor a model by a scenes store.
    """
    loc = location(path, storage_options)
    if loc.local and loc.local_path.is_symlink():
        raise StoreError(f"{path} is a symbolic link (to {os.readlink(loc.path)}): bigkern "
                         f"replaces only outputs it wrote at that path, never what a link "
                         f"points to; remove the link or choose another output path")
    found = store_kind(loc)
    if found is None:
        raise StoreError(f"{path} exists and was not written by bigkern ({_describe(loc)}): "
                         f"refusing to replace it, even with --overwrite; choose another "
                         f"output path or remove it yourself")
    if kind is not None and found != kind:
        raise StoreError(f"{path} is a bigkern {found} store, not {kind}: refusing to replace "
                         f"it with {kind}, even with --overwrite; choose another output path")
    if loc.isdir():
        foreign = _foreign_entries(loc)
        if foreign:
            shown = ", ".join(foreign[:5]) + (", …" if len(foreign) > 5 else "")
            raise StoreError(f"{path} is a bigkern store but also holds {len(foreign)} "
                             f"entr{'y' if len(foreign) == 1 else 'ies'} bigkern did not write "
                             f"({shown}): refusing to replace it")


def prepare_output(
    path: PathOrURL | Location, *, overwrite: bool,
    inputs: Iterable[PathOrURL | Location] = (), storage_options: StorageOptions = None,
    kind: str | None = None,
) -> None:
    """Check that ``path`` may be written: not an input, and new or replaceable.

    Raises
    ------
    StoreError
        ``path`` is (or contains, or lies inside) an input; or it exists and
        ``overwrite`` is False; or it exists and is not bigkern's own output
        (of ``kind``, when given).
    """
    check_not_input(path, inputs, storage_options)
    loc = location(path, storage_options)
    if loc.local and loc.local_path.is_symlink() and not loc.local_path.exists():
        raise StoreError(f"{path} is a dangling symbolic link (to {os.readlink(loc.path)}, "
                         f"which does not exist): bigkern never writes through a link; remove "
                         f"the link or choose another output path")
    if not loc.exists():
        return
    if not overwrite:
        raise StoreError(f"{path} exists; pass overwrite=True (CLI: --overwrite) to replace it")
    check_replaceable(loc, kind=kind)


def _partial_siblings(loc: Location) -> list[Location]:
    """Hidden siblings a writer of ``loc`` stages or sets aside (``.<name>.bigkern-…``)."""
    prefixes = (f".{loc.name}{PARTIAL_TAG}", f".{loc.name}{REPLACED_TAG}")
    try:
        names = [name for name, _ in _entries(loc.parent)]
    except (FileNotFoundError, OSError):
        return []
    return [loc.with_name(n) for n in names if n.startswith(prefixes)
            and not n.endswith(LOCK_SUFFIX)]


def clean_partials(claim: OutputClaim, keep: Iterable[Location] = ()) -> list[str]:
    """Delete the hidden partial siblings of the claimed output left by killed runs.

    Only a holder of the output's claim may call this: no live writer can own
    them then. Each is deleted only if it is bigkern's (:func:`check_replaceable`);
    anything else is left where it is. Returns the names deleted.
    """
    claim.check()
    kept = {k.path for k in keep}
    removed = []
    for sibling in _partial_siblings(claim.output):
        if sibling.path in kept:
            continue
        try:
            check_replaceable(sibling)
        except StoreError:
            continue  # not recognisably ours (e.g. an empty staged directory): left alone
        _delete(sibling)  # bigkern's own, of a dead run (we hold the claim)
        removed.append(sibling.name)
    return removed


def _delete(path: Location) -> None:
    """Delete ``path`` (a file or a whole directory / prefix), no questions asked.

    Every caller says, next to the call, how it knows ``path`` is bigkern's own:
    a :func:`check_replaceable` just before, or a staging name with a fresh
    random tag that only this process can have made.
    """
    if path.local:
        if path.local_path.is_dir() and not path.local_path.is_symlink():
            shutil.rmtree(path.local_path)
        else:
            path.local_path.unlink()
    else:
        path.fs.rm(path.path, recursive=True)
        path.refresh()


def remove_output(path: PathOrURL | Location, storage_options: StorageOptions = None) -> None:
    """Delete ``path`` once :func:`check_replaceable` says it is bigkern's own output."""
    loc = location(path, storage_options)
    check_replaceable(loc)  # bigkern's marker attributes, and nothing but the store inside
    _delete(loc)
