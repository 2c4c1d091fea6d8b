"""One writer per output on a real S3-compatible endpoint (moto's server on localhost).

S3 has no exclusive file creation; the claim is a conditional put
(``If-None-Match: *``), which the server refuses when the lease object exists.
"""

from __future__ import annotations

import json
import logging
import time

import numpy as np
import pytest

moto_server = pytest.importorskip("moto.server", reason="moto[server] is not installed "
                                  "(pip install '.[test]')")
s3fs = pytest.importorskip("s3fs", reason="s3fs is not installed (pip install '.[s3]')")

from bigkern.datasets import make_scenes  # noqa: E402
from bigkern.errors import StoreError  # noqa: E402
from bigkern.scenes import open_scenes, write_scenes  # noqa: E402
from bigkern.store.claims import claim_output  # noqa: E402
from bigkern.store.outputs import PARTIAL_TAG  # noqa: E402
from bigkern.store.staging import finish_interrupted_publish  # noqa: E402

BUCKET = "bigkern-claims"


@pytest.fixture(scope="module")
def s3():
    """moto's S3 server on a free port of 127.0.0.1 with one bucket; yields (options, fs)."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    options = {"endpoint_url": f"http://{host}:{port}", "key": "testing", "secret": "testing"}
    fs = s3fs.S3FileSystem(skip_instance_cache=True, **options)
    # moto keeps its buckets per process, not per server: a module that imported this
    # fixture may have left the bucket behind, so start from an empty one and leave none
    if fs.exists(BUCKET):
        fs.rm(BUCKET, recursive=True)
    fs.mkdir(BUCKET)
    try:
        yield options, fs
    finally:
        fs.rm(BUCKET, recursive=True)
        server.stop()


def test_a_second_claim_on_an_s3_output_is_refused(s3):
    options, fs = s3
    url = f"s3://{BUCKET}/a/R.zarr"
    with claim_output(url, options) as first:
        record = json.loads(fs.cat_file(f"{BUCKET}/a/.R.zarr.bigkern-lock"))
        assert record["token"] == first.token
        with pytest.raises(StoreError, match="is being written by another command"), \
                claim_output(url, options):
            pass
        first.check()  # the refused claim took nothing away
    assert not fs.exists(f"{BUCKET}/a/.R.zarr.bigkern-lock")


def test_an_expired_s3_claim_is_taken_over(s3):
    import dask.config

    options, fs = s3
    url = f"s3://{BUCKET}/b/R.zarr"
    fs.pipe_file(f"{BUCKET}/b/.R.zarr.bigkern-lock", json.dumps(
        {"token": "old", "host": "gone", "pid": 1, "started": time.time()}).encode())
    with pytest.raises(StoreError, match="host gone"), claim_output(url, options):
        pass
    time.sleep(2.5)
    with dask.config.set({"bigkern.claim_lease": 1}), claim_output(url, options) as claim:
        claim.check()  # by the server's clock, the lease was last renewed > 1 s ago


def test_a_writer_removes_hidden_partials_a_killed_run_left_on_s3(s3):
    options, fs = s3
    url = f"s3://{BUCKET}/c/s.zarr"
    dead = f"s3://{BUCKET}/c/.s.zarr{PARTIAL_TAG}0123456789ab"
    write_scenes(make_scenes(1, (8, 8), seed=0), dead, storage_options=options)
    fs.pipe_file(f"{BUCKET}/c/.s.zarr{PARTIAL_TAG}x/notes.txt", b"not bigkern's")
    write_scenes(make_scenes(1, (8, 8), seed=1), url, storage_options=options)
    fs.invalidate_cache()
    names = sorted(p.rsplit("/", 1)[1] for p in fs.ls(f"{BUCKET}/c", detail=False))
    assert names == [f".s.zarr{PARTIAL_TAG}x", "s.zarr"], names
    open_scenes(url, storage_options=options)


class _KilledWhilePublishing(Exception):
    """Stands in for a kill between copying a staged store's arrays and its root."""


def _kill_before_the_root_is_copied(patch: pytest.MonkeyPatch) -> None:
    """Copies on S3 fail on a staged store's root ``zarr.json``, as a kill there would."""
    original = s3fs.S3FileSystem._cp_file

    async def cp_file(self, path1, path2, **kwargs):
        folder, name = path1.rstrip("/").rsplit("/", 2)[-2:]
        if name == "zarr.json" and PARTIAL_TAG in folder:
            raise _KilledWhilePublishing(path1)
        return await original(self, path1, path2, **kwargs)

    patch.setattr(s3fs.S3FileSystem, "_cp_file", cp_file)


def _names(fs, folder):
    fs.invalidate_cache()
    return sorted(p.rsplit("/", 1)[1] for p in fs.ls(folder, detail=False))


def test_a_publish_killed_midway_on_s3_is_finished_by_the_next_writer(s3, monkeypatch):
    options, fs = s3
    url = f"s3://{BUCKET}/d/s.zarr"
    write_scenes(make_scenes(1, (8, 8), seed=0), url, storage_options=options)
    new = make_scenes(1, (8, 8), seed=1)
    with monkeypatch.context() as patch:
        _kill_before_the_root_is_copied(patch)
        with pytest.raises(_KilledWhilePublishing):
            write_scenes(new, url, overwrite=True, storage_options=options)
    staged = [n for n in _names(fs, f"{BUCKET}/d") if PARTIAL_TAG in n]
    assert len(staged) == 1, _names(fs, f"{BUCKET}/d")
    with pytest.raises(StoreError, match=f"being replaced.*waits beside it in {staged[0]}"):
        open_scenes(url, storage_options=options)
    with claim_output(url, options) as claim:
        assert finish_interrupted_publish(claim) == staged[0]
    assert _names(fs, f"{BUCKET}/d") == ["s.zarr"]
    got = open_scenes(url, storage_options=options)
    np.testing.assert_array_equal(got["NDAI"].values, new["NDAI"].values)


def test_an_overwrite_after_a_killed_publish_on_s3_loses_nothing(s3, monkeypatch):
    options, fs = s3
    url = f"s3://{BUCKET}/e/s.zarr"
    write_scenes(make_scenes(1, (8, 8), seed=0), url, storage_options=options)
    with monkeypatch.context() as patch:
        _kill_before_the_root_is_copied(patch)
        with pytest.raises(_KilledWhilePublishing):
            write_scenes(make_scenes(1, (8, 8), seed=1), url, overwrite=True,
                         storage_options=options)
    with pytest.raises(StoreError, match="exists"):
        write_scenes(make_scenes(1, (8, 8), seed=2), url, storage_options=options)
    # the refused writer still put the complete output in place, and removed nothing else
    assert _names(fs, f"{BUCKET}/e") == ["s.zarr"]
    last = make_scenes(1, (8, 8), seed=2)
    write_scenes(last, url, overwrite=True, storage_options=options)
    assert _names(fs, f"{BUCKET}/e") == ["s.zarr"]
    got = open_scenes(url, storage_options=options)
    np.testing.assert_array_equal(got["NDAI"].values, last["NDAI"].values)
