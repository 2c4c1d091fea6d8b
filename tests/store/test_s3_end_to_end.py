"""A real S3-compatible endpoint on localhost: ingest → fit → predict → save/load by s3:// URL.

The endpoint is moto's server mode (``ThreadedMotoServer``, real HTTP on
127.0.0.1), the client s3fs — the same code path as AWS or any S3-compatible
store. Results must equal the same run on local paths. Computations run on the
session's distributed LocalCluster (worker processes that were started
without any S3 configuration: the storage options travel with the tasks) and,
for the CLI, in a subprocess configured only through environment variables.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys

import numpy as np
import pytest
import xarray as xr

moto_server = pytest.importorskip("moto.server", reason="moto[server] is not installed "
                                  "(pip install '.[test]')")
s3fs = pytest.importorskip("s3fs", reason="s3fs is not installed (pip install '.[s3]')")

import bigkern  # noqa: E402
from bigkern.datasets import ingest_misr_text  # noqa: E402
from bigkern.datasets.misr_text import MISR_TEXT_COLUMNS  # noqa: E402
from bigkern.errors import StoreError  # noqa: E402
from bigkern.jobs.fit import fit_scenes  # noqa: E402
from bigkern.scenes import open_scenes  # noqa: E402
from bigkern.store.integrity import open_checked  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.slow_file(seconds=80)]

BUCKET = "bigkern-test"
FEATURES = ["NDAI", "logSD", "CORR"]
PARAMS = {"omega": 0.9, "lam": 0.05}
KEY = SECRET = "testing"


@pytest.fixture(scope="module")
def s3():
    """moto's S3 server on a free port of 127.0.0.1 with one bucket; yields storage options."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    options = {"endpoint_url": f"http://{host}:{port}", "key": KEY, "secret": SECRET}
    fs = s3fs.S3FileSystem(skip_instance_cache=True, **options)
    # moto keeps its buckets per process, not per server: a module that imported this
    # fixture may have left the bucket behind, so start from an empty one and leave none
    if fs.exists(BUCKET):
        fs.rm(BUCKET, recursive=True)
    fs.mkdir(BUCKET)
    try:
        yield options
    finally:
        fs.rm(BUCKET, recursive=True)
        server.stop()


def _misr_files(root, n: int = 2) -> list:
    """MISR expert-label text files with labels that depend on the features (learnable)."""
    paths = []
    for s in range(n):
        rng = np.random.default_rng(10 + s)
        lines = []
        for y in range(24):
            for x in range(32):
                cloud = rng.random() < 0.5
                ndai = rng.normal(1.5 if cloud else -0.5, 0.6)
                sd = abs(rng.normal(8.0 if cloud else 2.0, 1.5)) + 0.1
                corr = rng.normal(0.2 if cloud else 0.7, 0.1)
                rad = rng.uniform(50, 300, size=5)
                label = 0 if rng.random() < 0.3 else (1 if cloud else -1)
                values = [ndai, sd, corr, *rad]
                lines.append(f"{y} {x} {label} " + " ".join(f"{v:.5f}" for v in values))
        path = root / f"image{s + 1}.txt"
        path.write_text("\n".join(lines) + "\n")
        paths.append(path)
    assert len(MISR_TEXT_COLUMNS) == 3 + len(values)
    return paths


def _pipeline(files, store, model_path, pred, *, storage_options=None):
    """ingest → open → fit → save → load → predict → write; returns (model, predictions)."""
    ingest_misr_text(files, store, chunks={"scene": 1, "y": 12, "x": 32},
                     storage_options=storage_options)
    scenes = bigkern.with_features(open_scenes(store, storage_options=storage_options),
                                   FEATURES)
    fitted = fit_scenes(scenes, model="ridge", features=FEATURES, search=False, params=PARAMS).model
    bigkern.save_model(fitted, model_path, inputs=[store], storage_options=storage_options)
    model = bigkern.load_model(model_path, storage_options=storage_options)
    report = bigkern.write_predictions(bigkern.predict_scenes(model, scenes), pred,
                                       inputs=[store, model_path])
    assert report.n_computed == report.n_regions == 4
    return model, open_checked(pred, storage_options=storage_options).load()


@pytest.fixture(scope="module")
def local_run(tmp_path_factory):
    """The pipeline on local stores, once for the module: (model, predictions)."""
    root = tmp_path_factory.mktemp("local")
    return _pipeline(_misr_files(root), root / "misr.zarr", root / "model.zarr",
                     root / "pred.zarr")


def test_s3_round_trip_equals_local_run(s3, client, tmp_path, monkeypatch, local_run):
    import fsspec.config

    # write_predictions has no storage_options keyword: it takes fsspec's configuration
    monkeypatch.setitem(fsspec.config.conf, "s3", dict(s3))
    files = _misr_files(tmp_path)
    url = f"s3://{BUCKET}/round-trip"
    remote_model, remote = _pipeline(files, f"{url}/misr.zarr", f"{url}/model.zarr",
                                     f"{url}/pred.zarr", storage_options=s3)
    local_model, local = local_run
    np.testing.assert_array_equal(remote_model.expansion_.coef, local_model.expansion_.coef)
    xr.testing.assert_identical(remote.drop_attrs(), local.drop_attrs())
    assert remote.attrs["bigkern_status"] == "complete"

    fs = s3fs.S3FileSystem(skip_instance_cache=True, **s3)
    names = sorted(p.rsplit("/", 1)[1] for p in fs.ls(f"{BUCKET}/round-trip"))
    assert names == ["misr.zarr", "model.zarr", "pred.zarr"]  # no staging leftovers
    assert fs.isfile(f"{BUCKET}/round-trip/misr.zarr/NDAI/c/0/0/0")

    # a netCDF model is one object; replacing needs overwrite; a damaged chunk is named
    bigkern.save_model(remote_model, f"{url}/model.nc", storage_options=s3)
    np.testing.assert_array_equal(
        bigkern.load_model(f"{url}/model.nc", storage_options=s3).expansion_.coef,
        local_model.expansion_.coef)
    with pytest.raises(StoreError, match="exists; pass overwrite=True"):
        bigkern.save_model(remote_model, f"{url}/model.zarr", storage_options=s3)
    bigkern.save_model(remote_model, f"{url}/model.zarr", overwrite=True, storage_options=s3)
    key = f"{BUCKET}/round-trip/misr.zarr/CORR/c/1/1/0"
    data = bytearray(fs.cat_file(key))
    data[len(data) // 2] ^= 0x10
    fs.pipe_file(key, bytes(data))
    with pytest.raises(StoreError, match=rf"store {url}/misr.zarr: variable 'CORR', "
                                         r"chunk \(1, 1, 0\): it fails its CRC-32C"):
        open_scenes(f"{url}/misr.zarr", storage_options=s3)["CORR"].compute()


def _s3_environment(s3: dict[str, str]) -> dict[str, str]:
    """What configures S3 for a command and its workers: keys and endpoint, nothing else."""
    return {"AWS_ACCESS_KEY_ID": KEY, "AWS_SECRET_ACCESS_KEY": SECRET,
            "FSSPEC_S3_ENDPOINT_URL": s3["endpoint_url"]}


@pytest.fixture(scope="module")
def s3_scheduler(s3):
    """A running cluster whose worker has the S3 environment (as a site's workers would),
    for the commands that need not start an embedded one: its address."""
    from distributed import LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                      dashboard_address=":0", env=_s3_environment(s3)) as cluster:
        yield cluster.scheduler_address


def test_cli_on_s3_configured_by_environment(s3, s3_scheduler, tmp_path, local_run):
    files = _misr_files(tmp_path)
    url = f"s3://{BUCKET}/cli"
    env = {**os.environ, **_s3_environment(s3)}
    env.pop("DASK_SCHEDULER_ADDRESS", None)

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "bigkern", *args], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=300, check=False)

    # The prediction runs on the command's embedded cluster, whose worker inherits the
    # command's environment (a user's default); the fit and the rerun on a running cluster
    # whose worker was started with the same environment: a warm worker, where an embedded
    # cluster's new one imports the zarr and S3 stack first (5-15 s a command under load)
    steps = [
        ("ingest", "misr-text", *map(str, files), "-o", f"{url}/misr.zarr"),
        ("fit", f"{url}/misr.zarr", "-o", f"{url}/model.zarr", "--model", "ridge",
         "--no-search", "--param", "omega=0.9", "--param", "lam=0.05",
         "--scheduler", s3_scheduler),
        ("predict", f"{url}/misr.zarr", f"{url}/model.zarr", "-o", f"{url}/pred.zarr",
         "--workers", "1"),
    ]
    for step in steps:
        done = run(*step)
        assert done.returncode == 0, f"bigkern {step[0]} failed:\n{done.stdout}\n{done.stderr}"
    assert f"masks written to {url}/pred.zarr" in done.stdout
    again = run(*steps[-1][:-2], "--scheduler", s3_scheduler)
    assert again.returncode == 0 and "already written and verified" in again.stdout

    _, local = local_run
    remote = open_checked(f"{url}/pred.zarr", storage_options=s3).load()
    xr.testing.assert_identical(remote.drop_attrs(), local.drop_attrs())
    refused = run("predict", f"{url}/misr.zarr", f"{url}/model.zarr", "-o", f"{url}/misr.zarr")
    assert refused.returncode == 1 and "is the input" in refused.stderr
    assert not list(tmp_path.glob("s3*")), "an s3:// URL was turned into a local path"
