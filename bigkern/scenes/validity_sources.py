"""Validity rules: which values of a feature are fill values or out of range, and why.

A :class:`ValidityRule` per feature is resolved by :func:`validity_rules` from,
in order of precedence, the ``fill_values=`` / ``valid_ranges=`` arguments,
the variable's CF attributes (``_FillValue``, ``missing_value``,
``valid_range``, ``valid_min``, ``valid_max``, and the fill values xarray
decoded into its encoding) and the ``bigkern.fill_values`` /
``bigkern.valid_ranges`` settings. :mod:`bigkern.scenes.validity` applies them.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import xarray as xr

from bigkern import config
from bigkern.errors import StoreError
from bigkern.features import DERIVED

__all__ = [
    "NETCDF_DEFAULT_FILL",
    "NOT_FEATURES",
    "FillValues",
    "ValidRanges",
    "ValidityRule",
    "netcdf_default_fill",
    "validity_rules",
]

NOT_FEATURES: tuple[str, ...] = ("label", "cloud_truth")
"""Variables that are labels, not features: never masked."""

ATTR_FILL_VALUES = "bigkern_fill_values"
ATTR_FILL_SOURCE = "bigkern_fill_source"
ATTR_VALID_MIN = "bigkern_valid_min"
ATTR_VALID_MAX = "bigkern_valid_max"
ATTR_RANGE_SOURCE = "bigkern_valid_range_source"
ATTR_N_FILL = "bigkern_n_fill"
ATTR_N_OUT_OF_RANGE = "bigkern_n_out_of_range"
#: Set on every variable :func:`~bigkern.scenes.apply_validity` has checked, even when no rule
#: applied: a variable without it has not been through the validity rules yet.
ATTR_CHECKED = "bigkern_validity_checked"
_OWN_ATTRS = (ATTR_FILL_VALUES, ATTR_FILL_SOURCE, ATTR_VALID_MIN, ATTR_VALID_MAX,
              ATTR_RANGE_SOURCE, ATTR_N_FILL, ATTR_N_OUT_OF_RANGE, ATTR_CHECKED)

FillValues = float | Sequence[float] | Mapping[str, float | Sequence[float] | None] | None
ValidRanges = Mapping[str, Sequence[float | None] | None] | bool | None


@dataclass(frozen=True)
class ValidityRule:
    """What is not data in one feature: fill values and a valid range (None = open bound).

    Sources are ``"argument"``, ``"attribute"`` (the variable's CF attributes),
    ``"encoding"`` (a fill value xarray decoded), ``"netcdf-default"`` (netCDF's
    default fill of a float variable that declares none) or ``"config"``.
    """

    feature: str
    fills: tuple[float, ...] = ()
    fill_sources: tuple[str, ...] = ()
    valid_min: float | None = None
    valid_max: float | None = None
    range_source: str | None = None

    @property
    def active(self) -> bool:
        """Whether the rule masks anything at all."""
        return bool(self.fills) or self.valid_min is not None or self.valid_max is not None

    def is_fill(self, values: xr.DataArray) -> xr.DataArray:
        """Where ``values`` equals a fill value (lazy for dask data)."""
        bad = xr.zeros_like(values, dtype=bool)
        for f in self.fills:
            bad = bad | (values == _typed(f, values.dtype))
        return bad

    def is_out_of_range(self, values: xr.DataArray) -> xr.DataArray:
        """Where ``values`` lies outside ``[valid_min, valid_max]`` (NaN is not outside)."""
        bad = xr.zeros_like(values, dtype=bool)
        if self.valid_min is not None:
            bad = bad | (values < _typed(self.valid_min, values.dtype))
        if self.valid_max is not None:
            bad = bad | (values > _typed(self.valid_max, values.dtype))
        return bad

    def attrs(self) -> dict[str, Any]:
        """The attributes that record this rule on a variable (numbers and strings only)."""
        out: dict[str, Any] = {}
        if self.fills:
            out[ATTR_FILL_VALUES] = [float(f) for f in self.fills]
            out[ATTR_FILL_SOURCE] = ",".join(dict.fromkeys(self.fill_sources))
        if self.valid_min is not None:
            out[ATTR_VALID_MIN] = float(self.valid_min)
        if self.valid_max is not None:
            out[ATTR_VALID_MAX] = float(self.valid_max)
        if self.range_source is not None:
            out[ATTR_RANGE_SOURCE] = self.range_source
        return out


#: netCDF's default fill of float and double variables (``NC_FILL_FLOAT``/``NC_FILL_DOUBLE``):
#: what a netCDF library writes where nothing was written and no ``_FillValue`` is declared.
NETCDF_DEFAULT_FILL = 9.9692099683868690e36


def netcdf_default_fill(dtype: Any) -> float | None:
    """netCDF's default fill value for floating-point ``dtype`` (as stored), else None.

    Applied to a floating-point feature that declares no ``_FillValue``, as the
    netCDF convention says readers should: ``9.96921e36`` is no physical value,
    and a scene of it would otherwise be predicted (as "clear", when its log is
    far out on one side). Integer types keep their data: their default fills
    (-127, -32767 …) can be values, and the suspected-fill check names them.

    Examples
    --------
    >>> netcdf_default_fill("float32") == float(np.float32(9.96921e36))
    True
    >>> netcdf_default_fill("int16") is None
    True
    """
    dtype = np.dtype(dtype)
    if dtype.kind != "f":
        return None
    return float(_typed(NETCDF_DEFAULT_FILL, dtype))


def _typed(value: float, dtype: np.dtype) -> Any:
    """``value`` as stored in a float array of ``dtype`` (so float32 data match float32 fills)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        with np.errstate(over="ignore"):
            return dtype.type(value)
    return value


def _number(value: Any, what: str, *, allow_inf: bool) -> float:
    """``value`` as a float, or a StoreError naming ``what``."""
    if isinstance(value, np.ndarray) and value.size == 1:
        value = value.reshape(()).item()
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise StoreError(f"{what} must be a number; got {value!r}")
    out = float(value)
    if math.isnan(out) or (math.isinf(out) and not allow_inf):
        raise StoreError(f"{what} must be a finite number; got {value!r} (NaN and ±inf are "
                         "always treated as missing: no need to declare them)")
    return out


def _as_list(value: Any) -> list[Any]:
    if isinstance(value, (str, bytes)):
        return [value]
    if isinstance(value, np.ndarray):
        return value.ravel().tolist()
    if isinstance(value, Sequence):
        return list(value)
    return [value]


def _check_range(lo: float | None, hi: float | None, what: str) -> None:
    if lo is not None and hi is not None and lo > hi:
        raise StoreError(f"{what} is empty: its minimum {lo:g} is above its maximum {hi:g}")


def _parse_range(value: Any, what: str) -> tuple[float | None, float | None]:
    """``(min, max)`` from a 2-sequence of numbers or None (±inf = open)."""
    items = _as_list(value)
    if len(items) != 2 or isinstance(value, (str, bytes)):
        raise StoreError(f"{what} must be a pair (min, max), None for an open bound; "
                         f"got {value!r}")
    lo, hi = (None if item is None else
              _number(item, f"the {side} of {what}", allow_inf=True)
              for side, item in zip(("minimum", "maximum"), items, strict=True))
    if lo == math.inf or hi == -math.inf:
        raise StoreError(f"{what} is empty: {value!r}")
    lo = None if lo == -math.inf else lo
    hi = None if hi == math.inf else hi
    _check_range(lo, hi, what)
    return lo, hi


def _scope(ds: xr.Dataset, features: Sequence[str] | None) -> list[str]:
    """The variables to check: ``features``, or every numeric data variable but the labels."""
    if features is None:
        return [str(k) for k, v in ds.data_vars.items()
                if str(k) not in NOT_FEATURES and v.dtype.kind in "iuf"]
    out = []
    for f in features:
        if f in NOT_FEATURES:
            raise StoreError(f"{f!r} is a label, not a feature: labels are never masked")
        if f not in ds.data_vars:
            raise StoreError(f"feature {f!r} is not in the dataset; it has "
                             f"{sorted(map(str, ds.data_vars))}")
        out.append(str(f))
    return out


def _check_names(names: Any, scope: list[str], ds: xr.Dataset, argument: str) -> None:
    for name in names:
        if name in NOT_FEATURES:
            raise StoreError(f"{argument} names {name!r}, a label, not a feature: labels are "
                             "never masked")
        if name not in scope:
            hint = ""
            if name in DERIVED:
                hint = (f" ({name!r} is derived from {DERIVED[name][0]!r} after opening: give "
                        f"the fill or range of {DERIVED[name][0]!r})")
            where = "is not a feature of the dataset" if name not in ds.data_vars else \
                "is not among the features checked"
            raise StoreError(f"{argument} names {name!r}, which {where}{hint}; the features "
                             f"are {scope}")


def _config_entry(table: Mapping[str, Any], name: str) -> Any:
    """``table[name]``, also matched case-insensitively.

    dask lower-cases the keys of environment variables (``BIGKERN_VALID_RANGES__NDAI``
    sets ``ndai``), so a key that matches only case-insensitively is such an
    override and wins over the exact one (the packaged default).
    """
    def norm(key: Any) -> str:
        return str(key).lower().replace("-", "_")

    others = [v for k, v in table.items() if k != name and norm(k) == norm(name)]
    if others:
        return others[-1]
    return table.get(name)


def _cf_fills(var: xr.DataArray) -> tuple[list[float], list[str]]:
    """Fill values the variable declares (attributes, or encoding once decoded by xarray)."""
    fills: list[float] = []
    sources: list[str] = []
    scale, offset = _decoded_packing(var)
    for where, table in (("attribute", var.attrs), ("encoding", var.encoding)):
        for key in ("_FillValue", "missing_value"):
            if key not in table or table[key] is None:
                continue
            for item in _as_list(table[key]):
                try:
                    value = float(item)
                except (TypeError, ValueError) as err:
                    raise StoreError(f"variable {var.name!r} declares {key}={table[key]!r}, "
                                     "which is not a number") from err
                if not math.isfinite(value):
                    continue  # a NaN fill is just NaN
                if where == "encoding":  # in packed units; the data are unpacked
                    value = value * scale + offset
                fills.append(value)
                sources.append(where)
    return fills, sources


def _decoded_packing(var: xr.DataArray) -> tuple[float, float]:
    """(scale_factor, add_offset) that xarray applied when decoding (1, 0 if none)."""
    if "scale_factor" in var.attrs or "add_offset" in var.attrs:
        return 1.0, 0.0  # still packed: attributes and data are in the same units
    scale = float(np.asarray(var.encoding.get("scale_factor", 1.0)).ravel()[0])
    offset = float(np.asarray(var.encoding.get("add_offset", 0.0)).ravel()[0])
    return scale, offset


def _cf_range(var: xr.DataArray) -> tuple[float | None, float | None] | None:
    """The variable's CF valid range, in the units of its (possibly decoded) data."""
    attrs = var.attrs
    what = f"variable {var.name!r}'s CF attribute"
    if "valid_range" in attrs:
        lo, hi = _parse_range(attrs["valid_range"], f"{what} valid_range")
    elif "valid_min" in attrs or "valid_max" in attrs:
        lo = hi = None
        if attrs.get("valid_min") is not None:
            lo = _number(_as_list(attrs["valid_min"])[0], f"{what} valid_min", allow_inf=True)
        if attrs.get("valid_max") is not None:
            hi = _number(_as_list(attrs["valid_max"])[0], f"{what} valid_max", allow_inf=True)
        lo = None if lo is not None and math.isinf(lo) else lo
        hi = None if hi is not None and math.isinf(hi) else hi
        _check_range(lo, hi, f"variable {var.name!r}'s CF valid_min/valid_max")
    else:
        return None
    scale, offset = _decoded_packing(var)
    if (scale, offset) != (1.0, 0.0):  # CF ranges are in packed units
        lo, hi = (None if b is None else b * scale + offset for b in (lo, hi))
        if scale < 0:
            lo, hi = hi, lo
    return lo, hi


def validity_rules(
    ds: xr.Dataset,
    features: Sequence[str] | None = None,
    *,
    fill_values: FillValues = None,
    valid_ranges: ValidRanges = None,
) -> dict[str, ValidityRule]:
    """The fill values and valid range of every feature (see :func:`apply_validity`).

    Raises
    ------
    StoreError
        Naming the feature: a fill or range given for a variable that is not a
        feature of ``ds`` (or is a label), a range with min > max, a value that
        is not a number, a malformed CF attribute or ``bigkern`` setting.
    """
    scope = _scope(ds, features)

    explicit_fills: dict[str, list[float]] = {}
    if fill_values is not None:
        if isinstance(fill_values, Mapping):
            _check_names(fill_values, scope, ds, "fill_values")
            per = {str(k): v for k, v in fill_values.items()}
        else:
            per = dict.fromkeys(scope, fill_values)
        for name, value in per.items():
            items = [] if value is None else _as_list(value)
            explicit_fills[name] = [_number(v, f"fill value of {name!r}", allow_inf=False)
                                    for v in items]

    explicit_ranges: dict[str, tuple[float | None, float | None] | None] = {}
    if isinstance(valid_ranges, Mapping):
        _check_names(valid_ranges, scope, ds, "valid_ranges")
        for name, value in valid_ranges.items():
            explicit_ranges[str(name)] = (None if value is None else
                                          _parse_range(value, f"valid range of {name!r}"))
    elif valid_ranges is not None and not isinstance(valid_ranges, bool):
        raise StoreError(f"valid_ranges must be a mapping feature -> (min, max), or False for "
                         f"no range checks; got {valid_ranges!r}")
    use_ranges = valid_ranges is not False

    config_fills = config.get("fill_values", {}) or {}
    config_ranges = config.get("valid_ranges", {}) or {}
    if not isinstance(config_ranges, Mapping):
        raise StoreError(f"setting bigkern.valid_ranges must be a mapping variable -> [min, max]; "
                         f"got {config_ranges!r}")
    rules: dict[str, ValidityRule] = {}
    for name in scope:
        var = ds[name]
        fills, sources = _cf_fills(var)
        if name in explicit_fills:
            extra, source = explicit_fills[name], "argument"
        else:
            # a mapping per variable, or fill values for every feature
            entry = (_config_entry(config_fills, name) if isinstance(config_fills, Mapping)
                     else config_fills)
            extra = [] if entry is None else [
                _number(v, f"setting bigkern.fill_values.{name}", allow_inf=False)
                for v in _as_list(entry)]
            source = "config"
        if not fills and (default := netcdf_default_fill(var.dtype)) is not None:
            # netCDF's convention: a variable that declares no _FillValue has its type's
            # default fill (never a physical value for floats: 9.97e36)
            fills, sources = [default], ["netcdf-default"]
        first_source: dict[float, str] = {}
        for f, s in zip([*fills, *extra], [*sources, *[source] * len(extra)], strict=True):
            first_source.setdefault(f, s)
        lo = hi = None
        range_source = None
        if use_ranges:
            if name in explicit_ranges:
                bounds, range_source = explicit_ranges[name], "argument"
                if bounds is None:
                    range_source = None
            elif (bounds := _cf_range(var)) is not None:
                range_source = "attribute"
            elif (entry := _config_entry(config_ranges, name)) is not None:
                bounds = _parse_range(entry, f"setting bigkern.valid_ranges.{name}")
                range_source = "config"
            if bounds is not None:
                lo, hi = bounds
            if lo is None and hi is None:
                range_source = None
        rules[name] = ValidityRule(name, tuple(first_source), tuple(first_source.values()),
                                   lo, hi, range_source)
    return rules


