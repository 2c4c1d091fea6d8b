"""Where a scene figure draws its pixels: at their latitudes and longitudes, their
projected coordinates, or as a plain image.

:func:`map_axes` reads what one scene's coordinates say (CF ``standard_name`` and
``units``, or the coordinate's name; a ``spatial_ref`` or ``projection_*`` coordinate for
projected x and y) and gives a :class:`MapAxes`, which draws a (y, x) array there: an
image with its extent for evenly spaced 1-D coordinates, a mesh for 2-D (swath) or
irregular ones, and a tick-less image when the scene has no coordinates. Maps of
latitudes keep their shapes (the aspect of the mean latitude) and a swath across the
date line is drawn on 0–360° longitudes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np
import xarray as xr

__all__ = ["MapAxes", "map_axes"]


# what says a coordinate holds latitudes or longitudes: CF's standard_name and units, its name
_GEO = {"lat": ({"latitude"}, {"degrees_north", "degree_north", "degrees_n"},
                {"lat", "latitude"}),
        "lon": ({"longitude"}, {"degrees_east", "degree_east", "degrees_e"},
                {"lon", "longitude"})}
_METRES = {"m", "metre", "metres", "meter", "meters"}


def _geo_role(name: str, coord: xr.DataArray) -> str | None:
    """``"lat"`` or ``"lon"`` for a coordinate of latitudes or longitudes, else None."""
    standard = str(coord.attrs.get("standard_name", "")).lower()
    units = str(coord.attrs.get("units", "")).lower()
    for role, (standard_names, unit_names, names) in _GEO.items():
        if standard in standard_names or units in unit_names or name.lower() in names:
            return role
    return None


def _axis_label(what: str, coord: xr.DataArray) -> str:
    units = coord.attrs.get("units")
    return f"{what} ({units})" if units else what


def _regular(c: np.ndarray) -> bool:
    """Whether 1-D coordinates are evenly spaced (an image's extent places them exactly)."""
    step = np.diff(c)
    return c.size < 2 or bool(step[0] != 0 and np.allclose(step, step[0], rtol=1e-3, atol=0))


@dataclasses.dataclass(frozen=True)
class MapAxes:
    """Where a scene's pixels are drawn: at their coordinates (1-D or 2-D) or as an image.

    Examples
    --------
    >>> import numpy as np
    >>> import xarray as xr
    >>> one = xr.Dataset(coords={"lat": ("y", [10.0, 10.5, 11.0]),
    ...                          "lon": ("x", [20.0, 20.5]),
    ...                          "y": [0, 1, 2], "x": [0, 1]})
    >>> axes = map_axes(one, "y", "x", {})
    >>> axes.xlabel, axes.ylabel, round(axes.aspect, 3)
    ('longitude', 'latitude', 1.017)
    """

    x: np.ndarray | None = None
    y: np.ndarray | None = None
    xlabel: str = ""
    ylabel: str = ""
    aspect: float | str = "equal"

    def draw(self, ax: Any, values: np.ndarray, **style: Any) -> Any:
        """Draw ``values`` (y, x) on ``ax``; return the image or mesh (for a colour bar)."""
        if self.x is None or self.y is None:  # no coordinates: today's tick-less image
            ax.set_xticks([])
            ax.set_yticks([])
            return ax.imshow(values, interpolation="nearest", **style)
        if self.x.ndim == 1 and _regular(self.x) and _regular(self.y):
            (x0, x1), (y0, y1) = (self._edges(c) for c in (self.x, self.y))
            # the y axis grows upwards: north up for latitudes, whichever way the rows run
            drawn = ax.imshow(values, interpolation="nearest", aspect=self.aspect,
                              origin="lower" if y1 >= y0 else "upper",
                              extent=(x0, x1, min(y0, y1), max(y0, y1)), **style)
        else:  # 2-D (or irregular) coordinates: each pixel where it is
            drawn = ax.pcolormesh(self.x, self.y, values, shading="nearest", **style)
            ax.set_aspect(self.aspect)
        ax.locator_params(nbins=4)
        return drawn

    @staticmethod
    def _edges(c: np.ndarray) -> tuple[float, float]:
        half = (c[-1] - c[0]) / (2 * (c.size - 1)) if c.size > 1 else 0.5
        return float(c[0] - half), float(c[-1] + half)


def _geo_aspect(lat: np.ndarray) -> float | str:
    """Degrees of longitude shrink with latitude: the aspect that keeps a map's shapes."""
    cos = float(np.cos(np.deg2rad(np.nanmean(lat))))
    return 1 / cos if cos > 0.1 else "auto"


def map_axes(one: xr.Dataset, ydim: str, xdim: str, names: Mapping[str, str]) -> MapAxes:
    """The coordinates one scene's maps are drawn at, by what ``one``'s coordinates say.

    ``names`` gives the source's name of a coordinate renamed to one of bigkern's
    dims (``y`` that was ``lat``).
    """
    found: dict[tuple[str, int], tuple[np.ndarray, xr.DataArray]] = {}
    for name, coord in one.coords.items():
        grid = set(map(str, coord.dims))
        if coord.dtype.kind not in "iuf" or not (
                grid == {ydim, xdim} or (coord.ndim == 1 and grid <= {ydim, xdim})):
            continue
        role = _geo_role(names.get(str(name), str(name)), coord)
        if role is not None:
            values = np.asarray((coord.transpose(ydim, xdim) if coord.ndim == 2 else coord)
                                .values, dtype=float)
            found.setdefault((role, coord.ndim), (values, coord))
    for ndim in (2, 1):  # 2-D latitudes and longitudes (a swath), else 1-D ones (a grid)
        if ("lat", ndim) in found and ("lon", ndim) in found:
            (lat, lat_coord), (lon, lon_coord) = found["lat", ndim], found["lon", ndim]
            if not (np.isfinite(lat).all() and np.isfinite(lon).all()):
                continue  # a mesh cannot place pixels without coordinates
            if np.ptp(lon) > 180 and np.ptp(lon % 360) < 180:  # across the date line: 0..360
                lon = lon % 360
            if ndim == 1 and (lat_coord.dims != (ydim,) or lon_coord.dims != (xdim,)):
                continue
            return MapAxes(lon, lat, _axis_label("longitude", lon_coord),
                            _axis_label("latitude", lat_coord), _geo_aspect(lat))
    projected = "spatial_ref" in one.coords or any(
        str(one[d].attrs.get("standard_name", "")).startswith("projection_")
        for d in (ydim, xdim) if d in one.coords)
    if projected and all(d in one.coords and one[d].dims == (d,) and one[d].dtype.kind in "iuf"
                         for d in (ydim, xdim)):
        units = [str(one[d].attrs.get("units", "m")) for d in (xdim, ydim)]
        x_units, y_units = ("m" if u.lower() in _METRES else u for u in units)
        return MapAxes(np.asarray(one[xdim].values, dtype=float),
                        np.asarray(one[ydim].values, dtype=float),
                        f"x ({x_units})", f"y ({y_units})")
    return MapAxes()
