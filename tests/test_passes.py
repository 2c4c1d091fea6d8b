"""How many times a fit reads the data: counted on a real cluster's task stream."""

from __future__ import annotations

from collections import Counter

import numpy as np
from distributed import get_task_stream

from bigkern.features import with_features
from bigkern.io import open_scenes, stack_samples
from bigkern.models import BinnedSVC
from bigkern.predict import predict_scenes
from bigkern.reduce import percentile_bins
from bigkern.sampling import random_split
from bigkern.tuning import grid_search_bins


def _reads(stream, variable: str) -> int:
    """Tasks that read a chunk of ``variable`` from the store (fused or not)."""
    names = Counter()
    for t in stream.data:
        key = t["key"][0] if isinstance(t["key"], tuple) else t["key"]
        names[key] += 1
    return sum(n for k, n in names.items() if k.startswith(f"open_dataset-{variable}"))


def test_fit_reads_the_store_twice(client, scene_store):
    ds = open_scenes(scene_store)
    n_chunks = ds["NDAI"].data.npartitions
    s = stack_samples(ds, ["NDAI", "SD", "CORR"])
    with get_task_stream(client) as ts:
        model = BinnedSVC(C=3.0).fit(s.X, s.y, mask=s.mask)
    # histogram pass + fused refine-and-bin pass, nothing else
    assert model.fit_report_["plan"] == "fused"
    assert model.fit_report_["passes"] == 2
    assert _reads(ts, "NDAI") == 2 * n_chunks


def test_three_pass_plan_reads_three_times(client, scene_store):
    ds = open_scenes(scene_store)
    s = stack_samples(ds, ["NDAI", "SD", "CORR"])
    with get_task_stream(client) as ts:
        bins = percentile_bins(s.X, s.y, mask=s.mask, fused=False)
    assert bins.attrs["passes"] == 3
    assert _reads(ts, "NDAI") == 3 * ds["NDAI"].data.npartitions


def test_grid_search_scores_every_model_in_one_pass(client, scene_store):
    ds = open_scenes(scene_store)
    n_chunks = ds["NDAI"].data.npartitions
    s = stack_samples(ds, ["NDAI", "SD", "CORR"])
    train, held_out = random_split(s.pixel, s.mask, seed=0)
    bins = percentile_bins(s.X, s.y, mask=train)
    with get_task_stream(client) as ts:
        result = grid_search_bins(BinnedSVC(), bins, {"omega": [0.5, 1.0], "C": [1.0, 10.0]},
                                  s.X, s.y, mask=held_out)
    assert _reads(ts, "NDAI") == n_chunks
    assert result.scores.shape == (2, 2)
    assert np.all((result.scores.values > 0.5) & (result.scores.values <= 1))


def test_prediction_reads_each_chunk_once(client, scene_store):
    ds = with_features(open_scenes(scene_store), ["NDAI", "logSD", "CORR"])
    s = stack_samples(ds, ["NDAI", "logSD", "CORR"])
    model = BinnedSVC(C=3.0).fit(s.as_dataarray(), s.y, mask=s.mask)
    pred = predict_scenes(model, ds)
    with get_task_stream(client) as ts:
        pred["cloud_mask"].compute()
    assert _reads(ts, "NDAI") == ds["NDAI"].data.npartitions


def test_local_scheduler_setting_is_honoured_while_a_client_exists(client):
    import dask

    x = np.random.default_rng(0).standard_normal((5000, 2))
    with get_task_stream(client) as ts, dask.config.set(scheduler="sync"):
        local = percentile_bins(x)
    assert not ts.data  # nothing ran on the cluster
    with get_task_stream(client) as ts:
        remote = percentile_bins(x)
    assert ts.data
    np.testing.assert_array_equal(local["count"].values, remote["count"].values)


def test_rows_and_labels_sliced_from_one_array_are_read_once(client, tmp_path):
    """X and y taken from the columns of one stored array: one read of each chunk per pass."""
    import dask.array as da

    from bigkern.sampling import sample_rows

    rng = np.random.default_rng(0)
    path = str(tmp_path / "table.zarr")
    da.from_array(rng.standard_normal((6000, 3)), chunks=(1000, 3)).to_zarr(path)
    table = da.from_zarr(path)
    with get_task_stream(client) as ts:
        sample_rows(table[:, :2], table[:, 2] > 0, n=50)
    reads = sum(1 for t in ts.data if str(t["key"]).startswith(("('from-zarr", "from-zarr")))
    assert reads == table.npartitions
