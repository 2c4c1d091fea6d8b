"""The fit the Nyström regressor and classifier share: candidates, solver, report.

:class:`_NystromFit` holds what :class:`~bigkern.models.reduced_kernel.nystrom.NystromKernelRidge`
and :class:`~bigkern.models.reduced_kernel.nystrom.NystromKernelRidgeClassifier` fit alike once
their targets are a dask array: the direct solve of every (ω, λ) candidate from one
read of the folds' normal equations, the conjugate-gradient fit
(:mod:`bigkern.models.reduced_kernel.nystrom_cg`), and ``solver="auto"``'s choice between them.
With ``n_classes`` the targets are class codes, and every solver fits the k one-vs-rest
problems from the reads one problem takes.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

import dask.array as da
import numpy as np
import xarray as xr
from sklearn.utils._param_validation import StrOptions

from bigkern import config
from bigkern.cluster.compute import compute
from bigkern.cluster.watchdog import current_client
from bigkern.kernels import KernelExpansion
from bigkern.models._base import fitted_expansion
from bigkern.models._constraints import candidates, domain
from bigkern.models.reduced_kernel._reduced_parts import (
    REDUCED_SET_CONSTRAINTS,
    reduced_basis,
)
from bigkern.models.reduced_kernel.nystrom_cg import (
    AUTO_CG_CENTERS,
    AUTO_CG_PATH_CENTERS,
    fit_by_cg,
    fit_by_cg_path,
)
from bigkern.reduce.passes import per_feature_counts, without_per_feature
from bigkern.reduce.reduced.folds import fold_pieces, reduced_normal_equations_folds
from bigkern.solvers.nystrom import (
    heldout_sse,
    kernel_penalty_basis,
    nystrom_solve,
    nystrom_system,
    solve_system,
)

__all__: list[str] = []

#: A dask input of at most this many bytes (X, y and mask together; and at most
#: ``bigkern.in_memory_rows`` rows), without a distributed client, is read into memory
#: once and the fit runs on numpy rows: its reads (the draw of the centers, the subset,
#: the right-hand side, any iteration whose blocks are not kept) are then copies, not
#: reads of a store through a task graph each. ``bigkern.nystrom_hold_bytes`` sets it;
#: 0, the default, never holds: once the kernel blocks are kept a fit reads the rows three
#: times only, and the held rows, cut into one chunk per thread, gave no faster fit than
#: the dask input's own chunks (``benchmarks/nystrom_solvers.py --acceptance``).
HOLD_BYTES = 0


def held_in_memory(X: Any, y: Any, mask: Any) -> tuple[Any, Any, Any, dict[str, Any]]:
    """``X``, ``y`` and ``mask`` as numpy arrays when ``X`` is a small dask array (see
    :data:`HOLD_BYTES`), read in one computation; and what the fit report says of it
    (``input``: ``"numpy"``, ``"dask, held in memory"`` or ``"dask"``)."""
    if not isinstance(X, da.Array):
        return X, y, mask, {"input": "numpy"}
    if current_client() is not None:  # a cluster's rows stay there (its blocks are kept)
        return X, y, mask, {"input": "dask"}
    mask_data = mask.data if isinstance(mask, xr.DataArray) else mask
    parts = [a for a in (X, y, mask_data) if isinstance(a, da.Array)]
    nbytes = sum(int(a.nbytes) for a in parts)
    limit = int(config.get("nystrom_hold_bytes", HOLD_BYTES))
    if nbytes > limit or X.shape[0] > int(config.get("in_memory_rows")):
        return X, y, mask, {"input": "dask"}
    t = time.perf_counter()
    got = iter(compute(*parts, label="Nyström: reading the rows into memory"))
    X, y, mask_data = (np.asarray(next(got)) if isinstance(a, da.Array) else a
                       for a in (X, y, mask_data))
    mask = mask_data if not isinstance(mask, xr.DataArray) else mask.copy(data=mask_data)
    return X, y, mask, {"input": "dask, held in memory", "held_bytes": nbytes,
                        "seconds_hold": time.perf_counter() - t}


class _NystromFit:
    """The fit shared by the regressor and the classifier (targets given as a dask array)."""

    #: fitted scalars and arrays a model file keeps (besides the expansion)
    _saved_fitted: ClassVar[tuple[str, ...]] = ("omega_", "lam_", "n_iter_", "solver_")
    _saved_arrays: ClassVar[dict[str, str | tuple[str, ...]]] = {
        "cv_scores_": ("width", "lam")}

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        **REDUCED_SET_CONSTRAINTS,
        "omega": [domain("omega"), "array-like"],  # one width, or candidates
        "lam": [domain("lam"), "array-like"],
        "penalty": [StrOptions({"rkhs", "coef"})],
        "n_folds": [domain("n_folds")],
        "fit_intercept": ["boolean"],
        "solver": [StrOptions({"auto", "direct", "cg"})],
        "tol": [domain("tol")],
        "max_iter": [domain("max_iter")],
        "cg_start": [StrOptions({"subset", "zero"})],
    }

    def _candidates(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """The candidate widths and penalties, each checked (a declaration checks a list's
        type, not its values)."""
        return candidates("omega", self.omega), candidates("lam", self.lam)

    def _fit_pieces(self, Xd: Any, yd: Any, md: Any, rs: Any, widths: tuple[float, ...],
                    lams: tuple[float, ...], t0: float, n_classes: int | None = None) -> None:
        """Fit by the solver asked for (or chosen) on targets ``yd``; with ``n_classes`` = k,
        ``yd`` holds class codes and every read serves the k one-vs-rest problems, whose
        candidates are ranked on the mean over the classes of the held-out squared error."""
        choice = f"solver={self.solver!r}"
        if self.solver == "cg":
            self._fit_cg(Xd, yd, md, rs, widths, lams, t0, n_classes)
            return
        if self.solver == "auto":
            choice = self._auto_choice(rs, widths, lams)
            if choice == _PATH:
                fit_by_cg_path(self, Xd, yd, md, rs, widths[0], lams, t0,
                               choice=(f"solver='auto': a λ path of {len(lams)} candidates "
                                       f"with {rs.size:,} centers, at least "
                                       f"{AUTO_CG_PATH_CENTERS:,}"), n_classes=n_classes)
                return
            if choice is None:
                why = fit_by_cg(self, Xd, yd, md, rs, widths[0], lams[0], t0, probe=True,
                                n_classes=n_classes)
                if why is None:
                    return
                choice = why
        basis, clipped = reduced_basis(rs, widths[0], self.standardize,
                                       getattr(self, "feature_names_in_", None), self.kernel)
        many = len(widths) * len(lams) > 1
        seed = self.random_state if isinstance(self.random_state, int | np.integer) else 0
        ds = reduced_normal_equations_folds(Xd, yd, basis.centers, widths,
                                            n_folds=int(self.n_folds) if many else 1,
                                            seed=int(seed), offset=basis.offset,
                                            scale=basis.scale, clip=basis.clip, mask=md,
                                            kernel=basis.kernel, n_classes=n_classes)
        t_pass = time.perf_counter() - t0
        n_targets = 1 if n_classes is None else int(n_classes)
        m = basis.n_basis
        folds = list(range(int(ds.sizes["fold"])))
        scores = np.full((len(widths), len(lams)), np.nan)
        rkhs = self.penalty == "rkhs"
        penalties = [kernel_penalty_basis(basis.with_width(w).kernel(basis.centers,
                                                                     basis.centers))
                     if rkhs else None for w in widths]
        max_jitter = 0.0
        if many:
            for i in range(len(widths)):
                # each fold's system without λ, shared by the λ path: one factorization a λ
                train = [nystrom_system(fold_pieces(ds, i, [g for g in folds if g != f]),
                                        penalties[i], transform=rkhs,
                                        fit_intercept=self.fit_intercept) for f in folds]
                test = [fold_pieces(ds, i, f) for f in folds]
                for j, lam in enumerate(lams):
                    sse = 0.0
                    for f in folds:
                        sol = solve_system(train[f], lam, warn=False)
                        max_jitter = max(max_jitter, sol.jitter)
                        sse += heldout_sse(test[f], sol.coef, sol.intercept)
                    # the mean over the targets (classes) of the held-out squared error
                    scores[i, j] = sse / max(1, int(ds["n"].sum())) / n_targets
            i, j = np.unravel_index(int(np.nanargmin(scores)), scores.shape)
        else:
            i, j = 0, 0
        sol = nystrom_solve(fold_pieces(ds, int(i), folds), penalties[int(i)], lams[int(j)],
                            fit_intercept=self.fit_intercept, transform=rkhs)
        names = self._set_expansion(basis, sol.coef, sol.intercept, widths[int(i)],
                                    lams[int(j)], rs)
        self.cv_scores_ = scores
        self.n_iter_ = 1  # one factorization
        self.solver_ = "direct"
        counts = {k: int(v) for k, v in ds.attrs.items() if k.startswith("n_")
                  and k not in ("n_folds",)}
        self.fit_report_ = {
            **without_per_feature(counts),
            "n_nonfinite_by_feature": per_feature_counts(counts, names),
            "n_basis": m, "n_duplicates": rs.n_duplicates,
            "n_clipped_in_reduced_set_by_feature": clipped, "reads": 2,
            "omega": self.omega_, "lam": self.lam_, "jitter": sol.jitter,
            "max_cv_jitter": max_jitter, "n_candidates": scores.size,
            "solver": "direct", "solver_choice": choice,
            "seconds_pass": t_pass, "seconds_total": time.perf_counter() - t0,
        }


    def _auto_choice(self, rs: Any, widths: tuple[float, ...], lams: tuple[float, ...]
                     ) -> str | None:
        """Why ``solver="auto"`` takes the direct solve; None to try conjugate gradients (one
        width and one λ, ``penalty="rkhs"``, at least ``AUTO_CG_CENTERS`` centers); or
        ``_PATH`` for a λ path (one width, several λ, at least ``AUTO_CG_PATH_CENTERS``)."""
        if self.penalty != "rkhs":
            return "solver='auto': penalty='coef' (conjugate gradients take 'rkhs')"
        if len(widths) == 1 and len(lams) > 1 and rs.size >= AUTO_CG_PATH_CENTERS:
            return _PATH
        if len(widths) * len(lams) > 1:
            return (f"solver='auto': {len(widths)} × {len(lams)} candidates (the direct "
                    f"solve's one read serves them all)")
        if rs.size < AUTO_CG_CENTERS:
            return (f"solver='auto': {rs.size} centers, under {AUTO_CG_CENTERS:,} (the "
                    f"direct pass is the cheaper)")
        return None

    def _set_expansion(self, basis: Any, coef: np.ndarray, intercept: float | np.ndarray,
                       omega: float, lam: float, rs: Any) -> list[str]:
        """The fitted expansion (either solver; ``coef`` (m̃, k) and ``intercept`` (k,) for k
        classes); returns the feature names."""
        self.omega_, self.lam_ = omega, lam
        if np.ndim(coef) == 2:  # k classes: fitted_expansion takes one intercept (a float)
            self.expansion_ = KernelExpansion.from_parts(
                basis.centers, coef, intercept, float(omega), basis.offset, basis.scale,
                clip=basis.clip, dtype="float32", kernel=getattr(self, "kernel", "gaussian"))
        else:
            self.expansion_ = fitted_expansion(self, basis.centers, coef, intercept, omega,
                                               basis.offset, basis.scale, basis.clip)
        self.reduced_index_ = rs.index
        names = getattr(self, "feature_names_in_", None)
        return [f"f{k}" for k in range(self.n_features_in_)] if names is None else list(names)

    def _fit_cg(self, Xd: Any, yd: Any, md: Any, rs: Any, widths: tuple[float, ...],
                lams: tuple[float, ...], t0: float, n_classes: int | None = None) -> None:
        """``solver="cg"`` (:mod:`bigkern.models.reduced_kernel.nystrom_cg`): one omega,
        and one lam or a path of them chosen on a held-out fold."""
        if len(widths) > 1 or self.penalty != "rkhs":
            raise ValueError(
                f"solver='cg' fits one omega (and one lam, or a path of lam candidates) with "
                f"penalty='rkhs' (got {len(widths)} widths, penalty={self.penalty!r}): the "
                f"direct solver searches widths and takes penalty='coef'")
        if len(lams) > 1:
            fit_by_cg_path(self, Xd, yd, md, rs, widths[0], lams, t0, n_classes=n_classes)
        else:
            fit_by_cg(self, Xd, yd, md, rs, widths[0], lams[0], t0, n_classes=n_classes)


#: ``_auto_choice``'s answer for a λ path by conjugate gradients
_PATH = "path"

_PARAMS_DOC = """omega : float or sequence of float
        Kernel width ω (the Gaussian's is scikit-learn's ``gamma = 1 / (2 ω²)``), in
        standardized units when ``standardize``; a sequence is a set of candidates.
    kernel : str, Kernel or Kernel subclass, default "gaussian"
        The kernel: ``"gaussian"``, ``"laplacian"``, ``"matern32"``, ``"matern52"``
        or a :class:`~bigkern.kernels.Kernel`; its width is ``omega``.
    lam : float or sequence of float
        Ridge parameter λ > 0 (scikit-learn's ``alpha``: the penalty on a *sum* of
        squares); a sequence is a path of candidates.
    penalty : {"rkhs", "coef"}
        ``λ cᵀK(Ã, Ã)c`` (Nyström) or ``λ‖c‖²`` (RSVM-style).
    size, fraction : int or float, optional
        Centers m̃ (default 10% of the rows, in [2, 500]) or ``ceil(fraction · n)``.
    centers : {"uniform", "leverage"}
        How Ã is drawn: ``"uniform"`` (the default: every usable row as likely, within
        its class when stratified), or ``"leverage"``: in proportion to the rows'
        approximate ridge leverage scores ``diag(K (K + λI)⁻¹)`` (BLESS, bottom-up from a
        uniform set, two more reads of the rows;
        :mod:`~bigkern.reduce.reduced.leverage_scores`), at the model's ``lam`` and
        ``omega`` (the middle candidates), or a larger λ the scoring sets resolve;
        rare and sparse regions get more centers.
    standardize : bool
        Robust standardization (median, 10%/90% quantiles of a sample of up to 2,000
        usable rows drawn with Ã), clipped to ±5 robust σ, as ReducedSVC.
    n_folds : int
        Folds of the cross-validation of the candidates (rows hashed to folds by
        global row number; unused with one candidate).
    fit_intercept : bool
        Fit an unpenalized intercept.
    random_state : int, RandomState or None
        Seed of the reduced set (and, when an int, of the folds).
    solver : {"auto", "direct", "cg"}
        ``"direct"``: one read accumulates ``GᵀG`` (n·m̃² flops) and the system
        is factored, for every candidate. ``"cg"``: Falkon-style preconditioned
        conjugate gradients, for one ``omega`` with ``penalty="rkhs"``: the read of the
        right-hand side keeps the kernel blocks where they fit a share of the workers'
        memory (:mod:`bigkern.reduce.reduced.kept_blocks`), so that an iteration costs
        two matrix–vector products (2·n·m̃ multiply-adds); blocks past the budget are
        evaluated anew, one read of ``Gᵀ(G v)`` per iteration; several ``lam`` make a
        path, from the largest, each solve starting from the one before, scored on one
        held-out fold of ``n_folds`` (one read for all) and the best refitted on all
        rows from its path solution.
        ``"auto"`` (the default): ``"cg"`` where it wins — one candidate,
        ``penalty="rkhs"``, at least 1,000 centers, and the subset start's solve
        (``cg_start="subset"``) within twice ``tol``, so that the full solve
        converges; or one width and several ``lam`` with at least 2,000 centers (the
        λ path) — else ``"direct"``. At a small λ a single CG solve does not converge
        within ``max_iter`` and loses accuracy; the subset's solve shows that first,
        so a fallback costs only its read and solve, a small part of the direct fit.
        ``solver_`` and ``fit_report_["solver_choice"]`` say which ran and why.
    tol : float
        ``"cg"``: stop at this relative residual of the preconditioned system. The
        default, 2·10⁻², is where the accuracy stops moving: iterations past it lower
        the residual but leave the accuracy within a small fraction of a point of the
        direct solve's. Ask 10⁻⁷ (and more iterations) for the direct solve's
        coefficients.
    max_iter : int
        ``"cg"``: at most this many iterations over all rows, one read each (a
        ``ConvergenceWarning`` names the residual reached when they do not suffice);
        20 by default, Falkon's default too.
    cg_start : {"subset", "zero"}
        ``"cg"``: start from the solution on a random subset of about 10 rows per
        center held in memory (one more read; skipped when that is over half the
        rows), or from zero."""
