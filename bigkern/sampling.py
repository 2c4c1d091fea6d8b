"""Random choices that do not depend on chunking: hashes of global pixel indices."""

from __future__ import annotations

from typing import Any

import dask.array as da
import numpy as np

__all__ = ["random_split", "uniform_from_index"]

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
