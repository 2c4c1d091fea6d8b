"""Nyström kernel ridge from the reduced normal equations (a small, single-node solve).

With ``G = K(A, Ã)`` (n × m̃) and an unpenalized intercept ``b``, the fit minimizes::

    ‖y − G c − b 1‖² + λ cᵀ P c,     P = K(Ã, Ã)  (Nyström)  or  I  (RSVM-style ‖c‖²).

Eliminating ``b`` (``b = (Σy − 1ᵀG c) / n``) leaves the centered system::

    (GᵀG − G̅ G̅ᵀ / n + λ P) c = Gᵀy − G̅ Σy / n,     G̅ = Gᵀ1,

symmetric positive semi-definite, solved by Cholesky. With ``P = K(Ã, Ã)`` this
is exactly ridge regression with penalty λ on the Nyström features
``Φ = G K(Ã, Ã)^{-1/2}`` (``w = K(Ã, Ã)^{1/2} c``): scikit-learn's
``Nystroem`` + ``Ridge(alpha=λ)``. Everything comes from the pieces ``GᵀG``,
``Gᵀy``, ``Gᵀ1``, ``yᵀy``, ``Σy``, ``n`` of one pass
(:func:`bigkern.reduce.reduced_normal_equations_folds`), so a path of λ and the
held-out squared error of every fold cost no further read.

Several targets (the k one-vs-rest columns of a classifier) share the matrix: with
``Gᵀy`` of shape (m̃, k), ``Σy`` of shape (k,), one factorization solves all k
right-hand sides, each column exactly the system its target alone would give.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg

from bigkern.errors import IllConditionedWarning

__all__ = ["CHOLESKY_MAX_CONDITION", "EIG_CUTOFF", "NystromSolution", "NystromSystem",
           "heldout_sse", "kernel_penalty_basis", "nystrom_solve", "nystrom_system",
           "solve_system"]

#: eigenvalues of K(Ã, Ã) below this fraction of the largest are left out of the basis
EIG_CUTOFF = 1e-10

#: :func:`kernel_penalty_basis` whitens by a Cholesky factor when LAPACK's estimate of
#: ``K(Ã, Ã)``'s 1-norm condition number is at most this: then no eigenvalue is under
#: ``EIG_CUTOFF`` of the largest (the 2-norm condition of a symmetric matrix is at most
#: its 1-norm one; the estimate may fall short of the latter by a small factor, hence
#: the margin of 100), and the two bases give the same solution.
CHOLESKY_MAX_CONDITION = 1e8


def kernel_penalty_basis(K: np.ndarray) -> np.ndarray:
    """``T`` with ``Tᵀ K(Ã, Ã) T = I`` on ``K``'s numerically non-null space.

    With ``c = T w`` the penalty ``cᵀKc`` is ``‖w‖²`` and ``G T`` are the Nyström
    features (scikit-learn's ``Nystroem`` clamps the small eigenvalues instead of
    dropping them): the system in ``w`` has condition ``≤ (‖TᵀGᵀGT‖ + λ) / λ``,
    where the one in ``c`` has that of ``GᵀG`` — about its square.

    ``T = U_r S_r^{-1/2}`` from ``K = U S Uᵀ``, the eigenvalues over ``EIG_CUTOFF · S_max``
    kept; or, when ``K`` is well enough conditioned that none would be dropped
    (:data:`CHOLESKY_MAX_CONDITION`), ``T = L⁻ᵀ`` from its Cholesky factor ``K = L Lᵀ``.
    Any ``T`` with ``T Tᵀ = K⁻¹`` gives the same ``c``, and a Cholesky factorization and
    its inverse cost a fraction of an eigendecomposition, which dominates a direct fit
    with many centres.

    Examples
    --------
    >>> import numpy as np
    >>> def gram(n):
    ...     x = np.linspace(0.0, 1.0, n)[:, None]
    ...     return np.exp(-(x - x.T) ** 2 / 2)
    >>> T = kernel_penalty_basis(gram(5))  # conditioned well enough: T = L⁻ᵀ
    >>> T.shape, bool(np.allclose(T, np.triu(T)))
    ((5, 5), True)
    >>> bool(np.allclose(T.T @ gram(5) @ T, np.eye(5)))
    True
    >>> kernel_penalty_basis(gram(40)).shape  # near singular: the eigenvalues kept
    (40, 7)
    """
    K = np.asarray(K, dtype=np.float64)
    try:
        L = scipy.linalg.cholesky(K, lower=True, check_finite=False)
    except np.linalg.LinAlgError:
        L = None
    if L is not None:
        norm1 = float(np.abs(K).sum(axis=0).max())
        rcond, info = scipy.linalg.lapack.dpocon(L, norm1, uplo="L")
        if info == 0 and rcond * CHOLESKY_MAX_CONDITION >= 1.0:
            return scipy.linalg.solve_triangular(L, np.eye(len(K)), lower=True,
                                                 check_finite=False).T
    S, U = np.linalg.eigh(K)
    keep = EIG_CUTOFF * max(float(S[-1]), 0.0) < S
    return U[:, keep] / np.sqrt(S[keep])

#: relative jitters tried (× mean diagonal) when the Cholesky factorization fails
JITTERS = (0.0, 1e-13, 1e-12, 1e-11, 1e-10, 1e-9, 1e-8, 1e-7, 1e-6)


class NystromSolution(tuple):
    """``(coef, intercept, jitter)``: the solution and the relative jitter it needed
    (``coef`` (m̃,) and a float ``intercept``, or (m̃, k) and (k,) for k targets)."""

    __slots__ = ()

    def __new__(cls, coef: np.ndarray, intercept: float | np.ndarray,
                jitter: float) -> NystromSolution:
        return super().__new__(cls, (coef, intercept, jitter))

    coef = property(lambda self: self[0])
    intercept = property(lambda self: self[1])
    jitter = property(lambda self: self[2])


def nystrom_solve(pieces: dict[str, Any], penalty: np.ndarray | None, lam: float, *,
                  fit_intercept: bool = True, transform: bool = False,
                  warn: bool = True) -> NystromSolution:
    """Solve the (centered) Nyström ridge system from the pass's pieces.

    Parameters
    ----------
    pieces : dict
        ``GtG`` (m̃, m̃), ``Gty``, ``Gsum`` (m̃,), ``ysum`` and ``n`` (see
        :func:`bigkern.reduce.reduced.folds.fold_pieces`); for k targets ``Gty``
        (m̃, k) and ``ysum`` (k,): one factorization, k right-hand sides.
    penalty : ndarray, shape (m̃, m̃) or (m̃, r), or None
        ``P``: ``K(Ã, Ã)`` or the identity (None); or, better conditioned, the basis
        ``T`` of :func:`kernel_penalty_basis` (with ``transform=True``): then the
        system is solved in ``w`` with ``c = T w`` and ``P = T⁺ᵀT⁺``.
    lam : float
        λ > 0.
    fit_intercept : bool
        Fit the unpenalized intercept ``b`` (else ``b = 0`` and the system is uncentered).
    warn : bool
        Warn (:class:`~bigkern.errors.IllConditionedWarning`) when jitter was needed.

    Returns
    -------
    NystromSolution
        ``coef`` (m̃,), ``intercept`` and the relative jitter added to the diagonal
        (0 when the plain factorization succeeded); ``coef`` (m̃, k) and ``intercept``
        (k,) for k targets.

    Raises
    ------
    ValueError
        λ ≤ 0, or no jitter up to 1e-6 of the mean diagonal makes the system factor.
    """
    return solve_system(nystrom_system(pieces, penalty, fit_intercept=fit_intercept,
                                       transform=transform), lam, warn=warn, stacklevel=3)


@dataclass(frozen=True)
class NystromSystem:
    """The centered Nyström system without its λ term (:func:`nystrom_system`): what every
    λ of a path shares, so that each of them costs one factorization only.

    ``matrix`` is ``GᵀG − ḡḡᵀ/n`` (``Tᵀ(…)T`` with ``basis`` = ``T``), ``rhs`` the
    right-hand side(s), ``penalty`` the ``P`` the λ term adds (None: the identity), and
    ``gsum``, ``ysum``, ``n`` what the intercepts are recovered from.
    """

    matrix: np.ndarray
    rhs: np.ndarray
    basis: np.ndarray | None
    penalty: np.ndarray | None
    gsum: np.ndarray
    ysum: float | np.ndarray
    n: float
    fit_intercept: bool


def nystrom_system(pieces: dict[str, Any], penalty: np.ndarray | None, *,
                   fit_intercept: bool = True, transform: bool = False) -> NystromSystem:
    """The system :func:`nystrom_solve` factors, before its λ term (arguments as there).

    Examples
    --------
    One system, a path of λ (each solve as :func:`nystrom_solve` gives it):

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> G, y = rng.uniform(size=(50, 4)), rng.standard_normal(50)
    >>> pieces = {"GtG": G.T @ G, "Gty": G.T @ y, "Gsum": G.sum(0), "ysum": y.sum(), "n": 50}
    >>> system = nystrom_system(pieces, None)
    >>> [bool(np.array_equal(solve_system(system, lam).coef,
    ...                      nystrom_solve(pieces, None, lam).coef)) for lam in (0.1, 1.0)]
    [True, True]
    """
    n = float(pieces["n"])
    M = np.array(pieces["GtG"], dtype=np.float64)
    rhs = np.array(pieces["Gty"], dtype=np.float64)
    gsum = np.asarray(pieces["Gsum"], dtype=np.float64)
    several = rhs.ndim == 2
    ysum = np.asarray(pieces["ysum"], dtype=np.float64) if several else float(pieces["ysum"])
    if fit_intercept:
        M -= np.outer(gsum, gsum) / n
        if several:
            rhs -= gsum[:, None] * (ysum / n)
        else:
            rhs -= gsum * (ysum / n)
    T = None
    if transform:
        T = np.asarray(penalty, dtype=np.float64)
        M, rhs = T.T @ M @ T, T.T @ rhs
    P = None if transform or penalty is None else np.asarray(penalty, dtype=np.float64)
    return NystromSystem(M, rhs, T, P, gsum, ysum, n, fit_intercept)


def solve_system(system: NystromSystem, lam: float, *, warn: bool = True,
                 stacklevel: int = 2) -> NystromSolution:
    """Add the λ term to ``system`` and solve it (see :func:`nystrom_solve`)."""
    if not (np.isfinite(lam) and lam > 0):
        raise ValueError(f"the ridge parameter lam must be a positive finite number; got {lam!r}")
    M, rhs, T, n = system.matrix.copy(), system.rhs, system.basis, system.n
    if system.penalty is None:
        M[np.diag_indices_from(M)] += lam
    else:
        M += lam * system.penalty
    scale = float(np.mean(np.diag(M))) or 1.0
    for jitter in JITTERS:
        A = M if jitter == 0 else M + (jitter * scale) * np.eye(len(M))
        try:
            factor = scipy.linalg.cho_factor(A, lower=False, check_finite=False)
        except np.linalg.LinAlgError:
            continue
        coef = scipy.linalg.cho_solve(factor, rhs, check_finite=False)
        if T is not None:
            coef = T @ coef
        if jitter and warn:
            warnings.warn(f"the Nyström system (GᵀG + λP, λ={lam:g}) is not numerically "
                          f"positive definite: solved with {jitter:g} × its mean diagonal "
                          f"added (a larger lam, or fewer / more distinct centers, avoids "
                          f"this)", IllConditionedWarning, stacklevel=stacklevel)
        if rhs.ndim == 2:
            b = (system.ysum - system.gsum @ coef) / n if system.fit_intercept \
                else np.zeros(rhs.shape[1])
        else:
            b = (system.ysum - float(system.gsum @ coef)) / n if system.fit_intercept else 0.0
        return NystromSolution(coef, b, float(jitter))
    raise ValueError(f"the Nyström system (λ={lam:g}) is not positive definite even with "
                     f"{JITTERS[-1]:g} × its mean diagonal added; increase lam")


def heldout_sse(pieces: dict[str, Any], coef: np.ndarray,
                intercept: float | np.ndarray) -> float:
    """``Σ (y − G c − b)²`` over the rows the pieces sum (e.g. one held-out fold).

    ``yᵀy − 2 cᵀGᵀy − 2 b Σy + cᵀGᵀG c + 2 b cᵀG̅ + n b²``: exact in exact arithmetic,
    it loses digits to cancellation when the fit is very good (enough to rank
    candidates; a residual pass gives the exact value). For k targets (``coef``
    (m̃, k), ``intercept`` (k,)), the sum over all k columns.
    """
    c = np.asarray(coef, dtype=np.float64)
    if c.ndim == 2:
        b = np.asarray(intercept, dtype=np.float64)
        per_target = (np.asarray(pieces["yty"]) - 2.0 * np.einsum("ij,ij->j", c, pieces["Gty"])
                      - 2.0 * b * np.asarray(pieces["ysum"])
                      + np.einsum("ij,ij->j", c, pieces["GtG"] @ c)
                      + 2.0 * b * (np.asarray(pieces["Gsum"]) @ c) + pieces["n"] * b * b)
        return float(per_target.sum())
    b = float(intercept)
    return float(pieces["yty"] - 2.0 * c @ pieces["Gty"] - 2.0 * b * pieces["ysum"]
                 + c @ (pieces["GtG"] @ c) + 2.0 * b * (c @ pieces["Gsum"])
                 + pieces["n"] * b * b)
