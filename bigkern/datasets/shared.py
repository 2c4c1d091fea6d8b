"""Where the real data sets of the papers' tables live (``../shared/data``)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["shared_data_dir"]


def shared_data_dir() -> Path | None:
    """Return the folder of the real data sets (``shared/data``), or None if absent.

    The folder is looked for, in order, in the environment variable
    ``BIGKERN_SHARED_DATA``, in ``../shared/data`` next to the repository that holds
    the ``bigkern`` package, and in ``../shared/data`` relative to the current
    directory.

    Returns
    -------
    pathlib.Path or None
        The first of those folders that exists, or None when none does (a fresh
        install has no real data; tests that need them skip).
    """
    env = os.environ.get("BIGKERN_SHARED_DATA")
    if env:
        path = Path(env).expanduser()
        return path if path.is_dir() else None
    repo_root = Path(__file__).resolve().parents[2]
    for candidate in (repo_root.parent / "shared" / "data", Path.cwd().parent / "shared" / "data"):
        if candidate.is_dir():
            return candidate
    return None
