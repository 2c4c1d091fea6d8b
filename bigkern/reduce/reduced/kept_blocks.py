"""Kernel blocks kept in memory between the reads of an iterative solve.

A conjugate-gradient (or Newton–CG) solve on the reduced basis needs, at every
iteration, the products ``Gᵀ(G V)`` of ``G = K(A, Ã)`` (n × m̃). Evaluated anew at
each read (:func:`~bigkern.reduce.reduced.products.kernel_products`), an iteration
costs n·m̃ exponentials; kept, it costs two matrix–vector products. The blocks
``G_c = k(X_c, Ã)`` of the usable rows of every row chunk ``c`` are formed once, by
the read that also sums the right-hand side, and held — on the workers with a
distributed client (persisted where they were computed), in this process without
one — when their total fits a memory budget (:func:`kept_budget_bytes`, a share of
the workers' memory). Past the budget, chunk by chunk: the first chunks whose
blocks fit are kept and the others are evaluated again at each read.

The values are those the recomputation gives (:func:`~bigkern.kernels.kernel_blocks`,
float32 for float32 data unless ``dtype`` asks float64), and one compiled loop sums
a kept block's products and a recomputed block's, row by row in the same order, in
float64 (float32 values times float64 vectors, as
:mod:`bigkern.kernels.product_loops` does): a kept block and a recomputed one give
the same products bit for bit, so a solve's iterates do not depend on the budget.

:class:`KeptKernelBlocks` is the interface: :meth:`KeptKernelBlocks.build` makes
the blocks and returns the first read's products (those of
:func:`~bigkern.reduce.reduced.products.kernel_products` with ``targets=True``);
:meth:`KeptKernelBlocks.products` is one iteration's ``Gᵀ(G V)``;
:meth:`KeptKernelBlocks.release` (or leaving its ``with`` block) frees them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import dask
import numba
import numpy as np

from bigkern import config
from bigkern.cluster.compute import compute
from bigkern.cluster.watchdog import current_client
from bigkern.kernels.basis import Basis, block_step, kernel_blocks
from bigkern.reduce.passes import as_row_chunked
from bigkern.reduce.reduced._row_pass import (
    check_counts,
    combine_partials,
    count_attrs,
    usable_rows,
)
from bigkern.reduce.reduced.normal_equations import one_vs_rest_targets

__all__ = ["KEPT_MEMORY_SHARE", "KeptKernelBlocks", "kept_budget_bytes"]

#: The share of the workers' memory (of this machine's available memory without a
#: client) that kept kernel blocks may take, unless ``bigkern.kept_kernel_share`` says
#: otherwise. The rest is the workers' own: the data's chunks, the products, spilling.
KEPT_MEMORY_SHARE = 0.4

#: Reassociation lets the row sums vectorize; the same compiled function sums kept and
#: recomputed blocks, so both are reassociated alike.
_FAST = {"nsz", "arcp", "contract", "reassoc"}


@numba.njit(nogil=True, cache=True, fastmath=_FAST)
def _block_products(G: np.ndarray, V: np.ndarray, extra: np.ndarray,
                    acc: np.ndarray) -> None:  # pragma: no cover - compiled
    """``acc[c] += Gᵀ(G V[c])`` for ``c < k`` and ``acc[k + c] += Gᵀ extra[:, c]``, row by row,
    float64 sums of float32 (or float64) values times float64 weights."""
    m = G.shape[1]
    k = V.shape[0]
    e = extra.shape[1]
    w = np.empty(k + e, np.float64)
    for a in range(G.shape[0]):
        g = G[a]
        for c in range(k):
            vc = V[c]
            s = 0.0
            for j in range(m):
                s += g[j] * vc[j]
            w[c] = s
        for c in range(e):
            w[k + c] = extra[a, c]
        for c in range(k + e):
            ac = acc[c]
            wc = w[c]
            for j in range(m):
                ac[j] += g[j] * wc


def kept_budget_bytes(share: float | None = None) -> int:
    """Bytes of kernel blocks that may be kept: ``share`` (default
    ``bigkern.kept_kernel_share``, else :data:`KEPT_MEMORY_SHARE`) of the memory limits of
    the client's workers (their total), or of this machine's available memory without a
    client (or when a worker has no limit).

    Examples
    --------
    >>> kept_budget_bytes(0.0)
    0
    """
    share = float(config.get("kept_kernel_share", KEPT_MEMORY_SHARE) if share is None
                  else share)
    if share <= 0:
        return 0
    client = current_client()
    total = 0
    if client is not None:
        workers = client.scheduler_info(n_workers=-1).get("workers", {}).values()
        limits = [int(w.get("memory_limit") or 0) for w in workers]
        total = sum(limits) if limits and all(limits) else 0
    if total == 0:
        import psutil

        total = int(psutil.virtual_memory().available)
    return int(share * total)


def _extra_columns(y: np.ndarray, n_classes: int | None, targets: bool) -> np.ndarray:
    """The per-row weights of the right-hand side's read: ``[y | 1]`` (``[Y | 1]`` for
    class codes), or none."""
    if not targets:
        return np.zeros((len(y), 0))
    Y = y[:, None] if n_classes is None else one_vs_rest_targets(y, int(n_classes))
    return np.ascontiguousarray(np.column_stack([Y, np.ones(len(y))]))


def _target_sums(acc: np.ndarray, Y: np.ndarray, m: int, k: int) -> None:
    """``acc[m, k:] = (ΣY, n)``, ``acc[m + 1, k:k + t] = ΣY²`` (``Y`` the extra columns but
    the last)."""
    t = Y.shape[1] - 1
    acc[m, k:] = Y.sum(axis=0)
    acc[m + 1, k:k + t] = np.einsum("ij,ij->j", Y[:, :t], Y[:, :t])


def _chunk_products(blocks: Any, extra: np.ndarray, Vt: np.ndarray) -> np.ndarray:
    """``Gᵀ[G V | extra]`` (k + e, m̃) of the blocks, in row order."""
    m, k = Vt.shape[1], Vt.shape[0]
    out = np.zeros((k + extra.shape[1], m))
    first = 0
    for G in blocks:
        _block_products(G, Vt, extra[first:first + len(G)], out)
        first += len(G)
    return out


def _fresh_blocks(X: np.ndarray, valid: np.ndarray, basis: Basis, block_rows: int,
                  dtype: Any) -> Any:
    """The chunk's kernel blocks of its usable rows, as :func:`kernel_blocks` gives them."""
    for _, G in kernel_blocks(X, basis, valid=valid, block_rows=block_rows, dtype=dtype):
        yield G


def _build_chunk(Xb: np.ndarray, yb: np.ndarray, mb: np.ndarray | None, *, start: int,
                 keep: bool, basis: Basis, Vt: np.ndarray, n_classes: int | None,
                 block_rows: int, dtype: Any) -> dict[str, Any]:
    """One chunk of the first read: its kept block (``keep``), and the partial of the
    right-hand side's products (``acc`` laid out as :func:`kernel_products`' chunk's)."""
    X, y, valid, counts = usable_rows(Xb, yb, start, mb)
    m, k = basis.n_basis, Vt.shape[0]
    extra = _extra_columns(y[valid], n_classes, True)
    block = None
    if keep:
        step = block_step(len(X), block_rows)
        block = np.empty((int(valid.sum()), m), dtype=_value_dtype(X, dtype))
        first = 0
        for G in _fresh_blocks(X, valid, basis, step, dtype):
            block[first:first + len(G)] = G
            first += len(G)
        products = _chunk_products([block], extra, Vt)
    else:
        products = _chunk_products(_fresh_blocks(X, valid, basis, block_step(len(X),
                                                                               block_rows),
                                                 dtype), extra, Vt)
    acc = np.zeros((m + 2, k + extra.shape[1]))
    acc[:m] = products.T
    _target_sums(acc, extra, m, k)
    return {"block": block, "partial": {"acc": acc, "counts": counts}}


def _value_dtype(X: np.ndarray, dtype: Any) -> np.dtype:
    """The kernel values' dtype :func:`kernel_blocks` uses for ``X`` (or ``dtype``)."""
    if dtype is not None:
        return np.dtype(dtype)
    return np.dtype(np.float32 if X.dtype.itemsize <= 4 and X.dtype.kind == "f"
                    else np.float64)


def _partial_of(built: dict[str, Any]) -> dict[str, Any]:
    return built["partial"]


def _kept_products(built: dict[str, Any], Vt: np.ndarray) -> np.ndarray:
    block = built["block"]
    return _chunk_products([block], np.zeros((len(block), 0)), Vt)


def _recomputed_products(Xb: np.ndarray, yb: np.ndarray, mb: np.ndarray | None, *,
                         start: int, basis: Basis, Vt: np.ndarray, block_rows: int,
                         dtype: Any) -> np.ndarray:
    X, _, valid, _ = usable_rows(Xb, yb, start, mb)
    return _chunk_products(_fresh_blocks(X, valid, basis, block_step(len(X), block_rows),
                                         dtype), np.zeros((int(valid.sum()), 0)), Vt)


def _added(*parts: np.ndarray) -> np.ndarray:
    out = parts[0].copy()
    for p in parts[1:]:
        out += p
    return out


def _combined(*parts: dict[str, Any]) -> dict[str, Any]:
    return combine_partials(list(parts))


def _tree_sum(parts: list[Any], fan_in: int, add: Any = _added) -> Any:
    """The delayed sum of ``parts`` by ``add``, ``fan_in`` at a time (in order: the same
    sums for the same chunks)."""
    fan_in = max(2, int(fan_in))
    while len(parts) > 1:
        parts = [dask.delayed(add, pure=True)(*parts[i:i + fan_in])
                 for i in range(0, len(parts), fan_in)]
    return parts[0]


@dataclass(eq=False)
class KeptKernelBlocks:
    """The kernel blocks of a solve's rows, kept within a budget (see the module).

    Made by :meth:`build`; ``kept`` says which row chunks' blocks are kept (the others
    are evaluated anew at each :meth:`products`), ``kept_bytes`` what they take.

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern.kernels import Basis, gaussian_kernel
    >>> rng = np.random.default_rng(0)
    >>> X, y = rng.standard_normal((300, 2)).astype(np.float32), rng.standard_normal(300)
    >>> basis = Basis.checked(X[:10].astype(np.float64), omega=1.0, d=2)
    >>> blocks, first = KeptKernelBlocks.build(X, y, basis, np.zeros((10, 0)))
    >>> v = rng.standard_normal((10, 1))
    >>> with blocks:  # released on leaving
    ...     GtGv, kept = blocks.products(v), all(blocks.kept)
    >>> G = gaussian_kernel(X.astype(np.float64), X[:10].astype(np.float64), 1.0)
    >>> bool(np.allclose(GtGv, G.T @ (G @ v), rtol=1e-5)), first["n"], kept
    (True, 300, True)
    """

    basis: Basis
    kept: list[bool]
    kept_bytes: int
    _built: list[Any] = field(repr=False)
    _chunks: list[tuple[Any, Any, Any, int]] = field(repr=False)
    _block_rows: int = 4096
    _dtype: Any = None
    _fan_in: int = 8

    @classmethod
    def build(cls, X: Any, y: Any, basis: Basis, vectors: np.ndarray, *, mask: Any = None,
              n_classes: int | None = None, budget_bytes: int | None = None,
              dtype: Any = None, label: str = "kernel blocks"
              ) -> tuple[KeptKernelBlocks, dict[str, Any]]:
        """Form (and keep, within ``budget_bytes``) the blocks in one read that also sums the
        right-hand side's products.

        Parameters
        ----------
        X, y, mask
            As :func:`~bigkern.reduce.reduced.products.kernel_products` takes them (numpy
            or dask; ``y`` class codes with ``n_classes``).
        basis : Basis
            The reduced set, its width and standardization.
        vectors : ndarray, shape (m̃, k)
            ``V`` of the first read's ``Gᵀ(G V)`` (k = 0: none).
        budget_bytes : int, optional
            Bytes the kept blocks may take (default :func:`kept_budget_bytes`); 0 keeps none.
        dtype : dtype, optional
            The kernel values' precision (default: :func:`kernel_blocks`', float32 for
            float32 data).

        Returns
        -------
        KeptKernelBlocks, dict
            The blocks, and the products of
            :func:`~bigkern.reduce.reduced.products.kernel_products` with ``targets``
            (``GtGV``, ``Gty``, ``Gsum``, ``ysum``, ``yty``, ``n``, ``counts``).
        """
        from bigkern.cluster.compute import task_threads
        from bigkern.reduce.reduced.products import _named

        Xd, yd, md = as_row_chunked(X, y, mask, min_chunks=task_threads())
        m = basis.n_basis
        Vt = np.ascontiguousarray(np.asarray(vectors, dtype=np.float64).reshape(m, -1).T)
        budget = kept_budget_bytes() if budget_bytes is None else int(budget_bytes)
        itemsize = np.dtype(dtype or (np.float32 if Xd.dtype.itemsize <= 4
                                      and Xd.dtype.kind == "f" else np.float64)).itemsize
        block_rows = int(config.get("kernel_block_rows"))
        xs = Xd.to_delayed().ravel()
        ys = yd.to_delayed().ravel()
        ms = [None] * len(xs) if md is None else list(md.to_delayed().ravel())
        starts = np.concatenate([[0], np.cumsum(Xd.chunks[0])[:-1]]).astype(int).tolist()
        kept, used = [], 0
        for rows in Xd.chunks[0]:  # the first chunks whose blocks fit (at most all rows)
            size = int(rows) * m * itemsize
            kept.append(used + size <= budget)
            used += size if kept[-1] else 0
        basis_d = dask.delayed(basis, traverse=False)
        Vt_d = dask.delayed(Vt)
        built = [dask.delayed(_build_chunk, pure=True)(
            xc, yc, mc, start=s, keep=k, basis=basis_d, Vt=Vt_d, n_classes=n_classes,
            block_rows=block_rows, dtype=dtype)
            for xc, yc, mc, s, k in zip(xs, ys, ms, starts, kept, strict=True)]
        built = list(dask.persist(*built))
        total = _tree_sum([dask.delayed(_partial_of)(b) for b in built], 8, _combined)
        (res,) = compute(total, label=label)
        check_counts(res["counts"])
        counts = {k_: v for k_, v in count_attrs(res["counts"]).items()
                  if k_.startswith("n_")}
        first = {**_named(res["acc"], m, Vt.shape[0], True, n_classes),
                 "counts": counts}
        blocks = cls(basis, kept, used,
                     [b if k else None for b, k in zip(built, kept, strict=True)],
                     [(xc, yc, mc, s) for xc, yc, mc, s in zip(xs, ys, ms, starts,
                                                               strict=True)],
                     block_rows, dtype)
        return blocks, first

    def products(self, vectors: np.ndarray, *, label: str = "kernel products (kept blocks)"
                 ) -> np.ndarray:
        """``Gᵀ(G V)`` (m̃, k) over the usable rows: kept blocks' products, others' anew."""
        m = self.basis.n_basis
        Vt = np.ascontiguousarray(np.asarray(vectors, dtype=np.float64).reshape(m, -1).T)
        Vt_d = dask.delayed(Vt)
        basis_d = dask.delayed(self.basis, traverse=False)
        parts = []
        for built, (xc, yc, mc, s) in zip(self._built, self._chunks, strict=True):
            if built is not None:
                parts.append(dask.delayed(_kept_products, pure=True)(built, Vt_d))
            else:
                parts.append(dask.delayed(_recomputed_products, pure=True)(
                    xc, yc, mc, start=s, basis=basis_d, Vt=Vt_d,
                    block_rows=self._block_rows, dtype=self._dtype))
        (acc,) = compute(_tree_sum(parts, self._fan_in), label=label)
        return np.ascontiguousarray(acc.T)

    @property
    def n_kept(self) -> int:
        return int(sum(self.kept))

    def release(self) -> None:
        """Drop the kept blocks (the workers free them once no task holds them)."""
        self._built = [None] * len(self._built)
        self.kept = [False] * len(self.kept)

    def __enter__(self) -> KeptKernelBlocks:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

