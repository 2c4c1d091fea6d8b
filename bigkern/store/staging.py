"""Staged outputs: written beside their path, published whole, finished after a crash.

Every output that is not written region by region (scenes stores, models) is
written to a hidden sibling, ``.<name>.bigkern-partial-<tag>``, and published
at its path once complete (:func:`staged_output`). Resumable predictions
written with ``overwrite`` use the same publish step (:func:`publish_staged`).

**Local paths** publish with renames: the old output is renamed aside, the new
one into place, then the old one deleted.

**Object stores** (S3, GCS …) have no rename: the staged prefix is *copied*
into place, server-side, and the old output retired first. Retiring marks the
old output's root ``bigkern_status = "writing"`` and records in
``bigkern_publishing`` the name of the staged sibling being published, then
deletes all of the old output but its root ``zarr.json``. The staged copy's
objects follow, its root ``zarr.json`` (which says ``complete``) last, and the
staged copy is deleted. A writer killed anywhere in between leaves at the
path a store that reads as unfinished — never complete — and beside it a
complete new output. The next writer of that path (which holds its claim, so
no live writer is publishing) finishes the publish first
(:func:`finish_interrupted_publish`): nothing the killed command made is lost,
and the partial clean-up that follows never deletes that complete copy.
"""

from __future__ import annotations

import posixpath
import shutil
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from bigkern.errors import StoreError
from bigkern.store.claims import OutputClaim, claim_output
from bigkern.store.outputs import (
    PARTIAL_TAG,
    REPLACED_TAG,
    _delete,
    _entries,
    check_not_input,
    check_replaceable,
    clean_partials,
    prepare_output,
)
from bigkern.store.urls import Location, PathOrURL, StorageOptions, location
from bigkern.store.zarr_store import PUBLISHING_ATTR, STATUS_ATTR, read_root_attrs

__all__ = ["finish_interrupted_publish", "publish_staged", "remove_abandoned", "staged_output"]

#: Hidden siblings this process removed after a failed write. A task that was already
#: running on a worker when the write failed may still write a chunk into one after it was
#: removed (recreating it); :func:`remove_abandoned` removes them again once the tasks are over.
_ABANDONED: list[Location] = []


def remove_abandoned() -> list[str]:
    """Remove again the hidden siblings of failed writes that a late task recreated.

    Call it once no task of this process can still write: after the cluster the
    command built has closed (``bigkern``'s commands do). Each sibling carries a
    fresh random tag of this process, so nothing else can own it.

    Returns
    -------
    list of str
        The siblings found again and removed.
    """
    removed = []
    while _ABANDONED:
        temp = _ABANDONED.pop()
        # a task on a cluster the command only connected to may still write into it
        if temp.exists() and _discard(temp):
            removed.append(str(temp))
    return removed


def _discard(temp: Location) -> bool:
    """Remove the hidden sibling of a failed write; False if something still writes into it.

    A task still running on a worker may add a chunk while the directory is being
    removed ("Directory not empty"): that must not hide the error that ended the
    write. What is left stays listed for :func:`remove_abandoned`.
    """
    try:
        if temp.exists():
            _delete(temp)
    except OSError:
        return False
    return True


@contextmanager
def staged_output(
    path: PathOrURL | Location, *, overwrite: bool = False,
    inputs: Iterable[PathOrURL | Location] = (), storage_options: StorageOptions = None,
    kind: str | None = None,
) -> Iterator[Path | Location]:
    """Yield a hidden temporary sibling of ``path`` to write; publish it there on success.

    The output is claimed first (:func:`bigkern.store.claims.claim_output`): a
    second command writing the same path fails at once. A publish that an
    earlier, killed writer left unfinished is finished, then hidden partial
    siblings of killed runs are removed. On an exception the temporary sibling
    is removed and ``path`` is left as it was.

    For a **local path** a :class:`~pathlib.Path` is yielded; for a **URL** a
    :class:`~bigkern.store.urls.Location` (pass it to bigkern's writers, or use
    its ``fs`` and ``path``). See the module's description for how each is
    published and why a crash at any moment never leaves an output that reads
    as complete but is not.

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

    Examples
    --------
    >>> import tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "notes.txt"
    >>> with staged_output(out) as temp:
    ...     _ = temp.write_text("complete")
    >>> out.read_text()
    'complete'
    """
    loc = location(path, storage_options)
    inputs = list(inputs)
    check_not_input(loc, inputs)
    with claim_output(loc) as claim:
        finish_interrupted_publish(claim)
        prepare_output(loc, overwrite=overwrite, inputs=inputs, kind=kind)
        clean_partials(claim)
        tag = uuid.uuid4().hex[:12]
        temp = loc.with_name(f".{loc.name}{PARTIAL_TAG}{tag}")
        try:
            yield temp.local_path if loc.local else temp
            claim.check()
        except BaseException:
            # ``temp`` carries a fresh random tag: nothing but this call can have made it
            _ABANDONED.append(temp)  # first: a second interrupt may cut the removal short
            _discard(temp)
            raise
        publish_staged(temp, loc, kind=kind)


def publish_staged(temp: Location, target: Location, *, kind: str | None = None) -> None:
    """Put the complete staged output ``temp`` at ``target``, replacing bigkern's output there.

    The caller holds ``target``'s claim and made ``temp``. See the module's
    description for local paths and object stores.
    """
    if target.exists() or (target.local and target.local_path.is_symlink()):
        check_replaceable(target, kind=kind)  # checked again: it may have changed meanwhile
    if target.local:
        _rename_into_place(temp.local_path, target.local_path)
        return
    if target.exists():
        _retire(target, temp)
    _copy_into_place(temp, target)


def finish_interrupted_publish(claim: OutputClaim) -> str | None:
    """Finish publishing a staged output whose writer was killed while copying it.

    Only a holder of the output's claim may call this. Returns the staged
    sibling's name when a publish was finished, None when there was none.
    A retired output whose staged copy is gone or incomplete is left as it
    is: it reads as unfinished, and ``overwrite`` replaces it.
    """
    claim.check()
    target = claim.output
    if target.local or not target.isdir():
        return None
    staged_name = (read_root_attrs(target) or {}).get(PUBLISHING_ATTR)
    if not isinstance(staged_name, str) \
            or not staged_name.startswith(f".{target.name}{PARTIAL_TAG}"):
        return None
    staged = target.with_name(staged_name)
    if not staged.exists() or (read_root_attrs(staged) or {}).get(STATUS_ATTR) != "complete":
        return None
    try:
        check_replaceable(staged)
        check_replaceable(target)  # the retired output, about to be emptied: still only ours
    except StoreError:
        return None  # not recognisably bigkern's: left where it is, and reads as unfinished
    _copy_into_place(staged, target)
    return staged_name


def _rename_into_place(staged: Path, dest: Path) -> None:
    """Rename the old output aside, ``staged`` into place, then delete the old one."""
    if not (dest.exists() or dest.is_symlink()):
        staged.rename(dest)
        return
    aside = dest.with_name(f".{dest.name}{REPLACED_TAG}{uuid.uuid4().hex[:12]}")
    dest.rename(aside)
    staged.rename(dest)
    # ``aside`` is the old output, just checked to be bigkern's own and nothing else
    if aside.is_dir():
        shutil.rmtree(aside)
    else:
        aside.unlink()


def _retire(target: Location, staged: Location) -> None:
    """Mark the old store ``writing``, naming ``staged`` as its successor.

    A single-file output (a netCDF model) is not retired: the copy replaces
    it in one put, so there is no moment without a complete file.
    """
    import zarr

    if not target.isdir():
        return
    # publish_staged called check_replaceable(target) just before
    attrs = zarr.open_group(target.zarr_store(), mode="r+", use_consolidated=False).attrs
    attrs.update({STATUS_ATTR: "writing", PUBLISHING_ATTR: staged.name})
    target.refresh()


def _copy_into_place(staged: Location, target: Location) -> None:
    """Copy ``staged`` to ``target`` (root ``zarr.json`` last), then delete ``staged``.

    Everything at ``target`` but its root ``zarr.json`` is deleted first: it
    was retired (it reads as unfinished) and may hold arrays the new output
    lacks.
    """
    fs = staged.fs
    staged.refresh()
    if staged.isfile():
        fs.copy(staged.path, target.path)
    else:
        if target.isdir():
            for name, _ in _entries(target):
                if name != "zarr.json":
                    # the retired old output: check_replaceable'd by both callers just before
                    _delete(target.joinpath(name))
        root = staged.path.rstrip("/")
        names = sorted(posixpath.relpath(f, root) for f in fs.find(root))
        rest = [n for n in names if n != "zarr.json"]
        if rest:
            fs.copy([f"{root}/{n}" for n in rest],
                    [target.joinpath(*n.split("/")).path for n in rest])
        if "zarr.json" in names:
            fs.copy(f"{root}/zarr.json", target.joinpath("zarr.json").path)
    target.refresh()
    # the staged copy: made by this process, or named by the retired output it replaces
    _delete(staged)
