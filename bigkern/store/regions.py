"""Resumable writes of a lazy dataset into a zarr store, one chunk-aligned region per task.

The store is created as a *template* first — metadata, coordinates and the
root attributes ``bigkern_status = "writing"`` and ``bigkern_job`` (what is
being written: a digest of the inputs) — and each region (one zarr chunk of
every variable) is then computed and written by one task. A region is
finished when every variable's chunk of it is in storage and passes its
CRC-32C checksum: the chunks themselves are the record of progress, so a
process killed at any moment loses at most the regions it was writing.

Rerunning the same job on the same path *resumes* — or, if the store was
finished, repairs it: finished regions are verified (read and checksummed,
not recomputed) and kept untouched; only the missing or damaged ones are
computed. Metadata is consolidated and the store
marked ``complete`` last of all.

One writer: the output is claimed first (:mod:`bigkern.store.claims`); the
template gets a random ``bigkern_store_id`` that every region task checks
before it writes (a store replaced meanwhile, or another store a worker
resolves the path to, is never written into); and after its chunks each task
writes the region's commit record, ``.bigkern-regions/<store id>/<i.j.k>``
(job, store id, a CRC-32 of every variable's values). A region verifies only
with a record of this job and store whose digests match the values read, so a
store holding another job's regions never verifies. With ``overwrite`` the
new store is written beside the old one (``.<name>.bigkern-partial-<job>``,
resumed by a rerun of the same job) and swapped in once complete.

The store may be a local path or an fsspec URL (``s3://``, ``memory://`` …):
the template, every region and the final status are written in place there,
and each task reopens the store from its URL and storage options (resolved
once, in the process that builds the graph, so workers need no configuration
of their own).
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr
from dask.base import tokenize

from bigkern.errors import StoreError
from bigkern.store.claims import OutputClaim, claim_output
from bigkern.store.integrity import missing_chunks
from bigkern.store.outputs import (
    PARTIAL_TAG,
    check_not_input,
    check_replaceable,
    clean_partials,
    remove_output,
    store_kind,
)
from bigkern.store.region_records import (
    STORE_ID_ATTR,
    Summary,
    add_summary,
    open_region_arrays,
    verify_region,
    write_region_block,
)
from bigkern.store.staging import finish_interrupted_publish, publish_staged
from bigkern.store.urls import Location, PathOrURL, StorageOptions, location
from bigkern.store.zarr_store import KIND_ATTR, STATUS_ATTR, finish_store, read_root_attrs, to_zarr

__all__ = ["JOB_ATTR", "STORE_ID_ATTR", "RegionReport", "write_regions"]

JOB_ATTR = "bigkern_job"



@dataclass
class RegionReport:
    """What :func:`write_regions` did (``path``: a :class:`~pathlib.Path`, or the URL given)."""

    path: Path | str
    n_regions: int
    n_computed: int = 0
    n_reused: int = 0
    n_damaged: int = 0
    resumed: bool = False
    summary: Summary = field(default_factory=dict)
    #: The results of ``along`` (computed with the regions), or empty.
    along: list[Any] = field(default_factory=list)
    #: What a check of the inputs suspected (a prediction's undeclared fill values).
    suspects: list[Any] = field(default_factory=list)


def _region_slices(
    index: tuple[int, ...], chunks: tuple[tuple[int, ...], ...]
) -> tuple[slice, ...]:
    starts = [sum(c[:i]) for c, i in zip(chunks, index, strict=True)]
    return tuple(slice(s, s + c[i]) for s, c, i in zip(starts, chunks, index, strict=True))


def _identity(path: Location) -> str:
    """The store's full identity for task names: resolved local path, or the URL."""
    return str(path.local_path.resolve()) if path.local else f"{path.protocol}://{path.path}"


def _mark_writing(path: Location) -> None:
    import zarr

    zarr.open_group(path.zarr_store(), mode="r+", use_consolidated=False).attrs[
        STATUS_ATTR] = "writing"


def _resumable(path: Location, kind: str, job: str, names: Sequence[str]) -> str | None:
    """The store id of the store at ``path`` if this job may resume it, else None.

    A store of this job whose template is incomplete (a run killed while creating it: an
    array is missing) is not resumable; it is started again.
    """
    import zarr

    attrs = read_root_attrs(path) or {}
    if attrs.get(KIND_ATTR) != kind or attrs.get(JOB_ATTR) != job \
            or not isinstance(attrs.get(STORE_ID_ATTR), str):
        return None
    try:
        group = zarr.open_group(path.zarr_store(read_only=True), mode="r",
                                use_consolidated=False)
        present = {name for name, _ in group.arrays()}
    except Exception:
        return None
    return str(attrs[STORE_ID_ATTR]) if set(names) <= present else None


def _lazy_coords(ds: xr.Dataset) -> dict[str, xr.Variable]:
    """The dask-backed coordinates of ``ds`` that tasks write, chunked like its regions.

    A non-dimension coordinate on dims of the data variables (``lat``/``lon`` on
    ``(y, x)`` or on every pixel, a time per scene read lazily …) may be as large
    as a data variable: it is written block by block by tasks (:func:`_write_coords`),
    never loaded whole in this process. Its blocks are the regions' blocks along
    its dims, so the zarr chunks of the coordinate are whole blocks, one writer each.
    """
    if not ds.data_vars:
        return {}
    first = ds[next(iter(ds.data_vars))]
    if not isinstance(first.data, da.Array):
        return {}
    by_dim = dict(zip(first.dims, first.data.chunks, strict=True))
    out = {}
    for name, coord in ds.coords.items():
        if name in ds.dims or not isinstance(coord.data, da.Array) or coord.ndim == 0 \
                or not set(coord.dims) <= set(by_dim):
            continue
        if coord.dtype.kind in "mM":  # times are CF-encoded (units, calendar) by xarray when
            continue  # written with the template; a task would write the raw nanoseconds
        data = coord.data.rechunk(tuple(by_dim[d] for d in coord.dims))
        out[str(name)] = xr.Variable(coord.dims, data, coord.attrs, coord.encoding)
    return out


def _write_coord_block(block: np.ndarray, *, path: Location, coord: str, store_id: str,
                       block_info: Any = None) -> np.ndarray:
    """Write one block of a coordinate (the store must still be this job's)."""
    region = tuple(slice(a, b) for a, b in block_info[0]["array-location"])
    open_region_arrays(path, (coord,), store_id)[coord][region] = block
    return np.zeros((1,) * block.ndim, dtype=np.int8)


def _write_coords(coords: dict[str, xr.Variable], target: _Target, job: str) -> None:
    """Write the lazy coordinates of a new or resumed store, block by block, in one compute.

    Done on every run, resumed or not: the blocks are the same values written again
    (cheap next to the regions), so a run killed while writing them leaves nothing
    to verify. They carry no commit record: the regions' records are about the data.
    """
    if not coords:
        return
    from bigkern.cluster.compute import compute

    parts = []
    for name, var in coords.items():
        data = var.data
        token = tokenize(job, _identity(target.store), name, target.store_id)
        parts.append(da.map_blocks(
            _write_coord_block, data, path=target.store, coord=name, store_id=target.store_id,
            chunks=tuple((1,) * len(c) for c in data.chunks), dtype=np.int8,
            name=f"bigkern-write-coord-{token}",
        ).sum())
    compute(*parts, label=f"writing the coordinates of {target.store}")


def _create_template(ds: xr.Dataset, path: Location, *, kind: str, job: str) -> str:
    """Write the store's metadata and coordinates with a fresh store id; return the id."""
    store_id = uuid.uuid4().hex
    template = ds.copy()
    # coordinates are written with the template, not by the region tasks: a lazy one on dims
    # of the data (lat/lon …) is written block by block by _write_coords, on this run and on
    # any that resumes it; another lazy one (e.g. the ``source`` file names of an ingested
    # store, read through open_checked) is loaded here, else its chunks would never be written
    # and the finished store would read as damaged
    by_tasks = _lazy_coords(ds)
    lazy = {k: by_tasks[str(k)] if str(k) in by_tasks else v.variable.load()
            for k, v in template.coords.items()
            if k not in template.dims and isinstance(v.data, da.Array)}
    template = template.assign_coords(lazy)
    template.attrs = {**ds.attrs, JOB_ATTR: job, STORE_ID_ATTR: store_id}
    for name in template.variables:
        template[name].encoding.pop("chunks", None)
        template[name].encoding.pop("preferred_chunks", None)
    to_zarr(template, path, kind=kind, compute=False, consolidated=False)
    return store_id


@dataclass
class _Target:
    """Where the regions go: the output itself, or a staged sibling swapped in at the end."""

    store: Location
    store_id: str
    resumed: bool
    staged: bool


def _choose_target(ds: xr.Dataset, path: Location, claim: OutputClaim, *, kind: str, job: str,
                   overwrite: bool, resume: bool) -> _Target:
    """Resume the store at ``path``, start one there, or stage a replacement beside it."""
    finish_interrupted_publish(claim)  # a killed writer's complete output is put in place first
    if not path.exists():
        return _Target(path, _create_template(ds, path, kind=kind, job=job), False, False)
    attrs = read_root_attrs(path) or {}
    found = store_kind(path)
    if found is not None and found != kind:
        raise StoreError(f"{path} is a bigkern {found} store, not {kind}: refusing to replace "
                         f"it with {kind}, even with --overwrite; choose another output path")
    names = tuple(map(str, ds.variables))  # a store lacking a coordinate is not resumed
    same_id = _resumable(path, kind, job, names)
    if same_id is None and resume and attrs.get(JOB_ATTR) == job and found == kind \
            and attrs.get(STATUS_ATTR) == "writing":
        # this job's own store, killed while its template was being made: start it again
        remove_output(path)  # bigkern's (checked inside), unfinished, and we hold the claim
        return _Target(path, _create_template(ds, path, kind=kind, job=job), False, False)
    if not overwrite:
        if same_id is not None and resume:
            _mark_writing(path)  # finished or not, it is verified and repaired
            return _Target(path, same_id, True, False)
        if same_id is not None:
            state = "complete" if attrs.get(STATUS_ATTR) == "complete" else "unfinished"
            raise StoreError(
                f"{path} exists (a {state} output of this same job): rerun without "
                f"--no-resume (resume=False) to verify it and compute what is missing, or pass "
                f"--overwrite (overwrite=True) to compute it all again")
        if attrs.get(STATUS_ATTR) == "writing":
            raise StoreError(
                f"{path} is an unfinished output of a different job (other inputs, model "
                f"or settings): pass overwrite=True (CLI: --overwrite) to start again")
        raise StoreError(f"{path} exists; pass overwrite=True (CLI: --overwrite) to "
                         f"replace it")
    check_replaceable(path, kind=kind)
    # the old output stays whole until the new one is complete: write beside it, with a
    # name fixed by the job so that a rerun of an interrupted --overwrite resumes there
    staged = path.with_name(f".{path.name}{PARTIAL_TAG}{tokenize(job)[:12]}")
    clean_partials(claim, keep=[staged])
    if staged.exists():
        staged_id = _resumable(staged, kind, job, names)
        if staged_id is not None and resume:
            _mark_writing(staged)
            return _Target(staged, staged_id, True, True)
        remove_output(staged)  # bigkern's own (checked), of a dead run (we hold the claim)
    return _Target(staged, _create_template(ds, staged, kind=kind, job=job), False, True)


def write_regions(
    ds: xr.Dataset,
    path: PathOrURL | Location,
    *,
    kind: str,
    job: str,
    overwrite: bool = False,
    resume: bool = True,
    inputs: Sequence[PathOrURL | Location] = (),
    summarize: Callable[..., Summary] | None = None,
    label: str | None = None,
    storage_options: StorageOptions = None,
    along: Sequence[Any] = (),
) -> RegionReport:
    """Write the dask-backed data variables of ``ds`` region by region, resumably.

    The coordinates of ``ds`` and its attributes are written with the store's
    template; a dask-backed coordinate on the data's dims (``lat``/``lon`` …)
    is written block by block by tasks, again on every run that resumes the
    store, so it is whole whenever the store is. Every chunk of every
    coordinate is checked to be in storage before the store is marked complete.

    Parameters
    ----------
    ds : xarray.Dataset
        Data variables with the same dims and dask chunks; each dask chunk
        becomes one zarr chunk (a region).
    path : str, Path or URL
        The store: a local path or an fsspec URL.
    kind : str
        ``bigkern_kind`` of the store (e.g. ``predictions``).
    job : str
        Digest of what is written (inputs, model, settings): a rerun resumes
        only a store started by the same job.
    overwrite : bool
        Replace an existing store that bigkern wrote (never anything else).
    resume : bool
        Resume an unfinished store of the same job (default); with False an
        unfinished store needs ``overwrite``.
    inputs : sequence of paths
        Inputs of the job: ``path`` may not be, contain or lie inside them.
    summarize : callable, optional
        ``summarize(*blocks) -> dict[str, int]`` on each region's blocks (in
        the order of ``ds.data_vars``); the sums over all regions, finished
        earlier or now, are returned in :attr:`RegionReport.summary`.
    label : str, optional
        Progress label.
    storage_options : mapping, optional
        fsspec options for a URL (see :func:`bigkern.store.urls.location`).
    along : sequence of dask collections, optional
        Computed in the same computation as the regions, sharing its tasks (a
        check of what the data variables are computed from), when every region
        is computed now; their results are :attr:`RegionReport.along` (empty
        when a resumed store computed only some regions).
    """
    from bigkern.cluster.compute import compute

    given = path
    path = location(path, storage_options)
    check_not_input(path, inputs)
    names = tuple(str(n) for n in ds.data_vars)
    arrays = [ds[n].data if isinstance(ds[n].data, da.Array) else da.asarray(ds[n].data)
              for n in names]
    chunks = arrays[0].chunks
    if any(a.chunks != chunks for a in arrays):
        raise ValueError(f"the variables {names} must share their chunks")
    with claim_output(path) as claim:
        target = _choose_target(ds, path, claim, kind=kind, job=job, overwrite=overwrite,
                                resume=resume)
        _write_coords(_lazy_coords(ds), target, job)
        report = _write_target(arrays, names, chunks, target, job=job, summarize=summarize,
                               label=label or f"writing {given}", compute=compute,
                               along=along)
        lost = missing_chunks(target.store, [str(k) for k in ds.coords])
        if lost:
            name, idx = next(iter(lost.items()))
            raise StoreError(f"store {target.store}: coordinate {name!r}, chunk {idx[0]} was "
                             f"not written")
        report.path = path.local_path if path.local else str(given)
        claim.check()  # still ours: nobody else has touched the output meanwhile
        finish_store(target.store)
        if target.staged:
            publish_staged(target.store, path, kind=kind)
    return report


def _write_target(arrays: list[da.Array], names: tuple[str, ...],
                  chunks: tuple[tuple[int, ...], ...], target: _Target, *, job: str,
                  summarize: Callable[..., Summary] | None, label: str,
                  compute: Callable[..., Any], along: Sequence[Any] = ()
                  ) -> RegionReport:
    """Verify the regions a resumed store holds, then compute and write the others."""
    import dask

    store = target.store
    regions = list(itertools.product(*(range(len(c)) for c in chunks)))
    report = RegionReport(store.local_path if store.local else store.url, len(regions),
                          resumed=target.resumed)
    todo = set(regions)
    if target.resumed:
        lost = missing_chunks(store, names)
        lost_regions = {idx for chunk_list in lost.values() for idx in chunk_list}
        present = [idx for idx in regions if idx not in lost_regions]
        checks = [dask.delayed(verify_region, pure=False)(
            store, names, idx, _region_slices(idx, chunks), job, target.store_id, summarize)
            for idx in present]
        results = compute(*checks, label=f"verifying finished regions of {store}") \
            if checks else ()
        for idx, result in zip(present, results, strict=True):
            if result is None:
                report.n_damaged += 1
            else:
                todo.discard(idx)
                report.n_reused += 1
                add_summary(report.summary, result)

    if todo:
        written = da.map_blocks(
            write_region_block, *arrays, path=store, names=names, job=job,
            store_id=target.store_id, summarize=summarize,
            chunks=tuple((1,) * len(c) for c in chunks), dtype=object,
            name=f"bigkern-write-{tokenize(job, _identity(store), target.store_id)}",
        )
        ordered = sorted(todo)
        extra = list(along) if len(ordered) == len(regions) else []
        results = compute(*[written.blocks[idx] for idx in ordered], *extra, label=label)
        for part in results[:len(ordered)]:
            add_summary(report.summary, np.asarray(part).flat[0])
        report.along = list(results[len(ordered):])
        report.n_computed = len(ordered)

    lost = missing_chunks(store, names)
    if lost:
        name, idx = next(iter(lost.items()))
        raise StoreError(f"store {store}: variable {name!r}, chunk {idx[0]} was not written")
    return report
