"""The distributed pass of the smooth reduced SVM: one read of the data per Newton iteration.

Each pass of :func:`bigkern.solvers.newton.smooth_svm.newton_armijo` needs, over all
usable rows, the sums ``Σ ℓ`` (at a batch of step sizes), ``Σ ℓ' a`` and
``Σ ℓ'' a aᵀ`` of the augmented reduced-kernel rows ``a = [K(x, Ã), −1]``
(see that module). Here every row chunk

1. keeps its usable rows (a non-finite feature or target: left out and counted;
   over ``bigkern.max_nonfinite_fraction`` of the present rows is an error);
2. forms its kernel blocks ``K(X_b, Ã)`` with :func:`bigkern.kernels.kernel_blocks`
   (in the data's precision: float32 data → float32 exponentials), ``bigkern.kernel_block_rows``
   rows at a time;
3. copies each block into a float64 work buffer ``[G | −1]`` and folds it into the
   float64 sums with :func:`~bigkern.kernels.row_sums.accumulate_block` (two
   matrix–vector products, a vectorized loss batch, one BLAS ``syrk``), then drops it
   (the ``syrk`` — ``k·m̃²`` of the ``k·m̃·(d + 4)`` work — may run on float32
   copies, see ``hessian_dtype``);

and the chunks' flat partial sums (``(m̃+1)² + (m̃+1) + #steps`` floats, never
n-sized) are added in a tree of fan-in ``split_every``. The basis Ã is shipped
once per fit: scattered to every worker when a distributed client is in use,
else one :func:`dask.delayed` object shared by all the tasks of a pass.

For k classes (one-vs-rest), ``y`` holds each row's class code and
:meth:`ReducedNewtonPasses.classes` is the pass of all the running problems at once: each
kernel block, formed once, is added to the sums of every problem
(:func:`~bigkern.kernels.class_row_sums.accumulate_classes`), and the chunks' partials are
the problems' flat sums end to end.
"""

from __future__ import annotations

from typing import Any

import dask
import numpy as np

from bigkern import config
from bigkern.kernels import Basis, kernel_blocks
from bigkern.kernels.class_row_sums import (
    ClassPoints,
    accumulate_classes,
    buffer_size,
    split_sums,
)
from bigkern.kernels.row_sums import RowSums, accumulate_block
from bigkern.reduce.passes import as_row_chunked
from bigkern.reduce.reduced._row_pass import (
    BasisBroadcast,
    augmented_blocks,
    check_counts,
    run_pass,
    usable_rows,
)

__all__ = ["ReducedNewtonPasses", "augmented_kernel_rows", "newton_sums"]


def _newton_chunk(Xb: np.ndarray, yb: np.ndarray, mb: np.ndarray | None = None, *, start: int,
                  basis: Basis, point: dict[str, Any], loss: Any,
                  block_rows: int | None) -> dict[str, Any]:
    """The flat :class:`RowSums` of one chunk at ``point`` (u, d, steps, at), and its counts."""
    X, y, valid, counts = usable_rows(Xb, yb, start, mb)
    m = basis.n_basis
    steps = np.asarray(point["steps"], dtype=np.float64)
    sums = RowSums.zeros(m + 1, len(steps))
    for rows, A in augmented_blocks(X, basis, valid, block_rows):
        accumulate_block(sums, A, y[rows], point["u"], point["d"], steps, point["at"], loss,
                         hessian_dtype=point.get("hessian_dtype", np.float64))
    return {"acc": sums.flat, "counts": counts}


def _classes_chunk(Xb: np.ndarray, yb: np.ndarray, mb: np.ndarray | None = None, *,
                   start: int, basis: Basis, points: ClassPoints, loss: Any,
                   block_rows: int | None) -> dict[str, Any]:
    """The flat sums of every problem of ``points`` over one chunk (``yb``: class codes)."""
    X, codes, valid, counts = usable_rows(Xb, yb, start, mb)
    m = basis.n_basis
    flat = np.zeros(buffer_size(m + 1, points.sizes()))
    sums = split_sums(flat, m + 1, points.sizes())
    for rows, A in augmented_blocks(X, basis, valid, block_rows):
        accumulate_classes(sums, A, codes[rows], points, loss)
    return {"acc": flat, "counts": counts}


def augmented_kernel_rows(X: np.ndarray, y: np.ndarray, basis: Basis,
                          mask: np.ndarray | None = None
                          ) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, int]]:
    """The rows ``a_i = [K(x_i, Ã), −1]`` of every usable row of in-memory data, in float64.

    What one chunk of a pass forms block by block (the same kernel values, in the
    data's precision, copied to float64), kept whole for an in-memory solver
    (:func:`~bigkern.solvers.newton.finite_newton.finite_newton`): ``n_usable × (m̃ + 1)``
    float64. The row counts are checked as a pass checks them.

    Parameters
    ----------
    X : ndarray, shape (n, d)
        Raw samples.
    y : ndarray, shape (n,)
        Targets (±1 labels for the hinge losses).
    basis : Basis
        The reduced set Ã, width and standardization.
    mask : ndarray of bool, shape (n,), optional
        Rows to use; the others are left out and counted (their ``y`` never read).

    Returns
    -------
    A : ndarray, shape (n_usable, m̃ + 1)
    y : ndarray, shape (n_usable,)
        The usable rows' targets, float64.
    usable : ndarray of bool, shape (n,)
        Which rows of ``X`` the rows of ``A`` are.
    counts : dict
        The row counts of a pass (``rows``, ``valid``, ``nonfinite``, ...).

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern.kernels import Basis
    >>> from bigkern.reduce.reduced.svm import augmented_kernel_rows
    >>> X = np.array([[0.0, 0.0], [np.nan, 1.0], [1.0, 0.0], [2.0, 0.0], [0.0, 1.0]])
    >>> basis = Basis.checked(X[[0]], 1.0, 2, np.zeros(2), np.ones(2))
    >>> A, y, usable, counts = augmented_kernel_rows(X, np.array([1, 1, -1, -1, 1.0]), basis)
    >>> A.round(4).tolist()
    [[1.0, -1.0], [0.6065, -1.0], [0.1353, -1.0], [0.6065, -1.0]]
    >>> y.tolist(), usable.tolist(), counts["nonfinite"]
    ([1.0, -1.0, -1.0, 1.0], [True, False, True, True, True], 1)
    """
    Xf, yf, valid, counts = usable_rows(X, y, 0, mask)
    check_counts(counts)
    m = basis.n_basis
    A = np.empty((int(valid.sum()), m + 1))
    A[:, m] = -1.0
    position = np.cumsum(valid) - 1
    for rows, G in kernel_blocks(Xf, basis, valid=valid,
                                 block_rows=config.get("kernel_block_rows")):
        A[position[rows], :m] = G
    return A, yf[valid], valid, counts


def newton_sums(X: Any, y: Any, basis: Basis, u: np.ndarray, d: np.ndarray,
                steps: Any, at: float, *, loss: Any, split_every: int | None = None,
                mask: Any = None) -> tuple[RowSums, dict[str, int]]:
    """One pass: the :class:`RowSums` over all usable rows of ``X`` (n, d) and ``y`` (n,).

    ``f_i = a_i·(u + λ d)``; the loss at every ``λ`` in ``steps``, the gradient and
    Hessian sums at ``λ = at``. Rows where ``mask`` (n,) is false are left out.
    Returns the sums and the row counts of the pass.
    """
    Xd, yd, md = as_row_chunked(X, y, mask)
    with ReducedNewtonPasses(Xd, yd, basis, loss, split_every=split_every, mask=md) as passes:
        sums = passes(u, d, steps, at)
    return sums, passes.counts


class ReducedNewtonPasses(BasisBroadcast):
    """The ``evaluate`` of :func:`~bigkern.solvers.newton.smooth_svm.newton_armijo` over
    chunked data.

    Ships the basis to the workers once (a scattered, broadcast future on a
    distributed client; otherwise one delayed object) and counts the passes.
    Use as a context manager so the scattered basis is released.

    Parameters
    ----------
    X : dask array, shape (n, d)
        Samples, row-chunked (see :func:`bigkern.reduce.passes.as_row_chunked`).
    y : dask array, shape (n,)
        Targets: ±1 labels for the smooth hinge; for :meth:`classes`, class codes.
    basis : Basis
        The reduced set Ã (standardized), width and standardization.
    loss : object
        The row loss (``value``, ``derivatives``), e.g.
        :class:`~bigkern.solvers.newton.smooth_svm.SmoothHinge`.
    split_every : int, optional
        Fan-in of the tree reduction.
    mask : dask array of bool, shape (n,), optional
        Rows to use, chunked like ``X``; the others are left out and counted.
    hessian_dtype : {"float64", "float32"}
        Precision of the Hessian's ``syrk`` products (sums are float64 either way);
        :meth:`exact_hessian` switches to float64 — pass it as ``refine`` to
        :func:`~bigkern.solvers.newton.smooth_svm.newton_armijo`.

    Attributes
    ----------
    passes : int
        Passes run.
    counts : dict
        Row counts of the last pass (``valid``, ``absent``, ``nonfinite``, ...).
    """

    def __init__(self, X: Any, y: Any, basis: Basis, loss: Any, *,
                 split_every: int | None = None, hessian_dtype: Any = "float64",
                 mask: Any = None) -> None:
        if np.dtype(hessian_dtype) not in (np.float32, np.float64):
            raise ValueError(f"hessian_dtype must be float32 or float64; got {hessian_dtype!r}")
        self.X, self.y, self.basis, self.loss = X, y, basis, loss
        self.mask = mask
        self.hessian_dtype = np.dtype(hessian_dtype)
        self.split_every = split_every
        self.passes = 0
        self.counts: dict[str, int] = {}

    def exact_hessian(self) -> None:
        """Form the Hessian in float64 from the next pass on."""
        self.hessian_dtype = np.dtype(np.float64)

    def __call__(self, u: np.ndarray, d: np.ndarray, steps: Any, at: float) -> RowSums:
        """One pass (see :func:`newton_sums`)."""
        handle = self.basis_handle("ReducedNewtonPasses")
        self.passes += 1
        steps = np.asarray(steps, dtype=np.float64)
        point = dask.delayed({"u": np.asarray(u, dtype=np.float64),
                              "d": np.asarray(d, dtype=np.float64), "steps": steps,
                              "at": float(at), "hessian_dtype": self.hessian_dtype},
                             pure=True, traverse=False)
        m = self.basis.n_basis
        res = run_pass(self.X, self.y, _newton_chunk, name="reduced-svm-newton",
                       label=f"reduced SVM pass {self.passes} ({m} centers)",
                       split_every=self.split_every, mask=self.mask, basis=handle,
                       point=point,
                       loss=self.loss, block_rows=config.get("kernel_block_rows"))
        self.counts = dict(res["counts"])
        return RowSums(res["acc"], m + 1, len(steps))

    def classes(self, points: ClassPoints) -> list[RowSums]:
        """One pass serving every one-vs-rest problem of ``points`` (``y`` holds class codes).

        The ``evaluate`` of :func:`~bigkern.solvers.newton.lockstep_newton.newton_armijo_lockstep`:
        each chunk's kernel block is formed once and added to every problem's sums.
        """
        handle = self.basis_handle("ReducedNewtonPasses")
        self.passes += 1
        m = self.basis.n_basis
        shipped = dask.delayed(points, pure=True, traverse=False)
        res = run_pass(self.X, self.y, _classes_chunk, name="reduced-svm-newton",
                       label=f"reduced SVM pass {self.passes} ({m} centers, "
                             f"{len(points.classes)} classes)",
                       split_every=self.split_every, mask=self.mask, basis=handle,
                       points=shipped, loss=self.loss,
                       block_rows=config.get("kernel_block_rows"))
        self.counts = dict(res["counts"])
        return split_sums(res["acc"], m + 1, points.sizes())
