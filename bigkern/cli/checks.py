"""The ``bigkern`` command's checks of its own flags, made before any file is read.

Every value a command line gives is either used as given or refused with one
line naming the flag (exit code 2, like argparse's usage errors): counts of
workers and scenes of at least one, seeds in ``[0, 2**32 − 1]``, a positive
finite ``--timeout``, and estimator parameters (``--param NAME=VALUE``) in the
domain the estimator declares (its ``_parameter_constraints``, which its ``fit``
checks too) narrowed to the command limits of the parameter table
(:data:`bigkern.models.parameters.PARAMETERS`, gathered in :data:`PARAM_LIMITS`) —
never NaN, an infinity, a denormal or a width such as ``omega=1e300`` that makes every
kernel value 1.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Collection, Mapping, Sequence
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any

import numpy as np

from bigkern.models.parameters import MAX_SEED, PARAMETERS, Domain

if TYPE_CHECKING:
    from sklearn.utils._param_validation import Interval

__all__ = [
    "MAX_SEED",
    "PARAM_LIMITS",
    "UsageError",
    "check_counts",
    "check_magnitudes",
    "check_params",
    "parse_params",
    "validity_keywords",
]

#: The smallest positive normal double: a value below it is denormal, and squaring or
#: inverting it (as a Gaussian width is) overflows or underflows.
_TINY = float(np.finfo(np.float64).tiny)

#: What each numeric parameter of the estimators is, for the messages, and the magnitudes a
#: command takes: name → (what it is, smallest, largest); None keeps the domain's bound. From
#: the parameter table (:data:`bigkern.models.parameters.PARAMETERS`): the domain is the
#: one every estimator declares, the limits narrow it to what means something at double
#: precision.
PARAM_LIMITS: dict[str, tuple[str, float | None, float | None]] = {
    name: (p.what, *(p.command or (None, None)))
    for name, p in PARAMETERS.items() if p.what
}

#: The real parameters the command bounds away from 0 (widths, penalties, tolerances): their
#: values are checked against the table by :func:`check_magnitudes` before an estimator (and
#: scikit-learn) is imported.
POSITIVE_PARAMS = frozenset(name for name, (_, lo, _) in PARAM_LIMITS.items()
                            if PARAMETERS[name].domain.kind == "real" and lo is not None
                            and lo > 0)


class _TableDomain:
    """A parameter table :class:`~bigkern.models.parameters.Domain` with the attributes of
    scikit-learn's ``Interval`` that the checks read (no scikit-learn import)."""

    def __init__(self, domain: Domain) -> None:
        self.domain = domain
        self.type = Integral if domain.kind == "integer" else Real
        self.left = domain.low
        self.right = domain.high

    def __contains__(self, x: object) -> bool:
        return x in self.domain


class UsageError(Exception):
    """A command line that parses but makes no sense: exit code 2, like argparse's errors."""


def _number(text: str) -> object:
    """``text`` as JSON (numbers, lists, true/false), else as a float (nan, inf), else text.

    A list is read item by item the same way, so ``[1,inf]`` is ``[1.0, inf]``.
    """
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    stripped = text.strip()
    if stripped.startswith("[") and stripped.endswith("]"):
        inner = stripped[1:-1].strip()
        return [_number(item.strip()) for item in inner.split(",")] if inner else []
    try:
        return float(text)
    except ValueError:
        return text


def parse_params(items: Sequence[str]) -> dict[str, object]:
    """``--param NAME=VALUE`` flags as a dict; a name given twice is refused.

    Parameters
    ----------
    items : sequence of str
        The flags' values, in order.

    Returns
    -------
    dict
        Name → value (JSON, or a float such as ``nan``, or the text as given).

    Raises
    ------
    UsageError
        A flag without ``=``, or one parameter given twice (the second would
        silently replace the first).
    """
    params: dict[str, object] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise UsageError(f"--param takes NAME=VALUE; got {item!r}")
        if name in params:
            raise UsageError(f"--param {name} is given twice ({name}={json.dumps(params[name])} "
                             f"and {item}); give it once: one value to fix it, or a JSON "
                             f"list such as {name}=[0.5,1,2] to search it")
        params[name] = _number(value)
    return params


def _domain(constraints: Sequence[object]) -> Interval | _TableDomain | None:
    """The numeric domain among a parameter's declared constraints (None: not a number)."""
    from sklearn.utils._param_validation import Interval  # scikit-learn only for --param

    for constraint in constraints:
        if isinstance(constraint, Interval):
            return constraint
        if constraint == "random_state":  # a seed: the table's domain of random_state
            return _TableDomain(PARAMETERS["random_state"].domain)
    return None


def _bounds(name: str, domain: Interval | _TableDomain) -> tuple[str, float, float]:
    """What ``name`` is and the range a command takes: the domain within :data:`PARAM_LIMITS`."""
    default = ("a whole number" if domain.type is Integral else "a number", None, None)
    what, lo, hi = PARAM_LIMITS.get(name, default)
    left = -math.inf if domain.left is None else domain.left
    right = math.inf if domain.right is None else domain.right
    return what, left if lo is None else max(lo, left), right if hi is None else min(hi, right)


def _check_value(cls: type, name: str, value: object, given: str) -> None:
    """Refuse a value outside the parameter's declared domain or its limits, naming the flag."""
    flag = f"--param {given}"
    constraints = cls._parameter_constraints[name]
    domain = _domain(constraints)
    if "boolean" in constraints and domain is None:
        if not isinstance(value, bool):
            raise UsageError(f"{flag}: {name} is true or false; got {value!r}")
        return
    if domain is not None and not (value is None and None in constraints):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise UsageError(f"{flag}: {name} takes a number; got {value!r}")
        _check_number(name, value, domain, flag)
    from sklearn.utils._param_validation import (
        InvalidParameterError,
        validate_parameter_constraints,
    )

    try:  # whatever else the estimator declares: options, None, a whole number as an int
        validate_parameter_constraints({name: constraints}, {name: value}, cls.__name__)
    except InvalidParameterError as err:
        raise UsageError(f"{flag}: {err}") from None


def _check_number(name: str, value: float, domain: Interval | _TableDomain,
                  flag: str) -> None:
    """Refuse a number outside ``domain`` narrowed to :data:`PARAM_LIMITS`, saying why."""
    what, lo, hi = _bounds(name, domain)
    if domain.type is Integral:
        if isinstance(value, float) and not value.is_integer():
            raise UsageError(f"{flag}: {name} is {what}, a whole number; got {value!r}")
        if not lo <= value <= hi:
            raise UsageError(f"{flag}: {name} is {what}, from {lo:.0f} to {hi:.0f}; got "
                             f"{value!r}")
        return
    x = float(value)
    if not math.isfinite(x):
        raise UsageError(f"{flag}: {name} must be a finite number; got {value!r}")
    if x != 0 and abs(x) < _TINY:
        raise UsageError(f"{flag}: {name} is denormal ({value!r}, below {_TINY:.3g}): "
                         f"{what} from {lo:g} to {hi:g} is needed")
    if domain.left >= 0 and (x < 0 or (x == 0 and x not in domain)):
        sign = "at least 0" if 0 in domain else "positive"
        raise UsageError(f"{flag}: {name} must be {sign} ({what}, from {lo:g} to {hi:g}); "
                         f"got {value!r}")
    if x not in domain:
        raise UsageError(f"{flag}: {name} is {what}, from {lo:g} to {hi:g}; got {value!r}")
    if not lo <= x <= hi:
        raise UsageError(f"{flag}: {name} is {what}, from {lo:g} to {hi:g}: {value!r} is "
                         f"{'too small' if x <= lo else 'too large'} to mean anything at "
                         f"double precision")


def check_params(cls: type, params: dict[str, object], *, lists: Collection[str] = (),
                 given: Mapping[str, str] | None = None) -> None:
    """Check every ``--param`` value of estimator ``cls`` before anything is read.

    Parameters
    ----------
    cls : type
        The estimator class (its ``_parameter_constraints`` give each parameter's domain).
    params : dict
        Parameters parsed by :func:`parse_params` (names already checked).
    lists : collection of str
        The parameters a JSON list (candidates to search) may give.
    given : mapping of str to str, optional
        Each parameter's flag as typed (``omega=1e300``), for the messages.

    Raises
    ------
    UsageError
        A value of the wrong type or out of range, or a list where one value
        is needed; the message names the flag.
    """
    for name, value in params.items():
        typed = (given or {}).get(name, f"{name}={json.dumps(value)}")
        if isinstance(value, list):
            if name not in lists:
                raise UsageError(f"--param {typed}: a list is a set of candidates to search; "
                                 f"here {name} takes one value")
            if not value:
                raise UsageError(f"--param {typed}: an empty list has no candidate")
            for item in value:
                _check_value(cls, name, item, typed)
        else:
            _check_value(cls, name, value, typed)


def check_magnitudes(params: dict[str, object], given: Mapping[str, str]) -> None:
    """Check the values of :data:`POSITIVE_PARAMS` without importing an estimator.

    The same messages as :func:`check_params` (which checks every parameter
    against the estimator's declarations, once it is imported); a number here
    is one value or each candidate of a list, and anything else is left to it.

    Raises
    ------
    UsageError
        A value that is not finite, not positive, denormal, or beyond the
        magnitudes of :data:`PARAM_LIMITS`, naming the flag.
    """
    for name, value in params.items():
        if name not in POSITIVE_PARAMS:
            continue
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, (int, float)) and not isinstance(item, bool):
                _check_number(name, item, _TableDomain(PARAMETERS[name].domain),
                              f"--param {given[name]}")


def check_counts(args: argparse.Namespace) -> None:
    """Check the counts, seeds and timeout of a parsed command line.

    Raises
    ------
    UsageError
        ``--workers`` or ``--scenes`` below 1, a ``--shape`` side below 1, a
        ``--seed`` outside ``[0, 2**32 − 1]``, or a ``--timeout`` or
        ``--connect-timeout`` that is not a positive finite number of seconds.
    """
    for flag in ("workers", "scenes"):
        value = getattr(args, flag, None)
        if value is not None and value < 1:
            raise UsageError(f"--{flag} must be at least 1; got {value}")
    shape = getattr(args, "shape", None)
    if shape is not None and min(shape) < 1:
        raise UsageError(f"--shape takes two sizes of at least 1 pixel; got "
                         f"{' '.join(map(str, shape))}")
    seed = getattr(args, "seed", None)
    if seed is not None and not 0 <= seed <= MAX_SEED:
        raise UsageError(f"--seed must be from 0 to {MAX_SEED} (2**32 - 1); got {seed}")
    for flag in ("timeout", "connect_timeout"):
        seconds = getattr(args, flag, None)
        if seconds is not None and not (math.isfinite(seconds) and seconds > 0):
            raise UsageError(f"--{flag.replace('_', '-')} is a number of seconds above 0; "
                             f"got {seconds:g}")


def validity_keywords(args: argparse.Namespace) -> dict[str, Any]:
    """``fill_values=`` and ``valid_ranges=`` keywords from ``--fill-value``, ``--valid-range``.

    Raises
    ------
    UsageError
        A flag that does not parse, or fill values given both for every feature
        and per feature.
    """
    fills: dict[str, list[float]] = {}
    everywhere: list[float] = []
    for item in args.fill_value:
        name, sep, value = item.rpartition("=")
        try:
            number = float(value)
        except ValueError:
            raise UsageError(f"--fill-value takes [FEATURE=]VALUE; got {item!r}") from None
        (fills.setdefault(name, []) if sep else everywhere).append(number)
    ranges: dict[str, tuple[float | None, float | None]] = {}
    for item in args.valid_range:
        name, sep, bounds = item.partition("=")
        lo, colon, hi = bounds.partition(":")
        try:
            if not (sep and colon and name):
                raise ValueError
            ranges[name] = (float(lo) if lo else None, float(hi) if hi else None)
        except ValueError:
            raise UsageError(f"--valid-range takes FEATURE=MIN:MAX; got {item!r}") from None
    out: dict[str, Any] = {}
    if fills and everywhere:
        raise UsageError("give --fill-value either for every feature or per feature "
                         "(FEATURE=VALUE), not both")
    if fills or everywhere:
        out["fill_values"] = fills or everywhere
    if ranges:
        out["valid_ranges"] = ranges
    return out
