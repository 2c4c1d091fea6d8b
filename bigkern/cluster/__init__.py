"""Where computations run: connecting to a Dask cluster, and watching what it computes.

* :mod:`bigkern.cluster.client` — :func:`~bigkern.cluster.client.connect` (a scheduler
  address, a scheduler file, a profile or an embedded LocalCluster), the client class
  whose ``gather`` is watched, BLAS threads pinned per worker;
* :mod:`bigkern.cluster.profiles` — the clusters of ``--profile`` (local, SLURM, PBS,
  Kubernetes) built from ``bigkern.cluster_profiles`` settings;
* :mod:`bigkern.cluster.compute` — :func:`~bigkern.cluster.compute.compute` with a label
  and progress, on a client or dask's local scheduler, and the threads a task may use;
* :mod:`bigkern.cluster.watchdog` and :mod:`bigkern.cluster.stall_rules` — no silent
  wait: paused workers, lost workers or no progress end a compute with a
  :class:`~bigkern.errors.ClusterError` naming the cause;
* :mod:`bigkern.cluster.logs` and :mod:`bigkern.cluster.worker_plugins` — what runs on
  the workers (quiet expected errors, pinned BLAS threads), pickled by value so that a
  worker imports nothing of bigkern for them.

The package's ``__init__`` imports nothing: ``from bigkern.cluster.compute import
compute`` (every distributed pass does) does not start distributed's client machinery.
The public names are :func:`bigkern.connect` and :func:`bigkern.compute`.
"""
