"""Commands whose tasks start late, so that a test can interrupt or kill them mid-run.

:func:`held_tasks_env` is the environment that makes every worker of a command's embedded
cluster load the preload ``tests/cli/preloads/bigkern_held_tasks.py``: each task starts
``delay`` seconds late. The same tasks run on the same data; only the timing changes, so
that "the prediction is still running" holds on a fast machine and a loaded one alike.
"""

from __future__ import annotations

import os
from pathlib import Path

PRELOADS = Path(__file__).parent / "cli" / "preloads"


def held_tasks_env(delay: float = 0.25) -> dict[str, str]:
    """Environment variables holding each task of a command's workers back ``delay`` s."""
    path = os.pathsep.join(filter(None, [str(PRELOADS), os.environ.get("PYTHONPATH")]))
    return {"DASK_DISTRIBUTED__WORKER__PRELOAD": '["bigkern_held_tasks"]',
            "BIGKERN_TEST_TASK_DELAY": str(delay), "PYTHONPATH": path}
