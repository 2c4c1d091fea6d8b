"""What the single-file writers of predictions share: the layout, the blocks, the attributes.

A prediction (the output of :func:`bigkern.predict_scenes`) written as one
netCDF or GeoTIFF file (:mod:`bigkern.store.formats.prediction_files`) cannot be written
by the cluster's tasks: one file has one writer. Its blocks are computed on
the cluster a few at a time and written by the calling process
(:func:`compute_blocks`), so the client holds a few chunks at any moment.
:func:`prediction_layout` checks the prediction and gives the dims and the
regular chunks that both formats align their own chunks (HDF5 chunks, GeoTIFF
windows) with; :func:`netcdf_attr` and :func:`tag_text` turn attributes into
what each format can hold.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from numbers import Number
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr

from bigkern import config
from bigkern.store.region_records import Summary, add_summary

__all__ = ["BATCH_BYTES", "SOURCE_STORE_ATTRS", "PredictionLayout", "Summary",
           "compute_blocks", "netcdf_attr", "prediction_layout", "summarize_region", "tag_text"]

#: Root attributes of the store a prediction was read from or resumed in: that store's
#: bookkeeping, never a new file's (which records its own kind, status and version).
SOURCE_STORE_ATTRS = ("bigkern_job", "bigkern_store_id", "bigkern_publishing")


@dataclass(frozen=True)
class PredictionLayout:
    """The data variables of a prediction, their dims (scene, y, x as named) and chunks.

    ``chunks`` are regular (every chunk of a dim but the last as large as the
    first, the last no larger): the file's own chunks are the first ones, so
    that each block fills whole chunks of the file.
    """

    names: tuple[str, ...]
    dims: tuple[str, str, str]
    chunks: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]

    @property
    def chunk_shape(self) -> tuple[int, int, int]:
        """The shape of a full chunk (the first one along each dim)."""
        return (self.chunks[0][0], self.chunks[1][0], self.chunks[2][0])

    @property
    def regions(self) -> list[tuple[int, int, int]]:
        """The block indices of the chunk grid, in C order."""
        return list(itertools.product(*(range(len(c)) for c in self.chunks)))  # type: ignore

    def slices(self, index: Sequence[int], dims: Sequence[str] | None = None) -> tuple[slice, ...]:
        """Where the block ``index`` (along ``dims``, default the layout's) lies."""
        out = []
        for dim, i in zip(dims or self.dims, index, strict=True):
            sizes = self.chunks[self.dims.index(dim)]
            start = sum(sizes[:i])
            out.append(slice(start, start + sizes[i]))
        return tuple(out)

    def block_of(self, region: Sequence[int], dims: Sequence[str]) -> tuple[int, ...]:
        """The block index along ``dims`` (a subset of the layout's) of ``region``."""
        return tuple(region[self.dims.index(d)] for d in dims)


def _regular(sizes: tuple[int, ...]) -> bool:
    return all(s == sizes[0] for s in sizes[:-1]) and sizes[-1] <= sizes[0]


def prediction_layout(pred: xr.Dataset) -> tuple[xr.Dataset, PredictionLayout]:
    """Check ``pred`` and return it with dask-backed, regularly chunked data variables.

    Every data variable must be 3-D with the same dims, whatever their names
    (``(time, lat, lon)``, ``(scene, y, x)`` …): the first is the scene dim,
    then the rows and the columns. Variables chunked unlike the first are
    rechunked like it; irregular chunks (near-equal parts) become regular
    ones of the largest size; a numpy-backed variable is chunked by scene.

    Raises
    ------
    ValueError
        No data variables, or one that is not 3-D on the same dims as the others.
    """
    names = tuple(str(n) for n in pred.data_vars)
    if not names:
        raise ValueError("the prediction has no data variables to write")
    dims = pred[names[0]].dims
    for name in names:
        if len(pred[name].dims) != 3 or pred[name].dims != dims:
            raise ValueError(
                f"variable {name!r} has dims {pred[name].dims}: every variable of a "
                f"prediction must be 3-D with the same dims (scene, rows, columns), here "
                f"{dims}")
    first = pred[names[0]].data
    if not isinstance(first, da.Array):
        first = da.from_array(np.asarray(first), chunks=(1, -1, -1))
    chunks = tuple(c if _regular(c) else (max(c),) * (sum(c) // max(c))
                   + ((sum(c) % max(c),) if sum(c) % max(c) else ()) for c in first.chunks)
    arrays = {}
    for name in names:
        data = pred[name].data
        if not isinstance(data, da.Array):
            data = da.from_array(np.asarray(data), chunks=chunks)
        arrays[name] = data if data.chunks == chunks else data.rechunk(chunks)
    out = pred.copy()
    for name, data in arrays.items():
        out[name] = out[name].copy(data=data)
    layout = PredictionLayout(names, (str(dims[0]), str(dims[1]), str(dims[2])),
                              chunks)  # type: ignore[arg-type]
    return out, layout


#: Bytes of computed blocks the client holds at once, at most (one item at least).
BATCH_BYTES = 256 * 2**20


def _batches(work: Sequence[Sequence[da.Array]], threads: int,
             limit: int) -> Iterator[tuple[int, int]]:
    """``(first, stop)`` of consecutive items: as many as ``threads``, within ``limit`` bytes."""
    first = 0
    while first < len(work):
        stop, size = first, 0
        while stop < len(work) and stop - first < threads:
            more = sum(int(b.nbytes) for b in work[stop])
            if stop > first and size + more > limit:
                break
            stop, size = stop + 1, size + more
        yield first, stop
        first = stop


def compute_blocks(
    work: Sequence[Sequence[da.Array]], *, label: str,
) -> Iterator[tuple[int, list[np.ndarray]]]:
    """Compute each item's blocks, a few items at a time; yield ``(item, blocks)`` in order.

    Each item (a region: its blocks of every variable) is computed with
    :func:`bigkern.cluster.compute.compute` on the current client, or dask's
    local scheduler, in batches of as many items as tasks run at once
    (:func:`bigkern.cluster.compute.task_threads`) but no more than
    :data:`BATCH_BYTES` of results: the client holds one batch. Blocks of one
    item computed together share their tasks (a mask and the decision it
    comes from are computed once). Progress is reported for the whole write
    as log lines (:class:`bigkern.cluster.progress.ProgressLines`), not as one
    bar per batch.
    """
    import dask

    from bigkern.cluster.compute import compute, task_threads
    from bigkern.cluster.progress import ProgressLines

    lines = ProgressLines(label) if config.get("progress") else None
    started = time.perf_counter()
    failed = True
    graph, optimized = _optimized_once(work)
    try:
        for first, stop in _batches(work, max(1, task_threads()), BATCH_BYTES):
            items = work[first:stop]
            flat = _culled([block for item in optimized[first:stop] for block in item], graph)
            with dask.config.set({"bigkern.progress": False}):
                results = iter(compute(*flat, label=label, optimize_graph=False))
            for offset, item in enumerate(items):
                yield first + offset, [np.asarray(next(results)) for _ in item]
            if lines is not None:
                lines.update((first + len(items)) / len(work),
                             time.perf_counter() - started, len(work))
        failed = False
    finally:
        if lines is not None:
            lines.finish(time.perf_counter() - started, len(work), failed=failed)


def _optimized_once(work: Sequence[Sequence[da.Array]]
                    ) -> tuple[dict[Any, Any], list[list[da.Array]]]:
    """Every item's blocks optimized together, once: their merged graph and the blocks.

    Optimizing each batch on its own fuses the tasks its subset shares differently from
    another batch's (a task with one dependent in a batch is fused into it): the same
    key with another task, which the scheduler refuses or computes wrongly
    (dask/dask#9888). Batches cut from one optimized graph agree on every key.
    """
    import dask

    flat = [block for item in work for block in item]
    if not flat:
        return {}, [list(item) for item in work]
    optimized = dask.optimize(*flat)  # each holds the one merged graph
    rest = iter(optimized)
    return dict(optimized[0].__dask_graph__()), [[next(rest) for _ in item] for item in work]


def _culled(blocks: list[da.Array], graph: dict[Any, Any]) -> list[da.Array]:
    """``blocks`` on the part of ``graph`` they need (a batch ships only its own tasks)."""
    from dask.core import flatten
    from dask.optimization import cull

    culled, _ = cull(graph, list(flatten([b.__dask_keys__() for b in blocks])))
    return [da.Array(culled, b.name, b.chunks, meta=b._meta) for b in blocks]


def _number(value: Any) -> bool:
    return isinstance(value, (Number, np.number)) and not isinstance(value, (bool, np.bool_))


def _json(value: Any) -> str:
    return json.dumps(value, default=str)


def netcdf_attr(value: Any) -> Any:
    """``value`` as a netCDF attribute can hold it (h5netcdf, ``invalid_netcdf=False``).

    Strings and numbers are kept, numeric arrays and lists become arrays
    (booleans as int8), a list of strings becomes one string, its items
    separated by ``", "`` (e.g. ``features``), bytes are decoded as UTF-8 and
    anything else (a mapping, None …) is written as JSON text.

    Examples
    --------
    >>> netcdf_attr(["NDAI", "SD", "CORR"])
    'NDAI, SD, CORR'
    >>> netcdf_attr([-1, 1])
    array([-1,  1])
    >>> netcdf_attr({"a": 1})
    '{"a": 1}'
    """
    if isinstance(value, str) or _number(value):
        return value
    if isinstance(value, (bool, np.bool_)):
        return np.int8(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace").replace("\x00", "")
    if isinstance(value, (list, tuple, np.ndarray)):
        items = value.tolist() if isinstance(value, np.ndarray) else list(value)
        if items and all(isinstance(v, str) for v in items):
            return ", ".join(items)
        if items and all(_number(v) for v in items):
            return np.asarray(value)
        if items and all(isinstance(v, (bool, np.bool_)) for v in items):
            return np.asarray(items, dtype=np.int8)
        if not items:
            return ""
    return _json(value)


def tag_text(value: Any) -> str:
    """``value`` as the text of a GeoTIFF metadata tag.

    Numbers and numeric arrays as CF writes lists (blank-separated, e.g.
    ``flag_values = "-1 0 1"``), lists of strings joined with ``", "`` as in
    :func:`netcdf_attr`, anything else as JSON.

    Examples
    --------
    >>> tag_text(np.array([-1, 0, 1], dtype=np.int8)), tag_text(["NDAI", "SD"])
    ('-1 0 1', 'NDAI, SD')
    """
    value = netcdf_attr(value)
    if isinstance(value, str):
        return value
    if isinstance(value, np.ndarray):
        return " ".join(str(v) for v in value.tolist())
    return str(value.item() if isinstance(value, np.generic) else value)


def summarize_region(summarize: Callable[..., Mapping[str, Any]] | None,
                     blocks: Sequence[np.ndarray], total: Summary) -> None:
    """Add ``summarize(*blocks)`` to ``total`` when a summary is asked for."""
    if summarize is not None:
        add_summary(total, summarize(*blocks))
