"""Alignment A(C) and sparsity S(C) of a compactly supported kernel, streamed by row blocks.

For a radial kernel ``k`` and its compactly supported version
``k_C = Φ_C · k`` (Zhang, Genton & Liu, Theorem 1 and eq. 7)::

    A(C) = Σ Φ_C K² / sqrt(Σ K² · Σ Φ_C² K²)        (0/0 = 0)
    S(C) = #{(i, j): ‖x_i − x_j‖ ≥ C} / n²           (the zero entries of K_C)

Every sum runs over all n² pairs, so each row block of ``X`` is paired with all
of ``X`` and only three sums and a count per candidate ``C`` are kept: the
n × n matrix is never stored, and a whole grid of ``C`` costs one sweep. For a
dask array the row blocks are tasks, tree-reduced in a fixed order (zero
counts are exact integers), so the curves do not depend on the number of
workers; other chunkings change them by float rounding only.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import dask
import dask.array as da
import numpy as np
import xarray as xr

from bigkern.cluster import compute
from bigkern.kernels import CompactSupport, pairwise_distances, row_blocks
from bigkern.reduce._tree import as_row_chunked, require_finite_rows, tree_reduce

__all__ = ["alignment_sparsity"]


def _block_sums(
    X: np.ndarray, start: int, stop: int, *, kernel: Any, Cs: np.ndarray, nu: int,
    block_rows: int,
) -> dict[str, np.ndarray]:
    """The sums of rows ``start:stop`` of ``X`` paired with all rows of ``X``."""
    k2 = 0.0
    cross = np.zeros(len(Cs))
    tapered = np.zeros(len(Cs))
    zeros = np.zeros(len(Cs), dtype=np.int64)
    for sl in row_blocks(stop - start, block_rows):
        r = pairwise_distances(X[start + sl.start:start + sl.stop], X)
        K2 = kernel.radial(r)
        K2 *= K2
        k2 += float(K2.sum())
        for c, C in enumerate(Cs):
            phi = np.maximum(1.0 - r / C, 0.0) ** nu
            phiK2 = phi * K2
            cross[c] += float(phiK2.sum())
            tapered[c] += float((phi * phiK2).sum())
            zeros[c] += int(np.count_nonzero(r >= C))
    return {"k2": np.array([k2]), "cross": cross, "tapered": tapered, "zeros": zeros}


def _add(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    return {k: np.sum([p[k] for p in parts], axis=0) for k in parts[0]}


def alignment_sparsity(
    X: Any,
    kernel: Any,
    Cs: Sequence[float],
    *,
    nu: int | None = None,
    block_rows: int = 512,
) -> xr.Dataset:
    """Exact alignment ``A(C)`` and sparsity ``S(C)`` curves over a grid of support radii.

    Parameters
    ----------
    X : array-like or dask array, shape (n, d)
        Samples (standardized as the kernel expects); every row must be finite.
    kernel : radial kernel
        The dense kernel ``k`` (e.g. :class:`~bigkern.kernels.Gaussian`), or a
        :class:`~bigkern.kernels.CompactSupport` whose inner kernel and ``nu`` are used.
    Cs : sequence of float
        Candidate support radii (> 0).
    nu : int, optional
        Taper power; default the smallest integer ≥ (d + 1) / 2.
    block_rows : int
        Rows paired with all of ``X`` at once (memory: ``block_rows × n`` floats).

    Returns
    -------
    xarray.Dataset
        ``alignment (C)``, ``sparsity (C)`` and ``nonzeros (C)`` (stored entries of
        ``K_C``), attrs ``n``, ``nu``.
    """
    if isinstance(kernel, CompactSupport):
        nu = kernel.nu if nu is None else nu
        kernel = kernel.kernel
    Cs = np.asarray(Cs, dtype=np.float64).ravel()
    if not len(Cs) or not np.all(np.isfinite(Cs) & (Cs > 0)):
        raise ValueError(f"the support radii C must be positive finite numbers; got {Cs}")
    lazy = isinstance(X, da.Array)
    Xd = as_row_chunked(X)[0] if lazy else None
    d = int(X.shape[1])
    nu = CompactSupport(kernel, float(Cs[0]), nu).nu_for(d)
    if lazy:
        # all of X in one node, read once and sent once per worker; each task takes the
        # rows of one chunk from it
        full = Xd.rechunk({0: -1}).to_delayed().ravel()[0]
        checked = dask.delayed(require_finite_rows, pure=True)(full, "X", "alignment")
        bounds = np.cumsum((0, *Xd.chunks[0]))
        parts = [dask.delayed(_block_sums, pure=True)(
            checked, int(a), int(b), kernel=kernel, Cs=Cs, nu=nu, block_rows=block_rows)
            for a, b in itertools.pairwise(bounds)]
        (sums,) = compute(tree_reduce(parts, _add, name="alignment-combine"),
                          label="alignment and sparsity")
    else:
        Xm = require_finite_rows(X, "X", "alignment")
        sums = _block_sums(Xm, 0, len(Xm), kernel=kernel, Cs=Cs, nu=nu, block_rows=block_rows)
    n = int(X.shape[0])
    denom = np.sqrt(sums["k2"][0] * sums["tapered"])
    with np.errstate(invalid="ignore", divide="ignore"):
        alignment = np.where(denom > 0, sums["cross"] / denom, 0.0)
    nonzeros = n * n - sums["zeros"]
    return xr.Dataset(
        {
            "alignment": ("C", alignment),
            "sparsity": ("C", sums["zeros"] / float(n * n) if n else np.zeros(len(Cs))),
            "nonzeros": ("C", nonzeros),
        },
        coords={"C": Cs},
        attrs={"n": n, "nu": nu, "kernel": repr(kernel)},
    )
