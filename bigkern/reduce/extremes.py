"""Undeclared fill values: a large share of a feature's rows at one isolated extreme value.

A sentinel such as ``-9999`` that nobody declared is a number like any other,
and the validity rules (:mod:`bigkern.scenes.validity`) mask it only when a valid
range or a fill value says so. Its signature is plain, though: many rows hold
exactly the smallest (or largest) value of the feature, and that value lies
far from all the others. The first pass of every fit collects, per feature
and per chunk, the two smallest and the two largest distinct values and how
many rows hold the extreme ones (:func:`chunk_extremes`, one compiled sweep);
partials merge exactly (:meth:`ValueExtremes.__add__`), so the result does not
depend on chunking. :func:`warn_suspected_fills` then names each suspect in a
:class:`SuspectedFillWarning`: the feature, the value and its count.

A value is suspected when at least two rows, and at least
``bigkern.suspect_fill_fraction`` (1 %; 0 turns the check and its sweep off)
of the usable rows, hold it, and its distance to the nearest other value
exceeds the span of the values between the two extremes' neighbours:
``-9999`` beside NDAI values in [-3, 4.3] is, a feature whose zeros are simply
many is not, and neither is a two- or three-valued feature (its inner span is
zero, so there is nothing to be far from) nor one wild value.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numba
import numpy as np

from bigkern import config
from bigkern.errors import BigkernWarning
from bigkern.reduce.row_loops import SMALL_CHUNK_VALUES

__all__ = [
    "SuspectedFill",
    "SuspectedFillWarning",
    "ValueExtremes",
    "check_enabled",
    "chunk_extremes",
    "columns_extremes",
    "sorted_extremes",
    "warn_suspected_fills",
]

#: The key under which a first pass's row counts carry the :class:`ValueExtremes`.
EXTREMES_KEY = "extremes"


class SuspectedFillWarning(BigkernWarning):
    """Many rows of a feature hold one isolated extreme value: probably an undeclared fill."""


@functools.cache
def _extremes_kernel(d: int) -> Callable[..., tuple[np.ndarray, np.ndarray, np.ndarray,
                                                    np.ndarray, int]]:
    """The sweep compiled for ``d`` columns (a tuple of 1-D arrays, strided views of a
    row-major block included), the loop over them unrolled into straight-line code per
    row. With ``masked`` the rows are those
    where ``valid``; without, those where every column is finite (no mask array built)."""

    @numba.njit(nogil=True, cache=True)
    def extremes(cols, valid, masked):
        n = cols[0].shape[0]
        low = np.full((d, 2), np.inf)
        high = np.full((d, 2), -np.inf)
        n_low = np.zeros(d, np.int64)
        n_high = np.zeros(d, np.int64)
        used = 0
        for i in range(n):
            if masked:
                if not valid[i]:
                    continue
            else:
                finite = True
                for j in range(d):
                    if not np.isfinite(cols[j][i]):
                        finite = False
                        break
                if not finite:
                    continue
            used += 1
            for j in range(d):
                v = np.float64(cols[j][i])
                if v <= low[j, 1]:  # rarely true once two distinct values are seen
                    if v < low[j, 0]:
                        low[j, 1] = low[j, 0]
                        low[j, 0] = v
                        n_low[j] = 1
                    elif v == low[j, 0]:
                        n_low[j] += 1
                    else:
                        low[j, 1] = v
                if v >= high[j, 1]:
                    if v > high[j, 0]:
                        high[j, 1] = high[j, 0]
                        high[j, 0] = v
                        n_high[j] = 1
                    elif v == high[j, 0]:
                        n_high[j] += 1
                    else:
                        high[j, 1] = v
        return low, n_low, high, n_high, used

    return extremes


_NO_MASK = np.zeros(0, dtype=np.bool_)


def columns_extremes(columns: Sequence[np.ndarray]) -> ValueExtremes:
    """The :class:`ValueExtremes` of the rows where every one of ``columns`` is finite.

    One compiled sweep over the columns as they are (1-D views, strided or not, are not
    copied): what a prediction task runs on the features it stacked.

    Examples
    --------
    >>> import numpy as np
    >>> e = columns_extremes([np.array([1.0, 9999.0, 2.0, 9999.0]),
    ...                       np.array([0.5, 0.1, np.nan, 0.2])])
    >>> e.n, e.high[0].tolist(), e.n_high.tolist()
    (3, [9999.0, 1.0], [2, 1])
    """
    cols = [c if c.ndim == 1 else c.reshape(-1) for c in map(np.asarray, columns)]
    kind = np.result_type(*cols)
    if kind.kind != "f":
        kind = np.dtype(np.float64)
    cols = tuple(c if c.dtype == kind else c.astype(kind) for c in cols)
    low, n_low, high, n_high, used = _extremes_kernel(len(cols))(cols, _NO_MASK, False)
    return ValueExtremes(low, n_low, high, n_high, int(used))


def _extremes(X: np.ndarray, valid: np.ndarray) -> tuple[np.ndarray, np.ndarray,
                                                         np.ndarray, np.ndarray]:
    """Per column: the two smallest distinct values, the count of the smallest, and the
    same for the largest, over the rows where ``valid`` (±inf where there are too few).

    One compiled sweep. The two ends are written out rather than shared by a helper
    taking the arrays (for the smallest of ``X`` and of ``-X``): numba counts the
    references of the arrays passed on every call, which costs far more than the loop."""
    cols = tuple(X[:, j] for j in range(X.shape[1]))  # views: no copy
    return _extremes_kernel(X.shape[1])(cols, valid, True)[:4]


def _merge_end(a: np.ndarray, n_a: np.ndarray, b: np.ndarray, n_b: np.ndarray,
               lower: bool) -> tuple[np.ndarray, np.ndarray]:
    """Merge the (extreme, runner-up) pairs of two partials at one end, with the counts."""
    pick = np.minimum if lower else np.maximum
    first = pick(a[:, 0], b[:, 0])
    count = np.where(a[:, 0] == first, n_a, 0) + np.where(b[:, 0] == first, n_b, 0)
    # the runner-up: the best of both runners-up and of an extreme that lost
    far = np.inf if lower else -np.inf
    lost_a = np.where(a[:, 0] != first, a[:, 0], far)
    lost_b = np.where(b[:, 0] != first, b[:, 0], far)
    second = pick(pick(a[:, 1], b[:, 1]), pick(lost_a, lost_b))
    return np.column_stack([first, second]), count


@dataclass(frozen=True, eq=False)
class ValueExtremes:
    """The two smallest and two largest distinct values of each feature, with the counts of
    the smallest and the largest, over ``n`` usable rows (a mergeable partial)."""

    low: np.ndarray  # (d, 2): smallest, next smallest distinct (inf when absent)
    n_low: np.ndarray  # (d,): rows holding the smallest
    high: np.ndarray  # (d, 2): largest, next largest distinct (-inf when absent)
    n_high: np.ndarray  # (d,)
    n: int

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ValueExtremes):
            return NotImplemented
        return self.n == other.n and all(
            np.array_equal(getattr(self, k), getattr(other, k))
            for k in ("low", "n_low", "high", "n_high"))

    __hash__ = None  # type: ignore[assignment]  # mutable arrays inside

    def __add__(self, other: ValueExtremes) -> ValueExtremes:
        low, n_low = _merge_end(self.low, self.n_low, other.low, other.n_low, lower=True)
        high, n_high = _merge_end(self.high, self.n_high, other.high, other.n_high, lower=False)
        return ValueExtremes(low, n_low, high, n_high, self.n + other.n)

    def suspects(self, names: Sequence[str], fraction: float | None = None
                 ) -> list[SuspectedFill]:
        """The extremes that look like undeclared fill values (see the module docstring)."""
        share = float((config.get("suspect_fill_fraction") or 0) if fraction is None
                      else fraction)
        out: list[SuspectedFill] = []
        if self.n == 0 or share <= 0:  # 0 turns the check off
            return out
        d = len(names)
        (lo, lo2), (hi, hi2) = self.low[:d].T, self.high[:d].T
        n_low, n_high = self.n_low[:d], self.n_high[:d]
        # a derived feature is judged in its stored variable's units, where the fill was
        # written: log(9999) = 9.2 lies barely beyond logSD's span, 9999 far beyond SD's
        judged = [_stored_units(str(n), np.array([lo[j], lo2[j], hi[j], hi2[j]]))
                  for j, n in enumerate(names[:d])]
        slo, slo2, shi, shi2 = np.array(judged).T if d else (lo, lo2, hi, hi2)
        with np.errstate(invalid="ignore"):  # inf − inf where a feature has one value
            inner = shi2 - slo2  # the span between the extremes' neighbours
            spread = np.isfinite(inner) & (inner > 0)
            least = max(2, share * self.n)  # repeated, and far from the rest
            low_hit = spread & (n_low >= least) & (slo2 - slo > inner)
            high_hit = spread & (n_high >= least) & (shi - shi2 > inner)
        for j in np.flatnonzero(low_hit | high_hit):  # every feature at once: few hits
            if low_hit[j]:
                out.append(SuspectedFill(str(names[j]), float(lo[j]), int(n_low[j]),
                                         self.n, "below", float(lo2[j]), float(hi[j])))
            if high_hit[j]:
                out.append(SuspectedFill(str(names[j]), float(hi[j]), int(n_high[j]),
                                         self.n, "above", float(lo[j]), float(hi2[j])))
        return out


def _stored_variable(feature: str, value: float) -> tuple[str, float]:
    from bigkern.features.variables import DERIVED, stored_value

    if feature in DERIVED and (raw := stored_value(feature, value)) is not None:
        return DERIVED[feature][0], raw
    return feature, value


def _stored_units(feature: str, values: np.ndarray) -> np.ndarray:
    """``values`` of ``feature`` in its stored variable's units (itself unless derived);
    the derivations are monotone, so extremes stay extremes. Infinities (no value) stay."""
    from bigkern.features.variables import DERIVED, stored_value

    if feature not in DERIVED:
        return values
    out = values.astype(np.float64).copy()
    for i, v in enumerate(out):
        if np.isfinite(v) and (raw := stored_value(feature, float(v))) is not None:
            out[i] = raw
    return out


@dataclass(frozen=True)
class SuspectedFill:
    """One suspect: ``count`` of ``n`` rows of ``feature`` hold ``value``, far ``side`` all
    the others, which lie in ``[rest_min, rest_max]``."""

    feature: str
    value: float
    count: int
    n: int
    side: str
    rest_min: float
    rest_max: float

    def stored(self) -> tuple[str, float]:
        """The stored variable to declare the fill on, and its value there: the feature
        itself, or for a derived feature its source (``SD`` and ``exp(value)`` for
        ``logSD``, to about six digits).

        Examples
        --------
        >>> import math
        >>> SuspectedFill("logSD", math.log(9999.0), 5, 100, "above", 0.0, 3.0).stored()
        ('SD', 9999.0...)
        """
        return _stored_variable(self.feature, self.value)

    def message(self) -> str:
        """The warning's text: what, where, how many, and what to do.

        A derived feature's fill is declared on the variable it is derived from
        (``logSD``'s on ``SD``), with the stored value the message names.
        """
        v = f"{self.value:g}"
        name, raw = self.stored()
        declared = f"{raw:g}"
        of = f" (where {name} is about {declared})" if name != self.feature else ""
        return (f"feature {self.feature!r}: {self.count:,} of {self.n:,} usable rows "
                f"({self.count / self.n:.1%}) hold the value {v}{of}, far {self.side} all the "
                f"others ({self.rest_min:g} … {self.rest_max:g}): the signature of an "
                f"undeclared fill value. If it is one, declare it (fill_values="
                f"{{{name!r}: {declared}}}, CLI --fill-value {name}={declared}, or a CF "
                f"_FillValue attribute on {name}) or give {name} a valid range; if it is "
                f"data, set bigkern.suspect_fill_fraction higher to silence this")


def check_enabled() -> bool:
    """Whether first passes collect extremes: ``bigkern.suspect_fill_fraction`` > 0.

    Read where the chunk runs (a worker's settings, e.g. ``BIGKERN_SUSPECT_FILL_FRACTION=0``
    in its environment); 0 spares the sweep, one more pass over each chunk's values in
    memory.
    """
    return float(config.get("suspect_fill_fraction") or 0) > 0


def chunk_extremes(X: np.ndarray, valid: np.ndarray) -> ValueExtremes:
    """The :class:`ValueExtremes` of the ``valid`` rows of one chunk (one compiled sweep).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[-9999.0], [1.0], [2.0], [-9999.0], [3.0]])
    >>> e = chunk_extremes(X, np.ones(5, bool))
    >>> e.low.tolist(), e.n_low.tolist(), e.high.tolist()
    ([[-9999.0, 1.0]], [2], [[3.0, 2.0]])
    """
    valid = np.ascontiguousarray(valid, dtype=np.bool_)
    sweep = _extremes_small if X.size <= SMALL_CHUNK_VALUES else _extremes
    low, n_low, high, n_high = sweep(X, valid)
    return ValueExtremes(low, n_low, high, n_high, int(np.count_nonzero(valid)))


def _extremes_small(X: np.ndarray, valid: np.ndarray) -> tuple[np.ndarray, np.ndarray,
                                                                np.ndarray, np.ndarray]:
    """:func:`_extremes` in numpy, for chunks too small to pay numba's start-up."""
    d = X.shape[1]
    low, high = np.full((d, 2), np.inf), np.full((d, 2), -np.inf)
    n_low, n_high = np.zeros(d, np.int64), np.zeros(d, np.int64)
    rows = np.sort(np.asarray(X[valid], dtype=np.float64), axis=0)  # every column at once
    n = len(rows)
    if n == 0:
        return low, n_low, high, n_high
    low[:, 0], high[:, 0] = rows[0], rows[-1]
    n_low[:] = np.count_nonzero(rows == rows[0], axis=0)
    n_high[:] = np.count_nonzero(rows == rows[-1], axis=0)
    more = n_low < n  # a second distinct value: the next one up, and down
    cols = np.flatnonzero(more)
    low[cols, 1] = rows[n_low[cols], cols]
    high[cols, 1] = rows[n - 1 - n_high[cols], cols]
    return low, n_low, high, n_high


def sorted_extremes(columns: Sequence[np.ndarray]) -> ValueExtremes:
    """The :class:`ValueExtremes` of usable values already sorted, one increasing array per
    feature (all of one length): what :func:`chunk_extremes` gives for those rows, read off
    the ends of each column with no sweep. A zero among them is +0.0.

    Examples
    --------
    >>> import numpy as np
    >>> e = sorted_extremes([np.array([-9999.0, -9999.0, 1.0, 2.0, 3.0])])
    >>> e.low.tolist(), e.n_low.tolist(), e.high.tolist(), e.n_high.tolist()
    ([[-9999.0, 1.0]], [2], [[3.0, 2.0]], [1])
    """
    d = len(columns)
    low, high = np.full((d, 2), np.inf), np.full((d, 2), -np.inf)
    n_low, n_high = np.zeros(d, np.int64), np.zeros(d, np.int64)
    n = len(columns[0]) if d else 0
    if n == 0:
        return ValueExtremes(low, n_low, high, n_high, 0)
    for j, col in enumerate(columns):
        first, last = col[0], col[-1]
        # a zero as +0.0: a sort leaves -0.0 and +0.0 in no particular order
        low[j, 0], high[j, 0] = first + 0.0, last + 0.0
        # the rows equal to either end (-0.0 and +0.0 alike, as ``==`` counts them)
        n_low[j] = np.searchsorted(col, first, side="right")
        n_high[j] = n - np.searchsorted(col, last, side="left")
        if n_low[j] < n:  # a second distinct value: the next one up, and down
            low[j, 1] = col[n_low[j]] + 0.0
            high[j, 1] = col[n - 1 - n_high[j]] + 0.0
    return ValueExtremes(low, n_low, high, n_high, n)


def warn_suspected_fills(extremes: ValueExtremes | None, names: Sequence[str], *,
                         stacklevel: int = 3) -> list[SuspectedFill]:
    """Warn (:class:`SuspectedFillWarning`) once per suspected fill value; return them."""
    if extremes is None:
        return []
    found = extremes.suspects(names)
    for suspect in found:
        warnings.warn(suspect.message(), SuspectedFillWarning, stacklevel=stacklevel)
    return found
