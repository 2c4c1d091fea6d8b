"""Scene stores: open, validate, write.

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

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr

from bigkern import config
from bigkern.errors import LabelError, StoreError
from bigkern.io.cf import cf_attrs
from bigkern.io.integrity import open_checked
from bigkern.io.limits import planned_read_chunks
from bigkern.io.manifest import MANIFEST_ATTR, manifest_digests, write_manifests
from bigkern.io.scene_dims import (
    SCENE_DIMS,
    DimMapping,
    _dim_mapping,
    from_scene_dims,
    scene_dims,
    to_scene_dims,
)
from bigkern.io.staging import staged_output
from bigkern.io.urls import Location, PathOrURL, StorageOptions, location
from bigkern.io.validity import FillValues, ValidRanges, apply_validity
from bigkern.io.zarr_store import finish_store, to_zarr

__all__ = [
    "default_chunks",
    "open_scenes",
    "validate_scenes",
    "write_chunks",
    "write_scenes",
]

LABEL_VALUES = (-1, 0, 1)

# what the label codes mean (CF flag_meanings: one word per value of flag_values)
_LABEL_FLAGS = {"flag_values": LABEL_VALUES, "flag_meanings": "clear unlabelled cloud"}


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
    range becomes NaN (lazily; see :func:`bigkern.io.apply_validity`): declared
    CF ``_FillValue``/``missing_value``, ``fill_values``, and the valid range
    from ``valid_ranges``, else the variable's CF ``valid_range``/``valid_min``/
    ``valid_max``, else the ``bigkern.valid_ranges`` setting (defaults for the
    MISR features). Fits leave such rows out and count them per feature.

    Parameters
    ----------
    path : str, Path or URL
        A zarr store written by :func:`write_scenes` or ``bigkern ingest``: a
        local path or an fsspec URL (``s3://bucket/scenes.zarr``, ``gs://…``,
        ``memory://…``).
    chunks : dict or "auto", optional
        Dask chunks; by default the store's own zarr chunks, so that each task
        reads whole zarr chunks. Chunks that would make more than ~10⁶ tasks,
        or tasks of fewer than ~10⁶ pixels, are found from the store's
        metadata before anything is read, and are then read in recommended
        chunks of whole zarr chunks, refused, or warned about
        (:class:`~bigkern.io.chunking.ChunkWarning`), as the setting
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
        :func:`bigkern.io.urls.location`).
    dims : mapping of str to str, optional
        For a store whose dims are not named ``(scene, y, x)``: bigkern's dim →
        the store's, e.g. ``{"scene": "time"}`` for ``(time, y, x)``. The
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
        The path does not exist, is not a zarr store, or the store is empty
        or malformed; ``dims`` names a dimension the store lacks; its
        metadata declares sizes beyond the ``bigkern.store_limits`` settings;
        its chunks make too many tasks and
        ``bigkern.chunk_guidance.too_many_tasks`` is ``error``; a chunk read
        is damaged or not where it belongs (see :func:`bigkern.io.open_checked`);
        or ``fill_values``/``valid_ranges`` are nonsense (a feature not in the
        store, a range with min > max ...).
    LabelError
        ``label`` holds values outside {-1, 0, 1}.

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
    loc = location(path, storage_options)
    mapping = _dim_mapping(dims, f"store {path}")
    if not loc.exists():
        raise StoreError(f"no scene store at {path}: the path does not exist")
    store_dims = tuple(mapping.get(d, d) for d in SCENE_DIMS)
    if isinstance(chunks, Mapping):  # bigkern's dim names or the store's
        chunks = {mapping.get(str(k), k): v for k, v in chunks.items()}
    try:
        chunks = planned_read_chunks(loc, str(path), chunks, features, store_dims)
        ds = open_checked(loc, chunks=chunks)
    except StoreError:
        raise
    except Exception as err:  # zarr raises several types for "not a store"
        raise StoreError(f"{path} is not a readable zarr store: {err}") from err
    ds = to_scene_dims(ds, mapping, where=f"store {path}")
    if validate:
        validate_scenes(ds, features=features, where=str(path))
    return apply_validity(ds, fill_values=fill_values, valid_ranges=valid_ranges)


def validate_scenes(
    ds: xr.Dataset,
    *,
    features: Sequence[str] | None = None,
    where: str = "the scene dataset",
    check_labels: bool = True,
    dims: DimMapping = None,
) -> None:
    """Check that ``ds`` is a usable scene dataset; raise naming what is wrong and where.

    Checks: at least one data variable and non-empty dims; every feature
    (and ``label``) has dims ``(scene, y, x)`` (or the dims ``dims`` maps them
    to, see :func:`to_scene_dims`); requested ``features`` exist; ``label``
    values lie in {-1, 0, 1} (one cheap pass over ``label``; the first
    offending scene is named).

    Examples
    --------
    A usable dataset passes silently; one that lacks a feature does not:

    >>> from bigkern import validate_scenes
    >>> from bigkern.datasets import make_scenes
    >>> ds = make_scenes(1, (8, 8), seed=0, radiances=False).rename(scene="time")
    >>> validate_scenes(ds, dims={"scene": "time"}, features=["NDAI"])
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
        _check_label_values(ds["label"], where, scene_dims(ds).get("scene", "scene"))


def _check_label_values(label: xr.DataArray, where: str, dim: str = "scene") -> None:
    data = label.data
    bad = ~((data == -1) | (data == 0) | (data == 1))
    if isinstance(data, da.Array):
        from bigkern.cluster.compute import compute  # watched on any client

        (per_scene,) = compute(bad.sum(axis=(1, 2)), label="checking the labels")
    else:
        per_scene = np.asarray(bad).sum(axis=(1, 2))
    if per_scene.any():
        i = int(np.flatnonzero(per_scene)[0])
        scene_data = np.asarray(label.isel(scene=i).values)
        values = np.unique(scene_data[~np.isin(scene_data, LABEL_VALUES)])
        scene: Any = i
        if "scene" in label.coords:
            value = label["scene"].values[i]
            scene = str(value) if value.dtype.kind in "mM" else value.item()
        raise LabelError(
            f"variable 'label' in {where} has {int(per_scene.sum())} value(s) outside "
            f"{{-1, 0, 1}}, first in {dim} {scene!r}: {values[:5].tolist()}"
        )


def write_chunks(ds: xr.Dataset, chunks: Mapping[str, int] | None = None) -> dict[str, int]:
    """The zarr chunks :func:`write_scenes` gives a scene dataset (in bigkern's dims).

    ``chunks`` given win, dim by dim. Along the other dims a dask-backed
    dataset keeps its own chunks (the largest along each dim, as zarr chunks
    are regular), so each task writes whole chunks of its own; unless they
    break bigkern's chunking rules (:mod:`bigkern.io.chunking`): chunks that
    make too many tasks or tasks too small for their overhead grow to the
    recommended whole multiples (:attr:`~bigkern.io.task_plans.TaskPlan.recommended`),
    and a chunk over ``bigkern.chunk_bytes`` is cut to :func:`default_chunks`.
    A dataset in memory gets :func:`default_chunks`.

    Parameters
    ----------
    ds : xarray.Dataset
        Scene dataset with dims ``(scene, y, x)``.
    chunks : mapping of str to int, optional
        Chunk sizes chosen by the caller, by dim.

    Returns
    -------
    dict of str to int
        A chunk size for each of ``scene``, ``y``, ``x``.

    Examples
    --------
    >>> from bigkern.datasets import make_scenes
    >>> write_chunks(make_scenes(4, (32, 48), seed=0))  # dask: one scene per chunk
    {'scene': 1, 'y': 32, 'x': 48}
    >>> write_chunks(make_scenes(4, (32, 48), seed=0).compute())  # in memory
    {'scene': 4, 'y': 32, 'x': 48}
    """
    from bigkern.io.chunking import crosses_guidance
    from bigkern.io.task_plans import planned_tasks

    shape = tuple(int(ds.sizes.get(d, 1)) for d in SCENE_DIMS)
    base = default_chunks(shape)
    scene_vars = [v for v in ds.data_vars.values() if v.dims == SCENE_DIMS]
    own = [v.data.chunks for v in scene_vars if isinstance(v.data, da.Array)]
    if own and all(shape):
        follow = {d: max(max(c[i]) for c in own) for i, d in enumerate(SCENE_DIMS)}
        dtype = max((v.dtype for v in scene_vars), key=lambda t: t.itemsize)
        plan = planned_tasks(SCENE_DIMS, shape, dtype, tuple(follow.values()))
        if crosses_guidance(plan):
            follow = {d: int(plan.recommended[d]) for d in SCENE_DIMS}
        if int(np.prod(list(follow.values()))) * dtype.itemsize > int(config.get("chunk_bytes")):
            follow = {d: min(follow[d], default_chunks(shape, dtype.itemsize)[d])
                      for d in SCENE_DIMS}
        base = follow
    return {**base, **{str(k): int(v) for k, v in (chunks or {}).items()}}


def write_scenes(
    ds: xr.Dataset,
    path: PathOrURL | Location,
    *,
    overwrite: bool = False,
    chunks: dict[str, int] | None = None,
    inputs: Sequence[PathOrURL | Location] = (),
    storage_options: StorageOptions = None,
    dims: DimMapping = None,
) -> Path | str:
    """Write a scene dataset to a checksummed zarr store with chunks aligned to dask's.

    Besides every chunk's CRC-32C, each numeric variable gets a chunk manifest
    (:mod:`bigkern.io.manifest`): a digest of every chunk's values and index,
    computed by the tasks that write it, so that a chunk later found in the
    wrong place is an error when read.

    The store is written to a hidden temporary sibling and moved into place
    when complete (see :func:`bigkern.io.staging.staged_output`), so an
    interrupted write never leaves a store at ``path``.

    The dataset's coordinates and attributes are kept; the store gets the CF
    attributes ``Conventions`` and a ``history`` line (:func:`cf_attrs`), and
    ``label`` its ``flag_values``/``flag_meanings`` (-1 clear, 0 unlabelled,
    1 cloud) unless it declares its own. A dataset opened with a dim mapping
    (:func:`open_scenes` with ``dims=``) is written in the source's dim names.

    Parameters
    ----------
    ds : xarray.Dataset
        Scene dataset.
    path : str, Path or URL
        Target store: a local path or an fsspec URL.
    overwrite : bool
        Replace an existing store that bigkern wrote; otherwise an existing
        path raises :class:`StoreError`. A path bigkern did not write is never
        replaced.
    chunks : dict, optional
        Chunks along scene, y, x (bigkern's dim names or the dataset's own);
        the dims not given follow a dask-backed dataset's own chunks, or
        :func:`default_chunks` for one in memory (see :func:`write_chunks`).
    inputs : sequence of paths
        Files or stores ``ds`` was read from: ``path`` may not be, contain or
        lie inside any of them.
    storage_options : mapping, optional
        fsspec options for a URL (see :func:`bigkern.io.urls.location`).
    dims : mapping of str to str, optional
        For a dataset whose dims are not named ``(scene, y, x)``: bigkern's dim
        → the dataset's, e.g. ``{"scene": "time"}``; the store keeps the
        dataset's names (open it with the same ``dims``).

    Returns
    -------
    pathlib.Path or str
        The store written: a :class:`~pathlib.Path` for a local path, the URL
        as given for a URL.

    Examples
    --------
    >>> import tempfile
    >>> from bigkern import open_scenes, write_scenes
    >>> from bigkern.datasets import make_scenes
    >>> tmp = tempfile.TemporaryDirectory()
    >>> store = write_scenes(make_scenes(3, (16, 24), seed=0), f"{tmp.name}/s.zarr")
    >>> store.name, open_scenes(store)["NDAI"].data.chunks[0]  # one scene per chunk, as given
    ('s.zarr', (1, 1, 1))
    >>> tmp.cleanup()
    """
    loc = location(path, storage_options)
    ds = to_scene_dims(ds, dims)
    mapping = scene_dims(ds)
    inverse = {theirs: ours for ours, theirs in mapping.items()}
    given = {inverse.get(str(k), str(k)): v for k, v in (chunks or {}).items()}
    chunks = write_chunks(ds, given)
    out = ds.chunk({d: chunks[d] for d in SCENE_DIMS if d in ds.dims})
    # small text coordinates (e.g. source file names) stay in memory, not in dask
    text = {k: ds[k].variable.load() for k in ds.coords
            if k not in ds.dims and ds[k].dtype.kind in "OUS"}
    out = out.assign_coords(text)
    for name in out.variables:
        out[name].encoding.pop("chunks", None)
        out[name].encoding.pop("preferred_chunks", None)
        out[name].attrs.pop(MANIFEST_ATTR, None)  # a manifest read with the source is not ours
    if "label" in out.data_vars and "flag_values" not in out["label"].attrs \
            and out["label"].dtype.kind in "iu":
        out["label"].attrs.update(
            flag_values=np.array(_LABEL_FLAGS["flag_values"], dtype=out["label"].dtype),
            flag_meanings=_LABEL_FLAGS["flag_meanings"])
    out.attrs = cf_attrs(ds.attrs, "write_scenes")
    out = from_scene_dims(out, mapping)
    from bigkern.cluster.compute import compute

    digests = manifest_digests(out)
    with staged_output(loc, overwrite=overwrite, inputs=inputs, kind="scenes") as temp:
        delayed = to_zarr(out, temp, kind="scenes", compute=False)
        # one compute: the digests are taken on the workers from the blocks being written
        _, *values = compute(delayed, *digests.values(), label=f"writing {path}")
        write_manifests(temp, dict(zip(digests, values, strict=True)),
                        {k: tuple(c[0] for c in out[k].data.chunks) for k in digests})
        finish_store(temp)
    return loc.local_path if loc.local else str(path)
