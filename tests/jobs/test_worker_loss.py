"""Worker loss: a worker SIGKILLed early or late in a fit or a prediction changes nothing.

A real two-process LocalCluster runs the real engine on zarr stores on disk. A
scheduler plugin counts tasks as they finish and SIGKILLs the worker holding the
n-th result — a task-state trigger, not a timer — so the kill always lands while
the computation runs: "early" once 1 in 20 and "late" once 3 in 4 of the tasks
of an undisturbed run have finished, and, for the fit, also at the first task of
its last stage, when the rows that wait for the exact bin edges live only in the
workers' memory. The nanny restarts the worker, dask recomputes what was lost,
and the results must be bit-identical to those of the undisturbed run. Each test
asserts that the kill happened (the worker's pid changed, the scheduler lost the
worker, lost results were computed again), so none can pass vacuously.
"""

from __future__ import annotations

import gc
import os
import signal
import time
from typing import Any

import dask
import numpy as np
import pytest
import xarray as xr
from dask.utils import key_split
from distributed.diagnostics.plugin import SchedulerPlugin

from bigkern.datasets import make_scenes
from bigkern.features import with_features
from bigkern.jobs.fit import DEFAULT_FEATURES, fit_scenes
from bigkern.jobs.predict import predict_scenes, write_predictions
from bigkern.scenes import open_scenes, write_scenes

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

PARAMS = {"omega": 0.8, "C": 3.0}
#: Task (by dask key prefix) of the fit's last stage (percentile_bins' default plan, the
#: one-read plan): it bins the rows that waited for the exact edges, which until then live
#: only in their workers' memory.
FINISH_TASK = "bin_kept_or_none"


class KillAfter(SchedulerPlugin):
    """Counts tasks reaching memory; SIGKILLs the worker holding the ``after``-th one.

    With ``prefix``, only tasks whose key prefix (:func:`dask.utils.key_split`) is
    ``prefix`` count towards ``after``.
    """

    name = "bigkern-test-kill-after"

    def __init__(self) -> None:
        self.scheduler: Any = None
        self.arm(None)

    async def start(self, scheduler: Any) -> None:
        self.scheduler = scheduler

    def arm(self, after: int | None, prefix: str | None = None) -> None:
        """Count from zero; kill at the ``after``-th finished task (never if None)."""
        self.after = after
        self.prefix = prefix
        self.done = 0
        self.matched = 0
        self.killed: list[dict[str, Any]] = []
        self.removed: list[str] = []
        self.errors: list[str] = []

    def transition(self, key: Any, start: str, finish: str, *args: Any, **kwargs: Any) -> None:
        if finish != "memory":
            return
        self.done += 1
        if self.prefix is None or key_split(key) == self.prefix:
            self.matched += 1
        if self.after is None or self.killed or self.matched < self.after:
            return
        try:
            ts = self.scheduler.tasks.get(key)
            holders = [ws for ws in (ts.who_has if ts is not None else ()) if ws.pid]
            if not holders:
                return  # try again at the next finished task
            ws = holders[0]
            if ws.pid == os.getpid():
                raise RuntimeError("refusing to kill the scheduler's own process")
            os.kill(ws.pid, signal.SIGKILL)
            self.killed.append({"worker": ws.address, "pid": ws.pid, "at": self.done,
                                "key": str(key)})
        except Exception as err:  # the scheduler swallows plugin errors: keep them
            self.errors.append(repr(err))

    def remove_worker(self, scheduler: Any, worker: str, **kwargs: Any) -> None:
        self.removed.append(worker)


def _arm(dask_scheduler: Any, after: int | None, prefix: str | None = None) -> None:
    dask_scheduler.plugins[KillAfter.name].arm(after, prefix)


def _report(dask_scheduler: Any) -> dict[str, Any]:
    p = dask_scheduler.plugins[KillAfter.name]
    return {"done": p.done, "matched": p.matched, "killed": list(p.killed),
            "removed": list(p.removed), "errors": list(p.errors)}


def _worker_pids(client: Any, n: int = 2, timeout: float = 60.0) -> set[int]:
    """Pids of the workers once ``n`` of them are up and answering."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            client.wait_for_workers(n, timeout=max(1.0, deadline - time.monotonic()))
            pids = set(client.run(os.getpid, on_error="raise").values())
            if len(pids) == n:
                return pids
        except Exception:
            if time.monotonic() > deadline:
                raise
        if time.monotonic() > deadline:
            raise TimeoutError(f"{n} workers did not come back within {timeout} s")
        time.sleep(0.2)


@pytest.fixture(scope="module")
def cluster():
    """A two-process cluster of its own (its workers get killed) with the kill plugin.

    A LocalCluster closes a worker's nanny for good when, ``lost-worker-timeout``
    (15 s) after the scheduler lost that worker, no worker of its name is
    registered — as happens when the same worker was killed 15 s earlier and is
    restarting just then. The tests kill workers every few seconds, so the
    timeout is made longer than the module.
    """
    from distributed import Client, LocalCluster

    with dask.config.set({"distributed.deploy.lost-worker-timeout": "1h"}), \
            LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                         dashboard_address=":0") as lc, Client(lc) as client:
        client.register_plugin(KillAfter())
        yield client


@pytest.fixture(scope="module")
def store(cluster, tmp_path_factory):
    """Four small scenes in zarr, 16 chunks per variable (so there are tasks to interrupt)."""
    path = tmp_path_factory.mktemp("worker-loss") / "scenes.zarr"
    return write_scenes(make_scenes(4, (96, 128), seed=11), path,
                        chunks={"scene": 1, "y": 24, "x": 128})


@pytest.fixture(scope="module")
def scenes(store):
    """The store opened (and its labels checked) once, outside the runs that get a kill."""
    return open_scenes(store)


def _fit(scenes):
    return fit_scenes(scenes, model="svc", search=False, params=PARAMS)


def _predict(model, scenes, out):
    """Predict and write to ``out``; return ``out`` (whatever ``write_predictions`` returns)."""
    write_predictions(predict_scenes(model, with_features(scenes, DEFAULT_FEATURES)), out)
    return out


def _n_tasks_held(dask_scheduler: Any) -> int:
    return len(dask_scheduler.tasks)


def _quiesce(client: Any, timeout: float = 30.0) -> None:
    """Wait until the scheduler holds no task, so every run computes its whole graph.

    Results still held from an earlier run (futures kept alive, e.g. by a
    reference cycle until the garbage collector runs) would be reused by a
    run with the same task keys, which then would not compute what the kill
    is meant to interrupt.
    """
    deadline = time.monotonic() + timeout
    while True:
        gc.collect()
        held = client.run_on_scheduler(_n_tasks_held)
        if not held:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"the scheduler still holds {held} task(s) from earlier runs "
                                 f"({len(client.futures)} futures of this client)")
        time.sleep(0.1)


def _run(client, job, after=None, prefix=None):
    """Run ``job()`` with the plugin armed; return its result and the plugin's report."""
    _quiesce(client)
    before = _worker_pids(client)
    client.run_on_scheduler(_arm, after=after, prefix=prefix)
    try:
        result = job()
        report = client.run_on_scheduler(_report)
    finally:
        client.run_on_scheduler(_arm, after=None)
    report["pids_before"] = before
    report["pids_after"] = _worker_pids(client)
    return result, report


def _assert_killed(report, n_tasks):
    """One worker was killed mid-run, the scheduler lost it and the nanny replaced it."""
    assert not report["errors"], report
    assert len(report["killed"]) == 1, f"no worker was killed: {report}"
    kill = report["killed"][0]
    assert kill["at"] < n_tasks, report  # tasks were left to run after the kill
    # the killed worker held the result that triggered the kill: lost work was redone
    assert report["done"] > n_tasks, report
    assert kill["pid"] in report["pids_before"]
    assert kill["pid"] not in report["pids_after"], report
    assert len(report["pids_after"]) == 2
    assert kill["worker"] in report["removed"], report


@pytest.fixture(scope="module")
def reference_fit(cluster, scenes):
    """The fit of an undisturbed run, and its task counts (all, and of its last stage)."""
    outcome, report = _run(cluster, lambda: _fit(scenes), prefix=FINISH_TASK)
    assert not report["killed"]
    assert report["pids_after"] == report["pids_before"]
    assert outcome.bins.attrs["plan"] == "one-read"
    assert report["matched"] >= 2, report  # the last stage exists under that name
    return outcome, report["done"]


@pytest.fixture(scope="module")
def reference_prediction(cluster, scenes, reference_fit, tmp_path_factory):
    """The prediction store of an undisturbed run, and how many tasks that run finished."""
    out = tmp_path_factory.mktemp("worker-loss-ref") / "pred.zarr"
    path, report = _run(cluster, lambda: _predict(reference_fit[0].model, scenes, out))
    assert not report["killed"]
    assert report["pids_after"] == report["pids_before"]
    return path, report["done"]


def _kill_at(when: str, n_tasks: int) -> dict[str, Any]:
    """When to kill, given the number of tasks an undisturbed run finishes."""
    if when == "early":  # 1 in 20 tasks done: the first pass over the store has begun
        return {"after": max(1, n_tasks // 20)}
    if when == "late":  # 3 in 4 tasks done
        return {"after": 3 * n_tasks // 4}
    if when == "kept-rows":  # the last stage has begun: kept rows are on the workers only
        return {"after": 1, "prefix": FINISH_TASK}
    raise ValueError(when)


@pytest.mark.parametrize("when", ["early", "late", "kept-rows"])
def test_fit_survives_a_killed_worker(cluster, scenes, reference_fit, when):
    """A worker SIGKILLed early, late or after the kept rows were persisted: the same model.

    Same bins (identical dataset), same expansion (basis, coefficients, intercept,
    scaling) bit for bit, and so the same decision values.
    """
    ref, n_tasks = reference_fit
    assert n_tasks >= 100  # enough tasks that every kill lands well inside the run
    got, report = _run(cluster, lambda: _fit(scenes), **_kill_at(when, n_tasks))
    _assert_killed(report, n_tasks)

    xr.testing.assert_identical(got.bins, ref.bins)
    a, b = got.model.expansion_, ref.model.expansion_
    for name in ("centers", "coef", "offset", "scale"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert (a.intercept, a.omega) == (b.intercept, b.omega)
    np.testing.assert_array_equal(got.model.classes_, ref.model.classes_)
    np.testing.assert_array_equal(got.model.feature_names_in_, ref.model.feature_names_in_)
    timeless = {k: v for k, v in got.model.fit_report_.items() if not k.startswith("seconds")}
    assert timeless == {k: v for k, v in ref.model.fit_report_.items()
                        if not k.startswith("seconds")}
    probe = ref.bins["center"].values
    np.testing.assert_array_equal(a.decision(probe), b.decision(probe))


@pytest.mark.parametrize("when", ["early", "late"])
def test_prediction_survives_a_killed_worker(cluster, scenes, reference_fit,
                                             reference_prediction, tmp_path, when):
    """A worker SIGKILLed early or late while predicting and writing: the same store.

    The decoded arrays of the written store equal the undisturbed run's:
    ``decision`` bit for bit, ``cloud_mask`` exactly, coordinates too.
    """
    model = reference_fit[0].model
    ref_path, n_tasks = reference_prediction
    assert n_tasks >= 20
    out = tmp_path / "pred.zarr"
    path, report = _run(cluster, lambda: _predict(model, scenes, out), **_kill_at(when, n_tasks))
    _assert_killed(report, n_tasks)

    got = xr.open_zarr(path).load()
    ref = xr.open_zarr(ref_path).load()
    xr.testing.assert_equal(got, ref)
    for name in ("decision", "cloud_mask"):
        assert got[name].attrs == ref[name].attrs, name
    dec, dec_ref = got["decision"].values, ref["decision"].values
    assert dec.dtype == dec_ref.dtype == np.float32
    np.testing.assert_array_equal(dec.view(np.uint32), dec_ref.view(np.uint32))
    np.testing.assert_array_equal(got["cloud_mask"].values, ref["cloud_mask"].values)
    assert np.isfinite(dec).mean() > 0.9  # a real prediction, not an empty store
