"""bigkern settings, kept in ``dask.config`` under the ``bigkern`` key.

The defaults live in ``bigkern/bigkern.yaml``; they are merged into
``dask.config`` at import time the way dask's own sub-projects do, so that
``dask.config.set({"bigkern.split_every": 4})`` and environment variables such
as ``BIGKERN__SPLIT_EVERY=4`` override them.

The known settings are the keys of ``bigkern.yaml``. :func:`set` refuses any
other key, naming the closest known ones, so a typo does not silently leave the
default in force. Below a setting whose default is a mapping
(``valid_ranges``, ``fill_values``) any key may be set: ``valid_ranges.CORR``.
Settings that reach ``dask.config`` another way — ``dask.config.set({"bigkern.x":
…})``, a YAML file in ``~/.config/dask``, a ``BIGKERN_*`` or ``DASK_BIGKERN__*``
environment variable — are *not* checked: dask's configuration cannot be
intercepted, and there a misspelt key is stored and never read.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import Any

import dask.config
import yaml

from bigkern.errors import UnknownSettingError

__all__ = ["get", "known_settings", "set"]

_DEFAULTS_FILE = Path(__file__).with_name("bigkern.yaml")
#: The ``bigkern`` mapping of ``bigkern.yaml``: every known setting and its default.
_DEFAULTS: dict[str, Any] = {}


def _load_defaults() -> None:
    with open(_DEFAULTS_FILE) as f:
        defaults = yaml.safe_load(f)
    _DEFAULTS.update(defaults["bigkern"])
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


def known_settings() -> tuple[str, ...]:
    """The names of bigkern's settings (the keys of ``bigkern.yaml``), sorted."""
    return tuple(sorted(_DEFAULTS))


def _canonical(name: str) -> str:
    return name.replace("-", "_")  # dask.config treats split-every as split_every


def _check_key(key: str) -> None:
    """Raise :class:`~bigkern.errors.UnknownSettingError` unless ``key`` names a setting."""
    top, _, below = key.partition(".")
    known = {_canonical(k): k for k in _DEFAULTS}
    if _canonical(top) not in known:
        close = difflib.get_close_matches(_canonical(top), sorted(known), n=3, cutoff=0.6)
        hint = (f"did you mean {' or '.join(repr(known[c]) for c in close)}?" if close
                else f"known settings: {', '.join(sorted(_DEFAULTS))}")
        raise UnknownSettingError(f"unknown bigkern setting {top!r}; {hint}")
    if below and not isinstance(_DEFAULTS[known[_canonical(top)]], dict):
        raise UnknownSettingError(f"unknown bigkern setting {key!r}: {top!r} is a single value, "
                                  f"not a mapping with keys below it")


def set(**settings: Any) -> dask.config.set:
    """Set bigkern settings, as a context manager or globally.

    Parameters
    ----------
    **settings
        Setting name (a key of ``bigkern.yaml``) → value. A dotted name sets one
        key below a mapping setting: ``**{"valid_ranges.CORR": [-1.0, 0.0]}``.

    Returns
    -------
    dask.config.set
        Use it in a ``with`` statement to restore the previous values on exit;
        otherwise the settings stay in force.

    Raises
    ------
    UnknownSettingError
        A name is not a bigkern setting (also a ``KeyError`` and a
        ``ValueError``); the message names the closest known ones. Nothing is
        set then.

    Examples
    --------
    >>> import bigkern.config
    >>> with bigkern.config.set(split_every=4):
    ...     bigkern.config.get("split_every")
    4
    """
    for key in settings:
        _check_key(key)
    return dask.config.set({f"bigkern.{k}": v for k, v in settings.items()})


_load_defaults()
