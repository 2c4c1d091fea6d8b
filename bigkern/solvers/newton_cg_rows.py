"""The passes of Newton–CG (:mod:`bigkern.solvers.newton_cg`) over kernel rows.

:class:`HeldKernelRows` answers them over augmented kernel rows ``a_i = [K(x_i, Ã), −1]``
held in memory, in the data's precision (float32 data: float32 rows, half the memory;
the kernel values are those a chunked pass forms). The line search's products run in
float64 (blocks of rows converted on the fly), so the gradient, hence the solution, is
that of the rows as held; the curvature products ``Σ ℓ'' a (a·p)`` run on the rows with
curvature only (gathered once per Newton step) in the rows' precision, as they only
steer CG.

:class:`ChunkedNewtonCG` answers them over chunked (dask) data: each pass is one read,
every chunk forming its kernel blocks anew; the line pass sums the losses at the trial
steps and the gradient, the curvature pass ``Σ ℓ''(a·u) a (a·p)``, in float64.
:func:`newton_cg` runs the method with either.
"""

from __future__ import annotations

from typing import Any

import dask
import numpy as np

from bigkern import config
from bigkern.kernels import Basis, kernel_blocks
from bigkern.kernels.basis import block_step
from bigkern.reduce.reduced._row_pass import check_counts, run_pass, usable_rows
from bigkern.solvers.finite_newton import exact_line_search
from bigkern.solvers.newton_cg import (
    CurvaturePass,
    ExactLinePass,
    LinePass,
    LineSums,
    NewtonCGResult,
    newton_cg_iterates,
)
from bigkern.solvers.smooth_svm import drive

__all__ = ["ChunkedNewtonCG", "HeldKernelRows", "held_kernel_rows", "newton_cg"]

#: Bytes of a block of rows converted to float64 for a product, or read twice by the
#: curvature product: small enough to stay in cache.
_CACHE_BYTES = 2**20


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

    Attributes
    ----------
    passes : int
        Passes answered (products over all rows, or over the rows with curvature).

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern.solvers.newton_cg import CurvaturePass
    >>> from bigkern.solvers.newton_cg_rows import HeldKernelRows
    >>> from bigkern.solvers.smooth_losses import SquaredHinge
    >>> A = np.array([[1.0, -1.0], [0.5, -1.0], [0.0, -1.0]])
    >>> rows = HeldKernelRows(A, np.array([1.0, 1.0, -1.0]), SquaredHinge())
    >>> rows(CurvaturePass(np.zeros(2), np.array([1.0, 0.0]))).tolist()  # Σ a (a·p)
    [1.25, -1.5]
    """

    def __init__(self, A: np.ndarray, y: np.ndarray, loss: Any) -> None:
        self.A, self.y, self.loss = A, np.asarray(y, dtype=np.float64), loss
        self.passes = 0
        self._point: np.ndarray | None = None  # where _f holds a·u
        self._f: np.ndarray | None = None
        self._curved: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def _blocks(self) -> tuple[int, np.ndarray]:
        """Rows per float64 block of a product, and its work buffer (in cache)."""
        rows = max(16, _CACHE_BYTES // (8 * self.A.shape[1]))
        return rows, np.empty((rows, self.A.shape[1]))

    def _times(self, V: np.ndarray) -> np.ndarray:
        """``A V`` in float64 (V (dim, k))."""
        if self.A.dtype == np.float64:
            return self.A @ V
        out = np.empty((len(self.A), V.shape[1]))
        rows, work = self._blocks()
        for s in range(0, len(self.A), rows):
            block = self.A[s:s + rows]
            b = work[:len(block)]
            b[...] = block
            np.matmul(b, V, out=out[s:s + rows])
        return out

    def _weights(self, w: np.ndarray) -> np.ndarray:
        """``wᵀ A`` in float64."""
        if self.A.dtype == np.float64:
            return w @ self.A
        out = np.zeros(self.A.shape[1])
        rows, work = self._blocks()
        for s in range(0, len(self.A), rows):
            block = self.A[s:s + rows]
            b = work[:len(block)]
            b[...] = block
            out += w[s:s + rows] @ b
        return out

    def __call__(self, request: LinePass | ExactLinePass | CurvaturePass) -> Any:
        """Answer one pass of :func:`~bigkern.solvers.newton_cg.newton_cg_iterates`."""
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
        # block by block, so that Bᵀ(w ∘ B p) reads each block from memory once
        p = p.astype(B.dtype)
        out = np.zeros(B.shape[1], dtype=B.dtype)
        rows = max(16, _CACHE_BYTES // max(1, B.itemsize * B.shape[1]))
        for s in range(0, len(B), rows):
            b = B[s:s + rows]
            out += (w[s:s + rows] * (b @ p)).astype(B.dtype) @ b
        return out.astype(np.float64)


def _line_chunk(Xb: np.ndarray, yb: np.ndarray, mb: np.ndarray | None = None, *, start: int,
                basis: Basis, point: dict[str, Any], loss: Any,
                block_rows: int | None) -> dict[str, Any]:
    """One chunk's loss sums at the trial steps and its gradient sum (flat, steps + dim)."""
    X, y, valid, counts = usable_rows(Xb, yb, start, mb)
    m = basis.n_basis
    steps = np.asarray(point["steps"], dtype=np.float64)
    acc = np.zeros(len(steps) + m + 1)
    UD = np.column_stack([point["u"], point["d"]])
    step = block_step(max(1, len(X)), block_rows)
    work = np.empty((step, m + 1))
    for rows, G in kernel_blocks(X, basis, valid=valid, block_rows=step):
        A = work[:len(rows)]
        A[:, :m] = G
        A[:, m] = -1.0
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
    step = block_step(max(1, len(X)), block_rows)
    work = np.empty((step, m + 1))
    for rows, G in kernel_blocks(X, basis, valid=valid, block_rows=step):
        A = work[:len(rows)]
        A[:, :m] = G
        A[:, m] = -1.0
        fq = A @ UP
        _, w = loss.derivatives(fq[:, 0], y[rows])
        acc += (w * fq[:, 1]) @ A
    return {"acc": acc, "counts": counts}


class ChunkedNewtonCG:
    """The passes of Newton–CG over chunked data: one read each.

    Ships the basis once (scattered on a distributed client, else one delayed
    object); use as a context manager.

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
        self._handle: Any = None
        self._future: Any = None

    def __enter__(self) -> ChunkedNewtonCG:
        from bigkern.cluster.compute import current_client

        client = current_client()
        if client is not None:
            self._future = client.scatter(self.basis, broadcast=True, hash=False)
            self._handle = self._future
        else:
            self._handle = dask.delayed(self.basis, pure=True, traverse=False)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._future is not None:
            self._future.release()
        self._future = self._handle = None

    def __call__(self, request: LinePass | CurvaturePass) -> Any:
        """One read answering a pass of :func:`~bigkern.solvers.newton_cg.newton_cg_iterates`."""
        if self._handle is None:
            raise RuntimeError("use ChunkedNewtonCG as a context manager (with ...:)")
        self.passes += 1
        m = self.basis.n_basis
        if isinstance(request, LinePass):
            steps = np.asarray(request.steps, dtype=np.float64)
            point = {"u": request.u, "d": request.d, "steps": steps, "at": float(request.at)}
            func, what = _line_chunk, "line search"
        else:
            point = {"u": request.u, "p": request.p}
            func, what = _curvature_chunk, "CG product"
        res = run_pass(self.X, self.y, func, name=f"reduced-newton-cg-{what.split()[0]}",
                       label=f"Newton-CG pass {self.passes}, {what} ({m} centers)",
                       split_every=self.split_every, mask=self.mask, basis=self._handle,
                       point=dask.delayed(point, pure=True, traverse=False), loss=self.loss,
                       block_rows=config.get("kernel_block_rows"))
        self.counts = dict(res["counts"])
        if isinstance(request, LinePass):
            k = len(request.steps)
            return LineSums(res["acc"][:k], res["acc"][k:])
        return res["acc"]


def newton_cg(answer: Any, dim: int, **options: Any) -> NewtonCGResult:
    """Run :func:`~bigkern.solvers.newton_cg.newton_cg_iterates` (``options``) with
    ``answer`` (a :class:`HeldKernelRows` or an entered :class:`ChunkedNewtonCG`).

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern.solvers.finite_newton import finite_newton
    >>> from bigkern.solvers.newton_cg_rows import HeldKernelRows, newton_cg
    >>> from bigkern.solvers.smooth_losses import SquaredHinge
    >>> x = np.linspace(-2, 2, 40)
    >>> A, y = np.column_stack([x, x**2, -np.ones(40)]), np.sign(x + 0.1)
    >>> res = newton_cg(HeldKernelRows(A, y, SquaredHinge()), 3, C=10.0, tol=1e-10)
    >>> bool(np.allclose(res.u, finite_newton(A, y, C=10.0, tol=1e-10).u, atol=1e-8))
    True
    """
    return drive(newton_cg_iterates(dim, **options), answer)
