"""The training half of a searched fit, binned in one read from histograms recorded at write.

Small synthetic stores written by ``write_scenes`` with the recorder, the synchronous
scheduler; the command-level check runs on the session's cluster.
"""

from __future__ import annotations

import dask
import numpy as np
import pytest
import xarray as xr
import zarr

import bigkern.reduce.recorded_split as recorded_split_module
from bigkern.cli.main import main
from bigkern.datasets import make_scenes
from bigkern.reduce import percentile_bins
from bigkern.reduce.binning.radix_select import histogram_pass
from bigkern.reduce.recorded_histograms import (
    KEY_HISTOGRAM_RECORDER,
    make_record,
    record_graph,
)
from bigkern.reduce.recorded_split import recorded_split
from bigkern.reduce.sampling import random_split
from bigkern.scenes import open_scenes, stack_samples, write_scenes
from bigkern.store.key_histograms import KeyHistogramRecorder, read_key_histograms
from bigkern.store.manifest import chunk_digest, write_manifests
from bigkern.store.zarr_store import finish_store
from tests.reduce.plan_attrs import assert_same_bins

FEATURES = ["NDAI", "SD", "CORR"]


@pytest.fixture
def synchronous():
    with dask.config.set(scheduler="synchronous"):
        yield


def _store(path, chunks: dict, recorder: KeyHistogramRecorder = KEY_HISTOGRAM_RECORDER
           ) -> str:
    write_scenes(make_scenes(3, (40, 48), seed=11, radiances=False).compute(), path,
                 chunks=chunks, recorder=recorder)
    return str(path)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """Three scenes, one per chunk, written with their key histograms."""
    with dask.config.set(scheduler="synchronous"):
        return _store(tmp_path_factory.mktemp("split") / "s.zarr",
                      {"scene": 1, "y": 40, "x": 48})


def _half_bins(s, train, recorded=None, **kw) -> xr.Dataset:
    return percentile_bins(s.X, s.y, mask=train, features=FEATURES, recorded=recorded, **kw)



def test_the_training_half_bins_in_one_read_as_the_fused_plan(tmp_path, store, synchronous):
    other = _store(tmp_path / "o.zarr", {"scene": 2, "y": 16, "x": 48})
    for path in (store, other):  # two chunkings
        s = stack_samples(open_scenes(path), FEATURES)
        train, held_out, source = recorded_split(s, seed=0)
        same_train, same_held_out = random_split(s.pixel, s.mask, fraction=0.5, seed=0)
        assert (train.name, held_out.name) == (same_train.name, same_held_out.name)
        bins = _half_bins(s, train, source)
        assert (bins.attrs["plan"], bins.attrs["passes"], bins.attrs["recorded"]) == \
            ("recorded", 1, "ok")
        fused = _half_bins(s, train, plan="fused")
        assert_same_bins(bins, fused)
        assert bins.attrs["n_valid"] < 0.6 * int(s.mask.sum())  # a half, not every row
    # the recorded half is what a read of the half finds
    part = read_key_histograms(other)[0].first_part
    first = histogram_pass(s.X, s.y, train)
    for (g, c), (rg, rc) in zip(first["hist"], part.histograms, strict=True):
        np.testing.assert_array_equal(g, rg)
        np.testing.assert_array_equal(c, rc)
    assert part.meta["split"]["seed"] == 0 and part.meta["split"]["fraction"] == 0.5


def test_another_split_falls_back_and_says_why(store, synchronous):
    s = stack_samples(open_scenes(store), FEATURES)
    train, _, source = recorded_split(s, seed=1)
    bins = _half_bins(s, train, source)
    assert bins.attrs["plan"] != "recorded"
    assert bins.attrs["recorded"] == (
        "fallback: the training half was recorded for the split of seed 0; this split has seed 1")
    assert_same_bins(bins, _half_bins(s, train, plan="fused"))
    train, _, source = recorded_split(s, fraction=0.3, seed=0)
    assert "a first part of fraction 0.5; this split's is 0.3" in \
        _half_bins(s, train, source).attrs["recorded"]
    # a half not made by recorded_split is not the record's
    train, _ = random_split(s.pixel, s.mask, fraction=0.5, seed=0)
    assert "a split not made by recorded_split" in \
        _half_bins(s, train, s.recorded).attrs["recorded"]


def test_a_changed_split_rule_falls_back(store, synchronous, monkeypatch):
    def shifted(index, mask=None, *, fraction=0.5, seed=0):  # another rule, same name
        return random_split(index, mask, fraction=fraction, seed=seed + 7)

    recorded_split_module._fingerprint.cache_clear()
    monkeypatch.setattr(recorded_split_module, "random_split", shifted)
    try:
        s = stack_samples(open_scenes(store), FEATURES)
        train, _, source = recorded_split(s, seed=0)
        note = _half_bins(s, train, source).attrs["recorded"]
    finally:
        recorded_split_module._fingerprint.cache_clear()
    assert note == "fallback: the split rule changed since the training half was recorded"


def test_a_store_without_a_recorded_half_falls_back(tmp_path, synchronous):
    # as a store written before the halves were recorded: a recorder given no pixel ids
    before = KeyHistogramRecorder(lambda X, y, mask, pixel: record_graph(X, y, mask),
                                  make_record)
    path = _store(tmp_path / "b.zarr", {"scene": 1, "y": 40, "x": 48}, recorder=before)
    s = stack_samples(open_scenes(path), FEATURES)
    assert percentile_bins(s.X, s.y, mask=s.mask, recorded=s.recorded).attrs["plan"] == \
        "recorded"  # every labelled pixel: still one read
    train, _, source = recorded_split(s, seed=0)
    bins = _half_bins(s, train, source)
    assert bins.attrs["plan"] != "recorded"
    assert "the store recorded no first part of a split" in bins.attrs["recorded"]


def test_an_edited_chunk_falls_back_for_the_half(tmp_path, synchronous):
    path = _store(tmp_path / "e.zarr", {"scene": 1, "y": 40, "x": 48})
    group = zarr.open_group(path, mode="r+", use_consolidated=False)
    values = group["NDAI"][...]
    values[2] = values[2] * np.float32(0.5)
    group["NDAI"][...] = values
    digests = np.array([chunk_digest("NDAI", (i, 0, 0), values[i : i + 1], canonical=True)
                        for i in range(3)], dtype=np.uint32).reshape(3, 1, 1)
    write_manifests(path, {"NDAI": digests}, {"NDAI": (1, 40, 48)})  # as a re-writer would
    finish_store(path)
    s = stack_samples(open_scenes(path), FEATURES)
    train, _, source = recorded_split(s, seed=0)
    bins = _half_bins(s, train, source)
    assert bins.attrs["plan"] != "recorded"
    assert "'NDAI' has chunks that changed" in bins.attrs["recorded"]
    assert_same_bins(bins, _half_bins(s, train, plan="fused"))


def test_the_default_fit_command_says_it_binned_in_one_read(tmp_path, capsys, client):
    store, where = tmp_path / "s.zarr", ["--scheduler", client.scheduler.address]
    assert main(["synth", "-o", str(store), "--scenes", "2", "--shape", "48", "64",
                 *where]) == 0
    # the default searched fit; its grid cut to one point (the binning is the same)
    assert main(["fit", str(store), "-o", str(tmp_path / "m.zarr"), "--param", "omega=1",
                 "--param", "C=1", *where]) == 0
    err = capsys.readouterr().err
    assert "plan recorded, 1 read of the data (the store's recorded histograms of the " \
           "training half)" in err
