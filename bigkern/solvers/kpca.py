"""Kernel PCA from a sparse Gram matrix, centred implicitly (never densified).

The centred Gram matrix ``K̃ = (I − 11ᵀ/n) K (I − 11ᵀ/n)`` is dense even when
``K`` is sparse, so it is applied as an operator:
``K̃v = Kv − 1 (r·v)/n − r (1·v)/n + 1 (1·r)(1·v)/n²`` with ``r = K1``.
Its leading eigenpairs come from ARPACK (:func:`scipy.sparse.linalg.eigsh`),
each iteration one sparse product. Following Schölkopf & Smola, the projection
of a point on component ``j`` is ``Σ_i α_ij k̃(x_i, x)`` with ``α_j = v_j / √λ_j``
(unit-norm feature-space axes), ``λ_j`` the eigenvalues of ``K̃``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

__all__ = ["KernelPCASolution", "centred_projections", "kernel_pca"]


@dataclass
class KernelPCASolution:
    """Leading eigenpairs of the centred Gram matrix and what centring new rows needs."""

    eigenvalues: np.ndarray  # (k,) descending, of K̃ (divide by n for the covariance's)
    eigenvectors: np.ndarray  # (n, k) unit-norm, each signed so its largest entry is positive
    row_means: np.ndarray  # (n,) K1/n
    grand_mean: float  # 1ᵀK1/n²
    #: (n, k) the projection coefficients α = eigenvectors / √eigenvalues (0 where λ ≤ 0)
    alphas: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        positive = np.where(self.eigenvalues > 0, self.eigenvalues, np.inf)
        # C order, as a saved and reloaded model has it: projections are then bit-identical
        self.alphas = np.ascontiguousarray(self.eigenvectors / np.sqrt(positive))


def kernel_pca(K: np.ndarray | sp.spmatrix, n_components: int, *, seed: int = 0,
               tol: float = 0.0) -> KernelPCASolution:
    """Leading ``n_components`` kernel principal axes of a (sparse) Gram matrix."""
    n = K.shape[0]
    if K.shape != (n, n):
        raise ValueError(f"K must be square; got shape {K.shape}")
    if not 1 <= n_components < n:
        raise ValueError(f"n_components must be in [1, n - 1] = [1, {n - 1}]; "
                         f"got {n_components!r}")
    ones = np.ones(n)
    r = np.asarray(K @ ones).ravel()
    total = float(r.sum())

    def _centred(v: np.ndarray) -> np.ndarray:
        v = np.asarray(v, dtype=np.float64).ravel()
        s = v.sum()
        return np.asarray(K @ v).ravel() - (r @ v) / n - r * (s / n) + total * s / n**2

    op = spla.LinearOperator((n, n), matvec=_centred, dtype=np.float64)
    v0 = np.random.default_rng(seed).standard_normal(n)
    values, vectors = spla.eigsh(op, k=n_components, which="LA", v0=v0, tol=tol)
    order = np.argsort(values)[::-1]
    values, vectors = values[order], vectors[:, order]
    # a fixed sign per axis: the largest-magnitude entry positive (determinism)
    signs = np.sign(vectors[np.argmax(np.abs(vectors), axis=0), np.arange(n_components)])
    vectors = vectors * np.where(signs == 0, 1.0, signs)
    return KernelPCASolution(values, np.ascontiguousarray(vectors), r / n, total / n**2)


def centred_projections(K_new: np.ndarray | sp.spmatrix,
                        solution: KernelPCASolution) -> np.ndarray:
    """Projections of new rows from their kernel rows ``K_new`` (m, n) against the training set."""
    Kn = K_new @ solution.alphas
    Kn = np.asarray(Kn)
    new_means = np.asarray(K_new.sum(axis=1)).ravel() / K_new.shape[1]
    return (Kn - solution.row_means @ solution.alphas
            - np.outer(new_means, solution.alphas.sum(axis=0))
            + solution.grand_mean * solution.alphas.sum(axis=0))
