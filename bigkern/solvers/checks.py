"""Argument checks shared by the solvers and the estimators built on them."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["check_ridges"]


def check_ridges(ridges: ArrayLike, name: str = "ridges") -> np.ndarray:
    """``ridges`` as a 1-D float array of positive finite values.

    A ValueError names the argument (``name``) and its first bad entry.
    """
    r = np.atleast_1d(np.asarray(ridges, dtype=np.float64))
    if r.ndim != 1 or r.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D sequence; got shape {r.shape}")
    bad = np.flatnonzero(~(np.isfinite(r) & (r > 0)))
    if bad.size:
        raise ValueError(f"{name} must be positive and finite; {name}[{bad[0]}] = "
                         f"{r[bad[0]].item()!r}")
    return r
