"""The reduced SVM's and SVR's Newton–CG fit, and ``solver="auto"``'s choice of it.

:func:`newton_cg_fit` runs :mod:`bigkern.solvers.newton_cg` on kernel rows held in
memory (a numpy input whose rows fit) or over chunked data (one read per line search
and per CG iteration), preconditioned from a uniform sample of the rows
(:class:`~bigkern.solvers.newton_cg.preconditioning.SampledPreconditioner`).
:func:`choose_solver` is ``solver="auto"``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from bigkern.cluster.compute import blas_controller
from bigkern.kernels import Basis
from bigkern.reduce.reduced.newton_cg_passes import ChunkedNewtonCG, held_kernel_rows
from bigkern.solvers.newton.smooth_losses import SquaredHinge
from bigkern.solvers.newton_cg.held_rows import HeldKernelRows, newton_cg
from bigkern.solvers.newton_cg.method import LinePass, LineSums, NewtonCGResult
from bigkern.solvers.newton_cg.preconditioning import SampledPreconditioner

__all__ = [
    "AUTO_CHUNKED_NEWTON_CG_CENTERS",
    "AUTO_CLASSES_NEWTON_CG_CENTERS",
    "AUTO_NEWTON_CG_CENTERS",
    "choose_solver",
    "draw_sample",
    "held_itemsize",
    "newton_cg_fit",
]

#: ``solver="auto"`` takes Newton–CG from this many centres on (two classes): below it
#: the finite Newton step's ``n·m̃²`` Hessian and ``m̃³`` factorization cost less than
#: Newton–CG's many memory-bound products. The two crossed between 2,000 and 5,000
#: centres on held rows (docs/benchmarks/reduced.md, "Newton–CG", has the run).
AUTO_NEWTON_CG_CENTERS = 3000

#: The fewest centres from which ``solver="auto"`` takes Newton–CG for k > 2 classes on
#: held rows (:func:`choose_solver`): above the default reduced set's 500, where the
#: lockstep finite Newton fit of 10 classes was the faster.
AUTO_CLASSES_NEWTON_CG_CENTERS = 1000

#: The same over chunked data (kernel rows not held): each CG iteration is a read that
#: forms every kernel value anew, where a Newton–Armijo pass forms them once per step.
#: At 2,000 centres Newton–CG was several times slower; as a read costs ``n·m̃`` and a
#: Newton pass ``n·m̃²``, the two should cross near 10⁴ centres (extrapolated from that
#: one run, given on the same page; not measured there).
AUTO_CHUNKED_NEWTON_CG_CENTERS = 10_000

#: Most CG iterations of one Newton step.
CG_MAX_ITER = 200

#: Held rows sampled for the in-memory preconditioner, per unknown.
SAMPLE_PER_UNKNOWN = 4

#: Most sampled rows with curvature in the preconditioner, per unknown (its cost per
#: Newton step is ``most² (m̃ + 1)``): half as many as unknowns.
MOST_PER_UNKNOWN = 0.5

#: Trial steps of the first batch of an in-memory line search (as Newton–Armijo's).
_FIRST_TRIALS = 4


def held_itemsize(X: Any, basis: Basis) -> int:
    """Bytes per held kernel value of
    :func:`~bigkern.reduce.reduced.newton_cg_passes.held_kernel_rows` for ``X``: 4 for
    float32 data and a Gaussian basis, else 8."""
    dtype = getattr(X, "dtype", np.dtype(np.float64))
    return 4 if dtype.kind == "f" and dtype.itemsize <= 4 and basis.is_gaussian else 8


def choose_solver(solver: str, n_centers: int, n_classes: int, held: bool = True, *,
                  squared_hinge: bool = False) -> tuple[str, str]:
    """The solver a fit runs (``"newton"`` or ``"newton-cg"``) and why; ``held``: whether
    the kernel rows are held in memory (else each pass is a read of chunked data).

    k > 2 classes on held rows are fitted as two are: Newton–CG solves the k one-vs-rest
    problems side by side on the one set of rows. Over chunked data their lockstep
    Newton fit serves all k with one read a pass, which Newton–CG does not. With the
    squared hinge (``squared_hinge``) on held rows, ``"auto"`` takes Newton–CG for k
    classes from ``2/k`` of :data:`AUTO_NEWTON_CG_CENTERS` on (at least
    :data:`AUTO_CLASSES_NEWTON_CG_CENTERS`): the lockstep finite Newton step forms a
    Hessian per class still running, while each class's CG products run over its own
    margin's rows, few once the classes are apart (the user guide's models page gives the
    measurement). The smooth hinge gives every row curvature, so its CG products run over
    all the rows: its k classes wait for twice that, ``4/k`` of it (and at most the
    two-class threshold).

    Raises
    ------
    ValueError
        ``solver="newton-cg"`` with more than two classes over chunked data.

    Examples
    --------
    >>> choose_solver("auto", 500, 2)[0], choose_solver("auto", 5000, 2)[0]
    ('newton', 'newton-cg')
    >>> choose_solver("auto", 5000, 3)[0], choose_solver("auto", 5000, 3, held=False)[0]
    ('newton-cg', 'newton')
    >>> [choose_solver("auto", m, 10)[0] for m in (1000, 2000)]
    ['newton', 'newton-cg']
    >>> choose_solver("auto", 1000, 10, squared_hinge=True)[0]
    'newton-cg'
    """
    if n_classes > 2 and not held:
        if solver == "newton-cg":
            raise ValueError(
                f"solver='newton-cg' fits {n_classes} classes on kernel rows held in memory "
                f"only (numpy input whose rows fit bigkern.in_memory_kernel_bytes); over "
                f"chunked data they are fitted by the lockstep Newton method, one read a "
                f"pass for all of them (solver='newton' or 'auto')")
        if solver == "auto":
            return "newton", (f"solver='auto': {n_classes} classes over chunked data (their "
                              f"lockstep Newton fit shares each read)")
    if solver != "auto":
        return solver, f"solver={solver!r}"
    least = AUTO_NEWTON_CG_CENTERS if held else AUTO_CHUNKED_NEWTON_CG_CENTERS
    if held and n_classes > 2:
        share = (2 if squared_hinge else 4) * AUTO_NEWTON_CG_CENTERS // n_classes
        least = min(least, max(AUTO_CLASSES_NEWTON_CG_CENTERS, share))
    where = "kernel rows in memory" if held else "chunked data"
    what = f"{n_classes} classes, " if n_classes > 2 else ""
    if n_centers < least:
        return "newton", (f"solver='auto': {what}{n_centers} centers, under {least:,} on "
                          f"{where} (the Newton step's m̃² Hessian is the cheaper)")
    return "newton-cg", (f"solver='auto': {what}{n_centers} centers, at least {least:,} on "
                         f"{where} (no pass forms an m̃² Hessian)")


def draw_sample(rs: Any, targets: Callable[[Any], np.ndarray]
                ) -> tuple[np.ndarray, np.ndarray]:
    """The centres and the draw's scale sample (when it has one, with labels), and their
    targets (``targets`` maps the draw's labels): a uniform sample of the usable rows."""
    if rs.scale_X is None or rs.scale_y is None:
        return rs.X, targets(rs.y)
    return (np.vstack([rs.X, rs.scale_X]),
            np.concatenate([targets(rs.y), targets(rs.scale_y)]))


def newton_cg_fit(est: Any, loss: Any, basis: Basis, rs: Any,
                  chunked: Callable[[], tuple[Any, Any, Any]],
                  in_memory: tuple[Any, Any, Any] | None,
                  sample: Callable[[], tuple[np.ndarray, np.ndarray]]
                  ) -> tuple[NewtonCGResult, dict[str, int], dict[str, Any]]:
    """Newton–CG on ``est``'s problem (``C``, ``tol``, ``max_iter``); warns when not converged.

    ``in_memory``: the fit's numpy ``(X, targets, mask)`` when its kernel rows are to be
    held (the caller checked they fit), else None and ``chunked()`` makes the dask
    ``(X, targets, mask)``. ``sample()`` gives the raw rows and targets of
    a uniform sample of the usable rows (the centres, and the draw's scale sample when it
    has labels) for the chunked fit's preconditioner. Returns the result, the row counts
    and what the fit report adds.
    """
    dim = basis.n_basis + 1
    options = {"C": float(est.C), "tol": float(est.tol), "max_iter": int(est.max_iter),
               "cg_max_iter": CG_MAX_ITER}
    most = max(1, int(MOST_PER_UNKNOWN * dim))
    if in_memory is not None:
        X, y, mask = in_memory
        A, targets, counts = held_kernel_rows(X, y, basis, mask)
        res, pre = held_newton_cg(est, loss, A, targets, rs.seed)
        extra = {"solver": f"newton-cg, in memory ({A.dtype} rows)", "reads": 2}
    else:
        Xs, ys = sample()
        B, yb, _ = held_kernel_rows(np.asarray(Xs, dtype=np.float64), ys, basis)
        Xd, yd, md = chunked()
        pre = _LazyRows(B, yb, options["C"], loss, most, rs.seed)
        with ChunkedNewtonCG(Xd, yd, basis, loss, mask=md) as passes:
            res = newton_cg(_CountingRows(passes, pre), dim, preconditioner=pre, **options)
        counts = passes.counts
        extra = {"solver": "newton-cg, one read per line search and per CG iteration",
                 "reads": passes.passes + 1}
    _warn_unconverged(est, res)
    return res, counts, {**extra, "cg_iterations": list(res.cg_iterations),
                         "cg_residuals": [float(r) for r in res.cg_residuals],
                         "preconditioner_rows": int(pre.kept),
                         "preconditioner_reused": int(pre.reused)}


def held_newton_cg(est: Any, loss: Any, A: np.ndarray, targets: np.ndarray, seed: int,
                   threads: int | None = None
                   ) -> tuple[NewtonCGResult, SampledPreconditioner]:
    """Newton–CG on held augmented kernel rows ``A`` with ±1 ``targets`` (``est``'s ``C``,
    ``tol``, ``max_iter``), preconditioned from a seeded sample of the rows; the result
    and the preconditioner. Every in-memory Newton–CG fit, of two classes or of each of
    k, runs this; ``threads`` is :class:`HeldKernelRows`'."""
    n, dim = A.shape
    options = {"C": float(est.C), "tol": float(est.tol), "max_iter": int(est.max_iter),
               "cg_max_iter": CG_MAX_ITER}
    pick = np.sort(np.random.default_rng(seed).choice(
        n, min(n, SAMPLE_PER_UNKNOWN * dim), replace=False))
    pre = SampledPreconditioner(A[pick], targets[pick], n, C=options["C"], loss=loss,
                                most=max(1, int(MOST_PER_UNKNOWN * dim)), seed=seed)
    # the products are matrix–vector ones: on one BLAS thread they do not wait on
    # a second one that a loaded machine may not give
    with blas_controller().limit(limits=1, user_api="blas"):
        res = newton_cg(HeldKernelRows(A, targets, loss, threads), dim, preconditioner=pre,
                        first_trials=_FIRST_TRIALS,
                        exact_line_search=isinstance(loss, SquaredHinge), **options)
    return res, pre


class _LazyRows(SampledPreconditioner):
    """The chunked fit's preconditioner: the number of usable rows is known after the
    first pass (its row counts), so the sample's weight is set then."""

    def __init__(self, rows: np.ndarray, y: np.ndarray, C: float, loss: Any, most: int,
                 seed: int) -> None:
        super().__init__(rows, y, len(rows), C=C, loss=loss, most=most, seed=seed)
        self._C = C

    def set_rows(self, n_rows: int) -> None:
        self.scale = self._C * float(n_rows) / max(1, len(self.rows))


class _CountingRows:
    """Answers the solver's passes with the chunked ones of ``passes`` and tells the
    preconditioner the usable rows."""

    def __init__(self, passes: ChunkedNewtonCG, pre: _LazyRows) -> None:
        self.passes, self.pre = passes, pre

    def __call__(self, request: Any) -> Any:
        if isinstance(request, LinePass):
            out: Any = LineSums(*self.passes.line(request.u, request.d, request.steps,
                                                  request.at))
        else:  # a CurvaturePass
            out = self.passes.curvature(request.u, request.p)
        self.pre.set_rows(int(self.passes.counts["valid"]))
        return out


def _warn_unconverged(est: Any, res: NewtonCGResult) -> None:
    if not res.converged:
        last = res.cg_residuals[-1] if res.cg_residuals else float("nan")
        warnings.warn(
            f"{type(est).__name__} (Newton-CG) did not converge: {res.message} after "
            f"{res.iterations} Newton iterations and {sum(res.cg_iterations)} CG iterations "
            f"(gradient norm {res.grad_norm:.3g}, "
            f"{res.grad_norm / max(res.grad_norm0, 1e-300):.2g} of the initial; "
            f"the last CG residual {last:.2g} of the gradient)",
            ConvergenceWarning, stacklevel=5)
