"""The clusters :func:`bigkern.connect` builds from the profiles of ``bigkern.cluster.profiles``.

A profile has a ``kind`` — ``local`` (a :class:`distributed.LocalCluster`),
``slurm`` or ``pbs`` (dask-jobqueue, from a jobqueue YAML such as
``deploy/slurm/jobqueue.yaml``) or ``kubernetes`` (the dask-kubernetes operator,
from a ``DaskCluster`` manifest) — its sizing (``n_workers`` or ``adapt``) and
more keyword ``options`` of its cluster class.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import dask

from bigkern import config
from bigkern.errors import ClusterError

__all__ = ["build_cluster", "file_options"]

#: Cluster classes of the profile kinds that need another package: (module, class, extra).
_KINDS = {
    "slurm": ("dask_jobqueue", "SLURMCluster", "hpc"),
    "pbs": ("dask_jobqueue", "PBSCluster", "hpc"),
    "kubernetes": ("dask_kubernetes.operator", "KubeCluster", "kubernetes"),
}


def build_cluster(profile: str, n_workers: int | None, threads_per_worker: int | None,
                   memory_limit: str | None, adapt: dict[str, int] | None,
                   options: dict[str, Any]) -> tuple[Any, int]:
    """Build and scale the cluster of ``profile``; return it and the workers to wait for.

    Parameters
    ----------
    profile : str
        A name in ``bigkern.cluster.profiles``.
    n_workers, threads_per_worker, memory_limit
        Override the profile's sizing (None: the profile's).
    adapt : dict, optional
        ``{"minimum": …, "maximum": …}`` for adaptive scaling (None: the profile's).
    options : dict
        More keyword arguments of the cluster class, over the profile's ``options``.
    """
    profiles = config.get("cluster.profiles") or {}
    if profile not in profiles:
        raise ClusterError(f"unknown cluster profile {profile!r}; the profiles in "
                           f"bigkern.cluster.profiles are {', '.join(sorted(profiles))}")
    settings = dict(profiles[profile] or {})
    kind = settings.get("kind", profile)
    n_workers = n_workers if n_workers is not None else settings.get("n_workers")
    adapt = adapt if adapt is not None else settings.get("adapt")
    kwargs = {**(settings.get("options") or {}), **options}
    if kind == "local":
        cluster = _local_cluster(settings, n_workers, threads_per_worker, memory_limit, kwargs)
    elif kind in _KINDS:
        module, name, extra = _KINDS[kind]
        try:
            cls = getattr(__import__(module, fromlist=[name]), name)
        except ImportError:
            raise ClusterError(f"cluster profile {profile!r} needs {module.split('.')[0]}: "
                               f"pip install 'bigkern[{extra}]'") from None
        if settings.get("config_file"):
            kwargs = {**file_options(kind, Path(settings["config_file"]).expanduser()),
                      **kwargs}
        cluster = cls(**kwargs)
        if not adapt and n_workers:
            cluster.scale(int(n_workers))
    else:
        raise ClusterError(f"cluster profile {profile!r} has kind {kind!r}; known kinds: "
                           f"local, {', '.join(_KINDS)}")
    if adapt:
        cluster.adapt(**adapt)
        return cluster, int(adapt.get("minimum", 0) or 0)
    return cluster, int(n_workers or 0)


def _local_cluster(settings: dict[str, Any], n_workers: int | None,
                   threads_per_worker: int | None, memory_limit: str | None,
                   kwargs: dict[str, Any]) -> Any:
    """A LocalCluster of worker processes sized by the arguments, else the profile."""
    from distributed import LocalCluster

    class _LocalCluster(LocalCluster):
        # A LocalCluster closes a worker's nanny for good when, lost-worker-timeout
        # (15 s by default) after the scheduler lost the worker, none of its name has
        # come back, which happens when the nanny is just then restarting a worker
        # killed by memory: the cluster then runs on with a worker fewer. The
        # profile's lost_worker_timeout replaces it while the loss is being handled.
        def _update_worker_status(self, op: str, msg: Any) -> None:
            with dask.config.set({"distributed.deploy.lost-worker-timeout": lost}):
                super()._update_worker_status(op, msg)

    lost = settings.get("lost_worker_timeout") or dask.config.get(
        "distributed.deploy.lost-worker-timeout")
    n = n_workers or settings.get("n_workers") or max(1, os.cpu_count() or 1)
    return _LocalCluster(**{
        "n_workers": int(n),
        "threads_per_worker": threads_per_worker or settings.get("threads_per_worker") or 1,
        "memory_limit": memory_limit or settings.get("memory_limit") or "auto",
        "processes": True,
        "dashboard_address": ":0",
        **kwargs,
    })


def file_options(kind: str, path: Path) -> dict[str, Any]:
    """Keyword arguments of the cluster class from a profile's ``config_file``.

    For ``slurm``/``pbs`` a dask-jobqueue YAML (its ``jobqueue.<kind>`` section,
    keys with ``_`` for ``-`` and ``name`` as ``job_name``, unset ones left to
    dask.config); for ``kubernetes`` a ``DaskCluster`` manifest, used as
    ``custom_cluster_spec``.
    """
    import yaml

    if not path.is_file():
        raise ClusterError(f"the cluster profile's config_file {path} does not exist")
    if kind == "kubernetes":
        return {"custom_cluster_spec": str(path)}
    with open(path) as f:
        section = ((yaml.safe_load(f) or {}).get("jobqueue") or {}).get(kind)
    if not isinstance(section, dict):
        raise ClusterError(f"{path} has no jobqueue.{kind} section")
    renamed = {"name": "job_name"}
    return {renamed.get(k, k.replace("-", "_")): v for k, v in section.items() if v is not None}
