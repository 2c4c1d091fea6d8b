"""The chunked passes of the reduced SVM's Newton–CG, and its kernel rows held in memory.

:class:`ChunkedNewtonCG` answers the two passes of
:func:`bigkern.solvers.newton_cg.method.newton_cg_iterates` over chunked (dask) data, one read
each, every chunk forming its kernel blocks anew: the line pass sums the losses at the
trial steps and the gradient, the curvature pass ``Σ ℓ''(a·u) a (a·p)``, in float64.
:func:`held_kernel_rows` forms the augmented kernel rows ``a_i = [K(x_i, Ã), −1]`` of a
numpy input's usable rows, for :class:`bigkern.solvers.newton_cg.held_rows.HeldKernelRows`.
The model (:mod:`bigkern.models.reduced_kernel._newton_cg_fit`) connects them to the
solver: a reduction never calls one.
"""

from __future__ import annotations

from typing import Any

import dask
import numpy as np

from bigkern import config
from bigkern.kernels import Basis, kernel_blocks
from bigkern.reduce.reduced._row_pass import (
    BasisBroadcast,
    augmented_blocks,
    check_counts,
    run_pass,
    usable_rows,
)

__all__ = ["ChunkedNewtonCG", "held_kernel_rows"]


def held_kernel_rows(X: np.ndarray, y: np.ndarray, basis: Basis,
                     mask: np.ndarray | None = None
                     ) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
    """The augmented kernel rows of the usable rows of numpy ``X``, in the kernel's precision.

    As :func:`~bigkern.reduce.reduced.svm.augmented_kernel_rows` (the same values and
    row counts), but float32 for float32 data: ``n_usable × (m̃ + 1)`` values. Returns
    the rows, the usable rows' targets (float64) and the row counts.
    """
    Xf, yf, valid, counts = usable_rows(X, y, 0, mask)
    check_counts(counts)
    m = basis.n_basis
    dtype = (np.float32 if Xf.dtype.kind == "f" and Xf.dtype.itemsize <= 4 and basis.is_gaussian
             else np.float64)
    A = np.empty((int(valid.sum()), m + 1), dtype=dtype)
    A[:, m] = -1.0
    position = np.cumsum(valid) - 1
    for rows, G in kernel_blocks(Xf, basis, valid=valid, dtype=dtype,
                                 block_rows=config.get("kernel_block_rows")):
        A[position[rows], :m] = G
    return A, yf[valid], counts


def _line_chunk(Xb: np.ndarray, yb: np.ndarray, mb: np.ndarray | None = None, *, start: int,
                basis: Basis, point: dict[str, Any], loss: Any,
                block_rows: int | None) -> dict[str, Any]:
    """One chunk's loss sums at the trial steps and its gradient sum (flat, steps + dim)."""
    X, y, valid, counts = usable_rows(Xb, yb, start, mb)
    m = basis.n_basis
    steps = np.asarray(point["steps"], dtype=np.float64)
    acc = np.zeros(len(steps) + m + 1)
    UD = np.column_stack([point["u"], point["d"]])
    for rows, A in augmented_blocks(X, basis, valid, block_rows):
        st = A @ UD
        yr = y[rows]
        for j, lam in enumerate(steps):
            acc[j] += float(loss.value(st[:, 0] + lam * st[:, 1], yr).sum())
        d1, _ = loss.derivatives(st[:, 0] + point["at"] * st[:, 1], yr)
        acc[len(steps):] += d1 @ A
    return {"acc": acc, "counts": counts}


def _curvature_chunk(Xb: np.ndarray, yb: np.ndarray, mb: np.ndarray | None = None, *,
                     start: int, basis: Basis, point: dict[str, Any], loss: Any,
                     block_rows: int | None) -> dict[str, Any]:
    """One chunk's ``Σ ℓ''(a·u) a (a·p)`` (dim)."""
    X, y, valid, counts = usable_rows(Xb, yb, start, mb)
    m = basis.n_basis
    acc = np.zeros(m + 1)
    UP = np.column_stack([point["u"], point["p"]])
    for rows, A in augmented_blocks(X, basis, valid, block_rows):
        fq = A @ UP
        _, w = loss.derivatives(fq[:, 0], y[rows])
        acc += (w * fq[:, 1]) @ A
    return {"acc": acc, "counts": counts}


class ChunkedNewtonCG(BasisBroadcast):
    """The passes of Newton–CG over chunked data: one read each.

    :meth:`line` and :meth:`curvature` are the two passes the solver asks for
    (:func:`bigkern.solvers.newton_cg.method.newton_cg_iterates`'s ``LinePass`` and
    ``CurvaturePass``). Ships the basis once (scattered on a distributed client, else
    one delayed object); use as a context manager.

    Parameters
    ----------
    X : dask array, shape (n, d)
        Samples, row-chunked (:func:`bigkern.reduce.passes.as_row_chunked`).
    y : dask array, shape (n,)
        Targets (±1 labels for the hinge losses), chunked like ``X``.
    basis : Basis
        The reduced set Ã, width and standardization.
    loss : object
        The row loss.
    mask : dask array of bool, optional
        Rows to use.
    split_every : int, optional
        Fan-in of the tree reduction.

    Attributes
    ----------
    passes : int
        Reads of the data.
    counts : dict
        Row counts of the last pass.
    """

    def __init__(self, X: Any, y: Any, basis: Basis, loss: Any, *, mask: Any = None,
                 split_every: int | None = None) -> None:
        self.X, self.y, self.basis, self.loss, self.mask = X, y, basis, loss, mask
        self.split_every = split_every
        self.passes = 0
        self.counts: dict[str, int] = {}

    def line(self, u: np.ndarray, d: np.ndarray, steps: Any, at: float
             ) -> tuple[np.ndarray, np.ndarray]:
        """One read: the loss sums at ``u + λ d`` for each λ of ``steps``, and the gradient
        sum ``Σ ℓ'(a·(u + at d)) a``."""
        steps = np.asarray(steps, dtype=np.float64)
        acc = self._pass(_line_chunk, "line search",
                         {"u": u, "d": d, "steps": steps, "at": float(at)})
        return acc[:len(steps)], acc[len(steps):]

    def curvature(self, u: np.ndarray, p: np.ndarray) -> np.ndarray:
        """One read: the curvature product ``Σ ℓ''(a·u) a (a·p)``."""
        return self._pass(_curvature_chunk, "CG product", {"u": u, "p": p})

    def _pass(self, func: Any, what: str, point: dict[str, Any]) -> np.ndarray:
        handle = self.basis_handle("ChunkedNewtonCG")
        self.passes += 1
        m = self.basis.n_basis
        res = run_pass(self.X, self.y, func, name=f"reduced-newton-cg-{what.split()[0]}",
                       label=f"Newton-CG pass {self.passes}, {what} ({m} centers)",
                       split_every=self.split_every, mask=self.mask, basis=handle,
                       point=dask.delayed(point, pure=True, traverse=False), loss=self.loss,
                       block_rows=config.get("kernel_block_rows"))
        self.counts = dict(res["counts"])
        return res["acc"]
