"""What a granule is, from its name and first bytes: zarr, netCDF/HDF5, GeoTIFF or a reference.

Satellite data come as granules in several formats; bigkern reads each with the
library that keeps it best (:mod:`bigkern.scenes.granules`). This module only tells
them apart and expands the paths a user gives (a list, a glob, a URL) — without
importing xarray, zarr or any format library, so that the command line refuses
a file it cannot read in well under a second.

=============  ==========================================  =========================
format         recognised by                               read with
=============  ==========================================  =========================
``zarr``       a directory (or prefix) with ``zarr.json``  zarr (checksums checked)
               or ``.zgroup``; a ``.zarr`` suffix
``netcdf``     the HDF5 signature (netCDF4 and plain        h5netcdf (``formats``
               HDF5), or netCDF classic's ``CDF``           extra); SciPy for classic
``geotiff``    the TIFF signature (GeoTIFF, COG, BigTIFF)   rioxarray (``formats``)
``reference``  a JSON file of kerchunk/VirtualiZarr         zarr over fsspec's
               references (``"refs"``)                      reference filesystem
=============  ==========================================  =========================

HDF4 files (HDF-EOS2: MISR's and older MODIS granules) are recognised and refused
with what to do: no maintained Python library reads them lazily.
"""

from __future__ import annotations

import glob
import json
import os
from collections.abc import Sequence

from bigkern.errors import StoreError
from bigkern.scenes.dims import VariableInfo
from bigkern.store.urls import Location, PathOrURL, StorageOptions, is_url, location

__all__ = ["GRANULE_FORMATS", "expand_paths", "granule_format", "is_pattern",
           "netcdf_variables"]

#: The formats :func:`granule_format` tells apart.
GRANULE_FORMATS = ("zarr", "netcdf", "geotiff", "reference")

_SUFFIXES = {
    ".zarr": "zarr",
    ".nc": "netcdf", ".nc4": "netcdf", ".cdf": "netcdf", ".h5": "netcdf", ".hdf5": "netcdf",
    ".he5": "netcdf", ".h5nc": "netcdf",
    ".tif": "geotiff", ".tiff": "geotiff", ".gtiff": "geotiff",
    ".json": "reference",
}

_HDF5 = b"\x89HDF\r\n\x1a\n"
_HDF4 = b"\x0e\x03\x13\x01"
_SIGNATURES = (
    (_HDF5, "netcdf"),
    (b"CDF\x01", "netcdf"), (b"CDF\x02", "netcdf"), (b"CDF\x05", "netcdf"),
    (b"II*\x00", "geotiff"), (b"MM\x00*", "geotiff"),  # TIFF, little- and big-endian
    (b"II+\x00", "geotiff"), (b"MM\x00+", "geotiff"),  # BigTIFF
)

_READS = ("bigkern reads zarr stores, netCDF4/HDF5 files (.nc, .h5), GeoTIFF/COG files "
          "(.tif) and kerchunk/VirtualiZarr reference files (.json)")


def _head(loc: Location, n: int = 1024) -> bytes:
    with loc.open("rb") as f:
        return bytes(f.read(n))


def _from_content(head: bytes) -> str | None:
    for signature, fmt in _SIGNATURES:
        if head.startswith(signature):
            return fmt
    if _HDF5 in head[:1024] and head.find(_HDF5) % 512 == 0:  # HDF5 after a user block
        return "netcdf"
    text = head.lstrip()
    if text.startswith(b"{") and (b'"refs"' in head or b'"version"' in head
                                  or b'.zgroup"' in head or b'zarr.json"' in head):
        return "reference"
    return None


def granule_format(path: PathOrURL | Location, storage_options: StorageOptions = None) -> str:
    """The format of the granule at ``path``: one of :data:`GRANULE_FORMATS`.

    A directory is a zarr store when it holds zarr metadata; a file is known by
    its first bytes (the HDF5, netCDF classic and TIFF signatures; a JSON
    object of references), its suffix deciding only when the content says
    nothing.

    Parameters
    ----------
    path : str, Path, URL or Location
        A local path or an fsspec URL.
    storage_options : mapping, optional
        fsspec options for a URL.

    Returns
    -------
    str

    Raises
    ------
    StoreError
        Nothing is at ``path``; it is an HDF4 file; or neither its content nor
        its suffix is a format bigkern reads. The message says what to do.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "scene.tif").write_bytes(b"II*\\x00" + bytes(60))
    >>> granule_format(folder / "scene.tif")
    'geotiff'
    >>> _ = (folder / "notes.xyz").write_text("hello")
    >>> granule_format(folder / "notes.xyz")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    bigkern.errors.StoreError: ...notes.xyz is not a format bigkern reads (suffix .xyz, ...
    """
    loc = location(path, storage_options)
    if not loc.exists():
        raise StoreError(f"no scene store at {path}: the path does not exist")
    if loc.isdir():
        for marker in ("zarr.json", ".zgroup", ".zattrs"):
            if loc.joinpath(marker).exists():
                return "zarr"
        if loc.suffix == ".zarr":
            return "zarr"  # opening it says what is wrong with it
        raise StoreError(f"{path} is a directory but not a zarr store (no zarr.json or "
                         f".zgroup): give the granule files in it (a glob such as "
                         f"'{os.path.join(str(path), '*.nc')}' or a list); {_READS}")
    head = _head(loc)
    if head.startswith(_HDF4):
        raise StoreError(
            f"{path} is an HDF4 file (HDF-EOS2, as MISR's and older MODIS granules): no "
            f"maintained library reads HDF4 lazily; convert it to netCDF4 first (e.g. "
            f"h4toh5, or NASA's HDF-EOS to netCDF converter) or open it in Python yourself "
            f"(pyhdf, satpy) and pass the Dataset to bigkern.write_scenes")
    found = _from_content(head)
    if found is not None:
        return found
    by_suffix = _SUFFIXES.get(loc.suffix.lower())
    if by_suffix in ("zarr", None) or by_suffix == "reference":
        what = "an empty file" if not head else f"its first bytes are {head[:8]!r}"
        raise StoreError(f"{path} is not a format bigkern reads (suffix "
                         f"{loc.suffix or 'none'}, {what}): {_READS}; for another format, "
                         f"open it with xarray and write it with bigkern.write_scenes")
    raise StoreError(f"{path} has the suffix {loc.suffix} but is not a {by_suffix} file "
                     f"(its first bytes are {head[:8]!r}): it may be truncated or mislabelled")


def is_pattern(text: str) -> bool:
    """Whether ``text`` is a glob pattern (``*``, ``?`` or ``[``)."""
    return any(c in text for c in "*?[")


def expand_paths(paths: PathOrURL | Sequence[PathOrURL],
                 storage_options: StorageOptions = None) -> list[str]:
    """The granules ``paths`` names: each given path, and every match of a glob, sorted.

    Parameters
    ----------
    paths : str, Path or URL, or a sequence of them
        Paths, fsspec URLs, or glob patterns of either (``granules/*.nc``,
        ``s3://bucket/2013/*.tif``).
    storage_options : mapping, optional
        fsspec options for URLs.

    Returns
    -------
    list of str
        Each path as given; a pattern's matches in sorted order (URLs keep
        their protocol).

    Raises
    ------
    StoreError
        A pattern that matches nothing, or no path at all.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> for name in ("b.nc", "a.nc", "c.txt"):
    ...     _ = (folder / name).write_bytes(b"")
    >>> [pathlib.Path(p).name for p in expand_paths(str(folder / "*.nc"))]
    ['a.nc', 'b.nc']
    """
    given = [paths] if isinstance(paths, (str, os.PathLike, Location)) else list(paths)
    out: list[str] = []
    for item in given:
        text = str(item)
        if not is_pattern(text):
            out.append(text)
            continue
        if is_url(text):
            loc = location(text, storage_options)
            matches = sorted(loc.fs.glob(loc.path))
            out.extend(f"{loc.protocol}://{m}" for m in matches)
        else:
            matches = sorted(glob.glob(os.path.expanduser(text)))
            out.extend(matches)
        if not matches:
            raise StoreError(f"no file matches {text}")
    if not out:
        raise StoreError("no scene store or granule file given")
    return out


def reference_target(loc: Location) -> dict[str, object]:
    """The parsed JSON of a kerchunk/VirtualiZarr reference file (for its checks and reader)."""
    try:
        with loc.open("rb") as f:
            refs = json.load(f)
    except (OSError, ValueError) as err:
        raise StoreError(f"{loc.url} is not a readable reference file (JSON): {err}") from err
    if not isinstance(refs, dict):
        raise StoreError(f"{loc.url} is not a reference file: its JSON is not an object")
    return refs


def netcdf_variables(path: PathOrURL | Location,
                     storage_options: StorageOptions = None) -> dict[str, VariableInfo] | None:
    """The variables of a local netCDF4/HDF5 file as dim finding reads them, from metadata.

    Read with h5netcdf alone (no xarray), so that the command line can refuse a
    file whose dims cannot be found before it loads the rest. None for a file
    this cannot describe (a URL, netCDF classic, h5netcdf absent, unreadable):
    opening it then says what is wrong.
    """
    loc = location(path, storage_options)
    if not loc.local:
        return None
    try:
        import h5netcdf

        with h5netcdf.File(loc.path, "r", phony_dims="sort") as f:
            found = {name: (tuple(map(str, v.dimensions)), dict(v.attrs), v.dtype.kind)
                     for name, v in f.variables.items()}
    except Exception:  # not HDF5, h5netcdf missing, or unreadable: opening says which
        return None
    listed = {word for _, attrs, _ in found.values()
              for word in str(attrs.get("coordinates", "")).split()}
    return {name: VariableInfo(dims, attrs, kind, name in dims or name in listed)
            for name, (dims, attrs, kind) in found.items()}
