"""Bounded allocation and a chunk check that comes first.

Small inputs that declare huge sizes are refused from what they declare,
before anything of that size is allocated, listed or graphed; a store of too
many small chunks is refused, rechunked or warned about before any compute.
Real files and stores on disk, the real command where users meet it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import tracemalloc
import warnings

import numpy as np
import pytest
import xarray as xr
import zarr

from bigkern import config
from bigkern.cluster.chunking import ChunkWarning
from bigkern.datasets.misr_text import read_misr_text
from bigkern.errors import LabelError, StoreError
from bigkern.scenes import open_scenes, write_scenes
from bigkern.store.integrity import open_checked

DIMS = ("scene", "y", "x")
BOMB = "0 0 1 0.1 1 0.5 1 1 1 1 1\n100000 100000 -1 0.1 1 0.5 1 1 1 1 1\n"


def test_misr_text_declaring_a_huge_grid_is_refused_at_once(tmp_path):
    bomb = tmp_path / "bomb.txt"
    bomb.write_text(BOMB)
    _refused_at_once(bomb, r"bomb.txt: its pixel indices span y 0..100000 and x "
                           r"0..100000, a grid of 100,001 x 100,001 = 1e\+10 "
                           r"pixels .* more than bigkern.max_grid_pixels")


def _refused_at_once(path, match: str) -> None:
    """``read_misr_text(path)`` refused with ``match`` in under 1 s and 50 MiB traced."""
    tracemalloc.start()
    t = time.perf_counter()
    try:
        with pytest.raises(StoreError, match=match):
            read_misr_text(path)
        elapsed = time.perf_counter() - t
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert elapsed < 1.0 and peak < 50 * 2**20, (elapsed, peak)


def test_a_two_line_file_declaring_a_3000_square_grid_allocates_nothing(tmp_path):
    """Refused although under max_grid_pixels (9e6 < 1e8): 4.5e6 pixels per line."""
    sparse = tmp_path / "sparse.txt"
    sparse.write_text("1 1 1 0.1 1 0.5 1 1 1 1 1\n3000 3000 -1 0.1 1 0.5 1 1 1 1 1\n")
    _refused_at_once(sparse, r"sparse.txt: .* a grid of 3,000 x 3,000 = 9,000,000 "
                             r"pixels for only 2 pixel line\(s\) \(4,500,000 per "
                             r"line, more than bigkern.max_grid_pixels_per_line")
    with config.set(max_grid_pixels_per_line=5e6):  # a genuinely sparse file: the setting
        assert read_misr_text(sparse).sizes == {"scene": 1, "y": 3000, "x": 3000}


def test_the_grid_limit_counts_every_scene_and_is_a_setting(tmp_path):
    lines = "".join(f"{y} {x} 1 0.1 1 0.5 1 1 1 1 1\n" for y in range(30) for x in range(40))
    files = [tmp_path / f"s{i}.txt" for i in range(3)]
    for f in files:
        f.write_text(lines)
    assert read_misr_text(files).sizes == {"scene": 3, "y": 30, "x": 40}
    with config.set(max_grid_pixels=3 * 1200 - 1), \
            pytest.raises(StoreError, match=r"a grid of 3 scenes of 30 x 40 = 3.6e\+03 pixels"):
        read_misr_text(files)


def test_ingest_of_a_grid_bomb_fails_in_one_line_and_writes_nothing(tmp_path):
    (tmp_path / "bomb.txt").write_text(BOMB)
    run = subprocess.run([sys.executable, "-m", "bigkern", "ingest", "misr-text", "bomb.txt",
                          "-o", "out.zarr"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode != 0
    assert "Traceback" not in run.stderr and "MemoryError" not in run.stderr, run.stderr
    assert run.stderr.strip().splitlines()[-1].startswith(
        "bigkern: error: bomb.txt: its pixel indices span"), run.stderr
    assert not (tmp_path / "out.zarr").exists()


def _declared(path, shape, chunks, *, index=None):
    """A zarr v3 store of metadata only: arrays as large as declared, no chunk written."""
    group = zarr.open_group(str(path), mode="w", zarr_format=3)
    group.create_array("NDAI", shape=shape, chunks=chunks, dtype="float32",
                       dimension_names=DIMS)
    if index is not None:
        group.create_array("y", shape=(index,), chunks=(index,), dtype="int64",
                           dimension_names=("y",))
    zarr.consolidate_metadata(str(path))
    return path


@pytest.mark.timeout(60)
@pytest.mark.parametrize("opener", [open_scenes, open_checked])
def test_a_store_declaring_a_huge_shape_is_refused_from_metadata(tmp_path, opener):
    path = _declared(tmp_path / "huge.zarr", (10**6, 10**6, 10**6), (1, 1000, 1000))
    t = time.perf_counter()
    with pytest.raises(StoreError, match=r"array 'NDAI' declares shape \(1000000, 1000000, "
                                         r"1000000\) \(1e\+18 elements\), more than "
                                         r"bigkern.store_limits.max_elements"):
        opener(path)
    assert time.perf_counter() - t < 2


@pytest.mark.timeout(60)
def test_a_store_declaring_too_many_chunks_is_refused_before_listing(tmp_path):
    path = _declared(tmp_path / "many.zarr", (1, 4000, 4000), (1, 10, 10))  # 160,000 chunks
    with config.set(**{"store_limits.max_chunks": 100_000}), \
            pytest.raises(StoreError, match=r"array 'NDAI' declares 160,000 chunks"):
        open_checked(path)
    with pytest.raises(StoreError, match=r"chunks=\{'y': 1, 'x': 1\} would read array 'NDAI' "
                                         r"in 16,000,000 tasks"):
        open_checked(path, chunks={"y": 1, "x": 1})


def test_a_huge_dimension_coordinate_is_refused_before_it_is_loaded(tmp_path):
    path = _declared(tmp_path / "index.zarr", (1, 5000, 10), (1, 5000, 10), index=5000)
    with config.set(**{"store_limits.max_index_length": 4999}), \
            pytest.raises(StoreError, match=r"a coordinate 'y' of 5,000 values, more than "
                                            r"bigkern.store_limits.max_index_length"):
        open_checked(path)


#: The chunk guidance scaled down 100 times, so that small stores cross it.
SMALL_GUIDANCE = {"chunk_guidance.min_pixels_per_task": 10_000,
                  "chunk_guidance.target_pixels_per_task": 100_000}


@pytest.fixture
def small_guidance():
    with config.set(**SMALL_GUIDANCE):
        yield


def _small_chunked(path, label_value=0):
    """One 128 x 128 scene in 32 chunks of 512 pixels (the scaled guidance: >= 10^4 a task)."""
    ds = xr.Dataset({
        "NDAI": (DIMS, np.random.default_rng(0).random((1, 128, 128), dtype=np.float32)),
        "label": (DIMS, np.full((1, 128, 128), label_value, dtype=np.int8),
                  {"flag_values": np.array([-1, 0, 1], dtype=np.int8),
                   "flag_meanings": "clear unlabelled cloud"}),
    })
    if label_value not in (-1, 0, 1):  # write_scenes refuses such labels: written elsewhere
        encoding = {v: {"chunks": (1, 16, 32)} for v in ds.data_vars}
        ds.to_zarr(path, encoding=encoding, zarr_format=3)
        return path
    return write_scenes(ds, path, chunks={"scene": 1, "y": 16, "x": 32})


def test_too_many_tasks_error_refuses_before_any_computation(tmp_path, client, small_guidance):
    # the labels are invalid: before, open_scenes computed them (one task per chunk) and
    # raised LabelError; the chunk check now comes first, from metadata alone
    store = _small_chunked(tmp_path / "s.zarr", label_value=7)
    with config.set(**{"chunk_guidance.too_many_tasks": "error"}):
        t = time.perf_counter()
        with pytest.raises(StoreError, match=r"refused before any computation: its chunks make "
                                             r"32 tasks of 512 pixels"):
            open_scenes(store)
        assert time.perf_counter() - t < 2
    with config.set(**{"chunk_guidance.too_many_tasks": "warn"}), \
            pytest.warns(ChunkWarning), pytest.raises(LabelError):
        open_scenes(store)


def test_too_many_tasks_rechunk_reads_whole_store_chunks(tmp_path, client, small_guidance):
    store = _small_chunked(tmp_path / "s.zarr")
    with pytest.warns(ChunkWarning, match=r"Reading it in the recommended chunks"):
        ds = open_scenes(store)  # the default policy
    assert ds["NDAI"].data.numblocks == (1, 1, 1)
    assert ds["label"].data.numblocks == (1, 1, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ChunkWarning)
        own = open_scenes(store, chunks={"y": 16, "x": 32})  # given: kept (and warned)
    assert own["NDAI"].data.numblocks == (1, 8, 4)
    np.testing.assert_array_equal(ds["NDAI"].values, own["NDAI"].values)


def test_an_unknown_policy_is_an_error(tmp_path, client, small_guidance):
    store = _small_chunked(tmp_path / "s.zarr")
    with config.set(**{"chunk_guidance.too_many_tasks": "refuse"}), \
            pytest.raises(StoreError, match=r"too_many_tasks is 'refuse'; expected one of"):
        open_scenes(store)


@pytest.mark.slow
def test_fit_refuses_a_store_of_tiny_chunks_in_one_line(tmp_path, client):
    store = _small_chunked(tmp_path / "s.zarr")
    env = {**os.environ, "BIGKERN_CHUNK_GUIDANCE__TOO_MANY_TASKS": "error",
           "BIGKERN_CHUNK_GUIDANCE__MIN_PIXELS_PER_TASK": "10000", "BIGKERN_PROGRESS": "false"}
    run = subprocess.run([sys.executable, "-m", "bigkern", "fit", str(store), "-o", "m.zarr",
                          "--features", "NDAI", "--workers", "1"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=240, env=env)
    assert run.returncode != 0
    assert "Traceback" not in run.stderr, run.stderr
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith("bigkern: error: scene store ") and "refused before any" in last
    assert not (tmp_path / "m.zarr").exists()
