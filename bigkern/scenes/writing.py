"""Scene stores: write a scene dataset to a checksummed zarr store.

The chunks (:func:`write_chunks`) follow a dask-backed dataset's own, within
bigkern's chunking rules; the store is staged and published whole, with a chunk
manifest per numeric variable and the CF attributes (:func:`write_scenes`).
Opening and validating a store is :mod:`bigkern.scenes.reading`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import dask
import dask.array as da
import numpy as np
import xarray as xr

from bigkern import config
from bigkern.scenes.cf import cf_attrs
from bigkern.scenes.dims import (
    SCENE_DIMS,
    DimMapping,
    find_scene_dims,
    from_scene_dims,
    scene_dims,
    to_scene_dims,
)
from bigkern.scenes.key_histogram_recording import recording, write_recording
from bigkern.scenes.labels import bigkern_label_flags
from bigkern.scenes.reading import default_chunks, validate_scenes
from bigkern.store.key_histograms import KeyHistogramRecorder
from bigkern.store.manifest import MANIFEST_ATTR, manifest_digests, write_manifests
from bigkern.store.staging import staged_output
from bigkern.store.urls import Location, PathOrURL, StorageOptions, location
from bigkern.store.zarr_store import finish_store, to_zarr

__all__ = ["write_chunks", "write_scenes"]



def write_chunks(ds: xr.Dataset, chunks: Mapping[str, int] | None = None) -> dict[str, int]:
    """The zarr chunks :func:`write_scenes` gives a scene dataset (in bigkern's dims).

    ``chunks`` given win, dim by dim. Along the other dims a dask-backed
    dataset keeps its own chunks (the largest along each dim, as zarr chunks
    are regular), so each task writes whole chunks of its own; unless they
    break bigkern's chunking rules (:mod:`bigkern.cluster.chunking`): chunks that
    make too many tasks or tasks too small for their overhead grow to the
    recommended whole multiples (:attr:`~bigkern.cluster.task_plans.TaskPlan.recommended`),
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
    from bigkern.cluster.chunking import crosses_guidance
    from bigkern.cluster.task_plans import planned_tasks

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
    recorder: KeyHistogramRecorder | None = None,
) -> Path | str:
    """Write a scene dataset to a checksummed zarr store with chunks aligned to dask's.

    Besides every chunk's CRC-32C, each numeric variable gets a chunk manifest
    (:mod:`bigkern.store.manifest`): a digest of every chunk's values and index,
    computed by the tasks that write it, so that a chunk later found in the
    wrong place is an error when read.

    The store is written to a hidden temporary sibling and moved into place
    when complete (see :func:`bigkern.store.staging.staged_output`), so an
    interrupted write never leaves a store at ``path``.

    The dataset's coordinates and attributes are kept; the store gets the CF
    attributes ``Conventions`` and a ``history`` line (:func:`cf_attrs`), and
    ``label`` its ``flag_values``/``flag_meanings`` (-1 clear, 0 unlabelled,
    1 cloud) when it holds those codes and declares no flags of its own (a label of
    other classes is written as it is: see :mod:`bigkern.scenes.labels`). A dataset
    opened with a dim mapping (:func:`open_scenes` with ``dims=``) is written in the
    source's dim names.

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
        fsspec options for a URL (see :func:`bigkern.store.urls.location`).
    dims : mapping of str to str, optional
        For a dataset whose dims are not named ``(scene, y, x)``: bigkern's dim
        → the dataset's, e.g. ``{"scene": "time"}``; the store keeps the
        dataset's names (open it with the same ``dims``). Dims the data
        declare are found as :func:`open_scenes` finds them.
    recorder : KeyHistogramRecorder, optional
        With :data:`bigkern.reduce.recorded_histograms.KEY_HISTOGRAM_RECORDER` (what
        ``bigkern synth``, ``bigkern ingest`` and the demo give), record in the
        same compute the key histograms of the labelled pixels' features that
        exact percentile binning's first read would take
        (:mod:`bigkern.scenes.key_histogram_recording`): binning the store's
        labelled pixels then reads it once.

    Raises
    ------
    StoreError, LabelError
        What :func:`open_scenes` would refuse in the store (dims that cannot be
        told apart, an empty dataset, ``label`` values that are no class: see
        :mod:`bigkern.scenes.labels`),
        refused before anything is written, with the same message.

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
    where = f"the dataset written to {path}"
    ds = to_scene_dims(ds, dims, where=where)
    own = {v.dims for v in ds.data_vars.values() if v.ndim == 3}
    if own and SCENE_DIMS not in own:  # other names: found as open_scenes finds them
        found, _ = find_scene_dims(ds, where=where)
        ds = to_scene_dims(ds, found, where=where)
    # refused here, before anything is written, with the message open_scenes would give
    labels = validate_scenes(ds, where=where)
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
    # bigkern's own flags for a label of bigkern's codes that declares none; a label of
    # other classes keeps its values undeclared (declare them to name the classes)
    if "label" in out.data_vars and "flag_values" not in out["label"].attrs \
            and out["label"].dtype.kind in "iu" and labels is not None and labels.bigkern_codes:
        out["label"].attrs.update(bigkern_label_flags(out["label"].dtype))
    out.attrs = cf_attrs(ds.attrs, "write_scenes")
    recordings = recording(out, recorder) if recorder is not None else []
    out = from_scene_dims(out, mapping)
    from bigkern.cluster.compute import compute

    digests = manifest_digests(out)
    # one delayed result: digests and recordings come back in a known order
    computed = dask.delayed(_digests_and_records, pure=True)(
        list(digests.values()), [r.graph for r in recordings])
    with staged_output(loc, overwrite=overwrite, inputs=inputs, kind="scenes") as temp:
        delayed = to_zarr(out, temp, kind="scenes", compute=False)
        # one compute: the digests and the key histograms are taken on the workers from
        # the blocks being written
        _, (values, records) = compute(delayed, computed, label=f"writing {path}")
        found = dict(zip(digests, values, strict=True))
        chunk_shapes = {k: tuple(c[0] for c in out[k].data.chunks) for k in digests}
        write_manifests(temp, found, chunk_shapes)
        if recordings:
            write_recording(temp, recordings, records, found, chunk_shapes, recorder)
        finish_store(temp)
    return loc.local_path if loc.local else str(path)


def _digests_and_records(digests: list[np.ndarray], records: list[dict]
                         ) -> tuple[list[np.ndarray], list[dict]]:
    return digests, records
