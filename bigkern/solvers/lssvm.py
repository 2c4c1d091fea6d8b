"""The least-squares SVM (Zhang, Genton & Liu eqs. 13–14) with a dense or sparse Gram matrix.

Minimizing ``(1/n) Σ (1 − y_i f(x_i))² + λ aᵀKa`` over ``f = b + Σ a_i k(·, x_i)``
(labels ±1, so ``(1 − y f)² = (y − f)²``) gives the bordered system::

    [ 0   1ᵀ       ] [b]   [0]
    [ 1   K + nλ I ] [a] = [y]

(the paper writes ``1/λ`` for the ridge ``nλ``: another scaling of the same
parameter). With ``M = K + nλ I`` symmetric positive definite, a direct method
solves it by one factorization of ``M`` and two right-hand sides: ``M u = 1``,
``M v = y``, ``b = 1ᵀv / 1ᵀu``, ``a = v − b u``. The iterative method needs
only one Krylov sequence: ``a = Pz`` with the projection ``P = I − 11ᵀ/n``
onto ``1ᵀa = 0`` turns the system into ``P M P z = P y``, symmetric positive
definite on that subspace, solved by conjugate gradients (one sparse product
per iteration); then ``b = mean(y − M a)``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from bigkern.solvers.sparse_spd import (
    SPDSolve,
    SymmetricCSR,
    bandwidth,
    choose_method,
    has_cholmod,
    solve_sparse_spd,
)

__all__ = ["LSSVMSolution", "solve_lssvm"]


@dataclass
class LSSVMSolution:
    """Coefficients of ``f(x) = intercept + Σ coef_i k(x, x_i)`` and how they were solved."""

    coef: np.ndarray
    intercept: float
    ridge: float
    method: str
    seconds: float
    solve: SPDSolve | None = None


def solve_lssvm(
    K: np.ndarray | sp.spmatrix, y: np.ndarray, lam: float, *, method: str = "auto",
    tol: float = 1e-10,
) -> LSSVMSolution:
    """Solve the LS-SVM bordered system (14) for a dense ``K`` or a sparse ``K_C``.

    Parameters
    ----------
    K : ndarray or scipy sparse matrix (n, n)
        Gram matrix (positive definite; a compactly supported kernel's sparse
        Gram matrix for the sparse solvers).
    y : ndarray (n,)
        Targets, ±1 for classification (any real values work: LS-SVM regression).
    lam : float
        λ of eq. (13) (> 0); the ridge added to K's diagonal is ``n λ``.
    method : str
        For a sparse ``K``: see :func:`~bigkern.solvers.sparse_spd.solve_sparse_spd`
        (``"auto"`` knows the ridge ``nλ`` as a floor of the spectrum, since
        ``K_C`` is positive semi-definite).
        A dense ``K`` is solved by LAPACK Cholesky (``method="dense"``).
    tol : float
        Relative residual for ``method="cg"``.
    """
    y = np.asarray(y, dtype=np.float64)
    n = len(y)
    if K.shape != (n, n):
        raise ValueError(f"K has shape {K.shape}; expected ({n}, {n}) for {n} targets")
    if not (np.isfinite(lam) and lam > 0):
        raise ValueError(f"lam must be a positive finite number; got {lam!r}")
    ridge = n * float(lam)
    rhs = np.column_stack([np.ones(n), y])
    t0 = time.perf_counter()
    if sp.issparse(K):
        K = sp.csr_matrix(K, dtype=np.float64)
        estimate: dict = {}
        if method == "auto" and not has_cholmod():
            method, estimate = choose_method(K, tol, ridge, 1, shift=ridge)
        if method == "cg":
            t1 = time.perf_counter()
            coef, iterations = _projected_cg(K, ridge, y, tol)
            intercept = float(np.mean(y - K @ coef - ridge * coef))
            seconds = time.perf_counter() - t1
            solve = SPDSolve(coef, "cg", seconds, bandwidth(K), iterations=iterations,
                             info=estimate)
            return LSSVMSolution(coef, intercept, ridge, "cg", time.perf_counter() - t0, solve)
        M = K + ridge * sp.identity(n, format="csr")
        solve = solve_sparse_spd(M, rhs, method=method, tol=tol, lower_bound=ridge)
        solve.info.update(estimate)
        uv, used = solve.solution, solve.method
    else:
        M = np.array(K, dtype=np.float64)
        M[np.diag_indices(n)] += ridge
        uv = scipy.linalg.cho_solve(scipy.linalg.cho_factor(M, lower=True), rhs)
        solve, used = None, "dense"
    u, v = uv[:, 0], uv[:, 1]
    intercept = float(v.sum() / u.sum())
    coef = v - intercept * u
    return LSSVMSolution(coef, intercept, ridge, used, time.perf_counter() - t0, solve)


def _projected_cg(K: sp.spmatrix, ridge: float, y: np.ndarray,
                  tol: float) -> tuple[np.ndarray, int]:
    """CG on ``P M P z = P y`` with ``M = K + ridge·I``, ``P = I − 11ᵀ/n``.

    Returns ``a = Pz`` and the iterations. ``K`` must be symmetric (a Gram matrix):
    only its upper triangle is read.
    """
    K = SymmetricCSR(K)
    r = y - y.mean()
    target = tol * float(np.linalg.norm(r))
    a = np.zeros_like(r)
    p = r.copy()
    rr = float(r @ r)
    limit = 10 * len(y)
    iterations = 0
    while np.sqrt(rr) > target:
        if iterations >= limit:
            raise RuntimeError(f"projected conjugate gradients did not reach rtol={tol:g} in "
                               f"{limit} iterations")
        iterations += 1
        q = K @ p
        q += ridge * p
        q -= q.mean()
        alpha = rr / float(p @ q)
        a += alpha * p
        r -= alpha * q
        rr, rr_old = float(r @ r), rr
        p *= rr / rr_old
        p += r
    return a, iterations
