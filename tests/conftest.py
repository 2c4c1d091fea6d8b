"""Shared fixtures: a real distributed LocalCluster, small scene stores, real data paths,
benchmark scripts."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", max_examples=25, deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
settings.register_profile(
    "thorough", max_examples=300, deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# Worker processes of the suite's clusters (LocalClusters here and in the commands the tests
# run, which inherit the variable) start from a fork server that has imported distributed
# once, instead of each importing Python's scientific stack anew (distributed's default,
# spawn): a cluster's start costs a fork instead of seconds of CPU.
# tests/cli/test_command_faults.py alone: 134 s of CPU with spawn, 48 s with forkserver. A
# worker still runs in a process of its own that imports bigkern when a task needs it;
# `BIGKERN_TEST_SPAWN=1` keeps spawn.
if os.environ.get("BIGKERN_TEST_SPAWN") != "1":
    os.environ.setdefault("DASK_DISTRIBUTED__WORKER__MULTIPROCESSING_METHOD", "forkserver")
    import dask

    dask.config.set({"distributed.worker.multiprocessing-method":
                     os.environ["DASK_DISTRIBUTED__WORKER__MULTIPROCESSING_METHOD"]})


def pytest_xdist_auto_num_workers(config):
    """Test processes for ``-n auto``: one per core, two at least, four at most.

    Most tests wait (on clusters starting, subprocesses, servers) more than they
    compute, so two processes pay even on one core; past four, each starting its
    own clusters, a machine's memory and file handles matter more than its cores.
    A third process on two cores was measured twice and lost both times: 17 min 56 s
    of pytest against 18 min 18 s with two (2026-11), and 1,082 s against 919 s in
    clean-clone CI runs of 2026-11-29 (the signal tests that failed in the first trial
    failed for another cause: a suite started as a background job ignores Ctrl-C; see
    tests/cli/test_params_interrupts_figures.py).
    """
    return max(2, min(4, os.cpu_count() or 1))


def pytest_collection_modifyitems(session, config, items):
    """Deal the slow files out first, then the others; in each group, most tests first.

    With ``--dist loadfile`` each file is one unit of work, dealt out in the order of the
    collection. A file that takes minutes (an image build, races of real processes, servers;
    ``pytest --durations=0`` shows the times) says so at module level with
    ``pytestmark = pytest.mark.slow_file(seconds=...)``, its measured duration: those go
    first, longest first, so that no process is left alone with one of them at the end
    while the others idle.

    The sort is stable: tests keep their order within a file. ``pyproject.toml`` passes
    ``--no-loadscope-reorder`` so that pytest-xdist keeps this order.
    """
    count: dict[Path, int] = {}
    seconds: dict[Path, float] = {}
    for item in items:
        count[item.path] = count.get(item.path, 0) + 1
        module = item.getparent(pytest.Module)
        marker = None if module is None else module.get_closest_marker("slow_file")
        if marker is not None:
            seconds[item.path] = float(marker.kwargs.get("seconds", 60))
    items.sort(key=lambda item: (item.path not in seconds, -seconds.get(item.path, 0.0),
                                 -count[item.path], str(item.path)))


@pytest.fixture(scope="session")
def client():
    """A real two-worker LocalCluster (processes) shared by the session.

    It is the default client only inside the tests that ask for it
    (:func:`_client_is_current_where_asked`): once made, a session client that
    were everyone's default would run every later test's computations on the
    cluster, so a test would behave differently by the tests that ran before it
    in its process (with pytest-xdist, by how the files were dealt out).
    """
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as cluster, \
            Client(cluster, set_as_default=False) as c:
        yield c


@pytest.fixture(autouse=True)
def _client_is_current_where_asked(request):
    """Make the session's ``client`` the default client for a test that asks for it."""
    if "client" not in request.fixturenames:
        yield
        return
    with request.getfixturevalue("client").as_current():
        yield


@pytest.fixture(scope="session")
def scene_store(tmp_path_factory):
    """Three small synthetic scenes written to zarr, chunked two scenes per chunk."""
    from bigkern.datasets import make_scenes
    from bigkern.scenes import write_scenes

    path = tmp_path_factory.mktemp("stores") / "scenes.zarr"
    write_scenes(make_scenes(3, (96, 128), seed=3), path, chunks={"scene": 2, "y": 96, "x": 128})
    return path


@pytest.fixture(scope="session")
def misr_dir() -> Path:
    """The real MISR scenes of ../shared/data/misr, or skip."""
    from bigkern.datasets import shared_data_dir

    root = shared_data_dir()
    if root is None or not (root / "misr" / "image1.txt").exists():
        pytest.skip("../shared/data/misr is not present: real-data tests need it")
    return root / "misr"


BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def _import_benchmark(name: str):
    """Import ``benchmarks/<name>.py`` by path, once (``benchmarks`` is not a package)."""
    path = BENCHMARKS / f"{name}.py"
    if not path.is_file():
        pytest.skip(f"benchmarks/{name}.py is not next to tests/")
    module_name = f"_bigkern_benchmark_{name}"
    if module_name not in sys.modules:
        spec = importlib.util.spec_from_file_location(module_name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module  # dataclasses need the module registered
        spec.loader.exec_module(module)
    return sys.modules[module_name]


@pytest.fixture(scope="session")
def benchmark_script():
    """``benchmark_script("misr_tables")``: that benchmark's module (skips when it is absent)."""
    return _import_benchmark
