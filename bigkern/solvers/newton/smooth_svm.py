"""The smooth reduced SVM (Lee & Huang, problem (5)) by Newton–Armijo, from sums over rows.

Problem (5) on a reduced kernel, with ``u = (v, γ) ∈ R^{m̃+1}`` and for every
row ``i`` the augmented kernel row ``a_i = [K(A_i, Ã), −1]`` (so the decision
value is ``f_i = a_i·u = K(A_i, Ã) v − γ``)::

    F(u) = C Σ_i ℓ(f_i, y_i) + ½ ‖u‖²,     ℓ(f, y) = ½ p(1 − y f, α)²,

with the smooth plus function ``p(z, α) = z + log(1 + e^{−αz}) / α`` (6). Then::

    ∇F(u)  = u + C Σ_i ℓ'(f_i, y_i) a_i,          ℓ' = −y p(r) p'(r),
    ∇²F(u) = I + C Σ_i ℓ''(f_i, y_i) a_i a_iᵀ,    ℓ'' = p'(r)² + p(r) p''(r),

(``r = 1 − y f``, ``y² = 1``; ``p' = σ(αr)``, ``p'' = α σ(αr) σ(−αr)``), so
everything the solver needs from the data is three sums over rows: ``Σ ℓ``
(at a batch of points), ``Σ ℓ' a`` and ``Σ ℓ'' a aᵀ``.
:class:`~bigkern.kernels.row_sums.RowSums` holds them;
:func:`~bigkern.kernels.row_sums.accumulate_block` adds one in-memory block of
rows (what each chunk of a distributed pass does, so it lives below both the
passes and this solver); :func:`newton_armijo` drives the iteration through
any ``evaluate`` that returns the sums of one pass.

The line-search scheme (one pass per Newton iteration)
-------------------------------------------------------
Classic Newton–Armijo at ``u_k``: ``d_k = −∇²F(u_k)⁻¹ ∇F(u_k)``; the step is the
first ``λ`` of ``1, ½, ¼, …`` with ``F(u_k) − F(u_k + λ d_k) ≥ −δ λ ∇F(u_k)ᵀd_k``;
``u_{k+1} = u_k + λ d_k``; stop when ``‖∇F(u_k)‖ ≤ tol · ‖∇F(u_0)‖``.

Each *pass* here is given a base point ``u``, a direction ``d``, step sizes
``Λ`` and one step ``λ₀``. Per row it forms ``s = a·u`` and ``t = a·d`` once,
so ``F`` along the line costs one scalar loss per row and step:
``Σ ℓ(s + λ t, y)`` for every ``λ ∈ Λ``; and it forms ``Σ ℓ' a`` and
``Σ ℓ'' a aᵀ`` at ``u + λ₀ d``. Newton iteration ``k`` makes the pass
``(u_k, d_k, Λ = {1, ½, …, 2^-L}, λ₀ = 1)``: the whole Armijo search is
decided from its ``Λ`` losses, and the gradient and Hessian come *speculatively*
at the full step. When the full step is accepted — the usual case, and always
near the solution, where Newton converges quadratically — they are those of
``u_{k+1}``, and the iteration cost exactly one pass. When a shorter step
``λ* < 1`` is accepted, one more pass ``(u_k, d_k, {λ*}, λ*)`` gives them at
``u_{k+1}``. The first pass, at ``u_0 = 0``, is ``(0, 0, {0}, 0)``. Hence
``passes = 1 + iterations + backtracked iterations``, and the iterates, steps
and stopping point are those of classic Newton–Armijo (the same arithmetic up
to rounding; ``tests/models/test_reduced_svc.py`` checks this against a classic
implementation that evaluates one trial step at a time). Should no step down to
``2^-L`` pass the test, the iteration stops and says so; when the Newton
decrement is then below ``1e4 ε |F|`` (the test failed to round-off in ``F``)
that counts as converged.

The iteration itself is :func:`newton_armijo_iterates`, a generator of the passes it
needs: :func:`newton_armijo` answers them with one ``evaluate``, and
:func:`~bigkern.solvers.newton.lockstep_newton.newton_armijo_lockstep` answers those of k
one-vs-rest problems with one pass for all.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg

from bigkern.cluster.compute import blas_controller
from bigkern.errors import IllConditionedWarning
from bigkern.kernels.row_sums import RowSums
from bigkern.solvers.newton.smooth_losses import SmoothEpsilonInsensitive, SmoothHinge, smooth_plus

__all__ = [
    "NewtonResult", "SmoothEpsilonInsensitive", "SmoothHinge", "armijo_steps", "armijo_test",
    "check_newton_options", "cholesky_solve", "drive", "newton_armijo",
    "newton_armijo_iterates", "newton_direction", "objective", "smooth_plus"
]


def armijo_steps(max_halvings: int) -> np.ndarray:
    """The trial steps ``1, ½, …, 2^-max_halvings`` of the batched Armijo search."""
    return 0.5 ** np.arange(int(max_halvings) + 1, dtype=np.float64)


@dataclass
class NewtonResult:
    """What :func:`newton_armijo` found.

    Attributes
    ----------
    u : ndarray
        The solution ``(v, γ)``; the decision function is ``K(x, Ã) v − γ``.
    objective : float
        ``F(u)``.
    grad_norm, grad_norm0 : float
        ``‖∇F‖`` at ``u`` and at the start ``u_0 = 0``.
    iterations : int
        Newton steps taken.
    passes : int
        Evaluations of the sums (reads of the data, for a distributed ``evaluate``).
    backtracked : int
        Iterations whose accepted step was < 1 (each cost one extra pass).
    steps : list of float
        The accepted step of every iteration.
    converged : bool
        ``grad_norm ≤ tol · grad_norm0``, or no trial step decreased ``F`` while the
        Newton decrement ``−∇Fᵀd`` (≈ 2 (F(u) − min F)) was below ``1e4 ε |F|``:
        ``u`` is then optimal to the precision with which ``F`` can be evaluated.
    message : str
        Why the iteration stopped.
    refined_at : int or None
        The iteration after which ``refine`` was called (None: never).
    """

    u: np.ndarray
    objective: float
    grad_norm: float
    grad_norm0: float
    iterations: int
    passes: int
    backtracked: int
    steps: list[float]
    converged: bool
    message: str
    refined_at: int | None = None


#: Newton decrement (relative to |F|) below which a failed line search means "optimal".
_ROUNDOFF = 1e4 * np.finfo(np.float64).eps

Evaluate = Callable[[np.ndarray, np.ndarray, np.ndarray, float], RowSums]


def newton_armijo(
    evaluate: Evaluate,
    dim: int,
    *,
    C: float,
    tol: float = 1e-8,
    max_iter: int = 50,
    delta: float = 1e-4,
    max_halvings: int = 20,
    callback: Callable[[dict[str, Any]], None] | None = None,
    refine: Callable[[], Any] | None = None,
    first_trials: int | None = None,
) -> NewtonResult:
    """Minimize ``F(u) = C Σ ℓ + ½‖u‖²`` by Newton–Armijo, one ``evaluate`` per iteration.

    Parameters
    ----------
    evaluate : callable
        ``evaluate(u, d, steps, at) -> RowSums``: the sums over all rows with
        ``f_i = a_i·(u + λ d)``, the loss at each ``λ`` in ``steps`` and the
        gradient/Hessian sums at ``λ = at`` (one pass over the data).
    dim : int
        ``m̃ + 1``.
    C : float
        Weight of the data term (> 0).
    tol : float
        Stop when ``‖∇F(u)‖ ≤ tol · ‖∇F(0)‖``.
    max_iter : int
        Most Newton steps.
    delta : float
        Armijo constant δ ∈ (0, ½).
    max_halvings : int
        Trial steps ``1 … 2^-max_halvings`` (one batch, one pass).
    callback : callable, optional
        Called after every iteration with a dict (iteration, step, objective, grad_norm).
    refine : callable, optional
        Called once, after the first iteration that reduces ``‖∇F‖`` by less than half
        or brings it below ``√tol · ‖∇F(0)‖``. An ``evaluate`` whose Hessian is
        approximate (float32 products, for speed) uses it to switch to the exact
        one: the last digits then come from exact Newton steps, so the iterates end
        where exact Newton ends (to round-off, whatever the chunking) and converge
        quadratically. The solution ``∇F = 0`` never depends on the Hessian.
    first_trials : int, optional
        Evaluate only the first ``first_trials`` trial steps (``1 … 2^-(first_trials-1)``)
        in an iteration's first batch, and the others in a second batch when none of
        them passes: for an ``evaluate`` whose passes are cheap (in memory), where most
        iterations take the step 1 and the loss at every trial step is most of a pass's
        work. The steps taken are the same as with one batch. Default: one batch of all.

    Returns
    -------
    NewtonResult
    """
    return drive(newton_armijo_iterates(dim, C=C, tol=tol, max_iter=max_iter, delta=delta,
                                        max_halvings=max_halvings, callback=callback,
                                        refine=refine, first_trials=first_trials),
                 lambda point: evaluate(*point))


#: What :func:`newton_armijo_iterates` asks for: one pass ``(u, d, steps, at)``.
Point = tuple[np.ndarray, np.ndarray, np.ndarray, float]


def drive(iterates: Generator[Any, Any, Any], answer: Callable[[Any], Any]) -> Any:
    """Run a solver written as a generator of requests, answering each with ``answer``."""
    try:
        request = next(iterates)
        while True:
            request = iterates.send(answer(request))
    except StopIteration as done:
        return done.value


def newton_armijo_iterates(
    dim: int,
    *,
    C: float,
    tol: float = 1e-8,
    max_iter: int = 50,
    delta: float = 1e-4,
    max_halvings: int = 20,
    callback: Callable[[dict[str, Any]], None] | None = None,
    refine: Callable[[], Any] | None = None,
    first_trials: int | None = None,
    u0: np.ndarray | None = None,
    grad_norm0: float | None = None,
) -> Generator[Point, RowSums, NewtonResult]:
    """:func:`newton_armijo` as a generator: it yields each pass it needs, ``(u, d, steps,
    at)``, is sent that pass's :class:`RowSums`, and returns the :class:`NewtonResult`.

    So one driver can advance several problems whose passes share one read of the rows
    (:func:`bigkern.solvers.newton.lockstep_newton.newton_armijo_lockstep`); the arguments are
    :func:`newton_armijo`'s, and ``u0`` a starting point other than 0 (e.g. a fit on a
    subset of the rows), with ``grad_norm0`` the norm ``‖∇F(0)‖`` of the stopping rule
    (which a pass at ``u0`` does not give).
    """
    check_newton_options(C, tol, delta, max_iter)
    C = float(C)
    steps = armijo_steps(max_halvings)
    first = len(steps) if first_trials is None else max(1, min(int(first_trials), len(steps)))
    u = np.zeros(dim) if u0 is None else np.array(u0, dtype=np.float64)
    zero = np.zeros(dim)
    sums = yield u, zero, np.zeros(1), 0.0
    passes, backtracked, taken = 1, 0, []
    refined_at: int | None = None
    f = C * float(sums.loss[0]) if u0 is None else objective(u, float(sums.loss[0]), C)
    g, H = _gradient_hessian(u, sums, C)
    g0 = float(np.linalg.norm(g)) if grad_norm0 is None else float(grad_norm0)
    message = "max_iter reached"
    while True:
        gnorm = float(np.linalg.norm(g))
        if gnorm <= tol * g0 or g0 == 0.0:
            message = "gradient norm below tol"
            break
        if len(taken) >= max_iter:
            break
        d = -newton_direction(H, g, C)
        slope = float(g @ d)
        trial = yield u, d, steps[:first], 1.0
        f_trial, ok = armijo_test(trial, u, d, f, slope, steps[:first], C, delta)
        passes += 1
        if not len(ok) and first < len(steps):  # the shorter steps, in a second batch
            rest = yield u, d, steps[first:], 1.0
            f_rest, ok = armijo_test(rest, u, d, f, slope, steps[first:], C, delta)
            f_trial, ok = np.concatenate([f_trial, f_rest]), ok + first
            passes += 1
        if not len(ok):
            # −slope = gᵀH⁻¹g ≈ 2 (F(u) − min F): below ~1e4 ε |F| the decrease is lost in
            # the rounding of F itself, so u is optimal to the precision F can be evaluated
            at_roundoff = -slope <= _ROUNDOFF * abs(f)
            message = (f"line search found no decrease down to step 2^-{max_halvings}"
                       + (": F is optimal to round-off" if at_roundoff else ""))
            break
        j = int(ok[0])
        lam = float(steps[j])
        if j:
            trial = yield u, d, steps[j:j + 1], lam
            passes += 1
            backtracked += 1
        u = u + lam * d
        f = float(f_trial[j])
        g_prev = gnorm
        g, H = _gradient_hessian(u, trial, C)
        taken.append(lam)
        g_new = float(np.linalg.norm(g))
        if refine is not None and refined_at is None and (
                g_new > 0.5 * g_prev or g_new <= np.sqrt(tol) * g0):
            refine()
            refined_at = len(taken)
        if callback is not None:
            callback({"iteration": len(taken), "step": lam, "objective": f,
                      "grad_norm": float(np.linalg.norm(g))})
    gnorm = float(np.linalg.norm(g))
    converged = gnorm <= tol * g0 or g0 == 0.0 or message.endswith("round-off")
    return NewtonResult(u, f, gnorm, g0, len(taken), passes, backtracked, taken, converged,
                        message, refined_at)


def check_newton_options(C: Any, tol: Any, delta: Any, max_iter: Any) -> None:
    """Refuse a penalty, tolerance, Armijo constant or iteration bound out of range."""
    for name, v in (("C", C), ("tol", tol)):
        if not (isinstance(v, int | float | np.number) and np.isfinite(v) and v > 0):
            raise ValueError(f"{name} must be a positive number; got {v!r}")
    if not 0 < delta < 0.5:
        raise ValueError(f"delta must be in (0, 1/2); got {delta!r}")
    if isinstance(max_iter, bool) or not isinstance(max_iter, int | np.integer) or max_iter < 0:
        raise ValueError(f"max_iter must be a non-negative int; got {max_iter!r}")


def armijo_test(trial: RowSums, u: np.ndarray, d: np.ndarray, f: float, slope: float,
                 steps: np.ndarray, C: float, delta: float) -> tuple[np.ndarray, np.ndarray]:
    """``F(u + λ d)`` at every trial step of one batch's sums, and the steps that pass.

    A step passes Armijo's test ``F(u) − F(u + λ d) ≥ −δ λ gᵀd``; the first that
    passes is the longest.
    """
    # ‖u + λd‖² = ‖u‖² + 2λ uᵀd + λ² ‖d‖², for every step at once
    uu, ud, dd = float(u @ u), float(u @ d), float(d @ d)
    f_trial = C * trial.loss + 0.5 * (uu + steps * (2.0 * ud + steps * dd))
    return f_trial, np.flatnonzero(f - f_trial >= -delta * steps * slope)


def newton_direction(H: np.ndarray, g: np.ndarray, C: float) -> np.ndarray:
    """``H⁻¹ g`` for ``H = I + C Σ ℓ'' a aᵀ`` (symmetric, every eigenvalue ≥ 1).

    By Cholesky; when round-off has made ``H`` numerically indefinite (a huge
    ``C`` times sums of O(1) products swamps the identity), by its eigenvectors
    with the eigenvalues raised to 1, their exact lower bound, and an
    :class:`~bigkern.errors.IllConditionedWarning` naming ``C``.
    """
    try:
        return cholesky_solve(H, g)
    except np.linalg.LinAlgError:
        lam, V = scipy.linalg.eigh(H)
        warnings.warn(
            f"the Newton Hessian I + C·Σℓ''aaᵀ is numerically indefinite at C={C:g} "
            f"(eigenvalues {lam[0]:.3g} … {lam[-1]:.3g}; exactly they are >= 1): the step "
            f"uses its eigenvalues raised to 1; a smaller C is better conditioned",
            IllConditionedWarning, stacklevel=3)
        return V @ ((V.T @ g) / np.maximum(lam, 1.0))


def cholesky_solve(H: np.ndarray, g: np.ndarray) -> np.ndarray:
    """``H⁻¹ g`` for a symmetric positive definite ``H`` by Cholesky, on one BLAS thread.

    A Newton system of (m̃+1)² is too small to share among threads, and OpenBLAS's
    threaded ``potrf`` of one at times takes many times as long as on one thread,
    right after a large threaded ``syrk``. Raises
    :class:`numpy.linalg.LinAlgError` when ``H`` is not numerically positive definite.

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern.solvers.newton.smooth_svm import cholesky_solve
    >>> cholesky_solve(np.array([[4.0, 2.0], [2.0, 3.0]]), np.array([2.0, 1.0])).tolist()
    [0.5, 0.0]
    """
    if len(H) <= _UNBLOCKED_POTRF:  # one thread anyway: skip setting and undoing the limit
        return scipy.linalg.cho_solve(scipy.linalg.cho_factor(H, lower=False), g)
    with blas_controller().limit(limits=1, user_api="blas"):
        return scipy.linalg.cho_solve(scipy.linalg.cho_factor(H, lower=False), g)


#: OpenBLAS factors a matrix of at most this order by its unblocked, single-threaded
#: ``potf2`` (``DTB_ENTRIES / 2``, with ``DTB_ENTRIES`` 64 on x86-64), whatever its threads
_UNBLOCKED_POTRF = 32


def _gradient_hessian(u: np.ndarray, sums: RowSums, C: float) -> tuple[np.ndarray, np.ndarray]:
    """``∇F = u + C Σ ℓ' a`` and ``∇²F = I + C Σ ℓ'' a aᵀ`` from the sums."""
    H = C * sums.hessian_sum()
    H.flat[::H.shape[0] + 1] += 1.0  # the identity
    return u + C * sums.grad, H


def objective(u: np.ndarray, loss_sum: float, C: float) -> float:
    """``F(u) = C Σ ℓ + ½ ‖u‖²`` from the loss sum."""
    return float(C * loss_sum + 0.5 * float(u @ u))
