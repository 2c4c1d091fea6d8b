"""Sparse Gram matrices of compactly supported kernels, without the dense matrix.

Only pairs closer than the support radius ``C`` (``kernel.radius``) are ever evaluated. In memory
they are found by a k-d tree (:meth:`scipy.spatial.cKDTree.sparse_distance_matrix`);
for a dask array (persisted first, so that the data is read once), the bounding
boxes of the row chunks are computed first (one small pass), and only pairs of
chunks whose boxes come closer than ``C`` are paired, each pair on a worker with
its own k-d trees. The partial triplets are assembled into one CSR matrix on the
client: the result is the small system.
Entries do not depend on the chunking (each distance is computed by the same
arithmetic, feature by feature, whichever pair of chunks holds it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import dask
import dask.array as da
import numba
import numpy as np
import scipy.sparse as sp
from scipy.spatial import cKDTree

from bigkern.cluster.compute import compute
from bigkern.kernels import CompactSupport
from bigkern.reduce.passes import as_row_chunked, require_finite_rows

__all__ = ["GramReport", "gram_report", "sparse_gram"]


@dataclass(frozen=True)
class GramReport:
    """Size of a sparse Gram matrix against its dense counterpart."""

    shape: tuple[int, int]
    nnz: int
    sparsity: float  # fraction of zero entries, S(C) of Zhang, Genton & Liu
    sparse_bytes: int  # data + indices + indptr of the CSR matrix
    dense_bytes: int  # the float64 dense matrix

    def __str__(self) -> str:
        return (f"{self.shape[0]}x{self.shape[1]} Gram: {self.nnz:,} nonzeros, sparsity "
                f"{self.sparsity:.1%}, {self.sparse_bytes / 1e6:.1f} MB sparse vs "
                f"{self.dense_bytes / 1e6:.1f} MB dense")


def gram_report(K: sp.spmatrix) -> GramReport:
    """Nonzeros, sparsity and memory of a sparse Gram matrix.

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern import CompactSupport, Gaussian, gram_report, sparse_gram
    >>> X = np.random.default_rng(0).normal(size=(300, 2))
    >>> report = gram_report(sparse_gram(X, CompactSupport(Gaussian(omega=1.0), radius=1.0)))
    >>> report.shape, report.dense_bytes, round(report.sparsity, 2)
    ((300, 300), 720000, 0.77)
    >>> print(report)
    300x300 Gram: 20,270 nonzeros, sparsity 77.5%, 0.2 MB sparse vs 0.7 MB dense
    """
    K = sp.csr_matrix(K)
    n, m = K.shape
    size = n * m
    return GramReport(
        shape=(n, m), nnz=int(K.nnz), sparsity=1.0 - K.nnz / size if size else 0.0,
        sparse_bytes=int(K.data.nbytes + K.indices.nbytes + K.indptr.nbytes),
        dense_bytes=8 * size,
    )


def _pairs(A: np.ndarray, B: np.ndarray, kernel: CompactSupport, d: int) -> tuple[np.ndarray, ...]:
    """(i, j, k_C) of the pairs of rows of ``A`` and ``B`` closer than ``C``."""
    if not len(A) or not len(B):
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0)
    found = cKDTree(A).sparse_distance_matrix(cKDTree(B), kernel.radius, output_type="ndarray")
    near = found["v"] < kernel.radius  # at distance C the taper is 0
    i = found["i"][near].astype(np.int64)
    j = found["j"][near].astype(np.int64)
    # recompute the distance feature by feature: the same arithmetic for any chunking
    r = _pair_distances(A, B, i, j)
    return i, j, kernel.radial(r, d)


@numba.njit(nogil=True, cache=True)
def _pair_distances(A: np.ndarray, B: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """‖A[i[p]] − B[j[p]]‖ for every pair ``p``, summed feature by feature in order."""
    out = np.empty(len(i))
    for p in range(len(i)):
        total = 0.0
        for f in range(A.shape[1]):
            diff = A[i[p], f] - B[j[p], f]
            total += diff * diff
        out[p] = np.sqrt(total)
    return out


def _block_pair(A: np.ndarray, B: np.ndarray, *, kernel: CompactSupport, d: int,
                offsets: tuple[int, int]) -> tuple[np.ndarray, ...]:
    """Global (i, j, k_C) of two blocks of rows, already checked finite."""
    A = np.asarray(A, dtype=np.float64)
    B = np.asarray(B, dtype=np.float64)
    i, j, v = _pairs(A, B, kernel, d)
    keep = v != 0  # underflowed kernel values are zeros too
    return i[keep] + offsets[0], j[keep] + offsets[1], v[keep]


def _boxes(block: np.ndarray, block_info: dict | None = None) -> np.ndarray:
    """Bounding box of a chunk's rows; checks them finite (every chunk passes here once)."""
    start = block_info[0]["array-location"][0][0] if block_info else 0
    block = require_finite_rows(block, f"the chunk starting at row {start}", "a Gram matrix",
                                offset=start)
    if not len(block):
        return np.full((1, 2, block.shape[1]), np.nan)
    return np.stack([block.min(axis=0), block.max(axis=0)])[None]


def _box_gap(a: np.ndarray, b: np.ndarray) -> float:
    """Smallest distance between two axis-aligned boxes ``[[lo], [hi]]``."""
    gap = np.maximum(0.0, np.maximum(b[0] - a[1], a[0] - b[1]))
    return float(np.sqrt(np.sum(gap * gap)))


def sparse_gram(X: Any, kernel: CompactSupport, Z: Any = None) -> sp.csr_matrix:
    """Sparse Gram matrix ``K_C[i, j] = k_C(x_i, z_j)`` of a compactly supported kernel.

    Parameters
    ----------
    X : array-like or dask array, shape (n, d)
        Rows (features already standardized as the kernel expects).
    kernel : CompactSupport
        The kernel; only pairs closer than ``kernel.radius`` are evaluated.
    Z : array-like or dask array, shape (m, d), optional
        Columns; ``X`` itself by default (a symmetric n × n matrix).

    Returns
    -------
    scipy.sparse.csr_matrix
        Shape (n, m), float64, sorted indices, no stored zeros. See
        :func:`gram_report` for its nonzeros, sparsity and memory.

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern import CompactSupport, Gaussian, sparse_gram
    >>> X = np.random.default_rng(0).normal(size=(300, 2))
    >>> K = sparse_gram(X, CompactSupport(Gaussian(omega=1.0), radius=1.0))
    >>> K.shape, K.format, (K != K.T).nnz  # symmetric
    ((300, 300), 'csr', 0)
    >>> sparse_gram(X[:5], CompactSupport(Gaussian(omega=1.0), radius=1.0), X).shape
    (5, 300)
    """
    if not isinstance(kernel, CompactSupport):
        raise TypeError(f"sparse_gram needs a CompactSupport kernel; got {type(kernel).__name__}"
                        " (a kernel without compact support has a dense Gram matrix)")
    symmetric = Z is None
    lazy = isinstance(X, da.Array) or isinstance(Z, da.Array)
    if lazy:
        return _sparse_gram_dask(X, kernel, None if symmetric else Z)
    X = np.asarray(X, dtype=np.float64)
    Zm = X if symmetric else np.asarray(Z, dtype=np.float64)
    if X.ndim != 2 or Zm.ndim != 2 or X.shape[1] != Zm.shape[1]:
        raise ValueError(f"X and Z must be 2-D with the same number of features; got "
                         f"{X.shape} and {Zm.shape}")
    require_finite_rows(X, "X", "a Gram matrix")
    if not symmetric:
        require_finite_rows(Zm, "Z", "a Gram matrix")
    d = X.shape[1]
    kernel.taper_power_for(d)  # warn once, here, for a small taper power
    i, j, v = _block_pair(X, Zm, kernel=kernel, d=d, offsets=(0, 0))
    return _assemble([(i, j, v)], (len(X), len(Zm)))


def _assemble(parts: list[tuple[np.ndarray, ...]], shape: tuple[int, int]) -> sp.csr_matrix:
    rows = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, dtype=np.int64)
    cols = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0, dtype=np.int64)
    vals = np.concatenate([p[2] for p in parts]) if parts else np.zeros(0)
    K = sp.csr_matrix((vals, (rows, cols)), shape=shape)
    K.sum_duplicates()
    K.sort_indices()
    return K


def _sparse_gram_dask(X: Any, kernel: CompactSupport, Z: Any) -> sp.csr_matrix:
    X = as_row_chunked(X)[0]
    symmetric = Z is None
    Zd = X if symmetric else as_row_chunked(Z)[0]
    if X.shape[1] != Zd.shape[1]:
        raise ValueError(f"X and Z must have the same number of features; got {X.shape[1]} "
                         f"and {Zd.shape[1]}")
    # the boxes pass and the pairs pass read every chunk: persist once, read once
    # (X is the n × d input of an n × n sparse matrix assembled on the client, so it fits)
    if symmetric:
        X = Zd = X.persist()
    else:
        X, Zd = dask.persist(X, Zd)
    d = X.shape[1]
    kernel.taper_power_for(d)
    box_arrays = [X.map_blocks(_boxes, chunks=((1,) * X.numblocks[0], (2,), (d,)),
                               new_axis=1, dtype=np.float64)]
    if not symmetric:
        box_arrays.append(Zd.map_blocks(_boxes, chunks=((1,) * Zd.numblocks[0], (2,), (d,)),
                                        new_axis=1, dtype=np.float64))
    boxes = compute(*box_arrays, label="sparse Gram: chunk bounding boxes")
    x_boxes = boxes[0]
    z_boxes = x_boxes if symmetric else boxes[1]
    x_off = np.concatenate([[0], np.cumsum(X.chunks[0])])
    z_off = np.concatenate([[0], np.cumsum(Zd.chunks[0])])
    x_blocks = X.to_delayed().ravel()
    z_blocks = x_blocks if symmetric else Zd.to_delayed().ravel()
    pair = dask.delayed(_block_pair, pure=True)
    tasks, mirrored = [], []
    for a in range(len(x_blocks)):
        if np.isnan(x_boxes[a]).all():
            continue
        for b in range(a if symmetric else 0, len(z_blocks)):
            if np.isnan(z_boxes[b]).all() or _box_gap(x_boxes[a], z_boxes[b]) >= kernel.radius:
                continue
            tasks.append(pair(x_blocks[a], z_blocks[b], kernel=kernel, d=d,
                              offsets=(int(x_off[a]), int(z_off[b]))))
            mirrored.append(symmetric and a != b)
    parts = list(compute(*tasks, label=f"sparse Gram: {len(tasks)} pairs of chunks")) if tasks \
        else []
    # a pair (a, b) with a < b also gives the (b, a) entries of the symmetric matrix
    parts += [(p[1], p[0], p[2]) for p, m in zip(list(parts), mirrored, strict=True) if m]
    return _assemble(parts, (X.shape[0], Zd.shape[0]))
