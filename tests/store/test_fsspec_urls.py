"""Stores, models and text files by fsspec URL: memory:// end to end, nothing written locally.

fsspec's ``memory://`` filesystem lives in one process, so these tests run
bigkern's computations on local threads (``scheduler="threads"``), not on the
session's distributed workers; the S3 tests (tests/store/test_s3_end_to_end.py) cover
workers in other processes.
"""

from __future__ import annotations

import uuid

import dask
import fsspec
import numpy as np
import pytest
import xarray as xr

import bigkern
from bigkern.cli.main import main
from bigkern.datasets import ingest_misr_text, make_scenes, read_regression_csv
from bigkern.datasets.misr_text import MISR_TEXT_COLUMNS
from bigkern.errors import StoreError
from bigkern.jobs.fit import fit_scenes
from bigkern.jobs.plot import save_scene_figure
from bigkern.scenes import open_scenes, write_scenes
from bigkern.store.integrity import missing_chunks, open_checked
from bigkern.store.outputs import REGIONS_FOLDER, check_not_input, prepare_output
from bigkern.store.staging import staged_output
from bigkern.store.urls import is_url, location
from bigkern.store.zarr_store import read_root_attrs

FEATURES = ["NDAI", "logSD", "CORR"]
PARAMS = {"omega": 0.9, "lam": 0.05}


@pytest.fixture(autouse=True)
def threads():
    """memory:// is per process: compute on local threads even if a session client exists."""
    with dask.config.set(scheduler="threads"):
        yield


@pytest.fixture
def mem():
    """A fresh ``memory://`` root, removed afterwards; yields (url, filesystem, fs path)."""
    fs = fsspec.filesystem("memory")
    root = f"/bigkern-test-{uuid.uuid4().hex[:8]}"
    yield f"memory://{root}", fs, root
    if fs.exists(root):
        fs.rm(root, recursive=True)


@pytest.fixture
def cwd(tmp_path, monkeypatch):
    """Run in an empty working directory; the test asserts it stays empty."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _scenes(seed: int = 1):
    return make_scenes(2, (32, 48), seed=seed, radiances=False)


def _misr_text(seed: int) -> str:
    rng = np.random.default_rng(seed)
    lines = []
    for y in range(6):
        for x in range(8):
            label = int(rng.choice([-1, 0, 1]))
            feats = rng.uniform(0.1, 0.9, size=len(MISR_TEXT_COLUMNS) - 3)
            lines.append(f"{y} {x} {label} " + " ".join(f"{v:.5f}" for v in feats))
    return "\n".join(lines) + "\n"


def _no_partials(fs, root: str) -> None:
    # staged partials, set-aside old outputs and claims; not a store's own commit records
    leftovers = [p for p in fs.find(root, withdirs=True)
                 if ".bigkern-" in p and REGIONS_FOLDER not in p]
    assert not leftovers, leftovers


def test_every_writer_writes_to_memory_and_nothing_locally(mem, cwd):
    url, fs, root = mem
    scenes_url = f"{url}/scenes.zarr"
    assert write_scenes(_scenes(), scenes_url, chunks={"scene": 1, "y": 16, "x": 48}) \
        == scenes_url
    scenes = bigkern.with_features(open_scenes(scenes_url), FEATURES)
    fitted = fit_scenes(scenes, model="ridge", features=FEATURES, search=False, params=PARAMS).model
    for name in ("model.zarr", "model.nc"):
        assert bigkern.save_model(fitted, f"{url}/{name}") == f"{url}/{name}"
        loaded = bigkern.load_model(f"{url}/{name}")
        np.testing.assert_array_equal(loaded.expansion_.coef, fitted.expansion_.coef)
    report = bigkern.write_predictions(bigkern.predict_scenes(loaded, scenes),
                                       f"{url}/pred.zarr", inputs=[scenes_url, f"{url}/model.nc"])
    assert report.path == f"{url}/pred.zarr" and report.n_computed == report.n_regions
    pred = open_checked(f"{url}/pred.zarr")
    assert pred["cloud_mask"].shape == (2, 32, 48)
    assert save_scene_figure(scenes, pred, f"{url}/scene0.png") == f"{url}/scene0.png"
    assert fs.cat_file(f"{root}/scene0.png")[:8] == b"\x89PNG\r\n\x1a\n"

    fs.pipe_file(f"{root}/a.txt", _misr_text(0).encode())
    fs.pipe_file(f"{root}/b.txt", _misr_text(1).encode())
    ingested = ingest_misr_text([f"{url}/a.txt", f"{url}/b.txt"], f"{url}/misr.zarr")
    assert ingested == f"{url}/misr.zarr"
    misr = open_scenes(ingested)
    assert misr.sizes == {"scene": 2, "y": 6, "x": 8}
    assert list(misr["source"].values) == ["a.txt", "b.txt"]
    # its lazy ``source`` coordinate is written with the prediction's template
    bigkern.write_predictions(bigkern.predict_scenes(
        loaded, bigkern.with_features(misr, FEATURES)), f"{url}/misr-pred.zarr")
    assert list(open_checked(f"{url}/misr-pred.zarr")["source"].values) == ["a.txt", "b.txt"]

    fs.pipe_file(f"{root}/set.csv", b"a,b,target\n1,2,3\n4,5,6\n")
    data = read_regression_csv(f"{url}/set.csv")
    assert data.name == "set" and data.X.shape == (2, 2)

    names = {p.rsplit("/", 1)[1] for p in fs.ls(root, detail=False)}
    assert {"scenes.zarr", "model.zarr", "model.nc", "pred.zarr", "misr.zarr",
            "scene0.png"} <= names
    _no_partials(fs, root)
    assert list(cwd.iterdir()) == [], "a URL was turned into a local path"


def test_memory_results_equal_local_results(mem, cwd, tmp_path_factory):
    url, _, _ = mem
    local = tmp_path_factory.mktemp("local")
    chunks = {"scene": 1, "y": 16, "x": 48}
    write_scenes(_scenes(4), f"{url}/s.zarr", chunks=chunks)
    write_scenes(_scenes(4), local / "s.zarr", chunks=chunks)
    out = {}
    for where, store in (("memory", f"{url}/s.zarr"), ("local", local / "s.zarr")):
        scenes = bigkern.with_features(open_scenes(store), FEATURES)
        model = fit_scenes(scenes, model="ridge", features=FEATURES, search=False,
                           params=PARAMS).model
        target = f"{url}/p.zarr" if where == "memory" else local / "p.zarr"
        bigkern.write_predictions(bigkern.predict_scenes(model, scenes), target)
        out[where] = open_checked(target).load()
    xr.testing.assert_identical(out["memory"].drop_attrs(), out["local"].drop_attrs())
    assert list(cwd.iterdir()) == []


def test_existing_outputs_on_urls_need_overwrite_and_must_be_bigkerns(mem, cwd):
    url, fs, root = mem
    target = f"{url}/s.zarr"
    write_scenes(_scenes(1), target)
    with pytest.raises(StoreError, match="exists; pass overwrite=True"):
        write_scenes(_scenes(2), target)
    write_scenes(_scenes(2), target, overwrite=True)
    assert open_scenes(target).attrs["seed"] == 2
    _no_partials(fs, root)

    fs.pipe_file(f"{root}/s.zarr/notes.txt", b"mine")  # something bigkern did not write
    with pytest.raises(StoreError, match=r"also holds 1 entry .*notes\.txt"):
        write_scenes(_scenes(3), target, overwrite=True)
    assert fs.cat_file(f"{root}/s.zarr/notes.txt") == b"mine"

    fs.pipe_file(f"{root}/foreign/data.bin", b"x")
    with pytest.raises(StoreError, match="not written by bigkern"):
        prepare_output(f"{url}/foreign", overwrite=True)
    with pytest.raises(StoreError, match="not written by bigkern"):
        bigkern.save_model(object.__new__(_Saveable), f"{url}/foreign", overwrite=True)
    assert fs.cat_file(f"{root}/foreign/data.bin") == b"x"
    assert list(cwd.iterdir()) == []


class _Saveable:
    def to_dataset(self) -> xr.Dataset:
        return xr.Dataset({"v": ("x", np.arange(3.0))})


def test_an_output_url_is_never_an_input(mem, cwd):
    url, _, _ = mem
    with pytest.raises(StoreError, match="is the input"):
        check_not_input(f"{url}/s.zarr/", [f"{url}/s.zarr"])
    with pytest.raises(StoreError, match="contains the input"):
        check_not_input(url, [f"{url}/s.zarr"])
    with pytest.raises(StoreError, match="lies inside the input"):
        check_not_input(f"{url}/s.zarr/out.zarr", [f"{url}/s.zarr"])
    check_not_input(f"{url}/s.zarr", ["s.zarr", f"{url}/t.zarr", "s3://b/s.zarr"])
    write_scenes(_scenes(), f"{url}/s.zarr")
    with pytest.raises(StoreError, match="is the input"):
        write_scenes(open_scenes(f"{url}/s.zarr"), f"{url}/s.zarr", overwrite=True,
                     inputs=[f"{url}/s.zarr"])
    assert list(cwd.iterdir()) == []


@pytest.mark.parametrize("how", ["flip", "truncate", "delete"])
def test_damaged_chunk_on_a_url_names_store_variable_and_chunk(mem, cwd, how):
    url, fs, root = mem
    store = f"{url}/s.zarr"
    write_scenes(_scenes(), store, chunks={"scene": 1, "y": 16, "x": 48})
    key = f"{root}/s.zarr/CORR/c/1/1/0"
    data = bytearray(fs.cat_file(key))
    if how == "flip":
        data[len(data) // 2] ^= 0x10
        fs.pipe_file(key, bytes(data))
    elif how == "truncate":
        fs.pipe_file(key, bytes(data[: len(data) // 2]))
    else:
        fs.rm(key)
    expected = (rf"store {store}: variable 'CORR', chunk \(1, 1, 0\)"
                + (" is missing from storage" if how == "delete" else ": it fails"))
    with pytest.raises(StoreError, match=expected):
        open_scenes(store)["CORR"].compute()
    if how == "delete":
        assert missing_chunks(store) == {"CORR": [(1, 1, 0)]}
    assert list(cwd.iterdir()) == []


def test_unfinished_url_store_is_refused_and_staging_cleans_up(mem, cwd):
    url, fs, root = mem
    store = f"{url}/s.zarr"
    write_scenes(_scenes(1), store)
    before = {p: fs.cat_file(p) for p in fs.find(f"{root}/s.zarr")}
    with pytest.raises(RuntimeError, match="disk gone"), \
            staged_output(store, overwrite=True) as temp:
        assert is_url(temp) and ".bigkern-partial-" in temp.path
        temp.fs.pipe_file(temp.joinpath("zarr.json").path, b"{}")
        raise RuntimeError("disk gone")
    assert {p: fs.cat_file(p) for p in fs.find(f"{root}/s.zarr")} == before
    _no_partials(fs, root)

    import zarr

    zarr.open_group(location(store).zarr_store(), mode="r+").attrs["bigkern_status"] = "writing"
    with pytest.raises(StoreError, match=r"is incomplete \(bigkern_status='writing'\)"):
        open_scenes(store)
    assert read_root_attrs(store)["bigkern_kind"] == "scenes"
    write_scenes(_scenes(2), store, overwrite=True)  # an unfinished store of bigkern's: replaced
    assert open_scenes(store).attrs["seed"] == 2
    assert list(cwd.iterdir()) == []


def test_prediction_on_a_url_resumes_and_repairs(mem, cwd):
    url, fs, root = mem
    write_scenes(_scenes(), f"{url}/s.zarr", chunks={"scene": 1, "y": 16, "x": 48})
    scenes = bigkern.with_features(open_scenes(f"{url}/s.zarr"), FEATURES)
    model = fit_scenes(scenes, model="ridge", features=FEATURES, search=False, params=PARAMS).model
    target = f"{url}/p.zarr"
    first = bigkern.write_predictions(bigkern.predict_scenes(model, scenes), target)
    expected = open_checked(target).load()
    fs.rm(f"{root}/p.zarr/cloud_mask/c/1/0/0")
    chunk = f"{root}/p.zarr/decision/c/0/1/0"
    fs.pipe_file(chunk, fs.cat_file(chunk)[:-3] + b"xyz")
    again = bigkern.write_predictions(bigkern.predict_scenes(model, scenes), target)
    assert again.resumed and again.n_computed == 2 and again.n_damaged == 1
    assert again.n_reused == first.n_regions - 2
    assert again.summary == first.summary
    xr.testing.assert_identical(open_checked(target).load(), expected)
    with pytest.raises(StoreError, match="exists"):
        bigkern.write_predictions(bigkern.predict_scenes(model, scenes), target, resume=False)
    assert list(cwd.iterdir()) == []


def test_cli_ingest_to_a_memory_url(mem, cwd, capsys):
    url, fs, root = mem
    fs.pipe_file(f"{root}/a.txt", _misr_text(3).encode())
    assert main(["ingest", "misr-text", f"{url}/a.txt", "-o", f"{url}/m.zarr"]) == 0
    assert f"into {url}/m.zarr" in capsys.readouterr().out
    assert main(["ingest", "misr-text", f"{url}/a.txt", "-o", f"{url}/m.zarr"]) == 1
    assert "exists; pass overwrite=True" in capsys.readouterr().err
    assert main(["ingest", "misr-text", f"{url}/a.txt", "-o", f"{url}/a.txt/x.zarr"]) == 1
    assert "lies inside the input" in capsys.readouterr().err
    assert open_scenes(f"{url}/m.zarr").sizes["scene"] == 1
    assert list(cwd.iterdir()) == []


def test_locations(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    loc = location(f"file://{tmp_path}/x.zarr")
    assert loc.local and loc.local_path == tmp_path / "x.zarr"
    assert write_scenes(_scenes(), f"file://{tmp_path}/x.zarr") == tmp_path / "x.zarr"
    assert (tmp_path / "x.zarr" / "zarr.json").is_file()
    assert not is_url("x.zarr") and not is_url(tmp_path) and is_url("s3://b/x")
    s3 = location("s3://bucket/dir/x.zarr/", {"anon": True})
    assert (s3.path, s3.name, s3.storage_options["anon"]) == ("bucket/dir/x.zarr", "x.zarr", True)
    assert s3.with_name(".x.tmp").url == "s3://bucket/dir/.x.tmp"
    with pytest.raises(ValueError, match="chained fsspec URLs"):
        location("simplecache::s3://bucket/x.zarr")
    with pytest.raises(ValueError, match="no fsspec filesystem for 'nosuchfs'"):
        location("nosuchfs://bucket/x.zarr")
    with pytest.raises(StoreError, match="no scene store at memory://bigkern-absent"):
        open_scenes("memory://bigkern-absent/x.zarr")
    with pytest.raises(StoreError, match="no model at memory://bigkern-absent"):
        bigkern.load_model("memory://bigkern-absent/m.zarr")
    assert [p.name for p in tmp_path.iterdir()] == ["x.zarr"]
