"""Solves of sparse symmetric positive definite systems ``M x = b`` (M = K_C + ridge·I).

Three methods, all exact up to round-off except ``"cg"``:

- ``"cholmod"``: supernodal sparse Cholesky with a fill-reducing ordering, through
  scikit-sparse (optional: it needs SuiteSparse to build; ``pip install
  scikit-sparse`` where its headers are installed);
- ``"banded"``: reverse Cuthill–McKee ordering (Zhang, Genton & Liu §2.2, Table 1)
  and LAPACK's blocked banded Cholesky (``pbtrf`` via
  :func:`scipy.linalg.cholesky_banded`) on the permuted band — no extra
  dependency; its memory is ``(half-bandwidth + 1) · n`` floats;
- ``"cg"``: Jacobi-preconditioned conjugate gradients on the CSR matrix, all
  right-hand sides sharing each sparse product (memory: the matrix and a few
  n × k blocks), to a relative residual ``tol`` per column.

``"auto"`` takes ``"cholmod"`` when scikit-sparse imports; otherwise it
compares flop estimates: ``n·kd²`` for the banded factorization (``kd`` the
half-bandwidth after RCM) against CG's ``iterations · 2 nnz`` (one sparse
product per iteration serves all right-hand sides), weighted by
``SPMV_SLOWDOWN`` (a sparse product is memory-bound), with the
iterations bounded by ``½ √κ · ln(2/tol)`` and the condition number ``κ`` by
Gershgorin's largest row sum over ``lower_bound`` (a known floor of the
smallest eigenvalue, e.g. the ridge of ``K_C + ridge·I``). Without a floor,
or when the band would exceed ``bigkern.max_band_bytes``, the choice falls to
``"banded"`` or ``"cg"`` respectively.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numba
import numpy as np
import scipy.linalg
import scipy.sparse as sp
from scipy.sparse.csgraph import reverse_cuthill_mckee

from bigkern import config

__all__ = ["SPDSolve", "bandwidth", "choose_method", "has_cholmod", "solve_sparse_spd"]

METHODS = ("auto", "cholmod", "banded", "cg")


def has_cholmod() -> bool:
    """Whether scikit-sparse's CHOLMOD binding is importable."""
    try:
        import sksparse.cholmod  # noqa: F401
    except Exception:  # absent, or built against another numpy/SuiteSparse (ValueError)
        return False
    return True


def bandwidth(A: sp.spmatrix, order: np.ndarray | None = None) -> int:
    """Bandwidth ``bw = 2 max_i b_i + 1`` of a symmetric sparse matrix (the paper's §2.2).

    ``b_i = i − min{j : A_ij ≠ 0}`` is row ``i``'s distance from the diagonal to
    its first stored entry; ``order`` permutes rows and columns first. (For a
    non-symmetric pattern, entries right of the diagonal count too.)
    """
    A = sp.csr_matrix(A)
    n = A.shape[0]
    counts = np.diff(A.indptr)
    filled = counts > 0
    if not filled.any():
        return 1
    position = np.arange(n) if order is None else np.empty(n, dtype=np.int64)
    if order is not None:
        position[order] = np.arange(n)
    cols = position[A.indices]
    starts = A.indptr[:-1][filled]
    rows = position[np.flatnonzero(filled)]
    below = rows - np.minimum.reduceat(cols, starts)
    above = np.maximum.reduceat(cols, starts) - rows
    return 2 * int(max(below.max(), above.max(), 0)) + 1


@dataclass
class SPDSolve:
    """Solution of ``M X = B`` and how it was obtained."""

    solution: np.ndarray
    method: str
    seconds: float
    bandwidth_before: int
    bandwidth_after: int | None = None  # after the RCM ordering ("banded")
    factor_bytes: int | None = None
    iterations: int | None = None
    info: dict = field(default_factory=dict)


def _check(M: sp.spmatrix, B: np.ndarray) -> tuple[sp.csr_matrix, np.ndarray]:
    M = sp.csr_matrix(M, dtype=np.float64)
    if M.shape[0] != M.shape[1]:
        raise ValueError(f"the system matrix must be square; got shape {M.shape}")
    B = np.asarray(B, dtype=np.float64)
    if B.shape[0] != M.shape[0]:
        raise ValueError(f"the right-hand side has {B.shape[0]} rows; the matrix has "
                         f"{M.shape[0]}")
    if not np.all(np.isfinite(M.data)) or not np.all(np.isfinite(B)):
        raise ValueError("the system has non-finite entries")
    return M, B


def _banded(M: sp.csr_matrix, B: np.ndarray) -> tuple[np.ndarray, dict]:
    order = reverse_cuthill_mckee(M, symmetric_mode=True)
    P = M[order][:, order].tocoo()
    lower = P.row >= P.col
    kd = int(np.max(P.row[lower] - P.col[lower])) if lower.any() else 0
    band = np.zeros((kd + 1, M.shape[0]))
    band[P.row[lower] - P.col[lower], P.col[lower]] = P.data[lower]
    factor = scipy.linalg.cholesky_banded(band, lower=True, overwrite_ab=True,
                                          check_finite=False)
    X = np.empty_like(B)
    X[order] = scipy.linalg.cho_solve_banded((factor, True), B[order], check_finite=False)
    return X, {"bandwidth_after": 2 * kd + 1, "factor_bytes": factor.nbytes}


def _cholmod(M: sp.csr_matrix, B: np.ndarray) -> tuple[np.ndarray, dict]:
    from sksparse.cholmod import cholesky

    factor = cholesky(M.tocsc())
    L = factor.L()
    return factor(B), {"factor_bytes": int(L.data.nbytes + L.indices.nbytes
                                            + L.indptr.nbytes)}


@numba.njit(parallel=True, nogil=True, cache=True)
def _csr_times(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray,
               P: np.ndarray) -> np.ndarray:
    """``M @ P`` for a CSR ``M`` and a few dense columns ``P`` (rows in parallel)."""
    n, k = indptr.shape[0] - 1, P.shape[1]
    out = np.zeros((n, k))
    for i in numba.prange(n):
        for q in range(indptr[i], indptr[i + 1]):
            j, value = indices[q], data[q]
            for c in range(k):
                out[i, c] += value * P[j, c]
    return out


@numba.njit(nogil=True, cache=True)
def _upper_triangle(indptr: np.ndarray, indices: np.ndarray,
                    data: np.ndarray) -> tuple[np.ndarray, ...]:
    n = indptr.shape[0] - 1
    counts = np.zeros(n + 1, np.int64)
    for i in range(n):
        for q in range(indptr[i], indptr[i + 1]):
            if indices[q] > i:
                counts[i + 1] += 1
    ptr = np.cumsum(counts)
    cols = np.empty(ptr[-1], np.int64)
    values = np.empty(ptr[-1])
    diag = np.zeros(n)
    for i in range(n):
        w = ptr[i]
        for q in range(indptr[i], indptr[i + 1]):
            j = indices[q]
            if j > i:
                cols[w] = j
                values[w] = data[q]
                w += 1
            elif j == i:
                diag[i] = data[q]
    return ptr, cols, values, diag


@numba.njit(nogil=True, cache=True)
def _symmetric_matvec(ptr: np.ndarray, cols: np.ndarray, values: np.ndarray,
                      diag: np.ndarray, v: np.ndarray) -> np.ndarray:
    out = diag * v
    for i in range(ptr.shape[0] - 1):
        vi = v[i]
        total = 0.0
        for q in range(ptr[i], ptr[i + 1]):
            j = cols[q]
            total += values[q] * v[j]
            out[j] += values[q] * vi
        out[i] += total
    return out


@numba.njit(nogil=True, cache=True)
def _symmetric_matmat(ptr: np.ndarray, cols: np.ndarray, values: np.ndarray,
                      diag: np.ndarray, V: np.ndarray) -> np.ndarray:
    """``_symmetric_matvec`` on every column of ``V`` (n, k), each entry read once for all
    columns; each column's sums run in the same order as ``_symmetric_matvec``'s."""
    k = V.shape[1]
    out = np.empty_like(V)
    for i in range(V.shape[0]):
        for c in range(k):
            out[i, c] = diag[i] * V[i, c]
    total = np.empty(k)
    for i in range(ptr.shape[0] - 1):
        total[:] = 0.0
        for q in range(ptr[i], ptr[i + 1]):
            j = cols[q]
            value = values[q]
            for c in range(k):
                total[c] += value * V[j, c]
                out[j, c] += value * V[i, c]
        for c in range(k):
            out[i, c] += total[c]
    return out


class SymmetricCSR:
    """A symmetric sparse matrix kept as its strict upper triangle and diagonal.

    ``self @ v`` reads each off-diagonal entry once for both of its positions:
    half the memory traffic of a full CSR product, and memory traffic, not
    arithmetic, is what bounds an iterative solve on this kind of matrix. A block
    ``V`` (n, k) is multiplied in the same single read of the matrix, each column
    exactly as ``self @ V[:, c]`` would be.
    """

    def __init__(self, A: sp.spmatrix) -> None:
        A = sp.csr_matrix(A, dtype=np.float64)
        self.shape = A.shape
        self._parts = _upper_triangle(A.indptr, A.indices.astype(np.int64), A.data)

    def __matmul__(self, v: np.ndarray) -> np.ndarray:
        v = np.ascontiguousarray(v, dtype=np.float64)
        if v.ndim == 2:
            return _symmetric_matmat(*self._parts, v)
        return _symmetric_matvec(*self._parts, v)


def _cg(M: sp.csr_matrix, B: np.ndarray, tol: float) -> tuple[np.ndarray, dict]:
    """Jacobi-preconditioned CG on every column of ``B`` at once.

    The columns run independent recurrences (their own step sizes), but share
    one sparse product ``M @ P`` per iteration: the matrix, which dominates the
    memory traffic, is read once for all right-hand sides.
    """
    diag = M.diagonal()
    if np.any(diag <= 0):
        raise ValueError("the system matrix has a non-positive diagonal: it is not positive "
                         "definite")
    Bc = B.reshape(len(B), -1)
    X = np.zeros_like(Bc)
    R = Bc.copy()
    Z = R / diag[:, None]
    P = Z.copy()
    rz = np.einsum("ij,ij->j", R, Z)
    target = tol * np.linalg.norm(Bc, axis=0)
    active = np.linalg.norm(R, axis=0) > target
    limit = 10 * M.shape[0]
    iterations = 0
    while active.any():
        if iterations >= limit:
            raise RuntimeError(f"conjugate gradients did not reach rtol={tol:g} in {limit} "
                               f"iterations (columns {np.flatnonzero(active).tolist()})")
        iterations += 1
        Q = _csr_times(M.indptr, M.indices, M.data, P)
        pq = np.einsum("ij,ij->j", P, Q)
        alpha = np.where(active, rz / np.where(pq > 0, pq, 1.0), 0.0)
        X += alpha * P
        R -= alpha * Q
        active &= np.linalg.norm(R, axis=0) > target
        Z = R / diag[:, None]
        rz_next = np.einsum("ij,ij->j", R, Z)
        beta = np.where(active, rz_next / np.where(rz > 0, rz, 1.0), 0.0)
        P = Z + beta * P
        rz = rz_next
    return X.reshape(B.shape), {"iterations": iterations}


# How many times the cost of a flop of LAPACK's blocked banded Cholesky one flop of a
# sparse product costs: the product waits on memory for every entry it reads, the
# blocked factorization reuses each block from cache. The ratio depends on the machine;
# this one is the project's (the benchmark pages give the rates it came from).
SPMV_SLOWDOWN = 20.0


def choose_method(A: sp.csr_matrix, tol: float, lower_bound: float | None, n_rhs: int,
                  shift: float = 0.0) -> tuple[str, dict]:
    """``"auto"``'s choice between ``"banded"`` and ``"cg"`` for ``M = A + shift·I``.

    The reverse Cuthill–McKee ordering (whose bandwidth prices ``"banded"``) is
    only computed when CG is not already cheaper than the smallest band the
    densest row allows (half-bandwidth ≥ (row nonzeros − 1) / 2).
    """
    n = A.shape[0]
    row_nnz = int(np.max(np.diff(A.indptr))) if n else 0
    least_kd = max(row_nnz - 1, 0) // 2
    estimate: dict = {"banded_flops_lower": float(n) * least_kd * least_kd}
    if lower_bound is not None and lower_bound > 0:
        largest = float(np.max(np.asarray(abs(A).sum(axis=1)).ravel())) + abs(shift)
        kappa = max(largest / lower_bound, 1.0)  # Gershgorin over the floor
        iterations = 0.5 * np.sqrt(kappa) * np.log(2.0 / tol) + 1
        # one sparse product per iteration serves every right-hand side (block CG)
        estimate["cg_flops"] = iterations * (2.0 * A.nnz + 10.0 * n * n_rhs) * SPMV_SLOWDOWN
        estimate["kappa_bound"] = kappa
        if estimate["cg_flops"] < estimate["banded_flops_lower"]:
            return "cg", estimate
    kd = bandwidth(A, reverse_cuthill_mckee(A, symmetric_mode=True)) // 2
    estimate["banded_flops"] = float(n) * (kd * kd + 4 * kd + 1)
    if 8 * (kd + 1) * n > float(config.get("max_band_bytes")):
        return "cg", estimate
    if "cg_flops" not in estimate:
        return "banded", estimate
    return ("cg" if estimate["cg_flops"] < estimate["banded_flops"] else "banded"), estimate


def solve_sparse_spd(
    M: sp.spmatrix, B: np.ndarray, *, method: str = "auto", tol: float = 1e-10,
    lower_bound: float | None = None,
) -> SPDSolve:
    """Solve ``M X = B`` for a sparse symmetric positive definite ``M``.

    Parameters
    ----------
    M : scipy sparse matrix (n, n)
        Symmetric positive definite (only its lower triangle is read by the
        direct methods).
    B : ndarray (n,) or (n, k)
        Right-hand sides, solved with one factorization.
    method : {"auto", "cholmod", "banded", "cg"}
        See the module docstring.
    tol : float
        Relative residual of ``"cg"``.
    lower_bound : float, optional
        A floor of ``M``'s smallest eigenvalue, for ``"auto"``'s choice.

    Returns
    -------
    SPDSolve
        The solution, the method used, the time, the bandwidth before (and after
        the RCM ordering) and the factor's memory.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}; got {method!r}")
    M, B = _check(M, B)
    bw = bandwidth(M)
    estimate: dict = {}
    if method == "auto":
        if has_cholmod():
            method = "cholmod"
        else:
            method, estimate = choose_method(M, tol, lower_bound,
                                             1 if B.ndim == 1 else B.shape[1])
    if method == "cholmod" and not has_cholmod():
        raise ImportError("method='cholmod' needs scikit-sparse (pip install scikit-sparse, "
                          "with SuiteSparse's headers installed)")
    t0 = time.perf_counter()
    if method == "banded":
        X, info = _banded(M, B)
    elif method == "cholmod":
        X, info = _cholmod(M, B)
    else:
        X, info = _cg(M, B, tol)
    seconds = time.perf_counter() - t0
    info.update(estimate)
    return SPDSolve(X, method, seconds, bw, info.pop("bandwidth_after", None),
                    info.pop("factor_bytes", None), info.pop("iterations", None), info)
