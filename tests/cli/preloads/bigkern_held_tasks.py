"""A worker preload that holds every task back a little, so a test can interrupt a command
mid-computation on any machine.

``DASK_DISTRIBUTED__WORKER__PRELOAD='["bigkern_held_tasks"]'`` (with this folder on
``PYTHONPATH``) makes each worker of the command's embedded cluster wait
``BIGKERN_TEST_TASK_DELAY`` seconds (default 0.25) before each task it runs. The engine is
not changed: the same tasks run on the same data, only later, so a prediction of 100 tasks
takes at least 100 × delay / threads seconds however fast the machine is.
"""

from __future__ import annotations

import functools
import os
import time
from typing import Any


def dask_setup(worker: Any) -> None:
    """Wrap the worker's task executor so that each task starts after the delay."""
    delay = float(os.environ.get("BIGKERN_TEST_TASK_DELAY", "0.25"))
    executor = worker.executors["default"]
    submit = executor.submit

    def held(fn: Any) -> Any:
        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            time.sleep(delay)
            return fn(*args, **kwargs)
        return run

    executor.submit = lambda fn, /, *args, **kwargs: submit(held(fn), *args, **kwargs)
