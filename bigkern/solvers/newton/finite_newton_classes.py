"""The finite Newton method on k one-vs-rest problems over the same rows, in lockstep.

A k-class squared-hinge reduced SVM solves, for each class ``j``, the problem of
:mod:`bigkern.solvers.newton.finite_newton` with labels +1 on class ``j`` and −1 elsewhere, on
the same kernel rows ``A`` held in memory. Each problem runs
:func:`~bigkern.solvers.newton.finite_newton.finite_newton_iterates`; here the products over the
rows that the running problems ask for next are made as one matrix product for all of
them, and the problems' own work between products runs side by side.
"""

from __future__ import annotations

import os
from collections.abc import Generator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from bigkern.cluster.compute import blas_controller
from bigkern.solvers.newton.finite_newton import (
    Product,
    _hessian,
    finite_newton_iterates,
)
from bigkern.solvers.newton.lockstep_newton import LockstepResult
from bigkern.solvers.newton.smooth_svm import NewtonResult, check_newton_options

__all__ = ["finite_newton_classes"]


def finite_newton_classes(
    A: np.ndarray,
    codes: np.ndarray,
    classes: Sequence[int],
    *,
    C: float,
    U0: np.ndarray | None = None,
    tol: float = 1e-8,
    max_iter: int = 50,
    refactor_every: int = 10,
    hessian_dtype: Any = np.float64,
    threads: int | None = None,
) -> LockstepResult:
    """The one-vs-rest problems of ``classes`` by the finite Newton method, in lockstep.

    Problem ``q`` is :func:`~bigkern.solvers.newton.finite_newton.finite_newton` with labels +1
    where ``codes`` is ``classes[q]`` and −1 elsewhere, on the same rows ``A``. The problems advance
    together: the products each asks for next are answered by one matrix product over
    the rows for all of them (``A V``, ``Wᵀ A``), and a problem stops when it has
    converged. Problems starting from ``u = 0``, where every row is in the margin, share
    their first Hessian; after that each Hessian sums, and is updated by, the problem's
    own active rows (in one-vs-rest, mostly its class and the rows of the others near
    it). Each problem's iterates are its binary fit's up to the round-off of the batched
    products.

    Parameters
    ----------
    A : ndarray, shape (n, dim)
        The augmented kernel rows of the usable rows, float64.
    codes : ndarray, shape (n,)
        Class code of each row.
    classes : sequence of int
        The positive class of each problem.
    C, tol, max_iter, refactor_every, hessian_dtype
        As for :func:`~bigkern.solvers.newton.finite_newton.finite_newton`.
    U0 : ndarray, shape (dim, len(classes)), optional
        Starting points (columns), e.g. from a fit on a subset of the rows.
    threads : int, optional
        Problems advanced side by side between the products (default: the CPUs). After
        the shared first Hessian, everything runs on one BLAS thread per problem: the
        products over the rows are bound by reading ``A``, and a problem's Newton system
        and Hessian updates are too small to share among threads.

    Returns
    -------
    LockstepResult
        ``passes`` counts the matrix products over all rows (each one read of ``A``).

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern.solvers.newton.finite_newton import finite_newton
    >>> from bigkern.solvers.newton.finite_newton_classes import finite_newton_classes
    >>> x = np.linspace(-3, 3, 30)
    >>> A = np.column_stack([np.exp(-(x[:, None] - [-2.0, 0.0, 2.0]) ** 2), -np.ones(30)])
    >>> codes = np.digitize(x, [-1.0, 1.0])
    >>> out = finite_newton_classes(A, codes, [0, 1, 2], C=10.0)
    >>> alone = finite_newton(A, np.where(codes == 1, 1.0, -1.0), C=10.0)
    >>> bool(np.allclose(out.results[1].u, alone.u, rtol=1e-12, atol=1e-12))
    True
    """
    A = np.asarray(A, dtype=np.float64)
    codes = np.asarray(codes)
    classes = list(classes)
    threads = (os.cpu_count() or 1) if threads is None else int(threads)
    start = None
    if U0 is None:  # every row active at u = 0: one Hessian for all the problems
        check_newton_options(C, tol, 1e-4, max_iter)
        start = _hessian(A, np.ones(len(A), dtype=bool), float(C), hessian_dtype)
    iterates = [finite_newton_iterates(A, np.where(codes == c, 1.0, -1.0), C=C,
                                       u0=None if U0 is None else U0[:, q], tol=tol,
                                       max_iter=max_iter, refactor_every=refactor_every,
                                       hessian_dtype=hessian_dtype, start_hessian=start)
               for q, c in enumerate(classes)]
    with blas_controller().limit(limits=1, user_api="blas"):
        return _lockstep(A, iterates, threads)


def _lockstep(A: np.ndarray, iterates: list[Generator[Product, np.ndarray, NewtonResult]],
              threads: int) -> LockstepResult:
    """Answer the problems' products together until every problem has finished."""
    with ThreadPoolExecutor(max(1, min(threads, len(iterates)))) as pool:
        return _answer(A, iterates, pool)


def _answer(A: np.ndarray, iterates: list[Generator[Product, np.ndarray, NewtonResult]],
            pool: ThreadPoolExecutor) -> LockstepResult:
    """The lockstep's loop, on one pool of threads for all its steps."""
    pending: dict[int, Product] = {q: next(it) for q, it in enumerate(iterates)}
    results: dict[int, NewtonResult] = {}
    passes = 0
    while pending:
        answers: dict[int, np.ndarray] = {}
        for kind in ("times", "weights"):
            asking = [q for q in sorted(pending) if pending[q][0] == kind]
            if not asking:
                continue
            V = np.stack([pending[q][1] for q in asking])
            P = A @ V.T if kind == "times" else V @ A
            passes += 1
            for i, q in enumerate(asking):
                answers[q] = P[:, i] if kind == "times" else P[i]
        # each problem's own work (its Newton system, line search, Hessian update) is
        # small: the problems run side by side, one BLAS thread each
        asked = list(answers)
        steps = list(pool.map(_advance, [iterates[q] for q in asked],
                              [answers[q] for q in asked]))
        for q, (ask, result) in zip(list(answers), steps, strict=True):
            if result is None:
                pending[q] = ask
            else:
                results[q] = result
                del pending[q]
    return LockstepResult([results[q] for q in range(len(iterates))], passes)


def _advance(iterates: Generator[Product, np.ndarray, NewtonResult], product: np.ndarray
             ) -> tuple[Product | None, NewtonResult | None]:
    """Send a problem its product: its next request, or its result when it has finished."""
    try:
        return iterates.send(product), None
    except StopIteration as done:
        return None, done.value
