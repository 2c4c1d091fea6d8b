"""Figures written under the rules of every bigkern output.

A PNG that bigkern draws (``bigkern predict --png``, ``bigkern demo``'s
``scene0.png``, :func:`bigkern.jobs.plot.plot_scene`) follows the rules of
:mod:`bigkern.store.outputs`:

* an existing file is replaced only with ``overwrite=True`` and only if bigkern
  drew it, recognised by the PNG text chunk ``Software`` = ``bigkern …`` it
  writes into every figure (:data:`SOFTWARE_PREFIX`); a directory, a symbolic
  link or anyone else's file is refused, even with ``overwrite``;
* the path must end in ``.png`` (any case): the file *is* a PNG, so a
  ``report.pdf`` would hold PNG bytes under a PDF name, and adding the suffix
  silently (as matplotlib does) would write a file other than the one the user
  named and will look for; refusing costs one retry and is never a surprise;
* the figure is drawn into a hidden sibling (``.<name>.bigkern-partial-…``)
  and renamed into place, so a crash never leaves half a PNG at the path; on
  an object store it is one ``PUT`` of the whole file, which is atomic.
"""

from __future__ import annotations

import io
import os
import struct
import uuid
from typing import Any

from bigkern.errors import StoreError
from bigkern.store.urls import Location, PathOrURL, StorageOptions, location

__all__ = ["SOFTWARE_PREFIX", "check_figure_output", "check_png_suffix", "is_bigkern_png",
           "write_png"]

#: The start of the ``Software`` text chunk of every PNG bigkern writes.
SOFTWARE_PREFIX = "bigkern "
_SIGNATURE = b"\x89PNG\r\n\x1a\n"
#: Bytes read to find the text chunk: matplotlib writes it right after the header.
_HEAD_BYTES = 65536


def check_png_suffix(path: PathOrURL | Location) -> None:
    """Raise ``ValueError`` unless ``path`` ends in ``.png`` (any case)."""
    name = str(path).rstrip("/").rsplit("/", 1)[-1]
    if not name.lower().endswith(".png") or name.lower() == ".png":
        raise ValueError(f"{path}: a figure is written as PNG, so its path must end in .png "
                         f"(bigkern neither adds the suffix nor writes PNG bytes under "
                         f"another name)")


def _software(head: bytes) -> str | None:
    """The ``Software`` text of a PNG's first bytes, or None (not a PNG, or no such chunk)."""
    if not head.startswith(_SIGNATURE):
        return None
    at = len(_SIGNATURE)
    while at + 8 <= len(head):
        size, kind = struct.unpack(">I4s", head[at:at + 8])
        if kind in (b"IDAT", b"IEND"):
            return None
        data = head[at + 8:at + 8 + size]
        if kind == b"tEXt" and len(data) == size:
            key, _, text = data.partition(b"\x00")
            if key == b"Software":
                return text.decode("latin-1")
        at += 12 + size
    return None


def is_bigkern_png(path: PathOrURL | Location, storage_options: StorageOptions = None) -> bool:
    """Whether ``path`` is a PNG file that bigkern drew (its ``Software`` chunk says so)."""
    loc = location(path, storage_options)
    try:
        if loc.local:
            with open(loc.local_path, "rb") as f:
                head = f.read(_HEAD_BYTES)
        else:
            head = loc.fs.cat_file(loc.path, start=0, end=_HEAD_BYTES)
    except (OSError, ValueError):
        return False
    software = _software(head)
    return software is not None and software.startswith(SOFTWARE_PREFIX)


def check_figure_output(path: PathOrURL | Location, *, overwrite: bool,
                        storage_options: StorageOptions = None) -> Location:
    """Check that a figure may be written at ``path``; return its location.

    Raises
    ------
    ValueError
        ``path`` does not end in ``.png``.
    StoreError
        ``path`` is a directory or a symbolic link; or it exists and
        ``overwrite`` is False; or it exists and bigkern did not draw it.
    """
    check_png_suffix(path)
    loc = location(path, storage_options)
    if loc.local and loc.local_path.is_symlink():
        raise StoreError(f"{path} is a symbolic link (to {os.readlink(loc.local_path)}): bigkern "
                         f"never writes a figure through a link; choose another path")
    if not loc.exists():
        return loc
    if loc.isdir():
        raise StoreError(f"{path} is a directory: a figure is one file; choose a path such as "
                         f"{str(path).rstrip('/')}/scene0.png")
    if not overwrite:
        raise StoreError(f"{path} exists; pass overwrite=True (CLI: --overwrite) to replace it "
                         f"(only a figure bigkern drew is replaced), or choose another path")
    if not is_bigkern_png(loc):
        raise StoreError(f"{path} exists and was not drawn by bigkern (it has no PNG text "
                         f"chunk 'Software: {SOFTWARE_PREFIX}…'): refusing to replace it, even "
                         f"with --overwrite; choose another path or remove it yourself")
    return loc


def write_png(fig: Any, path: PathOrURL | Location, *, overwrite: bool = False,
              storage_options: StorageOptions = None, dpi: int = 90) -> Location:
    """Save a matplotlib figure as bigkern's PNG at ``path``, safely.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure.
    path : str, Path or URL
        Where it goes; must end in ``.png``.
    overwrite : bool
        Replace an existing PNG that bigkern drew (never anything else).
    storage_options : dict, optional
        fsspec options for a URL.
    dpi : int
        Resolution.

    Returns
    -------
    Location
        Where the figure was written (exactly ``path``).

    Raises
    ------
    ValueError, StoreError
        As :func:`check_figure_output`.
    """
    from bigkern.version import __version__

    loc = check_figure_output(path, overwrite=overwrite, storage_options=storage_options)
    options = {"format": "png", "dpi": dpi,
               "metadata": {"Software": f"{SOFTWARE_PREFIX}{__version__}"}}
    if not loc.local:  # one object, put whole: atomic on an object store
        buffer = io.BytesIO()
        fig.savefig(buffer, **options)
        loc.fs.pipe_file(loc.path, buffer.getvalue())
        return loc
    staged = loc.local_path.with_name(f".{loc.name}.bigkern-partial-{uuid.uuid4().hex[:12]}")
    try:
        fig.savefig(staged, **options)
        os.replace(staged, loc.local_path)
    finally:
        # the hidden sibling this call just named with a fresh random tag: ours alone
        staged.unlink(missing_ok=True)
    return loc
