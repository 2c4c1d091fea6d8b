"""How many times a fit reads the data: counted on a real cluster's task stream."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from distributed import get_task_stream

from bigkern.features import with_features
from bigkern.jobs.predict import predict_scenes
from bigkern.jobs.tuning import grid_search_bins
from bigkern.models import BinnedSVC
from bigkern.reduce import percentile_bins
from bigkern.reduce.sampling import random_split
from bigkern.scenes import open_scenes, stack_samples


@pytest.fixture
def store_reads(monkeypatch):
    """Counts of store chunk reads per variable, on an in-process cluster made default.

    Every read of a bigkern store goes through ``CheckedChunks.__getitem__``,
    fused into other tasks or not; counting its calls counts real reads.
    """
    from distributed import Client, LocalCluster

    from bigkern.store.integrity import CheckedChunks

    counts: Counter = Counter()
    original = CheckedChunks.__getitem__

    def counting(self, key):
        counts[self.name] += 1
        return original(self, key)

    monkeypatch.setattr(CheckedChunks, "__getitem__", counting)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        yield client, counts


def test_fit_reads_the_store_once(store_reads, scene_store):
    _, reads = store_reads
    ds = open_scenes(scene_store)
    n_chunks = ds["NDAI"].data.npartitions
    s = stack_samples(ds, ["NDAI", "SD", "CORR"])
    reads.clear()
    model = BinnedSVC(C=3.0).fit(s.X, s.y, mask=s.mask)
    # the default plan, one-read: the chunks its sample read are held, not read again
    assert model.fit_report_["plan"] == "one-read"
    assert model.fit_report_["passes"] == 1
    assert reads["NDAI"] == n_chunks


def test_fused_plan_reads_the_store_twice(store_reads, scene_store):
    _, reads = store_reads
    ds = open_scenes(scene_store)
    s = stack_samples(ds, ["NDAI", "SD", "CORR"])
    reads.clear()
    bins = percentile_bins(s.X, s.y, mask=s.mask, plan="fused")
    # histogram pass + fused refine-and-bin pass, nothing else
    assert bins.attrs["plan"] == "fused" and bins.attrs["passes"] == 2
    assert reads["NDAI"] == 2 * ds["NDAI"].data.npartitions


def test_three_pass_plan_reads_three_times(store_reads, scene_store):
    _, reads = store_reads
    ds = open_scenes(scene_store)
    s = stack_samples(ds, ["NDAI", "SD", "CORR"])
    reads.clear()
    bins = percentile_bins(s.X, s.y, mask=s.mask, plan="three-pass")
    assert bins.attrs["passes"] == 3
    assert reads["NDAI"] == 3 * ds["NDAI"].data.npartitions


def test_grid_search_scores_every_model_in_one_pass(store_reads, scene_store):
    _, reads = store_reads
    ds = open_scenes(scene_store)
    n_chunks = ds["NDAI"].data.npartitions
    s = stack_samples(ds, ["NDAI", "SD", "CORR"])
    train, held_out = random_split(s.pixel, s.mask, seed=0)
    bins = percentile_bins(s.X, s.y, mask=train)
    reads.clear()
    result = grid_search_bins(BinnedSVC(), bins, {"omega": [0.5, 1.0], "C": [1.0, 10.0]},
                              s.X, s.y, mask=held_out)
    assert reads["NDAI"] == n_chunks
    assert result.scores.shape == (2, 2)
    assert np.all((result.scores.values > 0.5) & (result.scores.values <= 1))


def test_prediction_reads_each_chunk_once(store_reads, scene_store):
    _, reads = store_reads
    ds = with_features(open_scenes(scene_store), ["NDAI", "logSD", "CORR"])
    s = stack_samples(ds, ["NDAI", "logSD", "CORR"])
    model = BinnedSVC(C=3.0).fit(s.as_dataarray(), s.y, mask=s.mask)
    pred = predict_scenes(model, ds)
    reads.clear()
    pred["cloud_mask"].compute()
    assert reads["NDAI"] == ds["NDAI"].data.npartitions


def test_local_scheduler_setting_is_honoured_while_a_client_exists(client):
    import dask

    x = np.random.default_rng(0).standard_normal((5000, 2))
    with get_task_stream(client) as ts, dask.config.set(scheduler="sync"):
        local = percentile_bins(x, plan="fused-or-three-pass")
    assert not ts.data  # nothing ran on the cluster
    with get_task_stream(client) as ts:
        remote = percentile_bins(x, plan="fused-or-three-pass")
    assert ts.data
    np.testing.assert_array_equal(local["count"].values, remote["count"].values)


def test_rows_and_labels_sliced_from_one_array_are_read_once(client, tmp_path):
    """X and y taken from the columns of one stored array: one read of each chunk per pass."""
    import dask.array as da

    from bigkern.reduce.sampling import sample_rows

    rng = np.random.default_rng(0)
    path = str(tmp_path / "table.zarr")
    da.from_array(rng.standard_normal((6000, 3)), chunks=(1000, 3)).to_zarr(path)
    table = da.from_zarr(path)
    with get_task_stream(client) as ts:
        sample_rows(table[:, :2], table[:, 2] > 0, n=50)
    reads = sum(1 for t in ts.data if str(t["key"]).startswith(("('from-zarr", "from-zarr")))
    assert reads == table.npartitions


def _chunk_summary(xb, yb, mb, start=None):
    return {"rows": len(xb), "y": None if yb is None else yb.tolist(), "mask": mb,
            "start": start, "first": float(xb[0, 0])}


def test_row_partials_fuse_each_chunks_reads_into_its_task(tmp_path):
    """One task per chunk, with X's and y's zarr reads inside it (no read task of its own),
    its start row, and None for a missing array."""
    import dask
    import dask.array as da

    from bigkern.reduce.row_tasks import row_partials

    x = np.arange(30, dtype=np.float64).reshape(10, 3)
    y = np.arange(10, dtype=np.int8)
    path = str(tmp_path / "rows.zarr")
    da.from_array(x, chunks=(4, 3)).to_zarr(path, component="X")
    da.from_array(y, chunks=4).to_zarr(path, component="y")
    X, Y = da.from_zarr(path, component="X"), da.from_zarr(path, component="y")
    parts = row_partials(_chunk_summary, X, Y, None, name="summary", starts=[0, 4, 8])
    graph = dict(parts[0].__dask_graph__())
    chunk_keys = [k for k in graph if isinstance(k, tuple)]
    assert len(chunk_keys) == 3 and all(k[0].startswith("summary-") for k in chunk_keys)
    got = dask.compute(*parts, scheduler="sync")
    assert [g["rows"] for g in got] == [4, 4, 2] and [g["start"] for g in got] == [0, 4, 8]
    assert got[1]["y"] == [4, 5, 6, 7] and got[2]["first"] == 24.0 and got[0]["mask"] is None


def test_row_partials_name_arrays_that_do_not_match_x():
    import dask.array as da

    from bigkern.reduce.row_tasks import row_partials

    X = da.zeros((10, 3), chunks=(4, 3))
    with pytest.raises(ValueError, match="one chunk along the features"):
        row_partials(_chunk_summary, da.zeros((10, 3), chunks=(4, 2)), None, None, name="p")
    with pytest.raises(ValueError, match="X's row chunks"):
        row_partials(_chunk_summary, X, da.zeros(10, chunks=5), None, name="p")
    with pytest.raises(ValueError, match="one row number per chunk"):
        row_partials(_chunk_summary, X, None, None, name="p", starts=[0, 4])
