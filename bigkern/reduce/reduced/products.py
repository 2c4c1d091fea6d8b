"""Products with the reduced kernel matrix in one read: ``Gᵀ(G V)``, ``Gᵀy``, ``Gᵀ1``.

A conjugate-gradient solve of the Nyström system
(:mod:`bigkern.solvers.conjugate_gradients`) needs, per iteration, the product
``GᵀG v`` of ``G = K(A, Ã)`` (n × m̃) with one vector — never ``GᵀG`` itself,
whose pass costs n·m̃² flops where this one costs n·m̃·(d + 2). Each row chunk
is turned into kernel blocks ``G_b`` (float64, as the direct pass folds them),
``G_b V`` is formed and folded into ``G_bᵀ [G_b V | y_b | 1]``; the chunks'
sums are tree-reduced, as every reduced-kernel pass is.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bigkern import config
from bigkern.kernels.gaussian import GaussianBasis, block_step, kernel_blocks
from bigkern.reduce.reduced._row_pass import count_attrs, run_pass, usable_rows

__all__ = ["kernel_products"]


def _products_chunk(Xb: np.ndarray, yb: np.ndarray, mb: np.ndarray | None = None, *,
                    basis: GaussianBasis, vectors: np.ndarray, start: int,
                    block_rows: int | None) -> dict[str, Any]:
    """``acc[:m̃] = Gᵀ[G V | y | 1]``, ``acc[m̃] = 1ᵀ[G V | y | 1]`` over one chunk's usable rows."""
    X, y, valid, counts = usable_rows(Xb, yb, start, mb)
    m, k = vectors.shape
    acc = np.zeros((m + 1, k + 2))
    step = block_step(len(X), block_rows)
    work = np.empty((step, k + 2))
    for rows, G in kernel_blocks(X, basis, valid=valid, block_rows=step):
        G64 = np.asarray(G, dtype=np.float64)
        W = work[:len(rows)]
        np.matmul(G64, vectors, out=W[:, :k])
        W[:, k] = y[rows]
        W[:, k + 1] = 1.0
        acc[:m] += G64.T @ W
        acc[m] += W.sum(axis=0)
    return {"acc": acc, "counts": counts}


def kernel_products(
    X: Any,
    y: Any,
    basis: GaussianBasis,
    vectors: np.ndarray,
    *,
    mask: Any = None,
    split_every: int | None = None,
    label: str = "kernel products",
) -> dict[str, Any]:
    """``Gᵀ(G V)``, ``Gᵀy``, ``Gᵀ1``, ``Σy`` and ``n`` over the usable rows, in one read.

    Parameters
    ----------
    X : array-like or dask array, shape (n, d)
        Samples.
    y : array-like or dask array, shape (n,)
        Targets (float).
    basis : GaussianBasis
        The reduced set Ã, its width and the standardization of ``X``.
    vectors : ndarray, shape (m̃, k)
        ``V``; ``k = 0`` gives only the right-hand side's pieces.
    mask : array-like or dask array of bool, shape (n,), optional
        Rows to use; the others are counted (``n_masked``).
    split_every : int, optional
        Fan-in of the tree reduction (default ``bigkern.split_every``).
    label : str
        The progress label of the pass.

    Returns
    -------
    dict
        ``GtGV`` (m̃, k), ``Gty`` (m̃,), ``Gsum`` (m̃,), ``ysum``, ``n`` (rows used) and
        ``counts`` (the pass's row counts, ``n_rows``, ``n_valid`` …).

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern.kernels import GaussianBasis, gaussian_kernel
    >>> rng = np.random.default_rng(0)
    >>> X, y = rng.standard_normal((200, 2)), rng.standard_normal(200)
    >>> basis = GaussianBasis.checked(X[:10], omega=1.0, d=2)
    >>> v = np.ones((10, 1))
    >>> got = kernel_products(X, y, basis, v)
    >>> G = gaussian_kernel(X, X[:10], 1.0)
    >>> bool(np.allclose(got["GtGV"], G.T @ (G @ v))), bool(np.allclose(got["Gty"], G.T @ y))
    (True, True)
    """
    vectors = np.ascontiguousarray(np.asarray(vectors, dtype=np.float64).reshape(
        basis.n_basis, -1))
    k = vectors.shape[1]
    res = run_pass(X, y, _products_chunk, name="kernel-products", label=label,
                   split_every=split_every or int(config.get("split_every")), mask=mask,
                   basis=basis, vectors=vectors,
                   block_rows=config.get("kernel_block_rows"))
    acc, m = res["acc"], basis.n_basis
    return {"GtGV": acc[:m, :k], "Gty": acc[:m, k], "Gsum": acc[:m, k + 1],
            "ysum": float(acc[m, k]), "n": int(acc[m, k + 1] + 0.5),
            "counts": {k_: v for k_, v in count_attrs(res["counts"]).items()
                       if k_.startswith("n_")}}
