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

The store may be a local path or an fsspec URL (``s3://``, ``memory://`` …):
the template, every region and the final status are written in place there,
and each task reopens the store from its URL and storage options (resolved
once, in the process that builds the graph, so workers need no configuration
of their own).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr
from dask.base import tokenize

from bigkern.errors import StoreError
from bigkern.io.integrity import missing_chunks
from bigkern.io.outputs import check_not_input, remove_output
from bigkern.io.urls import Location, PathOrURL, StorageOptions, location
from bigkern.io.zarr_store import KIND_ATTR, STATUS_ATTR, finish_store, read_root_attrs, to_zarr

__all__ = ["JOB_ATTR", "RegionReport", "write_regions"]

JOB_ATTR = "bigkern_job"

Summary = dict[str, int]


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


def _region_slices(
    index: tuple[int, ...], chunks: tuple[tuple[int, ...], ...]
) -> tuple[slice, ...]:
    starts = [sum(c[:i]) for c, i in zip(chunks, index, strict=True)]
    return tuple(slice(s, s + c[i]) for s, c, i in zip(starts, chunks, index, strict=True))


def _open_arrays(path: Location, names: Sequence[str]) -> dict[str, Any]:
    import zarr

    group = zarr.open_group(path.zarr_store(), mode="r+")
    # every chunk is written, even one holding only fill values: a missing chunk is damage
    return {n: group[n].with_config({"write_empty_chunks": True}) for n in names}


def _write_block(*blocks: np.ndarray, path: Location, names: tuple[str, ...],
                 summarize: Callable[..., Summary] | None, block_info: Any = None) -> np.ndarray:
    """Write one region of every variable; return its summary in a 1-element object array."""
    loc = block_info[0]["array-location"]
    region = tuple(slice(a, b) for a, b in loc)
    arrays = _open_arrays(path, names)
    for name, block in zip(names, blocks, strict=True):
        arrays[name][region] = block
    out = np.empty((1,) * blocks[0].ndim, dtype=object)
    out.flat[0] = summarize(*blocks) if summarize else {}
    return out


def _verify_region(path: Location, names: tuple[str, ...], region: tuple[slice, ...],
                   summarize: Callable[..., Summary] | None) -> Summary | None:
    """Read one finished region back (checksums verified); None if a chunk is damaged."""
    try:
        arrays = _open_arrays(path, names)
        blocks = [np.asarray(arrays[n][region]) for n in names]
    except Exception:  # a checksum mismatch or an undecodable chunk: recompute it
        return None
    return summarize(*blocks) if summarize else {}


def _identity(path: Location) -> str:
    """The store's full identity for task names: resolved local path, or the URL."""
    return str(path.local_path.resolve()) if path.local else f"{path.protocol}://{path.path}"


def _add(total: Summary, part: Summary) -> None:
    for k, v in part.items():
        total[k] = total.get(k, 0) + int(v)


def _mark_writing(path: Location) -> None:
    import zarr

    zarr.open_group(path.zarr_store(), mode="r+").attrs[STATUS_ATTR] = "writing"


def _start_or_resume(ds: xr.Dataset, path: Location, *, kind: str, job: str, overwrite: bool,
                     resume: bool) -> bool:
    """Create the template, or decide to resume the one at ``path``; True when resuming."""
    if path.exists():
        attrs = read_root_attrs(path) or {}
        same_job = attrs.get(KIND_ATTR) == kind and attrs.get(JOB_ATTR) == job
        if same_job and resume and not overwrite:
            _mark_writing(path)  # finished or not, it is verified and repaired
            return True
        if not overwrite:
            if attrs.get(STATUS_ATTR) == "writing":
                raise StoreError(
                    f"{path} is an unfinished output of a different job (other inputs, model "
                    f"or settings): pass overwrite=True (CLI: --overwrite) to start again")
            raise StoreError(f"{path} exists; pass overwrite=True (CLI: --overwrite) to "
                             f"replace it")
        remove_output(path)
    template = ds.copy()
    # coordinates are written with the template, not by the region tasks: a lazy one (e.g. the
    # ``source`` file names of an ingested store, read through open_checked) is loaded here,
    # else its chunks would never be written and the finished store would read as damaged
    lazy = {k: v.variable.load() for k, v in template.coords.items()
            if k not in template.dims and isinstance(v.data, da.Array)}
    template = template.assign_coords(lazy)
    template.attrs = {**ds.attrs, JOB_ATTR: job}
    for name in template.variables:
        template[name].encoding.pop("chunks", None)
        template[name].encoding.pop("preferred_chunks", None)
    to_zarr(template, path, kind=kind, compute=False, consolidated=False)
    return False


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
) -> RegionReport:
    """Write the dask-backed data variables of ``ds`` region by region, resumably.

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
        fsspec options for a URL (see :func:`bigkern.io.urls.location`).
    """
    from bigkern.scheduling import compute

    given = path
    path = location(path, storage_options)
    check_not_input(path, inputs)
    names = tuple(str(n) for n in ds.data_vars)
    arrays = [ds[n].data if isinstance(ds[n].data, da.Array) else da.asarray(ds[n].data)
              for n in names]
    chunks = arrays[0].chunks
    if any(a.chunks != chunks for a in arrays):
        raise ValueError(f"the variables {names} must share their chunks")
    resumed = _start_or_resume(ds, path, kind=kind, job=job, overwrite=overwrite, resume=resume)
    grid = [range(len(c)) for c in chunks]
    regions = list(itertools.product(*grid))
    shown = path.local_path if path.local else str(given)
    report = RegionReport(shown, len(regions), resumed=resumed)

    todo = set(regions)
    if resumed:
        lost = missing_chunks(path, names)
        lost_regions = {idx for chunk_list in lost.values() for idx in chunk_list}
        present = [idx for idx in regions if idx not in lost_regions]
        import dask

        checks = [dask.delayed(_verify_region, pure=False)(
            path, names, _region_slices(idx, chunks), summarize) for idx in present]
        results = compute(*checks, label=f"verifying finished regions of {path}") if checks \
            else ()
        for idx, result in zip(present, results, strict=True):
            if result is None:
                report.n_damaged += 1
            else:
                todo.discard(idx)
                report.n_reused += 1
                _add(report.summary, result)

    if todo:
        written = da.map_blocks(
            _write_block, *arrays, path=path, names=names, summarize=summarize,
            chunks=tuple((1,) * len(c) for c in chunks), dtype=object,
            name=f"bigkern-write-{tokenize(job, _identity(path))}",
        )
        ordered = sorted(todo)
        results = compute(*[written.blocks[idx] for idx in ordered],
                          label=label or f"writing {path}")
        for part in results:
            _add(report.summary, np.asarray(part).flat[0])
        report.n_computed = len(ordered)

    lost = missing_chunks(path, names)
    if lost:
        name, idx = next(iter(lost.items()))
        raise StoreError(f"store {path}: variable {name!r}, chunk {idx[0]} was not written")
    finish_store(path)
    return report
