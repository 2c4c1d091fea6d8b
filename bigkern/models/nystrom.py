"""Nyström kernel ridge regression and classification on chunked data, in one read.

A uniform random reduced set Ã (stratified per class for the classifier) is
drawn in one read (:func:`bigkern.reduce.select_reduced_set`); a second read
gives, for every candidate width ω and every cross-validation fold, the reduced
normal equations ``GᵀG``, ``Gᵀy``, ``Gᵀ1``, ``yᵀy``, ``Σy``, ``n`` of
``G = K(A, Ã)`` (:func:`bigkern.reduce.reduced_normal_equations_folds`, one BLAS
``syrk`` per block, never forming ``G``). Then, on one node,
:func:`bigkern.solvers.nystrom.nystrom_solve` solves::

    (GᵀG + λ P) c = Gᵀy   (centered, with an unpenalized intercept),
    P = K(Ã, Ã)  ("rkhs": Nyström, = scikit-learn Nystroem + Ridge(alpha=λ))
    P = I        ("coef": the RSVM-style penalty λ‖c‖²)

for every (ω, λ) candidate on all folds but one, scores it by the held-out
squared error, and refits the best on all rows — all from the same read.

``solver="cg"`` solves the same system for one (ω, λ) without ``GᵀG``: by
conjugate gradients preconditioned as Falkon is, from ``K(Ã, Ã)`` alone
(:mod:`bigkern.solvers.conjugate_gradients`), one read per iteration of the
products ``Gᵀ(G v)`` (:func:`bigkern.reduce.reduced.products.kernel_products`),
n·m̃·(d + 2) flops each where the direct pass costs n·m̃².
"""

from __future__ import annotations

import time
from numbers import Integral, Real
from typing import Any, ClassVar

import dask.array as da
import numpy as np
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval, StrOptions

from bigkern.cluster.compute import task_threads
from bigkern.kernels import GaussianExpansion, gaussian_kernel
from bigkern.models._base import _KernelClassifier
from bigkern.models._constraints import POSITIVE, positive_candidates
from bigkern.models._reduced_parts import (
    REDUCED_SET_CONSTRAINTS,
    default_size,
    expansion_regressor_dataset,
    fit_labels,
    masked_targets,
    plus_minus,
    reduced_basis,
    scale_sample_rows,
)
from bigkern.models.kernel_regression import _KernelRegressor
from bigkern.models.nystrom_cg import fit_by_cg
from bigkern.models.reduced import ReducedSVC
from bigkern.reduce.passes import as_row_chunked, per_feature_counts, without_per_feature
from bigkern.reduce.reduced.folds import fold_pieces, reduced_normal_equations_folds
from bigkern.reduce.reduced.reduced_set import select_reduced_set
from bigkern.solvers.nystrom import heldout_sse, kernel_penalty_basis, nystrom_solve

__all__ = ["NystromKernelRidge", "NystromKernelRidgeClassifier"]


class _NystromFit:
    """The fit shared by the regressor and the classifier (targets given as a dask array)."""

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        **REDUCED_SET_CONSTRAINTS,
        "omega": [POSITIVE, "array-like"],  # one width, or candidates
        "lam": [POSITIVE, "array-like"],
        "penalty": [StrOptions({"rkhs", "coef"})],
        "n_folds": [Interval(Integral, 2, None, closed="left")],
        "fit_intercept": ["boolean"],
        "solver": [StrOptions({"direct", "cg"})],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "cg_start": [StrOptions({"subset", "zero"})],
    }

    def _candidates(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """The candidate widths and penalties, each checked (a declaration checks a list's
        type, not its values)."""
        return positive_candidates("omega", self.omega), positive_candidates("lam", self.lam)

    def _fit_pieces(self, Xd: Any, yd: Any, md: Any, rs: Any, widths: tuple[float, ...],
                    lams: tuple[float, ...], t0: float) -> None:
        if self.solver == "cg":
            self._fit_cg(Xd, yd, md, rs, widths, lams, t0)
            return
        basis, clipped = reduced_basis(rs, widths[0], self.standardize,
                                       getattr(self, "feature_names_in_", None))
        many = len(widths) * len(lams) > 1
        seed = self.random_state if isinstance(self.random_state, int | np.integer) else 0
        ds = reduced_normal_equations_folds(Xd, yd, basis.centers, widths,
                                            n_folds=int(self.n_folds) if many else 1,
                                            seed=int(seed), offset=basis.offset,
                                            scale=basis.scale, clip=basis.clip, mask=md)
        t_pass = time.perf_counter() - t0
        m = basis.n_basis
        folds = list(range(int(ds.sizes["fold"])))
        scores = np.full((len(widths), len(lams)), np.nan)
        kernel = self.penalty == "rkhs"
        penalties = [kernel_penalty_basis(gaussian_kernel(basis.centers, basis.centers, w))
                     if kernel else None for w in widths]
        max_jitter = 0.0
        if many:
            for i in range(len(widths)):
                train = [fold_pieces(ds, i, [g for g in folds if g != f]) for f in folds]
                test = [fold_pieces(ds, i, f) for f in folds]
                for j, lam in enumerate(lams):
                    sse = 0.0
                    for f in folds:
                        sol = nystrom_solve(train[f], penalties[i], lam, transform=kernel,
                                            fit_intercept=self.fit_intercept, warn=False)
                        max_jitter = max(max_jitter, sol.jitter)
                        sse += heldout_sse(test[f], sol.coef, sol.intercept)
                    scores[i, j] = sse / max(1, int(ds["n"].sum()))
            i, j = np.unravel_index(int(np.nanargmin(scores)), scores.shape)
        else:
            i, j = 0, 0
        sol = nystrom_solve(fold_pieces(ds, int(i), folds), penalties[int(i)], lams[int(j)],
                            fit_intercept=self.fit_intercept, transform=kernel)
        names = self._set_expansion(basis, sol.coef, sol.intercept, widths[int(i)],
                                    lams[int(j)], rs)
        self.cv_scores_ = scores
        self.n_iter_ = 1  # one factorization
        counts = {k: int(v) for k, v in ds.attrs.items() if k.startswith("n_")
                  and k not in ("n_folds",)}
        self.fit_report_ = {
            **without_per_feature(counts),
            "n_nonfinite_by_feature": per_feature_counts(counts, names),
            "n_basis": m, "n_duplicates": rs.n_duplicates,
            "n_clipped_in_reduced_set_by_feature": clipped, "reads": 2,
            "omega": self.omega_, "lam": self.lam_, "jitter": sol.jitter,
            "max_cv_jitter": max_jitter, "n_candidates": scores.size,
            "seconds_pass": t_pass, "seconds_total": time.perf_counter() - t0,
        }


    def _set_expansion(self, basis: Any, coef: np.ndarray, intercept: float, omega: float,
                       lam: float, rs: Any) -> list[str]:
        """The fitted expansion's attributes (either solver); returns the feature names."""
        self.centers_, self.coef_, self.intercept_ = basis.centers, coef, intercept
        self.omega_, self.lam_ = omega, lam
        self.offset_, self.scale_, self.clip_ = basis.offset, basis.scale, basis.clip
        self.reduced_index_ = rs.index
        names = getattr(self, "feature_names_in_", None)
        return [f"f{k}" for k in range(self.n_features_in_)] if names is None else list(names)

    def _fit_cg(self, Xd: Any, yd: Any, md: Any, rs: Any, widths: tuple[float, ...],
                lams: tuple[float, ...], t0: float) -> None:
        """``solver="cg"`` (:mod:`bigkern.models.nystrom_cg`), for one omega and lam."""
        if len(widths) * len(lams) > 1 or self.penalty != "rkhs":
            raise ValueError(
                f"solver='cg' fits one omega and one lam with penalty='rkhs' (got "
                f"{len(widths)} × {len(lams)} candidates, penalty={self.penalty!r}): the "
                f"direct solver searches candidates and takes penalty='coef'")
        fit_by_cg(self, Xd, yd, md, rs, widths[0], lams[0], t0)


_PARAMS_DOC = """omega : float or sequence of float
        Gaussian width ω (scikit-learn's ``gamma = 1 / (2 ω²)``), in standardized
        units when ``standardize``; a sequence is a set of candidates.
    lam : float or sequence of float
        Ridge parameter λ > 0 (scikit-learn's ``alpha``: the penalty on a *sum* of
        squares); a sequence is a path of candidates.
    penalty : {"rkhs", "coef"}
        ``λ cᵀK(Ã, Ã)c`` (Nyström) or ``λ‖c‖²`` (RSVM-style).
    size, fraction : int or float, optional
        Centers m̃ (default 10% of the rows, in [2, 500]) or ``ceil(fraction · n)``.
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
    solver : {"direct", "cg"}
        ``"direct"``: one read accumulates ``GᵀG`` (n·m̃² flops) and the system
        is factored, for every candidate. ``"cg"``: Falkon-style preconditioned
        conjugate gradients, one read of ``Gᵀ(G v)`` (n·m̃·(d + 2) flops) per
        iteration, for one ``omega`` and ``lam`` with ``penalty="rkhs"``.
    tol : float
        ``"cg"``: stop at this relative residual of the preconditioned system. The
        default, 2·10⁻², is where the accuracy stops moving: on 10⁶ MISR-like rows
        (m̃ = 1,000, λ = 1; ``benchmarks/results/reduced_nystrom_iterations.txt``) CG
        reached residuals 0.07 / 0.038 / 0.018 / 0.013 in 5 / 10 / 20 / 40 iterations
        from the subset start, at −0.23 / −0.11 / −0.06 / +0.05 points of the direct
        solve's accuracy. Ask 10⁻⁷ (and more iterations) for the direct solve's
        coefficients.
    max_iter : int
        ``"cg"``: at most this many iterations over all rows, one read each (a
        ``ConvergenceWarning`` names the residual reached when they do not suffice);
        20 by default, Falkon's default too.
    cg_start : {"subset", "zero"}
        ``"cg"``: start from the solution on a random subset of about 10 rows per
        center held in memory (one more read; skipped when that is over half the
        rows), or from zero."""


class NystromKernelRidge(_NystromFit, _KernelRegressor):
    __doc__ = f"""Nyström kernel ridge regression on a reduced set, from one read of the data.

    Minimizes ``‖y − K(A, Ã) c − b‖² + λ P(c)`` over every usable row; see
    :mod:`bigkern.models.nystrom`. With several ``omega`` / ``lam`` candidates the
    same read gives every (width, fold)'s normal equations; the candidate with the
    least held-out squared error is refitted on all rows without another read.

    Parameters
    ----------
    {_PARAMS_DOC}

    Attributes
    ----------
    centers_, coef_, intercept_, omega_, offset_, scale_, clip_
        The expansion ``f(x) = Σ_j coef_j k(z(x), c_j) + intercept``,
        ``z(x) = clip((x − offset_) / scale_, ±clip_)`` (``expansion_``).
    lam_ : float
        The λ used.
    cv_scores_ : ndarray, shape (n_widths, n_lams)
        Held-out mean squared error per candidate (NaN with one candidate).
    n_iter_ : int
        Conjugate-gradient iterations (``solver="cg"``); 1 for the direct solve.
    reduced_index_ : ndarray of int
        Global row numbers of the centers.
    fit_report_ : dict
        Row counts, ``n_basis``, ``n_clipped_in_reduced_set_by_feature`` (values of Ã
        beyond the clip, for each feature with any), ``jitter``, chosen
        ``omega``/``lam``, timings.

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern import NystromKernelRidge
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(0, 1, size=(300, 1))
    >>> truth = np.sin(2 * np.pi * X[:, 0])
    >>> y = truth + 0.1 * rng.standard_normal(300)
    >>> model = NystromKernelRidge(omega=[0.5, 1.0], lam=[1e-4, 1e-2], size=30, random_state=0)
    >>> model = model.fit(X, y)  # one read gives every candidate's cross-validation
    >>> model.cv_scores_.shape, model.n_basis_
    ((2, 2), 30)
    >>> bool(np.abs(model.predict(X) - truth).mean() < 0.1)  # close to the noiseless curve
    True
    """

    _allow_nan = True

    def __init__(self, omega: Any = 1.0, lam: Any = 1e-3, *, penalty: str = "rkhs",
                 size: int | None = None, fraction: float | None = None,
                 standardize: bool = True, n_folds: int = 3, fit_intercept: bool = True,
                 random_state: Any = None, solver: str = "direct", tol: float = 2e-2,
                 max_iter: int = 20, cg_start: str = "subset") -> None:
        self.omega = omega
        self.lam = lam
        self.penalty = penalty
        self.size = size
        self.fraction = fraction
        self.standardize = standardize
        self.n_folds = n_folds
        self.fit_intercept = fit_intercept
        self.random_state = random_state
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.cg_start = cg_start

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: Any, y: Any, *, mask: Any = None) -> NystromKernelRidge:
        """Fit on ``X`` (n, d) — numpy, dask or a DataArray — and real targets ``y``.

        ``mask`` (n,) of bool, optional, keeps the rows to fit on; the others are
        left out and counted (``n_masked``), their targets never looked at.

        Returns
        -------
        self
        """
        t0 = time.perf_counter()
        widths, lams = self._candidates()
        arr, y = self._fit_input(X, masked_targets(y, mask), y_numeric=True)
        if not isinstance(y, da.Array):
            y = np.asarray(y, dtype=np.float64)
        Xd, yd, md = as_row_chunked(arr, y, mask, min_chunks=task_threads())
        n = int(Xd.shape[0])
        if n < 2:
            raise ValueError(f"{type(self).__name__} needs at least 2 samples to fit; got "
                             f"n_samples={n}")
        rs = select_reduced_set(Xd, None, size=default_size(n, self.size, self.fraction),
                                fraction=self.fraction, random_state=self.random_state,
                                mask=md, features=getattr(self, "feature_names_in_", None),
                                scale_rows=scale_sample_rows(self))
        self._fit_pieces(Xd, yd.astype(np.float64), md, rs, widths, lams, t0)
        return self

    def to_dataset(self) -> Any:
        """The fitted model as a small :class:`xarray.Dataset` (the OHT/RM layout)."""
        return expansion_regressor_dataset(self, widths=self.omega_, lam_=float(self.lam_))


class NystromKernelRidgeClassifier(_NystromFit, _KernelClassifier):
    __doc__ = f"""Nyström kernel ridge classification: the regressor on ±1 targets.

    Fits :class:`NystromKernelRidge` to ``+1`` (``classes_[1]``) / ``−1`` targets
    on a reduced set drawn per class (``stratified``); predicts the sign. The
    candidates are ranked by held-out squared error of the ±1 targets (what the
    one read provides), as scikit-learn's ``RidgeClassifierCV`` does.

    Parameters
    ----------
    {_PARAMS_DOC}
    stratified : bool
        Draw the centers within each class, in proportion (Lee & Huang's Remark 2).

    Attributes
    ----------
    classes_ : ndarray (2,)
        (negative, positive) labels.
    expansion_ : GaussianExpansion
        The decision function (> 0 → ``classes_[1]``).
    lam_, omega_, cv_scores_, n_iter_, reduced_index_, fit_report_
        As for :class:`NystromKernelRidge`.

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern import NystromKernelRidgeClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 2))
    >>> y = np.where((X**2).sum(axis=1) < 1.5, 1, -1)  # cloud (1) inside a circle, clear (-1)
    >>> model = NystromKernelRidgeClassifier(omega=1.0, lam=1e-3, size=40, random_state=0)
    >>> model = model.fit(X, y)
    >>> model.expansion_.n_basis, model.classes_.tolist()
    (40, [-1, 1])
    >>> bool(model.score(X, y) > 0.9)
    True
    """

    _allow_nan = True
    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        **_NystromFit._parameter_constraints,
        "stratified": ["boolean"],
    }

    def __init__(self, omega: Any = 1.0, lam: Any = 1e-3, *, penalty: str = "rkhs",
                 size: int | None = None, fraction: float | None = None,
                 stratified: bool = True, standardize: bool = True, n_folds: int = 3,
                 fit_intercept: bool = True, random_state: Any = None,
                 solver: str = "direct", tol: float = 2e-2, max_iter: int = 20,
                 cg_start: str = "subset") -> None:
        self.omega = omega
        self.lam = lam
        self.penalty = penalty
        self.size = size
        self.fraction = fraction
        self.stratified = stratified
        self.standardize = standardize
        self.n_folds = n_folds
        self.fit_intercept = fit_intercept
        self.random_state = random_state
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.cg_start = cg_start

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: Any, y: Any, *, mask: Any = None) -> NystromKernelRidgeClassifier:
        """Fit on ``X`` (n, d) and two-class labels ``y`` (any dtype; dask stays lazy).

        ``mask`` (n,) of bool, optional, keeps the rows to fit on (e.g. the
        labelled pixels); the others are counted (``n_masked``), their labels
        never looked at.

        Returns
        -------
        self
        """
        t0 = time.perf_counter()
        widths, lams = self._candidates()
        arr, y = self._fit_input(X, y)
        labels, lazy = fit_labels(self, y, mask)
        Xd, yd, md = as_row_chunked(arr, labels, mask, min_chunks=task_threads())
        n = int(Xd.shape[0])
        rs = select_reduced_set(Xd, yd, size=default_size(n, self.size, self.fraction),
                                fraction=self.fraction, stratified=self.stratified,
                                random_state=self.random_state, mask=md,
                                features=getattr(self, "feature_names_in_", None),
                                scale_rows=scale_sample_rows(self))
        if lazy:
            ReducedSVC._classes_from_draw(self, rs)  # the same two-class rule and errors
        ypm = yd.map_blocks(plus_minus, positive=self.classes_[1] if lazy else 1,
                            dtype=np.float64)
        self._fit_pieces(Xd, ypm, md, rs, widths, lams, t0)
        self.expansion_ = GaussianExpansion.from_parts(self.centers_, self.coef_,
                                                       float(self.intercept_), self.omega_,
                                                       self.offset_, self.scale_,
                                                       clip=self.clip_)
        return self

