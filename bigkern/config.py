"""bigkern settings, kept in ``dask.config`` under the ``bigkern`` key.

The defaults live in ``bigkern/bigkern.yaml``; they are merged into
``dask.config`` at import time the way dask's own sub-projects do, so that
``dask.config.set({"bigkern.split_every": 4})`` and environment variables such
as ``BIGKERN__SPLIT_EVERY=4`` override them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import dask.config
import yaml

__all__ = ["get", "set"]

_DEFAULTS_FILE = Path(__file__).with_name("bigkern.yaml")


def _load_defaults() -> None:
    with open(_DEFAULTS_FILE) as f:
        defaults = yaml.safe_load(f)
    dask.config.update_defaults(defaults)
    # BIGKERN_FOO=1 (or BIGKERN__FOO=1) works like DASK_BIGKERN__FOO=1.
    env = {
        "DASK_BIGKERN__" + k[len("BIGKERN_"):].lstrip("_"): v
        for k, v in os.environ.items()
        if k.startswith("BIGKERN_")
    }
    if env:
        dask.config.update(dask.config.config, dask.config.collect_env(env), priority="new")


def get(key: str, default: Any = None) -> Any:
    """Return setting ``bigkern.<key>`` from ``dask.config``.

    Parameters
    ----------
    key : str
        Dotted key below ``bigkern``, e.g. ``"split_every"``.
    default : object, optional
        Returned when the key is absent.
    """
    return dask.config.get(f"bigkern.{key}", default=default)


def set(**settings: Any) -> dask.config.set:
    """Set bigkern settings, as a context manager or globally.

    Examples
    --------
    >>> import bigkern.config
    >>> with bigkern.config.set(split_every=4):
    ...     bigkern.config.get("split_every")
    4
    """
    return dask.config.set({f"bigkern.{k}": v for k, v in settings.items()})


_load_defaults()
