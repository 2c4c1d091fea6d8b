"""OHT for an in-memory basis matrix ``G``: pivoted QR for GS, ``eigh(G)`` for a symmetric G.

Working on ``G`` itself rather than a formed ``GᵀG`` resolves the small ``γ_j``
that decide the stable set (see :func:`oht_fit_methods`).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import scipy.linalg

from bigkern.errors import DataQualityError
from bigkern.solvers.oht.normal_equations import (
    METHODS,
    OHTSolution,
    _check_eta,
    _check_method,
    _check_methods,
    _check_n,
    _check_rtol,
    _ed_solutions,
    _finite,
    _gs_solutions,
    oht_solutions,
)

__all__ = ["oht_fit", "oht_fit_methods"]


def _pivoted_qr(G: np.ndarray, eta: float, rtol: float) -> tuple[np.ndarray, np.ndarray]:
    """Householder QR of G with largest-remaining-norm column pivoting (LAPACK dgeqp3).

    ``|R_kk|`` is the norm of column ``c_k`` after removing its projection on the
    columns chosen before: the paper's Gram–Schmidt choice. The stable set is the
    leading run of ``R_kk² > max(η, rtol·R_11²)``.
    """
    R, piv = scipy.linalg.qr(G, mode="r", pivoting=True, check_finite=False)
    gamma = np.diag(R) ** 2
    bound = max(eta, rtol * float(gamma[0])) if len(gamma) else eta
    below = np.flatnonzero(~(gamma > bound))
    l = int(below[0]) if below.size else len(gamma)
    return np.triu(R[:l, :l]), np.asarray(piv[:l], dtype=np.int64)



def oht_fit(
    G: np.ndarray,
    y: np.ndarray,
    *,
    method: str = "ED",
    eta: float = 1e-10,
    center: bool = True,
    rtol: float = 0.0,
) -> OHTSolution:
    """Orthogonalization + hard thresholding for an in-memory basis matrix ``G`` (n, m).

    See :func:`oht_fit_methods` (this is it for one method).

    Parameters
    ----------
    G : ndarray, shape (n, m)
        Basis outputs ``G_ij = g_j(x_i)``.
    y : ndarray, shape (n,)
        Targets.
    method : {"ED", "ED2", "GS", "GS2"}
        See :func:`oht_from_normal_equations`.
    eta : float
        Stable-set bound (> 0).
    center : bool
        Centre ``y`` and return ``ȳ`` as the intercept.
    rtol : float
        See :func:`oht_from_normal_equations`.

    Returns
    -------
    OHTSolution
    """
    return oht_fit_methods(G, y, methods=(_check_method(method),), eta=eta, center=center,
                           rtol=rtol)[method]


def oht_fit_methods(
    G: np.ndarray,
    y: np.ndarray,
    *,
    methods: tuple[str, ...] = METHODS,
    eta: float = 1e-10,
    center: bool = True,
    rtol: float = 0.0,
    eigensystem: tuple[np.ndarray, np.ndarray] | None = None,
) -> dict[str, OHTSolution]:
    """Several methods for an in-memory basis matrix ``G`` (n, m).

    ``y`` is centred exactly when ``center`` (``ȳ`` is the intercept). GS works on
    ``G`` itself: Householder QR with largest-remaining-norm column pivoting
    (LAPACK ``dgeqp3``), in exact arithmetic the same pivots and ``R`` (up to
    signs) as the pivoted Cholesky of ``GᵀG``, but with ``γ_k = R_kk²`` accurate
    far below ``ε·max γ`` (a formed ``GᵀG`` blurs every ``γ`` under about
    ``m·ε·γ_1``, which can exceed ``η``). For ED, a square symmetric ``G`` (a
    kernel matrix on the training inputs, the paper's case) is decomposed
    itself: ``G = V diag(λ) Vᵀ`` gives ``GᵀG = V diag(λ²) Vᵀ``, the same
    orthogonal components with ``γ_j = λ_j²`` and ``a_jᵀy = λ_j v_jᵀy``, with
    ``γ_j`` accurate to ``ε·λ_1·|λ_j|`` instead of ``ε·λ_1²`` (so the stable set
    ``γ_j > η`` is not blurred by round-off). Any other ``G`` goes through ``GᵀG``.

    Parameters
    ----------
    G : ndarray, shape (n, m)
        Basis outputs.
    y : ndarray, shape (n,)
        Targets.
    methods : tuple of str
        Any of ``"ED"``, ``"ED2"``, ``"GS"``, ``"GS2"``.
    eta, rtol : float
        See :func:`oht_from_normal_equations`.
    center : bool
        Centre ``y`` and return ``ȳ`` as the intercept.
    eigensystem : (values, vectors), optional
        An eigendecomposition of a symmetric ``G`` already at hand (e.g. shared
        with a ridge fit), in any order.

    Returns
    -------
    dict of str to OHTSolution
    """
    methods = _check_methods(methods)
    eta = _check_eta(eta)
    rtol = _check_rtol(rtol)
    G = np.asarray(G, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if G.ndim != 2:
        raise ValueError(f"G must be a 2-D (n, m) matrix; got shape {G.shape}")
    if y.shape != (G.shape[0],):
        raise ValueError(f"y must have shape ({G.shape[0]},) to match G's rows; got {y.shape}")
    n = _check_n(G.shape[0])
    _finite("G", G)
    _finite("y", y)
    intercept = float(np.mean(y)) if center else 0.0
    yc = y - intercept
    if center and not np.any(yc):
        raise DataQualityError(f"y is constant (every value = {intercept:.6g}): "
                               f"nothing to regress on")
    if not np.any(yc):
        raise DataQualityError("y is all zero: nothing to regress on")
    square = G.shape[0] == G.shape[1]
    symmetric = eigensystem is not None or (square and np.array_equal(G, G.T))
    ed = tuple(meth for meth in methods if meth.startswith("ED"))
    gs = tuple(meth for meth in methods if meth.startswith("GS"))
    out: dict[str, OHTSolution] = {}
    if ed and not symmetric:
        out.update(oht_solutions(G.T @ G, G.T @ yc, float(yc @ yc), n, methods=ed, eta=eta,
                                 rtol=rtol))
    if gs:
        R, piv = _pivoted_qr(G, eta, rtol)
        out.update(_gs_solutions(R, piv, G.T @ yc, float(yc @ yc), n, gs, 0.0))
    if symmetric and ed:
        if eigensystem is None:
            lam, V = scipy.linalg.eigh(G, check_finite=False)
        else:
            lam, V = (np.asarray(a, dtype=np.float64) for a in eigensystem)
        gamma = lam * lam
        order = np.argsort(gamma)[::-1]
        bound = max(eta, rtol * float(gamma[order[0]]))
        stable = order[gamma[order] > bound]
        U = V[:, stable]
        c = lam[stable] * (U.T @ yc)
        out.update(_ed_solutions(gamma[stable], U, c, float(yc @ yc), n, ed, 0.0))
    return {meth: replace(out[meth], intercept=intercept) for meth in methods}
