"""The one-read percentile-binning plan: the fused plan's bins, bit for bit, in one full read.

A sample places the edges (bigkern.reduce.binning.one_read); one read bins the rows
that are certainly inside a cell and counts the exact key-group histograms;
when they show that the sample misplaced something, the fused plan finishes
with its second read. Whatever happened, the bins equal the other plans'
(``xarray.testing.assert_identical``) but for the attrs that describe the plan.
"""

from __future__ import annotations

import warnings
from collections import Counter

import dask.array as da
import numpy as np
import pytest
import xarray as xr
import zarr
from hypothesis import event, given
from hypothesis import strategies as st
from zarr.storage import LocalStore, WrapperStore

from bigkern import config
from bigkern.errors import DataQualityError, LabelError
from bigkern.reduce import percentile_bins
from bigkern.reduce.binning.bins import OutlierWarning
from bigkern.reduce.binning.one_read import OneReadSample, sample_windows
from bigkern.reduce.binning.plan import BinningPlan
from tests.reduce.plan_attrs import without_plan

LABELS = {
    "int8": np.array([-1, 1], dtype=np.int8),
    "float": np.array([0.0, 1.0]),
    "str": np.array(["clear", "cloud"]),
}
SAMPLES = {
    "default": OneReadSample(),
    "every row": OneReadSample(rows=10**9),  # the sample is the data: the guess must hold
    "small": OneReadSample(rows=300, windows=3, seed=7),
    "blind": OneReadSample(rows=50, windows=1, z=0.0, scale_offsets=(0,)),  # forced fallbacks
}



def _outcome(fn):
    """("ok", result, outlier warnings) or ("error", type, message)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = fn()
        except (ValueError, LabelError, DataQualityError) as e:
            return "error", type(e), str(e)
    return "ok", result, [str(w.message) for w in caught if w.category is OutlierWarning]


@st.composite
def cases(draw):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n = draw(st.integers(1, 3000))
    d = draw(st.integers(1, 3))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    scales = 10.0 ** rng.uniform(-3, 3, size=d)
    x = rng.standard_normal((n, d)) * scales + rng.uniform(-5, 5, size=d) * scales
    if draw(st.booleans()):  # ties: values on edges, signed zeros, a constant feature
        x[::3, 0] = np.round(x[::3, 0], 1)
        x[::5, -1] = 0.0
        x[1::5, -1] = -0.0
        if d > 2:
            x[:, 1] = 2.5
    order = draw(st.sampled_from(["random", "sorted", "blocks"]))
    if order == "sorted":  # adversarial: a window of rows sees a narrow range of values
        x = x[np.argsort(x[:, 0], kind="stable")]
    elif order == "blocks":  # scene-like: the second half is shifted
        x[n // 2:] += 3 * scales
    if draw(st.booleans()):  # a wide value far from the sample: another fixed-point scale
        x[rng.integers(n), rng.integers(d)] = draw(st.sampled_from([3.0, 30.0, 1e6])) * \
            np.abs(x).max()
    x = x.astype(dtype)
    if draw(st.booleans()):
        x[rng.random((n, d)) < 0.02] = np.nan
        x[rng.random(n) < 0.01] = np.inf
    mask = rng.random(n) < 0.85 if draw(st.booleans()) else None
    y = classes = None
    label_kind = draw(st.sampled_from(["none", *LABELS]))
    if label_kind != "none":
        rare = draw(st.sampled_from([0.4, 0.002]))  # a rare class the sample may not see
        y = LABELS[label_kind][(rng.random(n) < rare).astype(int)]
        if draw(st.booleans()):
            classes = tuple(LABELS[label_kind].tolist())
    quantiles = draw(st.sampled_from([None, (0.25, 0.5, 0.75), (0.0, 0.3, 0.3, 1.0)]))
    # at most 64 chunks: 1-row chunks still come with small n, and thousands of them would
    # cost seconds of graph per example while reaching no other chunk boundary case
    chunk = draw(st.integers(-(-n // 64), n))
    return x, y, mask, classes, quantiles, chunk


@given(case=cases(), sample=st.sampled_from(list(SAMPLES)))
def test_one_read_bins_are_the_fused_plans_bins(case, sample):
    x, y, mask, classes, quantiles, chunk = case
    kw = {"classes": classes}
    if quantiles is not None:
        kw["quantiles"] = quantiles
    X = da.from_array(x, chunks=(chunk, -1))
    Y = None if y is None else da.from_array(y, chunks=chunk)
    M = None if mask is None else da.from_array(mask, chunks=chunk)
    with config.set(max_deferred_fraction=1e9):  # small data: let the sample's windows be wide
        one = _outcome(lambda: percentile_bins(
            X, Y, mask=M, plan=BinningPlan("one-read", sample=SAMPLES[sample]), **kw))
        fused = _outcome(lambda: percentile_bins(X, Y, mask=M, plan="fused", **kw))
    assert one[0] == fused[0], (one, fused)
    if one[0] == "error":
        assert one[1:] == fused[1:]
        event(f"error: {one[1].__name__}")
        return
    got, ref = one[1], fused[1]
    xr.testing.assert_identical(without_plan(got), without_plan(ref))
    assert one[2] == fused[2]  # the same OutlierWarnings
    status = got.attrs["one_read"]
    event(f"{sample}: {status.split(':')[0]}")
    if status == "ok":
        assert got.attrs["plan"] == "one-read"
        assert got.attrs["passes"] == 1
        assert got.attrs["n_kept"] >= ref.attrs["n_kept"]  # it kept every row the fused plan did
    elif status.startswith("fallback"):
        assert got.attrs["plan"] == "fused" and got.attrs["passes"] == ref.attrs["passes"]
    else:
        assert status.startswith("skipped")
    if sample == "every row":
        assert status == "ok" or "classes" in status, status


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sorted_rows_force_a_fallback_that_is_counted(dtype):
    """Rows sorted by a feature: the sample's windows see a sliver of its range."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((40_000, 2)).astype(dtype)
    x = x[np.argsort(x[:, 1])]
    y = np.where(rng.random(40_000) < 0.3, 1, -1)
    X, Y = da.from_array(x, chunks=(3000, 2)), da.from_array(y, chunks=3000)
    sample = OneReadSample(rows=4000)
    with config.set(max_deferred_fraction=1e9):
        one = percentile_bins(X, Y, plan=BinningPlan("one-read", sample=sample))
    fused = percentile_bins(X, Y, plan="fused")
    assert one.attrs["plan"] == "fused" and one.attrs["passes"] == 2
    assert one.attrs["one_read"].startswith("fallback: f1: ")
    assert one.attrs["sample_rows"] == 4000
    xr.testing.assert_identical(without_plan(one), without_plan(fused))


def test_a_maximum_the_sample_missed_is_summed_at_the_next_scale():
    """One value two binades above the sample's: a fallback with one candidate scale,
    the coarser candidate with two (the default)."""
    rng = np.random.default_rng(2)
    x = rng.uniform(-1, 1, (30_000, 2)).astype(np.float32)
    y = np.where(rng.random(30_000) < 0.5, 1, -1)
    windows = sample_windows(len(x), OneReadSample(rows=6000))
    outside = next(i for i in range(len(x)) if all(not a <= i < b for a, b in windows))
    x[outside, 0] = 1.5  # max|x| in [1, 2): one binade above the sample's [0.5, 1)
    X, Y = da.from_array(x, chunks=(4000, 2)), da.from_array(y, chunks=4000)
    fused = percentile_bins(X, Y, plan="fused")
    with config.set(max_deferred_fraction=1e9):
        two = percentile_bins(X, Y, plan=BinningPlan("one-read", OneReadSample(rows=6000)))
        one = percentile_bins(X, Y, plan=BinningPlan(
            "one-read", OneReadSample(rows=6000, scale_offsets=(0,))))
    assert two.attrs["one_read"] == "ok" and two.attrs["passes"] == 1
    assert one.attrs["one_read"].startswith("fallback: f0: fixed-point scale")
    for got in (one, two):
        xr.testing.assert_identical(without_plan(got), without_plan(fused))


def test_a_class_outside_the_sample_falls_back_with_the_right_classes():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((20_000, 2)).astype(np.float32)
    y = np.full(20_000, "clear")
    windows = sample_windows(len(x), OneReadSample(rows=2000))
    y[[i for i in range(0, 20_000, 997) if all(not a <= i < b for a, b in windows)]] = "cloud"
    X, Y = da.from_array(x, chunks=(2500, 2)), da.from_array(y, chunks=2500)
    with config.set(max_deferred_fraction=1e9):
        one = percentile_bins(X, Y, plan=BinningPlan("one-read", OneReadSample(rows=2000)))
    fused = percentile_bins(X, Y, plan="fused")
    assert one.attrs["one_read"] == "fallback: the sample did not show the classes of y"
    assert one.attrs["classes"] == ["clear", "cloud"]
    xr.testing.assert_identical(without_plan(one), without_plan(fused))


def test_groups_too_large_to_collect_refine_the_kept_rows_again(monkeypatch):
    """The kept rows' first refine and their binning share one round trip; when a target's
    group is too large to collect at once, further refines of the kept rows follow."""
    import bigkern.reduce.binning.radix_select as rs

    rng = np.random.default_rng(6)
    x = rng.standard_normal((30_000, 2))  # float64: 44 bits below the key groups
    y = np.where(rng.random(30_000) < 0.4, 1, -1)
    X, Y = da.from_array(x, chunks=(7000, 2)), da.from_array(y, chunks=7000)
    fused = percentile_bins(X, Y, plan="fused")
    monkeypatch.setattr(rs, "_COLLECT_LIMIT", 0)  # 16 bits per refine: three refines
    with config.set(max_deferred_fraction=1e9):
        one = percentile_bins(X, Y, plan=BinningPlan("one-read", OneReadSample(rows=6000)))
    assert one.attrs["one_read"] == "ok" and one.attrs["passes"] == 1
    xr.testing.assert_identical(without_plan(one), without_plan(fused))


def test_heavy_ties_skip_the_one_read_plan():
    x = np.random.default_rng(4).standard_normal((50_000, 2)).astype(np.float32)
    x[:30_000, 1] = 0.0  # 60 % of one feature in the windows of several edges
    got = percentile_bins(da.from_array(x, chunks=10_000), plan="one-read")
    assert got.attrs["one_read"].startswith("skipped: the sample's windows hold")
    assert got.attrs["plan"] == "three-pass"


def test_sample_windows_do_not_depend_on_the_chunking_and_stay_inside():
    sample = OneReadSample(rows=1000, windows=4, seed=3)
    wins = sample_windows(10_007, sample)
    assert len(wins) == 4 and sum(b - a for a, b in wins) == 1000
    assert all(10_007 * k // 4 <= a < b <= 10_007 * (k + 1) // 4
               for k, (a, b) in enumerate(wins))
    assert sample_windows(10_007, OneReadSample(rows=10**6, windows=4)) == [
        (10_007 * k // 4, 10_007 * (k + 1) // 4) for k in range(4)]
    x = np.random.default_rng(5).standard_normal((10_007, 2))
    with config.set(max_deferred_fraction=1e9):
        a, b = (percentile_bins(da.from_array(x, chunks=c), plan=BinningPlan("one-read", sample))
                for c in (501, 3000))
    assert a.attrs["sample_rows"] == b.attrs["sample_rows"] == 1000
    xr.testing.assert_identical(without_plan(a), without_plan(b))
    assert a.attrs["n_kept"] == b.attrs["n_kept"] and a.attrs["one_read"] == b.attrs["one_read"]


def test_no_rows_give_the_fused_plans_error():
    with pytest.raises(DataQualityError, match="no usable rows: all 0 rows"):
        percentile_bins(da.zeros((0, 2), chunks=(5, 2)), plan="one-read")


def test_plan_argument_is_checked():
    x = np.zeros((10, 1))
    with pytest.raises(ValueError, match="unknown percentile_bins plan 'two-read'; the plans"):
        percentile_bins(x, plan="two-read")
    with pytest.raises(TypeError, match="plan must be a plan name"):
        percentile_bins(x, plan=2)
    with pytest.raises(ValueError, match="sample rows"):
        OneReadSample(rows=0)


class ReadCountingStore(WrapperStore):
    """A store that appends the key of every chunk it reads to a log file (any process)."""

    def __init__(self, store: LocalStore, log: str) -> None:
        super().__init__(store)
        self.log = log

    def __getstate__(self) -> dict:
        return {"store": self._store, "log": self.log}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["store"], state["log"])

    async def get(self, key, prototype, byte_range=None):
        if "/c/" in f"/{key}":
            with open(self.log, "a") as f:
                f.write(key + "\n")
        return await self._store.get(key, prototype, byte_range)


def test_one_full_read_on_a_cluster(client, tmp_path):
    """Each zarr chunk of X and y is read once by the one-read plan (the sample's chunks are
    held, not read again), twice by the fused plan, counted by the store; the bins are the
    same."""
    rng = np.random.default_rng(6)
    n = 120_000
    path = str(tmp_path / "rows.zarr")
    xs = rng.standard_normal((n, 3)).astype(np.float32)
    ys = np.where(xs[:, 0] + rng.standard_normal(n) > 0, 1, -1).astype(np.int8)
    da.from_array(xs, chunks=(10_000, 3)).to_zarr(path, component="X")
    da.from_array(ys, chunks=10_000).to_zarr(path, component="y")
    log = tmp_path / "reads.log"
    store = ReadCountingStore(LocalStore(path, read_only=True), str(log))
    X = da.from_zarr(zarr.open_array(store, path="X", mode="r"))
    Y = da.from_zarr(zarr.open_array(store, path="y", mode="r"))

    def reads(fn):
        log.write_text("")
        out = fn()
        keys = log.read_text().split()
        return out, Counter(keys)

    with config.set(max_deferred_fraction=1e9):
        one, one_reads = reads(lambda: percentile_bins(
            X, Y, plan=BinningPlan("one-read", OneReadSample(rows=20_000))))
    fused, fused_reads = reads(lambda: percentile_bins(X, Y, plan="fused"))
    assert one.attrs["one_read"] == "ok" and one.attrs["passes"] == 1
    assert one.attrs["sample_chunks_held"] >= 2
    every_chunk = X.npartitions + Y.npartitions
    assert len(one_reads) == every_chunk and set(one_reads.values()) == {1}
    assert len(fused_reads) == every_chunk and set(fused_reads.values()) == {2}
    xr.testing.assert_identical(without_plan(one), without_plan(fused))
    # a skip after the sample (its windows would keep too many rows): the histogram pass
    # takes the held chunks from memory, so the plan that follows reads what it alone would
    with config.set(max_deferred_fraction=0.0):
        skipped, skipped_reads = reads(lambda: percentile_bins(
            X, Y, plan=BinningPlan("one-read", OneReadSample(rows=20_000))))
    assert skipped.attrs["one_read"].startswith("skipped: the sample's windows hold")
    assert skipped.attrs["plan"] == "three-pass"  # the fused plan may keep nothing either
    assert skipped.attrs["sample_chunks_held"] >= 2
    three, three_reads = reads(lambda: percentile_bins(X, Y, plan="three-pass"))
    assert skipped_reads == three_reads  # no chunk read once more for the sample
    xr.testing.assert_identical(without_plan(skipped), without_plan(three))
