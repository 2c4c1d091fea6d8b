"""Newton–CG's iterations: a generator of the passes it needs over the rows.

See :mod:`bigkern.solvers.newton_cg` for the method.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bigkern.solvers.newton.smooth_svm import (
    NewtonResult,
    armijo_steps,
    armijo_test,
    check_newton_options,
)
from bigkern.solvers.newton_cg.preconditioning import SampledPreconditioner, preconditioned_cg

__all__ = [
    "FORCING",
    "CurvaturePass",
    "ExactLinePass",
    "LinePass",
    "LineSums",
    "NewtonCGResult",
    "newton_cg_iterates",
]


@dataclass(frozen=True)
class LinePass:
    """A pass for the line search: ``Σ ℓ(a·(u + λd))`` at every ``λ`` of ``steps``, and the
    gradient sum ``Σ ℓ'(a·(u + at·d)) a`` (``dim``)."""

    u: np.ndarray
    d: np.ndarray
    steps: np.ndarray
    at: float


@dataclass(frozen=True)
class ExactLinePass:
    """A pass for the exact line search of the squared hinge: the minimizer ``λ`` of
    ``F(u + λd)`` (weight ``C`` of the data term), the loss sum and the gradient sum there
    (:func:`~bigkern.solvers.newton.finite_newton.exact_line_search`)."""

    u: np.ndarray
    d: np.ndarray
    C: float


@dataclass(frozen=True)
class LineSums:
    """The answer to a :class:`LinePass`: ``loss`` (one sum per step) and ``grad``; to an
    :class:`ExactLinePass`, also the ``step`` found (``loss`` then holds its one sum)."""

    loss: np.ndarray
    grad: np.ndarray
    step: float | None = None


@dataclass(frozen=True)
class CurvaturePass:
    """A curvature product: ``Σ ℓ''(a·u) a (a·p)`` (``dim``) over all rows."""

    u: np.ndarray
    p: np.ndarray


@dataclass
class NewtonCGResult(NewtonResult):
    """What :func:`newton_cg_iterates` found.

    The fields of :class:`~bigkern.solvers.newton.smooth_svm.NewtonResult` (``iterations``
    counts Newton steps, ``passes`` all passes: line searches and CG products;
    ``refined_at`` is always None), and:

    Attributes
    ----------
    cg_iterations : list of int
        CG iterations (curvature passes) of every Newton step.
    cg_residuals : list of float
        The relative residual ``‖H d + g‖ / ‖g‖`` each step's CG ended at.
    forcing : list of float
        The residual each step's CG was asked for.
    """

    cg_iterations: list[int] = field(default_factory=list)
    cg_residuals: list[float] = field(default_factory=list)
    forcing: list[float] = field(default_factory=list)


#: The default forcing term: CG stops each Newton step at a tenth of the gradient's norm.
#: On the benchmark's data (squared hinge, 2·10⁴–10⁵ rows, 500–2,000 centres) it took
#: half the CG iterations of the superlinear rule ``√(‖g_k‖/‖g_0‖)`` for as many Newton
#: steps: the active set, not the inner accuracy, sets the number of steps, and the
#: superlinear rule's tight late solves cost the most.
FORCING = 0.1

#: Request of :func:`newton_cg_iterates`.
Request = LinePass | ExactLinePass | CurvaturePass


def newton_cg_iterates(
    dim: int,
    *,
    C: float,
    preconditioner: SampledPreconditioner | None = None,
    tol: float = 1e-8,
    max_iter: int = 50,
    cg_max_iter: int = 200,
    forcing: float | str = FORCING,
    delta: float = 1e-4,
    max_halvings: int = 20,
    first_trials: int | None = None,
    u0: np.ndarray | None = None,
    exact_line_search: bool = False,
) -> Generator[Request, Any, NewtonCGResult]:
    """Minimize ``F(u) = C Σ ℓ + ½ ‖u‖²`` by Newton–CG, as a generator of passes.

    It yields :class:`LinePass` (answer: :class:`LineSums`) and :class:`CurvaturePass`
    (answer: the ``dim`` product ``Σ ℓ'' a (a·p)``) and returns a
    :class:`NewtonCGResult`.

    Parameters
    ----------
    dim : int
        ``m̃ + 1``.
    C : float
        Weight of the data term (> 0).
    preconditioner : SampledPreconditioner, optional
        None: plain CG.
    tol : float
        Stop when ``‖∇F(u)‖ ≤ tol · ‖∇F(0)‖``.
    max_iter : int
        Most Newton steps.
    cg_max_iter : int
        Most CG iterations per Newton step; a step takes the direction reached.
    forcing : float or "superlinear"
        CG's relative residual at every step: this fixed η in (0, 1) (default
        :data:`FORCING`), or ``"superlinear"``, ``min(½, √(‖g_k‖/‖g_0‖))`` at step k.
    delta, max_halvings, first_trials : see :func:`~bigkern.solvers.newton.smooth_svm.newton_armijo`
    u0 : ndarray, optional
        Starting point (default 0); ``‖∇F(0)‖`` of the stopping rule is then asked for
        by one more pass.
    exact_line_search : bool
        For the squared hinge: take the exact minimizer along each direction (one
        :class:`ExactLinePass`, whose answer needs every row's margin: rows held in
        memory) rather than Armijo's first acceptable step. The finite Newton method's
        step; it saves Newton steps, hence the tight late CG solves.
    """
    check_newton_options(C, tol, delta, max_iter)
    if isinstance(cg_max_iter, bool) or not isinstance(cg_max_iter, int | np.integer) \
            or cg_max_iter < 1:
        raise ValueError(f"cg_max_iter must be a positive int; got {cg_max_iter!r}")
    if forcing != "superlinear" and not (isinstance(forcing, int | float)
                                         and 0.0 < float(forcing) < 1.0):
        raise ValueError(f"forcing must be 'superlinear' or a number in (0, 1); "
                         f"got {forcing!r}")
    C = float(C)
    steps = armijo_steps(max_halvings)
    first = len(steps) if first_trials is None else max(1, min(int(first_trials), len(steps)))
    zero = np.zeros(dim)
    passes = 0
    if u0 is not None:
        g0 = float(np.linalg.norm(C * (yield LinePass(zero, zero, np.zeros(1), 0.0)).grad))
        passes += 1
        u = np.array(u0, dtype=np.float64)
    else:
        u = zero.copy()
    sums = yield LinePass(u, zero, np.zeros(1), 0.0)
    passes += 1
    f = C * float(sums.loss[0]) + 0.5 * float(u @ u)
    g = u + C * sums.grad
    if u0 is None:
        g0 = float(np.linalg.norm(g))
    taken: list[float] = []
    cg_its: list[int] = []
    cg_res: list[float] = []
    etas: list[float] = []
    backtracked = 0
    message = "max_iter reached"
    while True:
        gnorm = float(np.linalg.norm(g))
        if gnorm <= tol * g0 or g0 == 0.0:
            message = "gradient norm below tol"
            break
        if len(taken) >= max_iter:
            break
        eta = (min(0.5, math.sqrt(gnorm / g0)) if forcing == "superlinear"
               else float(forcing))
        precondition = (preconditioner.at(u) if preconditioner is not None
                        else (lambda r: np.array(r)))
        at = u
        solve = preconditioned_cg(g, precondition, rtol=eta, max_iter=int(cg_max_iter))
        try:
            p = next(solve)
            while True:
                curv = yield CurvaturePass(at, p)
                passes += 1
                p = solve.send(p + C * curv)
        except StopIteration as done:
            d, its, rel = done.value
        cg_its.append(its)
        cg_res.append(rel)
        etas.append(eta)
        slope = float(g @ d)
        if not slope < 0.0:
            message = "CG gave no descent direction: F is optimal to round-off"
            break
        if exact_line_search:
            found = yield ExactLinePass(u, d, C)
            passes += 1
            if not found.step:
                message = "no decrease along the Newton direction: F is optimal to round-off"
                break
            u = u + found.step * d
            f = C * float(found.loss[0]) + 0.5 * float(u @ u)
            g = u + C * found.grad
            taken.append(float(found.step))
            continue
        trial = yield LinePass(u, d, steps[:first], 1.0)
        passes += 1
        f_trial, ok = armijo_test(trial, u, d, f, slope, steps[:first], C,
                                   delta)
        if not len(ok) and first < len(steps):
            rest = yield LinePass(u, d, steps[first:], 1.0)
            passes += 1
            f_rest, ok = armijo_test(rest, u, d, f, slope, steps[first:], C,
                                      delta)
            f_trial, ok = np.concatenate([f_trial, f_rest]), ok + first
        if not len(ok):
            at_roundoff = -slope <= 1e4 * np.finfo(np.float64).eps * abs(f)
            message = (f"line search found no decrease down to step 2^-{max_halvings}"
                       + (": F is optimal to round-off" if at_roundoff else ""))
            break
        j = int(ok[0])
        lam = float(steps[j])
        if j:
            trial = yield LinePass(u, d, steps[j:j + 1], lam)
            passes += 1
            backtracked += 1
        u = u + lam * d
        f = float(f_trial[j])
        g = u + C * trial.grad
        taken.append(lam)
    gnorm = float(np.linalg.norm(g))
    converged = gnorm <= tol * g0 or g0 == 0.0 or message.endswith("round-off")
    return NewtonCGResult(u, f, gnorm, g0, len(taken), passes, backtracked, taken,
                          converged, message, cg_iterations=cg_its, cg_residuals=cg_res,
                          forcing=etas)

