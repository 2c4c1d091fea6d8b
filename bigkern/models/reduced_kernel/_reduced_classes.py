"""The k-class (one-vs-rest) fits of :class:`~bigkern.models.reduced_kernel.reduced.ReducedSVC`.

The k problems share the reduced set Ã (drawn stratified over the k classes), hence
their kernel rows: each read of the rows, in memory or distributed, serves all the
problems still running (:mod:`bigkern.solvers.newton.lockstep_newton`,
:func:`~bigkern.solvers.newton.finite_newton_classes.finite_newton_classes`). Their
solutions are the columns of one expansion's coefficients. This module turns labels into
class codes for the passes, runs the fits and sums their results up for the
``fit_report_``.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from bigkern import config
from bigkern.cluster.compute import blas_controller
from bigkern.errors import LabelError
from bigkern.kernels import Basis
from bigkern.models.reduced_kernel._newton_cg_fit import held_newton_cg
from bigkern.models.reduced_kernel._reduced_parts import (
    IN_MEMORY_FIRST_TRIALS,
    WARM_START_FLOPS,
)
from bigkern.reduce.reduced.newton_cg_passes import held_kernel_rows
from bigkern.reduce.reduced.row_draws import MAX_STRATA
from bigkern.reduce.reduced.svm import ReducedNewtonPasses, augmented_kernel_rows
from bigkern.solvers.newton.finite_newton_classes import finite_newton_classes
from bigkern.solvers.newton.in_memory_newton import InMemoryClassPasses
from bigkern.solvers.newton.lockstep_newton import (
    NEGLIGIBLE_CURVATURE,
    LockstepResult,
    newton_armijo_lockstep,
)
from bigkern.solvers.newton.smooth_losses import SquaredHinge

#: The relative gradient norm to which the smooth hinge's k-class warm start (the fit on
#: the draw's scale sample) is solved. The start only has to lie where the full fit's
#: Newton steps are undamped; its last digits cost the k problems one Cholesky factor each
#: per iteration, and the full fit's first step moves further than they anyway (on
#: pendigits, 10 classes: 11 iterations instead of 17 at 1e-6, the same full passes).
WARM_START_TOL = 1e-4

__all__ = ["ClassesResult", "check_classes_present", "class_codes", "classes_fit",
           "classes_from_draw", "newton_cg_classes_fit"]


def class_codes(block: np.ndarray, classes: np.ndarray) -> np.ndarray:
    """Each label's code (its place in ``classes``) as float64; NaN for a label not in it.

    Such labels can only be in rows the fit leaves out (masked, or without a finite
    feature: ``classes`` holds every label of the usable rows), where a NaN is never read.

    >>> class_codes(np.array(["b", "x", "a"]), np.array(["a", "b"])).tolist()
    [1.0, nan, 0.0]
    """
    block = np.asarray(block)
    at = np.clip(np.searchsorted(classes, block), 0, len(classes) - 1)
    return np.where(classes[at] == block, at.astype(np.float64), np.nan)


def classes_from_draw(est: Any, rs: Any) -> None:
    """``est.classes_`` from the labels the draw of the centers saw (lazy ``y``): two or more.

    Raises
    ------
    LabelError
        One class among the usable rows, or more distinct values than the draw counts
        (:data:`~bigkern.reduce.reduced.row_draws.MAX_STRATA`).
    """
    if rs.classes is None:
        raise LabelError(f"y has over {MAX_STRATA} distinct values among the usable rows: "
                         f"{type(est).__name__} takes class labels (mask out the others, "
                         f"e.g. unlabelled pixels)")
    if len(rs.classes) < 2:
        raise LabelError(f"y has one class only ({rs.classes.tolist()}): "
                         f"{type(est).__name__} needs samples of two classes at least")
    est.classes_ = np.asarray(rs.classes)


def check_classes_present(est: Any, present: np.ndarray, k: int) -> None:
    """Raise :class:`LabelError` naming the classes of ``est.classes_`` (codes ``0 … k−1``)
    that no usable row holds (``present``: the codes the draw saw)."""
    missing = sorted(set(range(k)) - {int(c) for c in present})
    if missing:
        names = [est.classes_[j].item() if hasattr(est.classes_[j], "item")
                 else est.classes_[j] for j in missing]
        raise LabelError(
            f"class(es) {names} of y have no usable row (each of their rows is masked out or "
            f"has a non-finite feature): {type(est).__name__} cannot fit a one-vs-rest "
            f"problem for them; drop them from y or fix their rows")


@dataclass
class ClassesResult:
    """The k problems' solutions as one expansion's parts, and a summary for the report.

    ``u`` is (m̃ + 1, k): column j is problem j's ``(v, γ)``. The other attributes mirror
    :class:`~bigkern.solvers.newton.smooth_svm.NewtonResult` for ``fit_report_``: ``iterations``
    the most of any problem, ``passes`` the reads of the rows their lockstep took,
    ``converged`` whether all converged, ``grad_norm``/``grad_norm0`` those of the
    problem least converged; ``by_class`` has each problem's own.
    """

    u: np.ndarray
    objective: float
    grad_norm: float
    grad_norm0: float
    iterations: int
    passes: int
    backtracked: int
    steps: list[list[float]]
    converged: bool
    message: str
    refined_at: int | None
    by_class: dict[str, list[Any]]

    @classmethod
    def of(cls, out: LockstepResult) -> ClassesResult:
        """Sum up the lockstep's per-problem results."""
        res = out.results
        worst = max(res, key=lambda r: r.grad_norm / max(r.grad_norm0, 1e-300))
        refined = [r.refined_at for r in res if r.refined_at is not None]
        return cls(np.column_stack([r.u for r in res]), float(sum(r.objective for r in res)),
                   worst.grad_norm, worst.grad_norm0, max(r.iterations for r in res),
                   out.passes, sum(r.backtracked for r in res), [list(r.steps) for r in res],
                   all(r.converged for r in res), worst.message,
                   max(refined) if refined else None,
                   {"iterations": [r.iterations for r in res],
                    "passes": [r.passes for r in res],
                    "converged": [r.converged for r in res],
                    "grad_norm": [r.grad_norm for r in res]})


def classes_fit(est: Any, loss: Any, basis: Basis, k: int,
                chunked: Callable[[], tuple[Any, Any, Any]],
                in_memory: tuple[np.ndarray, np.ndarray, Any] | None, fits: bool, rs: Any,
                sample: tuple[np.ndarray, np.ndarray] | None
                ) -> tuple[ClassesResult, dict[str, int], dict[str, Any]]:
    """Fit the k one-vs-rest problems on the kernel rows of ``basis``.

    ``in_memory`` is ``(X, codes, mask)`` for numpy input, used when ``fits`` (its kernel
    rows fit in memory); otherwise each pass is one read of the dask arrays ``(X, class
    codes, mask)`` that ``chunked()`` makes. The squared hinge in memory is
    :func:`~bigkern.solvers.newton.finite_newton_classes.finite_newton_classes` (from a fit
    on a tenth of the rows when one Hessian over all rows costs at least
    ``WARM_START_FLOPS``, as for two classes); the smooth hinge in memory and every
    distributed fit are :func:`~bigkern.solvers.newton.lockstep_newton.newton_armijo_lockstep`,
    from a fit on ``sample`` (the draw's scale sample ``(X, codes)``, uniform over the
    usable rows) when the k problems' Hessians over all rows cost at least
    :data:`~bigkern.models.reduced_kernel._reduced_parts.WARM_START_FLOPS` per pass: they
    then start near their solutions, where most rows lie far outside each problem's
    margin, and take fewer passes. ``rs`` is the draw. Returns the result, the row counts
    and what the fit report adds.
    """
    dim, classes = basis.n_basis + 1, list(range(k))
    C, tol, max_iter = float(est.C), float(est.tol), int(est.max_iter)
    squared = isinstance(loss, SquaredHinge)
    negligible = 0.0 if squared else NEGLIGIBLE_CURVATURE
    float32 = est.hessian == "float32"
    n_usable = int(rs.counts["valid"])
    if in_memory is not None and fits:
        X, codes, mask = in_memory
        A, codes_usable, _, counts = augmented_kernel_rows(X, codes.astype(np.float64), basis,
                                                           mask)
    if in_memory is not None and fits and squared:
        n = len(A)
        size = max(2 * dim, n // 10)
        U0, warm = None, 0
        # as for two classes: the cold start's first Hessian, over all rows, is one for
        # all the classes (every row is in every margin at u = 0)
        if size < n and n * dim * dim >= WARM_START_FLOPS:
            # a fit on a tenth of the rows first (C scaled up to weigh as all of them)
            rows = np.sort(np.random.default_rng(rs.seed).choice(n, size, replace=False))
            start = finite_newton_classes(A[rows], codes_usable[rows], classes,
                                          C=C * n / size, tol=1e-6,
                                          hessian_dtype=np.dtype(est.hessian))
            U0 = np.column_stack([r.u for r in start.results])
            warm = max(r.iterations for r in start.results)
        out = finite_newton_classes(A, codes_usable, classes, C=C, U0=U0, tol=tol,
                                    max_iter=max_iter, hessian_dtype=np.dtype(est.hessian))
        extra = {"solver": f"finite newton, in memory, {k} classes in lockstep",
                 "warm_start_rows": size if U0 is not None else 0,
                 "warm_start_iterations": warm, "reads": 2}
    else:
        options = {"max_iter": max_iter, "float32_hessian": float32, "negligible": negligible}
        U0, warm = None, 0
        use = sample is not None and 2 * dim <= len(sample[0]) < n_usable \
            and k * n_usable * dim * dim >= WARM_START_FLOPS
        if use:
            As, cs, _, _ = augmented_kernel_rows(sample[0], sample[1], basis)
            # a start's Hessians only steer it: their products run in float32 (half the
            # time of the syrk, most of a start's work) whatever ``hessian`` says
            start = newton_armijo_lockstep(_in_memory(As, cs, loss), dim, classes,
                                           C=C * n_usable / len(As), tol=WARM_START_TOL,
                                           first_trials=IN_MEMORY_FIRST_TRIALS,
                                           **{**options, "float32_hessian": True})
            U0 = np.column_stack([r.u for r in start.results])
            warm = max(r.iterations for r in start.results)
        if in_memory is not None and fits:
            out = newton_armijo_lockstep(_in_memory(A, codes_usable, loss), dim, classes, C=C,
                                         tol=tol, U0=U0, first_trials=IN_MEMORY_FIRST_TRIALS,
                                         **options)
            # the data is read twice: to draw Ã, and once into the kernel rows
            extra = {"solver": f"newton-armijo, in memory, {k} classes in lockstep",
                     "reads": 2}
        else:
            Xd, yd, md = chunked()
            with ReducedNewtonPasses(Xd, yd, basis, loss, mask=md) as passes:
                # the first trial steps only, as in memory: the loss at all 21 trial steps
                # of k problems is a pass's largest elementwise work; a problem that needs a
                # shorter step asks for it in the next pass, which serves the others too
                out = newton_armijo_lockstep(passes.classes, dim, classes, C=C, tol=tol,
                                             U0=U0, first_trials=IN_MEMORY_FIRST_TRIALS,
                                             **options)
            counts = passes.counts
            extra = {"solver": f"newton-armijo, one pass per step, {k} classes in lockstep"}
        extra.update({"warm_start_rows": len(sample[0]) if use else 0,
                      "warm_start_iterations": warm})
    res = ClassesResult.of(out)
    _warn_unconverged(est, out)
    return res, counts, {**extra, "by_class": res.by_class}


def newton_cg_classes_fit(est: Any, loss: Any, basis: Basis, k: int,
                          in_memory: tuple[np.ndarray, np.ndarray, Any], rs: Any
                          ) -> tuple[ClassesResult, dict[str, int], dict[str, Any]]:
    """The k one-vs-rest problems by Newton–CG over kernel rows held in memory.

    ``in_memory`` is numpy ``(X, codes, mask)`` whose kernel rows fit. The rows are formed
    once; problem ``j`` is then the two-class fit's Newton–CG
    (:func:`~bigkern.models.reduced_kernel._newton_cg_fit.held_newton_cg`) on labels +1
    for class ``j`` and −1 elsewhere, the problems side by side on the cores: held rows cost no
    read, and each problem's CG products run over its own rows with curvature, fewer
    than a two-class problem's once the classes are apart. Returns the result, the row
    counts and what the fit report adds.
    """
    X, codes, mask = in_memory
    A, codes_usable, counts = held_kernel_rows(X, codes.astype(np.float64), basis, mask)

    def solve(j: int) -> Any:
        return held_newton_cg(est, loss, A, np.where(codes_usable == j, 1.0, -1.0),
                              rs.seed, threads=1)[0]

    # the problems side by side, one per core, each on one BLAS thread (the limit is the
    # process's: set once around them all); each problem's arithmetic is its own, so
    # the result does not depend on the number of threads
    with blas_controller().limit(limits=1, user_api="blas"), \
            ThreadPoolExecutor(max(1, min(k, os.cpu_count() or 1))) as pool:
        results = list(pool.map(solve, range(k)))
    out = LockstepResult(list(results), sum(r.passes for r in results))
    res = ClassesResult.of(out)
    _warn_unconverged(est, out)
    return res, counts, {
        "solver": f"newton-cg, in memory ({A.dtype} rows), {k} classes side by side",
        "reads": 2, "by_class": {**res.by_class,
                                 "cg_iterations": [list(r.cg_iterations) for r in results]},
        "cg_iterations": [sum(r.cg_iterations) for r in results]}


def _in_memory(A: np.ndarray, codes: np.ndarray, loss: Any) -> InMemoryClassPasses:
    return InMemoryClassPasses(A, codes, loss, block_rows=int(config.get("kernel_block_rows")),
                               threads=os.cpu_count() or 1)


def _warn_unconverged(est: Any, out: LockstepResult) -> None:
    late = [(est.classes_[j], r) for j, r in enumerate(out.results) if not r.converged]
    if late:
        said = "; ".join(f"{c!r}: {r.message} after {r.iterations} iterations (gradient norm "
                         f"{r.grad_norm / max(r.grad_norm0, 1e-300):.2g} of the initial)"
                         for c, r in late)
        warnings.warn(f"{type(est).__name__} did not converge for {len(late)} of "
                      f"{len(out.results)} classes: {said}", ConvergenceWarning, stacklevel=4)
