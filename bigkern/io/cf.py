"""CF attributes of what bigkern writes: ``Conventions`` and an appended ``history`` line.

Every store bigkern writes from data it read (predictions, scene stores) keeps
the source's attributes, declares the CF version it follows and appends one
line to ``history`` saying when, which bigkern and what was done (CF's audit
trail, newest last).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from bigkern.io.scene_dims import DIMS_ATTR

__all__ = ["CF_CONVENTIONS", "cf_attrs", "history_line"]

#: The CF version bigkern's outputs follow: the first whose text allows the
#: attributes of zarr stores as well as netCDF files to be described alike
#: (string-valued attributes of any length, CF 1.10's clarifications of
#: ``flag_values``/``flag_meanings`` and of dimensionless ``units = "1"``).
CF_CONVENTIONS = "CF-1.10"

# root attributes that describe one store bigkern wrote (its kind, status, writer …), not
# the data: an output made from that store gets its own, never these
_STORE_ATTRS = frozenset({"bigkern_kind", "bigkern_status", "bigkern_version",
                          "bigkern_publishing", "bigkern_job", "bigkern_store_id", DIMS_ATTR})


def history_line(action: str, *, now: datetime | None = None) -> str:
    """One line for a CF ``history`` attribute: UTC time (ISO 8601), bigkern's version, action.

    Parameters
    ----------
    action : str
        What bigkern did, e.g. ``"predict_scenes: BinnedSVC"``.
    now : datetime, optional
        The time to record (default: now); a naive datetime is taken as UTC.

    Returns
    -------
    str

    Examples
    --------
    >>> from datetime import datetime
    >>> history_line("write_scenes", now=datetime(2026, 11, 27, 10, 0))  # doctest: +ELLIPSIS
    '2026-11-27T10:00:00Z bigkern ... write_scenes'
    """
    from bigkern.version import __version__

    when = now or datetime.now(timezone.utc)
    if when.tzinfo is not None:
        when = when.astimezone(timezone.utc)
    return f"{when.strftime('%Y-%m-%dT%H:%M:%SZ')} bigkern {__version__} {action}"


def cf_attrs(attrs: Mapping[str, Any], action: str, *,
             now: datetime | None = None) -> dict[str, Any]:
    """The root attributes of an output made from data with ``attrs``, CF style.

    The source's attributes are kept (less bigkern's bookkeeping of the store
    they were read from), ``Conventions`` is set to :data:`CF_CONVENTIONS`, and
    :func:`history_line` of ``action`` is appended to ``history`` (CF: an audit
    trail, one line per program that changed the data, newest last).

    Parameters
    ----------
    attrs : mapping
        The source dataset's attributes.
    action : str
        What bigkern did, for ``history``.
    now : datetime, optional
        The time to record (default: now).

    Returns
    -------
    dict

    Examples
    --------
    >>> out = cf_attrs({"title": "arctic scenes", "history": "made by hand"}, "write_scenes")
    >>> out["Conventions"], out["title"], len(out["history"].splitlines())
    ('CF-1.10', 'arctic scenes', 2)
    """
    out = {str(k): v for k, v in attrs.items() if str(k) not in _STORE_ATTRS}
    past = out.get("history")
    past = "\n".join(str(v) for v in past) if isinstance(past, (list, tuple)) else past
    line = history_line(action, now=now)
    out["history"] = f"{str(past).rstrip()}\n{line}" if past else line
    out["Conventions"] = CF_CONVENTIONS
    return out
