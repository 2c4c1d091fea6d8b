"""Lose nothing, never lie: outputs never replace inputs or foreign files, damage is named.

Each test reproduces a fault found by trying bigkern as a new user would, on real
zarr stores and the real ``bigkern`` command.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from bigkern.cli.main import main
from bigkern.datasets import make_scenes
from bigkern.errors import StoreError
from bigkern.scenes import open_scenes, write_scenes
from bigkern.store.integrity import open_checked
from bigkern.store.staging import staged_output

pytestmark = pytest.mark.slow_file(seconds=115)

WORKERS = ["--workers", "1"]


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """A small scene store and a model fitted on it by the CLI."""
    root = tmp_path_factory.mktemp("faults")
    store = root / "s.zarr"
    write_scenes(make_scenes(2, (48, 64), seed=5, radiances=False), store,
                 chunks={"scene": 1, "y": 24, "x": 64})
    assert main(["fit", str(store), "-o", str(root / "m.zarr"), "--model", "ridge",
                 "--no-search", "--param", "omega=0.9", "--param", "lam=0.05", *WORKERS]) == 0
    return store, root / "m.zarr"


def _snapshot(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*"))
            if p.is_file()}


# --- safe outputs ---------------------------------------------------------------------------

def test_predict_onto_its_input_is_refused_and_the_input_survives(fitted, capsys):
    store, model = fitted
    before = _snapshot(store)
    assert main(["predict", str(store), str(model), "-o", str(store), "--overwrite",
                 *WORKERS]) == 1
    assert "is the input" in capsys.readouterr().err
    assert _snapshot(store) == before
    open_scenes(store)  # still a complete, readable store


def test_ingest_into_the_folder_of_its_inputs_is_refused(tmp_path, monkeypatch, capsys):
    rows = "\n".join(f"{y} {x} 1 1.0 2.0 0.5 200 190 180 170 160"
                     for y in range(2) for x in range(3))
    for name in ("a.txt", "b.txt"):
        (tmp_path / name).write_text(rows + "\n")
    monkeypatch.chdir(tmp_path)
    assert main(["ingest", "misr-text", "a.txt", "b.txt", "-o", ".", "--overwrite"]) == 1
    assert "contains the input" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "b.txt"]


def test_overwrite_refuses_a_folder_bigkern_did_not_write(fitted, tmp_path, capsys):
    store, model = fitted
    mine = tmp_path / "mydir"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    assert main(["predict", str(store), str(model), "-o", str(mine), "--overwrite",
                 *WORKERS]) == 1
    err = capsys.readouterr().err
    assert "not written by bigkern" in err and "notes.txt" in err
    assert (mine / "notes.txt").read_text() == "keep me"


def test_overwrite_refuses_a_bigkern_store_holding_foreign_files(tmp_path):
    path = tmp_path / "s.zarr"
    write_scenes(make_scenes(1, (8, 8), seed=0), path)
    (path / "my_notes.txt").write_text("keep me")
    with pytest.raises(StoreError, match=r"my_notes\.txt"):
        write_scenes(make_scenes(1, (8, 8), seed=1), path, overwrite=True)
    assert (path / "my_notes.txt").exists()


def test_overwrite_replaces_bigkern_output(tmp_path):
    path = tmp_path / "s.zarr"
    write_scenes(make_scenes(1, (8, 8), seed=0), path)
    write_scenes(make_scenes(1, (8, 8), seed=1), path, overwrite=True)
    again = make_scenes(1, (8, 8), seed=1)["NDAI"].values
    np.testing.assert_array_equal(open_scenes(path)["NDAI"].values, again)
    assert [p.name for p in tmp_path.iterdir()] == ["s.zarr"]  # no temporary left behind


def test_a_failed_write_leaves_nothing_and_keeps_the_old_output(tmp_path):
    path = tmp_path / "s.zarr"
    write_scenes(make_scenes(1, (8, 8), seed=0), path)
    before = _snapshot(path)
    with pytest.raises(RuntimeError, match="disk gone"), \
            staged_output(path, overwrite=True) as temp:
        temp.mkdir()
        (temp / "zarr.json").write_text("{}")
        raise RuntimeError("disk gone")
    assert _snapshot(path) == before
    assert [p.name for p in tmp_path.iterdir()] == ["s.zarr"]


# --- corrupt input --------------------------------------------------------------------------

def _damage(store: Path, variable: str, chunk: str, how: str) -> None:
    path = store / variable / "c" / chunk
    data = bytearray(path.read_bytes())
    if how == "flip":
        data[len(data) // 2] ^= 0x10
        data[len(data) // 2 + 1] ^= 0x01
        path.write_bytes(bytes(data))
    elif how == "truncate":
        path.write_bytes(bytes(data[: len(data) // 2]))
    else:
        path.unlink()


@pytest.mark.parametrize("how", ["flip", "truncate", "delete"])
@pytest.mark.parametrize("command", ["fit", "predict"])
def test_damaged_chunk_is_an_error_naming_store_variable_and_chunk(
        fitted, tmp_path, capsys, how, command):
    store, model = fitted
    damaged = tmp_path / "damaged.zarr"
    write_scenes(open_scenes(store), damaged, chunks={"scene": 1, "y": 24, "x": 64})
    _damage(damaged, "CORR", "1/1/0", how)
    args = (["fit", str(damaged), "-o", str(tmp_path / "m.zarr"), "--no-search",
             "--param", "omega=1"] if command == "fit" else
            ["predict", str(damaged), str(model), "-o", str(tmp_path / "p.zarr")])
    t = time.perf_counter()
    assert main([*args, *WORKERS]) == 1
    # ended, not retried until a timeout (generous: an embedded cluster starts within, and a
    # busy CI machine took 14 s)
    assert time.perf_counter() - t < 60
    err = capsys.readouterr().err
    assert str(damaged) in err and "'CORR'" in err and "chunk (1, 1, 0)" in err
    assert not (tmp_path / "m.zarr").exists()


def test_a_chunk_spanning_read_names_the_bad_chunk(fitted, tmp_path):
    store, _ = fitted
    damaged = tmp_path / "d.zarr"
    write_scenes(open_scenes(store), damaged, chunks={"scene": 1, "y": 24, "x": 64})
    _damage(damaged, "SD", "1/1/0", "flip")
    ds = open_checked(damaged, chunks={"scene": 2, "y": 48})
    with pytest.raises(StoreError, match=r"'SD', chunk \(1, 1, 0\)"):
        ds["SD"].values  # noqa: B018


def test_an_unfinished_store_does_not_read_as_complete(tmp_path):
    path = tmp_path / "s.zarr"
    write_scenes(make_scenes(1, (8, 8), seed=0), path)
    import zarr

    zarr.open_group(str(path), mode="r+").attrs["bigkern_status"] = "writing"
    with pytest.raises(StoreError, match="incomplete"):
        open_scenes(path)


# --- honest exit codes ----------------------------------------------------------------------

def test_all_pixels_without_prediction_exits_nonzero(fitted, tmp_path, capsys):
    store, model = fitted
    blank = open_scenes(store).load()
    blank["CORR"][:] = np.nan
    write_scenes(blank, tmp_path / "blank.zarr")
    assert main(["predict", str(tmp_path / "blank.zarr"), str(model), "-o",
                 str(tmp_path / "p.zarr"), *WORKERS]) == 1
    assert "no pixel" in capsys.readouterr().err


def test_unreachable_scheduler_is_one_line(fitted, tmp_path):
    store, _ = fitted
    env = {**os.environ, "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "2s"}
    run = subprocess.run(
        [sys.executable, "-m", "bigkern", "fit", str(store), "-o", str(tmp_path / "m.zarr"),
         "--scheduler", "tcp://127.0.0.1:9"], capture_output=True, text=True, env=env,
        timeout=120)
    assert run.returncode == 1
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "cannot connect" in lines[0], run.stderr


# --- resumable prediction -------------------------------------------------------------------

def _regions_done(path: Path, n_scene: int, n_y: int) -> set[tuple[int, int]]:
    """Regions whose two chunks exist and pass their checksums, and whose commit record was
    written after them (a process killed between its chunks and its record leaves a region
    that is, rightly, computed again)."""
    import zarr

    from bigkern.store.outputs import REGIONS_FOLDER
    from bigkern.store.region_records import STORE_ID_ATTR, region_key

    group = zarr.open_group(str(path), mode="r")
    records = path / REGIONS_FOLDER / str(group.attrs[STORE_ID_ATTR])
    done = set()
    for s in range(n_scene):
        for y in range(n_y):
            try:
                if not (records / region_key((s, y, 0))).exists():
                    raise KeyError("commit record")
                for name in ("decision", "cloud_mask"):
                    if not (path / name / "c" / f"{s}/{y}/0").exists():
                        raise KeyError(name)
                    group[name].blocks[s, y, 0]
            except Exception:
                continue
            done.add((s, y))
    return done


def _predict(store: Path, model: Path, out: Path):
    from bigkern.features import with_features
    from bigkern.jobs.predict import predict_scenes, write_predictions
    from bigkern.models import load_model

    fitted = load_model(model)
    scenes = with_features(open_scenes(store), [str(f) for f in fitted.feature_names_in_])
    return write_predictions(predict_scenes(fitted, scenes), out, inputs=[store, model])


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_killed_prediction_resumes_computing_only_the_rest(fitted, tmp_path, client):
    store = tmp_path / "s.zarr"
    n_scene, n_y = 12, 4
    write_scenes(make_scenes(n_scene, (64, 256), seed=2, radiances=False), store,
                 chunks={"scene": 1, "y": 16, "x": 256})
    # the module's model (a ridge fit on scenes of the same generator): a fit of its own on
    # these twelve scenes cost the test 4-9 s and checked nothing more
    _, model = fitted
    reference = tmp_path / "ref.zarr"
    uninterrupted = _predict(store, model, reference)

    out = tmp_path / "p.zarr"
    n_regions = n_scene * n_y
    proc = subprocess.Popen(
        [sys.executable, "-m", "bigkern", "predict", str(store), str(model), "-o", str(out),
         *WORKERS], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        chunks = out / "cloud_mask" / "c"
        if chunks.exists() and sum(1 for p in chunks.rglob("*") if p.is_file()) >= n_regions // 3:
            break
        assert proc.poll() is None, "the prediction finished before it could be killed"
        time.sleep(0.02)  # its 580 tasks take seconds; a tighter loop takes a core from them
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()

    done = _regions_done(out, n_scene, n_y)
    assert 0 < len(done) < n_regions
    kept = {p: (p.stat().st_mtime_ns, p.stat().st_ino)
            for s, y in done for p in (out / "decision" / "c" / f"{s}/{y}/0",
                                       out / "cloud_mask" / "c" / f"{s}/{y}/0")}
    with pytest.raises(StoreError, match="incomplete"):
        open_checked(out)

    report = _predict(store, model, out)
    assert report.resumed
    assert (report.n_reused, report.n_computed) == (len(done), n_regions - len(done))
    assert kept == {p: (p.stat().st_mtime_ns, p.stat().st_ino) for p in kept}
    got, want = open_checked(out), open_checked(reference)
    for name in ("decision", "cloud_mask"):
        np.testing.assert_array_equal(got[name].values, want[name].values)
    assert got.attrs["bigkern_status"] == "complete"

    # a chunk truncated after the run is found and rewritten by a rerun, and only it
    _damage(out, "decision", "3/2/0", "truncate")
    with pytest.raises(StoreError, match=r"'decision', chunk \(3, 2, 0\)"):
        open_checked(out)["decision"].values  # noqa: B018
    report = _predict(store, model, out)
    assert (report.n_reused, report.n_computed, report.n_damaged) == (n_regions - 1, 1, 1)
    assert report.summary == uninterrupted.summary
    # identical but for the random id each store is given when created, and the time its
    # history gives the prediction (when the store was started)
    resumed, whole = (open_checked(p)[["decision"]].load() for p in (out, reference))
    assert resumed.attrs.pop("bigkern_store_id") != whole.attrs.pop("bigkern_store_id")
    stamp = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ (?=bigkern \S+ predict_scenes: )",
                       re.MULTILINE)
    histories = [stamp.subn("", d.attrs.pop("history")) for d in (resumed, whole)]
    assert histories[0] == histories[1] and histories[0][1] == 1
    xr.testing.assert_identical(resumed, whole)


def test_rerun_of_a_finished_prediction_reports_it_and_computes_nothing(fitted, tmp_path,
                                                                        capsys):
    store, model = fitted
    args = ["predict", str(store), str(model), "-o", str(tmp_path / "p.zarr"), *WORKERS]
    assert main(args) == 0
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "4 of 4 regions were already written and verified; 0 computed now" in text


@pytest.mark.timeout(120)
def test_paused_workers_fail_within_the_timeout_instead_of_hanging():
    import dask
    import dask.array as da
    from distributed import Client, LocalCluster

    from bigkern import config
    from bigkern.cluster.compute import compute
    from bigkern.errors import ClusterError

    # workers pause as soon as they use 5% of their limit: at once, before any task runs
    with dask.config.set({"distributed.worker.memory.pause": 0.05}), \
            config.set(paused_timeout=3), \
            LocalCluster(n_workers=2, threads_per_worker=1, memory_limit="1GB",
                         dashboard_address=":0") as cluster, Client(cluster):
        t = time.perf_counter()
        with pytest.raises(ClusterError, match=r"paused for 3 s .* \(1,000 MB\)"):
            compute(da.ones(10, chunks=5).sum())
        assert time.perf_counter() - t < 30


def test_prediction_tasks_follow_the_workers_memory_limit(fitted):
    from distributed import Client, LocalCluster

    from bigkern.errors import ClusterError
    from bigkern.features import with_features
    from bigkern.jobs.predict import _fit_task_to_memory, predict_scenes
    from bigkern.models import load_model

    store, model_path = fitted
    model = load_model(model_path)
    scenes = with_features(open_scenes(store), list(model.feature_names_in_))
    arrays = [scenes[f].data for f in model.feature_names_in_]
    chunks = arrays[0].chunks
    n_basis = model.expansion_.n_basis
    roomy = _fit_task_to_memory(arrays, chunks, n_basis, 10**10, 10**6)
    tight = _fit_task_to_memory(arrays, chunks, n_basis, 2 * 4096 * n_basis * 8 + 10**5, 10**6)
    assert roomy == 10**6 and 64 <= tight < 10**4
    # a cluster whose workers cannot hold one kernel block is refused before any work
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, memory_limit="20MB",
                      dashboard_address=":0") as cluster, Client(cluster), \
            pytest.raises(ClusterError, match=r"over the 12 MB a task may use"):
        predict_scenes(model, scenes)


def test_overwrite_refuses_a_symbolic_link_and_leaves_both_ends(tmp_path):
    real, link = tmp_path / "real.zarr", tmp_path / "link.zarr"
    write_scenes(make_scenes(1, (8, 8), seed=0), real)
    link.symlink_to(real.name)
    before = _snapshot(real)
    with pytest.raises(StoreError, match="symbolic link"):
        write_scenes(make_scenes(1, (8, 8), seed=1), link, overwrite=True)
    assert link.is_symlink() and _snapshot(real) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.zarr", "real.zarr"]
