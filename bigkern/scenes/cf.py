"""CF attributes of what bigkern writes: ``Conventions`` and an appended ``history`` line.

Every store bigkern writes from data it read (predictions, scene stores) keeps
the source's attributes, declares the CF version it follows — CF 1.10, or the
newer one the source declares — and appends one line to ``history`` saying
when, which bigkern and what was done (CF's audit trail, newest last).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from bigkern.scenes.dims import DIMS_ATTR

__all__ = ["CF_CONVENTIONS", "cf_attrs", "cf_conventions", "history_line"]

#: The CF version bigkern's outputs follow: the first whose text allows the
#: attributes of zarr stores as well as netCDF files to be described alike
#: (string-valued attributes of any length, CF 1.10's clarifications of
#: ``flag_values``/``flag_meanings`` and of dimensionless ``units = "1"``).
CF_CONVENTIONS = "CF-1.10"

# one convention of a Conventions attribute naming CF (``CF-1.8``), its version
_CF_NAME = re.compile(r"CF-(\d+)\.(\d+)\S*")
# what separates the conventions of a Conventions attribute: blanks, or commas (CF 1.7 on)
_SEPARATOR = re.compile(r"(\s*,\s*|\s+)")

# root attributes that describe one store bigkern wrote (its kind, status, writer …), not
# the data: an output made from that store gets its own, never these
_STORE_ATTRS = frozenset({"bigkern_kind", "bigkern_status", "bigkern_version",
                          "bigkern_publishing", "bigkern_job", "bigkern_store_id", DIMS_ATTR,
                          "bigkern_key_histograms_source"})


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


def _cf_version(name: str) -> tuple[int, int]:
    found = _CF_NAME.fullmatch(name)
    return (int(found[1]), int(found[2])) if found else (0, 0)


def cf_conventions(given: Any = None) -> str:
    """The ``Conventions`` of an output made from data declaring ``given``.

    CF's part is :data:`CF_CONVENTIONS`, or the newer CF version ``given``
    names (an output follows what its input declares, and bigkern's own
    attributes follow CF 1.10 or any later version); the other conventions
    ``given`` names (``ACDD-1.3``) are kept, in their place, with their
    separators (blanks, or commas).

    Parameters
    ----------
    given : str or sequence of str, optional
        The source's ``Conventions`` attribute.

    Returns
    -------
    str

    Examples
    --------
    >>> cf_conventions("CF-1.8"), cf_conventions("CF-1.12"), cf_conventions(None)
    ('CF-1.10', 'CF-1.12', 'CF-1.10')
    >>> cf_conventions("CF-1.8, ACDD-1.3"), cf_conventions("ACDD-1.3")
    ('CF-1.10, ACDD-1.3', 'CF-1.10 ACDD-1.3')
    """
    if isinstance(given, (list, tuple)):
        given = " ".join(str(g) for g in given)
    text = "" if given is None else str(given).strip()
    if not text:
        return CF_CONVENTIONS
    parts = _SEPARATOR.split(text)  # names at even places, the separators between them
    names = parts[::2]
    cf = [i for i, name in enumerate(names) if _CF_NAME.fullmatch(name)]
    if not cf:
        return f"{CF_CONVENTIONS}{', ' if ',' in text else ' '}{text}"
    newest = max((names[i] for i in cf), key=_cf_version)
    names[cf[0]] = newest if _cf_version(newest) > _cf_version(CF_CONVENTIONS) \
        else CF_CONVENTIONS
    out = [names[0]]
    for i in range(1, len(names)):
        if i not in cf[1:]:  # CF named once: the others leave with their separators
            out += [parts[2 * i - 1], names[i]]
    return "".join(out)


def cf_attrs(attrs: Mapping[str, Any], action: str, *,
             now: datetime | None = None) -> dict[str, Any]:
    """The root attributes of an output made from data with ``attrs``, CF style.

    The source's attributes are kept (less bigkern's bookkeeping of the store
    they were read from), ``Conventions`` names :data:`CF_CONVENTIONS` or the
    newer CF version the source declares, beside the source's other
    conventions (:func:`cf_conventions`), and
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
    >>> cf_attrs({"Conventions": "CF-1.11 ACDD-1.3"}, "write_scenes")["Conventions"]
    'CF-1.11 ACDD-1.3'
    """
    out = {str(k): v for k, v in attrs.items() if str(k) not in _STORE_ATTRS}
    past = out.get("history")
    past = "\n".join(str(v) for v in past) if isinstance(past, (list, tuple)) else past
    line = history_line(action, now=now)
    out["history"] = f"{str(past).rstrip()}\n{line}" if past else line
    out["Conventions"] = cf_conventions(out.get("Conventions"))
    return out
