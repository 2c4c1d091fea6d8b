"""Random choices that do not depend on chunking: hashes of global pixel indices."""

from __future__ import annotations

from typing import Any

import dask.array as da
import numpy as np

__all__ = ["random_split", "sample_rows", "smallest_rows", "uniform_from_index"]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def uniform_from_index(index: np.ndarray, seed: int) -> np.ndarray:
    """A uniform [0, 1) number per integer index: splitmix64 of ``index`` and ``seed``.

    The same index and seed always give the same number, so a random split
    of pixels is identical whatever the chunking or the number of workers.
    """
    with np.errstate(over="ignore"):
        z = np.asarray(index, dtype=np.uint64) + np.uint64(seed & 0xFFFFFFFFFFFFFFFF) * _GOLDEN
        z = z + _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * _M1
        z = (z ^ (z >> np.uint64(27))) * _M2
        z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))


def random_split(
    index: Any, mask: Any = None, *, fraction: float = 0.5, seed: int = 0
) -> tuple[Any, Any]:
    """Split rows into two random parts (e.g. train / held-out halves).

    Parameters
    ----------
    index : array-like or dask array of int
        A global, chunking-independent id per row (``Samples.pixel``).
    mask : array-like of bool, optional
        Rows eligible for either part (e.g. labelled pixels).
    fraction : float
        Expected share of the first part.
    seed : int
        Seed.

    Returns
    -------
    first, second : boolean arrays (dask if ``index`` is dask)

    Examples
    --------
    >>> import dask.array as da
    >>> import numpy as np
    >>> from bigkern import random_split
    >>> pixel = np.arange(1000)
    >>> train, test = random_split(pixel, pixel % 10 != 0, fraction=0.3, seed=0)
    >>> int(train.sum()), int(test.sum()), bool((train & test).any())
    (265, 635, False)
    >>> lazy, _ = random_split(da.from_array(pixel, chunks=128), fraction=0.3, seed=0)
    >>> bool((lazy.compute()[pixel % 10 != 0] == train[pixel % 10 != 0]).all())  # any chunks
    True
    """
    if not 0 < fraction < 1:
        raise ValueError(f"fraction must be in (0, 1); got {fraction!r}")
    if isinstance(index, da.Array):
        u = index.map_blocks(uniform_from_index, seed, dtype=np.float64)
    else:
        u = uniform_from_index(index, seed)
    first = u < fraction
    second = ~first
    if mask is not None:
        first = first & mask
        second = second & mask
    return first, second


def _smallest_chunk(
    Xb: np.ndarray, yb: np.ndarray | None, mb: np.ndarray | None, ib: np.ndarray,
    *, n: int, seed: int,
) -> dict[str, np.ndarray]:
    from bigkern.reduce.passes import valid_rows

    valid, _ = valid_rows(Xb, mb)
    rows = np.flatnonzero(valid)
    u = uniform_from_index(np.asarray(ib)[rows], seed)
    if len(rows) > n:
        keep = np.argpartition(u, n - 1)[:n]
        rows, u = rows[keep], u[keep]
    part = {"u": u, "index": np.asarray(ib)[rows], "X": np.asarray(Xb)[rows]}
    part["y"] = None if yb is None else np.asarray(yb)[rows]
    return part


def smallest_rows(parts: list[dict[str, np.ndarray]], *, n: int) -> dict[str, np.ndarray]:
    """Merge partial samples: the ``n`` rows of smallest ``(u, index)`` key, sorted by it.

    Each part holds ``u`` (the rows' seeded uniforms), ``index`` (global row
    numbers), ``X`` and ``y`` (or ``None``); so is the result. The order does not
    depend on how the rows were split into parts.
    """
    u = np.concatenate([p["u"] for p in parts])
    index = np.concatenate([p["index"] for p in parts])
    order = np.lexsort((index, u))[:n]
    out = {"u": u[order], "index": index[order],
           "X": np.concatenate([p["X"] for p in parts])[order]}
    out["y"] = None if parts[0]["y"] is None else np.concatenate([p["y"] for p in parts])[order]
    return out


def sample_rows(
    X: Any, y: Any = None, *, n: int, index: Any = None, mask: Any = None, seed: int = 0
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """A uniform random sample of ``n`` usable rows, gathered to the client in one pass.

    The rows kept are those with the ``n`` smallest hashes of their global
    ``index`` (e.g. ``Samples.pixel``; by default the row number), so the
    sample is the same whatever the chunking. Only ``n`` rows per chunk ever
    leave a worker. Rows with a non-finite feature or a false ``mask`` are
    never chosen.

    Returns
    -------
    X_sample : ndarray (n, d)
    y_sample : ndarray (n,) or None
    index_sample : ndarray (n,)
        The global indices of the rows chosen, in sample order.

    Examples
    --------
    >>> import dask.array as da
    >>> import numpy as np
    >>> from bigkern import sample_rows
    >>> X = np.random.default_rng(0).normal(size=(300, 2))
    >>> Xs, ys, index = sample_rows(X, n=5, seed=0)
    >>> Xs.shape, ys is None, bool(np.array_equal(Xs, X[index]))
    ((5, 2), True, True)
    >>> again = sample_rows(da.from_array(X, chunks=(70, 2)), n=5, seed=0)[2]
    >>> bool(np.array_equal(again, index))  # the same rows, whatever the chunks
    True
    """
    from bigkern.reduce.passes import RowReduction, as_row_chunked, run_reduction

    if n < 1:
        raise ValueError(f"n must be at least 1; got {n}")
    X, y, mask = as_row_chunked(X, y, mask)
    if index is None:
        index = da.arange(X.shape[0], chunks=(X.chunks[0],), dtype=np.int64)
    _, index, _ = as_row_chunked(X, index)
    from functools import partial

    smallest = partial(smallest_rows, n=n)
    recipe = RowReduction("sample-rows", chunk=_smallest_chunk, combine=smallest,
                          finalize=lambda res: smallest([res]))  # sorted for a single chunk too
    res = run_reduction(recipe, X, y, mask, index, n=n, seed=seed,
                        label=f"sampling {n} rows")
    if len(res["u"]) < n:
        raise ValueError(f"only {len(res['u'])} usable rows; cannot sample {n}")
    return res["X"], res["y"], res["index"]
