"""Chunk guidance: task counts of a chunking, recommended chunks, and the warning."""

from __future__ import annotations

import contextlib
import itertools
import re
import warnings
from collections.abc import Iterator

import dask.array as da
import numpy as np
import pytest
import xarray as xr

from bigkern import config
from bigkern.cluster.chunking import ChunkWarning, check_chunks
from bigkern.cluster.task_plans import TaskPlan, task_plan
from bigkern.errors import BigkernWarning
from bigkern.scenes import open_scenes, write_scenes

# 10^7 tasks of 10^4 pixels: a 400 GB float32 array that is never computed
HUGE = ((1000, 10_000, 10_000), (1, 100, 100))


def _brute_force(chunks: tuple[tuple[int, ...], ...]) -> np.ndarray:
    """Pixels of every chunk, listed one by one."""
    return np.array([int(np.prod(c)) for c in itertools.product(*chunks)])


@contextlib.contextmanager
def _no_chunk_warning() -> Iterator[None]:
    """A context in which a ChunkWarning is an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", ChunkWarning)
        yield


def test_plan_of_regular_chunks_with_a_ragged_edge():
    plan = task_plan(da.zeros((10, 1050, 1000), chunks=(1, 100, 1000)))
    assert isinstance(plan, TaskPlan)
    assert plan.dims == ("dim_0", "dim_1", "dim_2")
    assert plan.n_tasks == 10 * 11
    assert plan.pixels == 10 * 1050 * 1000
    assert plan.pixels_per_task_min == 50 * 1000  # the last 50 rows
    assert plan.pixels_per_task_median == 100 * 1000
    assert plan.bytes_per_task == 100 * 1000 * 8  # float64


def test_plan_of_irregular_chunks_matches_listing_every_chunk():
    chunks = ((3, 2, 2), (10, 10, 5), (33,))
    plan = task_plan(da.zeros((7, 25, 33), chunks=chunks, dtype=np.float32))
    sizes = _brute_force(chunks)  # 330 330 495 660 660 660 660 990 990
    assert plan.n_tasks == sizes.size == 9
    assert plan.pixels_per_task_min == sizes.min() == 330
    assert plan.pixels_per_task_median == np.median(sizes) == 660
    assert plan.bytes_per_task == sizes.max() * 4
    rng = np.random.default_rng(0)
    for _ in range(20):  # an even number of chunks too: the median of two middle ones
        chunks = tuple(tuple(int(c) for c in rng.integers(1, 9, size=rng.integers(1, 6)))
                       for _ in range(3))
        plan = task_plan(da.zeros(tuple(sum(c) for c in chunks), chunks=chunks))
        sizes = _brute_force(chunks)
        assert (plan.n_tasks, plan.pixels_per_task_min) == (sizes.size, sizes.min())
        assert plan.pixels_per_task_median == np.median(sizes)


def test_plan_of_other_chunks_a_dataarray_and_an_unchunked_array():
    arr = xr.DataArray(da.zeros((4, 600, 800), chunks=(1, 600, 800)), dims=("scene", "y", "x"))
    plan = task_plan(arr, chunks={"y": 100})  # x and scene keep the array's chunks
    assert plan.dims == ("scene", "y", "x")
    assert plan.chunks == ((1,) * 4, (100,) * 6, (800,))
    assert plan.n_tasks == 24
    assert set(plan.recommended) == {"scene", "y", "x"}
    assert task_plan(arr, chunks=(2, 300, 400)).n_tasks == 2 * 2 * 2
    with pytest.raises(ValueError, match=r"dims \['band'\] that the array lacks"):
        task_plan(arr, chunks={"band": 2})
    unknown = da.zeros(10, chunks=5)
    with pytest.raises(ValueError, match="chunk sizes are unknown"):
        task_plan(unknown[unknown > 0])
    whole = task_plan(np.zeros((3, 5)))
    assert (whole.n_tasks, whole.pixels_per_task_min, whole.recommended) == \
        (1, 15, {"dim_0": 3, "dim_1": 5})


def test_recommended_chunks_are_aligned_and_within_the_limits():
    arr = da.zeros((20, 4000, 4000), chunks=(1, 250, 1000), dtype=np.float32)
    plan = task_plan(arr)
    # x grows to the whole row, then y to 10 chunks (10^7 pixels), scene stays 1
    assert plan.recommended == {"dim_0": 1, "dim_1": 2500, "dim_2": 4000}
    assert plan.recommended_pixels_per_task == 10**7
    assert plan.recommended_tasks == 20 * 2
    with config.set(chunk_bytes=8_000_000):  # 10^6 float64 values
        plan = task_plan(arr.astype(np.float64))
    assert plan.recommended_bytes_per_task <= 8_000_000
    for size, base, n in zip(plan.recommended.values(), (1, 250, 1000), arr.shape, strict=True):
        assert size % base == 0 or size == n
    assert plan.recommended == {"dim_0": 1, "dim_1": 250, "dim_2": 4000}
    with config.set(**{"chunk_guidance.target_pixels_per_task": 2 * 10**7}):
        assert task_plan(arr).recommended == {"dim_0": 1, "dim_1": 4000, "dim_2": 4000}


def test_chunks_larger_than_recommended_are_kept_and_whole_dims_merge():
    big = task_plan(da.zeros((2, 10_000, 10_000), chunks=(1, 5000, 10_000), dtype=np.float32))
    assert big.recommended == {"dim_0": 1, "dim_1": 5000, "dim_2": 10_000}
    small = task_plan(da.zeros((30, 200, 300), chunks=(1, 50, 300), dtype=np.float32))
    assert small.recommended == {"dim_0": 30, "dim_1": 200, "dim_2": 300}  # all of it: 1.8e6
    assert small.recommended_tasks == 1


def test_warns_when_tasks_are_too_many_and_too_small():
    huge = da.zeros(HUGE[0], chunks=HUGE[1], dtype=np.float32)
    with pytest.warns(ChunkWarning) as caught:
        plan = check_chunks(huge, what="the year store")
    assert plan.n_tasks == 10**7
    message = str(caught[0].message)
    assert caught[0].filename == __file__
    assert message.startswith("the year store: its chunks make 10,000,000 tasks of 10,000 pixels")
    assert "max_tasks (1,000,000)" in message
    assert "min_pixels_per_task (1,000,000)" in message
    assert str(plan.recommended) in message
    assert plan.recommended == {"dim_0": 1, "dim_1": 1000, "dim_2": 10_000}
    assert issubclass(ChunkWarning, BigkernWarning)
    assert issubclass(ChunkWarning, UserWarning)


def test_warns_when_tasks_are_too_small():
    arr = da.zeros((4, 1000, 1000), chunks=(1, 100, 1000), dtype=np.float32)  # 4e6 pixels
    with pytest.warns(ChunkWarning, match=r"40 tasks of 100,000 pixels") as caught:
        check_chunks(arr, what="NDAI")
    message = str(caught[0].message)
    assert "max_tasks" not in message
    assert "{'dim_0': 4, 'dim_1': 1000, 'dim_2': 1000} (1 task of up to 4,000,000" in message


def test_warns_when_tasks_are_too_many_even_if_large_enough():
    arr = da.zeros((100, 1000, 1000), chunks=(1, 1000, 1000), dtype=np.float32)
    with _no_chunk_warning():
        check_chunks(arr, what="ok")  # 100 tasks of 10^6 pixels
    with config.set(**{"chunk_guidance.max_tasks": 50}), \
            pytest.warns(ChunkWarning, match="more than bigkern.chunk_guidance.max_tasks") as w:
        check_chunks(arr, what="many")
    assert "min_pixels_per_task" not in str(w[0].message)


def test_no_warning_for_a_small_whole_array_or_when_disabled():
    with _no_chunk_warning():
        # 2,500 tasks of 100 pixels, but 250,000 pixels in all: small data is fine
        plan = check_chunks(da.zeros((1, 500, 500), chunks=(1, 10, 10)), what="small")
        assert plan.n_tasks == 2500
        with config.set(**{"chunk_guidance.enabled": False}):
            plan = check_chunks(da.zeros(HUGE[0], chunks=HUGE[1]), what="off")
        assert plan.n_tasks == 10**7
        with config.set(**{"chunk_guidance.min_pixels_per_task": 10**4}):
            check_chunks(da.zeros((4, 1000, 1000), chunks=(1, 100, 1000)), what="lower limit")


def test_a_dataset_is_judged_by_its_worst_variable():
    ds = xr.Dataset({
        "NDAI": (("scene", "y", "x"), da.zeros((2, 1000, 1000), chunks=(2, 1000, 1000))),
        "SD": (("scene", "y", "x"), da.zeros((2, 1000, 1000), chunks=(1, 100, 1000))),
    })
    with pytest.warns(ChunkWarning, match=r"^a store \(variable 'SD'\): its chunks make 20 tasks"):
        plan = check_chunks(ds, what="a store")
    assert plan.n_tasks == 20
    with pytest.raises(ValueError, match="no variables"):
        check_chunks(xr.Dataset(), what="empty")


def _store(path, chunks):
    """One 1024 x 1024 scene of constant features (a few hundred kB on disk)."""
    dims = ("scene", "y", "x")
    ds = xr.Dataset({
        "NDAI": (dims, np.full((1, 1024, 1024), 0.5, dtype=np.float32)),
        "CORR": (dims, np.full((1, 1024, 1024), 0.25, dtype=np.float32)),
        "label": (dims, np.zeros((1, 1024, 1024), dtype=np.int8)),
    })
    return write_scenes(ds, path, chunks=chunks)


def test_open_scenes_warns_about_a_store_of_tiny_chunks(tmp_path):
    tiny = _store(tmp_path / "tiny.zarr", {"scene": 1, "y": 32, "x": 256})
    # (the rechunk and error policies: tests/store/test_limits.py)
    with pytest.warns(ChunkWarning) as caught, \
            config.set(**{"chunk_guidance.too_many_tasks": "warn"}):
        ds = open_scenes(tiny, features=["NDAI", "CORR"])
    assert len(caught) == 1  # once per store
    message = str(caught[0].message)
    assert caught[0].filename == __file__  # points at the caller of open_scenes
    assert re.match(rf"scene store {re.escape(str(tiny))} \(variable '(NDAI|CORR)'\): its "
                    rf"chunks make 128 tasks of 8,192 pixels", message), message
    recommended = {"scene": 1, "y": 1024, "x": 1024}
    assert str(recommended) in message
    assert ds["NDAI"].data.numblocks == (1, 32, 4)
    with _no_chunk_warning():
        ds = open_scenes(tiny, chunks=recommended)  # the advice followed: no warning
        assert ds["NDAI"].data.numblocks == (1, 1, 1)
        whole = _store(tmp_path / "whole.zarr", None)  # bigkern's default chunks
        open_scenes(whole)


def test_the_suite_scene_store_does_not_warn(scene_store):
    with _no_chunk_warning():
        open_scenes(scene_store)


def test_chunk_warning_is_public():
    import bigkern
    from bigkern.cluster.chunking import ChunkWarning

    assert bigkern.ChunkWarning is ChunkWarning
    assert issubclass(ChunkWarning, bigkern.BigkernWarning)
