"""k one-vs-rest smooth reduced SVMs by Newton–Armijo in lockstep: one read serves them all.

A k-class reduced SVM solves, for each class ``j``, the binary problem of
:mod:`bigkern.solvers.newton.smooth_svm` with labels +1 on class ``j`` and −1 elsewhere, on the
same augmented kernel rows. Each problem runs the iteration of
:func:`~bigkern.solvers.newton.smooth_svm.newton_armijo` (written as a generator of the passes it
needs, :func:`~bigkern.solvers.newton.smooth_svm.newton_armijo_iterates`); here every pass
gathers the next pass of each problem still running, and one ``evaluate`` over the rows
answers them all (:func:`~bigkern.kernels.class_row_sums.accumulate_classes`: the kernel
block formed once, one product for all decision values, a Hessian per problem over its
curved rows). A problem stops when it has converged; the others go on, so a fit takes the
passes of its slowest problem, not the sum over problems. Each problem's iterates, steps
and stopping point are those of its own binary fit, up to the round-off of the batched
products (and, with ``negligible`` > 0, the rows left out of its Hessian, which steer
the steps but never change the solution).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bigkern.kernels.class_row_sums import ClassPoints
from bigkern.kernels.row_sums import RowSums
from bigkern.solvers.newton.smooth_svm import NewtonResult, newton_armijo_iterates

__all__ = ["NEGLIGIBLE_CURVATURE", "LockstepResult", "newton_armijo_lockstep"]

#: The curvature ``ℓ''`` at or below which a k-class smooth-hinge fit leaves a row out of
#: a problem's Hessian: ``ℓ'' ≈ 2 e^{−2α(y f − 1)}`` outside the margin, so with α = 5 a
#: row with ``y f`` beyond about 1.9, where a row in the margin has ``ℓ''`` of 0.3 to 1.
#: In one-vs-rest such rows are most of the other classes' rows once a fit has separated
#: them (on pendigits, 10 classes: four in five of the Hessian rows near the solution).
#: Left out, they change the Hessian by about 1e-4 of its margin rows' terms, which
#: steers the steps as well (the same iterations; the gradient, hence the solution, is
#: exact).
NEGLIGIBLE_CURVATURE = 1e-4

ClassEvaluate = Callable[[ClassPoints], Sequence[RowSums]]


@dataclass
class LockstepResult:
    """The k problems' results, and the passes their lockstep took.

    Attributes
    ----------
    results : list of NewtonResult
        One per class, in the order of ``classes``; each one's ``passes`` counts the
        passes it took part in.
    passes : int
        Evaluations (reads of the rows for a distributed ``evaluate``): the most any
        problem took.
    """

    results: list[NewtonResult]
    passes: int


def newton_armijo_lockstep(
    evaluate: ClassEvaluate,
    dim: int,
    classes: Sequence[int],
    *,
    C: float,
    tol: float = 1e-8,
    max_iter: int = 50,
    delta: float = 1e-4,
    max_halvings: int = 20,
    first_trials: int | None = None,
    float32_hessian: bool = False,
    negligible: float = 0.0,
    U0: np.ndarray | None = None,
    grad_norm0: Sequence[float] | None = None,
) -> LockstepResult:
    """Newton–Armijo on the one-vs-rest problems of ``classes``, one ``evaluate`` per pass.

    Parameters
    ----------
    evaluate : callable
        ``evaluate(points) -> [RowSums, ...]``: for each problem of the
        :class:`~bigkern.kernels.class_row_sums.ClassPoints` (its positive class, point,
        direction, steps), the sums over all rows, in one pass.
    dim : int
        ``m̃ + 1``.
    classes : sequence of int
        The class code of each problem's positive rows.
    C, tol, max_iter, delta, max_halvings, first_trials
        As for :func:`~bigkern.solvers.newton.smooth_svm.newton_armijo`, for every problem.
    float32_hessian : bool
        Start each problem's Hessian products in float32; a problem switches to float64
        when :func:`newton_armijo`'s ``refine`` rule says so for it.
    negligible : float
        Leave the rows with curvature at most this out of a problem's Hessian.
    U0 : ndarray, shape (dim, len(classes)), optional
        Starting points (columns), e.g. from a fit on a subset of the rows.
    grad_norm0 : sequence of float, optional
        With ``U0``: each problem's ``‖∇F(0)‖``, of its stopping rule. Without, the first
        pass (at ``U0``) also sums each problem's gradient at 0 (no Hessian), in the
        same read.

    Returns
    -------
    LockstepResult

    Examples
    --------
    Three classes on a line, one pass serving the three problems:

    >>> import numpy as np
    >>> from bigkern.kernels.class_row_sums import accumulate_classes, split_sums, buffer_size
    >>> from bigkern.solvers.newton.lockstep_newton import newton_armijo_lockstep
    >>> from bigkern.solvers.newton.smooth_svm import SmoothHinge
    >>> x = np.linspace(-3, 3, 30)
    >>> codes = np.digitize(x, [-1.0, 1.0]).astype(float)
    >>> A = np.column_stack([np.exp(-(x[:, None] - [-2.0, 0.0, 2.0]) ** 2), -np.ones(30)])
    >>> def evaluate(points):
    ...     sums = split_sums(np.zeros(buffer_size(4, points.sizes())), 4, points.sizes())
    ...     accumulate_classes(sums, A, codes, points, SmoothHinge())
    ...     return sums
    >>> out = newton_armijo_lockstep(evaluate, 4, [0, 1, 2], C=10.0)
    >>> [r.converged for r in out.results], out.passes == max(r.passes for r in out.results)
    ([True, True, True], True)
    >>> scores = A @ np.column_stack([r.u for r in out.results])
    >>> bool(np.mean(scores.argmax(axis=1) == codes) > 0.9)
    True
    """
    classes = np.asarray(classes, dtype=np.int64)
    float32 = np.full(len(classes), bool(float32_hessian))

    def refine(q: int) -> Callable[[], None]:
        def exact() -> None:
            float32[q] = False
        return exact

    first: list[RowSums] | None = None
    if U0 is not None and grad_norm0 is None:
        first, grad_norm0 = _first_pass(evaluate, classes, U0, float(C), float32, negligible)
    iterates = [newton_armijo_iterates(dim, C=C, tol=tol, max_iter=max_iter, delta=delta,
                                       max_halvings=max_halvings, first_trials=first_trials,
                                       refine=refine(q) if float32_hessian else None,
                                       u0=None if U0 is None else U0[:, q],
                                       grad_norm0=None if grad_norm0 is None
                                       else grad_norm0[q])
                for q in range(len(classes))]
    pending: dict[int, Any] = {q: next(it) for q, it in enumerate(iterates)}
    results: dict[int, NewtonResult] = {}
    passes = 0
    if first is not None:  # the generators' first pass, at U0, is made
        for q in list(pending):
            try:
                pending[q] = iterates[q].send(first[q])
            except StopIteration as done:
                results[q] = done.value
                del pending[q]
        passes = 1
    while pending:
        running = sorted(pending)
        asked = [pending[q] for q in running]
        # a second batch of shorter trial steps follows a failed full step: the Hessian
        # at the full step is never used (a step taken from the batch gets a pass of its own)
        needed = np.array([not (a[3] == 1.0 and a[2][0] < 1.0) for a in asked])
        points = ClassPoints(classes[running],
                             np.column_stack([a[0] for a in asked]),
                             np.column_stack([a[1] for a in asked]),
                             tuple(np.asarray(a[2], dtype=np.float64) for a in asked),
                             np.asarray([a[3] for a in asked], dtype=np.float64),
                             float32[running].copy(), float(negligible),
                             None if needed.all() else needed)
        sums = evaluate(points)
        passes += 1
        for q, s in zip(running, sums, strict=True):
            try:
                pending[q] = iterates[q].send(s)
            except StopIteration as done:
                results[q] = done.value
                del pending[q]
    return LockstepResult([results[q] for q in range(len(classes))], passes)


def _first_pass(evaluate: ClassEvaluate, classes: np.ndarray, U0: np.ndarray, C: float,
                float32: np.ndarray, negligible: float) -> tuple[list[RowSums], np.ndarray]:
    """The pass at ``U0`` of every problem, with each problem's gradient at 0 in the same
    read (k more gradient-only problems); returns the sums at ``U0`` and ``‖∇F(0)‖``."""
    k, dim = len(classes), U0.shape[0]
    both = np.concatenate([classes, classes])
    points = ClassPoints(both, np.hstack([U0, np.zeros((dim, k))]), np.zeros((dim, 2 * k)),
                         tuple(np.zeros(1) for _ in range(2 * k)), np.zeros(2 * k),
                         np.concatenate([float32, float32]), float(negligible),
                         np.arange(2 * k) < k)
    sums = list(evaluate(points))
    # ∇F(0) = 0 + C Σ ℓ'(0, y_i) a_i
    return sums[:k], np.asarray([C * float(np.linalg.norm(s.grad)) for s in sums[k:]])
