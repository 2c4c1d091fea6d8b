"""One task per row chunk, with the chunk's reads fused into it.

Every pass applies a function to each row chunk of ``X`` (and of ``y`` and
``mask``). Built from :meth:`dask.array.Array.to_delayed` blocks, the task of
chunk ``i`` depends on separate tasks that read ``X[i]`` and ``y[i]``: the
scheduler places those reads independently, so a 100 MB block of ``X`` read by
one worker is often copied to the worker that read ``y[i]``: a copy of the
whole block between workers, and chunks shared unevenly between the workers by
the end of a pass.

:func:`row_partials` builds the tasks as one :func:`dask.array.blockwise`
layer instead, so that dask's blockwise fusion folds the reads of the chunk
(zarr, ``from_array`` ...) into the task itself when they are blockwise
layers: the read and the work on a chunk are one task, on one worker. Inputs
that do not fuse (a rechunked or persisted array) are depended on as separate tasks.
The task returns the function's result as is (a dict, a tuple ...): the object
"array" is never assembled, its blocks are taken one by one with
:meth:`~dask.array.Array.to_delayed`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import dask.array as da
import numpy as np
from dask.base import tokenize
from dask.delayed import Delayed
from dask.layers import ArrayValuesDep

__all__ = ["row_partials"]


def _call(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    return func(*args, **kwargs)


def _call_with_start(func: Callable[..., Any], start: int, *args: Any, **kwargs: Any) -> Any:
    return func(*args, start=int(start), **kwargs)


def row_partials(
    func: Callable[..., Any],
    X: da.Array,
    *others: da.Array | None,
    name: str,
    starts: Sequence[int] | None = None,
    **kwargs: Any,
) -> list[Delayed]:
    """Apply ``func(X_chunk, *other_chunks, **kwargs)`` to every row chunk; one Delayed each.

    Parameters
    ----------
    func : callable
        Pure function of one row chunk; its result is returned as is.
    X : dask.array.Array, shape (n, d)
        Samples, in one chunk along the features.
    *others : dask.array.Array of shape (n,), or None
        Arrays sharing ``X``'s row chunks (labels, mask); ``None`` is passed as
        ``None``.
    name : str
        Prefix of the tasks' keys (what the dashboard and the task stream show).
    starts : sequence of int, optional
        When given, chunk ``i`` also gets ``start=starts[i]``.
    **kwargs
        Passed to every call (wrap a large array in one :func:`dask.delayed`
        so that it travels once, not once per task).

    Returns
    -------
    list of Delayed
        One per row chunk, in order; the reads of the chunk are fused into its
        task where dask's blockwise optimization can fuse them.
    """
    if X.ndim != 2 or X.numblocks[1] != 1:
        raise ValueError(f"X must be 2-D in one chunk along the features; got chunks {X.chunks}")
    n_blocks = X.numblocks[0]
    pairs: list[Any] = [X, "ij"]
    for o in others:
        if o is None:
            pairs += [None, None]
            continue
        if o.ndim != 1 or o.chunks[0] != X.chunks[0]:
            raise ValueError(
                f"an array passed with X must be 1-D with X's row chunks; got shape {o.shape}, "
                f"chunks {o.chunks} for X's row chunks of {X.chunks[0]}")
        pairs += [o, "i"]
    token = tokenize(func, X.name, [None if o is None else o.name for o in others], starts,
                     kwargs)
    if starts is None:
        head: list[Any] = [func, None]
        call: Callable[..., Any] = _call
    else:
        values = np.asarray(starts, dtype=np.int64)
        if values.shape != (n_blocks,):
            raise ValueError(f"starts must give one row number per chunk ({n_blocks}); "
                             f"got {values.shape[0]}")
        head = [func, None, ArrayValuesDep((X.chunks[0],), values), "i"]
        call = _call_with_start
    tasks = da.blockwise(
        call, "ij", *head, *pairs, dtype=object, adjust_chunks={"i": 1, "j": 1},
        meta=np.empty((0, 0), dtype=object), align_arrays=False, concatenate=False,
        name=f"{name}-{token}", **kwargs)
    return list(tasks.to_delayed(optimize_graph=True).ravel())
