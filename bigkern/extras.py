"""The optional parts of bigkern and the packages each needs (its pip extras).

``pip install bigkern`` installs what every run needs: NumPy, SciPy, Dask,
xarray, zarr, scikit-learn, numba. The rest is an extra, imported through
:func:`require`, which says which extra to install when the package is absent:

``plot``
    matplotlib: :func:`bigkern.plot_scene`, ``bigkern predict --png``, the
    demo's figure, :func:`bigkern.plot_nystrom_spectrum`.
``formats``
    h5netcdf and h5py (netCDF4/HDF5 granules in, CF netCDF predictions out),
    rioxarray with rasterio (GeoTIFF/COG in and out, CRS kept), kerchunk
    (reference files: a netCDF read in place as zarr).
``precision``
    python-flint (arb ball arithmetic; mpmath is the slower fallback):
    :class:`bigkern.GaussianRLS` in extended precision.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

from bigkern.errors import MissingExtraError

__all__ = ["EXTRAS", "available", "require"]

#: Each extra and the importable modules (and their distributions) it installs.
EXTRAS: dict[str, dict[str, str]] = {
    "plot": {"matplotlib": "matplotlib"},
    "formats": {"h5netcdf": "h5netcdf", "h5py": "h5py", "rioxarray": "rioxarray",
                "rasterio": "rasterio", "kerchunk": "kerchunk"},
    "precision": {"flint": "python-flint", "mpmath": "mpmath"},
}


def available(module: str) -> bool:
    """Whether ``module`` can be imported (found on the path; not imported)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent missing, or blocked in sys.modules
        return False


def require(module: str, *, extra: str, purpose: str, package: str | None = None) -> ModuleType:
    """Import ``module`` of extra ``extra``, or say how to install it.

    Parameters
    ----------
    module : str
        The module to import (``"matplotlib"``, ``"flint"``).
    extra : str
        The extra that installs it, a key of :data:`EXTRAS`.
    purpose : str
        What needs it, for the message (``"plot_scene"``, ``"--png"``).
    package : str, optional
        The distribution the message names (default: every package of the
        extra, as alternatives: ``python-flint or mpmath``).

    Returns
    -------
    module

    Raises
    ------
    MissingExtraError
        The module is not installed; the message names the extra to install.

    Examples
    --------
    >>> from bigkern.extras import require
    >>> require("json", extra="plot", purpose="an example").__name__
    'json'
    """
    try:
        return importlib.import_module(module)
    except ImportError as err:
        names = package or " or ".join(EXTRAS.get(extra, {}).values()) or module
        raise MissingExtraError(
            f"{purpose} needs {names}, which is not installed: pip install "
            f"'bigkern[{extra}]'") from err
