"""BLAS pinning under dask's local threaded scheduler, and in-memory rows split across threads."""

from __future__ import annotations

import dask
import numpy as np
import pytest
from threadpoolctl import threadpool_info

from bigkern import config
from bigkern.cluster.compute import compute, task_threads
from bigkern.reduce.passes import as_row_chunked


def _blas_threads(_: object = None) -> int:
    return max(p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas")


def test_threaded_scheduler_pins_blas_inside_tasks():
    task = dask.delayed(_blas_threads)(0)
    with dask.config.set(scheduler="threads", num_workers=2):
        (inside,) = compute(task)
    assert inside == int(config.get("blas_threads"))


def test_limit_is_lifted_after_the_compute():
    before = _blas_threads()
    with dask.config.set(scheduler="threads", num_workers=2):
        compute(dask.delayed(_blas_threads)(0))
    assert _blas_threads() == before


def test_sync_scheduler_leaves_blas_alone():
    before = _blas_threads()
    with dask.config.set(scheduler="sync"):
        (inside,) = compute(dask.delayed(_blas_threads)(0))
    assert inside == before


@pytest.mark.parametrize(("setting", "expected"), [({"scheduler": "sync"}, 1),
                                                   ({"scheduler": "threads", "num_workers": 3}, 3)])
def test_task_threads_follows_the_local_scheduler(setting, expected):
    with dask.config.set(setting):
        assert task_threads() == expected


def test_task_threads_counts_a_clients_worker_threads():
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster, Client(cluster):
        assert task_threads() == 2


def test_min_chunks_splits_in_memory_rows_but_not_below_a_block():
    block = int(config.get("kernel_block_rows"))
    X = np.zeros((4 * block + 3, 8), dtype=np.float32)
    Xd, _, _ = as_row_chunked(X, min_chunks=2)
    assert len(Xd.chunks[0]) == 2 and sum(Xd.chunks[0]) == X.shape[0]
    small = np.zeros((block + 5, 8), dtype=np.float32)
    assert len(as_row_chunked(small, min_chunks=4)[0].chunks[0]) == 1
    # dask input keeps its chunks
    import dask.array as da

    assert as_row_chunked(da.from_array(X, chunks=(100, 8)), min_chunks=2)[0].chunks[0][0] == 100
