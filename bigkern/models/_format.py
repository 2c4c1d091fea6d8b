"""Model files: the format a family writes, the bigkern that wrote it, the check on load.

Every model Dataset (and so every zarr or netCDF model file) carries
``bigkern_format`` — the layout of its family, raised when a layout changes in
a way older readers cannot follow — and ``bigkern_version``, the version of
bigkern that wrote it. A file of a newer format than this bigkern reads is an
error naming both versions, never a half-understood model.
"""

from __future__ import annotations

import json
from typing import Any

import xarray as xr

from bigkern.errors import StoreError
from bigkern.kernels import KERNELS, Kernel
from bigkern.version import __version__

__all__ = ["check_format", "check_layout", "format_attrs", "saved_kernel", "saved_params"]

FORMAT_ATTR = "bigkern_format"
VERSION_ATTR = "bigkern_version"


def format_attrs(fmt: int) -> dict[str, Any]:
    """The attrs that say how a model Dataset was written: its format and this bigkern's version."""
    return {FORMAT_ATTR: int(fmt), VERSION_ATTR: __version__}


def check_format(ds: xr.Dataset, known: int) -> int:
    """The format of ``ds``; raise when it is newer than ``known`` (what this bigkern reads).

    Raises
    ------
    StoreError
        (a ``ValueError``) naming the bigkern and the format that wrote the file
        and this bigkern's version and format.
    """
    fmt = int(ds.attrs.get(FORMAT_ATTR, 0))
    if fmt > known:
        written = ds.attrs.get(VERSION_ATTR)
        by = f"bigkern {written}" if written else "a bigkern that did not record its version"
        raise StoreError(
            f"the {ds.attrs.get('model', 'model')} file was saved by a newer bigkern ({by}, "
            f"model format {fmt}); this is bigkern {__version__}, which reads model formats up "
            f"to {known}: upgrade bigkern to load it")
    return fmt


def check_layout(ds: xr.Dataset, current: int, earlier: str) -> None:
    """Refuse a model file of another layout than ``current``: a newer one (as
    :func:`check_format`) or an earlier one, saying what it lacked (``earlier``) and to refit.

    Raises
    ------
    StoreError
        Naming the model, the file's format and this bigkern's.
    """
    fmt = check_format(ds, current)
    if fmt < current:
        raise StoreError(
            f"the {ds.attrs.get('model', 'model')} file has the layout of an earlier bigkern "
            f"(model format {fmt}; {earlier}); this bigkern reads format {current}: refit the "
            f"model and save it again")


def saved_params(ds: xr.Dataset, cls: type, decode: Any = None) -> dict[str, Any]:
    """The constructor parameters of ``cls`` a model Dataset's ``params_json`` records.

    A parameter ``cls`` does not take is an error, not dropped: a renamed parameter
    (a model written by another bigkern) would otherwise come back at its default and
    the model would predict with it, e.g. a Gaussian width.

    Raises
    ------
    ValueError
        Naming the unknown parameters, the bigkern that wrote the file and this one.
    """
    params = json.loads(ds.attrs["params_json"])
    valid = cls().get_params()
    unknown = sorted(k for k in params if k not in valid)
    if unknown:
        raise ValueError(
            f"it records parameters {unknown} that {cls.__name__} of bigkern {__version__} "
            f"does not take (written by bigkern {ds.attrs.get(VERSION_ATTR, 'unknown')}; "
            f"CHANGELOG.md lists renamed parameters): refit the model with this bigkern")
    return {k: (decode(v) if decode else v) for k, v in params.items()}


def saved_kernel(kernel: Any) -> str:
    """The name a model file records for a ``kernel=`` value (a name, a class or an instance).

    Raises
    ------
    ValueError
        For a kernel of one's own that :data:`bigkern.kernels.KERNELS` does not name: a
        file could not be read back without it.

    Examples
    --------
    >>> from bigkern.kernels import Laplacian
    >>> saved_kernel("matern32"), saved_kernel(Laplacian), saved_kernel(Laplacian(2.0))
    ('matern32', 'laplacian', 'laplacian')
    """
    name = kernel if isinstance(kernel, str) else getattr(kernel, "name", "")
    is_kernel = isinstance(kernel, Kernel) or (isinstance(kernel, type)
                                               and issubclass(kernel, Kernel))
    if name in KERNELS and (isinstance(kernel, str) or is_kernel):
        return name
    raise ValueError(f"a model of the kernel {kernel!r} cannot be saved: a model file names "
                     f"its kernel, and bigkern.kernels.KERNELS does not know this one (add it "
                     f"there, under its name, to save and load such models)")
