"""Chunk → combine → aggregate reductions over the row chunks of sample arrays.

Every distributed pass of bigkern has the same shape: a pure function of one
row chunk (of ``X``, and of ``y``/``mask`` when given) returns a small partial
result; partials are merged pairwise-associatively in a tree of fan-in
``split_every``; the root is turned into the final result. Partials are small
Python objects (dicts of numpy arrays), never n-sized.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import dask
import dask.array as da
import numpy as np
from dask.delayed import Delayed

from bigkern import config

__all__ = ["as_row_chunked", "row_partials", "tree_reduce"]


def as_row_chunked(
    X: Any, y: Any = None, mask: Any = None
) -> tuple[da.Array, da.Array | None, da.Array | None]:
    """Return ``X`` (n, d) and optional ``y``, ``mask`` (n,) as dask arrays with equal row chunks.

    ``X`` is rechunked to a single chunk along features; ``y`` and ``mask``
    take ``X``'s row chunks. numpy inputs become one dask chunk per ~100 MB.
    """
    if not isinstance(X, da.Array):
        X = np.asarray(X)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D (sample, feature); got shape {X.shape}")
        rows = max(1, int(config.get("chunk_bytes")) // max(1, X.itemsize * X.shape[1]))
        X = da.from_array(X, chunks=(rows, -1))
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (sample, feature); got shape {X.shape}")
    if len(X.chunks[1]) != 1:
        X = X.rechunk({1: -1})
    out = [X]
    for name, arr in (("y", y), ("mask", mask)):
        if arr is None:
            out.append(None)
            continue
        if not isinstance(arr, da.Array):
            arr = da.from_array(np.asarray(arr), chunks=(X.chunks[0],))
        if arr.ndim != 1 or arr.shape[0] != X.shape[0]:
            raise ValueError(
                f"{name} must be 1-D with one entry per row of X ({X.shape[0]}); "
                f"got shape {arr.shape}"
            )
        if arr.chunks[0] != X.chunks[0]:
            arr = arr.rechunk((X.chunks[0],))
        out.append(arr)
    return out[0], out[1], out[2]


def row_partials(
    func: Callable[..., Any],
    X: da.Array,
    *others: da.Array | None,
    name: str,
    **kwargs: Any,
) -> list[Delayed]:
    """Apply ``func(X_chunk, *other_chunks, **kwargs)`` to every row chunk; one Delayed each.

    ``others`` that are ``None`` are passed as ``None``. The blocks keep their
    graph keys (``optimize_graph=False``): when ``X`` and ``y`` are slices of one
    source, a separately optimized graph per array would read each chunk of the
    source once per array.
    """
    x_blocks = X.to_delayed(optimize_graph=False).ravel()
    other_blocks = [
        [None] * len(x_blocks) if o is None else list(o.to_delayed(optimize_graph=False).ravel())
        for o in others
    ]
    fn = dask.delayed(func, pure=True, name=name)
    return [fn(xb, *(ob[i] for ob in other_blocks), **kwargs) for i, xb in enumerate(x_blocks)]


def tree_reduce(
    partials: Sequence[Delayed],
    combine: Callable[[list[Any]], Any],
    *,
    split_every: int | None = None,
    name: str = "combine",
) -> Delayed:
    """Merge ``partials`` in a tree of fan-in ``split_every`` with ``combine(list) -> partial``."""
    if not partials:
        raise ValueError("nothing to reduce: the input has no chunks")
    k = max(2, int(split_every or config.get("split_every")))
    level = list(partials)
    fn = dask.delayed(combine, pure=True, name=name)
    while len(level) > 1:
        level = [fn(level[i : i + k]) for i in range(0, len(level), k)]
    return level[0]


def valid_rows(
    Xb: np.ndarray, mb: np.ndarray | None
) -> tuple[np.ndarray, dict[str, int]]:
    """Rows of a chunk usable for fitting, and counts of the rows left out.

    A row is used when its mask entry is true (or no mask is given) and every
    feature is finite. Left-out rows are counted as ``masked`` (mask false),
    ``absent`` (every feature non-finite: no data there) or ``nonfinite``
    (some but not all features non-finite).
    """
    from bigkern.reduce._kernels import row_status

    X = as_float_block(Xb)
    use_mask = mb is not None
    m = np.ascontiguousarray(mb, dtype=bool) if use_mask else np.zeros(0, dtype=bool)
    valid, c = row_status(X, m, use_mask)
    counts = {"rows": int(c[0]), "masked": int(c[1]), "absent": int(c[2]),
              "nonfinite": int(c[3]), "valid": int(c[4])}
    return valid, counts


def require_finite_rows(X: Any, what: str, needed_for: str, offset: int = 0) -> np.ndarray:
    """``X`` as a 2-D float64 array; a row with a non-finite feature raises, naming it.

    For methods that cannot leave rows out (a Gram matrix has one row per sample).
    ``offset`` is the global number of ``X``'s first row (for a chunk).
    """
    from bigkern.errors import DataQualityError

    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"{what} must be 2-D (sample, feature); got shape {X.shape}")
    bad = ~np.isfinite(X).all(axis=1)
    if bad.any():
        rows = np.flatnonzero(bad)
        raise DataQualityError(
            f"{what} has {len(rows)} row(s) with a non-finite feature (first: row "
            f"{offset + int(rows[0])}); "
            f"{needed_for} needs finite features: drop or impute them first"
        )
    return X


def as_float_block(Xb: np.ndarray) -> np.ndarray:
    """A C-contiguous float32/float64 copy-if-needed of a chunk."""
    X = np.asarray(Xb)
    if X.dtype not in (np.float32, np.float64):
        X = X.astype(np.float64)
    return np.ascontiguousarray(X)


def add_counts(parts: Sequence[dict[str, int]]) -> dict[str, int]:
    """Sum dicts of row counts key by key."""
    out: dict[str, int] = {}
    for p in parts:
        for k, v in p.items():
            out[k] = out.get(k, 0) + v
    return out
