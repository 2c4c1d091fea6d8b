"""The finite Newton method for the squared-hinge reduced SVM, on rows held in memory.

With ``u = (v, γ)`` and the augmented kernel rows ``a_i = [K(A_i, Ã), −1]`` (as in
:mod:`bigkern.solvers.newton.smooth_svm`)::

    F(u) = C/2 Σ_i (1 − y_i a_i·u)₊² + ½ ‖u‖²

is convex, once differentiable and piecewise quadratic. With the *active set*
``S(u) = {i : r_i > 0}``, ``r_i = 1 − y_i a_i·u`` (the rows inside the margin)::

    ∇F(u) = u − C Σ_{i∈S} y_i r_i a_i,       H(u) = I + C Σ_{i∈S} a_i a_iᵀ

(``H`` is the generalized Hessian). The Newton step ``d = −H⁻¹ ∇F`` goes to the
minimizer of the quadratic that agrees with ``F`` wherever the active set is
``S``; once ``S`` stops changing, one full step ends the fit (Mangasarian 2002,
*A finite Newton method for classification*; Keerthi & DeCoste 2005, *A modified
finite Newton method for fast solution of large scale linear SVMs*). Against the
smooth hinge's Newton–Armijo, whose every row has curvature, the method saves
three ways:

1. ``H`` sums the active rows only (a few tens of per cent of the rows once the
   fit is near its solution), not all of them;
2. between steps ``H`` is *updated* by the rows that entered or left ``S``
   (``|ΔS|·m̃²`` work instead of ``|S|·m̃²``), and rebuilt from the active rows
   every ``refactor_every`` updates, when an update would cost as much as a
   rebuild, or when the updated matrix fails its Cholesky factorization (round-off
   of many updates);
3. the step length is exact: along ``u + λd``, ``φ(λ) = F(u + λd)`` is piecewise
   quadratic with a breakpoint where a row enters or leaves the margin, and its
   minimizer comes from one sort of those breakpoints
   (:func:`exact_line_search`).

A fit can start from the solution of a subset of the rows
(:func:`subset_warm_start`), whose active set is close to the final one.

The gradient is always formed from the exact active set in float64, so the
solution ``∇F = 0`` never depends on how ``H`` was updated; ``H`` only steers.
The distributed version of the method is :func:`~bigkern.solvers.newton.smooth_svm.newton_armijo`
with :class:`~bigkern.solvers.newton.smooth_losses.SquaredHinge`: one pass per step, its
Hessian summed over the active rows of each chunk.

:func:`finite_newton_iterates` is the method as a generator of the products over the
rows it needs; :func:`finite_newton` answers them one by one, and
:func:`~bigkern.solvers.newton.finite_newton_classes.finite_newton_classes` answers those of
k one-vs-rest problems on the same rows with one matrix product for all.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import numpy as np

from bigkern.kernels.basis import syrk_product
from bigkern.solvers.newton.smooth_svm import (
    NewtonResult,
    check_newton_options,
    cholesky_solve,
    drive,
    newton_direction,
)

__all__ = ["exact_line_search", "finite_newton", "finite_newton_iterates", "subset_warm_start"]


def exact_line_search(r: np.ndarray, w: np.ndarray, ud: float, dd: float, C: float) -> float:
    """The minimizer ``λ ≥ 0`` of ``φ(λ) = C/2 Σ (r_i − λ w_i)₊² + ½ ‖u + λd‖²``.

    Parameters
    ----------
    r : ndarray, shape (n,)
        Margins ``1 − y_i a_i·u`` at the current point.
    w : ndarray, shape (n,)
        ``y_i a_i·d`` along the direction.
    ud, dd : float
        ``u·d`` and ``d·d``.
    C : float
        Weight of the data term.

    Returns
    -------
    float
        The exact minimizer (``0`` when ``d`` is not a descent direction).

    Notes
    -----
    ``φ'(λ) = (u·d − C Σ_{S(λ)} r_i w_i) + λ (d·d + C Σ_{S(λ)} w_i²)`` with
    ``S(λ)`` the rows where ``r_i − λ w_i > 0``: linear between breakpoints
    ``λ_i = r_i / w_i``, continuous and nondecreasing. After one sort of the
    breakpoints, cumulative sums give both coefficients on every piece; the
    minimizer is the root on the first piece whose root lies before its end.

    Examples
    --------
    Two rows inside the margin, ``r = 1``, that the direction moves by ``w = 1`` per
    unit step, and a penalty term ``½λ²`` (``u·d = 0``, ``d·d = 1``): ``φ(λ) = (1 − λ)²
    + ½λ²`` is least at ``λ = 2/3``.

    >>> import numpy as np
    >>> from bigkern.solvers.newton.finite_newton import exact_line_search
    >>> round(exact_line_search(np.ones(2), np.ones(2), 0.0, 1.0, 1.0), 12)
    0.666666666667
    """
    r = np.asarray(r, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    active = (r > 0.0) | ((r == 0.0) & (w < 0.0))  # inside the margin just after λ = 0
    a0 = float(ud) - C * float(r[active] @ w[active])
    b0 = float(dd) + C * float(w[active] @ w[active])
    # a row leaves (r > 0, w > 0) or enters (r < 0, w < 0) the margin at λ = r / w > 0
    moves = ((r > 0.0) & (w > 0.0)) | ((r < 0.0) & (w < 0.0))
    rm, wm = r[moves], w[moves]
    at = rm / wm
    order = np.argsort(at, kind="stable")
    at, rm, wm = at[order], rm[order], wm[order]
    enters = np.where(rm < 0.0, 1.0, -1.0)
    a = a0 + np.concatenate(([0.0], np.cumsum(-C * enters * rm * wm)))
    b = b0 + np.concatenate(([0.0], np.cumsum(C * enters * wm * wm)))
    root = -a / b
    ends = np.append(at, np.inf)
    piece = int(np.argmax(root <= ends))
    return max(float(root[piece]), 0.0)


def _active_gram(A: np.ndarray, rows: np.ndarray, dtype: Any) -> np.ndarray:
    """``Σ_{i∈rows} a_i a_iᵀ`` (both triangles), the product in ``dtype``."""
    B = A if rows.all() and A.dtype == dtype else np.ascontiguousarray(A[rows], dtype=dtype)
    return syrk_product(B).astype(np.float64, copy=False)


def _hessian(A: np.ndarray, active: np.ndarray, C: float, dtype: Any) -> np.ndarray:
    H = C * _active_gram(A, active, dtype)
    H[np.diag_indices_from(H)] += 1.0
    return H


def finite_newton(
    A: np.ndarray,
    y: np.ndarray,
    *,
    C: float,
    u0: np.ndarray | None = None,
    tol: float = 1e-8,
    max_iter: int = 50,
    refactor_every: int = 10,
    hessian_dtype: Any = np.float64,
) -> NewtonResult:
    """Minimize ``F(u) = C/2 Σ (1 − y_i a_i·u)₊² + ½‖u‖²`` by the finite Newton method.

    Parameters
    ----------
    A : ndarray, shape (n, dim)
        The augmented kernel rows ``[K(A_i, Ã), −1]`` of the usable rows, float64.
    y : ndarray, shape (n,)
        Labels ±1.
    C : float
        Weight of the data term (> 0).
    u0 : ndarray, shape (dim,), optional
        Starting point (default 0), e.g. from :func:`subset_warm_start`.
    tol : float
        Stop when ``‖∇F(u)‖ ≤ tol · ‖∇F(0)‖`` (the criterion of
        :func:`~bigkern.solvers.newton.smooth_svm.newton_armijo`, whatever ``u0``).
    max_iter : int
        Most Newton steps.
    refactor_every : int
        Rebuild ``H`` from the active rows after this many updates by the rows that
        changed.
    hessian_dtype : dtype
        Precision of the products forming ``H`` (float64 or float32); the gradient is
        float64 either way.

    Returns
    -------
    NewtonResult
        ``passes`` counts the products ``A u`` and ``A d`` over all rows (one per step;
        the margins are updated along the steps, and recomputed from ``u`` every 10
        steps and before convergence is claimed);
        ``steps`` are the exact step lengths (nothing is backtracked: ``backtracked``
        is 0).

    Examples
    --------
    Four points on a line, separable at 0:

    >>> import numpy as np
    >>> from bigkern.solvers.newton.finite_newton import finite_newton
    >>> x = np.array([-2.0, -1.0, 1.0, 2.0])
    >>> A = np.column_stack([x, -np.ones(4)])
    >>> res = finite_newton(A, np.sign(x), C=10.0)
    >>> res.converged, bool(np.all(np.sign(A @ res.u) == np.sign(x)))
    (True, True)
    """
    A = np.asarray(A, dtype=np.float64)
    return drive(finite_newton_iterates(A, y, C=C, u0=u0, tol=tol, max_iter=max_iter,
                                        refactor_every=refactor_every,
                                        hessian_dtype=hessian_dtype),
                 lambda ask: A @ ask[1] if ask[0] == "times" else ask[1] @ A)


#: What :func:`finite_newton_iterates` asks for: ``("times", v)``, the product ``A v``
#: (n,), or ``("weights", w)``, the product ``wᵀA`` (dim,).
Product = tuple[str, np.ndarray]


def finite_newton_iterates(
    A: np.ndarray,
    y: np.ndarray,
    *,
    C: float,
    u0: np.ndarray | None = None,
    tol: float = 1e-8,
    max_iter: int = 50,
    refactor_every: int = 10,
    hessian_dtype: Any = np.float64,
    start_hessian: np.ndarray | None = None,
) -> Generator[Product, np.ndarray, NewtonResult]:
    """:func:`finite_newton` as a generator of the products over all rows it needs.

    It yields ``("times", v)`` for ``A v`` and ``("weights", w)`` for ``wᵀA``, is sent
    each product, and returns the :class:`NewtonResult`: one driver can then answer
    several problems' products on the same rows with one matrix product
    (:func:`~bigkern.solvers.newton.finite_newton_classes.finite_newton_classes`).
    ``start_hessian``, when given, is ``H`` at the starting point's active set, formed
    by the caller (every row is active at ``u = 0``, whatever the labels, so k problems
    starting there share it); it is copied. The other arguments are
    :func:`finite_newton`'s.
    """
    check_newton_options(C, tol, 1e-4, max_iter)
    C = float(C)
    y = np.asarray(y, dtype=np.float64)
    dim = A.shape[1]
    u = np.zeros(dim) if u0 is None else np.array(u0, dtype=np.float64)
    # ∇F(0) = −C Σ y_i a_i: every row is inside the margin at u = 0
    g0 = C * float(np.linalg.norm((yield "weights", y)))
    r = 1.0 - y * (yield "times", u)
    active = r > 0.0
    H = _hessian(A, active, C, hessian_dtype) if start_hessian is None else start_hessian.copy()
    updates, taken, passes = 0, [], 1

    def gradient() -> Generator[Product, np.ndarray, np.ndarray]:
        # one product over all rows, with the rows outside the margin weighted 0, costs
        # less than gathering the active rows into a copy
        return u - C * (yield "weights", np.where(active, y * r, 0.0))

    g = yield from gradient()
    exact = True  # r was computed from u (not updated along the steps)
    while True:
        gnorm = float(np.linalg.norm(g))
        if gnorm <= tol * g0 or g0 == 0.0:
            if not exact:  # confirm with margins from u itself
                r, exact = 1.0 - y * (yield "times", u), True
                active = r > 0.0
                passes += 1
                g = yield from gradient()
                continue
            message = "gradient norm below tol"
            break
        if len(taken) >= max_iter:
            message = "max_iter reached"
            break
        try:
            d = -cholesky_solve(H, g)
        except np.linalg.LinAlgError:
            # updates have rounded H away from positive definite: rebuild it
            H, updates = _hessian(A, active, C, hessian_dtype), 0
            d = -newton_direction(H, g, C)
        t = yield "times", d
        passes += 1
        lam = exact_line_search(r, y * t, float(u @ d), float(d @ d), C)
        if lam == 0.0:
            message = "no decrease along the Newton direction: F is optimal to round-off"
            break
        u = u + lam * d
        if len(taken) % 10 == 9:
            r, exact = 1.0 - y * (yield "times", u), True  # every 10 steps from u, against drift
            passes += 1
        else:
            r, exact = r - lam * (y * t), False
        now = r > 0.0
        entered, left = now & ~active, active & ~now
        changed = int(entered.sum() + left.sum())
        if changed and (updates >= refactor_every or 2 * changed >= int(now.sum())):
            H, updates = _hessian(A, now, C, hessian_dtype), 0
        elif changed:
            H += C * (_active_gram(A, entered, hessian_dtype)
                      - _active_gram(A, left, hessian_dtype))
            updates += 1
        active = now
        taken.append(lam)
        g = yield from gradient()
    gnorm = float(np.linalg.norm(g))
    converged = gnorm <= tol * g0 or g0 == 0.0 or message.endswith("round-off")
    objective = 0.5 * C * float(r[active] @ r[active]) + 0.5 * float(u @ u)
    return NewtonResult(u, objective, gnorm, g0, len(taken), passes, 0, taken, converged,
                        message)


def subset_warm_start(A: np.ndarray, y: np.ndarray, rows: np.ndarray, *, C: float,
                      hessian_dtype: Any = np.float64) -> NewtonResult:
    """The solution on ``rows`` only, with ``C`` scaled by ``n / len(rows)``.

    The data term of the subset then weighs what the whole data's does (a sum over
    ``n`` rows estimated from ``len(rows)``), so its solution, and its active set,
    are close to the whole fit's: a start for :func:`finite_newton` (tolerance 1e-6,
    as its last digits do not matter).

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern.solvers.newton.finite_newton import finite_newton, subset_warm_start
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=400)
    >>> A, y = np.column_stack([x, -np.ones(400)]), np.sign(x + 0.3 * rng.normal(size=400))
    >>> start = subset_warm_start(A, y, np.arange(0, 400, 10), C=1.0)
    >>> cold, warm = finite_newton(A, y, C=1.0), finite_newton(A, y, C=1.0, u0=start.u)
    >>> bool(np.allclose(cold.u, warm.u)), warm.iterations <= cold.iterations
    (True, True)
    """
    rows = np.asarray(rows)
    scale = A.shape[0] / max(1, rows.size)
    return finite_newton(A[rows], y[rows], C=float(C) * scale, tol=1e-6,
                         hessian_dtype=hessian_dtype)

