"""Newton–CG (:mod:`bigkern.solvers.newton_cg`) over kernel rows held in memory.

:class:`HeldKernelRows` answers the method's passes over augmented kernel rows
``a_i = [K(x_i, Ã), −1]`` held in memory, in the data's precision (float32 data: float32
rows, half the memory; :func:`bigkern.reduce.reduced.newton_cg_passes.held_kernel_rows`
forms them). The line search's products run in float64 (blocks of rows converted on the
fly), so the gradient, hence the solution, is that of the rows as held; the curvature
products ``Σ ℓ'' a (a·p)`` run on the rows with curvature only (gathered once per Newton
step) in the rows' precision, as they only steer CG. :func:`newton_cg` runs the method
with it, or with any callable answering the same passes (the chunked one the model
builds from :class:`bigkern.reduce.reduced.newton_cg_passes.ChunkedNewtonCG`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from bigkern.solvers.newton.finite_newton import exact_line_search
from bigkern.solvers.newton.smooth_svm import drive
from bigkern.solvers.newton_cg.method import (
    CurvaturePass,
    ExactLinePass,
    LinePass,
    LineSums,
    NewtonCGResult,
    newton_cg_iterates,
)

__all__ = ["HeldKernelRows", "newton_cg"]


#: Bytes of a block of rows converted to float64 for a product, or read twice by the
#: curvature product: small enough to stay in cache.
_CACHE_BYTES = 2**20

#: Most parts the rows of a product are cut into, run side by side on the cores. The
#: cut depends on the rows alone, not on the cores, so that the sums, added part by
#: part in order, are the same on any machine.
MOST_PARTS = 8

#: Fewest blocks a part holds: a thread's share of a product is worth its hand-over.
PART_BLOCKS = 4


def row_parts(n: int, block_rows: int) -> list[tuple[int, int]]:
    """Contiguous parts of ``n`` rows, whole blocks of ``block_rows`` each (but the
    last), at least :data:`PART_BLOCKS` blocks a part and at most :data:`MOST_PARTS`
    parts.

    >>> row_parts(10, 3)
    [(0, 10)]
    >>> row_parts(29, 3)
    [(0, 15), (15, 29)]
    >>> len(row_parts(10**6, 100))
    8
    """
    blocks = max(1, -(-n // block_rows))
    parts = max(1, min(MOST_PARTS, blocks // PART_BLOCKS))
    cuts = [block_rows * (blocks * j // parts) for j in range(parts)] + [n]
    return [(min(cuts[j], n), min(cuts[j + 1], n)) for j in range(parts)]


#: One pool of threads for the process, and the process it was made in: a process forked
#: from that one inherits the pool but not its threads, and makes its own.
_POOL: tuple[int, ThreadPoolExecutor] | None = None


def _side_by_side(part: Callable[[tuple[int, int]], Any], parts: list[tuple[int, int]],
                  threads: int) -> list[Any]:
    """``part`` of every part, on up to ``threads`` threads (of one pool for the process),
    in the parts' order."""
    global _POOL
    if min(threads, len(parts)) <= 1:
        return [part(b) for b in parts]
    if _POOL is None or _POOL[0] != os.getpid():
        _POOL = (os.getpid(), ThreadPoolExecutor(os.cpu_count() or 1,
                                                 thread_name_prefix="bigkern-rows"))
    return list(_POOL[1].map(part, parts))


def _in_order(partials: list[np.ndarray], dim: int) -> np.ndarray:
    """The parts' sums added in order, in float64."""
    out = np.zeros(dim)
    for acc in partials:
        out += acc
    return out


class HeldKernelRows:
    """The passes of Newton–CG over augmented kernel rows held in memory.

    Parameters
    ----------
    A : ndarray, shape (n, dim)
        Augmented kernel rows, float32 or float64.
    y : ndarray, shape (n,)
        Targets.
    loss : object
        The row loss (``value``, ``derivatives``).
    threads : int, optional
        Threads a product's row parts (:func:`row_parts`) run on (default: one per
        core; 1 where the caller runs problems side by side already).

    Attributes
    ----------
    passes : int
        Passes answered (products over all rows, or over the rows with curvature).

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern.solvers.newton_cg.method import CurvaturePass
    >>> from bigkern.solvers.newton_cg.held_rows import HeldKernelRows
    >>> from bigkern.solvers.newton.smooth_losses import SquaredHinge
    >>> A = np.array([[1.0, -1.0], [0.5, -1.0], [0.0, -1.0]])
    >>> rows = HeldKernelRows(A, np.array([1.0, 1.0, -1.0]), SquaredHinge())
    >>> rows(CurvaturePass(np.zeros(2), np.array([1.0, 0.0]))).tolist()  # Σ a (a·p)
    [1.25, -1.5]
    """

    def __init__(self, A: np.ndarray, y: np.ndarray, loss: Any,
                 threads: int | None = None) -> None:
        self.A, self.y, self.loss = A, np.asarray(y, dtype=np.float64), loss
        self.threads = int(threads or os.cpu_count() or 1)
        self.passes = 0
        self._point: np.ndarray | None = None  # where _f holds a·u
        self._f: np.ndarray | None = None
        self._curved: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def _blocks(self) -> tuple[int, np.ndarray]:
        """Rows per float64 block of a product, and a work buffer for one (in cache)."""
        rows = max(16, _CACHE_BYTES // (8 * self.A.shape[1]))
        return rows, np.empty((rows, self.A.shape[1]))

    def _float64_blocks(self, bounds: tuple[int, int]) -> Iterator[tuple[int, np.ndarray]]:
        """The rows ``bounds`` in float64 with the first row of each: float64 rows as one
        view, float32 rows a block at a time through a work buffer of the caller's own."""
        if self.A.dtype == np.float64:
            yield bounds[0], self.A[bounds[0]:bounds[1]]
            return
        rows, work = self._blocks()
        for s in range(bounds[0], bounds[1], rows):
            block = self.A[s:min(s + rows, bounds[1])]
            b = work[:len(block)]
            b[...] = block
            yield s, b

    def _times(self, V: np.ndarray) -> np.ndarray:
        """``A V`` in float64 (V (dim, k)); the parts' rows side by side."""
        out = np.empty((len(self.A), V.shape[1]))

        def part(bounds: tuple[int, int]) -> None:
            for s, b in self._float64_blocks(bounds):
                np.matmul(b, V, out=out[s:s + len(b)])

        _side_by_side(part, row_parts(len(self.A), self._blocks()[0]), self.threads)
        return out

    def _weights(self, w: np.ndarray) -> np.ndarray:
        """``wᵀ A`` in float64: each part's sum, the parts' added in order."""
        def part(bounds: tuple[int, int]) -> np.ndarray:
            acc = np.zeros(self.A.shape[1])
            for s, b in self._float64_blocks(bounds):
                acc += w[s:s + len(b)] @ b
            return acc

        parts = row_parts(len(self.A), self._blocks()[0])
        return _in_order(_side_by_side(part, parts, self.threads), self.A.shape[1])

    def __call__(self, request: LinePass | ExactLinePass | CurvaturePass) -> Any:
        """Answer one pass of :func:`~bigkern.solvers.newton_cg.method.newton_cg_iterates`."""
        self.passes += 1
        if isinstance(request, LinePass):
            return self._line(request)
        if isinstance(request, ExactLinePass):
            return self._exact_line(request)
        return self._curvature(request.u, request.p)

    def _exact_line(self, q: ExactLinePass) -> LineSums:
        """The squared hinge's exact step along ``d``, its loss and gradient sums."""
        if self._point is None or not np.array_equal(q.u, self._point):
            self._point, self._f = np.array(q.u), self._times(q.u[:, None])[:, 0]
        s, t = self._f, self._times(q.d[:, None])[:, 0]
        lam = exact_line_search(1.0 - self.y * s, self.y * t, float(q.u @ q.d),
                                float(q.d @ q.d), q.C)
        f = s + lam * t
        d1, _ = self.loss.derivatives(f, self.y)
        self._point, self._f, self._curved = q.u + lam * q.d, f, None
        return LineSums(np.array([float(self.loss.value(f, self.y).sum())]),
                        self._weights(d1), lam)

    def _line(self, q: LinePass) -> LineSums:
        st = self._times(np.column_stack([q.u, q.d]))
        s, t = st[:, 0], st[:, 1]
        steps = np.asarray(q.steps, dtype=np.float64)
        loss = np.array([float(self.loss.value(s + lam * t, self.y).sum()) for lam in steps])
        f = s + q.at * t
        d1, _ = self.loss.derivatives(f, self.y)
        # the point the next curvature passes ask for, when the step q.at is taken
        self._point, self._f, self._curved = q.u + q.at * q.d, f, None
        return LineSums(loss, self._weights(d1))

    def _curvature(self, u: np.ndarray, p: np.ndarray) -> np.ndarray:
        if self._curved is None or self._point is None or not np.array_equal(u, self._point):
            if self._point is None or not np.array_equal(u, self._point):
                self._point, self._f = np.array(u), self._times(u[:, None])[:, 0]
            _, w = self.loss.derivatives(self._f, self.y)
            rows = np.flatnonzero(w > 0.0)
            self._curved = (np.ascontiguousarray(self.A[rows]), w[rows], rows)
        B, w, _ = self._curved
        # block by block, so that Bᵀ(w ∘ B p) reads each block from memory once; the
        # parts side by side, each summed in the rows' precision, added in order
        p = p.astype(B.dtype)
        rows = max(16, _CACHE_BYTES // max(1, B.itemsize * B.shape[1]))

        def part(bounds: tuple[int, int]) -> np.ndarray:
            acc = np.zeros(B.shape[1], dtype=B.dtype)
            for s in range(bounds[0], bounds[1], rows):
                b = B[s:min(s + rows, bounds[1])]
                acc += (w[s:s + len(b)] * (b @ p)).astype(B.dtype) @ b
            return acc

        return _in_order(_side_by_side(part, row_parts(len(B), rows), self.threads),
                         B.shape[1])


def newton_cg(answer: Any, dim: int, **options: Any) -> NewtonCGResult:
    """Run :func:`~bigkern.solvers.newton_cg.method.newton_cg_iterates` (``options``) with
    ``answer`` (a :class:`HeldKernelRows`, or a callable answering the same passes).

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern.solvers.newton.finite_newton import finite_newton
    >>> from bigkern.solvers.newton_cg.held_rows import HeldKernelRows, newton_cg
    >>> from bigkern.solvers.newton.smooth_losses import SquaredHinge
    >>> x = np.linspace(-2, 2, 40)
    >>> A, y = np.column_stack([x, x**2, -np.ones(40)]), np.sign(x + 0.1)
    >>> res = newton_cg(HeldKernelRows(A, y, SquaredHinge()), 3, C=10.0, tol=1e-10)
    >>> bool(np.allclose(res.u, finite_newton(A, y, C=10.0, tol=1e-10).u, atol=1e-8))
    True
    """
    return drive(newton_cg_iterates(dim, **options), answer)
