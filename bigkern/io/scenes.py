"""Scene stores: open, validate, stack into samples, write.

A scene store is an :class:`xarray.Dataset` in zarr with dims
``(scene, y, x)``: one float variable per feature (``NDAI``, ``SD``,
``CORR``, radiances …) and an integer ``label`` (1 cloud, -1 clear,
0 unlabelled). Everything here is lazy except the cheap label check.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr

from bigkern import config
from bigkern.errors import LabelError, StoreError
from bigkern.io.integrity import open_checked
from bigkern.io.limits import planned_read_chunks
from bigkern.io.manifest import MANIFEST_ATTR, manifest_digests, write_manifests
from bigkern.io.staging import staged_output
from bigkern.io.urls import Location, PathOrURL, StorageOptions, location
from bigkern.io.validity import FillValues, ValidRanges, apply_validity, ensure_validity
from bigkern.io.zarr_store import finish_store, to_zarr

__all__ = [
    "SCENE_DIMS",
    "Samples",
    "as_dask_array",
    "default_chunks",
    "open_scenes",
    "stack_samples",
    "validate_scenes",
    "write_scenes",
]

SCENE_DIMS = ("scene", "y", "x")
LABEL_VALUES = (-1, 0, 1)


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

    Raises
    ------
    StoreError
        The path does not exist, is not a zarr store, or the store is empty
        or malformed; its metadata declares sizes beyond the
        ``bigkern.store_limits`` settings; its chunks make too many tasks and
        ``bigkern.chunk_guidance.too_many_tasks`` is ``error``; a chunk read
        is damaged or not where it belongs (see :func:`bigkern.io.open_checked`);
        or ``fill_values``/``valid_ranges`` are nonsense (a feature not in the
        store, a range with min > max ...).
    LabelError
        ``label`` holds values outside {-1, 0, 1}.
    """
    loc = location(path, storage_options)
    if not loc.exists():
        raise StoreError(f"no scene store at {path}: the path does not exist")
    try:
        chunks = planned_read_chunks(loc, str(path), chunks, features, SCENE_DIMS)
        ds = open_checked(loc, chunks=chunks)
    except StoreError:
        raise
    except Exception as err:  # zarr raises several types for "not a store"
        raise StoreError(f"{path} is not a readable zarr store: {err}") from err
    if validate:
        validate_scenes(ds, features=features, where=str(path))
    return apply_validity(ds, fill_values=fill_values, valid_ranges=valid_ranges)


def validate_scenes(
    ds: xr.Dataset,
    *,
    features: Sequence[str] | None = None,
    where: str = "the scene dataset",
    check_labels: bool = True,
) -> None:
    """Check that ``ds`` is a usable scene dataset; raise naming what is wrong and where.

    Checks: at least one data variable and non-empty dims; every feature
    (and ``label``) has dims ``(scene, y, x)``; requested ``features`` exist;
    ``label`` values lie in {-1, 0, 1} (one cheap pass over ``label``; the
    first offending scene is named).
    """
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
            raise StoreError(
                f"variable {name!r} in {where} has dims {dims}; expected {SCENE_DIMS}"
            )
    if check_labels and "label" in ds:
        _check_label_values(ds["label"], where)


def _check_label_values(label: xr.DataArray, where: str) -> None:
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
        scene = label["scene"].values[i].item() if "scene" in label.coords else i
        raise LabelError(
            f"variable 'label' in {where} has {int(per_scene.sum())} value(s) outside "
            f"{{-1, 0, 1}}, first in scene {scene!r}: {values[:5].tolist()}"
        )


@dataclass(frozen=True)
class Samples:
    """Pixels of a scene dataset as samples.

    ``X`` (sample, feature) and ``y`` (sample) cover **every** pixel in a fixed
    order (dask chunk by chunk, each chunk in C order), so their chunks are
    known and aligned with the store's; ``mask`` marks the rows to fit on
    (labelled pixels when ``labelled_only``). Rows with a non-finite feature
    stay in ``X`` as NaN: every bigkern reduction leaves them out and counts
    them. :meth:`counts` reports what is masked.
    """

    X: da.Array
    y: da.Array | None
    mask: da.Array | None
    features: tuple[str, ...]
    pixel: da.Array  # C-order index of (scene, y, x): the same whatever the chunking

    def as_dataarray(self) -> xr.DataArray:
        """``X`` as a DataArray with dims (sample, feature) and the feature coordinate."""
        return xr.DataArray(self.X, dims=("sample", "feature"),
                            coords={"feature": list(self.features)})

    def counts(self) -> dict[str, int]:
        """Pixels in all, with every feature absent, with some feature non-finite, unlabelled.

        One pass over the features and labels.
        """
        finite = da.isfinite(self.X)
        all_f = finite.all(axis=1)
        none_f = ~finite.any(axis=1)
        parts = {
            "pixels": da.asarray(self.X.shape[0]),
            "absent": none_f.sum(),
            "nonfinite": (~all_f & ~none_f).sum(),
        }
        if self.y is not None:
            parts["unlabelled"] = (self.y == 0).sum()
            parts["labelled_usable"] = ((self.y != 0) & all_f).sum()
        from bigkern.cluster.compute import compute

        values = compute(*parts.values(), label="counting samples")
        return {k: int(v) for k, v in zip(parts, values, strict=True)}


def stack_samples(
    ds: xr.Dataset,
    features: Sequence[str],
    *,
    labelled_only: bool = True,
    label: str = "label",
    fill_values: FillValues = None,
    valid_ranges: ValidRanges = None,
) -> Samples:
    """Stack the pixels of a scene dataset into ``X (sample, feature)`` and ``y``.

    Parameters
    ----------
    ds : xarray.Dataset
        Scene dataset (dims scene, y, x), e.g. from :func:`open_scenes`.
    features : sequence of str
        Feature variables, in order; they become the ``feature`` coordinate.
    labelled_only : bool
        Set ``mask`` to the labelled pixels (label ≠ 0). When false, ``mask``
        is None and every pixel with finite features is used.
    label : str
        Name of the label variable; if absent, ``y`` and ``mask`` are None.
    fill_values, valid_ranges : optional
        The validity rules, as for :func:`open_scenes`. Features that have not
        been through them (a Dataset built in memory rather than opened with
        :func:`open_scenes`) get them here: declared CF attributes, these
        arguments, and the ``bigkern.valid_ranges`` defaults (see
        :func:`bigkern.io.validity.ensure_validity`).

    Returns
    -------
    Samples

    Examples
    --------
    >>> from bigkern.datasets import make_scenes
    >>> s = stack_samples(make_scenes(1, (32, 48), seed=0), ["NDAI", "CORR"])
    >>> s.X.shape, s.features
    ((1536, 2), ('NDAI', 'CORR'))
    """
    features = tuple(features)
    if not features:
        raise ValueError("no features given")
    validate_scenes(ds, features=features, check_labels=False)
    ds = ensure_validity(ds, features, fill_values=fill_values, valid_ranges=valid_ranges)
    arrays = [as_dask_array(ds[f]) for f in features]
    chunks = arrays[0].chunks
    arrays = [a if a.chunks == chunks else a.rechunk(chunks) for a in arrays]
    dtype = np.result_type(*[a.dtype for a in arrays], np.float32)
    cube = da.stack([a.astype(dtype) for a in arrays], axis=-1).rechunk({3: -1})
    X = _flatten_blocks(cube, trailing=(len(features),))
    pixel = _flatten_blocks(_pixel_index(chunks), trailing=())
    y = mask = None
    if label in ds:
        lab = as_dask_array(ds[label])
        if lab.chunks != chunks:
            lab = lab.rechunk(chunks)
        y = _flatten_blocks(lab, trailing=())
        if labelled_only:
            mask = y != 0
    elif labelled_only:
        raise StoreError(f"the dataset has no {label!r} variable; pass labelled_only=False")
    return Samples(X, y, mask, features, pixel)


def _pixel_index_block(shape: tuple[int, ...], block_info: Any = None) -> np.ndarray:
    loc = block_info[None]["array-location"]
    grids = np.meshgrid(*[np.arange(a, b) for a, b in loc], indexing="ij")
    return np.ravel_multi_index(grids, shape).astype(np.int64)


def _pixel_index(chunks: tuple[tuple[int, ...], ...]) -> da.Array:
    shape = tuple(sum(c) for c in chunks)
    return da.map_blocks(_pixel_index_block, shape, chunks=chunks, dtype=np.int64,
                         token="bigkern-pixel-index")


def as_dask_array(var: xr.DataArray) -> da.Array:
    """The data of ``var`` as a dask array: its own if dask-backed, else chunked by default.

    Parameters
    ----------
    var : xarray.DataArray
        A ``(scene, y, x)`` variable, lazy or in memory.

    Returns
    -------
    dask.array.Array
        ``var.data`` itself when it is a dask array, else a dask array with
        :func:`default_chunks` (about ``bigkern.chunk_bytes`` per chunk).
    """
    data = var.data
    if isinstance(data, da.Array):
        return data
    return da.from_array(np.asarray(data), chunks=tuple(default_chunks(var.shape).values()))


def _flatten_blocks(arr: da.Array, trailing: tuple[int, ...]) -> da.Array:
    """Concatenate the blocks of a (scene, y, x, ...) array, each flattened in C order."""
    lead = arr.numblocks[:3]
    pieces = []
    for idx in np.ndindex(*lead):
        block = arr.blocks[idx + (0,) * (arr.ndim - 3)]
        pieces.append(block.reshape((-1, *trailing)))
    return da.concatenate(pieces, axis=0)


def write_scenes(
    ds: xr.Dataset,
    path: PathOrURL | Location,
    *,
    overwrite: bool = False,
    chunks: dict[str, int] | None = None,
    inputs: Sequence[PathOrURL | Location] = (),
    storage_options: StorageOptions = None,
) -> Path | str:
    """Write a scene dataset to a checksummed zarr store with chunks aligned to dask's.

    Besides every chunk's CRC-32C, each numeric variable gets a chunk manifest
    (:mod:`bigkern.io.manifest`): a digest of every chunk's values and index,
    computed by the tasks that write it, so that a chunk later found in the
    wrong place is an error when read.

    The store is written to a hidden temporary sibling and moved into place
    when complete (see :func:`bigkern.io.staging.staged_output`), so an
    interrupted write never leaves a store at ``path``.

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
        Chunks along scene, y, x (default: :func:`default_chunks`).
    inputs : sequence of paths
        Files or stores ``ds`` was read from: ``path`` may not be, contain or
        lie inside any of them.
    storage_options : mapping, optional
        fsspec options for a URL (see :func:`bigkern.io.urls.location`).

    Returns
    -------
    pathlib.Path or str
        The store written: a :class:`~pathlib.Path` for a local path, the URL
        as given for a URL.
    """
    loc = location(path, storage_options)
    chunks = {**default_chunks(tuple(ds.sizes[d] for d in SCENE_DIMS)), **(chunks or {})}
    out = ds.chunk({d: chunks[d] for d in SCENE_DIMS if d in ds.dims})
    # small text coordinates (e.g. source file names) stay in memory, not in dask
    text = {k: ds[k].variable.load() for k in ds.coords
            if k not in ds.dims and ds[k].dtype.kind in "OUS"}
    out = out.assign_coords(text)
    for name in out.variables:
        out[name].encoding.pop("chunks", None)
        out[name].encoding.pop("preferred_chunks", None)
        out[name].attrs.pop(MANIFEST_ATTR, None)  # a manifest read with the source is not ours
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
