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
    """Coefficients of ``f(x) = intercept + Σ coef_i k(x, x_i)`` and how they were solved.

    For k targets, ``coef`` is (n, k) and ``intercept`` (k,): column j is the solution
    for target j.
    """

    coef: np.ndarray
    intercept: float | np.ndarray
    ridge: float
    method: str
    seconds: float
    solve: SPDSolve | None = None


def solve_lssvm(
    K: np.ndarray | sp.spmatrix, y: np.ndarray, lam: float, *, method: str = "auto",
    tol: float = 1e-10,
) -> LSSVMSolution:
    """Solve the LS-SVM bordered system (14) for a dense ``K`` or a sparse ``K_C``.

    The system matrix ``K + nλI`` does not depend on the targets, so k targets (the k
    one-vs-rest ±1 columns of a k-class label) cost one factorization and k + 1
    triangular solves, or, by conjugate gradients, k sequences that share one sparse
    product per iteration. Column j of the solution is the solution for ``y[:, j]``
    alone: with a direct method, to round-off in the last digit; by CG, bit for bit
    (each column runs its own recurrence and stops at its own residual).

    Parameters
    ----------
    K : ndarray or scipy sparse matrix (n, n)
        Gram matrix (positive definite; a compactly supported kernel's sparse
        Gram matrix for the sparse solvers).
    y : ndarray (n,) or (n, k)
        Targets, ±1 for classification (any real values work: LS-SVM regression);
        one column per problem.
    lam : float
        λ of eq. (13) (> 0); the ridge added to K's diagonal is ``n λ``.
    method : str
        For a sparse ``K``: see :func:`~bigkern.solvers.sparse_spd.solve_sparse_spd`
        (``"auto"`` knows the ridge ``nλ`` as a floor of the spectrum, since
        ``K_C`` is positive semi-definite).
        A dense ``K`` is solved by LAPACK Cholesky (``method="dense"``).
    tol : float
        Relative residual for ``method="cg"``.

    Returns
    -------
    LSSVMSolution
        ``coef`` (n,) and a float ``intercept`` for a 1-D ``y``; (n, k) and (k,) for
        a 2-D one.

    Examples
    --------
    Three one-vs-rest targets, one factorization:

    >>> import numpy as np
    >>> from bigkern import CompactSupport, Gaussian, sparse_gram
    >>> from bigkern.solvers.lssvm import solve_lssvm
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 2))
    >>> codes = np.digitize(X[:, 0], [-0.5, 0.5])  # classes 0, 1, 2
    >>> Y = np.where(codes[:, None] == np.arange(3), 1.0, -1.0)
    >>> K = sparse_gram(X, CompactSupport(Gaussian(omega=0.5), radius=1.5))
    >>> both = solve_lssvm(K, Y, 1e-3, method="banded")
    >>> both.coef.shape, both.intercept.shape
    ((200, 3), (3,))
    >>> one = solve_lssvm(K, Y[:, 1], 1e-3, method="banded")
    >>> bool(np.allclose(both.coef[:, 1], one.coef, rtol=0, atol=1e-12))
    True
    """
    y = np.asarray(y, dtype=np.float64)
    if y.ndim not in (1, 2):
        raise ValueError(f"y must be 1-D (one target) or 2-D (one column per target); got "
                         f"shape {y.shape}")
    n = len(y)
    if K.shape != (n, n):
        raise ValueError(f"K has shape {K.shape}; expected ({n}, {n}) for {n} targets")
    if not (np.isfinite(lam) and lam > 0):
        raise ValueError(f"lam must be a positive finite number; got {lam!r}")
    ridge = n * float(lam)
    rhs = np.column_stack([np.ones(n), y])
    n_targets = 1 if y.ndim == 1 else y.shape[1]
    t0 = time.perf_counter()
    if sp.issparse(K):
        K = sp.csr_matrix(K, dtype=np.float64)
        estimate: dict = {}
        if method == "auto" and not has_cholmod():
            method, estimate = choose_method(K, tol, ridge, n_targets, shift=ridge)
        if method == "cg":
            t1 = time.perf_counter()
            rows = y.reshape(n, -1).T.copy()  # one contiguous row per target
            A, iterations, products = _projected_cg(K, ridge, rows, tol)
            residual = rows - (K @ A.T).T - ridge * A
            b = np.array([float(np.mean(r)) for r in residual])
            coef, intercept = (A[0], float(b[0])) if y.ndim == 1 else (A.T.copy(), b)
            seconds = time.perf_counter() - t1
            if y.ndim == 2:
                estimate["iterations_per_target"] = iterations.tolist()
            solve = SPDSolve(coef, "cg", seconds, bandwidth(K), iterations=products,
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
    u = uv[:, 0]
    if y.ndim == 1:
        v = uv[:, 1]
        intercept = float(v.sum() / u.sum())
        coef = v - intercept * u
    else:
        V = uv[:, 1:]
        intercept = np.array([V[:, j].sum() for j in range(n_targets)]) / u.sum()
        coef = V - intercept * u[:, None]
    return LSSVMSolution(coef, intercept, ridge, used, time.perf_counter() - t0, solve)


def _projected_cg(K: sp.spmatrix, ridge: float, Y: np.ndarray,
                  tol: float) -> tuple[np.ndarray, np.ndarray, int]:
    """CG on ``P M P z = P y`` with ``M = K + ridge·I``, ``P = I − 11ᵀ/n``, for each row of
    ``Y`` (k, n).

    Returns ``A`` (k, n), the rows ``a = Pz``, each target's iterations and the sparse
    products made. Every iteration multiplies ``K`` once for all the targets still
    running; each target keeps its own recurrence and stops at its own residual, so its
    row is what a run on that target alone gives. ``K`` must be symmetric (a Gram
    matrix): only its upper triangle is read.
    """
    K = SymmetricCSR(K)
    k, n = Y.shape
    R = np.empty_like(Y)
    for t in range(k):
        R[t] = Y[t] - Y[t].mean()
    targets = np.array([tol * float(np.linalg.norm(r)) for r in R])
    A = np.zeros_like(R)
    P = R.copy()
    rr = np.array([float(r @ r) for r in R])
    iterations = np.zeros(k, dtype=np.int64)
    limit = 10 * n
    products = 0
    running = np.flatnonzero(np.sqrt(rr) > targets)
    while len(running):
        if products >= limit:
            raise RuntimeError(f"projected conjugate gradients did not reach rtol={tol:g} in "
                               f"{limit} iterations")
        products += 1
        Q = np.ascontiguousarray((K @ P[running].T).T) if k > 1 else (K @ P[0])[None]
        for row, t in enumerate(running):
            q = Q[row]
            q += ridge * P[t]
            q -= q.mean()
            alpha = rr[t] / float(P[t] @ q)
            A[t] += alpha * P[t]
            R[t] -= alpha * q
            rr_old = rr[t]
            rr[t] = float(R[t] @ R[t])
            P[t] *= rr[t] / rr_old
            P[t] += R[t]
            iterations[t] += 1
        running = running[np.sqrt(rr[running]) > targets[running]]
    return A, iterations, products
