"""One writer per output, paths resolved where they are given, and outputs replaced only
once their replacement is complete.

Each test reproduces a case a probe ran and saw fail: two ``bigkern predict`` processes
mixing their regions into one store that read as complete, a relative ``-o`` written by
remote workers into another directory's store, an old output deleted before the new one
existed, a scenes store replaced by predictions. A dangling symbolic link given as the
output is called a link.
"""

from __future__ import annotations

import json
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
from bigkern.datasets import make_scenes
from bigkern.errors import StoreError
from bigkern.scenes import open_scenes, write_scenes
from bigkern.store.claims import claim_output, lock_location
from bigkern.store.integrity import open_checked
from bigkern.store.outputs import PARTIAL_TAG, REGIONS_FOLDER, prepare_output
from bigkern.store.regions import JOB_ATTR, STORE_ID_ATTR
from bigkern.store.staging import staged_output
from bigkern.store.urls import location

pytestmark = pytest.mark.slow_file(seconds=40)

REPO = Path(__file__).resolve().parents[2]
#: where the in-process commands compute: ``--scheduler`` of the module's running scheduler
#: and worker (``remote``), so that each command connects instead of starting a cluster of
#: its own; the commands' claims, staging and replacement happen in this process either way
WHERE: list[str] = []


@pytest.fixture(scope="module")
def two_models(tmp_path_factory, _commands_connect_to_remote):
    """A scene store and two ridge models that predict it differently."""
    root = tmp_path_factory.mktemp("writers")
    store = root / "s.zarr"
    write_scenes(make_scenes(2, (64, 64), seed=3, radiances=False), store,
                 chunks={"scene": 1, "y": 16, "x": 64})
    models = []
    for i, omega in enumerate((0.9, 0.3)):
        out = root / f"m{i}.zarr"
        assert main(["fit", str(store), "-o", str(out), "--model", "ridge", "--no-search",
                     "--param", f"omega={omega}", "--param", "lam=0.05", *WHERE]) == 0
        models.append(out)
    return store, models


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def remote(tmp_path_factory):
    """A scheduler and one worker started as users start them, in a directory of their own.

    Yields the scheduler address and the workers' working directory.
    """
    worker_dir = tmp_path_factory.mktemp("workers-cwd")
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    bin_dir = Path(sys.executable).parent
    scheduler = subprocess.Popen([bin_dir / "dask", "scheduler", "--host", "127.0.0.1",
                                  "--port", str(port), "--no-dashboard"], cwd=worker_dir,
                                 env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    worker = subprocess.Popen([bin_dir / "dask", "worker", f"tcp://127.0.0.1:{port}",
                               "--nthreads", "1", "--no-dashboard"], cwd=worker_dir, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield f"tcp://127.0.0.1:{port}", worker_dir
    finally:
        for p in (worker, scheduler):
            p.terminate()
            p.wait(timeout=60)


@pytest.fixture(scope="module", autouse=True)
def _commands_connect_to_remote(remote):
    """Point the in-process commands (``WHERE``) at the module's scheduler."""
    WHERE[:] = ["--scheduler", remote[0]]
    yield
    WHERE.clear()


def _snapshot(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*"))
            if p.is_file()}


def _predict(store: Path, model: Path, out: Path, *extra: str) -> int:
    return main(["predict", str(store), str(model), "-o", str(out), *extra, *WHERE])


def _decision(path: Path) -> np.ndarray:
    return open_checked(path)["decision"].values


# --- one writer ------------------------------------------------------------------------------

def test_a_second_writer_is_refused_while_the_first_holds_the_claim(two_models, tmp_path,
                                                                    capsys):
    store, (m0, _) = two_models
    out = tmp_path / "R.zarr"
    with claim_output(out):  # another command writing R.zarr
        assert _predict(store, m0, out) == 1
    err = capsys.readouterr().err
    assert "is being written by another command" in err and f"process {os.getpid()}" in err
    assert not out.exists()
    assert not lock_location(location(out)).exists()  # released with the block


def test_a_claim_left_by_a_dead_process_is_taken_over(two_models, tmp_path):
    store, (m0, _) = two_models
    out = tmp_path / "R.zarr"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    pid = int(dead.stdout)
    lock = tmp_path / ".R.zarr.bigkern-lock"
    lock.write_text(json.dumps({"token": "old", "host": socket.gethostname(), "pid": pid,
                                "started": time.time(), "command": "bigkern predict"}))
    assert _predict(store, m0, out) == 0
    assert open_checked(out).attrs["bigkern_status"] == "complete"
    assert not lock.exists()


def test_an_unexpired_claim_of_another_host_is_respected(tmp_path):
    out = tmp_path / "R.zarr"
    lock = tmp_path / ".R.zarr.bigkern-lock"
    lock.write_text(json.dumps({"token": "t", "host": "elsewhere", "pid": 1,
                                "started": time.time(), "command": "bigkern predict"}))
    with pytest.raises(StoreError, match="host elsewhere"), claim_output(out):
        pass
    os.utime(lock, (time.time() - 10_000, time.time() - 10_000))  # never renewed since
    with claim_output(out) as claim:
        claim.check()


def test_two_predictions_started_together_never_mix(two_models, tmp_path, remote):
    """The probe's race: two real ``bigkern predict --overwrite`` processes (on one running
    cluster, so that they start within a second of each other), up to ten times, until one
    was refused while the other wrote (``benchmarks/faults_writers.py`` runs it more)."""
    store, models = two_models
    address, _ = remote
    out = tmp_path / "R.zarr"
    assert _predict(store, models[0], out) == 0
    expected = {str(m): None for m in models}
    for m in models:
        assert _predict(store, m, tmp_path / f"ref-{m.name}", "--overwrite") == 0
        expected[str(m)] = _decision(tmp_path / f"ref-{m.name}")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    outcomes: list[tuple[int, ...]] = []
    for _ in range(10):  # until the race happened (one refused, one written)
        if any(0 in o and 1 in o for o in outcomes):
            break
        procs = [subprocess.Popen(
            [sys.executable, "-m", "bigkern", "predict", str(store), str(m), "-o",
             str(out), "--overwrite", "--scheduler", address],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
            for m in models]
        results = [(p.wait(timeout=300), p.stderr.read()) for p in procs]
        for p in procs:
            p.stdout.close()
            p.stderr.close()
        for code, err in results:
            assert code == 0 or "being written by another command" in err, err
        outcomes.append(tuple(code for code, _ in results))
        got = _decision(out)  # reads as complete, and is wholly one model's
        assert any(np.array_equal(got, want, equal_nan=True) for want in expected.values()), \
            outcomes
        assert not list(tmp_path.glob(f".R.zarr{PARTIAL_TAG}*"))
    assert any(0 in o and 1 in o for o in outcomes), outcomes  # the race did happen


def test_a_store_replaced_under_a_writer_is_not_written_into(two_models, tmp_path):
    from bigkern.store.region_records import open_region_arrays as _open_arrays

    store, (m0, _) = two_models
    out = tmp_path / "R.zarr"
    assert _predict(store, m0, out) == 0
    own_id = open_checked(out).attrs[STORE_ID_ATTR]
    _open_arrays(location(out), ["decision"], own_id)  # the store it created: fine
    with pytest.raises(StoreError, match="not the store this job created"):
        _open_arrays(location(out), ["decision"], "an-id-of-another-store")


def test_regions_of_another_job_never_verify(two_models, tmp_path):
    """Chunks another model wrote pass their checksums, but not the region records."""
    store, (m0, m1) = two_models
    out, other = tmp_path / "R.zarr", tmp_path / "other.zarr"
    assert _predict(store, m0, out) == 0
    assert _predict(store, m1, other) == 0
    want = _decision(out)
    for name in ("decision", "cloud_mask"):  # region (1, 2, 0) now holds the other model's
        shutil.copyfile(other / name / "c" / "1" / "2" / "0", out / name / "c" / "1" / "2" / "0")
    # mixed, and it reads fine chunk by chunk
    assert not np.array_equal(_decision(out), want, equal_nan=True)
    report = bigkern.write_predictions(
        bigkern.predict_scenes(bigkern.load_model(m0), bigkern.with_features(
            open_scenes(store), ("NDAI", "logSD", "CORR"))), out)
    assert (report.n_damaged, report.n_computed) == (1, 1)
    np.testing.assert_array_equal(_decision(out), want)
    attrs = open_checked(out).attrs
    records = list((out / REGIONS_FOLDER / attrs[STORE_ID_ATTR]).iterdir())
    assert len(records) == report.n_regions
    assert {json.loads(r.read_text())["job"] for r in records} == {attrs[JOB_ATTR]}


# --- paths resolved where they are given -------------------------------------------------------

def test_a_relative_output_is_written_where_the_client_runs(two_models, tmp_path, remote):
    """Workers started in another directory must not write into that directory's store."""
    store, (m0, m1) = two_models
    address, worker_dir = remote
    client_dir = tmp_path / "client"
    client_dir.mkdir()
    assert _predict(store, m1, worker_dir / "victim.zarr") == 0  # someone else's output
    before = _snapshot(worker_dir / "victim.zarr")
    done = subprocess.run(
        [sys.executable, "-m", "bigkern", "predict", str(store), str(m0), "-o",
         "victim.zarr", "--scheduler", address, "--workers", "1"],
        cwd=client_dir, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True,
        text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    assert _snapshot(worker_dir / "victim.zarr") == before
    mine = client_dir / "victim.zarr"
    assert open_checked(mine).attrs["bigkern_status"] == "complete"
    assert not np.array_equal(_decision(mine), _decision(worker_dir / "victim.zarr"),
                              equal_nan=True)


# --- replace only what is ours, and only once the new one is complete ---------------------------

def test_predictions_never_replace_a_scenes_store(two_models, tmp_path, capsys):
    store, (m0, _) = two_models
    target = tmp_path / "other-scenes.zarr"
    write_scenes(make_scenes(1, (16, 16), seed=1, radiances=False), target)
    before = _snapshot(target)
    assert _predict(store, m0, target, "--overwrite") == 1
    assert "is a bigkern scenes store, not predictions" in capsys.readouterr().err
    assert _snapshot(target) == before


def test_a_failed_overwrite_keeps_the_old_output_whole(two_models, tmp_path):
    store, (m0, m1) = two_models
    out = tmp_path / "P.zarr"
    assert _predict(store, m0, out) == 0
    before = _snapshot(out)
    broken = tmp_path / "broken.zarr"
    shutil.copytree(store, broken)
    (broken / "CORR" / "c" / "1" / "2" / "0").write_bytes(b"not a chunk")
    assert _predict(broken, m1, out, "--overwrite") == 1  # fails half-way through its regions
    assert _snapshot(out) == before  # the old output, complete and untouched
    open_checked(out)
    # the interrupted replacement waits beside it, hidden; the next writer removes it
    assert len(list(tmp_path.glob(f".P.zarr{PARTIAL_TAG}*"))) == 1
    assert _predict(store, m1, out, "--overwrite") == 0
    assert not list(tmp_path.glob(".P.zarr.bigkern-*"))


def test_the_next_writer_removes_partials_of_killed_runs_but_nothing_foreign(tmp_path):
    out = tmp_path / "s.zarr"
    dead = tmp_path / f".s.zarr{PARTIAL_TAG}0123456789ab"
    write_scenes(make_scenes(1, (8, 8), seed=0), dead)  # a killed run's staged store
    foreign = tmp_path / f".s.zarr{PARTIAL_TAG}mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    with staged_output(out) as temp:
        assert not dead.exists()
        write_scenes(make_scenes(1, (8, 8), seed=1), temp)
    assert (foreign / "notes.txt").read_text() == "keep me"
    open_scenes(out)


def test_a_partial_that_a_late_task_recreated_is_removed_once_the_tasks_are_over(tmp_path):
    from bigkern.store.staging import remove_abandoned

    out = tmp_path / "s.zarr"
    with pytest.raises(KeyboardInterrupt), staged_output(out) as temp:
        (temp / "NDAI").mkdir(parents=True)
        raise KeyboardInterrupt  # Ctrl-C while the workers write
    assert sorted(tmp_path.iterdir()) == []  # removed at once...
    (temp / "NDAI" / "c").mkdir(parents=True)  # ...but a task already running writes on
    assert remove_abandoned() == [str(temp)]
    assert sorted(tmp_path.iterdir()) == [] and not out.exists()
    assert remove_abandoned() == []  # each is removed once


def test_a_partial_still_being_written_does_not_hide_the_interrupt(tmp_path, monkeypatch):
    """CI saw ``bigkern: error: [Errno 39] Directory not empty`` after a Ctrl-C: a task
    wrote a chunk into the staged store while it was being removed, and the removal's
    error replaced the interrupt. That race is played here by the removal failing once."""
    import errno

    from bigkern.store import staging

    real_delete, failures = staging._delete, []

    def delete_while_a_task_writes(path):
        if not failures:
            failures.append(path)
            raise OSError(errno.ENOTEMPTY, "Directory not empty", str(path))
        real_delete(path)

    monkeypatch.setattr(staging, "_delete", delete_while_a_task_writes)
    out = tmp_path / "s.zarr"
    with pytest.raises(KeyboardInterrupt), staged_output(out) as temp:
        (temp / "NDAI" / "c").mkdir(parents=True)
        raise KeyboardInterrupt
    assert failures and temp.exists()  # left for the end of the command...
    assert staging.remove_abandoned() == [str(temp)]
    assert sorted(tmp_path.iterdir()) == []  # ...which removes it


def test_a_store_killed_while_its_template_was_made_is_started_again(two_models, tmp_path):
    """A run killed between the template's root and its arrays left a store without
    'decision': the rerun of the same job starts it again instead of a KeyError."""
    import zarr

    store, (m0, _) = two_models
    out = tmp_path / "P.zarr"
    assert _predict(store, m0, out) == 0
    want = _decision(out)
    shutil.rmtree(out / "decision")
    zarr.open_group(str(out), mode="r+", use_consolidated=False).attrs["bigkern_status"] = \
        "writing"
    assert _predict(store, m0, out) == 0
    np.testing.assert_array_equal(_decision(out), want)


def test_a_model_never_replaces_a_scenes_store(two_models, tmp_path):
    _, (m0, _) = two_models
    target = tmp_path / "s.zarr"
    write_scenes(make_scenes(1, (8, 8), seed=1, radiances=False), target)
    before = _snapshot(target)
    with pytest.raises(StoreError, match="is a bigkern scenes store, not model"):
        bigkern.save_model(bigkern.load_model(m0), target, overwrite=True)
    assert _snapshot(target) == before


def test_scenes_never_replace_a_model_or_predictions(two_models, tmp_path):
    store, (m0, _) = two_models
    predictions = tmp_path / "P.zarr"
    assert _predict(store, m0, predictions) == 0
    for target, kind in ((m0, "model"), (predictions, "predictions")):
        before = _snapshot(target)
        with pytest.raises(StoreError, match=f"is a bigkern {kind} store, not scenes"):
            write_scenes(make_scenes(1, (8, 8), seed=1, radiances=False), target,
                         overwrite=True)
        assert _snapshot(target) == before


@pytest.fixture
def small_disk(tmp_path):
    """A 1 MiB tmpfs mounted for the test (root only), unmounted after it."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(disk)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here (needs root): {mounted.stderr.strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def test_an_overwrite_onto_a_full_disk_keeps_the_old_output_and_names_it(
        two_models, small_disk, capsys):
    store, (m0, m1) = two_models
    out = small_disk / "P.zarr"
    assert _predict(store, m0, out) == 0
    before, old = _snapshot(out), _decision(out)
    # fill the disk but for a few pages: room for the claim, not for a second output
    filler = small_disk / "filler"
    free = shutil.disk_usage(small_disk).free
    filler.write_bytes(b"\0" * max(free - 8 * 4096, 0))
    capsys.readouterr()
    assert _predict(store, m1, out, "--overwrite") == 1
    err = [line for line in capsys.readouterr().err.splitlines()
           if line and not line.startswith("bigkern: connected to")]
    assert len(err) == 1 and "No space left on device" in err[0] and str(out) in err[0], err
    assert _snapshot(out) == before  # the old output, complete and untouched
    open_checked(out)
    filler.unlink()
    assert _predict(store, m1, out, "--overwrite") == 0
    assert not list(small_disk.glob(".P.zarr.bigkern-*"))
    assert not np.array_equal(_decision(out), old)  # now m1's predictions


def test_an_unfinished_store_owns_its_half_made_arrays_and_nothing_else(tmp_path):
    """A writer stopped by a full disk made an array's folder but not its metadata: the
    unfinished store is still bigkern's to replace; a finished one with it is not."""
    import zarr

    from bigkern.store.outputs import check_replaceable

    store = write_scenes(make_scenes(1, (8, 8), seed=0, radiances=False), tmp_path / "s.zarr")
    (store / "cloud_mask" / "c").mkdir(parents=True)
    with pytest.raises(StoreError, match=r"holds 1 entry bigkern did not write \(cloud_mask\)"):
        check_replaceable(store)
    zarr.open_group(str(store), mode="r+", use_consolidated=False).attrs["bigkern_status"] = \
        "writing"
    check_replaceable(store)  # unfinished: the folder is its own half-made array
    (store / "cloud_mask" / "notes.txt").write_text("mine")
    with pytest.raises(StoreError, match="cloud_mask"):
        check_replaceable(store)  # not shaped like an array: somebody else's


def test_an_output_in_a_folder_not_made_yet_is_written_there(tmp_path):
    """The claim makes the output's parent folders (as ``mkdir -p``): no raw error from
    the lock file of a folder that does not exist."""
    from bigkern.datasets import make_scenes
    from bigkern.scenes import open_scenes, write_scenes

    store = write_scenes(make_scenes(1, (8, 8), seed=0), tmp_path / "a" / "b" / "s.zarr")
    assert open_scenes(store).sizes["scene"] == 1


def test_a_dangling_link_as_output_is_called_a_link(tmp_path):
    link = tmp_path / "out.zarr"
    os.symlink(tmp_path / "gone.zarr", link)
    with pytest.raises(StoreError, match=r"out.zarr is a dangling symbolic link \(to .*gone.zarr, "
                                         r"which does not exist\)") as err:
        prepare_output(link, overwrite=True)
    assert "exists" not in str(err.value).replace("does not exist", "")
