"""The preconditioner of Newton–CG's steps (after Falkon's) and preconditioned CG.

See :mod:`bigkern.solvers.newton_cg` for the method and the preconditioner's reasoning.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

import numpy as np
import scipy.linalg

__all__ = ["REUSE_CHANGED", "SampledPreconditioner", "preconditioned_cg"]


#: :meth:`SampledPreconditioner.at` keeps its P while at most this share of the sampled
#: rows' curvature weights has changed (for the squared hinge: rows entering or leaving
#: the margin). 0: only when none has. Keeping it past 2 % of changes (50,000 rows,
#: 3,000 centres) saved 9 of 17 factorizations but cost 40 % more CG iterations, more
#: than it saved.
REUSE_CHANGED = 0.0


class SampledPreconditioner:
    """Falkon's preconditioner for ``H = I + C Σ ℓ'' a aᵀ``, from a uniform sample of the rows.

    ``P = I + C (n / s) Σ_{j ∈ sample} ℓ''(b_j·u, y_j) b_j b_jᵀ`` estimates ``H``'s sum over
    the ``n`` rows from the augmented kernel rows ``b_j`` of ``s`` rows drawn uniformly
    (Falkon's rows are the centres; a sample of more rows estimates the sum over the
    rows with curvature — for the squared hinge those inside the margin, a fraction of
    the rows — from more of them). The intercept's column ``−1`` is part of each
    ``b_j``, so the ridge ``I`` and the intercept need no special case. Of the sampled
    rows with curvature at most ``most`` are kept (a seeded uniform choice, their
    weight scaled up to stand for the others), so that a step's cost is bounded.
    ``P⁻¹ r = r − Bᵀ (I + B Bᵀ)⁻¹ B r`` (Woodbury, ``B`` the ``k`` weighted rows):
    ``k² (m̃ + 1)`` flops to form and ``k³/3`` to factor per Newton step, ``4 k (m̃ + 1)``
    per application.

    Parameters
    ----------
    rows : ndarray, shape (s, dim)
        Augmented kernel rows ``[K(x_j, Ã), −1]`` of a uniform sample of the fit's rows
        (float32 or float64; the kept ones are used in float64).
    y : ndarray, shape (s,)
        Their targets (±1 labels for the hinge losses).
    n_rows : int
        Rows of the fit, whose sum the sample estimates.
    C : float
        Weight of the data term.
    loss : object
        The row loss (``derivatives``).
    most : int, optional
        Most sampled rows with curvature kept (default: all).
    seed : int
        Seed of the choice among them.

    Examples
    --------
    With every row in the sample, ``P`` is ``H`` itself:

    >>> import numpy as np
    >>> from bigkern.solvers.newton_cg.preconditioning import SampledPreconditioner
    >>> from bigkern.solvers.newton.smooth_losses import SquaredHinge
    >>> rng = np.random.default_rng(0)
    >>> B, y = rng.normal(size=(6, 3)), np.sign(rng.normal(size=6))
    >>> P = SampledPreconditioner(B, y, 6, C=2.0, loss=SquaredHinge())
    >>> H = np.eye(3) + 2.0 * B.T @ B  # every row in the margin at u = 0
    >>> r = rng.normal(size=3)
    >>> bool(np.allclose(P.at(np.zeros(3))(H @ r), r))
    True
    """

    def __init__(self, rows: np.ndarray, y: np.ndarray, n_rows: int, *, C: float,
                 loss: Any, most: int | None = None, seed: int = 0) -> None:
        self.rows = rows
        self.y = np.asarray(y, dtype=np.float64)
        self.scale = float(C) * float(n_rows) / max(1, len(rows))
        self.loss = loss
        self.most = most
        self.seed = seed
        #: rows of the sample kept at the last ``at`` that formed P
        self.kept = 0
        #: calls of ``at`` that kept the P before
        self.reused = 0
        self._last: tuple[np.ndarray, Callable[[np.ndarray], np.ndarray]] | None = None

    def at(self, u: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        """``r ↦ P⁻¹ r`` for the curvature at ``u``."""
        f = self.rows @ u.astype(self.rows.dtype)
        _, w = self.loss.derivatives(f.astype(np.float64), self.y)
        if self._last is not None and len(w) and np.count_nonzero(
                w != self._last[0]) <= REUSE_CHANGED * len(w):
            self.reused += 1
            return self._last[1]  # hardly a sampled row's curvature changed: keep P
        keep = np.flatnonzero(w > 0.0)
        scale = self.scale
        if self.most is not None and len(keep) > self.most:
            scale *= len(keep) / self.most
            keep = np.sort(np.random.default_rng(self.seed).choice(keep, self.most,
                                                                   replace=False))
        self.kept = len(keep)
        if not len(keep):
            return lambda r: np.array(r, dtype=np.float64)
        B = np.sqrt(scale * w[keep])[:, None] * self.rows[keep].astype(np.float64)
        inner = B @ B.T
        inner.flat[::len(inner) + 1] += 1.0
        factor = scipy.linalg.cho_factor(inner, lower=False, check_finite=False)

        def apply(r: np.ndarray) -> np.ndarray:
            return r - B.T @ scipy.linalg.cho_solve(factor, B @ r, check_finite=False)

        self._last = (w, apply)
        return apply


def preconditioned_cg(
    g: np.ndarray, precondition: Callable[[np.ndarray], np.ndarray], *, rtol: float,
    max_iter: int,
) -> Generator[np.ndarray, np.ndarray, tuple[np.ndarray, int, float]]:
    """Solve ``H d = −g`` from ``d = 0`` by preconditioned CG, asking for each ``H p``.

    A generator: it yields each ``p`` and is sent ``H p``. It returns ``(d, iterations,
    relative residual)``, stopping when ``‖H d + g‖ ≤ rtol ‖g‖`` or after
    ``max_iter`` products. Every iterate from ``d = 0`` is a descent direction of
    ``F`` (``gᵀd < 0``) for a positive definite ``H``, so a Newton step may use
    whatever CG has reached.

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern.solvers.newton_cg.preconditioning import preconditioned_cg
    >>> from bigkern.solvers.newton.smooth_svm import drive
    >>> H, g = np.array([[4.0, 1.0], [1.0, 3.0]]), np.array([1.0, 2.0])
    >>> d, its, res = drive(preconditioned_cg(g, lambda r: r, rtol=1e-12, max_iter=10),
    ...                     lambda p: H @ p)
    >>> bool(np.allclose(H @ d, -g)), its
    (True, 2)
    """
    gnorm = float(np.linalg.norm(g))
    d = np.zeros_like(g)
    if gnorm == 0.0:
        return d, 0, 0.0
    r = -np.asarray(g, dtype=np.float64)
    z = precondition(r)
    p = z.copy()
    rz = float(r @ z)
    its, rel = 0, 1.0
    while its < max_iter:
        q = yield p
        its += 1
        pq = float(p @ q)
        if not pq > 0.0:  # round-off: H is positive definite
            break
        alpha = rz / pq
        d += alpha * p
        r -= alpha * q
        rel = float(np.linalg.norm(r)) / gnorm
        if rel <= rtol:
            break
        z = precondition(r)
        rz_new = float(r @ z)
        p = z + (rz_new / rz) * p
        rz = rz_new
    return d, its, rel
