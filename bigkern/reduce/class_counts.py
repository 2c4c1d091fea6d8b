"""k classes in a chunk of rows: each row's class code, and the rows of each class per bin.

:func:`class_codes` turns a chunk's labels into codes ``0 … k−1`` (the place of each
label in ``classes``), refusing a usable row whose label is none of them;
:func:`bin_class_counts` counts the codes per bin. The binning of k-class labels
(:mod:`bigkern.reduce.binning.partials`, the one-read plan) reads them; the compiled
loops are in :mod:`bigkern.reduce.class_loops`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from bigkern.errors import LabelError
from bigkern.reduce.class_loops import (
    class_counts_by_slot,
    class_counts_sorted,
    class_index,
    class_index_lut,
)

__all__ = ["bin_class_counts", "class_codes"]


def class_codes(yb: np.ndarray, valid: np.ndarray, classes: Sequence[Any]) -> np.ndarray:
    """Index in ``classes`` of each valid row's label (0 for the other rows).

    uint8 up to 256 classes, else int32. A valid row whose label is not one of
    ``classes`` raises :class:`~bigkern.errors.LabelError` naming it.

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern.reduce.class_counts import class_codes
    >>> class_codes(np.array([3, 1, 2, 9]), np.array([True, True, True, False]), (1, 2, 3))
    array([2, 0, 1, 0], dtype=uint8)
    """
    y = np.asarray(yb)
    k = len(classes)
    dtype = np.uint8 if k <= 256 else np.int32
    codes = np.zeros(len(y), dtype=dtype)
    typed = _typed_table(classes, y.dtype)
    if typed is not None and y.ndim == 1 and len(y) == len(valid):  # compiled: one sweep
        table, order = typed
        y = np.ascontiguousarray(y)
        lo, hi = (int(table[0]), int(table[-1])) if y.dtype.kind in "iu" else (0, -1)
        if y.dtype.kind in "iu" and hi - lo < 1 << 16:  # small integers: a table look-up
            lut = np.full(hi - lo + 1, -1, dtype=np.int64)
            lut[table.astype(np.int64) - lo] = order
            row = class_index_lut(y, valid, lo, lut, codes)
        else:
            row = class_index(y, valid, table, order, codes)
        if row >= 0:
            raise LabelError(f"label value {y[row].item()!r} (row {row} of its chunk) is not "
                             f"one of the classes {list(classes)}")
        return codes
    found = np.zeros(len(y), dtype=bool)
    table = np.asarray(classes)
    if _same_family(table.dtype, y.dtype):  # one sorted look-up for all classes
        order = np.argsort(table, kind="stable")
        pos = np.minimum(np.searchsorted(table[order], y), k - 1)
        found = table[order][pos] == y
        codes = np.where(found, order[pos], 0).astype(dtype)
    else:  # labels and classes that do not order together (e.g. mixed types): one by one
        for j, c in enumerate(classes):
            hit = y == c
            codes[hit] = j
            found |= hit
    unknown = valid & ~np.asarray(found, dtype=bool)
    if unknown.any():
        row = int(np.flatnonzero(unknown)[0])
        raise LabelError(f"label value {y[row].item()!r} (row {row} of its chunk) is not one "
                         f"of the classes {list(classes)}")
    codes[~valid] = 0
    return codes


def _typed_table(classes: Sequence[Any], dtype: np.dtype
                 ) -> tuple[np.ndarray, np.ndarray] | None:
    """The classes sorted as numbers of the labels' numeric ``dtype``, and the index of
    each in ``classes``; None unless every class converts exactly (and is not NaN)."""
    if dtype.kind not in "iuf":
        return None
    try:
        typed = np.array([dtype.type(c) for c in classes], dtype=dtype)
    except (TypeError, ValueError, OverflowError):
        return None
    if not all(t == c for t, c in zip(typed.tolist(), classes, strict=True)):
        return None  # NaN, or a class the dtype cannot hold exactly
    order = np.argsort(typed, kind="stable")
    return typed[order], order.astype(np.int64)


def _same_family(a: np.dtype, b: np.dtype) -> bool:
    """Whether values of dtypes ``a`` and ``b`` sort together: both numbers or both text."""
    return (a.kind in "biuf" and b.kind in "biuf") or (a.kind in "US" and b.kind == a.kind)


def bin_class_counts(ids: np.ndarray, codes: np.ndarray, occupied: np.ndarray,
                     n_classes: int, order: np.ndarray | None = None) -> np.ndarray:
    """Per occupied bin (sorted ``occupied`` ids), the rows of each class: (bins, n_classes).

    Rows with ``ids < 0`` are not counted; ``codes`` are the rows' class
    indices (:func:`class_codes`). One sweep of the rows, through a table of
    bin ids when they are few enough, else in ``order`` (the rows with
    ``ids >= 0`` sorted by id; computed when not given).
    """
    m = len(occupied)
    if m == 0:
        return np.zeros((0, n_classes), dtype=np.int64)
    if int(occupied[-1]) < max(1 << 16, 4 * len(ids)):  # a bin id → place table, one sweep
        slot = np.zeros(int(occupied[-1]) + 1, dtype=np.int64)
        slot[occupied] = np.arange(m)
        return class_counts_by_slot(ids, codes, slot, m, n_classes)
    if order is None:
        order = np.flatnonzero(ids >= 0)
        order = order[np.argsort(ids[order], kind="stable")]
    return class_counts_sorted(ids, codes, order, m, n_classes)
