"""bigkern.connect in every form, its worker plugin, and the CLI's connection flags.

Real schedulers and worker processes throughout: a LocalCluster of this module,
clusters built by connect itself, and fresh Python processes for the forms that
depend on the process having no client yet (``client = connect()``) or on the
environment (``DASK_SCHEDULER_ADDRESS``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from distributed import Client, LocalCluster, default_client

import bigkern
from bigkern.cli.main import main
from bigkern.cluster.client import connect
from bigkern.errors import ClusterError

pytestmark = pytest.mark.timeout(180)

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cluster():
    """A running two-worker cluster that connect must use and never close."""
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as lc:
        yield lc


def _python(code: str, env: dict[str, str] | None = None, timeout: float = 120,
            ) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter (no client exists there yet)."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **(env or {})},
                          cwd=REPO)


def _blas_threads() -> list[int]:
    """Threads of every BLAS pool loaded in this (worker) process."""
    import numpy  # noqa: F401
    from threadpoolctl import threadpool_info

    return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]


def _slow_square(x: int) -> int:
    return x * x


def test_address_form_leaves_the_cluster_running(cluster):
    with connect(cluster.scheduler_address, quiet=True) as client:
        assert isinstance(client, Client)
        assert client.scheduler.address == cluster.scheduler_address
        assert client.submit(_slow_square, 7).result() == 49
    assert client.status == "closed"
    assert cluster.status.name == "running"
    assert len(cluster.scheduler_info["workers"]) == 2


def test_the_dashboard_link_is_printed_only_when_the_scheduler_can_serve_it(cluster, capsys):
    import importlib.util

    address = cluster.scheduler_address
    with connect(address):
        pass
    line = capsys.readouterr().err.strip().splitlines()[-1]
    if importlib.util.find_spec("bokeh") is None:  # the scheduler is in this process
        # no word of a dashboard nobody can open: every command's log would carry it
        assert line == f"bigkern: connected to {address} with 2 workers"
    else:
        assert line.startswith(f"bigkern: connected to {address} with 2 workers (dashboard "
                               f"http://")


def test_verbose_says_why_there_is_no_dashboard(cluster, capsys):
    import importlib.util

    with connect(cluster.scheduler_address, verbose=True):
        pass
    line = capsys.readouterr().err.strip().splitlines()[-1]
    if importlib.util.find_spec("bokeh") is None:
        assert line.endswith("workers (no dashboard: the scheduler lacks bokeh; pip install "
                             "'bigkern[notebook]')")
        assert "http" not in line
    else:
        assert "(dashboard http://" in line
    with connect(cluster.scheduler_address, verbose=True, quiet=True):
        pass
    assert capsys.readouterr().err == ""  # quiet: nothing at all


def test_cluster_object_is_used_and_never_closed(cluster):
    client = connect(cluster, quiet=True)  # positional, as for distributed.Client
    assert client.scheduler.address == cluster.scheduler_address
    client.close()
    with connect(cluster=cluster, quiet=True) as client:
        assert client.submit(_slow_square, 3).result() == 9
    assert cluster.status.name == "running"


def test_scheduler_file_is_waited_for(cluster, tmp_path):
    path = tmp_path / "scheduler.json"
    info = {"type": "Scheduler", "address": cluster.scheduler_address}

    def write_later() -> None:
        time.sleep(1.0)
        path.write_text(json.dumps(info))

    writer = threading.Thread(target=write_later)
    writer.start()
    try:
        with connect(scheduler_file=path, n_workers=2, quiet=True) as client:
            assert client.scheduler.address == cluster.scheduler_address
            assert len(client.scheduler_info()["workers"]) == 2
    finally:
        writer.join()
    assert cluster.status.name == "running"


def test_missing_scheduler_file_is_one_line(tmp_path):
    with pytest.raises(ClusterError, match="did not appear in 1 s") as info:
        connect(scheduler_file=tmp_path / "none.json", timeout=1, quiet=True)
    assert "\n" not in str(info.value)


def test_existing_default_client_is_reused_not_replaced_nor_closed(cluster):
    with Client(cluster) as existing:
        assert default_client() is existing
        with connect(quiet=True) as client:
            assert client.scheduler.address == existing.scheduler.address
            assert client.cluster is None  # no cluster was started
            assert default_client() is existing  # still the default
        client2 = connect(quiet=True)
        client2.close()
        assert existing.status == "running"
        assert default_client() is existing
        assert existing.submit(_slow_square, 4).result() == 16


def test_profile_local_builds_and_closes_its_cluster():
    with connect(profile="local", n_workers=1, quiet=True) as client:
        built = client.cluster
        assert isinstance(built, LocalCluster)
        assert len(client.scheduler_info()["workers"]) == 1
        assert built.status.name == "running"
    assert built.status.name == "closed"


def test_plugin_reaches_a_worker_added_after_connect():
    """Workers that join later (adaptive scaling, jobqueue) get BLAS pinned too.

    distributed starts workers with one BLAS thread; ``blas_threads=2`` makes the
    plugin's work visible on every worker, the late one included.
    """
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as lc:
        first = Client(lc, set_as_default=False)
        before = first.run(_blas_threads)
        first.close()
        assert all(t and set(t) == {1} for t in before.values()), before
        with bigkern.config.set(blas_threads=2), connect(lc, quiet=True) as client:
            original = set(client.scheduler_info()["workers"])
            lc.scale(2)
            client.wait_for_workers(2, timeout=60)
            added = set(client.scheduler_info()["workers"]) - original
            assert len(added) == 1
            threads = client.run(_blas_threads)
            assert set(threads) == original | added
            assert all(t and set(t) == {2} for t in threads.values()), threads


def test_more_than_one_target_is_refused(cluster):
    with pytest.raises(ValueError, match="at most one"):
        connect(cluster.scheduler_address, profile="local")


def test_unknown_profile_names_the_known_ones():
    with pytest.raises(ClusterError, match=r"unknown cluster profile 'nope'.*local"):
        connect(profile="nope")


def test_unreachable_scheduler_is_a_one_line_cluster_error():
    with pytest.raises(ClusterError, match=r"cannot connect to the Dask scheduler at "
                                           r"tcp://127\.0\.0\.1:1") as info:
        connect("tcp://127.0.0.1:1", timeout=1, quiet=True)
    assert "\n" not in str(info.value)


def test_plain_and_with_forms_in_a_fresh_process():
    """``client = connect()`` and ``with connect()`` build an embedded cluster and close it."""
    done = _python("""
        import bigkern
        from distributed import Client, LocalCluster, default_client

        if __name__ == "__main__":
            client = bigkern.connect(n_workers=1, quiet=True)
            assert isinstance(client, Client) and isinstance(client.cluster, LocalCluster)
            assert default_client() is client
            built = client.cluster
            client.close()
            assert built.status.name == "closed"
            with bigkern.connect(n_workers=1, quiet=True) as client:
                built = client.cluster
                assert client.submit(sum, [1, 2]).result() == 3
            assert built.status.name == "closed"
            print("ok")
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_dask_scheduler_address_is_honoured(cluster):
    done = _python("""
        import bigkern
        with bigkern.connect() as client:
            assert client.cluster is None
            print(client.scheduler.address)
    """, env={"DASK_SCHEDULER_ADDRESS": cluster.scheduler_address})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == cluster.scheduler_address
    assert f"connected to {cluster.scheduler_address} with 2 workers" in done.stderr


# --- the command line -------------------------------------------------------------------


def test_version_flag(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.strip() == f"bigkern {bigkern.__version__}"


def test_python_dash_m_bigkern():
    done = subprocess.run([sys.executable, "-m", "bigkern", "--version"], capture_output=True,
                          text=True, timeout=60, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"bigkern {bigkern.__version__}"


def test_unreachable_scheduler_is_one_line_and_exit_1(tmp_path):
    out = tmp_path / "s.zarr"
    done = subprocess.run(
        [sys.executable, "-m", "bigkern", "synth", "-o", str(out), "--scheduler",
         "tcp://127.0.0.1:1"], capture_output=True, text=True, timeout=60, cwd=tmp_path,
        env={**os.environ, "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "1s"})
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("bigkern: error: cannot connect to the Dask scheduler at "
                               "tcp://127.0.0.1:1")
    assert not out.exists()


def test_missing_scheduler_file_exit_1(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(os.environ, "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT", "1s")
    import dask

    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        code = main(["synth", "-o", str(tmp_path / "s.zarr"), "--scheduler-file",
                     str(tmp_path / "none.json")])
    assert code == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "none.json did not appear" in err[0]


def test_cli_scheduler_file_and_profile_flags(cluster, tmp_path, capsys):
    path = tmp_path / "scheduler.json"
    path.write_text(json.dumps({"type": "Scheduler", "address": cluster.scheduler_address}))
    assert main(["synth", "-o", str(tmp_path / "a.zarr"), "--scenes", "1", "--shape", "16",
                 "16", "--scheduler-file", str(path), "--workers", "2"]) == 0
    err = capsys.readouterr().err
    assert f"connected to {cluster.scheduler_address}" in err
    assert "no dashboard" not in err  # a batch log is told of no dashboard it cannot open
    assert main(["synth", "-o", str(tmp_path / "b.zarr"), "--scenes", "1", "--shape", "16",
                 "16", "--profile", "local", "--workers", "1"]) == 0
    assert cluster.status.name == "running"


def test_cli_verbose_says_why_there_is_no_dashboard(cluster, tmp_path, capsys):
    import importlib.util

    assert main(["synth", "-o", str(tmp_path / "a.zarr"), "--scenes", "1", "--shape", "16",
                 "16", "--scheduler", cluster.scheduler_address, "--verbose"]) == 0
    line = next(line for line in capsys.readouterr().err.splitlines()
                if line.startswith("bigkern: connected to"))
    if importlib.util.find_spec("bokeh") is None:
        assert line.endswith("(no dashboard: the scheduler lacks bokeh; pip install "
                             "'bigkern[notebook]')")
    else:
        assert "(dashboard http://" in line


def test_cli_connection_flags_are_exclusive(tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        main(["synth", "-o", str(tmp_path / "s.zarr"), "--scheduler", "tcp://x:1",
              "--profile", "local"])
    assert info.value.code == 2
    assert "not allowed with" in capsys.readouterr().err
