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
n·m̃·(d + 2) flops each where the direct pass costs n·m̃². ``solver="auto"``, the
default, takes CG where it wins: one candidate, at least 1,000 centers, and a
solve on the starting subset that says the full one will converge
(:mod:`bigkern.models.reduced_kernel._nystrom_fit`).

The classifier fits k > 2 classes as k one-vs-rest problems that share every read:
the pass sums ``GᵀG`` once with ``GᵀY`` for the k ±1 columns of ``Y`` (made in each
chunk from the class codes), one factorization solves the k right-hand sides, and
conjugate gradients advance the k recurrences in lockstep, each read computing
``Gᵀ(G V)`` for all of them
(:func:`~bigkern.solvers.conjugate_gradients_columns.preconditioned_cg_columns`).
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

import dask.array as da
import numpy as np
from sklearn.base import _fit_context

from bigkern.cluster.compute import task_threads
from bigkern.models._base import _KernelClassifier
from bigkern.models.calibrated_fit import CALIBRATION, ProbabilityMixin, calibrated_fit
from bigkern.models.reduced_kernel._nystrom_fit import (
    _PARAMS_DOC,
    _NystromFit,
    held_in_memory,
)
from bigkern.models.reduced_kernel._reduced_classes import (
    check_classes_present,
    class_codes,
    classes_from_draw,
)
from bigkern.models.reduced_kernel._reduced_parts import (
    centers_keywords,
    default_size,
    fit_labels,
    masked_targets,
    plus_minus,
    scale_sample_rows,
)
from bigkern.models.regression.kernel_regression import _KernelRegressor
from bigkern.reduce.passes import as_row_chunked
from bigkern.reduce.reduced.reduced_set import select_reduced_set

__all__ = ["NystromKernelRidge", "NystromKernelRidgeClassifier"]


class NystromKernelRidge(_NystromFit, _KernelRegressor):
    __doc__ = f"""Nyström kernel ridge regression on a reduced set, from one read of the data.

    Minimizes ``‖y − K(A, Ã) c − b‖² + λ P(c)`` over every usable row; see
    :mod:`bigkern.models.reduced_kernel.nystrom`. With several ``omega`` / ``lam`` candidates the
    same read gives every (width, fold)'s normal equations; the candidate with the
    least held-out squared error is refitted on all rows without another read.

    Parameters
    ----------
    {_PARAMS_DOC}

    Attributes
    ----------
    expansion_ : KernelExpansion
        The expansion ``f(x) = Σ_j coef_j k(z(x), c_j) + intercept``,
        ``z(x) = clip((x − offset) / scale, ±clip)`` (float64 kernel blocks).
    lam_ : float
        The λ used.
    cv_scores_ : ndarray, shape (n_widths, n_lams)
        Held-out mean squared error per candidate (NaN with one candidate).
    n_iter_ : int
        Conjugate-gradient iterations (``solver="cg"``); 1 for the direct solve.
    solver_ : str
        The solver that ran, ``"direct"`` or ``"cg"`` (``solver="auto"`` chooses).
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

    def __init__(self, omega: Any = 1.0, lam: Any = 1e-3, *, kernel: Any = "gaussian",
                 penalty: str = "rkhs",
                 size: int | None = None, fraction: float | None = None,
                 centers: str = "uniform",
                 standardize: bool = True, n_folds: int = 3, fit_intercept: bool = True,
                 random_state: Any = None, solver: str = "auto", tol: float = 2e-2,
                 max_iter: int = 20, cg_start: str = "subset") -> None:
        self.omega = omega
        self.lam = lam
        self.kernel = kernel
        self.penalty = penalty
        self.size = size
        self.fraction = fraction
        self.centers = centers
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
        arr, y, mask, held = held_in_memory(arr, y, mask)
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
                                scale_rows=scale_sample_rows(self),
                                **centers_keywords(self, _middle(widths), _middle(lams)))
        self._fit_pieces(Xd, yd.astype(np.float64), md, rs, widths, lams, t0)
        self.fit_report_.update(held)
        return self


class NystromKernelRidgeClassifier(ProbabilityMixin, _NystromFit, _KernelClassifier):
    __doc__ = f"""Nyström kernel ridge classification: the regressor on ±1 one-vs-rest targets.

    Two classes: fits :class:`NystromKernelRidge` to ``+1`` (``classes_[1]``) / ``−1``
    targets on a reduced set drawn per class (``stratified``); predicts the sign.
    k > 2 classes: fits the k one-vs-rest problems (``+1`` for ``classes_[j]``, ``−1``
    for the others) together — on the same centers, and for the price of one: each
    read of the rows evaluates the kernel once and sums ``GᵀG`` (or, with
    ``solver="cg"``, ``Gᵀ(G V)`` for the k columns of ``V``) once with ``GᵀY`` for
    the k columns of ``Y``; the direct solve factors one matrix for k right-hand
    sides. ``predict`` returns the class of the largest decision value. The
    candidates (``omega``, ``lam``) are ranked by the held-out squared error of the
    ±1 targets (what the one read provides), as scikit-learn's ``RidgeClassifierCV``
    does; with k classes, by its mean over the classes.

    Parameters
    ----------
    {_PARAMS_DOC}
    stratified : bool
        Draw the centers within each class, in proportion (Lee & Huang's Remark 2;
        every class gets one center at least).
    calibration : {None, "sigmoid", "isotonic"}, default None
        Probabilities: None gives none (no ``predict_proba``); "sigmoid" (Platt) or
        "isotonic" fit a calibrator of the decision values on a share of the rows held
        out of the fit (:mod:`bigkern.models.calibrated_fit`).

    Attributes
    ----------
    classes_ : ndarray (k,)
        The labels, sorted (two: negative, positive).
    expansion_ : KernelExpansion
        The decision function: one column for two classes (> 0 → ``classes_[1]``), k
        columns for k > 2 (``coef`` (m̃, k), ``intercept`` (k,)).
    lam_, omega_, cv_scores_, n_iter_, solver_, reduced_index_, fit_report_
        As for :class:`NystromKernelRidge`. With ``solver="cg"`` and k classes,
        ``n_iter_`` is the largest of the classes' iterations (each read serves all
        those still running) and ``fit_report_`` gives each class's
        (``n_iter_by_class``, ``residual_by_class``).

    Notes
    -----
    ``decision_function`` returns (n,) for two classes and (n, k) for k > 2, column
    ``j`` the one-vs-rest value of ``classes_[j]``. Each value is a least-squares fit
    of a ±1 target: on that scale it estimates ``2 P(class | x) − 1`` (a regression of
    the indicator), but it is neither clipped to [−1, 1] nor normalized across the
    columns (they sum to about ``2 − k``), and the ridge penalty shrinks it towards
    the class's mean target. Rank with it, or calibrate it for probabilities.

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

    Three classes, one column of decision values each:

    >>> rings = np.digitize((X**2).sum(axis=1), [0.7, 2.0])  # 0, 1, 2 from the centre out
    >>> labels = np.array(["inner", "middle", "outer"])[rings]
    >>> model = NystromKernelRidgeClassifier(omega=1.0, lam=1e-3, size=40, random_state=0)
    >>> model = model.fit(X, labels)
    >>> model.classes_.tolist(), model.decision_function(X).shape
    (['inner', 'middle', 'outer'], (300, 3))
    >>> bool(model.score(X, labels) > 0.85)
    True
    """

    _allow_nan = True
    _binary_only = False
    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        **_NystromFit._parameter_constraints,
        "stratified": ["boolean"],
        "calibration": CALIBRATION,
    }

    def __init__(self, omega: Any = 1.0, lam: Any = 1e-3, *, kernel: Any = "gaussian",
                 penalty: str = "rkhs",
                 size: int | None = None, fraction: float | None = None,
                 stratified: bool = True, centers: str = "uniform",
                 standardize: bool = True, n_folds: int = 3,
                 fit_intercept: bool = True, random_state: Any = None,
                 solver: str = "auto", tol: float = 2e-2, max_iter: int = 20,
                 cg_start: str = "subset", calibration: str | None = None) -> None:
        self.calibration = calibration
        self.omega = omega
        self.lam = lam
        self.kernel = kernel
        self.penalty = penalty
        self.size = size
        self.fraction = fraction
        self.stratified = stratified
        self.centers = centers
        self.standardize = standardize
        self.n_folds = n_folds
        self.fit_intercept = fit_intercept
        self.random_state = random_state
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.cg_start = cg_start

    @_fit_context(prefer_skip_nested_validation=True)
    @calibrated_fit
    def fit(self, X: Any, y: Any, *, mask: Any = None) -> NystromKernelRidgeClassifier:
        """Fit on ``X`` (n, d) and labels ``y`` of two classes or more (any dtype; dask stays
        lazy: its classes are found by the read that draws the centers).

        ``mask`` (n,) of bool, optional, keeps the rows to fit on (e.g. the
        labelled pixels); the others are counted (``n_masked``), their labels
        never looked at.

        Returns
        -------
        self

        Raises
        ------
        LabelError
            One class only, or a class with no usable row (all its rows masked out or
            with a non-finite feature), named.
        """
        t0 = time.perf_counter()
        widths, lams = self._candidates()
        arr, y = self._fit_input(X, y)
        arr, y, mask, held = held_in_memory(arr, y, mask)
        labels, lazy = fit_labels(self, y, mask)
        Xd, yd, md = as_row_chunked(arr, labels, mask, min_chunks=task_threads())
        n = int(Xd.shape[0])
        size = default_size(n, self.size, self.fraction)
        if self.size is None and self.fraction is None and not lazy:
            size = min(n, max(size, len(self.classes_)))  # a center per class at least
        rs = select_reduced_set(Xd, yd, size=size,
                                fraction=self.fraction, stratified=self.stratified,
                                random_state=self.random_state, mask=md,
                                features=getattr(self, "feature_names_in_", None),
                                scale_rows=scale_sample_rows(self),
                                **centers_keywords(self, _middle(widths), _middle(lams)))
        if lazy:
            classes_from_draw(self, rs)
        elif rs.classes is not None:
            check_classes_present(self, rs.classes, len(self.classes_))
        if len(self.classes_) == 2:
            ypm = yd.map_blocks(plus_minus, positive=self.classes_[1] if lazy else 1,
                                dtype=np.float64)
            self._fit_pieces(Xd, ypm, md, rs, widths, lams, t0)
            self.fit_report_.update(held)
            return self
        codes = yd.map_blocks(class_codes, classes=self.classes_, dtype=np.float64) \
            if lazy else yd
        self._fit_pieces(Xd, codes, md, rs, widths, lams, t0, n_classes=len(self.classes_))
        self.fit_report_.update(held)
        return self


def _middle(candidates: tuple[float, ...]) -> float:
    """The middle of sorted candidates (the leverage scores' width or penalty)."""
    return sorted(candidates)[len(candidates) // 2]
