"""The container image of ``deploy/Dockerfile``, built and run for real, as Kubernetes would.

What passing proves:

- the Dockerfile builds with podman on a plain Debian bookworm base (Debian's own
  python3 3.11 and python3-venv, made here by debootstrap since no registry image can
  be pulled), and pip inside the build gets through a TLS-intercepting proxy with the
  site's CA bundle given as the build secret ``ca`` (the host's bundle here);
- the image runs what ``deploy/kubernetes/daskjob.yaml`` describes: its scheduler's and
  workers' commands and environment (``$(DASK_WORKER_NAME)`` expanded,
  ``DASK_SCHEDULER_ADDRESS`` set as the dask-kubernetes operator sets them), the pods'
  ``runAsUser``, resource limits and ``/data`` volume, as containers on the host
  network, then the job's ``bigkern predict``, whose masks equal those of the same
  prediction run on the host;
- the image prints the repository's version, runs as the unprivileged user 1000, and
  its workers load bigkern's numba functions from the cache warmed at build time and
  compile none (no JIT pause at a worker's first task);
- separately, and without podman: the pins of ``deploy/constraints.txt`` resolve on the
  Python of the Dockerfile's default base image, so a pin that needs another Python
  fails here instead of in an image build.

The image is built once, in the background from the start of this module (the pins'
resolution, the data volume and the host's prediction run meanwhile), under a tag of its
own that is removed at the module's end (the containers at the test's); the debootstrap
tree is kept in ``BIGKERN_CONTAINER_CACHE`` (default ``/var/cache/bigkern-ci``) between
runs. Without root, podman, runc or debootstrap, or without a Debian mirror, the
container tests skip and say which is missing (``.ci/run`` installs the tools).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

pytestmark = pytest.mark.slow_file(seconds=280)

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
BASE_TAG = "localhost/bigkern-test-base:bookworm"
IMAGE_REPO = "localhost/bigkern"
CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
CACHE = Path(os.environ.get("BIGKERN_CONTAINER_CACHE", "/var/cache/bigkern-ci"))

Podman = Callable[..., subprocess.CompletedProcess]


def _pyproject() -> dict[str, Any]:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    return tomllib.loads((REPO / "pyproject.toml").read_text())


# -- the constraints -------------------------------------------------------------------------
def _default_base_python() -> str:
    """``3.11`` from the Dockerfile's ``ARG BASE_IMAGE=python:3.11.7-…`` default."""
    text = (DEPLOY / "Dockerfile").read_text()
    match = re.search(r"^ARG\s+BASE_IMAGE=(?:\S+/)?python:(\d+\.\d+)", text, re.M)
    assert match, "the Dockerfile's default BASE_IMAGE is no longer a python:X.Y image"
    return match.group(1)


def _image_requirements() -> list[str]:
    """What the Dockerfile installs: bigkern's requirements with the hpc, kubernetes, plot
    and precision extras (read from pyproject.toml, the checkout the image installs),
    jupyterlab, bokeh."""
    project = _pyproject()["project"]
    extras = project.get("optional-dependencies", {})
    return [*project["dependencies"],
            *(req for name in ("hpc", "kubernetes", "plot", "precision") for req in extras[name]),
            "jupyterlab", "bokeh"]


def _isolated_pip_env() -> dict[str, str]:
    """The environment for pip without this machine's pip configuration (config files, extra
    indexes, local wheel directories, global constraints), which the image build does not
    see either; a CA bundle, proxy or index given by the environment is kept."""
    keep = {"PIP_CERT", "PIP_CLIENT_CERT", "PIP_INDEX_URL", "PIP_PROXY", "PIP_TRUSTED_HOST",
            "PIP_DEFAULT_TIMEOUT"}
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_") or k in keep}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1")
    return env


@pytest.mark.timeout(600)
def test_constraints_resolve_on_the_image_python(tmp_path):
    """The image's install, with the pins, resolves on its Python (wheels only).

    ``--python-version`` with ``--only-binary=:all:`` makes pip pick wheels and check
    ``Requires-Python`` for the target Python; it refuses source trees, so bigkern itself
    is replaced by its requirements (environment markers are still evaluated against this
    interpreter, a 3.11 too in CI)."""
    env = _isolated_pip_env()
    probe = subprocess.run([sys.executable, "-m", "pip", "index", "versions", "pip",
                            "--timeout", "20", "--retries", "1"],
                           capture_output=True, text=True, timeout=120, env=env)
    if probe.returncode != 0:
        lines = probe.stderr.strip().splitlines() or ["(pip said nothing)"]
        why = [line for line in lines if re.search(r"connection|ssl|could not fetch", line, re.I)]
        pytest.skip("the package index cannot be reached, so the pins cannot be resolved: "
                    + (why or lines)[-1].strip()[:300])
    python = _default_base_python()
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
         "--python-version", python, "--only-binary=:all:", "--target", str(tmp_path / "t"),
         "--constraint", str(DEPLOY / "constraints.txt"), *_image_requirements()],
        capture_output=True, text=True, timeout=580, env=env)
    assert done.returncode == 0, (
        f"deploy/constraints.txt does not resolve on Python {python} (the default base "
        f"image's):\n{done.stderr[-3000:]}")


# -- podman, the base image and the image ----------------------------------------------------
def _debian_mirror() -> str | None:
    """The Debian archive apt is configured with here (debootstrap takes the same)."""
    for sources in sorted(Path("/etc/apt/sources.list.d").glob("*.sources")):
        for uri in re.findall(r"^URIs:\s*(\S+)", sources.read_text(), re.M):
            if uri.rstrip("/").endswith("/debian"):
                return uri
    for listing in [Path("/etc/apt/sources.list"),
                    *sorted(Path("/etc/apt/sources.list.d").glob("*.list"))]:
        if listing.exists():
            for url in re.findall(r"^deb\s+(?:\[[^]]*\]\s+)?(\S+/debian)/?\s", listing.read_text(),
                                  re.M):
                return url
    return None


def _missing() -> str | None:
    """Why the image cannot be built here, or None."""
    if os.geteuid() != 0:
        return "building the image needs root (podman with runc, debootstrap)"
    absent = [tool for tool in ("podman", "runc", "debootstrap") if shutil.which(tool) is None]
    if absent:
        return (f"{', '.join(absent)} not installed (apt-get install podman runc debootstrap; "
                f".ci/run does)")
    if _debian_mirror() is None:
        return "no Debian mirror in /etc/apt/sources.list(.d) for debootstrap to use"
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

    def run(*args: str | Path, check: bool = True, timeout: float = 600,
            **kwargs: Any) -> subprocess.CompletedProcess:
        done = subprocess.run(["podman", "--runtime", "runc", *map(str, args)], env=env,
                              capture_output=True, text=True, timeout=timeout, **kwargs)
        if check and done.returncode != 0:
            raise AssertionError(f"podman {' '.join(map(str, args[:3]))} … failed "
                                 f"({done.returncode}):\n{done.stdout[-3000:]}"
                                 f"\n{done.stderr[-3000:]}")
        return done

    run.env = env  # for a podman started in the background (the image's build)
    return run


def _base_image(podman: Podman) -> str:
    """A bookworm image with only Debian's python3 and python3-venv added, from debootstrap
    (the tree is kept in CACHE; the image in podman's storage)."""
    if podman("image", "exists", BASE_TAG, check=False).returncode == 0:
        return BASE_TAG
    rootfs = CACHE / "bookworm-minbase"
    if not (rootfs / "usr" / "bin" / "python3").exists():
        partial = CACHE / "bookworm-minbase.partial"
        shutil.rmtree(partial, ignore_errors=True)
        CACHE.mkdir(parents=True, exist_ok=True)
        t = time.perf_counter()
        done = subprocess.run(["debootstrap", "--variant=minbase",
                               "--include=python3,python3-venv", "bookworm", str(partial),
                               str(_debian_mirror())], capture_output=True, text=True,
                              timeout=900)
        if done.returncode != 0:
            pytest.skip(f"debootstrap of bookworm from {_debian_mirror()} failed: "
                        f"{(done.stderr or done.stdout).strip()[-500:]}")
        print(f"debootstrap: {time.perf_counter() - t:.0f} s", file=sys.stderr)
        shutil.rmtree(rootfs, ignore_errors=True)
        partial.rename(rootfs)
    tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
    podman("import", "-", BASE_TAG, stdin=tar.stdout)
    assert tar.wait() == 0
    return BASE_TAG


def _remove_stale_images(podman: Podman) -> None:
    """Images of earlier sessions whose process is gone (interrupted before cleaning up)."""
    tags = podman("images", "--format", "{{.Tag}}", "--filter", f"reference={IMAGE_REPO}",
                  check=False).stdout.split()
    for tag in tags:
        match = re.fullmatch(r"test-(\d+)", tag)
        if match and not Path(f"/proc/{match.group(1)}").exists():
            podman("rmi", "-f", f"{IMAGE_REPO}:{tag}", check=False)


@pytest.fixture(scope="module", autouse=True)
def _image_build(request, tmp_path_factory) -> Iterator[tuple | str]:
    """The build of deploy/Dockerfile's image on the debootstrap base, with the host's CA
    bundle as the build secret ``ca``, started in the background as the module begins: what
    needs no image (the pins' resolution, the data volume, the host's prediction) runs
    meanwhile. Yields ``(podman, tag, build process, log)``, or why the image cannot be
    built here; the image is removed at the end of the module."""
    if not any(item.module is sys.modules[__name__] and "image" in item.fixturenames
               for item in request.session.items):
        yield "no selected test needs the image"
        return
    why = _missing()
    if why:
        yield why
        return
    podman = request.getfixturevalue("podman")
    _remove_stale_images(podman)
    try:
        base = _base_image(podman)
    except pytest.skip.Exception as skipped:
        yield str(skipped.msg)
        return
    tag = f"{IMAGE_REPO}:test-{os.getpid()}"  # concurrent sessions do not share a tag
    log = tmp_path_factory.mktemp("image-build") / "build.log"
    # --layers=false: everything after COPY of the checkout changes with any edit, so
    # intermediate images would only pile up in the storage
    with open(log, "w") as out:
        build = subprocess.Popen(
            ["podman", "--runtime", "runc", "build", "--layers=false", "--network", "host",
             "--secret", f"id=ca,src={CA_BUNDLE}", "--build-arg", f"BASE_IMAGE={base}",
             "-f", str(DEPLOY / "Dockerfile"), "--ignorefile",
             str(DEPLOY / "Dockerfile.dockerignore"), "-t", tag, str(REPO)],
            env=podman.env, stdout=out, stderr=subprocess.STDOUT, text=True)
    try:
        yield podman, tag, build, log
    finally:
        if build.poll() is None:
            build.kill()
        build.wait()
        podman("rmi", "-f", tag, check=False)


@pytest.fixture(scope="module")
def image(_image_build) -> str:
    """The built image's tag, once its build (started with the module) has finished."""
    if isinstance(_image_build, str):
        pytest.skip(_image_build)
    _, tag, build, log = _image_build
    t = time.perf_counter()
    try:
        build.wait(timeout=1500)
    except subprocess.TimeoutExpired:
        build.kill()
        build.wait()
    print(f"the image's build was waited for {time.perf_counter() - t:.0f} s", file=sys.stderr)
    assert build.returncode == 0, (f"podman build failed ({build.returncode}):\n"
                                   f"{log.read_text()[-6000:]}")
    return tag


# -- what the image is -----------------------------------------------------------------------
def _manifest(name: str) -> dict[str, Any]:
    return yaml.safe_load((DEPLOY / "kubernetes" / name).read_text())


def _pods() -> list[dict[str, Any]]:
    """The pod specs of the DaskJob (job, scheduler, workers) and of the DaskCluster."""
    job, cluster = _manifest("daskjob.yaml")["spec"], _manifest("daskcluster.yaml")["spec"]
    return [job["job"]["spec"], *(job["cluster"]["spec"][k]["spec"] for k in ("scheduler",
            "worker")), *(cluster[k]["spec"] for k in ("scheduler", "worker"))]


# -- the DaskJob, run as its manifest says ---------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _expand(words: list[str], env: dict[str, str]) -> list[str]:
    """Kubernetes' ``$(VAR)`` expansion of a container's command and args."""
    return [re.sub(r"\$\((\w+)\)", lambda m: env.get(m.group(1), m.group(0)), w) for w in words]


def _container(pod: dict[str, Any]) -> dict[str, Any]:
    (only,) = pod["containers"]
    return only


def _memory(quantity: str) -> str:
    """A Kubernetes memory quantity (``4Gi``, ``512Mi``, ``2G``, bytes) in bytes."""
    units = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40,
             "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "": 1}
    number, unit = re.fullmatch(r"([\d.]+)([A-Za-z]*)", str(quantity)).groups()
    return f"{int(float(number) * units[unit])}b"


def _cpus(quantity: str) -> str:
    """A Kubernetes CPU quantity (``1``, ``500m``) in CPUs."""
    text = str(quantity)
    return str(int(text[:-1]) / 1000) if text.endswith("m") else text


def _run_args(pod: dict[str, Any], container: dict[str, Any], data: Path,
              env: dict[str, str]) -> list[str]:
    """``podman run`` options for a pod's container: user, limits, volume, environment (the
    manifest's, then what the operator sets)."""
    args = ["--network", "host"]
    user = pod.get("securityContext", {}).get("runAsUser")
    if user is not None:
        args += ["--user", str(user)]
    limits = container.get("resources", {}).get("limits", {})
    if "memory" in limits:
        args += ["--memory", _memory(limits["memory"])]
    if "cpu" in limits:
        args += ["--cpus", _cpus(limits["cpu"])]
    for mount in container.get("volumeMounts", []):
        args += ["-v", f"{data}:{mount['mountPath']}"]
    for name, value in {**{e["name"]: str(e["value"]) for e in container.get("env", [])},
                        **env}.items():
        args += ["--env", f"{name}={value}"]
    return args


def _wait_healthy(port: int, seconds: float = 90) -> None:
    """The scheduler's readiness probe: its dashboard's /health answers 200."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise AssertionError(f"the dashboard on port {port} did not answer /health in {seconds} s")


@pytest.fixture(scope="module")
def data_volume(tmp_path_factory) -> Path:
    """The data volume: a small scene store and a model fitted on it, written by the host's
    bigkern, owned by the pods' user (made while the image builds)."""
    from bigkern.datasets import make_scenes
    from bigkern.jobs.fit import fit_scenes
    from bigkern.models import save_model
    from bigkern.scenes import write_scenes

    data = tmp_path_factory.mktemp("volume") / "data"
    data.mkdir()
    ds = make_scenes(2, (96, 128), seed=6, radiances=False).compute()
    write_scenes(ds, data / "scenes.zarr")
    save_model(fit_scenes(ds, search=False, params={"omega": 0.8, "C": 1.0}).model,
               data / "model.zarr")
    for path in [data, *data.rglob("*")]:
        os.chown(path, 1000, 1000)  # the pods' runAsUser writes masks.zarr here
    return data


@pytest.fixture(scope="module")
def host_masks(data_volume, tmp_path_factory) -> Path:
    """The same prediction by the host's bigkern, on an embedded cluster (made while the
    image builds): its masks store."""
    local = tmp_path_factory.mktemp("local")
    here = subprocess.run([sys.executable, "-m", "bigkern", "predict",
                           str(data_volume / "scenes.zarr"), str(data_volume / "model.zarr"),
                           "-o", str(local / "masks.zarr"), "--workers", "2"],
                          capture_output=True, text=True, timeout=300, cwd=local)
    assert here.returncode == 0, here.stderr
    return local / "masks.zarr"


@pytest.mark.container
@pytest.mark.timeout(1800)
def test_kubernetes_job_runs_as_the_manifests_say(data_volume, host_masks, image, podman):
    job_doc, cluster_doc = _manifest("daskjob.yaml"), _manifest("daskcluster.yaml")
    cluster = job_doc["spec"]["cluster"]["spec"]
    # the long-lived DaskCluster runs the same scheduler and workers as the job's cluster
    assert cluster_doc["spec"]["worker"]["spec"] == cluster["worker"]["spec"]
    assert cluster_doc["spec"]["scheduler"]["spec"] == cluster["scheduler"]["spec"]

    # Each pod has a network namespace of its own, where the manifest's ports (8786, 8787,
    # 8788) are free; on the host network they may be taken, and the two workers would
    # ask for the same dashboard port. So every container gets free ports, appended to
    # its command (the last value of a dask CLI option wins); the workers and the job
    # reach the scheduler through DASK_SCHEDULER_ADDRESS as the operator gives it.
    port, dashboard = _free_port(), _free_port()
    address = f"tcp://127.0.0.1:{port}"
    prefix = f"bigkern-test-{os.getpid()}"
    names: list[str] = []
    worker_logs: dict[str, str] = {}
    try:
        sched_pod = cluster["scheduler"]["spec"]
        sched = _container(sched_pod)
        names.append(f"{prefix}-scheduler")
        podman("run", "-d", "--name", names[-1],
               *_run_args(sched_pod, sched, data_volume, {}), image,
               *sched["command"], *sched.get("args", []),
               "--port", str(port), "--dashboard-address", f":{dashboard}")
        _wait_healthy(dashboard)

        worker_pod = cluster["worker"]["spec"]
        worker = _container(worker_pod)
        worker_dashboards = []
        for i in range(cluster["worker"]["replicas"]):
            # what the operator sets; NUMBA_DEBUG_CACHE=1 makes numba log each cache load
            # and save, read below
            env = {"DASK_SCHEDULER_ADDRESS": address,
                   "DASK_WORKER_NAME": f"bigkern-predict-default-worker-{i}",
                   "NUMBA_DEBUG_CACHE": "1"}
            worker_dashboards.append(_free_port())
            names.append(f"{prefix}-worker-{i}")
            podman("run", "-d", "--name", names[-1],
                   *_run_args(worker_pod, worker, data_volume, env), image,
                   *_expand([*worker["command"], *worker.get("args", [])], env),
                   "--dashboard-address", f":{worker_dashboards[-1]}")
        for worker_dashboard in worker_dashboards:
            _wait_healthy(worker_dashboard)

        # the job's container, as the operator runs it once the cluster is up
        job_pod = job_doc["spec"]["job"]["spec"]
        job = _container(job_pod)
        env = {"DASK_SCHEDULER_ADDRESS": address, "NUMBA_DEBUG_CACHE": "1"}
        t = time.perf_counter()
        done = podman("run", "--rm", "--name", f"{prefix}-job",
                      *_run_args(job_pod, job, data_volume, env), image,
                      *_expand([*job["command"], *job.get("args", [])], env), timeout=600)
        print(f"the job ran in {time.perf_counter() - t:.0f} s", file=sys.stderr)
        assert "predicted" in done.stdout, done.stdout + done.stderr
        job_log = done.stdout + done.stderr

        # per worker, each bigkern numba function's cache hits and misses (compilations)
        stats = podman("run", "--rm", "--network", "host", image, "python", "-c",
                       _NUMBA_STATS.format(address=address)).stdout
        for name in names[1:]:
            logs = podman("logs", name)
            worker_logs[name] = logs.stdout + logs.stderr
    finally:
        for name in names:
            podman("rm", "-f", name, check=False)

    import xarray as xr

    theirs = xr.open_zarr(data_volume / "masks.zarr")
    ours = xr.open_zarr(host_masks)  # the same prediction by the host's bigkern
    assert set(theirs.data_vars) == set(ours.data_vars) == {"decision", "cloud_mask"}
    d_theirs, d_ours = theirs["decision"].values, ours["decision"].values
    # The decision values (float32) to a tight tolerance, not bit for bit: the image's
    # numerical stack is the one pinned in constraints.txt, the host's whatever its
    # environment resolved (CI installs ".[test]" unpinned), and another numba/LLVM may
    # vectorize the fused loop differently; the README promises ~1e-6 relative then. On
    # the same versions the values are in fact identical.
    np.testing.assert_array_equal(np.isnan(d_theirs), np.isnan(d_ours))
    np.testing.assert_allclose(d_theirs, d_ours, rtol=1e-5, atol=1e-6)
    # The mask exactly: it is the sign of the decision (and the no-prediction code where a
    # feature is missing), which round-off cannot change at these data's distances from 0.
    np.testing.assert_array_equal(theirs["cloud_mask"].values, ours["cloud_mask"].values)
    codes, counts = np.unique(theirs["cloud_mask"].values, return_counts=True)
    assert {-1, 1} <= set(codes.tolist()), dict(zip(codes, counts, strict=True))
    assert (theirs["cloud_mask"].values != 0).mean() > 0.9

    # Warmed numba caches. The workers' dispatchers: bigkern's prediction kernel was loaded
    # from the image's cache, and nothing was compiled (a cache miss is a compilation) ...
    per_worker = json.loads(stats.strip().splitlines()[-1])
    assert len(per_worker) == cluster["worker"]["replicas"], stats
    loaded = {f for counts in per_worker.values() for f, (hit, _) in counts.items() if hit}
    compiled = {f for counts in per_worker.values() for f, (_, miss) in counts.items() if miss}
    assert "bigkern.kernels.fused_loops._fused_rows" in loaded, per_worker
    assert not compiled, per_worker
    # ... and numba's own log agrees, in the workers and in the job's process: index and
    # data loaded from the cache directory, nothing saved to it
    for name, log in {**worker_logs, "job": job_log}.items():
        saved = [line for line in log.splitlines() if "[cache] data saved to" in line]
        assert not saved, f"{name} compiled and cached: {saved}"
    assert any("[cache] data loaded from" in log for log in worker_logs.values()), worker_logs



@pytest.mark.container
@pytest.mark.timeout(1800)
def test_image_version_user_and_no_secret(image, podman):
    run = ("run", "--rm", "--network", "host", image)
    version = _pyproject()["project"]["version"]
    assert podman(*run, "bigkern", "--version").stdout.strip() == f"bigkern {version}"
    # the image's own user (no --user given) is every pod's runAsUser, by name bigkern
    assert {pod["securityContext"]["runAsUser"] for pod in _pods()} == {1000}
    assert podman(*run, "id", "-u").stdout.strip() == "1000"
    assert podman(*run, "id", "-un").stdout.strip() == "bigkern"
    # the CA bundle was the build's secret: it is not in the image
    assert podman(*run, "test", "-e", "/run/secrets/ca", check=False).returncode != 0
    # the build's warm-up (deploy/warm_numba.py) cached every family of bigkern's compiled
    # functions, not only those a prediction calls (the job below checks those load)
    listing = podman(*run, "find", "/opt/bigkern/numba-cache", "-name", "*.nbi").stdout
    index = {Path(line).name.split("-")[0] for line in listing.split()}
    for name in WARMED_FUNCTIONS:
        assert name in index, sorted(index)


#: Functions deploy/warm_numba.py must leave in the image's numba cache: one of each family.
WARMED_FUNCTIONS = (
    "_bin_loops.bin_ids", "row_loops._row_status_kernel.locals.row_status",
    "fused_loops._fused_rows", "fused_loops._exact_rows",
    "class_loops.class_counts_by_slot",
    "extremes._extremes_kernel.locals.extremes",
    "_one_read_loops._one_read_kernels.locals.sums_kernel",
    "_key_loops._key_histograms_kernel.locals.key_histograms_d",
    "sparse_gram._pair_distances", "sparse_svm._smo", "sparse_spd._symmetric_matvec",
    "product_loops._fused_products", "kept_blocks._block_products", "radial_loops._block_rows",
    "radial_loops._expansion_rows",
)

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
