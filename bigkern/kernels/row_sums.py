"""The sums over augmented kernel rows one Newton pass returns, and how a block adds to them.

For the smooth reduced SVM and SVR (:mod:`bigkern.solvers.newton.smooth_svm`) every row
``i`` has an augmented kernel row ``a_i`` and a decision value ``f_i = a_i·u``;
a pass needs ``Σ ℓ(f_i)`` at a batch of steps, ``Σ ℓ'(f_i) a_i`` and
``Σ ℓ''(f_i) a_i a_iᵀ``. :class:`RowSums` holds them in one flat buffer (so the
sums of chunks add as one array) and :func:`accumulate_block` adds one
in-memory block of rows. Both the distributed pass
(:mod:`bigkern.reduce.reduced.svm`) and the solver's in-memory pass use them,
so they live here, below both: a reduction never imports a solver.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bigkern.kernels.basis import syrk_product

__all__ = ["RowSums", "accumulate_block"]


@dataclass
class RowSums:
    """The sums over rows one pass returns, in one flat float64 buffer (they add as one array).

    Attributes
    ----------
    flat : ndarray
        ``[hess (dim², Fortran order, upper triangle filled), grad (dim), loss (n_steps)]``.
    hess : ndarray, shape (dim, dim)
        ``Σ ℓ''(f_i) a_i a_iᵀ`` at the pass's gradient point; **upper triangle only**
        (see :meth:`hessian_sum`).
    grad : ndarray, shape (dim,)
        ``Σ ℓ'(f_i) a_i`` there.
    loss : ndarray, shape (n_steps,)
        ``Σ ℓ(f_i)`` at each step size of the batch.
    """

    flat: np.ndarray
    dim: int
    n_steps: int
    hess: np.ndarray = field(init=False, repr=False)
    grad: np.ndarray = field(init=False, repr=False)
    loss: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        d2 = self.dim * self.dim
        if self.flat.shape != (d2 + self.dim + self.n_steps,):
            raise ValueError(f"a RowSums buffer for dim={self.dim}, n_steps={self.n_steps} has "
                             f"{d2 + self.dim + self.n_steps} entries; got {self.flat.shape}")
        self.hess = self.flat[:d2].reshape((self.dim, self.dim), order="F")
        self.grad = self.flat[d2:d2 + self.dim]
        self.loss = self.flat[d2 + self.dim:]

    @classmethod
    def zeros(cls, dim: int, n_steps: int) -> RowSums:
        """Empty sums."""
        return cls(np.zeros(dim * dim + dim + n_steps), dim, n_steps)

    def hessian_sum(self) -> np.ndarray:
        """The full symmetric ``Σ ℓ'' a aᵀ`` from its upper triangle."""
        return np.where(_strictly_lower(self.dim), self.hess.T, self.hess)


@functools.lru_cache(maxsize=8)
def _strictly_lower(dim: int) -> np.ndarray:
    """The entries below the diagonal of a ``dim × dim`` matrix (read only: shared)."""
    mask = np.tri(dim, k=-1, dtype=bool)
    mask.flags.writeable = False
    return mask


def accumulate_block(sums: RowSums, A: np.ndarray, y: np.ndarray, u: np.ndarray,
                     d: np.ndarray, steps: np.ndarray, at: float, loss: Any, *,
                     hessian_dtype: Any = np.float64) -> None:
    """Add the rows ``A`` (k, dim; float64, C order) with labels ``y`` to ``sums``, in place.

    Per row ``s = a·u`` and ``t = a·d``; ``sums.loss[j] += Σ ℓ(s + steps[j] t)``;
    ``grad``/``hess`` get ``ℓ'``/``ℓ''`` at ``s + at·t``. The loss and gradient sums are
    float64 products throughout. The Hessian sum is one BLAS ``syrk`` of the rows
    with ``ℓ'' > 0`` scaled by ``√ℓ''``: in float64 by default (``A`` may then be
    overwritten), or with ``hessian_dtype=np.float32`` an ``ssyrk`` of a float32 copy —
    twice the values per vector instruction and half the bytes to read, for a relative
    error of about 1e-6 in this block's Hessian, added to the float64 sum.
    The Hessian only steers Newton's steps; the gradient, hence the solution
    ``∇F = 0``, stays float64-exact (see :func:`newton_armijo`'s ``refine``).
    """
    s = A @ u
    t = A @ d
    sums.loss += loss.value(s[:, None] + t[:, None] * steps[None, :], y[:, None]).sum(axis=0)
    d1, d2 = loss.derivatives(s + at * t, y)
    sums.grad += d1 @ A
    curved = d2 > 0.0
    if not curved.all():
        # rows without curvature add nothing to the Hessian: the squared hinge's rows
        # outside the margin (most rows of a good fit) skip the syrk, its main cost
        A, d2 = A[curved], d2[curved]
    w = np.sqrt(d2)[:, None]
    if np.dtype(hessian_dtype) == np.float32:
        B = np.multiply(A, w, out=np.empty(A.shape, dtype=np.float32), casting="same_kind")
        sums.hess += syrk_product(B)
        return
    A *= w
    sums.hess += syrk_product(A)
