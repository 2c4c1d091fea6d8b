"""Scene stores: open and validate (writing them: :mod:`bigkern.scenes.writing`).

A scene store is an :class:`xarray.Dataset` in zarr with dims
``(scene, y, x)``: one float variable per feature (``NDAI``, ``SD``,
``CORR``, radiances …) and an integer ``label`` (1 cloud, -1 clear,
0 unlabelled). Everything here is lazy except the cheap label check.

A store whose dims have other names — ``(time, y, x)``, ``(time, row, col)`` —
is used by naming the mapping from bigkern's dims to its own, e.g.
``open_scenes(path, dims={"scene": "time"})``: bigkern works in its own dims
(:func:`to_scene_dims`) and gives every output the store's names back
(:func:`from_scene_dims`). Non-dimension coordinates (``lat``/``lon``, a time
per scene …) and the dataset's attributes are kept; what bigkern writes gets
the CF attributes ``Conventions`` and a line appended to ``history``
(:func:`cf_attrs`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr

from bigkern import config
from bigkern.errors import StoreError
from bigkern.scenes.dims import (
    FOUND_ATTR,
    SCENE_DIMS,
    DimMapping,
    _dim_mapping,
    find_scene_dims,
    scene_dims,
    to_scene_dims,
)
from bigkern.scenes.granule_formats import expand_paths, granule_format, is_pattern
from bigkern.scenes.granules import open_granules
from bigkern.scenes.key_histogram_sources import mark_opened
from bigkern.scenes.labels import LabelClasses, check_label_values
from bigkern.scenes.validity import FillValues, ValidRanges, apply_validity
from bigkern.store.integrity import open_checked
from bigkern.store.limits import ArrayMeta, guided_chunks, planned_read_chunks
from bigkern.store.urls import Location, PathOrURL, StorageOptions, location

__all__ = [
    "default_chunks",
    "open_scenes",
    "validate_scenes",
]



def default_chunks(shape: tuple[int, int, int], itemsize: int = 4) -> dict[str, int]:
    """Chunks of about ``bigkern.chunk_bytes`` per variable: whole scenes, or rows of one scene."""
    target = int(config.get("chunk_bytes"))
    n_scene, ny, nx = shape
    per_scene = max(1, ny * nx * itemsize)
    if per_scene <= target:
        return {"scene": max(1, min(n_scene, target // per_scene)), "y": ny, "x": nx}
    return {"scene": 1, "y": max(1, min(ny, target // max(1, nx * itemsize))), "x": nx}


def open_scenes(
    path: PathOrURL | Location,
    *,
    chunks: dict[str, int] | str | None = None,
    features: Sequence[str] | None = None,
    validate: bool = True,
    fill_values: FillValues = None,
    valid_ranges: ValidRanges = None,
    storage_options: StorageOptions = None,
    dims: DimMapping = None,
) -> xr.Dataset:
    """Open a scene store lazily (dask-backed), with fill and out-of-range values masked.

    Every feature value equal to a fill value or outside the feature's valid
    range becomes NaN (lazily; see :func:`bigkern.scenes.apply_validity`): declared
    CF ``_FillValue``/``missing_value``, ``fill_values``, and the valid range
    from ``valid_ranges``, else the variable's CF ``valid_range``/``valid_min``/
    ``valid_max``, else the ``bigkern.valid_ranges`` setting (defaults for the
    MISR features). Fits leave such rows out and count them per feature.

    Parameters
    ----------
    path : str, Path or URL, a glob, or a list of them
        A zarr store (written by :func:`write_scenes`, ``bigkern ingest`` or
        anyone), or granules as they come: netCDF4/HDF5 or netCDF classic
        files, GeoTIFF/COG files, kerchunk/VirtualiZarr reference files (see
        :mod:`bigkern.scenes.granules`; all but zarr and netCDF classic need the
        ``formats`` extra). Local paths or fsspec URLs
        (``s3://bucket/scenes.zarr``, ``gs://…``, ``memory://…``); a glob
        (``granules/*.nc``) or a list gives several granules: files with a
        scene dim (``time`` …) are concatenated along it, files of one 2-D
        scene each become the scenes (with a ``source_file`` coordinate).
    chunks : dict or "auto", optional
        Dask chunks; by default the store's own zarr chunks, so that each task
        reads whole zarr chunks. Chunks that would make more than ~10⁶ tasks,
        or tasks of fewer than ~10⁶ pixels, are found from the store's
        metadata before anything is read, and are then read in recommended
        chunks of whole zarr chunks, refused, or warned about
        (:class:`~bigkern.cluster.chunking.ChunkWarning`), as the setting
        ``bigkern.chunk_guidance.too_many_tasks`` says (``rechunk``,
        ``error``, ``warn``); chunks given here are never replaced, only
        refused or warned about.
    features : sequence of str, optional
        Feature variables that must be present (checked when ``validate``).
    validate : bool
        Run :func:`validate_scenes` (dims, features, label values).
    fill_values : number, sequence or mapping, optional
        Extra fill values, for every feature or per feature, e.g.
        ``{"NDAI": -9999}``.
    valid_ranges : mapping or False, optional
        Per feature ``(min, max)`` (``None`` = open bound; a feature mapped to
        ``None`` is not range-checked); ``False`` turns range checks off.
    storage_options : mapping, optional
        fsspec options for a URL (credentials, ``endpoint_url`` …; see
        :func:`bigkern.store.urls.location`).
    dims : mapping of str to str, optional
        For a store whose dims are not named ``(scene, y, x)``: bigkern's dim →
        the store's, e.g. ``{"scene": "time"}`` for ``(time, y, x)``. The dims
        not given are found where the data say what they are (CF ``axis``,
        ``standard_name`` or ``units``, 2-D latitude/longitude, common names;
        see :func:`~bigkern.scenes.dims.find_scene_dims`); a store whose dims
        cannot be told apart is refused naming the ``dims`` to pass. The
        Dataset returned is in bigkern's dims (see :func:`to_scene_dims`) and
        remembers the mapping, so that :func:`bigkern.predict_scenes` and
        :func:`write_scenes` give their outputs the store's names back.
        ``chunks`` may name either.

    Returns
    -------
    xarray.Dataset
        Dims ``(scene, y, x)``; the store's coordinates (dimension and others,
        such as ``lat``/``lon``) and attributes (``history`` …).

    Raises
    ------
    StoreError
        The path does not exist, is not a format bigkern reads, or the store is
        empty or malformed; ``dims`` names a dimension the store lacks, or its
        dims cannot be found; granules of different grids; its
        metadata declares sizes beyond the ``bigkern.store_limits`` settings;
        its chunks make too many tasks and
        ``bigkern.chunk_guidance.too_many_tasks`` is ``error``; a chunk read
        is damaged or not where it belongs (see :func:`bigkern.store.open_checked`);
        or ``fill_values``/``valid_ranges`` are nonsense (a feature not in the
        store, a range with min > max ...).
    LabelError
        ``label`` holds a value that is no class (see :mod:`bigkern.scenes.labels`).

    Examples
    --------
    A store whose scenes run along ``time``, opened in bigkern's dims:

    >>> import tempfile
    >>> from bigkern import open_scenes, write_scenes
    >>> from bigkern.datasets import make_scenes
    >>> tmp = tempfile.TemporaryDirectory()
    >>> store = write_scenes(make_scenes(2, (16, 24), seed=0).rename(scene="time"),
    ...                      f"{tmp.name}/s.zarr", dims={"scene": "time"})
    >>> ds = open_scenes(store, dims={"scene": "time"}, features=["NDAI", "SD", "CORR"])
    >>> ds["NDAI"].dims, dict(ds.sizes)
    (('scene', 'y', 'x'), {'scene': 2, 'y': 16, 'x': 24})
    >>> type(ds["NDAI"].data).__module__  # lazy: nothing is read yet
    'dask.array.core'
    >>> tmp.cleanup()
    """
    if isinstance(path, (list, tuple)) or (isinstance(path, str) and is_pattern(path)):
        paths = expand_paths(path, storage_options)
    else:
        paths = [path]
    where = str(paths[0]) if len(paths) == 1 else f"{paths[0]} … ({len(paths)} files)"
    given = _dim_mapping(dims, f"store {where}")
    one_zarr = len(paths) == 1 and granule_format(paths[0], storage_options) == "zarr"
    if one_zarr:
        ds, mapping, reasons = _open_zarr_scenes(paths[0], chunks, features, storage_options,
                                                 given)
    else:
        ds, mapping, reasons = open_granules(paths, dims=given,
                                             storage_options=storage_options, where=where)
    if "scene" not in mapping and "scene" not in ds.dims:  # one 2-D scene
        ds = ds.expand_dims("scene")
    ds = to_scene_dims(ds, mapping, where=f"store {where}")
    if not one_zarr:  # a zarr store's chunks were guided from its metadata, before opening
        ds = _granule_chunks(ds, chunks, features, where)
    if reasons:
        ds.attrs[FOUND_ATTR] = json.dumps(reasons, sort_keys=True)
    if validate:
        validate_scenes(ds, features=features, where=where)
    ds = apply_validity(ds, fill_values=fill_values, valid_ranges=valid_ranges)
    if one_zarr:  # a record of key histograms stands for these arrays only
        ds = mark_opened(ds, location(paths[0], storage_options))
    return ds


def _feature_dims(arrays: Mapping[str, Any]) -> set[tuple[str, ...]]:
    return {tuple(a.dims) for a in arrays.values() if len(a.dims) == 3}


def _open_zarr_scenes(
    path: PathOrURL | Location, chunks: Any, features: Sequence[str] | None,
    storage_options: StorageOptions, given: dict[str, str],
) -> tuple[xr.Dataset, dict[str, str], dict[str, str]]:
    """A zarr store in its own dims, read in guided chunks, and the dims found in it."""
    loc = location(path, storage_options)
    mapping, reasons = dict(given), {}

    def opened(mapping: dict[str, str], chunks: Any) -> xr.Dataset:
        store_dims = tuple(mapping.get(d, d) for d in SCENE_DIMS)
        if isinstance(chunks, Mapping):  # bigkern's dim names or the store's
            chunks = {mapping.get(str(k), k): v for k, v in chunks.items()}
        try:
            # the chunk warning points at open_scenes' caller: guide_chunks, guided_chunks,
            # planned_read_chunks, opened, _open_zarr_scenes, open_scenes, the caller
            planned = planned_read_chunks(loc, str(path), chunks, features, store_dims,
                                          stacklevel=6)
            return open_checked(loc, chunks=planned)
        except StoreError:
            raise
        except Exception as err:  # zarr raises several types for "not a store"
            raise StoreError(f"{path} is not a readable zarr store: {err}") from err

    ds = opened(mapping, chunks)
    store_dims = tuple(mapping.get(d, d) for d in SCENE_DIMS)
    own = {tuple(map(str, v.dims)) for v in ds.data_vars.values() if v.ndim == 3}
    if own and store_dims not in own:  # the store's dims have other names: find them
        mapping, reasons = find_scene_dims(ds, given, where=f"store {path}")
        store_dims = tuple(mapping.get(d, d) for d in SCENE_DIMS)
        if store_dims in own:
            ds = opened(mapping, chunks)
    return ds, mapping, reasons


def _granule_chunks(ds: xr.Dataset, chunks: Any, features: Sequence[str] | None,
                    where: str) -> xr.Dataset:
    """Granules (in bigkern's dims) in the chunks asked for, or as the chunk guidance says."""
    if isinstance(chunks, Mapping) and chunks:
        inverse = {theirs: ours for ours, theirs in scene_dims(ds).items()}
        return ds.chunk({inverse.get(str(k), str(k)): v for k, v in chunks.items()})
    if isinstance(chunks, str):
        return ds.chunk(chunks)
    arrays = {str(k): ArrayMeta(str(k), tuple(map(str, v.dims)), tuple(map(int, v.shape)),
                                tuple(max(c) if c else 0 for c in v.chunks), np.dtype(v.dtype))
              for k, v in ds.data_vars.items()
              if isinstance(v.data, da.Array) and v.dtype != object and v.ndim}
    better = guided_chunks(arrays, where, None, features, SCENE_DIMS, stacklevel=5)
    return ds.chunk(dict(better)) if isinstance(better, Mapping) else ds


def validate_scenes(
    ds: xr.Dataset,
    *,
    features: Sequence[str] | None = None,
    where: str = "the scene dataset",
    check_labels: bool = True,
    dims: DimMapping = None,
) -> LabelClasses | None:
    """Check that ``ds`` is a usable scene dataset; raise naming what is wrong and where.

    Returns what the checked ``label`` declares
    (:class:`~bigkern.scenes.labels.LabelClasses`), None when no label was checked.

    Checks: at least one data variable and non-empty dims; every feature
    (and ``label``) has dims ``(scene, y, x)`` (or the dims ``dims`` maps them
    to, see :func:`to_scene_dims`); requested ``features`` exist; ``label``
    values are classes or "unlabelled" (its CF flags, else integers in [-127, 127]:
    :func:`~bigkern.scenes.labels.check_label_values`; one cheap pass over ``label``; the first
    offending scene is named).

    Examples
    --------
    A usable dataset passes, and says what its label's classes are; one that lacks a
    feature does not:

    >>> from bigkern import validate_scenes
    >>> from bigkern.datasets import make_scenes
    >>> ds = make_scenes(1, (8, 8), seed=0, radiances=False).rename(scene="time")
    >>> validate_scenes(ds, dims={"scene": "time"}, features=["NDAI"]).names
    ('clear', 'cloud')
    >>> validate_scenes(ds, dims={"scene": "time"}, features=["NDAI", "AN"])
    Traceback (most recent call last):
        ...
    bigkern.errors.StoreError: the scene dataset lacks feature(s) ['AN']; it has [...]
    """
    ds = to_scene_dims(ds, dims, where=where)
    if not ds.data_vars:
        raise StoreError(f"{where} is empty: it has no variables")
    for dim in SCENE_DIMS:
        if ds.sizes.get(dim, 0) == 0 and any(dim in v.dims for v in ds.data_vars.values()):
            raise StoreError(f"{where} is empty: dimension {dim!r} has length 0")
    if features is not None:
        missing = [f for f in features if f not in ds.data_vars]
        if missing:
            raise StoreError(
                f"{where} lacks feature(s) {missing}; it has {sorted(map(str, ds.data_vars))}"
            )
    check = list(features) if features is not None else [
        str(k) for k, v in ds.data_vars.items() if v.ndim == 3 or set(v.dims) & set(SCENE_DIMS)
    ]
    if "label" in ds and "label" not in check:
        check.append("label")
    for name in check:
        dims = ds[name].dims
        if dims != SCENE_DIMS:
            hint = ""
            if len(dims) == 3 and set(dims) != set(SCENE_DIMS):
                other = {ours: str(theirs) for ours, theirs in zip(SCENE_DIMS, dims, strict=True)
                         if ours != theirs}
                hint = (f" (if {other} play the part of {tuple(other)}, name the mapping: "
                        f"dims={other})")
            raise StoreError(
                f"variable {name!r} in {where} has dims {dims}; expected {SCENE_DIMS}{hint}"
            )
    if check_labels and "label" in ds:
        return check_label_values(ds["label"], where, scene_dims(ds).get("scene", "scene"))
    return None
