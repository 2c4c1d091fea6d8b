"""percentile_bins' plan object: the default is the fastest exact plan that fits, a plan name
or a BinningPlan chooses one, and unknown plans are refused."""

from __future__ import annotations

import dask
import dask.array as da
import numpy as np
import psutil
import pytest
import xarray as xr

import bigkern.reduce.binning.plan as plan_module
from bigkern import config
from bigkern.cluster.memory import machine_memory, worker_memory
from bigkern.reduce import percentile_bins
from bigkern.reduce.binning.one_read_sample import OneReadSample
from bigkern.reduce.binning.plan import (
    HELD_MEMORY_SHARE,
    PLAN_NAMES,
    BinningPlan,
    held_sample_bytes,
)
from tests.reduce.plan_attrs import without_plan


def _data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((n, 3)) * [1.0, 10.0, 0.1]).astype(np.float32)
    x[::101, 2] = np.nan
    y = np.where(x[:, 0] + rng.standard_normal(n) > 0, 1, -1).astype(np.int8)
    return x, y


def test_the_default_for_a_dask_input_whose_sample_fits_is_the_one_read_plan():
    x, y = _data(200_000)
    X, Y = da.from_array(x, chunks=(40_000, 3)), da.from_array(y, chunks=40_000)
    assert BinningPlan.choose(X, Y) == BinningPlan("one-read")
    got = percentile_bins(X, Y)
    assert got.attrs["plan"] == "one-read" and got.attrs["one_read"] == "ok"
    assert got.attrs["passes"] == 1
    fused = percentile_bins(X, Y, plan="fused")
    assert fused.attrs["plan"] == "fused" and "one_read" not in fused.attrs
    xr.testing.assert_identical(without_plan(got), without_plan(fused))
    # a numpy input above bigkern.in_memory_rows takes the same default
    with config.set(in_memory_rows=100_000):
        assert BinningPlan.choose(x, y).name == "one-read"
        xr.testing.assert_identical(without_plan(percentile_bins(x, y)), without_plan(got))


def test_the_default_for_a_small_numpy_input_is_the_in_memory_plan():
    x, y = _data(5_000)
    assert BinningPlan.choose(x, y) == BinningPlan("in-memory")
    got = percentile_bins(x, y)
    assert got.attrs["plan"] == "in-memory" and got.attrs["passes"] == 1
    assert "one_read" not in got.attrs
    # a dask y (or mask) makes it a dask input
    assert BinningPlan.choose(x, da.from_array(y)).name == "one-read"


def test_a_sample_that_does_not_fit_the_workers_leaves_the_two_read_plans(monkeypatch):
    x, y = _data(60_000)
    X, Y = da.from_array(x, chunks=(10_000, 3)), da.from_array(y, chunks=10_000)
    held = held_sample_bytes(X, Y)
    assert held == 60_000 * (3 * 4 + 1)  # the sample (2**22 rows) holds every chunk
    enough = int(np.ceil(held / HELD_MEMORY_SHARE))
    assert BinningPlan.choose(X, Y, memory_bytes=enough).name == "one-read"
    assert BinningPlan.choose(X, Y, memory_bytes=enough - 1).name == "fused-or-three-pass"
    monkeypatch.setattr(plan_module, "worker_memory", lambda: enough - 1)
    got = percentile_bins(X, Y)
    assert got.attrs["plan"] == "fused" and "one_read" not in got.attrs
    xr.testing.assert_identical(got, percentile_bins(X, Y, plan="fused-or-three-pass"))


def test_held_sample_bytes_counts_the_chunks_the_windows_overlap():
    sample = OneReadSample(rows=1000, windows=2, seed=0)
    X = da.zeros((100_000, 2), dtype=np.float64, chunks=(10_000, 2))
    mask = da.ones(100_000, dtype=bool, chunks=10_000)
    got = held_sample_bytes(X, None, mask, sample)
    assert got in (2 * 10_000 * 17, 3 * 10_000 * 17, 4 * 10_000 * 17)
    # non-float X is read as float64; a numpy X in chunks of bigkern.chunk_bytes
    ints = np.zeros((100_000, 2), dtype=np.int16)
    with config.set(chunk_bytes=40_000):  # 10,000 int16 rows per chunk
        assert held_sample_bytes(ints, None, None, sample) == got // 17 * 16
    assert held_sample_bytes(xr.DataArray(np.zeros((10, 2)), dims=("sample", "feature"))) \
        == 10 * 16


def test_worker_memory_without_a_client_is_unknown_and_the_plan_takes_the_machines():
    assert worker_memory() is None and worker_memory(per_task=True) is None
    assert machine_memory() == psutil.virtual_memory().total


def test_worker_memory_on_a_cluster_is_the_smallest_workers_limit(client):
    workers = client.scheduler_info()["workers"].values()
    assert worker_memory() == min(w["memory_limit"] for w in workers)
    target = dask.config.get("distributed.worker.memory.target")
    assert worker_memory(per_task=True) == int(
        min(w["memory_limit"] / w["nthreads"] for w in workers) * target)


@pytest.mark.parametrize("name", ["fused", "three-pass", "fused-or-three-pass", "in-memory"])
def test_a_plan_name_or_object_chooses_the_plan(name):
    x, y = _data(30_000, seed=1)
    X, Y = da.from_array(x, chunks=(7_000, 3)), da.from_array(y, chunks=7_000)
    by_name = percentile_bins(X, Y, plan=name)
    by_object = percentile_bins(X, Y, plan=BinningPlan(name))
    finished = {"fused-or-three-pass": "fused"}.get(name, name)
    assert by_name.attrs["plan"] == by_object.attrs["plan"] == finished
    xr.testing.assert_identical(by_name, by_object)
    xr.testing.assert_identical(without_plan(by_name),
                                without_plan(percentile_bins(x, y, plan="in-memory")))


def test_the_one_read_sample_settings_live_in_the_plan_object():
    x, y = _data(30_000, seed=2)
    X, Y = da.from_array(x, chunks=(7_000, 3)), da.from_array(y, chunks=7_000)
    plan = BinningPlan("one-read", OneReadSample(rows=5_000, windows=1, seed=3))
    with config.set(max_deferred_fraction=1e9):  # small data: let the windows be wide
        got = percentile_bins(X, Y, plan=plan)
    assert got.attrs["one_read"] == "ok"
    assert 4_900 < got.attrs["sample_rows"] <= 5_000  # the usable rows: one in 101 has a NaN
    assert got.attrs["sample_chunks_held"] in (1, 2)
    assert BinningPlan.choose(X, Y, sample=plan.sample) == plan


def test_unknown_plans_are_refused_with_the_plan_names():
    x = np.zeros((10, 2))
    message = ("unknown percentile_bins plan 'two-read'; the plans are 'in-memory', "
               "'recorded', 'one-read', 'fused', 'three-pass', 'fused-or-three-pass'")
    with pytest.raises(ValueError, match=message):
        percentile_bins(x, plan="two-read")
    with pytest.raises(ValueError, match="unknown percentile_bins plan 'auto'"):
        BinningPlan("auto")
    with pytest.raises(TypeError, match="plan must be a plan name"):
        percentile_bins(x, plan=True)
    with pytest.raises(TypeError, match="sample must be a OneReadSample"):
        BinningPlan("one-read", sample=1000)
    with pytest.raises(TypeError, match="unexpected keyword argument 'fused'"):
        percentile_bins(x, fused=True)
    assert PLAN_NAMES == ("in-memory", "recorded", "one-read", "fused", "three-pass",
                          "fused-or-three-pass")


def test_a_plan_is_a_frozen_value():
    plan = BinningPlan("fused")
    with pytest.raises(AttributeError):
        plan.name = "three-pass"
    assert plan == BinningPlan("fused") and hash(plan) == hash(BinningPlan("fused"))
    assert BinningPlan.resolve(plan, np.zeros((3, 1))) is plan
