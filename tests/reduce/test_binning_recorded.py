"""Key histograms recorded at write time: what a read would count, and bins in one read.

Small synthetic stores written by ``write_scenes``, the synchronous scheduler, and
reads counted where every read of a bigkern store goes (``CheckedChunks``).
"""

from __future__ import annotations

from collections import Counter

import dask
import numpy as np
import pytest
import xarray as xr
import zarr

from bigkern.datasets import make_scenes
from bigkern.features import with_features
from bigkern.reduce import percentile_bins
from bigkern.reduce.binning.radix_select import histogram_pass
from bigkern.reduce.extremes import EXTREMES_KEY
from bigkern.reduce.recorded_histograms import KEY_HISTOGRAM_RECORDER
from bigkern.reduce.sampling import random_split
from bigkern.scenes import open_scenes, stack_samples, write_scenes
from bigkern.store.integrity import CheckedChunks
from bigkern.store.key_histograms import KEY_HISTOGRAMS_GROUP, read_key_histograms
from bigkern.store.manifest import chunk_digest, write_manifests
from bigkern.store.zarr_store import finish_store
from tests.reduce.plan_attrs import assert_same_bins

FEATURES = ["NDAI", "SD", "CORR"]


@pytest.fixture(autouse=True)
def _synchronous():
    with dask.config.set(scheduler="synchronous"):
        yield


def _scenes(partial_nan: bool = False) -> xr.Dataset:
    ds = make_scenes(3, (40, 48), seed=11, radiances=False).compute()
    if partial_nan:  # labelled pixels where NDAI alone is missing
        ndai = ds["NDAI"].values.copy()
        ndai[1, :5, :7] = np.nan
        ds["NDAI"] = ds["NDAI"].copy(data=ndai)
    return ds


def _store(tmp_path, name: str = "s.zarr", chunks: dict | None = None, **kw) -> str:
    path = tmp_path / name
    write_scenes(_scenes(**kw), path, chunks=chunks or {"scene": 1, "y": 40, "x": 48},
                 recorder=KEY_HISTOGRAM_RECORDER)
    return str(path)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """Three scenes, one per chunk, written with their key histograms."""
    return _store(tmp_path_factory.mktemp("recorded"))


def _bins(s, **kw) -> xr.Dataset:
    return percentile_bins(s.X, s.y, mask=s.mask, features=list(s.features),
                           recorded=s.recorded, **kw)



def test_recorded_histograms_equal_a_read(tmp_path):
    store = _store(tmp_path, chunks={"scene": 2, "y": 24, "x": 48})
    record, default = read_key_histograms(store)
    assert default.features == ("NDAI", "logSD", "CORR")
    assert record.features == tuple(FEATURES) and record.meta["dtype"] == "float32"
    s = stack_samples(open_scenes(store), FEATURES)
    first = histogram_pass(s.X, s.y, s.mask)
    for (g, c), (rg, rc) in zip(first["hist"], record.histograms, strict=True):
        np.testing.assert_array_equal(g, rg)
        np.testing.assert_array_equal(c, rc)
    totals = dict(zip(record.meta["count_keys"], record.row_counts.sum(axis=0), strict=True))
    assert {k: v for k, v in first["counts"].items() if k != EXTREMES_KEY} == totals
    assert record.row_counts.shape[0] == 2 * 2  # one row of counts per zarr chunk
    np.testing.assert_array_equal(first["labels"], record.labels)
    ext = first["counts"][EXTREMES_KEY]
    np.testing.assert_array_equal(ext.low, record.extremes["low"])
    np.testing.assert_array_equal(ext.n_high, record.extremes["n_high"])


def test_bins_from_the_record_are_the_fused_plans(tmp_path, store):
    other = _store(tmp_path, chunks={"scene": 2, "y": 16, "x": 48})
    for path in (store, other):  # two chunkings
        s = stack_samples(open_scenes(path), FEATURES)
        bins = _bins(s)
        assert (bins.attrs["plan"], bins.attrs["passes"], bins.attrs["recorded"]) == \
            ("recorded", 1, "ok")
        assert_same_bins(bins, _bins(s, plan="fused"))
    # a feature subset in another order: the same usable rows, so exact
    sub = stack_samples(open_scenes(store), ["CORR", "NDAI"])
    sub_bins = _bins(sub)
    assert sub_bins.attrs["plan"] == "recorded"
    assert_same_bins(sub_bins, _bins(sub, plan="fused"))
    # the fit's default features, logSD derived after opening as the fit derives it
    default = ["NDAI", "logSD", "CORR"]
    der = stack_samples(with_features(open_scenes(store), default), default)
    der_bins = _bins(der)
    assert der_bins.attrs["plan"] == "recorded"
    assert_same_bins(der_bins, _bins(der, plan="fused"))


def test_what_the_record_cannot_stand_for_falls_back(tmp_path):
    store = _store(tmp_path, partial_nan=True)
    ds = open_scenes(store)
    full = _bins(stack_samples(ds, FEATURES))
    assert full.attrs["plan"] == "recorded" and full.attrs["n_nonfinite"] > 0
    cases = {
        "some but not all features non-finite": stack_samples(ds, ["SD", "CORR"]),
        "other validity rules": stack_samples(
            open_scenes(store, valid_ranges={"NDAI": (0.0, None)}), FEATURES),
    }
    for why, s in cases.items():
        bins = _bins(s)
        assert bins.attrs["plan"] != "recorded" and why in bins.attrs["recorded"]
    s = stack_samples(ds, FEATURES)
    train, _ = random_split(s.pixel, s.mask, fraction=0.5, seed=0)
    split = percentile_bins(s.X, s.y, mask=train, features=FEATURES, recorded=s.recorded)
    assert "mask is not the one stack_samples built" in split.attrs["recorded"]
    plain = percentile_bins(s.X, s.y, mask=s.mask, features=FEATURES)  # no record given
    assert plain.attrs["plan"] != "recorded" and "recorded" not in plain.attrs
    assert_same_bins(plain, full)


def test_a_chunk_replaced_after_the_write_is_seen_by_its_digest(tmp_path):
    store = _store(tmp_path)
    group = zarr.open_group(store, mode="r+", use_consolidated=False)
    ndai = group["NDAI"]
    values = ndai[...]
    values[1] = values[1] * np.float32(1.5)
    ndai[...] = values
    digests = np.array([chunk_digest("NDAI", (i, 0, 0), values[i : i + 1], canonical=True)
                        for i in range(3)], dtype=np.uint32).reshape(3, 1, 1)
    write_manifests(store, {"NDAI": digests}, {"NDAI": (1, 40, 48)})  # as a re-writer would
    finish_store(store)
    s = stack_samples(open_scenes(store), FEATURES)
    bins = _bins(s)
    assert bins.attrs["plan"] != "recorded"
    assert "'NDAI' has chunks that changed" in bins.attrs["recorded"]
    assert_same_bins(bins, _bins(s, plan="fused"))


def test_the_recorded_plan_reads_each_chunk_once(store, monkeypatch):
    reads: Counter = Counter()
    original = CheckedChunks.__getitem__

    def counting(self, key):
        reads[self.name] += 1
        return original(self, key)

    monkeypatch.setattr(CheckedChunks, "__getitem__", counting)
    ds = open_scenes(store, validate=False)
    n_chunks = ds["NDAI"].data.npartitions
    s = stack_samples(ds, FEATURES)
    reads.clear()
    assert _bins(s).attrs["plan"] == "recorded"
    once = dict(reads)
    reads.clear()
    _bins(s, plan="fused")
    assert once == dict.fromkeys([*FEATURES, "label"], n_chunks)
    assert dict(reads) == dict.fromkeys([*FEATURES, "label"], 2 * n_chunks)


def test_no_record_without_labels_or_a_recorder(tmp_path, store):
    ds = _scenes()
    write_scenes(ds.drop_vars("label"), tmp_path / "a.zarr", recorder=KEY_HISTOGRAM_RECORDER)
    write_scenes(ds, tmp_path / "b.zarr")
    for name in ("a.zarr", "b.zarr"):
        assert KEY_HISTOGRAMS_GROUP not in zarr.open_group(tmp_path / name, mode="r")
        assert read_key_histograms(tmp_path / name) == []
    assert stack_samples(open_scenes(tmp_path / "b.zarr"), FEATURES).recorded is None
    # a copy of a store written by others (xarray, with its attributes): no record
    copy = open_scenes(store)
    copy.to_zarr(tmp_path / "c.zarr", consolidated=False)
    assert stack_samples(open_scenes(tmp_path / "c.zarr"), FEATURES).recorded is None
