"""A real one-node SLURM on localhost runs bigkern's deploy/slurm/ as a user would.

The module fixture starts munged, slurmctld and slurmd with
``deploy/slurm/localhost-slurm.sh`` (its own key, socket, ports, state and spool
directories in a temporary folder) and stops them at teardown. It skips, saying
why, only when slurm-wlm and munge are not installed (``.ci/run`` installs them
with apt-get) or cannot be started here.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import bigkern
from bigkern.cli.main import main
from bigkern.models import load_model
from bigkern.store.zarr_store import open_zarr

pytestmark = [pytest.mark.slow, pytest.mark.slow_file(seconds=85), pytest.mark.timeout(300)]

REPO = Path(__file__).resolve().parents[2]
SLURM = REPO / "deploy" / "slurm"
PARAMS = ["--no-search", "--param", "omega=0.8", "--param", "C=3"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    """``SLURM_CONF`` of a running one-node SLURM (2 CPUs) that only this module uses."""
    missing = [d for d in ("munged", "mungekey", "slurmctld", "slurmd")
               if shutil.which(d, path=f"{os.environ.get('PATH', '')}:/usr/sbin:/sbin") is None]
    if missing:
        pytest.skip(f"slurm-wlm and munge are not installed ({', '.join(missing)} missing; "
                    f".ci/run installs them with apt-get install slurm-wlm munge)")
    if os.geteuid() != 0:
        pytest.skip("the localhost SLURM runs slurmd as root, and this is not root")
    root = tmp_path_factory.mktemp("slurm")
    env = {**os.environ, "PATH": f"{os.environ.get('PATH', '')}:/usr/sbin:/sbin",
           "SLURM_CTLD_PORT": str(_free_port()), "SLURM_D_PORT": str(_free_port())}
    script = str(SLURM / "localhost-slurm.sh")
    started = subprocess.run([script, "start", str(root)], capture_output=True, text=True,
                             env=env, timeout=120)
    if started.returncode != 0:
        subprocess.run([script, "stop", str(root)], env=env, timeout=60)
        pytest.skip(f"the localhost SLURM could not be started: {started.stderr.strip()}")
    conf = str(root / "slurm.conf")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SLURM_CONF", conf)
        # the jobs run the test's interpreter and its `bigkern` and `dask` commands
        mp.setenv("PATH", f"{Path(sys.executable).parent}:{env['PATH']}")
        try:
            yield conf
        finally:
            subprocess.run(["scancel", "--full", "--user", str(os.getuid())],
                           capture_output=True, timeout=60)
            subprocess.run([script, "stop", str(root)], env=env, timeout=60)


def _wait_for_job(job: str, timeout: float = 180) -> dict[str, str]:
    """Fields of ``scontrol show job`` once the job has left the queue's running states."""
    deadline = time.monotonic() + timeout
    while True:
        shown = subprocess.run(["scontrol", "show", "job", "-o", job], capture_output=True,
                               text=True, timeout=30).stdout
        fields = dict(item.split("=", 1) for item in shown.split() if "=" in item)
        if fields.get("JobState") not in (None, "PENDING", "CONFIGURING", "RUNNING",
                                          "COMPLETING"):
            return fields
        if time.monotonic() > deadline:
            subprocess.run(["scancel", job], timeout=30)
            raise AssertionError(f"job {job} still {fields.get('JobState')} after {timeout} s")
        time.sleep(0.5)


@pytest.fixture(scope="module")
def local_fit(scene_store, tmp_path_factory):
    """The model of ``bigkern fit`` on the embedded LocalCluster, and its path."""
    path = tmp_path_factory.mktemp("local") / "model.zarr"
    assert main(["fit", str(scene_store), "-o", str(path), *PARAMS, "--workers", "2"]) == 0
    return path


def _assert_same_model(a_path: Path, b_path: Path) -> None:
    a, b = load_model(a_path), load_model(b_path)
    assert a.get_params() == b.get_params()
    ea, eb = a.expansion_, b.expansion_
    for name in ("centers", "coef", "offset", "scale"):
        np.testing.assert_array_equal(getattr(ea, name), getattr(eb, name), err_msg=name)
    assert (ea.intercept, ea.omega) == (eb.intercept, eb.omega)
    np.testing.assert_array_equal(a.classes_, b.classes_)


def test_sbatch_predict_equals_a_local_run(slurm, scene_store, local_fit, tmp_path):
    """The shipped batch script runs scheduler, workers and ``bigkern predict`` in one job."""
    local = tmp_path / "local.zarr"
    assert main(["predict", str(scene_store), str(local_fit), "-o", str(local),
                 "--workers", "2"]) == 0
    out = tmp_path / "slurm.zarr"
    t = time.monotonic()
    job = subprocess.run(["sbatch", "--parsable", str(SLURM / "predict.sbatch"),
                          str(scene_store), str(local_fit), str(out)], cwd=tmp_path,
                         capture_output=True, text=True, timeout=60, check=True
                         ).stdout.strip().split(";")[0]
    fields = _wait_for_job(job)
    log = (tmp_path / f"bigkern-predict-{job}.out").read_text()
    assert fields["JobState"] == "COMPLETED" and fields["ExitCode"] == "0:0", log
    print(f"sbatch predict job {job}: {time.monotonic() - t:.1f} s")
    assert "with 2 workers" in log and f"masks written to {out}" in log, log
    assert not list(tmp_path.glob(".bigkern-job-*"))  # the job cleaned up after itself
    got, want = open_zarr(out), open_zarr(local)
    assert set(got.data_vars) == set(want.data_vars)
    for name in want.data_vars:
        np.testing.assert_array_equal(got[name].values, want[name].values, err_msg=name)


def test_profile_slurm_gets_two_workers_as_jobs(slurm, scene_store, local_fit, tmp_path,
                                                monkeypatch):
    """``connect(profile="slurm")`` with the shipped jobqueue.yaml: 2 workers, 2 jobs."""
    from bigkern.cluster.client import connect
    from bigkern.jobs.fit import fit_scenes
    from bigkern.models import save_model
    from bigkern.scenes import open_scenes

    monkeypatch.chdir(tmp_path)  # where the worker jobs write their output
    t = time.monotonic()
    with bigkern.config.set(**{"cluster.profiles.slurm.config_file":
                               str(SLURM / "jobqueue.yaml")}), \
            connect(profile="slurm", quiet=True) as client:
        started = time.monotonic() - t
        jobs = client.run(lambda: os.environ.get("SLURM_JOB_ID"))
        assert len(jobs) == 2 and len(set(jobs.values())) == 2 and None not in jobs.values()
        queue = subprocess.run(["squeue", "-h", "-o", "%i %j %T"], capture_output=True,
                               text=True, timeout=30).stdout.split("\n")
        running = {line.split()[0] for line in queue if "bigkern-worker RUNNING" in line}
        assert set(jobs.values()) <= running, queue
        lifetime = client.run(lambda dask_worker: dask_worker.lifetime)
        # --lifetime 55m, --lifetime-stagger 4m: 55 ± 4 min, below the 60 min walltime
        assert all(51 * 60 <= s <= 59 * 60 for s in lifetime.values()), lifetime
        outcome = fit_scenes(open_scenes(scene_store), model="svc", search=False,
                             params={"omega": 0.8, "C": 3.0})
        save_model(outcome.model, tmp_path / "slurm-model.zarr")
        built = client.cluster
    print(f"SLURMCluster: 2 workers in {started:.1f} s")
    assert built.status.name == "closed"
    _assert_same_model(tmp_path / "slurm-model.zarr", local_fit)


def test_cli_fit_with_profile_slurm(slurm, scene_store, local_fit, tmp_path):
    """``bigkern fit --profile slurm`` as deploy/README.md shows it gives the local model."""
    env = {**os.environ,
           "BIGKERN_CLUSTER__PROFILES__SLURM__CONFIG_FILE": str(SLURM / "jobqueue.yaml")}
    out = tmp_path / "model.zarr"
    done = subprocess.run(["bigkern", "fit", str(scene_store), "-o", str(out), *PARAMS,
                           "--profile", "slurm"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    assert "with 2 workers" in done.stderr
    _assert_same_model(out, local_fit)
