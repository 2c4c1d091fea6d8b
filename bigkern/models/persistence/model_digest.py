"""Model files checksummed whole: a digest of every attribute and every array.

A model file's chunks may carry CRC-32C checksums (zarr) or none (netCDF), but
what a model *means* lives as much in its attributes (``omega``, ``intercept``,
``classes``, ``params_json`` …) as in its arrays. :func:`model_digest` records,
in the root attribute ``bigkern_digest``, a SHA-256 of

- each *attribute part*: the root attributes, and each variable's attributes,
  as canonical JSON (sorted keys; numbers that are whole as integers, other
  numbers as the shortest repr of their float64; a one-element list as its
  element, as netCDF stores it), leaving out the digest itself and the store's
  own bookkeeping (``bigkern_status``, ``bigkern_job``, ``bigkern_store_id``),
  which change after the model is written and which no loader reads;
- each *array*: its name, dims, shape, a dtype label (strings: ``str``; integers:
  ``int``, as every model file format keeps their values but not always their
  width) and its values' bytes (little-endian).

:func:`verify_model_digest` recomputes them on the dataset as read and raises
:class:`~bigkern.errors.StoreError` naming the model and the first part that
differs; a model without the digest is refused.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Hashable, Mapping
from typing import Any

import numpy as np
import xarray as xr

from bigkern.errors import StoreError

__all__ = ["DIGEST_ATTR", "model_digest", "verify_model_digest"]

DIGEST_ATTR = "bigkern_digest"
_ALGORITHM = "sha256"
#: Root attributes the store machinery sets or changes after the model is written.
_BOOKKEEPING = frozenset({DIGEST_ATTR, "bigkern_status", "bigkern_job", "bigkern_store_id"})


def _canonical(value: Any) -> Any:
    """A JSON-ready form of an attribute value that survives zarr and netCDF alike."""
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, bytes | np.bytes_):
        value = value.decode("utf-8", "surrogateescape")
    if isinstance(value, str):
        return str(value)
    if isinstance(value, list | tuple | np.ndarray):
        items = [_canonical(v) for v in np.asarray(value, dtype=object).ravel().tolist()] \
            if isinstance(value, np.ndarray) else [_canonical(v) for v in value]
        return items[0] if len(items) == 1 else items
    if isinstance(value, bool | np.bool_):
        return int(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        x = float(value)
        if math.isfinite(x) and x == int(x) and abs(x) < 2.0**63:
            return int(x)
        return repr(x)  # keeps nan, inf and every bit of the float64
    if value is None:
        return None
    return repr(value)


def _attrs_hash(attrs: Mapping[Hashable, Any], *, root: bool) -> str:
    kept = {str(k): _canonical(v) for k, v in attrs.items()
            if not (root and str(k) in _BOOKKEEPING)}
    text = json.dumps(kept, sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    return hashlib.new(_ALGORITHM, text.encode()).hexdigest()


def _array_hash(name: str, var: xr.Variable) -> str:
    values = np.asarray(var.values)
    if values.dtype.kind in "OUST":
        label = "str"
        data = json.dumps([str(v.decode() if isinstance(v, bytes) else v)
                           for v in values.ravel().tolist()]).encode()
    elif values.dtype.kind in "iu":
        label, data = "int", np.ascontiguousarray(values, dtype="<i8").tobytes()
    else:
        dtype = values.dtype.newbyteorder("<") if values.dtype.byteorder != "|" else values.dtype
        label, data = dtype.str, np.ascontiguousarray(values, dtype=dtype).tobytes()
    head = json.dumps([name, list(var.dims), list(values.shape), label]).encode()
    h = hashlib.new(_ALGORITHM, head)
    h.update(data)
    return h.hexdigest()


def _parts(ds: xr.Dataset) -> dict[str, dict[str, str]]:
    names = sorted(str(n) for n in ds.variables)
    return {
        "attrs": {"": _attrs_hash(ds.attrs, root=True),
                  **{n: _attrs_hash(ds.variables[n].attrs, root=False) for n in names}},
        "arrays": {n: _array_hash(n, ds.variables[n]) for n in names},
    }


def model_digest(ds: xr.Dataset) -> str:
    """The digest of a model dataset, as the JSON text stored in ``bigkern_digest``.

    Parameters
    ----------
    ds : xarray.Dataset
        The model's dataset, in memory, with every attribute it will be written with.

    Returns
    -------
    str
        ``{"algorithm": "sha256", "attrs": {part: hex}, "arrays": {name: hex}}``
        (part ``""`` is the root attributes).
    """
    return json.dumps({"algorithm": _ALGORITHM, **_parts(ds)}, sort_keys=True)


def verify_model_digest(ds: xr.Dataset, where: str) -> None:
    """Check a model dataset as read against its recorded digest.

    Parameters
    ----------
    ds : xarray.Dataset
        The dataset read from the model file (loaded in memory).
    where : str
        The model's path or URL, for messages.

    Raises
    ------
    StoreError
        The digest is missing or unreadable, or a part differs: the message
        names the model and the part ("root attributes", "attributes of
        variable 'coef'", "variable 'coef'").
    """
    text = ds.attrs.get(DIGEST_ATTR)
    if text is None:
        raise StoreError(
            f"model {where}: it records no digest ({DIGEST_ATTR}), so its attributes and arrays "
            f"cannot be verified; it was not written by this bigkern's save_model: fit and "
            f"save it again")
    try:
        recorded = json.loads(str(text))
        if recorded.get("algorithm") != _ALGORITHM:
            raise ValueError(f"algorithm {recorded.get('algorithm')!r}")
        attrs, arrays = dict(recorded["attrs"]), dict(recorded["arrays"])
    except (ValueError, TypeError, KeyError, AttributeError) as err:
        raise StoreError(f"model {where}: its digest ({DIGEST_ATTR}) is unreadable "
                         f"({err}); the file is damaged") from None
    actual = _parts(ds)
    for name in sorted(set(arrays) | set(actual["arrays"])):
        if name not in actual["arrays"]:
            raise StoreError(f"model {where}: variable {name!r} is missing (digest mismatch)")
        if name not in arrays:
            raise StoreError(f"model {where}: variable {name!r} is not in the recorded digest "
                             f"(added after it was written)")
    if attrs.get("") != actual["attrs"][""]:
        raise StoreError(f"model {where}: root attributes digest mismatch (the file was "
                         f"changed or damaged after it was written)")
    for name in sorted(actual["arrays"]):
        if attrs.get(name) != actual["attrs"][name]:
            raise StoreError(f"model {where}: attributes of variable {name!r} digest mismatch "
                             f"(the file was changed or damaged after it was written)")
        if arrays[name] != actual["arrays"][name]:
            raise StoreError(f"model {where}: variable {name!r} digest mismatch (its dtype, "
                             f"shape or values were changed or damaged after it was written)")
