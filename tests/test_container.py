"""The container image, built and run for real (issue 22): as Kubernetes would run it.

``deploy/Dockerfile`` is built with podman from a Debian bookworm base made here
by debootstrap (no registry can be reached), with the host's CA bundle as the
build's ``ca`` secret, as a site behind a TLS-intercepting proxy would give it.
Then the image runs exactly what ``deploy/kubernetes/daskjob.yaml`` describes:
the scheduler's and the workers' commands, environment, user and data volume
taken from the manifest, as containers on the host network, and the job's
``bigkern predict`` against them on a store in the data volume. Its masks must
equal a local run's. The image's ``bigkern --version``, its non-root user and
its warmed numba cache (no compilation in the workers) are checked too.

The image is built once per test run (a session fixture, ~2 minutes; the
debootstrap tree is kept in ``BIGKERN_CONTAINER_CACHE``, by default
``/var/cache/bigkern-ci``). Without root, podman, runc or debootstrap, or
without the Debian mirror, the tests skip and say which is missing; ``.ci/run``
installs them. Separately, and without podman, the pins of
``deploy/constraints.txt`` must resolve on the Python of the Dockerfile's
default base image.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
DEPLOY = REPO / "deploy"
BASE_TAG = "localhost/bigkern-test-base:bookworm"
IMAGE_TAG = "localhost/bigkern:test"
CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
CACHE = Path(os.environ.get("BIGKERN_CONTAINER_CACHE", "/var/cache/bigkern-ci"))

Podman = Callable[..., subprocess.CompletedProcess]


def _missing() -> str | None:
    """Why the image cannot be built here, or None."""
    if os.geteuid() != 0:
        return "building the image needs root (podman with runc, debootstrap)"
    absent = [tool for tool in ("podman", "runc", "debootstrap") if shutil.which(tool) is None]
    if absent:
        return (f"{', '.join(absent)} not installed (apt-get install podman runc debootstrap; "
                f".ci/run does)")
    if _debian_mirror() is None:
        return "no Debian mirror in /etc/apt/sources.list(.d) for debootstrap"
    return None


def _debian_mirror() -> str | None:
    """The Debian archive apt uses here (debootstrap takes the same)."""
    texts = [p.read_text() for p in Path("/etc/apt").glob("sources.list.d/*.sources")]
    for text in texts:
        for uri in re.findall(r"^URIs:\s*(\S+)", text, re.M):
            if uri.rstrip("/").endswith("/debian"):
                return uri
    listing = Path("/etc/apt/sources.list")
    if listing.exists():
        for url in re.findall(r"^deb\s+(?:\[[^]]*\]\s+)?(\S+/debian)/?\s", listing.read_text(),
                              re.M):
            return url
    return None


@pytest.fixture(scope="session")
def podman(tmp_path_factory) -> Podman:
    """``podman(*args)``: podman as root with runc and no default ulimits, or skip."""
    why = _missing()
    if why:
        pytest.skip(why)
    conf = tmp_path_factory.mktemp("podman") / "containers.conf"
    conf.write_text("[containers]\ndefault_ulimits = []\n")
    env = {**os.environ, "CONTAINERS_CONF": str(conf)}

    def run(*args: str, check: bool = True, timeout: float = 600,
            **kwargs: Any) -> subprocess.CompletedProcess:
        done = subprocess.run(["podman", "--runtime", "runc", *map(str, args)], env=env,
                              capture_output=True, text=True, timeout=timeout, **kwargs)
        if check and done.returncode != 0:
            raise AssertionError(f"podman {' '.join(map(str, args[:3]))} … failed "
                                 f"({done.returncode}):\n{done.stdout[-3000:]}"
                                 f"\n{done.stderr[-3000:]}")
        return done

    return run


def _base_image(podman: Podman) -> str:
    """A bookworm image with python3 and python3-venv, from debootstrap (kept in CACHE)."""
    if podman("image", "exists", BASE_TAG, check=False).returncode == 0:
        return BASE_TAG
    rootfs = CACHE / "bookworm-minbase"
    if not (rootfs / "usr" / "bin" / "python3").exists():
        partial = CACHE / "bookworm-minbase.partial"
        shutil.rmtree(partial, ignore_errors=True)
        CACHE.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(["debootstrap", "--variant=minbase",
                               "--include=python3,python3-venv", "bookworm", str(partial),
                               _debian_mirror()], capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            pytest.skip(f"debootstrap of bookworm failed: {done.stderr.strip()[-500:]}")
        shutil.rmtree(rootfs, ignore_errors=True)
        partial.rename(rootfs)
    tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
    podman("import", "-", BASE_TAG, stdin=tar.stdout)
    tar.wait()
    return BASE_TAG


@pytest.fixture(scope="session")
def image(podman: Podman) -> str:
    """The image of deploy/Dockerfile, built once per run on the debootstrap base."""
    base = _base_image(podman)
    t = time.perf_counter()
    podman("build", "--network", "host", "--secret", f"id=ca,src={CA_BUNDLE}",
           "--build-arg", f"BASE_IMAGE={base}", "-f", DEPLOY / "Dockerfile",
           "--ignorefile", DEPLOY / "Dockerfile.dockerignore", "-t", IMAGE_TAG, REPO,
           timeout=1500)
    print(f"image built in {time.perf_counter() - t:.0f} s", file=sys.stderr)
    return IMAGE_TAG


# -- the constraints -------------------------------------------------------------------------
def _default_base_python() -> str:
    """``3.11`` from the Dockerfile's ``ARG BASE_IMAGE=python:3.11.7-…`` default."""
    text = (DEPLOY / "Dockerfile").read_text()
    match = re.search(r"^ARG\s+BASE_IMAGE=python:(\d+\.\d+)", text, re.M)
    assert match, "the Dockerfile's BASE_IMAGE default is no longer a python:X.Y image"
    return match.group(1)


@pytest.mark.timeout(600)
def test_constraints_resolve_on_the_image_python(tmp_path):
    """What the image installs resolves, with the pins, on its Python (wheels only)."""
    from importlib.metadata import requires

    wanted = ["jupyterlab", "bokeh"]
    for item in requires("bigkern") or []:  # bigkern's own requirements, and its extras'
        name, _, marker = item.partition(";")
        extra = re.search(r"extra\s*==\s*['\"]([\w-]+)['\"]", marker)
        if not marker.strip() or (extra and extra.group(1) in ("hpc", "kubernetes")):
            wanted.append(name.strip())
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed",
         "--quiet", "--python-version", _default_base_python(), "--only-binary=:all:",
         "--target", str(tmp_path / "target"), "--constraint",
         str(DEPLOY / "constraints.txt"), *wanted],
        capture_output=True, text=True, timeout=580)
    if done.returncode and re.search(r"NewConnectionError|Max retries exceeded|"
                                     r"Temporary failure in name resolution", done.stderr):
        pytest.skip(f"the package index cannot be reached: {done.stderr.strip()[-300:]}")
    assert done.returncode == 0, done.stderr[-3000:]


# -- the image -------------------------------------------------------------------------------
@pytest.mark.container
@pytest.mark.timeout(1800)
def test_image_version_user_and_no_secret(image, podman):
    from bigkern.version import __version__

    run = ("run", "--rm", "--network", "host", image)
    assert podman(*run, "bigkern", "--version").stdout.strip() == f"bigkern {__version__}"
    assert podman(*run, "id", "-u").stdout.strip() != "0"
    # the CA bundle was the build's secret: it is not in the image
    assert podman(*run, "test", "-e", "/run/secrets/ca", check=False).returncode != 0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _expand(words: list[str], env: dict[str, str]) -> list[str]:
    """Kubernetes' ``$(VAR)`` expansion of a container's command and args."""
    return [re.sub(r"\$\((\w+)\)", lambda m: env.get(m.group(1), m.group(0)), w) for w in words]


def _container(spec: dict[str, Any]) -> dict[str, Any]:
    (only,) = spec["containers"]
    return only


def _run_args(pod: dict[str, Any], container: dict[str, Any], data: Path,
              env: dict[str, str]) -> list[str]:
    """``podman run`` options for a pod's container: user, volume, environment."""
    user = pod.get("securityContext", {}).get("runAsUser")
    args = ["--network", "host"] + (["--user", str(user)] if user is not None else [])
    for mount in container.get("volumeMounts", []):
        args += ["-v", f"{data}:{mount['mountPath']}"]
    for item in container.get("env", []):
        env = {item["name"]: str(item["value"]), **env}
    for name, value in env.items():
        args += ["--env", f"{name}={value}"]
    return args


def _wait_healthy(port: int, seconds: float = 60) -> None:
    """The scheduler's readiness probe: its dashboard's /health answers 200."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise AssertionError(f"the scheduler's dashboard did not answer /health in {seconds} s")


@pytest.fixture
def data_volume(tmp_path) -> Path:
    """The data volume: a small scene store and a model fitted on it, as the job expects."""
    from bigkern.datasets import make_scenes
    from bigkern.io import write_scenes
    from bigkern.models import save_model
    from bigkern.workflow import fit_scenes

    data = tmp_path / "data"
    data.mkdir()
    ds = make_scenes(2, (96, 128), seed=6, radiances=False).compute()
    write_scenes(ds, data / "scenes.zarr")
    save_model(fit_scenes(ds, grid={}, params={"omega": 0.8, "C": 1.0}).model,
               data / "model.zarr")
    for path in [data, *data.rglob("*")]:
        os.chown(path, 1000, 1000)  # the pods' runAsUser
    return data


@pytest.mark.container
@pytest.mark.timeout(1800)
def test_kubernetes_job_runs_as_the_manifests_say(image, podman, data_volume, tmp_path):
    job_doc = yaml.safe_load((DEPLOY / "kubernetes" / "daskjob.yaml").read_text())
    cluster_doc = yaml.safe_load((DEPLOY / "kubernetes" / "daskcluster.yaml").read_text())
    cluster = job_doc["spec"]["cluster"]["spec"]
    # the DaskCluster runs the same scheduler and workers as the job's cluster
    assert cluster_doc["spec"]["worker"]["spec"] == cluster["worker"]["spec"]
    assert cluster_doc["spec"]["scheduler"]["spec"] == cluster["scheduler"]["spec"]

    port, dashboard = _free_port(), _free_port()
    address = f"tcp://127.0.0.1:{port}"
    tag = f"bigkern-test-{os.getpid()}"
    names: list[str] = []
    try:
        # the scheduler: its pod has a port of its own; on the host network we give it free
        # ones (the manifest's 8786/8787 may be taken here)
        sched_pod = cluster["scheduler"]["spec"]
        sched = _container(sched_pod)
        command = [*sched["command"], *sched.get("args", []),
                   "--port", str(port), "--dashboard-address", f":{dashboard}"]
        names.append(f"{tag}-scheduler")
        podman("run", "-d", "--name", names[-1],
               *_run_args(sched_pod, sched, data_volume, {}), image, *command)
        _wait_healthy(dashboard)
        # the workers, with what the operator sets (and numba's cache log, to read below)
        worker_pod = cluster["worker"]["spec"]
        worker = _container(worker_pod)
        for i in range(cluster["worker"]["replicas"]):
            env = {"DASK_SCHEDULER_ADDRESS": address, "DASK_WORKER_NAME": f"worker-{i}",
                   "NUMBA_DEBUG_CACHE": "1"}
            names.append(f"{tag}-worker-{i}")
            podman("run", "-d", "--name", names[-1],
                   *_run_args(worker_pod, worker, data_volume, env), image,
                   *_expand([*worker["command"], *worker.get("args", [])], env))
        # the job's command, as the operator runs it (DASK_SCHEDULER_ADDRESS set)
        job_pod = job_doc["spec"]["job"]["spec"]
        job = _container(job_pod)
        env = {"DASK_SCHEDULER_ADDRESS": address}
        done = podman("run", "--rm", "--name", f"{tag}-job",
                      *_run_args(job_pod, job, data_volume, env), image,
                      *_expand([*job["command"], *job.get("args", [])], env), timeout=600)
        assert "predicted" in done.stdout, done.stdout + done.stderr
        # warmed numba caches: what each worker's dispatchers of bigkern loaded and compiled
        stats = podman("run", "--rm", "--network", "host", image, "python", "-c",
                       _NUMBA_STATS.format(address=address)).stdout
    finally:
        for name in names:
            podman("rm", "-f", name, check=False)

    # the masks equal a local run of the same prediction
    local = tmp_path / "local"
    local.mkdir()
    here = subprocess.run([sys.executable, "-m", "bigkern", "predict",
                           str(data_volume / "scenes.zarr"), str(data_volume / "model.zarr"),
                           "-o", str(local / "masks.zarr"), "--workers", "2"],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert here.returncode == 0, here.stderr
    from bigkern.io.zarr_store import open_zarr

    theirs, ours = open_zarr(data_volume / "masks.zarr"), open_zarr(local / "masks.zarr")
    d_theirs, d_ours = theirs["decision"].values, ours["decision"].values
    # the same machine and versions: bit for bit (see the README's determinism guarantees)
    np.testing.assert_array_equal(np.isnan(d_theirs), np.isnan(d_ours))
    np.testing.assert_array_equal(d_theirs, d_ours)
    np.testing.assert_array_equal(theirs["cloud_mask"].values, ours["cloud_mask"].values)
    assert (theirs["cloud_mask"].values != 0).mean() > 0.9

    # warmed numba caches: the workers' tasks loaded compiled functions and compiled none
    per_worker = yaml.safe_load(stats.strip().splitlines()[-1])
    assert len(per_worker) == cluster["worker"]["replicas"], stats
    loaded = {name for counts in per_worker.values() for name, c in counts.items() if c[0]}
    compiled = {name for counts in per_worker.values() for name, c in counts.items() if c[1]}
    assert "bigkern.kernels.fused._fused_rows" in loaded, per_worker
    assert not compiled, per_worker


#: Run in a container after the job: per worker, each bigkern numba function's cache hits
#: and misses (a miss is a compilation), printed as one JSON line.
_NUMBA_STATS = """
import json
from distributed import Client

def stats():
    import sys
    from numba.core.registry import CPUDispatcher
    out = {{}}
    for name, module in list(sys.modules.items()):
        if not name.startswith("bigkern"):
            continue
        for attr, obj in list(vars(module).items()):
            if isinstance(obj, CPUDispatcher):
                hits = sum(obj.stats.cache_hits.values())
                misses = sum(obj.stats.cache_misses.values())
                if hits or misses:
                    out[name + "." + attr] = [hits, misses]
    return out

with Client("{address}", timeout=30) as client:
    print(json.dumps(client.run(stats)))
"""

