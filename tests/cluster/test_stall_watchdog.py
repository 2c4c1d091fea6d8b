"""No silent waits: the watchdog over every computation bigkern waits for.

Real clusters throughout: LocalClusters whose workers pause on memory (the
pause fraction set low, so they pause at once), ``dask worker --no-nanny``
processes killed with SIGKILL, and the ``bigkern`` command in a subprocess.
Stall timeouts are a few seconds; each hang test must end within its timeout
plus 30 s.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import dask
import dask.array as da
import numpy as np
import pytest

from bigkern import config
from bigkern.cluster.watchdog import ClusterState, Watchdog
from bigkern.errors import ClusterError

PAUSE_AT_ONCE = {"distributed.worker.memory.pause": 0.05}  # workers use more than 5 % idle
WORKERS = ["--workers", "1"]


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """A small scene store and a model fitted on it by the CLI (embedded cluster)."""
    from bigkern.cli.main import main
    from bigkern.datasets import make_scenes
    from bigkern.scenes import write_scenes

    root = tmp_path_factory.mktemp("watchdog")
    store = root / "s.zarr"
    write_scenes(make_scenes(1, (32, 48), seed=5, radiances=False), store,
                 chunks={"scene": 1, "y": 16, "x": 48})
    assert main(["fit", str(store), "-o", str(root / "m.zarr"), "--model", "ridge",
                 "--no-search", "--param", "omega=0.9", "--param", "lam=0.05", *WORKERS]) == 0
    return store, root / "m.zarr"


def _paused_cluster(n_workers: int = 2):
    from distributed import LocalCluster

    with dask.config.set(PAUSE_AT_ONCE):
        cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1,
                               memory_limit="300MiB", dashboard_address=":0")
    deadline = time.monotonic() + 30
    while True:  # the workers' memory monitors pause them within their first ticks
        info = cluster.scheduler.workers.values()
        if len(info) == n_workers and all(ws.status.name == "paused" for ws in info):
            return cluster
        assert time.monotonic() < deadline, "the workers did not pause"
        time.sleep(0.1)


# --- the judgement, without a cluster ---------------------------------------------------------

def test_judgement_names_each_cause_after_its_timeout_and_says_it_first():
    paused = ClusterState(2, ((249 * 2**20, 300 * 2**20), (246 * 2**20, 300 * 2**20)), 7)
    dog = Watchdog(stall_timeout=10, paused_timeout=4, start=0.0)
    reports, verdict = dog.observe(paused, 1.0)
    assert reports == ["2 of 2 workers paused at 82-83 % of their memory limit (300 MiB); "
                       "giving up if they stay paused for 4 s"] and verdict is None
    assert dog.observe(paused, 3.0) == ([], None)  # said once, not every second
    _, verdict = dog.observe(paused, 5.0)
    assert verdict.startswith("every worker has been paused for 4 s with its memory over "
                              "distributed's pause threshold")
    assert "2 of 2 workers paused at 82-83 % of their memory limit (300 MiB)" in verdict

    dog = Watchdog(stall_timeout=10, paused_timeout=30, start=0.0)
    assert dog.observe(ClusterState(3, (), 1), 1.0) == ([], None)
    reports, verdict = dog.observe(ClusterState(0, (), 5), 2.0)
    assert reports == ["the cluster has no workers (it lost all 3 during this computation); "
                       "giving up unless one joins within 10 s"] and verdict is None
    _, verdict = dog.observe(ClusterState(0, (), 5), 12.0)
    assert verdict.startswith("no workers for 10 s: it lost all 3 during this computation")

    # no workers: the shorter empty_timeout ends the wait first, naming its setting
    dog = Watchdog(stall_timeout=300, paused_timeout=30, start=0.0, known_workers=2,
                   empty_timeout=60)
    reports, _ = dog.observe(ClusterState(0, (), 5), 1.0)
    assert reports == ["the cluster has no workers (it lost all 2 during this computation); "
                       "giving up unless one joins within 60 s"]
    assert dog.observe(ClusterState(0, (), 5), 59.0) == ([], None)
    _, verdict = dog.observe(ClusterState(0, (), 5), 61.0)
    assert verdict.startswith("no workers for 61 s") and "bigkern.empty_timeout" in verdict

    dog = Watchdog(stall_timeout=10, paused_timeout=30, start=0.0)
    for t in range(1, 30):  # a task finishing every second keeps it quiet however long it runs
        assert dog.observe(ClusterState(2, (), t), float(t)) == ([], None)
    reports, _ = dog.observe(ClusterState(2, (), 29), 35.0)
    assert reports == ["no task has finished for 6 s on 2 worker(s); giving up after 10 s"]
    _, verdict = dog.observe(ClusterState(2, (), 29), 39.0)
    assert verdict.startswith("no task finished for 10 s on 2 worker(s)")

    dog = Watchdog(stall_timeout=5, paused_timeout=30, start=0.0)
    silent = ClusterState(answered=False, error="Stream is closed")
    assert dog.observe(silent, 1.0)[1] is None
    assert "has not answered for 5 s (Stream is closed)" in dog.observe(silent, 6.0)[1]


# --- real clusters --------------------------------------------------------------------------

@pytest.mark.timeout(3 + 30 + 30)  # stall_timeout + 30 s, plus the cluster's start
def test_load_model_on_paused_workers_ends_with_a_cluster_error_naming_the_pause(fitted,
                                                                                    capfd):
    import bigkern

    _, model = fitted
    cluster = _paused_cluster()
    try:
        with config.set(stall_timeout=3, paused_timeout=30), \
                bigkern.connect(cluster, quiet=True):
            t = time.perf_counter()
            with pytest.raises(ClusterError, match=r"every worker has been paused for 3 s .*: "
                                                   r"2 of 2 workers paused at \d+(-\d+)? % of "
                                                   r"their memory limit \(300 MiB\)"):
                bigkern.load_model(model)  # ds.load(): dask.compute on the default client
            assert time.perf_counter() - t < 3 + 30
    finally:
        cluster.close()
    err = capfd.readouterr().err
    assert "bigkern: 2 of 2 workers paused at" in err  # said on stderr before giving up


def _start_worker(address: str, cwd: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "distributed.cli.dask_worker", address, "--no-nanny",
         "--nthreads", "1", "--memory-limit", "0", "--no-dashboard"],
        cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


@pytest.mark.timeout(3 + 30 + 60)
def test_every_worker_killed_mid_compute_ends_with_no_workers(tmp_path, capfd):
    from distributed import LocalCluster

    import bigkern

    with LocalCluster(n_workers=0, dashboard_address=":0") as cluster:
        workers = [_start_worker(cluster.scheduler_address, tmp_path) for _ in range(2)]
        try:
            with config.set(stall_timeout=3), \
                    bigkern.connect(cluster.scheduler_address, n_workers=2, quiet=True):
                slow = [dask.delayed(time.sleep)(3) for _ in range(8)]
                killer = threading.Timer(1.5, lambda: [w.send_signal(signal.SIGKILL)
                                                       for w in workers])
                killer.start()
                t = time.perf_counter()
                with pytest.raises(ClusterError, match=r"no workers for \d+ s: it lost all 2 "
                                                       r"during this computation"):
                    dask.compute(*slow)
                assert time.perf_counter() - t < 1.5 + 3 + 30
                killer.join()
        finally:
            for w in workers:
                w.kill()
                w.wait()
    assert "bigkern: the cluster has no workers (it lost all 2" in capfd.readouterr().err


@pytest.mark.timeout(60)
def test_a_healthy_compute_longer_than_the_timeout_is_left_alone(capfd):
    from distributed import Client, LocalCluster

    from bigkern.cluster.compute import compute

    def slow_block(block):
        time.sleep(0.3)
        return block + 1

    # 16 tasks of 0.3 s on 2 threads: ~2.4 s in all, a task finishing every ~0.15-0.3 s,
    # against a stall timeout of 1.5 s and a look at the cluster every second
    x = da.zeros(16, chunks=1).map_blocks(slow_block, dtype=float)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster, Client(cluster), \
            config.set(stall_timeout=1.5, progress=False):
        t = time.perf_counter()
        (total,) = compute(x.sum())
        elapsed = time.perf_counter() - t
    assert total == 16 and elapsed > 1.5
    assert "bigkern:" not in capfd.readouterr().err


# --- the command ----------------------------------------------------------------------------

@pytest.mark.timeout(5 + 30 + 60)
def test_cli_predict_on_a_paused_cluster_exits_with_one_line(fitted, tmp_path):
    store, model = fitted
    cluster = _paused_cluster(n_workers=1)
    try:
        env = {**os.environ, "BIGKERN_STALL_TIMEOUT": "5"}
        t = time.perf_counter()
        run = subprocess.run(
            [sys.executable, "-m", "bigkern", "predict", str(store), str(model),
             "-o", str(tmp_path / "p.zarr"), "--scheduler", cluster.scheduler_address],
            capture_output=True, text=True, env=env, timeout=5 + 30 + 30, cwd=tmp_path)
        elapsed = time.perf_counter() - t
    finally:
        cluster.close()
    assert run.returncode != 0
    errors = [line for line in run.stderr.splitlines() if line.startswith("bigkern: error:")]
    assert errors == [errors[-1]] and "every worker has been paused" in errors[0], run.stderr
    assert "memory limit (300 MiB)" in errors[0]
    assert "Traceback" not in run.stderr
    assert "bigkern: 1 of 1 worker paused at" in run.stderr  # told before it gave up
    assert elapsed < 5 + 30 + 20


# --- the worker plugins' footprint ------------------------------------------------------------

@pytest.mark.timeout(120)
def test_worker_plugins_import_nothing_heavy_on_workers_and_still_pin_blas():
    from distributed import LocalCluster

    import bigkern
    from bigkern.cluster.logs import QuietLogs

    def modules() -> list[str]:
        return sorted(m for m in ("bigkern", "numba", "scipy", "sklearn", "xarray", "zarr")
                      if m in sys.modules)

    def scipy_blas_threads() -> list[int]:
        import scipy.linalg  # noqa: F401  (loaded after the plugin ran)
        from threadpoolctl import threadpool_info

        return sorted({i["num_threads"] for i in threadpool_info()
                       if i["internal_api"] == "openblas"})

    with LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=":0") as cluster, \
            config.set(blas_threads=2), QuietLogs() as quiet, \
            bigkern.connect(cluster, quiet=True) as client, quiet.cluster(client, owned=True):
        plugins = client.run_on_scheduler(lambda dask_scheduler: sorted(
            dask_scheduler.worker_plugins))
        assert {"bigkern-pin-blas-threads", "bigkern-quiet-expected-errors"} <= set(plugins)
        # registering them imported none of bigkern's heavy dependencies (~190 MiB)
        assert list(client.run(modules).values()) == [[]]
        # a BLAS loaded later by a task still gets bigkern.blas_threads (the nanny's is 1)
        assert list(client.run(scipy_blas_threads).values()) == [[2]]


@pytest.mark.timeout(3 + 30 + 60)
def test_library_fits_on_a_plain_client_are_watched_too(capfd):
    """A notebook's own ``distributed.Client`` (not one from ``bigkern.connect``): the reads
    inside estimators' fits go through ``bigkern.cluster.compute.compute``, so paused
    workers end them with a ClusterError instead of a silent wait."""
    from distributed import Client

    from bigkern.models import CompactLSSVC, KernelRidgeClassifier, NystromKernelRidgeClassifier

    rng = np.random.default_rng(0)
    X = da.from_array(rng.normal(size=(60, 2)), chunks=30)
    y = np.where(rng.normal(size=60) > 0, 1, -1)
    cluster = _paused_cluster(n_workers=1)
    try:
        with config.set(stall_timeout=3, paused_timeout=3), Client(cluster):
            for est in (KernelRidgeClassifier(), CompactLSSVC(radius=2.0),
                        NystromKernelRidgeClassifier(size=10, random_state=0)):
                t = time.perf_counter()
                with pytest.raises(ClusterError, match="every worker has been paused"):
                    est.fit(X, y)
                assert time.perf_counter() - t < 30, type(est).__name__
    finally:
        cluster.close()
    assert "1 of 1 worker paused at" in capfd.readouterr().err


def _hold_memory(mib: int) -> int:
    block = np.ones(mib * 2**20 // 8)
    time.sleep(5)  # the nanny looks every 100 ms
    return int(block.size)


@pytest.mark.timeout(90)
def test_a_worker_killed_for_memory_is_one_line_naming_the_limit():
    """One line naming the memory limit, not a 45-line KilledWorker traceback."""
    from distributed import LocalCluster

    import bigkern

    with dask.config.set({"distributed.scheduler.allowed-failures": 0}), \
            LocalCluster(n_workers=1, threads_per_worker=1, memory_limit="300MiB",
                         dashboard_address=":0") as cluster, \
            bigkern.connect(cluster.scheduler_address, quiet=True):
        t = time.perf_counter()
        with pytest.raises(ClusterError, match=r"killed 1 worker, each while running it; the "
                                               r"last, tcp://.*, had a memory limit of "
                                               r"300 MiB") as err:
            dask.compute(dask.delayed(_hold_memory)(600))
        assert time.perf_counter() - t < 30
    assert "\n" not in str(err.value)
