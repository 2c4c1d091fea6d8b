"""Paths and fsspec URLs in one type: where a store, model or text file lives.

Every reader and writer in :mod:`bigkern.io` takes a local path (``str`` or
:class:`~pathlib.Path`) or an fsspec URL (``s3://bucket/x.zarr``,
``gs://…``, ``memory://x.zarr``, ``file:///tmp/x.zarr``) and turns it into a
:class:`Location` here, once:

* a local path — or a ``file://``/``local://`` URL, which is turned into one —
  stays a local path, handled by :mod:`pathlib`/:mod:`os` exactly as before
  (atomic renames, symbolic-link checks);
* anything else becomes an fsspec filesystem plus a path on it, and a
  :class:`zarr.storage.FsspecStore` for zarr. Nothing here ever turns a URL
  into a local directory.

Storage options (credentials, ``endpoint_url`` …) are the ``storage_options=``
given, over fsspec's configuration for the protocol (``fsspec.config.conf``,
which fsspec fills from ``FSSPEC_<PROTOCOL>_<OPTION>`` environment variables
such as ``FSSPEC_S3_ENDPOINT_URL``). They are resolved in the process that
builds a computation and carried with its tasks, so workers started without
that configuration still reach the store. Options given for a local path are
ignored.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, TypeAlias

__all__ = ["Location", "PathOrURL", "StorageOptions", "is_url", "location"]

PathOrURL: TypeAlias = "str | os.PathLike[str]"
StorageOptions: TypeAlias = "Mapping[str, Any] | None"

_LOCAL_PROTOCOLS = ("file", "local")


def _protocol(text: str) -> str | None:
    """The URL scheme of ``text`` (the last of a chained ``a::b://`` URL), or None."""
    head = text.rsplit("::", 1)[-1]
    scheme, sep, _ = head.partition("://")
    return scheme.lower() if sep and scheme else None


def is_url(path: Any) -> bool:
    """Whether ``path`` is a non-local fsspec URL (``s3://``, ``memory://`` …).

    ``file://`` and ``local://`` URLs and plain paths are local: False.
    """
    if isinstance(path, Location):
        return not path.local
    if not isinstance(path, str):
        return False
    if "::" in path:
        return True  # chained: refused by location(), but never a local path
    protocol = _protocol(path)
    return protocol is not None and protocol not in _LOCAL_PROTOCOLS


@dataclass(frozen=True)
class Location:
    """A local path or a path on an fsspec filesystem.

    Build one with :func:`location`. ``url`` is what messages show (the local
    path as given, or ``protocol://path``); ``path`` is the filesystem's own
    path (no protocol); ``storage_options`` are the options the filesystem is
    made with (empty for local paths).
    """

    url: str
    path: str
    protocol: str
    storage_options: dict[str, Any] = field(default_factory=dict)

    @property
    def local(self) -> bool:
        """True for a local path (then :attr:`local_path` is the :class:`~pathlib.Path`)."""
        return self.protocol == "file"

    @property
    def local_path(self) -> Path:
        """The local :class:`~pathlib.Path`; ValueError for a URL."""
        if not self.local:
            raise ValueError(f"{self.url} is a URL, not a local path")
        return Path(self.path)

    @cached_property
    def fs(self) -> Any:
        """The fsspec filesystem (``LocalFileSystem`` for local paths)."""
        import fsspec

        if self.local:
            return fsspec.filesystem("file")
        fs, _ = fsspec.url_to_fs(self.url, **self.storage_options)
        return fs

    def __str__(self) -> str:
        return self.url

    def __fspath__(self) -> str:
        if not self.local:
            raise TypeError(f"{self.url} is a URL, not a local path")
        return self.path

    @property
    def name(self) -> str:
        """The last component of the path (``x.zarr``)."""
        return posixpath.basename(self.path.rstrip("/")) if not self.local \
            else Path(self.path).name

    @property
    def suffix(self) -> str:
        """The file suffix of :attr:`name` (``.nc``, ``.zarr``, or ``""``)."""
        return posixpath.splitext(self.name)[1]

    def _with_path(self, path: str) -> Location:
        if self.local:
            return Location(path, path, "file")
        return Location(f"{self.protocol}://{path}", path, self.protocol, self.storage_options)

    def joinpath(self, *parts: str) -> Location:
        """The location ``parts`` below this one."""
        if self.local:
            return self._with_path(str(Path(self.path).joinpath(*parts)))
        return self._with_path(posixpath.join(self.path.rstrip("/"), *parts))

    def with_name(self, name: str) -> Location:
        """A sibling of this location, named ``name``."""
        if self.local:
            return self._with_path(str(Path(self.path).with_name(name)))
        parent = posixpath.dirname(self.path.rstrip("/"))
        return self._with_path(posixpath.join(parent, name) if parent else name)

    @property
    def parent(self) -> Location:
        """The directory (or object prefix) holding this location."""
        if self.local:
            return self._with_path(os.path.dirname(self.path.rstrip("/")) or "/")
        return self._with_path(posixpath.dirname(self.path.rstrip("/")))

    def refresh(self) -> None:
        """Forget cached listings, so that existence checks see other writers' changes."""
        if not self.local:
            self.fs.invalidate_cache(self.path)
            parent = posixpath.dirname(self.path.rstrip("/"))
            if parent:
                self.fs.invalidate_cache(parent)

    def exists(self) -> bool:
        """Whether anything (a file, a directory or a prefix with objects) is there."""
        if self.local:
            return os.path.lexists(self.path)
        self.refresh()
        return bool(self.fs.exists(self.path))

    def isdir(self) -> bool:
        """Whether a directory (or an object-store prefix holding objects) is there."""
        if self.local:
            return Path(self.path).is_dir()
        return bool(self.fs.isdir(self.path))

    def isfile(self) -> bool:
        """Whether a single file (object) is there."""
        if self.local:
            return Path(self.path).is_file()
        return bool(self.fs.isfile(self.path))

    def zarr_store(self, *, read_only: bool = False) -> Any:
        """What zarr and xarray open: the local path string, or a ``FsspecStore`` for a URL."""
        if self.local:
            return self.path
        from zarr.storage import FsspecStore

        return FsspecStore.from_url(self.url, storage_options=dict(self.storage_options),
                                    read_only=read_only)

    def open(self, mode: str = "rb", **kwargs: Any) -> Any:
        """Open the file (``open`` for local paths, ``fs.open`` for URLs)."""
        if self.local:
            return open(self.path, mode, **kwargs)  # the caller closes it
        return self.fs.open(self.path, mode, **kwargs)


def _effective_options(protocol: str, given: StorageOptions) -> dict[str, Any]:
    """fsspec's configured defaults for ``protocol`` overlaid with the options given."""
    import fsspec.config

    return {**dict(fsspec.config.conf.get(protocol, {})), **dict(given or {})}


def location(path: PathOrURL | Location, storage_options: StorageOptions = None) -> Location:
    """Resolve a local path or fsspec URL (with ``storage_options``) to a :class:`Location`.

    Parameters
    ----------
    path : str, os.PathLike or Location
        A local path, ``~`` expanded; a ``file://``/``local://`` URL (taken
        as the local path it names); or any other fsspec URL.
    storage_options : mapping, optional
        Options of the fsspec filesystem (``key``, ``secret``,
        ``endpoint_url`` …), over ``fsspec.config.conf[protocol]``. Ignored
        for local paths.

    Returns
    -------
    Location

    Raises
    ------
    ValueError
        An empty path, or a URL whose protocol fsspec does not know (naming
        the extra that provides it, e.g. ``pip install "bigkern[s3]"``).
    """
    if isinstance(path, Location):
        if storage_options and not path.local:
            return Location(path.url, path.path, path.protocol,
                            {**path.storage_options, **dict(storage_options)})
        return path
    text = os.fspath(path)
    if not text:
        raise ValueError("an empty path was given for a store or file")
    if not is_url(text):
        protocol = _protocol(text)
        if protocol in _LOCAL_PROTOCOLS:
            text = text.split("://", 1)[1]
        text = os.path.expanduser(text)
        # made absolute here, in the process that was given it: a relative path must name
        # the same file in every task, whatever the working directory of the worker
        return Location(text, os.path.abspath(text), "file")
    import fsspec

    if "::" in text:
        raise ValueError(f"{text}: chained fsspec URLs (a::b://…) are not supported; give the "
                         f"storage URL itself")
    protocol = _protocol(text) or ""
    try:
        cls = fsspec.get_filesystem_class(protocol)
    except (ImportError, ValueError) as err:
        extra = {"s3": "s3", "s3a": "s3", "gs": "gcs", "gcs": "gcs"}.get(protocol)
        hint = f' (pip install "bigkern[{extra}]")' if extra else ""
        raise ValueError(f"cannot reach {text}: no fsspec filesystem for {protocol!r}"
                         f"{hint}: {err}") from err
    return Location(text, cls._strip_protocol(text), protocol,
                    _effective_options(protocol, storage_options))
