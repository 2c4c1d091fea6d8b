"""Products with the reduced kernel matrix in one read: ``Gᵀ(G V)``, ``Gᵀy``, ``Gᵀ1``.

A conjugate-gradient solve of the Nyström system
(:mod:`bigkern.solvers.conjugate_gradients`) needs, per iteration, the product
``GᵀG v`` of ``G = K(A, Ã)`` (n × m̃) with one vector — never ``GᵀG`` itself,
whose pass costs n·m̃² flops where this one costs n·m̃·(d + 2). Each row chunk
gives ``Gᵀ [G V | y | 1]`` (the last two columns only when ``targets``); the
chunks' sums are tree-reduced, as every reduced-kernel pass is. Float32 rows of
at most :data:`~bigkern.kernels.fused_loops.FUSED_MAX_FEATURES` features take the
compiled per-row loop (:func:`bigkern.kernels.product_loops.fused_kernel_products`),
which never writes a kernel block to memory; others are turned into kernel blocks
``G_b`` (float64, as the direct pass folds them) and two matrix products.

With ``n_classes`` = k, ``y`` holds class codes and the targets are the k
one-vs-rest ±1 columns ``Y`` (made in each chunk): ``Gᵀ[G V | Y | 1]``. Conjugate
gradients for k classes advance k recurrences together, each read computing
``Gᵀ(G V)`` for the k columns of ``V`` from one kernel evaluation per row.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import dask.array as da
import numpy as np

from bigkern import config
from bigkern.cluster.compute import compute, task_threads
from bigkern.kernels.basis import Basis, block_step, kernel_blocks, omega_to_gamma
from bigkern.kernels.fused_loops import FUSED_MAX_FEATURES
from bigkern.kernels.product_loops import fused_kernel_products
from bigkern.reduce.reduced._row_pass import count_attrs, run_pass, usable_rows
from bigkern.reduce.reduced.normal_equations import one_vs_rest_targets
from bigkern.reduce.sampling import uniform_from_index

__all__ = ["in_memory_products", "kernel_products", "sample_usable_rows"]


def _products_chunk(Xb: np.ndarray, yb: np.ndarray, mb: np.ndarray | None = None, *,
                    basis: Basis, vectors: np.ndarray, targets: bool, start: int,
                    block_rows: int | None, n_classes: int | None = None) -> dict[str, Any]:
    """``acc[:m̃] = Gᵀ[G V | y | 1]``, ``acc[m̃, k:] = (Σy, n)`` and ``acc[m̃ + 1, k] = Σy²`` over
    one chunk's usable rows (without the ``y`` and ``1`` columns unless ``targets``).

    With ``n_classes`` = t, ``y`` is the t one-vs-rest columns of the codes: ``acc[:m̃] =
    Gᵀ[G V | Y | 1]``, ``acc[m̃, k:] = (ΣY, n)``, ``acc[m̃ + 1, k:k + t] = ΣY²`` per column.
    """
    X, y, valid, counts = usable_rows(Xb, yb, start, mb)
    m, k = vectors.shape
    t = 1 if n_classes is None else int(n_classes)
    Y = y[:, None] if n_classes is None else one_vs_rest_targets(y, t)
    e = t + 1 if targets else 0
    acc = np.zeros((m + 2, k + e))
    if basis.is_gaussian and X.dtype == np.float32 and X.shape[1] <= FUSED_MAX_FEATURES:
        rows = np.flatnonzero(valid)
        extra = np.ones((len(rows), e))
        if targets:
            extra[:, :t] = Y[rows]
        products = np.zeros((k + e, m))
        fused_kernel_products(
            np.ascontiguousarray(X), rows,
            np.ascontiguousarray(basis.centers.T, dtype=np.float32),
            omega_to_gamma(basis.omega), basis.offset, basis.scale,
            np.ascontiguousarray(vectors.T), extra, products, basis.clip)
        acc[:m] = products.T
        if targets:
            if n_classes is None:
                acc[m, k:] = y[rows].sum(), len(rows)
                acc[m + 1, k] = y[rows] @ y[rows]
            else:
                Yr = Y[rows]
                acc[m, k:k + t] = Yr.sum(axis=0)
                acc[m, k + t] = len(rows)
                acc[m + 1, k:k + t] = np.einsum("ij,ij->j", Yr, Yr)
        return {"acc": acc, "counts": counts}
    step = block_step(len(X), block_rows)
    work = np.empty((step, k + e))
    for rows, G in kernel_blocks(X, basis, valid=valid, block_rows=step):
        G64 = np.asarray(G, dtype=np.float64)
        W = work[:len(rows)]
        np.matmul(G64, vectors, out=W[:, :k])
        if targets:
            if n_classes is None:
                W[:, k] = y[rows]
            else:
                W[:, k:k + t] = Y[rows]
            W[:, k + t] = 1.0
        acc[:m] += G64.T @ W
        acc[m, k:] += W[:, k:].sum(axis=0)
        if targets:
            if n_classes is None:
                acc[m + 1, k] += W[:, k] @ W[:, k]
            else:
                acc[m + 1, k:k + t] += np.einsum("ij,ij->j", W[:, k:k + t], W[:, k:k + t])
    return {"acc": acc, "counts": counts}


def kernel_products(
    X: Any,
    y: Any,
    basis: Basis,
    vectors: np.ndarray,
    *,
    targets: bool = True,
    mask: Any = None,
    split_every: int | None = None,
    label: str = "kernel products",
    n_classes: int | None = None,
) -> dict[str, Any]:
    """``Gᵀ(G V)`` and (``targets``) ``Gᵀy``, ``Gᵀ1``, ``Σy``, ``n`` over the usable rows, in one
    read.

    Parameters
    ----------
    X : array-like or dask array, shape (n, d)
        Samples.
    y : array-like or dask array, shape (n,)
        Targets (float).
    basis : Basis
        The reduced set Ã, its width and the standardization of ``X``.
    vectors : ndarray, shape (m̃, k)
        ``V``; ``k = 0`` gives only the right-hand side's pieces.
    targets : bool
        Also sum ``Gᵀy``, ``Gᵀ1``, ``Σy`` and ``n`` (a conjugate-gradient iteration,
        which needs only ``Gᵀ(G v)``, leaves them out: two columns fewer per row).
    mask : array-like or dask array of bool, shape (n,), optional
        Rows to use; the others are counted (``n_masked``).
    split_every : int, optional
        Fan-in of the tree reduction (default ``bigkern.split_every``).
    label : str
        The progress label of the pass.
    n_classes : int, optional
        ``y`` holds class codes 0 … t−1 and the targets are their t one-vs-rest ±1
        columns ``Y`` (:func:`~bigkern.reduce.reduced.normal_equations.one_vs_rest_targets`).

    Returns
    -------
    dict
        ``GtGV`` (m̃, k) and ``counts`` (the pass's row counts, ``n_rows``, ``n_valid``
        …); with ``targets`` also ``Gty`` (m̃,), ``Gsum`` (m̃,), ``ysum``, ``yty`` (Σy²)
        and ``n`` (rows used); with ``n_classes`` = t, ``Gty`` is (m̃, t) and ``ysum``,
        ``yty`` are (t,), one per class.

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern.kernels import Basis, gaussian_kernel
    >>> rng = np.random.default_rng(0)
    >>> X, y = rng.standard_normal((200, 2)), rng.standard_normal(200)
    >>> basis = Basis.checked(X[:10], omega=1.0, d=2)
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
                   basis=basis, vectors=vectors, targets=targets,
                   block_rows=config.get("kernel_block_rows"), n_classes=n_classes)
    counts = {k_: v for k_, v in count_attrs(res["counts"]).items() if k_.startswith("n_")}
    return {**_named(res["acc"], basis.n_basis, k, targets, n_classes), "counts": counts}


def _named(acc: np.ndarray, m: int, k: int, targets: bool,
           n_classes: int | None = None) -> dict[str, Any]:
    """The summed ``acc`` of :func:`_products_chunk` as named products."""
    if not targets:
        return {"GtGV": acc[:m, :k]}
    if n_classes is None:
        return {"GtGV": acc[:m, :k], "Gty": acc[:m, k], "Gsum": acc[:m, k + 1],
                "ysum": float(acc[m, k]), "yty": float(acc[m + 1, k]),
                "n": int(acc[m, k + 1] + 0.5)}
    t = int(n_classes)
    return {"GtGV": acc[:m, :k], "Gty": acc[:m, k:k + t], "Gsum": acc[:m, k + t],
            "ysum": acc[m, k:k + t].copy(), "yty": acc[m + 1, k:k + t].copy(),
            "n": int(acc[m, k + t] + 0.5)}


def in_memory_products(X: np.ndarray, y: np.ndarray, basis: Basis,
                       vectors: np.ndarray, *, targets: bool = True,
                       n_classes: int | None = None) -> dict[str, Any]:
    """:func:`kernel_products` of rows held in memory, with no task graph.

    The rows (all usable: finite features and targets) are split among
    :func:`~bigkern.cluster.compute.task_threads` threads, each summing its part with
    the pass's own chunk function (the compiled loop releases the GIL), and the parts
    are added. For the many products of a conjugate-gradient solve on a subset.

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern.kernels import Basis
    >>> rng = np.random.default_rng(0)
    >>> X, y = rng.standard_normal((300, 2)).astype(np.float32), rng.standard_normal(300)
    >>> basis = Basis.checked(X[:10].astype(np.float64), omega=1.0, d=2)
    >>> v = rng.standard_normal((10, 1))
    >>> a, b = in_memory_products(X, y, basis, v), kernel_products(X, y, basis, v)
    >>> bool(np.allclose(a["GtGV"], b["GtGV"])), a["n"] == b["n"] == 300
    (True, True)
    """
    vectors = np.ascontiguousarray(np.asarray(vectors, dtype=np.float64).reshape(
        basis.n_basis, -1))
    k, m = vectors.shape[1], basis.n_basis
    parts = np.array_split(np.arange(len(X)), max(1, min(task_threads(), len(X))))
    block_rows = config.get("kernel_block_rows")

    def part(rows: np.ndarray) -> np.ndarray:
        return _products_chunk(X[rows], y[rows], None, basis=basis, vectors=vectors,
                               targets=targets, start=0, block_rows=block_rows,
                               n_classes=n_classes)["acc"]

    with ThreadPoolExecutor(max_workers=len(parts)) as pool:
        acc = sum(pool.map(part, parts))
    return _named(acc, m, k, targets, n_classes)


def sample_usable_rows(X: Any, y: Any, *, fraction: float, seed: int, mask: Any = None,
                       label: str = "sampling rows") -> tuple[np.ndarray, np.ndarray, int]:
    """A random ``fraction`` of the usable rows (finite ``X`` and ``y``, in ``mask``), in memory,
    and the number of usable rows.

    Each row is kept when a seeded hash of its global row number falls below
    ``fraction`` (:func:`~bigkern.reduce.sampling.uniform_from_index`), so the
    sample is the same whatever the chunking; one read.

    Returns
    -------
    X_sample : ndarray, shape (k, d)
    y_sample : ndarray of float64, shape (k,)
    n_usable : int
        The usable rows, all of them (what :func:`kernel_products` calls ``n``).

    Examples
    --------
    >>> import numpy as np
    >>> X, y = np.arange(2000.0).reshape(1000, 2), np.ones(1000)
    >>> X[::7] = np.nan
    >>> Xs, ys, n = sample_usable_rows(X, y, fraction=0.1, seed=0)
    >>> len(Xs) < 130, bool(np.isfinite(Xs).all()), n
    (True, True, 857)
    """
    Xd = X if isinstance(X, da.Array) else da.from_array(np.asarray(X), chunks=(-1, -1))
    yd = y if isinstance(y, da.Array) else da.from_array(np.asarray(y), chunks=-1)
    yd = yd.rechunk((Xd.chunks[0],))
    index = da.arange(Xd.shape[0], chunks=(Xd.chunks[0],))
    usable = da.isfinite(Xd).all(axis=1) & da.isfinite(yd)
    if mask is not None:
        md = mask if isinstance(mask, da.Array) else da.from_array(np.asarray(mask), chunks=-1)
        usable &= md.rechunk((Xd.chunks[0],)).astype(bool)
    keep = usable & (index.map_blocks(uniform_from_index, seed=int(seed),
                                      dtype=np.float64) < fraction)
    Xs, ys, n_usable = compute(Xd[keep], yd[keep], usable.sum(), label=label)
    return np.asarray(Xs), np.asarray(ys, dtype=np.float64), int(n_usable)
