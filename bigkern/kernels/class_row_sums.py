"""The Newton sums of k one-vs-rest problems from one block of augmented kernel rows.

A k-class reduced SVM (one-vs-rest) solves k problems on the same rows ``a_i =
[K(x_i, Ã), −1]``: problem ``j`` labels a row +1 where its class code is ``j`` and −1
elsewhere. A Newton pass of each needs the sums of :class:`~bigkern.kernels.row_sums.RowSums`
at its own point; :func:`accumulate_classes` adds one block of rows to the sums of every
problem still running, so that the kernel block (the costly part of a distributed
pass) is formed once for all of them:

* the decision values of all problems at their points and along their directions are
  one matrix product ``A [U D]`` (``U``, ``D``: one column per problem);
* the gradients are one product ``ℓ'ᵀ A``;
* each problem's Hessian is a ``syrk`` of its own curved rows only. In one-vs-rest
  most rows are far outside problem ``j``'s margin (those of the other classes,
  once the fit has separated them): the squared hinge gives them no curvature at
  all, and the smooth hinge gives them curvature below ``negligible``, which a
  k-class fit leaves out of the Hessian (it only steers the steps: the gradient,
  hence the solution, is exact). Problems whose curvatures are equal row for row (all
  of them at the first pass, from ``u = 0``) share one ``syrk``.

It lives below both the distributed pass (:mod:`bigkern.reduce.reduced.svm`) and the
in-memory solver (:mod:`bigkern.solvers.newton.in_memory_newton`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bigkern.kernels.basis import syrk_product
from bigkern.kernels.row_sums import RowSums

__all__ = ["ClassPoints", "accumulate_classes", "buffer_size", "one_vs_rest", "split_sums"]


@dataclass(frozen=True)
class ClassPoints:
    """Where one pass evaluates each of the running one-vs-rest problems.

    Attributes
    ----------
    classes : ndarray of int, shape (J,)
        The class code of each problem's positive rows.
    U, D : ndarray, shape (dim, J)
        Each problem's base point and direction (columns).
    steps : tuple of ndarray
        Each problem's trial steps (the loss is summed at ``u + λ d`` for each).
    at : ndarray, shape (J,)
        Each problem's step for the gradient and Hessian sums.
    float32_hessian : ndarray of bool, shape (J,)
        Whether a problem's Hessian products run in float32.
    negligible : float
        Curvature ``ℓ''`` at or below which a row is left out of a Hessian (0: only the
        rows with none, as for one problem).
    hessian : ndarray of bool, shape (J,), optional
        Whether a problem's Hessian is summed (None: every problem's); a problem without
        gets its loss and gradient only.

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern.kernels.class_row_sums import ClassPoints
    >>> p = ClassPoints.at_zero(np.arange(3), dim=4)
    >>> p.U.shape, p.sizes()
    ((4, 3), [1, 1, 1])
    """

    classes: np.ndarray
    U: np.ndarray
    D: np.ndarray
    steps: tuple[np.ndarray, ...]
    at: np.ndarray
    float32_hessian: np.ndarray
    negligible: float = 0.0
    hessian: np.ndarray | None = None

    @classmethod
    def at_zero(cls, classes: Sequence[int], dim: int) -> ClassPoints:
        """Every problem at ``u = 0`` (one step 0): the first pass of a fit."""
        k = len(classes)
        return cls(np.asarray(classes, dtype=np.int64), np.zeros((dim, k)), np.zeros((dim, k)),
                   tuple(np.zeros(1) for _ in range(k)), np.zeros(k), np.zeros(k, dtype=bool))

    def sizes(self) -> list[int]:
        """Trial steps of each problem."""
        return [len(s) for s in self.steps]


def split_sums(flat: np.ndarray, dim: int, n_steps: Sequence[int]) -> list[RowSums]:
    """The problems' :class:`RowSums` as views of one flat buffer (they add as one array)."""
    out, start = [], 0
    for n in n_steps:
        size = dim * dim + dim + int(n)
        out.append(RowSums(flat[start:start + size], dim, int(n)))
        start += size
    if start != len(flat):
        raise ValueError(f"a buffer of {len(flat)} entries does not hold sums of dim={dim} for "
                         f"steps {list(n_steps)}")
    return out


def buffer_size(dim: int, n_steps: Sequence[int]) -> int:
    """Entries of the flat buffer of :func:`split_sums`."""
    return sum(dim * dim + dim + int(n) for n in n_steps)


def one_vs_rest(codes: np.ndarray, classes: np.ndarray) -> np.ndarray:
    """Labels ±1 of each problem, shape (n, J): +1 where the row's code is the problem's class.

    >>> one_vs_rest(np.array([0.0, 2.0, 1.0]), np.array([0, 2])).tolist()
    [[1.0, -1.0], [-1.0, 1.0], [-1.0, -1.0]]
    """
    return np.where(np.asarray(codes)[:, None] == np.asarray(classes)[None, :], 1.0, -1.0)


def accumulate_classes(sums: Sequence[RowSums], A: np.ndarray, codes: np.ndarray,
                       points: ClassPoints, loss: Any) -> None:
    """Add the rows ``A`` (b, dim; float64, left unchanged) of class ``codes`` to every
    problem's sums, in place.

    Problem ``q`` gets what :func:`~bigkern.kernels.row_sums.accumulate_block` would add
    for labels ``+1`` where ``codes == points.classes[q]`` (−1 elsewhere) at its own
    point, up to round-off (its products are batched over the problems), except that the
    rows whose curvature is at most ``points.negligible`` are left out of its Hessian.
    """
    Y = one_vs_rest(codes, points.classes)
    J = len(points.classes)
    ST = A @ np.hstack([points.U, points.D])  # one read of the block for both
    S, T = ST[:, :J], ST[:, J:]
    for q, s in enumerate(sums):
        lam = points.steps[q]
        s.loss += loss.value(S[:, q, None] + T[:, q, None] * lam[None, :],
                             Y[:, q, None]).sum(axis=0)
    d1, d2 = loss.derivatives(S + T * points.at[None, :], Y)
    grads = d1.T @ A
    done: list[tuple[int, np.ndarray]] = []  # (problem, its Hessian increment) so far
    single: np.ndarray | None = None  # the block in float32, made once for all the problems
    for q, s in enumerate(sums):
        s.grad += grads[q]
        if points.hessian is not None and not points.hessian[q]:
            continue
        w = d2[:, q]
        shared = next((inc for p, inc in done
                       if points.float32_hessian[p] == points.float32_hessian[q]
                       and np.array_equal(d2[:, p], w)), None)
        if shared is None:
            if points.float32_hessian[q] and single is None:
                single = A.astype(np.float32)
            shared = _curved_gram(single if points.float32_hessian[q] else A, w,
                                  points.negligible)
            done.append((q, shared))
        s.hess += shared


def _curved_gram(A: np.ndarray, w: np.ndarray, negligible: float) -> np.ndarray:
    """``Σ w_i a_i a_iᵀ`` over the rows with ``w_i > negligible`` (upper triangle), the
    products in the precision of ``A`` (left unchanged)."""
    curved = w > negligible
    if curved.all():
        return syrk_product(np.multiply(A, np.sqrt(w).astype(A.dtype)[:, None]))
    B = A[curved]  # a copy: scaled in place
    B *= np.sqrt(w[curved]).astype(A.dtype)[:, None]
    return syrk_product(B)
