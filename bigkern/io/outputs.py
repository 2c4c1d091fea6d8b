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
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from bigkern.errors import StoreError
from bigkern.io.zarr_store import KIND_ATTR, read_root_attrs

__all__ = [
    "check_not_input",
    "check_replaceable",
    "is_bigkern_store",
    "prepare_output",
    "remove_output",
    "staged_output",
]

_PARTIAL = ".bigkern-partial-"
_REPLACED = ".bigkern-replaced-"


def _resolved(path: str | Path) -> Path:
    return Path(os.path.abspath(os.path.expanduser(str(path)))).resolve()


def check_not_input(out: str | Path, inputs: Iterable[str | Path]) -> None:
    """Raise :class:`StoreError` if ``out`` is, contains or lies inside one of ``inputs``.

    Paths are compared after resolving symbolic links and ``..``, so
    ``-o ./a/../s.zarr`` is recognised as ``s.zarr``.
    """
    target = _resolved(out)
    for item in inputs:
        source = _resolved(item)
        if target == source:
            raise StoreError(f"the output {out} is the input {item}: bigkern never writes over "
                             f"its input; choose another output path")
        if target in source.parents:
            raise StoreError(f"the output {out} contains the input {item}: replacing it would "
                             f"delete the input; choose another output path")
        if source in target.parents:
            raise StoreError(f"the output {out} lies inside the input {item}: bigkern never "
                             f"writes into its input; choose another output path")


def _netcdf_attrs(path: Path) -> dict[str, object] | None:
    import xarray as xr

    try:
        with xr.open_dataset(path) as ds:
            return dict(ds.attrs)
    except Exception:  # not netCDF, or unreadable
        return None


def is_bigkern_store(path: str | Path) -> bool:
    """Whether ``path`` is a zarr store or netCDF model file that bigkern wrote."""
    path = Path(path)
    if path.is_dir():
        attrs = read_root_attrs(path)
    elif path.is_file():
        attrs = _netcdf_attrs(path)
    else:
        return False
    return attrs is not None and (KIND_ATTR in attrs or "bigkern_format" in attrs)


def _store_members(path: Path) -> set[str]:
    """Top-level names a zarr store may hold: its metadata and one folder per array."""
    import zarr

    group = zarr.open_group(str(path), mode="r")
    names = {name for name, _ in group.members()}
    return names | {"zarr.json", ".zattrs", ".zgroup", ".zmetadata"}


def _foreign_entries(path: Path) -> list[str]:
    """Entries of a bigkern store that are not part of the store (sorted, relative)."""
    allowed = _store_members(path)
    foreign = [p.name for p in path.iterdir() if p.name not in allowed]
    for member in allowed & {p.name for p in path.iterdir() if p.is_dir()}:
        for child in (path / member).iterdir():
            if child.name not in {"zarr.json", "c"}:
                foreign.append(f"{member}/{child.name}")
    return sorted(foreign)


def _describe(path: Path, limit: int = 5) -> str:
    if path.is_file():
        return "a file"
    entries = sorted(p.name for p in path.iterdir())
    if not entries:
        return "an empty directory"
    shown = ", ".join(entries[:limit]) + (", …" if len(entries) > limit else "")
    return f"a directory holding {len(entries)} entr{'y' if len(entries) == 1 else 'ies'} " \
           f"({shown})"


def check_replaceable(path: str | Path) -> None:
    """Raise :class:`StoreError` unless ``path`` is bigkern's own output and nothing else."""
    path = Path(path)
    if path.is_symlink():
        raise StoreError(f"{path} is a symbolic link (to {os.readlink(path)}): bigkern replaces "
                         f"only outputs it wrote at that path, never what a link points to; "
                         f"remove the link or choose another output path")
    if not is_bigkern_store(path):
        raise StoreError(f"{path} exists and was not written by bigkern ({_describe(path)}): "
                         f"refusing to replace it, even with --overwrite; choose another "
                         f"output path or remove it yourself")
    if path.is_dir():
        foreign = _foreign_entries(path)
        if foreign:
            shown = ", ".join(foreign[:5]) + (", …" if len(foreign) > 5 else "")
            raise StoreError(f"{path} is a bigkern store but also holds {len(foreign)} "
                             f"entr{'y' if len(foreign) == 1 else 'ies'} bigkern did not write "
                             f"({shown}): refusing to replace it")


def prepare_output(
    path: str | Path, *, overwrite: bool, inputs: Iterable[str | Path] = ()
) -> None:
    """Check that ``path`` may be written: not an input, and new or replaceable.

    Raises
    ------
    StoreError
        ``path`` is (or contains, or lies inside) an input; or it exists and
        ``overwrite`` is False; or it exists and is not bigkern's own output.
    """
    check_not_input(path, inputs)
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        return
    if not overwrite:
        raise StoreError(f"{path} exists; pass overwrite=True (CLI: --overwrite) to replace it")
    check_replaceable(path)


def remove_output(path: str | Path) -> None:
    """Delete ``path`` once :func:`check_replaceable` says it is bigkern's own output."""
    path = Path(path)
    check_replaceable(path)  # bigkern's marker attributes, and nothing but the store inside
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink()


@contextmanager
def staged_output(
    path: str | Path, *, overwrite: bool = False, inputs: Iterable[str | Path] = ()
) -> Iterator[Path]:
    """Yield a hidden temporary sibling of ``path`` to write; move it into place on success.

    On an exception the temporary sibling is removed and ``path`` is left as
    it was. A replaced output is first moved aside, and deleted only once the
    new one is in place, so a crash at any moment leaves either the old
    complete output or the new one at ``path`` (plus, at worst, a hidden
    ``.<name>.bigkern-…`` sibling).
    """
    path = Path(path)
    inputs = list(inputs)
    prepare_output(path, overwrite=overwrite, inputs=inputs)
    tag = uuid.uuid4().hex[:12]
    temp = path.with_name(f".{path.name}{_PARTIAL}{tag}")
    try:
        yield temp
    except BaseException:
        # ``temp`` carries a fresh random tag: nothing but this call can have made it
        if temp.is_dir():
            shutil.rmtree(temp, ignore_errors=True)
        elif temp.exists():
            temp.unlink()
        raise
    if path.exists() or path.is_symlink():
        check_replaceable(path)  # checked again: it may have changed while we wrote
        aside = path.with_name(f".{path.name}{_REPLACED}{tag}")
        path.rename(aside)
        temp.rename(path)
        # ``aside`` is the old output, just checked to be bigkern's own and nothing else
        if aside.is_dir():
            shutil.rmtree(aside)
        else:
            aside.unlink()
    else:
        temp.rename(path)
