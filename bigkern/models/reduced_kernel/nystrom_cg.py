"""The Nyström models' ``solver="cg"`` fit: conjugate gradients, started from a subset.

Each iteration of :func:`~bigkern.solvers.conjugate_gradients.preconditioned_cg` computes
``Gᵀ(G v)``: from the kernel blocks the right-hand side's read kept
(:class:`~bigkern.reduce.reduced.kept_blocks.KeptKernelBlocks`, within a share of the
workers' memory), else by one read evaluating them anew. With ``cg_start="subset"`` (the
default) they start from the solution on a random subset of about 10 rows per center,
gathered by one read (which also counts the usable rows ``n``) and held in memory with
its kernel blocks: the same system with the subset's rows and λ scaled by its share of
the rows, whose preconditioner is the full one's (``A`` times ``√(n_s / n)``: no
factorization), solved by up to 20 iterations. The subset also gives the preconditioner
its estimate of ``GᵀG``: the Gram matrix of 4 of its rows per centre
(:mod:`bigkern.models.reduced_kernel.nystrom_cg_start`). The read that sums the right-hand side
``Gᵀy`` (centered for the intercept) also gives ``Gᵀ(G c₀)`` at that start, so the
first residual costs no read. A fit thus reads the rows three times when every chunk's
blocks are kept — the draw of the centers, the subset, the right-hand side — and once
more per iteration when some are not.

The subset's size and iterations trade the start's own cost against the residual
it hands on: more rows per center or more iterations on them start the full solve
closer, but the subset's solve grows with them while the accuracy reached after the
full iterations hardly moves. The benchmark page of the reduced-kernel engine gives
the sweep these defaults were chosen from.

Several λ make a path (:func:`fit_by_cg_path`): on all folds but one, from the largest
λ down, each solve starting from the solution at the λ before it; one read of the
held-out fold scores them all, and the best is refitted on all rows from its path
solution. ``solver="auto"`` picks among these and the direct solve
(:data:`AUTO_CG_CENTERS`, :data:`AUTO_CG_PATH_CENTERS`, :data:`AUTO_CG_RESIDUAL`).

A classifier of k > 2 classes solves its k one-vs-rest systems together: they share the
preconditioner (one matrix), and
:func:`~bigkern.solvers.conjugate_gradients_columns.preconditioned_cg_columns` advances their
k recurrences in lockstep, so each read above serves all the classes still running (a
fit reads the rows as often as its slowest class alone would). The targets travel as
class codes, expanded to ±1 columns in each chunk.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from typing import Any

import dask.array as da
import numpy as np
from sklearn.exceptions import ConvergenceWarning

from bigkern.models.reduced_kernel._reduced_parts import reduced_basis
from bigkern.models.reduced_kernel.nystrom_cg_start import (
    START_TOL,
    PreconditionerSample,
    centered_rhs,
    drawn_preconditioner_sample,
    less_mean,
    subset_start,
    target_columns,
)
from bigkern.reduce.passes import per_feature_counts, without_per_feature
from bigkern.reduce.reduced.kept_blocks import KeptKernelBlocks, kept_budget_bytes
from bigkern.reduce.reduced.normal_equations import fold_of_rows
from bigkern.reduce.reduced.products import kernel_products
from bigkern.solvers.conjugate_gradients import FalkonPreconditioner
from bigkern.solvers.conjugate_gradients_columns import CGColumns, preconditioned_cg_columns

__all__ = ["AUTO_CG_CENTERS", "AUTO_CG_PATH_CENTERS", "AUTO_CG_RESIDUAL", "fit_by_cg",
           "fit_by_cg_path"]

#: ``solver="auto"`` tries conjugate gradients from this many centers on: below, the
#: direct pass (n·m̃² flops) costs less than CG's reads (n·m̃·(d + 2) flops each, and
#: several of them), since its cost grows with m̃² and each read's only with m̃
AUTO_CG_CENTERS = 1000
#: ``solver="auto"`` runs a λ path by conjugate gradients (one width, several λ) from this
#: many centers on: each of the path's solves starts from the one before and reads the
#: rows at n·m̃·(d + 2) flops a read, while the direct solver's cross-validation pays its
#: n·m̃² pass, so the path gains as m̃ grows and does not pay at fewer centers
AUTO_CG_PATH_CENTERS = 2000
#: ``solver="auto"`` keeps conjugate gradients when the subset's solve reached a relative
#: residual of at most this many times ``tol``; else it falls back to the direct solve. The
#: subset's system is the full one at a smaller scale, so a start that stays far from
#: ``tol`` marks one that CG would not finish within ``max_iter`` either (a small λ, an
#: ill-conditioned system), and finding that out costs only the subset's read and solve
AUTO_CG_RESIDUAL = 2.0


def _read_product(Xd: Any, yd: Any, basis: Any, mask: Any, gsum: np.ndarray, n: int,
                  fit_intercept: bool, label: str) -> Any:
    """``V ↦ GᵀG V − ḡ ḡᵀV / n`` over the rows of ``mask``, one read per call for all the
    columns of ``V``."""
    def product(V: np.ndarray) -> np.ndarray:
        gtgv = kernel_products(Xd, yd, basis, V, targets=False, mask=mask,
                               label=label)["GtGV"]
        return less_mean(gtgv, V, gsum, n, fit_intercept)
    return product


def _intercepts(products: dict[str, Any], coef: np.ndarray, n: int,
                fit_intercept: bool) -> np.ndarray:
    """``(Σy − ḡᵀc) / n`` per column of ``coef`` (m̃, t) (zeros without an intercept)."""
    _, ysum, _ = target_columns(products)
    if not fit_intercept:
        return np.zeros(coef.shape[1])
    gsum = products["Gsum"]
    return np.array([(ysum[j] - float(gsum @ np.ascontiguousarray(coef[:, j]))) / n
                     for j in range(coef.shape[1])])


def fit_by_cg(est: Any, Xd: Any, yd: Any, md: Any, rs: Any, omega: float, lam: float,
              t0: float, *, probe: bool = False, n_classes: int | None = None) -> str | None:
    """Fit ``est`` (a Nyström model) by conjugate gradients for one ``omega`` and ``lam``.

    With a start from a subset, the read summing the right-hand side also gives the
    start's product, so the first residual costs no read of its own.

    With ``probe`` (``solver="auto"``) the subset's solve decides first: when there is
    no subset start, or its residual is over ``AUTO_CG_RESIDUAL × tol`` (CG would not
    converge in ``max_iter`` reads; its model would be worse than the direct one),
    nothing is fitted and the reason is returned, for the direct solve to take over.
    Returns None when ``est`` was fitted.

    With ``n_classes`` = k, ``yd`` holds class codes: the k one-vs-rest problems share the
    preconditioner and every read (:func:`preconditioned_cg_columns`); the subset's
    residual that decides is the largest of the k.
    """
    basis, clipped = reduced_basis(rs, omega, est.standardize,
                                   getattr(est, "feature_names_in_", None), est.kernel)
    K = basis.kernel(basis.centers, basis.centers)
    t_begin = time.perf_counter()
    start, n_start, n, pre = subset_start(est, Xd, yd, md, basis, K,
                                           int(rs.counts.get("valid", 0)), lam, n_classes)
    start_residual = None if start is None else float(start.residual.max())
    if probe:
        bound = AUTO_CG_RESIDUAL * float(est.tol)
        if start is None:
            return ("solver='auto': no subset to try conjugate gradients on (cg_start="
                    f"{est.cg_start!r}, or the subset would be over half the rows); the direct "
                    "solve")
        if not start_residual <= bound:
            return (f"solver='auto': conjugate gradients on a subset of {n_start:,} rows "
                    f"reached a relative residual of {start_residual:.3g} in "
                    f"{int(start.n_iter.max())} iterations, over {AUTO_CG_RESIDUAL:g} × tol = "
                    f"{bound:.3g} (they would not converge in max_iter reads); the direct "
                    f"solve")
    sampled = n is not None  # one read gathered a subset
    sample = None
    if pre is None:  # no subset drawn: a draw of its own for the preconditioner
        seed = est.random_state if isinstance(est.random_state, int | np.integer) else 0
        sample = drawn_preconditioner_sample(Xd, yd, md, basis, K, int(rs.counts.get("valid", 0)),
                                        int(seed), "Nyström conjugate gradients")
        sampled = sample.gram is not None
    t_start = time.perf_counter()
    solve = _solve_all_rows(est, Xd, yd, md, basis, K, lam,
                            None if start is None else start.coef, n, pre, n_classes, sample)
    choice = ("solver='auto': conjugate gradients (the subset's solve reached "
              f"{start_residual:.3g})" if probe and start is not None
              else f"solver={est.solver!r}")
    _set_cg_fit(est, rs, basis, clipped, omega, lam, solve, t0, extra={
        "reads": 2 + solve.reads_per_solve + sampled, "products": solve.found.n_products,
        "solver_choice": choice,
        "start": "zero" if start is None else "subset", "start_rows": n_start,
        "start_iterations": 0 if start is None else int(start.n_iter.max()),
        "start_residual": start_residual,
        "n_candidates": 1, "seconds_start": t_start - t_begin})
    est.cv_scores_ = np.full((1, 1), np.nan)
    return None


@dataclass
class _AllRowsSolve:
    """A conjugate-gradient solve over the usable rows: its result (one column per target),
    its right-hand side's read (``first``), preconditioner, intercepts and the seconds of
    that read."""

    found: CGColumns
    first: dict[str, Any]
    pre: FalkonPreconditioner
    intercept: np.ndarray
    seconds_pass: float
    kept: dict[str, int]

    @property
    def reads_per_solve(self) -> int:
        """Reads of the rows by the iterations: none when every chunk's blocks were kept,
        else one per product (the chunks not kept are read each time)."""
        all_kept = self.kept["kept_chunks"] == self.kept["chunks"]
        return 0 if all_kept else self.found.n_products


def _solve_all_rows(est: Any, Xd: Any, yd: Any, mask: Any, basis: Any, K: np.ndarray,
                    lam: float, start: np.ndarray | None, n: int | None,
                    pre: FalkonPreconditioner | None,
                    n_classes: int | None = None,
                    sample: PreconditionerSample | None = None) -> _AllRowsSolve:
    """Conjugate gradients over the rows of ``mask`` from ``start`` (m̃, t) (None: zero); the
    read of the right-hand sides also gives the start's products. ``pre`` is the
    preconditioner for ``n`` rows (made anew when the read counts other rows, or when
    None: from ``sample``, else Falkon's from ``K``).

    The kernel blocks are kept between the iterations where they fit
    (:class:`~bigkern.reduce.reduced.kept_blocks.KeptKernelBlocks`: the read of the
    right-hand sides forms them, each iteration is then two matrix–vector products per
    chunk); when not even one chunk's fit, or when a subset start leaves a few products
    only (:func:`_few_products`), each iteration evaluates them anew, in one compiled
    loop (:func:`~bigkern.reduce.reduced.products.kernel_products`).
    """
    m = basis.n_basis
    t = time.perf_counter()
    given = np.zeros((m, 0)) if start is None else start
    keep = _keeps_blocks(Xd, m) and not _few_products(start, float(est.tol))
    blocks = None
    if keep:
        blocks, first = KeptKernelBlocks.build(Xd, yd, basis, given, mask=mask,
                                               n_classes=n_classes,
                                               label="Nyström right-hand side, kernel blocks")
    else:
        first = kernel_products(Xd, yd, basis, given, mask=mask,
                                label="Nyström right-hand side", n_classes=n_classes)
    seconds_pass = time.perf_counter() - t
    gsum = first["Gsum"]
    if pre is None or n != first["n"]:  # no start, or its count of the usable rows differs
        n = first["n"]
        pre = (sample or PreconditionerSample(K)).preconditioner(n, lam, est.fit_intercept)
    if blocks is None:
        product = _read_product(Xd, yd, basis, mask, gsum, n, est.fit_intercept,
                                "Nyström conjugate gradients")
    else:
        def product(V: np.ndarray) -> np.ndarray:
            gtgv = blocks.products(V, label="Nyström conjugate gradients (kept blocks)")
            return less_mean(gtgv, V, gsum, n, est.fit_intercept)
    start_product = None if start is None else less_mean(
        first["GtGV"], start, gsum, n, est.fit_intercept)
    try:
        found = preconditioned_cg_columns(product, centered_rhs(first, est.fit_intercept), pre,
                                          lam, tol=float(est.tol), max_iter=int(est.max_iter),
                                          start=start, start_product=start_product,
                                          names=_class_names(est, n_classes))
    finally:
        kept = {"kept_chunks": 0 if blocks is None else blocks.n_kept,
                "chunks": len(Xd.chunks[0]),
                "kept_bytes": 0 if blocks is None else blocks.kept_bytes}
        if blocks is not None:
            blocks.release()
    intercept = _intercepts(first, found.coef, n, est.fit_intercept)
    return _AllRowsSolve(found, first, pre, intercept, seconds_pass, kept)


def _few_products(start: np.ndarray | None, tol: float) -> bool:
    """Whether a solve from ``start`` is expected to take a few products only: it starts
    from the subset's solution, which was solved to :data:`START_TOL`, and asks for no
    tighter a residual. Keeping its kernel blocks would then cost more than it saves:
    the blocks are new memory, written once (zeroed by the kernel as it is first
    touched, and on a virtual machine backed by the host, which can cost more than
    forming the values), while each product they spare evaluates them once."""
    return start is not None and tol >= START_TOL


def _keeps_blocks(Xd: Any, m: int) -> bool:
    """Whether the kernel blocks of at least the first row chunk fit the budget
    (:func:`~bigkern.reduce.reduced.kept_blocks.kept_budget_bytes`)."""
    itemsize = 4 if Xd.dtype.itemsize <= 4 and Xd.dtype.kind == "f" else 8
    return int(Xd.chunks[0][0]) * m * itemsize <= kept_budget_bytes()


def _class_names(est: Any, n_classes: int | None) -> list[str] | None:
    """The classes the columns are, for a warning (None for one target)."""
    classes = getattr(est, "classes_", None)
    if n_classes is None or classes is None:
        return None
    return [f"class {c!r}" for c in np.asarray(classes).tolist()]


def _coef_and_intercept(coef: np.ndarray, intercept: np.ndarray
                        ) -> tuple[np.ndarray, float | np.ndarray]:
    """``coef`` (m̃,) and a float intercept for one target column; (m̃, k) and (k,) for k."""
    if coef.shape[1] == 1:
        return np.ascontiguousarray(coef[:, 0]), float(intercept[0])
    return coef, intercept


def _set_cg_fit(est: Any, rs: Any, basis: Any, clipped: Any, omega: float, lam: float,
                solve: _AllRowsSolve, t0: float, extra: dict[str, Any]) -> None:
    """The fitted attributes and the fit report of a conjugate-gradient fit (with k classes,
    the iterations and the residual are the largest of the classes')."""
    found, first = solve.found, solve.first
    coef, intercept = _coef_and_intercept(found.coef, solve.intercept)
    names = est._set_expansion(basis, coef, intercept, omega, lam, rs)
    n_iter = int(found.n_iter.max())
    est.n_iter_ = max(1, n_iter)
    est.solver_ = "cg"
    by_class = {} if found.coef.shape[1] == 1 else {
        "n_iter_by_class": found.n_iter.tolist(),
        "residual_by_class": found.residual.tolist()}
    est.fit_report_ = {
        **without_per_feature(first["counts"]),
        "n_nonfinite_by_feature": per_feature_counts(first["counts"], names),
        "n_basis": basis.n_basis, "n_duplicates": rs.n_duplicates,
        "n_clipped_in_reduced_set_by_feature": clipped,
        "omega": omega, "lam": lam, "jitter": solve.pre.jitter, "solver": "cg",
        "preconditioner": (f"Gram matrix of a sample of {solve.pre.sample_rows:,} rows"
                           if solve.pre.sample_rows else "the centres' kernel (Falkon's)"),
        "seconds_preconditioner": solve.pre.seconds,
        "n_iter": n_iter, "residual": float(found.residual.max()),
        "converged": bool(found.converged.all()),
        "residual_recomputed": bool(found.residual_recomputed.all()),
        **by_class,
        "kept_blocks": solve.kept,
        **extra,
        "seconds_pass": solve.seconds_pass,
        "seconds_total": time.perf_counter() - t0,
    }


def fit_by_cg_path(est: Any, Xd: Any, yd: Any, md: Any, rs: Any, omega: float,
                   lams: tuple[float, ...], t0: float, *, choice: str | None = None,
                   n_classes: int | None = None) -> None:
    """Fit ``est`` by conjugate gradients, choosing λ among ``lams`` on a held-out fold.

    The rows are hashed to ``est.n_folds`` folds by global row number (as the direct
    solver's folds, :func:`~bigkern.reduce.reduced.normal_equations.fold_of_rows`); fold 0
    is held out. On the others, λ runs down its path from the largest, each solve
    starting from the solution at the λ before it (one read for the right-hand side
    serves them all; each solve's first product costs a read). One read of the held-out
    fold gives every λ's squared error (the products ``Gᵀ(G V)`` of all solutions at
    once); the best λ is then refitted on all rows, starting from its path solution.

    With ``n_classes`` = k every solve advances the k classes' recurrences together (one
    read per step for all), the held-out read takes all λ × k solutions at once, and λ is
    chosen on the mean over the classes of the held-out squared error.
    """
    basis, clipped = reduced_basis(rs, omega, est.standardize,
                                   getattr(est, "feature_names_in_", None), est.kernel)
    m = basis.n_basis
    K = basis.kernel(basis.centers, basis.centers)
    seed = est.random_state if isinstance(est.random_state, int | np.integer) else 0
    held = _held_out(Xd, int(est.n_folds), int(seed))
    train, test = (~held, held) if md is None else (md & ~held, md & held)
    fi = est.fit_intercept
    n_train_drawn = int(rs.counts.get("valid", 0)) * (1.0 - 1.0 / int(est.n_folds))
    # the folds hash the row numbers with the seed: the sample, another stream of the hash
    sample = drawn_preconditioner_sample(Xd, yd, train, basis, K, n_train_drawn,
                                    int(seed) + _SAMPLE_STREAM, "Nyström λ path")
    rhs = kernel_products(Xd, yd, basis, np.zeros((m, 0)), mask=train,
                          label="Nyström λ path: right-hand side", n_classes=n_classes)
    n_train = rhs["n"]
    if n_train < 2:
        raise ValueError(f"the λ path needs training rows outside the held-out fold; "
                         f"{n_train} of the usable rows are (n_folds={est.n_folds})")
    product = _read_product(Xd, yd, basis, train, rhs["Gsum"], n_train, fi,
                            "Nyström λ path: conjugate gradients")
    coef: np.ndarray | None = None
    path: dict[int, tuple[np.ndarray, np.ndarray, CGColumns]] = {}
    with warnings.catch_warnings():  # a path solve is judged by its held-out error
        warnings.simplefilter("ignore", ConvergenceWarning)
        for j in sorted(range(len(lams)), key=lambda j: -lams[j]):  # the largest λ first
            found = preconditioned_cg_columns(
                product, centered_rhs(rhs, fi),
                sample.preconditioner(n_train, lams[j], fi), lams[j],
                tol=float(est.tol), max_iter=int(est.max_iter), start=coef)
            coef = found.coef
            path[j] = (coef, _intercepts(rhs, coef, n_train, fi), found)
    t = coef.shape[1]
    V = np.hstack([path[j][0] for j in range(len(lams))])  # λ j's classes: columns j·t …
    te = kernel_products(Xd, yd, basis, V, mask=test, label="Nyström λ path: held-out fold",
                         n_classes=n_classes)
    scores = np.array([np.mean([_mean_squared_error(te, c, j * t + c, path[j][0][:, c],
                                                    path[j][1][c]) for c in range(t)])
                       for j in range(len(lams))])
    best = int(np.argmin(scores))
    solve = _solve_all_rows(est, Xd, yd, md, basis, K, lams[best], path[best][0], None, None,
                            n_classes, sample)
    path_products = sum(found.n_products for _, _, found in path.values())
    _set_cg_fit(est, rs, basis, clipped, omega, lams[best], solve, t0, extra={
        "reads": 3 + (sample.gram is not None) + path_products + 1 + solve.reads_per_solve,
        "products": path_products + solve.found.n_products,
        "solver_choice": (choice or f"solver={est.solver!r}") + f": a λ path on "
                         f"{n_train:,} rows, {te['n']:,} held out",
        "start": "path", "n_candidates": len(lams),
        "path_iterations": {float(lams[j]): int(path[j][2].n_iter.max()) for j in path},
        "path_converged": all(bool(found.converged.all()) for _, _, found in path.values()),
        "n_held_out": int(te["n"])})
    est.cv_scores_ = scores[None, :]


#: Added to the seed of the λ path's preconditioner sample: with the folds' own seed the
#: hash would draw the held-out fold's rows (fold 0 is a hash below 1 / n_folds), which the
#: path's training rows leave out
_SAMPLE_STREAM = 0x5EED


def _mean_squared_error(products: dict[str, Any], target: int, j: int, coef: np.ndarray,
                        intercept: float) -> float:
    """``Σ (y − G c − b)² / n`` of target column ``target`` over the rows of ``products`` (a
    :func:`kernel_products` result whose ``GtGV[:, j]`` is ``GᵀG c``), expanded into its
    sums."""
    gty, ysum, yty = target_columns(products)
    c, b = np.ascontiguousarray(coef), float(intercept)
    sse = (yty[target] - 2.0 * c @ gty[:, target] - 2.0 * b * ysum[target]
           + c @ products["GtGV"][:, j] + 2.0 * b * (c @ products["Gsum"])
           + products["n"] * b * b)
    return float(sse / max(products["n"], 1))


def _held_out(Xd: Any, n_folds: int, seed: int) -> Any:
    """Whether each row (by global row number) is in fold 0 of ``n_folds``, as ``Xd``'s rows
    are chunked."""
    rows = da.arange(Xd.shape[0], chunks=(Xd.chunks[0],), dtype=np.int64)
    return rows.map_blocks(_in_first_fold, n_folds, seed, dtype=bool)


def _in_first_fold(rows: np.ndarray, n_folds: int, seed: int) -> np.ndarray:
    return fold_of_rows(rows, n_folds, seed) == 0
