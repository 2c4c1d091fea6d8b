"""Scene dims by another name: a store's ``(time, y, x)`` worked on as bigkern's ``(scene, y, x)``.

bigkern works in its own dims, ``(scene, y, x)``. A store whose dims have other
names is used by naming the mapping from bigkern's dims to its own
(``{"scene": "time"}``): :func:`to_scene_dims` renames on the way in and records
the mapping on the Dataset (:data:`DIMS_ATTR`), :func:`from_scene_dims` gives
an output the store's names back.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bigkern.errors import StoreError

if TYPE_CHECKING:  # xarray only where a Dataset is renamed: the CLI's checks use the rest
    import xarray as xr

__all__ = ["DIMS_ATTR", "FOUND_ATTR", "SCENE_DIMS", "DimMapping", "VariableInfo", "describe",
           "find_dims", "find_scene_dims", "from_scene_dims", "scene_dims", "to_scene_dims"]

SCENE_DIMS = ("scene", "y", "x")

#: Root attribute of a Dataset opened with a dim mapping: the mapping from
#: bigkern's dims to the store's, as JSON (``{"scene": "time"}``), so that outputs
#: get the store's names back (:func:`from_scene_dims`). Never written to a store.
DIMS_ATTR = "bigkern_dims"

#: Root attribute of a Dataset whose dims :func:`find_scene_dims` found: for each of
#: bigkern's dims, which of the source's and why (JSON), for the command line to print.
#: Never written to a store.
FOUND_ATTR = "bigkern_dims_found"

DimMapping = Mapping[str, str] | None



def _dim_mapping(dims: DimMapping, where: str) -> dict[str, str]:
    """``dims`` checked: keys among bigkern's dims, distinct string values; identities left out."""
    if dims is None:
        return {}
    if not isinstance(dims, Mapping):
        raise TypeError(f"dims must be a mapping from bigkern's dims {SCENE_DIMS} to the dims "
                        f"of {where}, e.g. {{'scene': 'time'}}; got {dims!r}")
    unknown = [k for k in dims if k not in SCENE_DIMS]
    if unknown:
        raise ValueError(f"dims maps {unknown[0]!r}, which is not one of bigkern's dims "
                         f"{SCENE_DIMS}: its keys are bigkern's dims, its values the dims of "
                         f"{where}, e.g. {{'scene': 'time'}}")
    if not all(isinstance(v, str) and v for v in dims.values()):
        raise TypeError(f"dims must map to dimension names (strings); got {dict(dims)!r}")
    if len(set(dims.values())) != len(dims):
        raise ValueError(f"dims maps two of bigkern's dims to one dim of {where}: {dict(dims)!r}")
    return {k: v for k, v in dims.items() if k != v}


def scene_dims(ds: xr.Dataset) -> dict[str, str]:
    """The dim mapping recorded on ``ds`` by :func:`to_scene_dims` (``{}`` when none).

    Parameters
    ----------
    ds : xarray.Dataset

    Returns
    -------
    dict of str to str
        bigkern's dim → the source's dim, for the dims that were renamed.

    Examples
    --------
    >>> import xarray as xr
    >>> ds = xr.Dataset({"NDAI": (("time", "y", "x"), [[[0.5]]])})
    >>> scene_dims(to_scene_dims(ds, {"scene": "time"}))
    {'scene': 'time'}
    """
    raw = ds.attrs.get(DIMS_ATTR)
    if not raw:
        return {}
    try:
        found = json.loads(raw) if isinstance(raw, str) else dict(raw)
    except (ValueError, TypeError) as err:
        raise StoreError(f"the dataset's {DIMS_ATTR} attribute {raw!r} is not a dim "
                         f"mapping: {err}") from err
    return _dim_mapping(found, "the dataset")


def to_scene_dims(ds: xr.Dataset, dims: DimMapping = None, *,
                  where: str = "the scene dataset") -> xr.Dataset:
    """``ds`` with its dims renamed to bigkern's ``(scene, y, x)``, the mapping recorded.

    Dimension coordinates are renamed with their dims (a ``time`` coordinate
    becomes ``scene``, values and attributes kept); the mapping is recorded in
    the attribute :data:`DIMS_ATTR`, which :func:`from_scene_dims` (and so
    every output bigkern writes) undoes.

    Parameters
    ----------
    ds : xarray.Dataset
        The source, in its own dims.
    dims : mapping of str to str, optional
        bigkern's dim → the dim of ``ds`` that plays its part, e.g.
        ``{"scene": "time"}`` or ``{"scene": "time", "y": "row", "x": "col"}``.
        None or ``{}``: nothing to rename.
    where : str
        What ``ds`` is, for messages (a store's path).

    Returns
    -------
    xarray.Dataset
        Lazy like ``ds``: only names change.

    Raises
    ------
    StoreError
        ``ds`` has no dim of that name, or already has a variable or dim named
        like one of bigkern's dims it would be renamed to.
    ValueError, TypeError
        A mapping that is not one from bigkern's dims to distinct names.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> ds = xr.Dataset({"NDAI": (("time", "y", "x"), np.zeros((2, 3, 4)))},
    ...                 coords={"time": np.array(["2013-05-01", "2013-05-17"],
    ...                                          dtype="datetime64[ns]")})
    >>> scenes = to_scene_dims(ds, {"scene": "time"})
    >>> scenes["NDAI"].dims, str(scenes["scene"].values[1])[:10]
    (('scene', 'y', 'x'), '2013-05-17')
    """
    mapping = _dim_mapping(dims, where)
    if not mapping:
        return ds
    recorded = scene_dims(ds)
    if recorded == mapping and all(k in ds.dims for k in mapping):
        return ds  # renamed already (opened with this mapping)
    for ours, theirs in mapping.items():
        if theirs not in ds.dims:
            raise StoreError(f"{where} has no dimension {theirs!r} (dims maps {ours!r} to it); "
                             f"its dimensions are {sorted(map(str, ds.dims))}")
    renamed = set(mapping.values())
    for ours in mapping:
        if (ours in ds.dims or ours in ds.variables) and ours not in renamed:
            raise StoreError(f"{where} has a dimension or variable named {ours!r} already: "
                             f"it cannot also rename {mapping[ours]!r} to {ours!r}; rename one "
                             f"of them first (xarray's Dataset.rename)")
    out = ds.rename({theirs: ours for ours, theirs in mapping.items()})
    out.attrs = {**ds.attrs, DIMS_ATTR: json.dumps({**recorded, **mapping}, sort_keys=True)}
    return out


def from_scene_dims(ds: xr.Dataset, dims: DimMapping = None) -> xr.Dataset:
    """Undo :func:`to_scene_dims`: bigkern's dims get the source's names back.

    Parameters
    ----------
    ds : xarray.Dataset
        Data in bigkern's dims.
    dims : mapping of str to str, optional
        The mapping to undo; by default the one recorded on ``ds``.

    Returns
    -------
    xarray.Dataset
        Renamed, without the :data:`DIMS_ATTR` record.

    Examples
    --------
    >>> import xarray as xr
    >>> ds = xr.Dataset({"NDAI": (("time", "y", "x"), [[[0.5]]])})
    >>> from_scene_dims(to_scene_dims(ds, {"scene": "time"}))["NDAI"].dims
    ('time', 'y', 'x')
    """
    mapping = _dim_mapping(dims, "the dataset") if dims is not None else scene_dims(ds)
    names = {ours: theirs for ours, theirs in mapping.items()
             if ours in ds.dims or ours in ds.variables}
    out = ds.rename(names) if names else ds.copy(deep=False)
    out.attrs = {k: v for k, v in ds.attrs.items() if k not in (DIMS_ATTR, FOUND_ATTR)}
    return out


# CF's ways of saying what a coordinate is: its axis, its standard_name, its units
_AXES = {"T": "scene", "Y": "y", "X": "x"}
_STANDARD_NAMES = {
    "time": "scene",
    "latitude": "y", "grid_latitude": "y", "projection_y_coordinate": "y",
    "longitude": "x", "grid_longitude": "x", "projection_x_coordinate": "x",
}
_UNITS = {"degrees_north": "y", "degree_north": "y", "degrees_n": "y",
          "degrees_east": "x", "degree_east": "x", "degrees_e": "x"}
# the names granules commonly give their dims, when no attribute says
_NAMES = {
    "scene": "scene", "time": "scene", "t": "scene", "granule": "scene", "orbit": "scene",
    "y": "y", "lat": "y", "latitude": "y", "row": "y", "rows": "y", "line": "y",
    "along_track": "y", "nlat": "y",
    "x": "x", "lon": "x", "longitude": "x", "col": "x", "cols": "x", "column": "x",
    "sample": "x", "across_track": "x", "nlon": "x",
}


@dataclass(frozen=True)
class VariableInfo:
    """What dim finding needs of one variable: its dims, attributes, dtype kind, and role."""

    dims: tuple[str, ...]
    attrs: Mapping[str, Any] = field(default_factory=dict)
    kind: str = "f"
    coordinate: bool = False


def describe(ds: xr.Dataset) -> dict[str, VariableInfo]:
    """The :class:`VariableInfo` of every variable of ``ds`` (what :func:`find_dims` reads)."""
    return {str(k): VariableInfo(tuple(map(str, v.dims)), dict(v.attrs), v.dtype.kind,
                                 k in ds.coords)
            for k, v in ds.variables.items()}


def _role_of(var: VariableInfo) -> tuple[str, str] | None:
    """The part a coordinate variable plays by its CF attributes, and which attribute says."""
    attrs = var.attrs
    axis = str(attrs.get("axis", "")).upper()
    if axis in _AXES:
        return _AXES[axis], f"its CF axis {axis}"
    name = str(attrs.get("standard_name", "")).lower()
    if name in _STANDARD_NAMES:
        return _STANDARD_NAMES[name], f"its standard_name {name}"
    units = str(attrs.get("units", "")).lower()
    if units in _UNITS:
        return _UNITS[units], f"its units {units}"
    if " since " in units:  # CF time, not yet decoded: "days since 2013-05-01"
        return "scene", f"its units {units}"
    if var.kind == "M":
        return "scene", "its datetime values"
    return None


def _feature_dims(variables: Mapping[str, VariableInfo]) -> tuple[str, ...]:
    """The dims of the gridded variables (the most common 2- or 3-D dims)."""
    counts: dict[tuple[str, ...], int] = {}
    for var in variables.values():
        if not var.coordinate and len(var.dims) in (2, 3):
            counts[var.dims] = counts.get(var.dims, 0) + 1
    if not counts:
        return ()
    return max(counts, key=lambda k: (counts[k], len(k)))


def find_scene_dims(ds: xr.Dataset, given: DimMapping = None, *,
                    where: str = "the scene dataset") -> tuple[dict[str, str], dict[str, str]]:
    """Which of ``ds``'s dims play bigkern's ``scene``, ``y`` and ``x``, as the data say.

    The dims of the gridded variables are matched, in this order, by what
    their coordinates declare — CF ``axis`` (``T``, ``Y``, ``X``),
    ``standard_name`` (``time``, ``latitude``/``longitude``,
    ``projection_y/x_coordinate``), ``units`` (``degrees_north``/``_east``),
    datetime values — then by 2-D latitude/longitude coordinates (``lat(row,
    col)``: ``y = row``, ``x = col``), then by common names (``time``,
    ``lat``, ``lon``, ``row``, ``col`` …); with ``y`` and ``x`` found, the one
    dim left is the scene. Dims named in ``given`` win.

    Parameters
    ----------
    ds : xarray.Dataset
        The source, in its own dims.
    given : mapping of str to str, optional
        The part the user named (``--dims``), bigkern's dim → the source's.
    where : str
        What ``ds`` is, for the message.

    Returns
    -------
    mapping : dict of str to str
        bigkern's dim → the source's, for every dim renamed (identities left
        out); a 2-D source has no ``scene`` (one scene, added on opening).
    reasons : dict of str to str
        For each of bigkern's dims found (not given), why.

    Raises
    ------
    StoreError
        The gridded variables' dims cannot all be told apart: one line naming
        them and the ``--dims`` (``dims=``) to pass.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> ds = xr.Dataset({"NDAI": (("time", "lat", "lon"), np.zeros((2, 3, 4)))},
    ...                 coords={"lat": ("lat", np.arange(3.0), {"units": "degrees_north"}),
    ...                         "lon": ("lon", np.arange(4.0), {"standard_name": "longitude"})})
    >>> mapping, reasons = find_scene_dims(ds)
    >>> mapping
    {'scene': 'time', 'y': 'lat', 'x': 'lon'}
    >>> reasons["y"], reasons["scene"]
    ('lat: its units degrees_north', 'time: its name')
    """
    return find_dims(describe(ds), given, where=where)


def find_dims(variables: Mapping[str, VariableInfo], given: DimMapping = None, *,
              where: str = "the scene dataset") -> tuple[dict[str, str], dict[str, str]]:
    """:func:`find_scene_dims` from a description of the variables (metadata alone).

    The command line describes a netCDF file from its HDF5 metadata, without
    xarray, to refuse one whose dims cannot be found at once.

    Examples
    --------
    >>> find_dims({"NDAI": VariableInfo(("t", "row", "col"))})[0]
    {'scene': 't', 'y': 'row', 'x': 'col'}
    """
    mapping = dict(_dim_mapping(given, where)) if given else {}
    mapping.update({k: k for k in SCENE_DIMS if given and k in given and given[k] == k})
    dims = _feature_dims(variables)
    every = {d for v in variables.values() for d in v.dims}
    for ours, theirs in mapping.items():
        if theirs not in every:
            raise StoreError(f"{where} has no dimension {theirs!r} (dims maps {ours!r} to it); "
                             f"its dimensions are {sorted(every)}")
    reasons: dict[str, str] = {}
    if not dims:
        return {k: mapping[k] for k in SCENE_DIMS if k in mapping and mapping[k] != k}, reasons
    free = [d for d in dims if d not in mapping.values()]

    def claim(ours: str, theirs: str, why: str) -> None:
        if ours not in mapping and theirs in free:
            mapping[ours] = theirs
            reasons[ours] = f"{theirs}: {why}"
            free.remove(theirs)

    for dim in list(free):
        coord = variables.get(dim)
        if coord is not None and coord.dims == (dim,):
            role = _role_of(coord)
            if role is not None:
                claim(role[0], dim, role[1])
    for name, coord in variables.items():
        if coord.coordinate and len(coord.dims) == 2 and set(coord.dims) <= set(dims):
            role = _role_of(coord)
            part = role[0] if role else _NAMES.get(str(name).lower()) if str(name).lower() in (
                "lat", "latitude", "lon", "longitude") else None
            if part in ("y", "x"):
                first, second = coord.dims
                claim("y", first, f"the first dim of the 2-D coordinate {name}")
                claim("x", second, f"the second dim of the 2-D coordinate {name}")
    for dim in list(free):
        ours = _NAMES.get(dim.lower())
        if ours is not None:
            claim(ours, dim, "its name")
    if "y" in mapping and "x" in mapping and "scene" not in mapping and len(free) == 1:
        claim("scene", free[0], "the dim left beside y and x")
    needed = 3 if len(dims) == 3 else 2
    found = [k for k in SCENE_DIMS if k in mapping]
    if len(found) < needed or free or (needed == 2 and not {"y", "x"} <= set(found)):
        guess = dict(zip(SCENE_DIMS[-len(dims):], dims, strict=True))
        flags = " ".join(f"--dims {k}={v}" for k, v in guess.items())
        raise StoreError(
            f"{where}: cannot tell which of its dims {dims} are bigkern's scene, y, x (no CF "
            f"axis, standard_name or known name says so for {free or dims}): name them, "
            f"e.g. {flags} (Python: dims={guess})")
    return {k: mapping[k] for k in SCENE_DIMS if k in mapping and mapping[k] != k}, reasons
