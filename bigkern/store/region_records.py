"""One region of a resumable zarr write: its chunks, its commit record, its check.

:func:`bigkern.store.regions.write_regions` runs one task per chunk-aligned region.
Each task opens the store's arrays (refusing a store that is not the one its job
created, :data:`STORE_ID_ATTR`), writes every variable's chunk of the region, and
then the region's commit record ``.bigkern-regions/<store id>/<i.j.k>`` (job, store
id, a CRC-32 of every variable's values). A rerun verifies a finished region by
reading it back against that record instead of computing it again.
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from bigkern.errors import StoreError
from bigkern.store.outputs import REGIONS_FOLDER
from bigkern.store.urls import Location

__all__ = ["STORE_ID_ATTR", "Summary", "add_summary", "open_region_arrays", "record_location",
           "region_digest", "region_key", "verify_region", "write_region_block",
           "write_region_record"]

# a random id given to a store when its template is created: every region task checks it
# before writing, so a store replaced by another writer (or another store that a worker
# resolves the same path to) is never written into
STORE_ID_ATTR = "bigkern_store_id"

Summary = dict[str, int]


def open_region_arrays(path: Location, names: Sequence[str], store_id: str | None = None
                       ) -> dict[str, Any]:
    """The store's arrays, writable; with ``store_id``, only if the store is still that one."""
    import zarr

    problem = None
    try:
        group = zarr.open_group(path.zarr_store(), mode="r+", use_consolidated=False)
    except Exception as err:  # gone, or not a store at this path on this machine
        # the message is built here and raised below, outside the handler: an error whose
        # context holds zarr's exception (and the store in it) may not survive pickling
        # from a worker, and would reach the client as a bare Exception
        problem = (f"store {path}: cannot open it for writing here ({type(err).__name__}: "
                   f"{err}); it was removed by another writer, or this worker does not see the "
                   f"client's file system at that path")
    if problem is not None:
        raise StoreError(problem)
    if store_id is not None and group.attrs.get(STORE_ID_ATTR) != store_id:
        raise StoreError(
            f"store {path} is not the store this job created (its id is "
            f"{group.attrs.get(STORE_ID_ATTR)!r}, not {store_id!r}): another writer replaced "
            f"it, or this worker resolves the path to another store; refusing to write")
    present = {name for name, _ in group.arrays()}
    absent = [n for n in names if n not in present]
    if absent:
        raise StoreError(f"store {path} lacks the array(s) {absent} its template should hold: "
                         f"it is damaged; write it again with --overwrite")
    # every chunk is written, even one holding only fill values: a missing chunk is damage
    return {n: group[n].with_config({"write_empty_chunks": True}) for n in names}


def region_key(index: tuple[int, ...]) -> str:
    """A region's name in the commit records: its chunk index joined by dots.

    Examples
    --------
    >>> region_key((0, 3, 1)), region_key(())
    ('0.3.1', '0')
    """
    return ".".join(str(i) for i in index) or "0"


def region_digest(block: np.ndarray) -> int:
    """CRC-32 of a block's values (C order, native bytes) and shape."""
    data = np.ascontiguousarray(block)
    if data.dtype == object:
        return zlib.crc32(repr(data.tolist()).encode(), zlib.crc32(repr(data.shape).encode()))
    return zlib.crc32(memoryview(data).cast("B"), zlib.crc32(repr(data.shape).encode()))


def record_location(path: Location, store_id: str, index: tuple[int, ...]) -> Location:
    """Where the commit record of region ``index`` of store ``store_id`` is written."""
    return path.joinpath(REGIONS_FOLDER, store_id, region_key(index))


def write_region_record(path: Location, store_id: str, job: str, index: tuple[int, ...],
                  names: tuple[str, ...], blocks: Sequence[np.ndarray]) -> None:
    """The region's commit record, written after its chunks: who wrote it, and what."""
    record = {"job": job, "store": store_id, "region": list(index),
              "digests": {n: region_digest(b) for n, b in zip(names, blocks, strict=True)}}
    where = record_location(path, store_id, index)
    data = json.dumps(record, sort_keys=True).encode()
    if path.local:
        where.local_path.parent.mkdir(parents=True, exist_ok=True)
        temp = where.local_path.with_name(f".{where.name}.tmp")
        temp.write_bytes(data)
        os.replace(temp, where.local_path)
    else:
        where.fs.pipe_file(where.path, data)


def add_summary(total: Summary, part: Mapping[str, Any]) -> None:
    """Add the counts of one region to ``total``.

    Examples
    --------
    >>> total = {"pixels": 4}
    >>> add_summary(total, {"pixels": 6, "no_prediction": 1})
    >>> total
    {'pixels': 10, 'no_prediction': 1}
    """
    for key, value in part.items():
        total[key] = total.get(key, 0) + int(value)


def write_region_block(*blocks: np.ndarray, path: Location, names: tuple[str, ...], job: str,
                 store_id: str, summarize: Callable[..., Summary] | None,
                 block_info: Any = None) -> np.ndarray:
    """Write one region of every variable; return its summary in a 1-element object array."""
    loc = block_info[0]["array-location"]
    index = tuple(block_info[0]["chunk-location"])
    region = tuple(slice(a, b) for a, b in loc)
    arrays = open_region_arrays(path, names, store_id)
    for name, block in zip(names, blocks, strict=True):
        arrays[name][region] = block
    write_region_record(path, store_id, job, index, names, blocks)
    out = np.empty((1,) * blocks[0].ndim, dtype=object)
    out.flat[0] = summarize(*blocks) if summarize else {}
    return out


def verify_region(path: Location, names: tuple[str, ...], index: tuple[int, ...],
                   region: tuple[slice, ...], job: str, store_id: str,
                   summarize: Callable[..., Summary] | None) -> Summary | None:
    """Read one finished region back; None unless its chunks pass their checksums and match
    the commit record this job and store wrote for them."""
    try:
        where = record_location(path, store_id, index)
        raw = where.local_path.read_bytes() if path.local else where.fs.cat_file(where.path)
        record = json.loads(raw.decode())
        if record.get("job") != job or record.get("store") != store_id \
                or record.get("region") != list(index):
            return None
        arrays = open_region_arrays(path, names)
        blocks = [np.asarray(arrays[n][region]) for n in names]
    except Exception:  # no record, a checksum mismatch or an undecodable chunk: recompute it
        return None
    if any(record["digests"].get(n) != region_digest(b)
           for n, b in zip(names, blocks, strict=True)):
        return None  # values another writer (or a swap) put there
    return summarize(*blocks) if summarize else {}
