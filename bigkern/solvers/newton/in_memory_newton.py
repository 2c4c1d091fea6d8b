"""Newton–Armijo's sums over kernel rows held in memory, on the cores side by side.

:class:`InMemoryNewtonPasses` is the ``evaluate`` of
:func:`~bigkern.solvers.newton.smooth_svm.newton_armijo` when a numpy input's augmented kernel
rows fit in memory: what a distributed pass computes per chunk, without a task graph.
:class:`InMemoryClassPasses` is the same for the k one-vs-rest problems of
:func:`~bigkern.solvers.newton.lockstep_newton.newton_armijo_lockstep`, on the one set of rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from bigkern.cluster.compute import blas_controller
from bigkern.kernels.class_row_sums import (
    ClassPoints,
    accumulate_classes,
    buffer_size,
    split_sums,
)
from bigkern.kernels.row_sums import RowSums, accumulate_block

__all__ = ["InMemoryClassPasses", "InMemoryNewtonPasses"]


def row_parts(n: int, block_rows: int, threads: int) -> list[tuple[int, int]]:
    """``threads`` contiguous parts (at most one per block) of whole blocks of ``n`` rows."""
    blocks = max(1, -(-n // block_rows))
    parts = max(1, min(int(threads), blocks))
    cuts = [block_rows * (blocks * k // parts) for k in range(parts)] + [n]
    return [(cuts[k], min(cuts[k + 1], n)) for k in range(parts)]


class InMemoryNewtonPasses:
    """The ``evaluate`` of :func:`newton_armijo` over kernel rows held in memory.

    The rows are split into ``threads`` contiguous parts summed side by side, each on
    one BLAS thread (as a distributed pass's tasks run), folded into the sums
    ``block_rows`` at a time through a work buffer of its own
    (:func:`~bigkern.kernels.row_sums.accumulate_block` overwrites its block); the
    parts' sums are added in order. No task graph is built.

    Parameters
    ----------
    A : ndarray, shape (n, dim)
        Augmented kernel rows ``[K(x_i, Ã), −1]``, float64.
    y : ndarray, shape (n,)
        Targets (±1 labels for the hinges).
    loss : object
        The row loss (``value``, ``derivatives``).
    block_rows : int
        Rows per block.
    threads : int
        Parts summed at once (at most one per block).
    hessian_dtype : {"float64", "float32"}
        Precision of the Hessian's products; :meth:`exact_hessian` switches to float64.

    Attributes
    ----------
    passes : int
        Evaluations run.

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern.solvers.newton.in_memory_newton import InMemoryNewtonPasses
    >>> from bigkern.solvers.newton.smooth_svm import SmoothHinge, newton_armijo
    >>> x = np.array([-2.0, -1.0, 1.0, 2.0])
    >>> A = np.column_stack([x, -np.ones(4)])
    >>> res = newton_armijo(InMemoryNewtonPasses(A, np.sign(x), SmoothHinge(), block_rows=3),
    ...                     2, C=10.0)
    >>> res.converged, bool(np.all(np.sign(A @ res.u) == np.sign(x)))
    (True, True)
    """

    def __init__(self, A: np.ndarray, y: np.ndarray, loss: Any, *, block_rows: int = 4096,
                 threads: int = 1, hessian_dtype: Any = "float64") -> None:
        self.A = np.ascontiguousarray(A, dtype=np.float64)
        self.y = np.asarray(y, dtype=np.float64)
        self.loss = loss
        self.block_rows = max(1, int(block_rows))
        self.hessian_dtype = np.dtype(hessian_dtype)
        self.passes = 0
        self._parts = row_parts(len(self.A), self.block_rows, threads)
        self._work = [np.empty((min(self.block_rows, max(1, stop - start)), self.A.shape[1]))
                      for start, stop in self._parts]

    def exact_hessian(self) -> None:
        """Form the Hessian in float64 from the next evaluation on."""
        self.hessian_dtype = np.dtype(np.float64)

    def _part(self, k: int, u: np.ndarray, d: np.ndarray, steps: np.ndarray,
              at: float) -> RowSums:
        sums = RowSums.zeros(self.A.shape[1], len(steps))
        start, stop = self._parts[k]
        for first in range(start, stop, self.block_rows):
            last = min(first + self.block_rows, stop)
            block = self._work[k][:last - first]
            block[...] = self.A[first:last]
            accumulate_block(sums, block, self.y[first:last], u, d, steps, at, self.loss,
                             hessian_dtype=self.hessian_dtype)
        return sums

    def __call__(self, u: np.ndarray, d: np.ndarray, steps: Sequence[float] | np.ndarray,
                 at: float) -> RowSums:
        """The sums over all rows (see :func:`newton_armijo`'s ``evaluate``)."""
        from concurrent.futures import ThreadPoolExecutor

        self.passes += 1
        steps = np.asarray(steps, dtype=np.float64)
        if len(self._parts) == 1:
            return self._part(0, u, d, steps, at)
        with blas_controller().limit(limits=1, user_api="blas"), \
                ThreadPoolExecutor(len(self._parts)) as pool:
            parts = list(pool.map(lambda k: self._part(k, u, d, steps, at),
                                  range(len(self._parts))))
        total = parts[0]
        for part in parts[1:]:
            total.flat += part.flat
        return total


class InMemoryClassPasses:
    """The ``evaluate`` of :func:`~bigkern.solvers.newton.lockstep_newton.newton_armijo_lockstep`
    over kernel rows held in memory: one pass serves every running one-vs-rest problem.

    Split into parts summed side by side, ``block_rows`` at a time, as
    :class:`InMemoryNewtonPasses`; each block is added to all the problems' sums at
    once (:func:`~bigkern.kernels.class_row_sums.accumulate_classes`), and the rows are
    never overwritten.

    Parameters
    ----------
    A : ndarray, shape (n, dim)
        Augmented kernel rows ``[K(x_i, Ã), −1]``, float64.
    codes : ndarray, shape (n,)
        Class code of each row (problem ``j``'s labels are +1 where it is ``j``).
    loss : object
        The row loss (``value``, ``derivatives``).
    block_rows, threads
        As for :class:`InMemoryNewtonPasses`.

    Attributes
    ----------
    passes : int
        Evaluations run.

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern.solvers.newton.in_memory_newton import InMemoryClassPasses
    >>> from bigkern.solvers.newton.lockstep_newton import newton_armijo_lockstep
    >>> from bigkern.solvers.newton.smooth_svm import SmoothHinge
    >>> x = np.linspace(-3, 3, 30)
    >>> A = np.column_stack([np.exp(-(x[:, None] - [-2.0, 0.0, 2.0]) ** 2), -np.ones(30)])
    >>> rows = InMemoryClassPasses(A, np.digitize(x, [-1.0, 1.0]), SmoothHinge(), block_rows=8)
    >>> out = newton_armijo_lockstep(rows, 4, [0, 1, 2], C=10.0)
    >>> rows.passes == out.passes, all(r.converged for r in out.results)
    (True, True)
    """

    def __init__(self, A: np.ndarray, codes: np.ndarray, loss: Any, *, block_rows: int = 4096,
                 threads: int = 1) -> None:
        self.A = np.ascontiguousarray(A, dtype=np.float64)
        self.codes = np.asarray(codes, dtype=np.float64)
        self.loss = loss
        self.block_rows = max(1, int(block_rows))
        self.passes = 0
        self._parts = row_parts(len(self.A), self.block_rows, threads)

    def _part(self, k: int, points: ClassPoints) -> np.ndarray:
        dim, sizes = self.A.shape[1], points.sizes()
        flat = np.zeros(buffer_size(dim, sizes))
        sums = split_sums(flat, dim, sizes)
        start, stop = self._parts[k]
        for first in range(start, stop, self.block_rows):
            last = min(first + self.block_rows, stop)
            accumulate_classes(sums, self.A[first:last], self.codes[first:last], points,
                               self.loss)
        return flat

    def __call__(self, points: ClassPoints) -> list[RowSums]:
        """The sums of every problem of ``points`` over all rows."""
        from concurrent.futures import ThreadPoolExecutor

        self.passes += 1
        if len(self._parts) == 1:
            flat = self._part(0, points)
        else:
            with blas_controller().limit(limits=1, user_api="blas"), \
                    ThreadPoolExecutor(len(self._parts)) as pool:
                parts = list(pool.map(lambda k: self._part(k, points), range(len(self._parts))))
            flat = parts[0]
            for part in parts[1:]:
                flat += part
        return split_sums(flat, self.A.shape[1], points.sizes())
