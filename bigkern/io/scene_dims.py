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

import xarray as xr

from bigkern.errors import StoreError

__all__ = ["DIMS_ATTR", "SCENE_DIMS", "DimMapping", "from_scene_dims", "scene_dims",
           "to_scene_dims"]

SCENE_DIMS = ("scene", "y", "x")

#: Root attribute of a Dataset opened with a dim mapping: the mapping from
#: bigkern's dims to the store's, as JSON (``{"scene": "time"}``), so that outputs
#: get the store's names back (:func:`from_scene_dims`). Never written to a store.
DIMS_ATTR = "bigkern_dims"

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
    out.attrs = {k: v for k, v in ds.attrs.items() if k != DIMS_ATTR}
    return out
