"""Nyström kernel ridge by preconditioned conjugate gradients (Falkon's way).

The direct solve (:mod:`bigkern.solvers.nystrom`) needs ``GᵀG`` (m̃ × m̃) of
``G = K(A, Ã)`` (n × m̃): a pass costing n·m̃² flops, the floor of that design
at large m̃. Conjugate gradients need only products ``Gᵀ(G v)``, n·m̃·(d + 2)
flops a pass, and few of them when preconditioned as Falkon (Rudi, Carratino
& Rosasco 2017) is. The system, with an unpenalized intercept eliminated, is::

    H c = r,    H = GᵀG − ḡ ḡᵀ / n + λ K,    r = Gᵀy − ḡ Σy / n,

``K = K(Ã, Ã)``, ``ḡ = Gᵀ1``: the one the direct solve factors. When the
centers are a uniform sample of the n rows, ``GᵀG ≈ (n / m̃) K²``, so
``H ≈ Tᵀ (n/m̃ · T Tᵀ + λ I) T = Tᵀ Aᵀ A T`` with ``T`` the Cholesky factor of
``K`` (plus a jitter of 10⁻¹³·m̃ of its mean diagonal, Falkon's choice in
float64) and ``A`` that of
``n/m̃ · T Tᵀ + λ I``. Conjugate gradients run on ``β = A T c``, whose matrix
``A⁻ᵀ T⁻ᵀ H T⁻¹ A⁻¹`` is near the identity: its condition number, not ``H``'s,
sets the iterations. Both factors come from ``K`` alone (two m̃³/3 Cholesky
factorizations, against the eigendecomposition of the direct solve). As in
Falkon, the penalty's part of that matrix is applied as ``λ A⁻ᵀA⁻¹`` — that is,
with ``K`` taken as ``TᵀT`` — rather than by multiplying by ``K``: ``T⁻¹`` makes
vectors large where ``K`` is nearly singular, and ``K`` times them loses every
digit to cancellation. The system solved is thus the one with ``K`` plus the
jitter, 10⁻¹³·m̃ of its mean diagonal, where the direct solve drops ``K``'s
eigendirections below 10⁻¹⁰ of the largest.

:func:`preconditioned_cg` is the iteration, given the product ``v ↦ H v`` (one
pass over the rows each, :func:`bigkern.reduce.reduced.products.kernel_products`
for data on a cluster). It works in float64, recomputes the true residual every
``restart`` iterations (its recurrence drifts), stops at a relative residual of
``tol`` (checked by a recomputed residual) and warns, naming the iterations and
the residual, when it stops short: at ``max_iter``, or at round-off's floor: when,
at two restarts running, the recomputed residual has not improved and differs
from the recurrence's by half its size or more. It returns the best iterate it
saw. At ``max_iter`` the residual reported is the recurrence's, fewer than
``restart`` iterations from a recomputed one (the drift the restarts tolerate
anyway), since recomputing it would cost one more pass over the rows for a
number only; ``CGResult.residual_recomputed`` says which it is.

The recurrence is a generator (:func:`_cg_steps`) that asks for each product it
needs, so that :mod:`bigkern.solvers.conjugate_gradients_columns` can advance several
of them together, one pass over the rows serving all.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Generator
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg
from sklearn.exceptions import ConvergenceWarning

from bigkern.cluster.compute import blas_controller

__all__ = ["CGResult", "FalkonPreconditioner", "preconditioned_cg"]

#: Added to ``K(Ã, Ã)``'s diagonal, times m̃ and its mean diagonal (Falkon's float64 value)
JITTER = 1e-13


@dataclass(frozen=True)
class FalkonPreconditioner:
    """``B = T⁻¹ A⁻¹`` with ``BᵀHB ≈ I`` for ``H = GᵀG + λK`` (see the module).

    Built by :meth:`from_kernel`.

    Parameters
    ----------
    T, A : ndarray, shape (m̃, m̃)
        Upper-triangular Cholesky factors: ``TᵀT = K + jitter·I``,
        ``AᵀA = (n / m̃) T Tᵀ + λ I``.
    jitter : float
        What was added to ``K``'s diagonal (10⁻¹³·m̃ · its mean diagonal, or 10³ or
        10⁶ times that when ``K`` needed more to be factored).

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern.kernels import gaussian_kernel
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((400, 2))
    >>> centers = X[:40]
    >>> G, K = gaussian_kernel(X, centers, 1.0), gaussian_kernel(centers, centers, 1.0)
    >>> pre = FalkonPreconditioner.from_kernel(K, n=400, lam=1.0)
    >>> H = G.T @ G + 1.0 * K
    >>> B = pre.apply(np.eye(40))
    >>> bool(np.linalg.cond(B.T @ H @ B) < 0.01 * np.linalg.cond(H))
    True
    """

    T: np.ndarray
    A: np.ndarray
    jitter: float
    centered: bool = False
    seconds: float = field(default=0.0, compare=False)  # what from_kernel took
    #: rows of the sample ``A`` was formed from (:meth:`from_sample`); 0: from ``K`` alone
    sample_rows: int = 0

    @classmethod
    def from_kernel(cls, K: np.ndarray, n: int, lam: float, *,
                    centered: bool = False, jitter: float = JITTER) -> FalkonPreconditioner:
        """The factors from ``K = K(Ã, Ã)``, the number of rows ``n`` and λ.

        With ``centered`` (a fit with an intercept, whose matrix is ``GᵀG − ḡḡᵀ/n + λK``)
        the rank-one term is approximated as the rest is: ``ḡ ≈ (n/m̃) K 1``, so that
        ``GᵀG − ḡḡᵀ/n ≈ (n/m̃) K C K`` with the centering ``C = I − 11ᵀ/m̃``, and
        ``AᵀA = (n/m̃) T C Tᵀ + λI`` (positive definite: ``C`` is a projection). Without
        it, the preconditioned matrix keeps one eigenvalue near ``λ / (n/m̃ · s + λ)``
        along the constant direction, which small λ make an outlier CG must find.
        ``jitter`` is the relative jitter added to ``K``'s diagonal (times m̃ and its mean
        diagonal).

        Raises
        ------
        ValueError
            ``K`` is not positive definite even with the jitter (non-finite values).
        """
        t0 = time.perf_counter()
        K, jitter = _checked_kernel(K, jitter)
        # one BLAS thread, as the other single-node solves take: on busy shared cores
        # OpenBLAS's thread pool made these factorizations several times slower
        with blas_controller().limit(limits=1, user_api="blas"):
            T, A, attempt = _factors(K, n, lam, centered, jitter)
        return cls(T, A, attempt, centered, time.perf_counter() - t0)

    @classmethod
    def from_sample(cls, K: np.ndarray, gram: np.ndarray, gsum: np.ndarray, n_sample: int,
                    n: int, lam: float, *, centered: bool = False,
                    jitter: float = JITTER) -> FalkonPreconditioner:
        """The factors with ``GᵀG`` estimated from a uniform sample of the rows.

        :meth:`from_kernel` takes ``GᵀG ≈ (n/m̃) K²``: the m̃ centres stand for the rows.
        Here a sample of ``n_sample`` rows does, through its own Gram matrix
        ``gram = G_sᵀG_s`` and column sums ``gsum = G_sᵀ1``:
        ``M = (n / n_s)(G_sᵀG_s − ḡ_s ḡ_sᵀ / n_s)`` (the rank-one term with ``centered``) and
        ``AᵀA = T⁻ᵀ M T⁻¹ + λI``. With a few rows per centre (bigkern takes 4) the
        preconditioned matrix stays near the identity at small λ, where the
        centres' estimate leaves eigenvalues CG needs hundreds of iterations to find
        (the models page of the user guide gives the measured iterations). Forming
        it costs LAPACK's ``sygst`` (``T⁻ᵀ M T⁻¹``, m̃³ flops) and two Cholesky
        factorizations besides the sample's Gram.
        When ``AᵀA`` cannot be factored (round-off at a tiny λ), :meth:`from_kernel`'s
        factors are returned.

        Examples
        --------
        >>> import numpy as np
        >>> from bigkern.kernels import gaussian_kernel
        >>> rng = np.random.default_rng(0)
        >>> X = rng.standard_normal((2000, 2))
        >>> centers, sample = X[:40], X[1000:1160]
        >>> G, K = gaussian_kernel(X, centers, 1.0), gaussian_kernel(centers, centers, 1.0)
        >>> Gs = gaussian_kernel(sample, centers, 1.0)
        >>> H = G.T @ G + 1e-3 * K
        >>> kinds = [FalkonPreconditioner.from_kernel(K, n=2000, lam=1e-3),
        ...          FalkonPreconditioner.from_sample(K, Gs.T @ Gs, Gs.sum(axis=0), 160,
        ...                                           n=2000, lam=1e-3)]
        >>> conds = [np.linalg.cond(pre.apply(np.eye(40)).T @ H @ pre.apply(np.eye(40)))
        ...          for pre in kinds]
        >>> bool(conds[1] < conds[0]), kinds[1].sample_rows
        (True, 160)
        """
        t0 = time.perf_counter()
        K, scaled = _checked_kernel(K, jitter)
        m = len(K)
        M = np.array(gram, dtype=np.float64)
        if centered:
            g = np.asarray(gsum, dtype=np.float64)
            M -= np.outer(g, g) / max(n_sample, 1)
        with blas_controller().limit(limits=1, user_api="blas"):
            T, attempt = _kernel_factor(K, scaled)
            # T⁻ᵀ M T⁻¹ by LAPACK's sygst, the reduction of a generalized symmetric
            # eigenproblem to standard form: m̃³ flops on the upper triangle, where two
            # triangular solves take 2m̃³; the factorization below reads that triangle only
            inner, info = scipy.linalg.lapack.dsygst(np.asfortranarray(M), T, itype=1,
                                                     lower=0, overwrite_a=1)
            if info == 0:
                inner *= n / max(n_sample, 1)
                inner[np.diag_indices(m)] += lam
                A, info = scipy.linalg.lapack.dpotrf(inner, lower=0, clean=1, overwrite_a=1)
        if info != 0 or not np.isfinite(A).all():
            return cls.from_kernel(K, n, lam, centered=centered, jitter=jitter)
        return cls(T, A, attempt, centered, time.perf_counter() - t0, int(n_sample))

    def apply(self, beta: np.ndarray) -> np.ndarray:
        """``B β = T⁻¹ A⁻¹ β``."""
        u = scipy.linalg.solve_triangular(self.A, beta, lower=False)
        return scipy.linalg.solve_triangular(self.T, u, lower=False)

    def apply_transpose(self, v: np.ndarray) -> np.ndarray:
        """``Bᵀ v = A⁻ᵀ T⁻ᵀ v``."""
        u = scipy.linalg.solve_triangular(self.T, v, lower=False, trans="T")
        return scipy.linalg.solve_triangular(self.A, u, lower=False, trans="T")


def _checked_kernel(K: np.ndarray, jitter: float) -> tuple[np.ndarray, float]:
    """``K`` as float64, checked finite, and the relative ``jitter`` times m̃ and its mean
    diagonal."""
    K = np.asarray(K, dtype=np.float64)
    if not np.isfinite(K).all():
        raise ValueError("K(Ã, Ã) has non-finite values: the centers or the width are "
                         "not usable")
    return K, float(jitter * len(K) * max(float(np.mean(np.diag(K))), 1e-300))


def _kernel_factor(K: np.ndarray, jitter: float) -> tuple[np.ndarray, float]:
    """``T`` with ``TᵀT = K + jitter·I`` (×10³, ×10⁶ when needed) and the jitter used."""
    diagonal = np.diag_indices(len(K))
    # LAPACK directly, on the upper triangles, in place: scipy.linalg.cholesky would
    # check and copy its 200 MB input (m̃ = 5,000) and zero the other triangle each time
    for attempt in (jitter, jitter * 1e3, jitter * 1e6):
        work = K.copy(order="F")
        work[diagonal] += attempt
        T, info = scipy.linalg.lapack.dpotrf(work, lower=0, clean=1, overwrite_a=1)
        if info == 0:
            return T, attempt
    raise ValueError("K(Ã, Ã) is not positive definite even with a jitter of "
                     f"{jitter * 1e6:g} on its diagonal")


def _factors(K: np.ndarray, n: int, lam: float, centered: bool, jitter: float
             ) -> tuple[np.ndarray, np.ndarray, float]:
    """``T``, ``A`` and the jitter used (see :meth:`FalkonPreconditioner.from_kernel`)."""
    m = len(K)
    diagonal = np.diag_indices(m)
    T, attempt = _kernel_factor(K, jitter)
    # T Tᵀ by LAPACK's lauum (m³/3 flops on the upper triangle, where a product takes
    # 2m³), scaled and shifted in place: the next factorization reads only that triangle
    inner, info = scipy.linalg.lapack.dlauum(T, lower=0, overwrite_c=0)
    if info != 0:
        raise np.linalg.LinAlgError(f"dlauum failed (info={info})")
    inner *= n / m
    if centered:  # − (n/m̃) (T1)(T1)ᵀ / m̃: only the upper triangle is read
        u = T.sum(axis=1)  # T upper triangular: T 1
        inner -= (n / m / m) * np.outer(u, u)
    inner[diagonal] += lam
    A, info = scipy.linalg.lapack.dpotrf(inner, lower=0, clean=1, overwrite_a=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"n/m̃ · T Tᵀ + λI is not positive definite "
                                    f"(info={info}): is lam > 0?")
    return T, A, attempt


@dataclass(frozen=True)
class CGResult:
    """What :func:`preconditioned_cg` found: ``coef``, iterations, products, residual."""

    coef: np.ndarray
    n_iter: int
    n_products: int
    residual: float  # relative, of the preconditioned system
    converged: bool
    residual_recomputed: bool = True  # False: the recurrence's, at max_iter (see the module)


def preconditioned_cg(
    product: Callable[[np.ndarray], np.ndarray],
    rhs: np.ndarray,
    preconditioner: FalkonPreconditioner,
    lam: float,
    *,
    tol: float = 1e-7,
    max_iter: int = 100,
    restart: int = 10,
    start: np.ndarray | None = None,
    start_product: np.ndarray | None = None,
) -> CGResult:
    """Solve ``(H₀ + λ TᵀT) c = rhs`` by conjugate gradients on ``β = A T c``.

    Parameters
    ----------
    product : callable
        ``v ↦ H₀ v`` for ``v`` of shape (m̃,), the data's part of the matrix
        (``GᵀG v − ḡ ḡᵀv / n``): one pass over the rows.
    rhs : ndarray, shape (m̃,)
    preconditioner : FalkonPreconditioner
        ``B = T⁻¹A⁻¹`` (``TᵀT`` is ``K`` with its jitter).
    lam : float
        λ, as the preconditioner was built with.
    tol : float
        Stop when ``‖Bᵀ(rhs − H c)‖ ≤ tol · ‖Bᵀ rhs‖``.
    max_iter : int
        At most this many iterations (products, not counting the restarts').
    restart : int
        Recompute the residual from ``c`` (one more product) every ``restart``
        iterations, and when the recurrence's says it is below ``tol``.
    start : ndarray, shape (m̃,), optional
        A first guess (e.g. the solution at a neighbouring λ).
    start_product : ndarray, shape (m̃,), optional
        ``product(start)``, when the caller has it (e.g. from the pass that summed
        ``rhs``): the first residual then costs no product.

    Returns
    -------
    CGResult

    Warns
    -----
    sklearn.exceptions.ConvergenceWarning
        ``max_iter`` iterations left the residual above ``tol``: the warning
        names both.

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern.kernels import gaussian_kernel
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((500, 2))
    >>> G, K = gaussian_kernel(X, X[:50], 1.0), gaussian_kernel(X[:50], X[:50], 1.0)
    >>> rhs = G.T @ np.sin(X[:, 0])
    >>> found = preconditioned_cg(lambda v: G.T @ (G @ v), rhs,
    ...                           FalkonPreconditioner.from_kernel(K, 500, 1.0), lam=1.0)
    >>> found.converged, found.n_iter < 30
    (True, True)
    >>> H = G.T @ G + 1.0 * K
    >>> bool(np.linalg.norm(H @ found.coef - rhs) < 1e-6 * np.linalg.norm(rhs))
    True
    """
    steps = _cg_steps(rhs, preconditioner, lam, tol=tol, max_iter=max_iter, restart=restart,
                      start=start, start_product=start_product)
    try:
        vector = next(steps)
        while True:
            vector = steps.send(product(vector))
    except StopIteration as stop:
        found, why = stop.value
    if why is not None:
        warnings.warn(_short_of_tol(found, why, tol), ConvergenceWarning, stacklevel=2)
    return found


def _short_of_tol(found: CGResult, why: str, tol: float) -> str:
    """What a solve that stopped above ``tol`` says: iterations, why, residual, advice."""
    if why == "stalled":
        why, advice = ("its residual no longer decreasing (round-off's floor at this "
                       "conditioning)"), "raise lam or loosen tol"
    else:
        advice = "raise max_iter or lam, or loosen tol"
    how = "" if found.residual_recomputed else " (by the recurrence)"
    return (f"conjugate gradients stopped after {found.n_iter} iterations ({why}) at a "
            f"relative residual of {found.residual:.3g}{how}, above tol={tol:g}: {advice}")


def _cg_steps(rhs: np.ndarray, B: FalkonPreconditioner, lam: float, *, tol: float,
              max_iter: int, restart: int, start: np.ndarray | None,
              start_product: np.ndarray | None
              ) -> Generator[np.ndarray, np.ndarray, tuple[CGResult, str | None]]:
    """The recurrence of :func:`preconditioned_cg` for one right-hand side, as a generator:
    it yields each vector ``v`` whose product ``H₀ v`` it needs, is sent that product, and
    returns the result and why it stopped short (None when converged)."""
    b_hat = B.apply_transpose(np.asarray(rhs, dtype=np.float64))
    norm_b = float(np.linalg.norm(b_hat))
    m = len(b_hat)
    if norm_b == 0.0:
        return CGResult(np.zeros(m), 0, 0, 0.0, True), None
    n_products = 0

    def matrix_times(beta: np.ndarray, data_product: np.ndarray | None = None
                     ) -> Generator[np.ndarray, np.ndarray, np.ndarray]:
        """BᵀHB β, the penalty as λ A⁻ᵀA⁻¹ β (``data_product``: H₀ B β, if known)."""
        nonlocal n_products
        u = scipy.linalg.solve_triangular(B.A, beta, lower=False)
        if data_product is None:
            n_products += 1
            coef = scipy.linalg.solve_triangular(B.T, u, lower=False)  # B β, from A⁻¹β once
            data_product = yield coef
        data = scipy.linalg.solve_triangular(B.T, data_product, lower=False, trans="T")
        return scipy.linalg.solve_triangular(B.A, data + lam * u, lower=False, trans="T")

    def residual_of(beta: np.ndarray, data_product: np.ndarray | None = None
                    ) -> Generator[np.ndarray, np.ndarray, np.ndarray]:
        return b_hat - (yield from matrix_times(beta, data_product))

    if start is None:
        beta = np.zeros(m)
        r = b_hat.copy()
    else:
        beta = B.A @ (B.T @ np.asarray(start, dtype=np.float64))  # c = T⁻¹A⁻¹β
        r = yield from residual_of(beta, None if start_product is None
                                   else np.asarray(start_product, dtype=np.float64))
    p = r.copy()
    rs = float(r @ r)
    it = 0
    true = True  # r is a recomputed residual, not the recurrence's
    best, best_beta, stalls = np.sqrt(rs), beta.copy(), 0  # the best recomputed residual
    while it < max_iter:
        if np.sqrt(rs) <= tol * norm_b:
            if true:
                break
            # the recurrence says converged: check with the true residual, go on if not
            r, true = (yield from residual_of(beta)), True
            rs = float(r @ r)
            p = r.copy()  # restart from the true residual
            continue
        Hp = yield from matrix_times(p)
        alpha = rs / float(p @ Hp)
        beta += alpha * p
        it += 1
        if it % restart == 0:
            # the recurrence drifts from the true residual: replace it. When the drift is
            # as large as the residual and the residual has not improved (a CG residual
            # need not fall at every step), round-off's floor is reached: twice running,
            # further iterations only wander
            recurred, r, true = r - alpha * Hp, (yield from residual_of(beta)), True
            now = float(np.linalg.norm(r))
            if now < best:
                best, best_beta, stalls = now, beta.copy(), 0
            elif float(np.linalg.norm(r - recurred)) > 0.5 * now:
                stalls += 1
                if stalls == 2:
                    break
        else:
            r, true = r - alpha * Hp, False
        rs_new = float(r @ r)
        p = r + (rs_new / rs) * p
        rs = rs_new
    if not true and np.sqrt(rs) <= tol * norm_b:
        r, true = (yield from residual_of(beta)), True  # convergence: a recomputed residual
    if float(np.linalg.norm(r)) >= best:
        beta, r, true = best_beta, None, True
    residual = (best if r is None else float(np.linalg.norm(r))) / norm_b
    converged = true and residual <= tol
    why = None if converged else ("stalled" if stalls == 2 else "max_iter")
    return CGResult(B.apply(beta), it, n_products, residual, converged, true), why
