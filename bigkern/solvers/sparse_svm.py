"""The SVM dual on a sparse precomputed Gram matrix, by SMO (compiled).

Solves Zhang, Genton & Liu's eq. (12) in the usual scaling::

    min_α ½ αᵀQα − 1ᵀα,  Q_ij = y_i y_j K_ij,  0 ≤ α_i ≤ c,  yᵀα = 0

by sequential minimal optimization with the second-order working-set choice
of Fan, Chen & Lin (2005) — the algorithm of libsvm. scikit-learn's
``SVC(kernel="precomputed")`` refuses sparse kernels, and densifying ``K_C``
throws its sparsity away; here every step touches only the two CSR rows of
its working pair (gradient updates cost ``nnz(row i) + nnz(row j)``), plus
one O(n) scan for the pair. The decision function is
``f(x) = Σ α_i y_i k(x, x_i) − ρ``.

:func:`solve_svm_duals` solves k such problems (the one-vs-rest labellings of a
k-class label) on one Gram matrix, prepared once and shared by threads, one
problem per thread.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numba
import numpy as np
import scipy.sparse as sp

__all__ = ["SVMSolution", "solve_svm_dual", "solve_svm_duals"]

_TAU = 1e-12


@dataclass
class SVMSolution:
    """Dual coefficients ``α_i y_i`` (zeros off the support), ``−ρ`` and the run's figures."""

    dual_coef: np.ndarray  # (n,) α_i y_i
    intercept: float  # −ρ
    n_support: int
    iterations: int
    objective: float  # ½ αᵀQα − 1ᵀα
    gap: float  # max violation at the stop
    seconds: float


@numba.njit(cache=True)
def _row_into(indptr, indices, data, i, yi, y, out):
    for p in range(indptr[i], indptr[i + 1]):
        j = indices[p]
        out[j] = yi * y[j] * data[p]


@numba.njit(cache=True)
def _row_clear(indptr, indices, i, out):
    for p in range(indptr[i], indptr[i + 1]):
        out[indices[p]] = 0.0


@numba.njit(cache=True)
def _most_violating_up(y, alpha, grad, c):
    """i: the index of I_up with the largest ``−y_t G_t`` (−1 if I_up is empty), and that value."""
    gmax = -np.inf
    i = -1
    for t in range(len(y)):
        if (y[t] > 0 and alpha[t] < c) or (y[t] < 0 and alpha[t] > 0):
            v = -y[t] * grad[t]
            if v > gmax:
                gmax = v
                i = t
    return i, gmax


@numba.njit(cache=True)
def _second_order_low(y, alpha, grad, c, diag, Qi, i, gmax):
    """j: the second-order choice in I_low for ``i``, and the smallest ``−y_t G_t`` of I_low."""
    gmin = np.inf
    best = np.inf
    j = -1
    for t in range(len(y)):
        if (y[t] > 0 and alpha[t] > 0) or (y[t] < 0 and alpha[t] < c):
            v = -y[t] * grad[t]
            if v < gmin:
                gmin = v
            b = gmax - v
            if b > 0:
                a = diag[i] + diag[t] - 2.0 * y[i] * y[t] * Qi[t]
                if a <= 0:
                    a = _TAU
                score = -(b * b) / a
                if score < best:
                    best = score
                    j = t
    return j, gmin


@numba.njit(cache=True)
def _update_pair(alpha, grad, y, diag, c, i, j, Qij):
    """Solve the two-variable subproblem of (i, j) in place, clipped to the box [0, c]."""
    ai, aj = alpha[i], alpha[j]
    if y[i] != y[j]:
        quad = diag[i] + diag[j] + 2.0 * Qij
        if quad <= 0:
            quad = _TAU
        delta = (-grad[i] - grad[j]) / quad
        diff = ai - aj
        alpha[i] += delta
        alpha[j] += delta
        if diff > 0:
            if alpha[j] < 0:
                alpha[j] = 0.0
                alpha[i] = diff
        elif alpha[i] < 0:
            alpha[i] = 0.0
            alpha[j] = -diff
        if diff > 0:
            if alpha[i] > c:
                alpha[i] = c
                alpha[j] = c - diff
        elif alpha[j] > c:
            alpha[j] = c
            alpha[i] = c + diff
    else:
        quad = diag[i] + diag[j] - 2.0 * Qij
        if quad <= 0:
            quad = _TAU
        delta = (grad[i] - grad[j]) / quad
        total = ai + aj
        alpha[i] -= delta
        alpha[j] += delta
        if total > c:
            if alpha[i] > c:
                alpha[i] = c
                alpha[j] = total - c
        elif alpha[j] < 0:
            alpha[j] = 0.0
            alpha[i] = total
        if total > c:
            if alpha[j] > c:
                alpha[j] = c
                alpha[i] = total - c
        elif alpha[i] < 0:
            alpha[i] = 0.0
            alpha[j] = total
    return alpha[i] - ai, alpha[j] - aj


@numba.njit(cache=True)
def _intercept(alpha, grad, y, c):
    """ρ: the mean of ``y_t G_t`` over free vectors, else the middle of the feasible range."""
    free = 0
    total_free = 0.0
    upper = np.inf
    lower = -np.inf
    for t in range(len(y)):
        yg = y[t] * grad[t]
        if 0 < alpha[t] < c:
            free += 1
            total_free += yg
        elif (alpha[t] >= c and y[t] < 0) or (alpha[t] <= 0 and y[t] > 0):
            upper = min(upper, yg)
        else:
            lower = max(lower, yg)
    return total_free / free if free > 0 else (upper + lower) / 2


@numba.njit(nogil=True, cache=True)
def _smo(indptr, indices, data, diag, y, c, eps, max_iter):
    n = len(y)
    alpha = np.zeros(n)
    grad = -np.ones(n)
    Qi = np.zeros(n)
    it = 0
    gap = np.inf
    while it < max_iter:
        i, gmax = _most_violating_up(y, alpha, grad, c)
        if i < 0:
            break
        _row_into(indptr, indices, data, i, y[i], y, Qi)
        j, gmin = _second_order_low(y, alpha, grad, c, diag, Qi, i, gmax)
        gap = gmax - gmin
        if gap < eps or j < 0:
            _row_clear(indptr, indices, i, Qi)
            break
        it += 1
        di, dj = _update_pair(alpha, grad, y, diag, c, i, j, Qi[j])
        # gradient update along the two sparse rows: G += Q[:, i] di + Q[:, j] dj
        for p in range(indptr[i], indptr[i + 1]):
            t = indices[p]
            grad[t] += y[i] * y[t] * data[p] * di
        for p in range(indptr[j], indptr[j + 1]):
            t = indices[p]
            grad[t] += y[j] * y[t] * data[p] * dj
        _row_clear(indptr, indices, i, Qi)
    rho = _intercept(alpha, grad, y, c)
    objective = 0.0
    for t in range(n):
        objective += alpha[t] * (grad[t] - 1.0)
    return alpha, rho, it, 0.5 * objective, gap


def solve_svm_dual(
    K: sp.spmatrix | np.ndarray, y: np.ndarray, c: float, *, eps: float = 1e-3,
    max_iter: int | None = None,
) -> SVMSolution:
    """Solve the SVM dual (12) on a (sparse) precomputed Gram matrix.

    Parameters
    ----------
    K : scipy sparse or ndarray (n, n)
        Symmetric positive semi-definite Gram matrix, e.g. a compact kernel's ``K_C``.
    y : ndarray (n,)
        Labels ±1.
    c : float
        Box bound (libsvm's ``C``; the paper's λ of eq. 11 gives ``c = 1/(2nλ)``).
    eps : float
        Stop when the maximal KKT violation ``m(α) − M(α)`` is below ``eps``
        (libsvm's ``tol``, default 1e-3 as there).
    max_iter : int, optional
        Default ``max(10⁷, 100 n)``.
    """
    y = np.asarray(y, dtype=np.float64)
    gram = _SharedGram(K, len(y), c)
    return gram.solve(_checked_labels(y), float(eps), max_iter)


def solve_svm_duals(
    K: sp.spmatrix | np.ndarray, Y: np.ndarray, c: float, *, eps: float = 1e-3,
    max_iter: int | None = None, threads: int | None = None,
) -> list[SVMSolution]:
    """Solve k SVM duals (12) that share one Gram matrix: one per column of ``Y``.

    The one-vs-rest problems of a k-class label differ only in their labels; the Gram
    matrix is checked and laid out once and read by all of them, each problem on its
    own thread (the compiled SMO releases the GIL). Each solution is exactly what
    :func:`solve_svm_dual` gives for that column alone.

    Parameters
    ----------
    K : scipy sparse or ndarray (n, n)
        Symmetric positive semi-definite Gram matrix.
    Y : ndarray (n, k)
        Labels ±1, one column per problem.
    c, eps, max_iter
        As in :func:`solve_svm_dual`.
    threads : int, optional
        Problems solved at once; default the processors available, at most k.

    Returns
    -------
    list of SVMSolution
        One per column of ``Y``, in order.

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern import CompactSupport, Gaussian, sparse_gram
    >>> from bigkern.solvers.sparse_svm import solve_svm_dual, solve_svm_duals
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 2))
    >>> codes = np.digitize(X[:, 0], [-0.5, 0.5])  # classes 0, 1, 2
    >>> Y = np.where(codes[:, None] == np.arange(3), 1.0, -1.0)
    >>> K = sparse_gram(X, CompactSupport(Gaussian(omega=0.5), radius=1.5))
    >>> solutions = solve_svm_duals(K, Y, 1.0)
    >>> len(solutions), solutions[0].dual_coef.shape
    (3, (200,))
    >>> alone = solve_svm_dual(K, Y[:, 2], 1.0)
    >>> bool(np.array_equal(solutions[2].dual_coef, alone.dual_coef))
    True
    """
    Y = np.asarray(Y, dtype=np.float64)
    if Y.ndim != 2:
        raise ValueError(f"Y must be 2-D, one column of ±1 labels per problem; got shape "
                         f"{Y.shape}")
    gram = _SharedGram(K, len(Y), c)
    columns = [_checked_labels(np.ascontiguousarray(Y[:, j])) for j in range(Y.shape[1])]
    if threads is None:
        threads = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
            else (os.cpu_count() or 1)
    threads = max(1, min(int(threads), len(columns)))
    if threads == 1:
        return [gram.solve(y, float(eps), max_iter) for y in columns]
    with ThreadPoolExecutor(threads, thread_name_prefix="bigkern-smo") as pool:
        return list(pool.map(lambda y: gram.solve(y, float(eps), max_iter), columns))


def _checked_labels(y: np.ndarray) -> np.ndarray:
    if not np.all(np.abs(y) == 1):
        raise ValueError("y must hold the labels -1 and +1 only")
    if len(np.unique(y)) < 2:
        raise ValueError("y has one class only: an SVM needs both -1 and +1")
    return y


class _SharedGram:
    """A Gram matrix checked and laid out (CSR, int64 indices, its diagonal) for SMO once."""

    def __init__(self, K: sp.spmatrix | np.ndarray, n: int, c: float) -> None:
        if K.shape != (n, n):
            raise ValueError(f"K has shape {K.shape}; expected ({n}, {n}) for {n} labels")
        if not (np.isfinite(c) and c > 0):
            raise ValueError(f"the box bound c must be a positive finite number; got {c!r}")
        Kc = sp.csr_matrix(K, dtype=np.float64)
        Kc.sum_duplicates()
        if not np.all(np.isfinite(Kc.data)):
            raise ValueError("K has non-finite entries")
        self.c = float(c)
        self.indptr = Kc.indptr.astype(np.int64)
        self.indices = Kc.indices.astype(np.int64)
        self.data = Kc.data
        self.diag = Kc.diagonal()

    def solve(self, y: np.ndarray, eps: float, max_iter: int | None) -> SVMSolution:
        n = len(y)
        t0 = time.perf_counter()
        alpha, rho, iterations, objective, gap = _smo(
            self.indptr, self.indices, self.data, self.diag, y, self.c, eps,
            int(max_iter if max_iter is not None else max(10**7, 100 * n)))
        return SVMSolution(alpha * y, -float(rho), int(np.count_nonzero(alpha)),
                           int(iterations), float(objective), float(gap),
                           time.perf_counter() - t0)
