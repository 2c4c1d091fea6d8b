"""Single-node solves of weighted Gaussian kernel regularization (L2 loss)."""

from __future__ import annotations

import warnings

import numpy as np
import scipy.linalg

from bigkern import config
from bigkern.errors import IllConditionedWarning

__all__ = ["solve_weighted_kernel_ridge"]


def solve_weighted_kernel_ridge(
    K: np.ndarray, y: np.ndarray, lam: float, weights: np.ndarray | None = None
) -> np.ndarray:
    """Solve ``(K + λ W⁻¹) c = y`` by Cholesky, for one target or k of them.

    This is the minimiser of ``(y − Kc)ᵀ W (y − Kc) + λ cᵀ K c`` (Shi & Yu,
    section 5.2); ``W = I`` gives plain kernel ridge ``(K + λ I) c = y``. A target
    matrix ``y`` (m, k) (the k one-vs-rest indicators of a k-class label) is solved
    with the one factorization of ``K + λ W⁻¹``: the O(m³) step is paid once, each
    further column costs two triangular solves, O(m²).

    Parameters
    ----------
    K : ndarray, shape (m, m)
        Symmetric positive semi-definite kernel matrix.
    y : ndarray, shape (m,) or (m, k)
        Targets, one column per problem.
    lam : float
        Regularization λ > 0.
    weights : ndarray, shape (m,), optional
        Positive diagonal of W (e.g. bin counts scaled to mean 1).

    Returns
    -------
    ndarray, shape (m,) or (m, k)
        Coefficients ``c``, shaped as ``y``.

    Warns
    -----
    IllConditionedWarning
        When the plain factorization fails and a jitter of
        ``bigkern.cholesky_jitter`` × mean diagonal is added.
    """
    if not lam > 0:
        raise ValueError(f"the regularization lam must be positive; got {lam!r}")
    K = np.asarray(K, dtype=np.float64)
    m = K.shape[0]
    if weights is None:
        diag = np.full(m, float(lam))
    else:
        weights = np.asarray(weights, dtype=np.float64)
        if np.any(weights <= 0) or not np.all(np.isfinite(weights)):
            raise ValueError("weights must be positive and finite")
        diag = lam / weights
    A = K.copy()
    A[np.diag_indices(m)] += diag
    try:
        factor = scipy.linalg.cho_factor(A, lower=True, check_finite=True)
    except np.linalg.LinAlgError:
        jitter = float(config.get("cholesky_jitter")) * float(np.mean(np.diag(A)))
        warnings.warn(
            f"K + λW⁻¹ (size {m}, λ={lam:g}) is not numerically positive definite; "
            f"adding jitter {jitter:.3g} to its diagonal",
            IllConditionedWarning,
            stacklevel=2,
        )
        A[np.diag_indices(m)] += jitter
        factor = scipy.linalg.cho_factor(A, lower=True, check_finite=True)
    return scipy.linalg.cho_solve(factor, np.asarray(y, dtype=np.float64))
