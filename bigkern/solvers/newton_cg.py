"""Newton–CG for the reduced SVM and SVR: Newton steps solved by preconditioned CG.

The problem is :func:`~bigkern.solvers.smooth_svm.newton_armijo`'s: with the augmented
kernel rows ``a_i = [K(x_i, Ã), −1]`` and ``u = (v, γ)``::

    F(u) = C Σ_i ℓ(a_i·u, y_i) + ½ ‖u‖²,   ∇F = u + C Σ ℓ' a,   H = I + C Σ ℓ'' a aᵀ.

Newton–Armijo forms ``H`` (``n·m̃²`` flops a pass) and factors it (``m̃³``). Here the
Newton system ``H d = −∇F`` is solved *inexactly* by preconditioned conjugate gradients
(:func:`preconditioned_cg`) on products ``H p = p + C Σ ℓ'' a (a·p)``: one product over
the rows costs ``2·n_S·m̃`` (``n_S`` the rows with curvature: for the squared hinge,
those inside the margin), and on chunked data it is one read.

**Forcing.** Step ``k`` stops CG at the relative residual ``‖H d + g‖ ≤ η ‖g‖``
(an inexact Newton method, Dembo, Eisenstat & Steihaug 1982): a fixed ``η``
(:data:`FORCING`, 0.1: linear convergence at rate about η once the active set has
settled), or ``η_k = min(½, √(‖g_k‖ / ‖g_0‖))`` (superlinear, Eisenstat & Walker 1994).

**Preconditioner** (:class:`SampledPreconditioner`, after Falkon's, Rudi, Carratino &
Rosasco 2017). The sum over all ``n`` rows is estimated from a uniform sample of ``s``
rows whose augmented kernel rows ``b_j`` are at hand::

    P = I + C (n / s) Σ_j ℓ''(b_j·u, y_j) b_j b_jᵀ  ≈  H.

Falkon's sample is the centres themselves; here it is the centres and the draw's
scale sample (chunked data), or up to ``4 (m̃ + 1)`` of the held rows (in memory). For
the squared hinge only the sampled rows inside the margin enter, a uniform sample of
the rows that make ``H``; the centres alone leave too few of them to span ``H``'s
large directions (on the benchmark's data, 60–160 CG iterations a step against
10–40 from ``m̃`` sampled rows inside the margin). At most ``most`` of them are kept
(reweighted), so a step's preconditioner costs at most ``most² (m̃ + 1)`` flops to
form and ``most³/3`` to factor (Woodbury: ``P⁻¹ r = r − Bᵀ (I + B Bᵀ)⁻¹ B r``), no
``n``-sized work; a step where at most :data:`REUSE_CHANGED` of the sampled rows'
curvature changed keeps the step before's. The intercept's column ``−1`` is part of
each ``b_j``, so the ridge ``I`` and the intercept need no special case.

**Line search.** The batched Armijo search of
:func:`~bigkern.solvers.smooth_svm.newton_armijo`: one pass gives ``F`` at the trial
steps ``1, ½, …`` and the gradient speculatively at the full step; a shorter step
costs one more pass.

A Newton step therefore costs ``1 + (CG iterations)`` passes (reads of chunked data),
and none of them forms an ``m̃ × m̃`` sum over the rows.
:func:`newton_cg_iterates` is the method as a generator of the passes it needs
(:class:`LinePass`, :class:`CurvaturePass`); :mod:`bigkern.solvers.newton_cg_rows`
answers them over kernel rows held in memory or over chunked data.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.linalg

from bigkern.solvers.smooth_svm import _armijo_test, _check_newton_options, armijo_steps

__all__ = [
    "CurvaturePass",
    "ExactLinePass",
    "LinePass",
    "LineSums",
    "NewtonCGResult",
    "SampledPreconditioner",
    "newton_cg_iterates",
    "preconditioned_cg",
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
    (:func:`~bigkern.solvers.finite_newton.exact_line_search`)."""

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
class NewtonCGResult:
    """What :func:`newton_cg_iterates` found.

    The fields of :class:`~bigkern.solvers.smooth_svm.NewtonResult` (``u``,
    ``objective``, ``grad_norm``, ``grad_norm0``, ``iterations`` (Newton steps),
    ``passes`` (all passes: line searches and CG products), ``backtracked``, ``steps``,
    ``converged``, ``message``, ``refined_at`` (always None)), and:

    Attributes
    ----------
    cg_iterations : list of int
        CG iterations (curvature passes) of every Newton step.
    cg_residuals : list of float
        The relative residual ``‖H d + g‖ / ‖g‖`` each step's CG ended at.
    forcing : list of float
        The residual each step's CG was asked for.
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
    cg_iterations: list[int] = field(default_factory=list)
    cg_residuals: list[float] = field(default_factory=list)
    forcing: list[float] = field(default_factory=list)
    refined_at: int | None = None


#: :meth:`SampledPreconditioner.at` keeps its P while at most this share of the sampled
#: rows' curvature weights has changed (for the squared hinge: rows entering or leaving
#: the margin). 0: only when none has. Keeping it past 2 % of changes (50,000 rows,
#: 3,000 centres) saved 9 of 17 factorizations but cost 40 % more CG iterations, more
#: than it saved.
REUSE_CHANGED = 0.0


class SampledPreconditioner:
    """Falkon's preconditioner for ``H = I + C Σ ℓ'' a aᵀ``, from a uniform sample of the rows.

    ``P = I + C (n / s) Σ_{j ∈ sample} ℓ''(b_j·u, y_j) b_j b_jᵀ`` estimates ``H``'s sum over
    the ``n`` rows from the augmented kernel rows ``b_j`` of ``s`` rows drawn uniformly
    (Falkon's rows are the centres; a sample of more rows estimates the sum over the
    rows with curvature — for the squared hinge those inside the margin, a fraction of
    the rows — from more of them). The intercept's column ``−1`` is part of each
    ``b_j``, so the ridge ``I`` and the intercept need no special case. Of the sampled
    rows with curvature at most ``most`` are kept (a seeded uniform choice, their
    weight scaled up to stand for the others), so that a step's cost is bounded.
    ``P⁻¹ r = r − Bᵀ (I + B Bᵀ)⁻¹ B r`` (Woodbury, ``B`` the ``k`` weighted rows):
    ``k² (m̃ + 1)`` flops to form and ``k³/3`` to factor per Newton step, ``4 k (m̃ + 1)``
    per application.

    Parameters
    ----------
    rows : ndarray, shape (s, dim)
        Augmented kernel rows ``[K(x_j, Ã), −1]`` of a uniform sample of the fit's rows
        (float32 or float64; the kept ones are used in float64).
    y : ndarray, shape (s,)
        Their targets (±1 labels for the hinge losses).
    n_rows : int
        Rows of the fit, whose sum the sample estimates.
    C : float
        Weight of the data term.
    loss : object
        The row loss (``derivatives``).
    most : int, optional
        Most sampled rows with curvature kept (default: all).
    seed : int
        Seed of the choice among them.

    Examples
    --------
    With every row in the sample, ``P`` is ``H`` itself:

    >>> import numpy as np
    >>> from bigkern.solvers.newton_cg import SampledPreconditioner
    >>> from bigkern.solvers.smooth_losses import SquaredHinge
    >>> rng = np.random.default_rng(0)
    >>> B, y = rng.normal(size=(6, 3)), np.sign(rng.normal(size=6))
    >>> P = SampledPreconditioner(B, y, 6, C=2.0, loss=SquaredHinge())
    >>> H = np.eye(3) + 2.0 * B.T @ B  # every row in the margin at u = 0
    >>> r = rng.normal(size=3)
    >>> bool(np.allclose(P.at(np.zeros(3))(H @ r), r))
    True
    """

    def __init__(self, rows: np.ndarray, y: np.ndarray, n_rows: int, *, C: float,
                 loss: Any, most: int | None = None, seed: int = 0) -> None:
        self.rows = rows
        self.y = np.asarray(y, dtype=np.float64)
        self.scale = float(C) * float(n_rows) / max(1, len(rows))
        self.loss = loss
        self.most = most
        self.seed = seed
        #: rows of the sample kept at the last ``at`` that formed P
        self.kept = 0
        #: calls of ``at`` that kept the P before
        self.reused = 0
        self._last: tuple[np.ndarray, Callable[[np.ndarray], np.ndarray]] | None = None

    def at(self, u: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        """``r ↦ P⁻¹ r`` for the curvature at ``u``."""
        f = self.rows @ u.astype(self.rows.dtype)
        _, w = self.loss.derivatives(f.astype(np.float64), self.y)
        if self._last is not None and len(w) and np.count_nonzero(
                w != self._last[0]) <= REUSE_CHANGED * len(w):
            self.reused += 1
            return self._last[1]  # hardly a sampled row's curvature changed: keep P
        keep = np.flatnonzero(w > 0.0)
        scale = self.scale
        if self.most is not None and len(keep) > self.most:
            scale *= len(keep) / self.most
            keep = np.sort(np.random.default_rng(self.seed).choice(keep, self.most,
                                                                   replace=False))
        self.kept = len(keep)
        if not len(keep):
            return lambda r: np.array(r, dtype=np.float64)
        B = np.sqrt(scale * w[keep])[:, None] * self.rows[keep].astype(np.float64)
        inner = B @ B.T
        inner.flat[::len(inner) + 1] += 1.0
        factor = scipy.linalg.cho_factor(inner, lower=False, check_finite=False)

        def apply(r: np.ndarray) -> np.ndarray:
            return r - B.T @ scipy.linalg.cho_solve(factor, B @ r, check_finite=False)

        self._last = (w, apply)
        return apply


def preconditioned_cg(
    g: np.ndarray, precondition: Callable[[np.ndarray], np.ndarray], *, rtol: float,
    max_iter: int,
) -> Generator[np.ndarray, np.ndarray, tuple[np.ndarray, int, float]]:
    """Solve ``H d = −g`` from ``d = 0`` by preconditioned CG, asking for each ``H p``.

    A generator: it yields each ``p`` and is sent ``H p``. It returns ``(d, iterations,
    relative residual)``, stopping when ``‖H d + g‖ ≤ rtol ‖g‖`` or after
    ``max_iter`` products. Every iterate from ``d = 0`` is a descent direction of
    ``F`` (``gᵀd < 0``) for a positive definite ``H``, so a Newton step may use
    whatever CG has reached.

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern.solvers.newton_cg import preconditioned_cg
    >>> from bigkern.solvers.smooth_svm import drive
    >>> H, g = np.array([[4.0, 1.0], [1.0, 3.0]]), np.array([1.0, 2.0])
    >>> d, its, res = drive(preconditioned_cg(g, lambda r: r, rtol=1e-12, max_iter=10),
    ...                     lambda p: H @ p)
    >>> bool(np.allclose(H @ d, -g)), its
    (True, 2)
    """
    gnorm = float(np.linalg.norm(g))
    d = np.zeros_like(g)
    if gnorm == 0.0:
        return d, 0, 0.0
    r = -np.asarray(g, dtype=np.float64)
    z = precondition(r)
    p = z.copy()
    rz = float(r @ z)
    its, rel = 0, 1.0
    while its < max_iter:
        q = yield p
        its += 1
        pq = float(p @ q)
        if not pq > 0.0:  # round-off: H is positive definite
            break
        alpha = rz / pq
        d += alpha * p
        r -= alpha * q
        rel = float(np.linalg.norm(r)) / gnorm
        if rel <= rtol:
            break
        z = precondition(r)
        rz_new = float(r @ z)
        p = z + (rz_new / rz) * p
        rz = rz_new
    return d, its, rel


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
    delta, max_halvings, first_trials : see :func:`~bigkern.solvers.smooth_svm.newton_armijo`
    u0 : ndarray, optional
        Starting point (default 0); ``‖∇F(0)‖`` of the stopping rule is then asked for
        by one more pass.
    exact_line_search : bool
        For the squared hinge: take the exact minimizer along each direction (one
        :class:`ExactLinePass`, whose answer needs every row's margin: rows held in
        memory) rather than Armijo's first acceptable step. The finite Newton method's
        step; it saves Newton steps, hence the tight late CG solves.
    """
    _check_newton_options(C, tol, delta, max_iter)
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
        f_trial, ok = _armijo_test(trial, u, d, f, slope, steps[:first], C,
                                   delta)
        if not len(ok) and first < len(steps):
            rest = yield LinePass(u, d, steps[first:], 1.0)
            passes += 1
            f_rest, ok = _armijo_test(rest, u, d, f, slope, steps[first:], C,
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
                          converged, message, cg_its, cg_res, etas)

