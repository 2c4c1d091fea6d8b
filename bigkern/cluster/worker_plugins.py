"""Worker plugins that set a worker up without importing bigkern there.

A worker unpickles a plugin when it is registered, and unpickling a class
by reference imports its module — for any ``bigkern.*`` module the whole
package (numba, scipy, scikit-learn, xarray …), about 190 MiB of a worker's
memory before it runs a single task: enough to pause a worker limited to
300 MiB. This module is therefore pickled by value (cloudpickle): workers get
the plugin's code, which needs only the standard library, distributed and
threadpoolctl. Tasks import what they need when they run.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import cloudpickle
from distributed import WorkerPlugin

__all__ = ["BLAS_THREAD_VARIABLES", "PinBlasThreads", "pin_threads"]

#: Environment variables BLAS and OpenMP libraries read when they are loaded.
BLAS_THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                         "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")


def pin_threads(n: int) -> None:
    """Limit this process's BLAS/OpenMP pools to ``n`` threads, loaded or not yet loaded.

    Pools already loaded (numpy's, which distributed imports) are limited with
    threadpoolctl; libraries loaded later (scipy's OpenBLAS, OpenMP …) read the
    environment variables set here when they load, so nothing is imported just
    to be limited.

    Parameters
    ----------
    n : int
        Threads per BLAS call.
    """
    for name in BLAS_THREAD_VARIABLES:
        os.environ[name] = str(n)
    try:
        from threadpoolctl import threadpool_limits  # a dependency of scikit-learn

        threadpool_limits(n)
    except ImportError:  # pragma: no cover - threadpoolctl ships with scikit-learn
        pass


class PinBlasThreads(WorkerPlugin):
    """Worker plugin: pin BLAS threads on every worker, present and future.

    Registered by :func:`bigkern.connect` with ``client.register_plugin``; the
    scheduler keeps it and runs :meth:`setup` on each worker that joins later
    (adaptive scaling, jobqueue jobs, a restarted worker).

    Parameters
    ----------
    n : int
        Threads per BLAS call (:func:`bigkern.connect` passes the
        ``bigkern.blas_threads`` setting).
    """

    name = "bigkern-pin-blas-threads"

    def __init__(self, n: int = 1) -> None:
        self.n = int(n)

    def setup(self, worker: Any) -> None:
        """Pin the worker process's BLAS pools to ``n`` threads."""
        pin_threads(self.n)


# Workers get this module's code with the plugin instead of importing bigkern (see above).
cloudpickle.register_pickle_by_value(sys.modules[__name__])
