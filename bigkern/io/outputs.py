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
   with ``bigkern_status = "writing"`` until the last chunk is in.

Every function takes local paths or fsspec URLs (``s3://``, ``gs://``,
``memory://`` …, with ``storage_options=``; see :mod:`bigkern.io.urls`). Local
paths are handled with :mod:`os` as always. On a URL the same three rules
hold: paths are compared per protocol (an ``s3://`` output never overlaps a
local input), a store is recognised by the same root attributes, and a staged
output is published as :func:`staged_output` describes — object stores have
no atomic rename, so bigkern relies on the root ``zarr.json`` (the one object
that carries ``bigkern_status``) being written last.

Two more rules make an output have **one writer** (:mod:`bigkern.io.claims`):
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
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

from bigkern.errors import StoreError
from bigkern.io.claims import LOCK_SUFFIX, OutputClaim, claim_output
from bigkern.io.urls import Location, PathOrURL, StorageOptions, location
from bigkern.io.zarr_store import KIND_ATTR, STATUS_ATTR, read_root_attrs

__all__ = [
    "PARTIAL_TAG",
    "REGIONS_FOLDER",
    "check_not_input",
    "check_replaceable",
    "clean_partials",
    "is_bigkern_store",
    "prepare_output",
    "publish_staged",
    "remove_output",
    "staged_output",
    "store_kind",
]

PARTIAL_TAG = ".bigkern-partial-"
_PARTIAL = PARTIAL_TAG
_REPLACED = ".bigkern-replaced-"
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


def store_kind(path: PathOrURL | Location, storage_options: StorageOptions = None) -> str | None:
    """What bigkern wrote at ``path`` (``scenes``, ``predictions``, ``model``), or None.

    None when nothing is there or what is there is not bigkern's. A netCDF
    model file (which carries ``bigkern_format``) is a ``model``.
    """
    loc = location(path, storage_options)
    if loc.isdir():
        attrs = read_root_attrs(loc)
    elif loc.isfile():
        attrs = _netcdf_attrs(loc)
    else:
        return None
    if not attrs:
        return None
    if KIND_ATTR in attrs:
        return str(attrs[KIND_ATTR])
    return "model" if "bigkern_format" in attrs else None


def is_bigkern_store(path: PathOrURL | Location, storage_options: StorageOptions = None) -> bool:
    """Whether ``path`` is a zarr store or netCDF model file that bigkern wrote."""
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


def _foreign_entries(path: Location) -> list[str]:
    """Entries of a bigkern store that are not part of the store (sorted, relative)."""
    allowed = _store_members(path) | {REGIONS_FOLDER}
    entries = _entries(path)
    foreign = [name for name, _ in entries if name not in allowed]
    for member in (allowed - {REGIONS_FOLDER}) & {name for name, is_dir in entries if is_dir}:
        for child, _ in _entries(path.joinpath(member)):
            if child not in {"zarr.json", "c"}:
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
    if not loc.exists():
        return
    if not overwrite:
        raise StoreError(f"{path} exists; pass overwrite=True (CLI: --overwrite) to replace it")
    check_replaceable(loc, kind=kind)


def _partial_siblings(loc: Location) -> list[Location]:
    """Hidden siblings a writer of ``loc`` stages or sets aside (``.<name>.bigkern-…``)."""
    prefixes = (f".{loc.name}{_PARTIAL}", f".{loc.name}{_REPLACED}")
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


@contextmanager
def staged_output(
    path: PathOrURL | Location, *, overwrite: bool = False,
    inputs: Iterable[PathOrURL | Location] = (), storage_options: StorageOptions = None,
    kind: str | None = None,
) -> Iterator[Path | Location]:
    """Yield a hidden temporary sibling of ``path`` to write; move it into place on success.

    The output is claimed first (:func:`bigkern.io.claims.claim_output`): a
    second command writing the same path fails at once. Hidden partial
    siblings of earlier, killed runs are removed. On an exception the
    temporary sibling is removed and ``path`` is left as it was.

    For a **local path** (a :class:`~pathlib.Path` is yielded) the sibling is
    renamed into place. A replaced output is first moved aside, and deleted
    only once the new one is in place, so a crash at any moment leaves either
    the old complete output or the new one at ``path`` (plus, at worst, a
    hidden ``.<name>.bigkern-…`` sibling, removed by the next writer).

    For a **URL** (a :class:`~bigkern.io.urls.Location` is yielded: pass it to
    bigkern's writers, or use its ``fs`` and ``path``) object stores cannot
    rename atomically, so the staged sibling prefix is *copied* into place
    (server-side on S3 and GCS) and then deleted: first every object but the
    root ``zarr.json``, then the root ``zarr.json`` — the object that makes the
    store a store and says ``bigkern_status = "complete"`` — last. A replaced
    output is first marked ``bigkern_status = "writing"`` and emptied, once
    the new one is complete beside it. So a crash while writing leaves the old
    output untouched; a crash while publishing leaves a store that reads as
    unfinished (refused by bigkern's readers, replaceable with ``overwrite``),
    never one that reads as complete. A single-file output (a netCDF model)
    is one object, put whole.

    Parameters
    ----------
    path : str, Path, URL or Location
        The output.
    overwrite : bool
        Replace an existing output that bigkern wrote (of ``kind``).
    inputs : iterable of paths or URLs
        The command's inputs: ``path`` may not be, contain or lie inside one.
    storage_options : mapping, optional
        fsspec options for a URL.
    kind : str, optional
        The kind of output written (``scenes``, ``predictions``, ``model``): an
        existing output of another kind is refused even with ``overwrite``.
    """
    loc = location(path, storage_options)
    inputs = list(inputs)
    prepare_output(loc, overwrite=overwrite, inputs=inputs, kind=kind)
    with claim_output(loc) as claim:
        clean_partials(claim)
        tag = uuid.uuid4().hex[:12]
        temp = loc.with_name(f".{loc.name}{_PARTIAL}{tag}")
        try:
            yield temp.local_path if loc.local else temp
            claim.check()
        except BaseException:
            # ``temp`` carries a fresh random tag: nothing but this call can have made it
            if temp.exists():
                _delete(temp)
            raise
        publish_staged(temp, loc, kind=kind)


def publish_staged(temp: Location, target: Location, *, kind: str | None = None) -> None:
    """Put the complete staged output ``temp`` at ``target``, replacing bigkern's output there.

    The caller holds ``target``'s claim and made ``temp``. Local paths: the
    old output is renamed aside, ``temp`` renamed into place, then the old one
    deleted. URLs: see :func:`staged_output`.
    """
    if not target.local:
        _publish(temp, target, kind=kind)
        return
    dest, staged = target.local_path, temp.local_path
    if dest.exists() or dest.is_symlink():
        check_replaceable(target, kind=kind)  # checked again: it may have changed meanwhile
        aside = dest.with_name(f".{dest.name}{_REPLACED}{uuid.uuid4().hex[:12]}")
        dest.rename(aside)
        staged.rename(dest)
        # ``aside`` is the old output, just checked to be bigkern's own and nothing else
        if aside.is_dir():
            shutil.rmtree(aside)
        else:
            aside.unlink()
    else:
        staged.rename(dest)


def _retire(target: Location) -> None:
    """Mark the old output ``writing`` and delete all of it but its root ``zarr.json``."""
    import zarr

    # _publish called check_replaceable(target) just before: bigkern's marker attributes,
    # and nothing inside but what bigkern wrote
    if not target.isdir():
        _delete(target)
        return
    zarr.open_group(target.zarr_store(), mode="r+", use_consolidated=False).attrs[
        STATUS_ATTR] = "writing"
    for name, _ in _entries(target):
        if name != "zarr.json":
            _delete(target.joinpath(name))


def _publish(temp: Location, target: Location, *, kind: str | None = None) -> None:
    """Copy the staged output ``temp`` to ``target`` (root metadata last), then delete ``temp``."""
    fs = temp.fs
    if target.exists():
        check_replaceable(target, kind=kind)  # checked again: it may have changed meanwhile
        _retire(target)
    temp.refresh()
    if temp.isfile():
        fs.copy(temp.path, target.path)
    else:
        root = temp.path.rstrip("/")
        names = sorted(posixpath.relpath(f, root) for f in fs.find(root))
        rest = [n for n in names if n != "zarr.json"]
        if rest:
            fs.copy([f"{root}/{n}" for n in rest],
                    [target.joinpath(*n.split("/")).path for n in rest])
        if "zarr.json" in names:
            fs.copy(f"{root}/zarr.json", target.joinpath("zarr.json").path)
    target.refresh()
    _delete(temp)  # the staged copy: a fresh random tag that only staged_output made
