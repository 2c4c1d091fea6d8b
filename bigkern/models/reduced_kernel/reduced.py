"""The reduced SVMs (Lee & Huang; Lee & Mangasarian's RSVM) on chunked data.

:class:`ReducedSVC` draws a stratified uniform reduced set Ã in one read
(:func:`bigkern.reduce.reduced.reduced_set.select_reduced_set`), then minimizes a
squared-hinge SVM on the rectangular kernel ``K(A, Ã)`` over *every* usable row:
Lee & Huang's problem (5), the smooth hinge, by Newton–Armijo with one distributed
read of the data per Newton iteration (:mod:`bigkern.reduce.reduced.svm`,
:mod:`bigkern.solvers.newton.smooth_svm`); or the squared hinge itself by the finite
Newton method (:mod:`bigkern.solvers.newton.finite_newton`), in memory when the kernel
rows fit. :class:`ReducedSVR` is the smooth ε-insensitive regressor on the same
machinery (:mod:`bigkern.models.reduced_kernel.reduced_svr`). The fitted model is the Gaussian
expansion ``f(x) = Σ_j v_j k(z(x), ã_j) − γ`` over the m̃ centers.

k > 2 classes are fitted one-vs-rest on one reduced set Ã (drawn stratified over the k
classes): the k problems share their kernel rows, and each read of the rows serves all
of them (:mod:`bigkern.models.reduced_kernel._reduced_classes`); the model is one
expansion with k coefficient columns.
"""

from __future__ import annotations

import functools
import time
from typing import Any, ClassVar

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils._param_validation import StrOptions

from bigkern.cluster.compute import task_threads
from bigkern.errors import LabelError
from bigkern.kernels import KernelExpansion
from bigkern.models._base import _KernelClassifier
from bigkern.models._constraints import domain
from bigkern.models.calibrated_fit import CALIBRATION, ProbabilityMixin, calibrated_fit
from bigkern.models.reduced_kernel._newton_cg_fit import (
    choose_solver,
    draw_sample,
    held_itemsize,
    newton_cg_fit,
)
from bigkern.models.reduced_kernel._reduced_classes import (
    check_classes_present,
    class_codes,
    classes_fit,
    classes_from_draw,
    newton_cg_classes_fit,
)
from bigkern.models.reduced_kernel._reduced_parts import (
    NEWTON_CONSTRAINTS,
    SMOOTH_IN_MEMORY_BYTES,
    centers_keywords,
    default_size,
    fit_labels,
    fit_report,
    kernel_rows_fit_in_memory,
    newton_fit,
    numpy_mask,
    plus_minus,
    reduced_basis,
    scale_sample_rows,
    squared_hinge_fit,
)
from bigkern.reduce.passes import as_row_chunked
from bigkern.reduce.reduced.reduced_set import select_reduced_set
from bigkern.solvers.newton.smooth_losses import SmoothHinge, SquaredHinge

__all__ = ["DEFAULT_SMOOTHING", "ReducedSVC"]

#: The smoothing α of Lee & Huang's plus function when none is given.
DEFAULT_SMOOTHING = 5.0


class ReducedSVC(ProbabilityMixin, _KernelClassifier):
    """Reduced support vector classifier (RSVM, Lee & Huang's problem (5)).

    Minimizes over ``u = (v, γ)``::

        C/2 Σ_i h(1 − y_i (K(A_i, Ã) v − γ))² + ½ (‖v‖² + γ²)

    on every usable row ``A_i`` of the data, with ``y_i = ±1`` and a reduced set Ã
    drawn uniformly within each class. ``h`` is the plus function ``(·)₊``
    (``loss="squared_hinge"``) or its smooth approximation ``p(·, α)`` of (6)
    (``loss="smooth_hinge"``, Lee & Huang's problem (5)).

    **k classes** (any number ≥ 2, of any dtype). Two classes are the problem above,
    with ``y_i = +1`` on ``classes_[1]``. k > 2 classes are k one-vs-rest problems,
    problem ``j`` with ``y_i = +1`` on ``classes_[j]`` and −1 elsewhere, all on the same
    Ã (drawn stratified over the k classes, in proportion to their sizes). They are
    solved together: each Newton pass over the rows forms each kernel block once and
    adds it to the gradient and Hessian of every problem still running (each problem
    stops when it has converged; the passes of a fit are those of its slowest class,
    each still one read of the data), and each problem's Hessian sums only the rows
    near its margin (in one-vs-rest most rows are far outside it). The solutions are
    those of k separate binary fits on that Ã.

    - The smooth hinge is fitted by Newton–Armijo: one read of the data per
      iteration (the Armijo step sizes are batched into that read; see
      :mod:`bigkern.solvers.newton.smooth_svm`), every row adding to the Hessian.
    - The squared hinge is fitted by the finite Newton method
      (:mod:`bigkern.solvers.newton.finite_newton`): only the rows inside the margin add to
      the Hessian. A numpy input whose ``n × (m̃ + 1)`` kernel rows fit in
      ``bigkern.in_memory_kernel_bytes`` is solved in memory (the Hessian updated by
      the rows that enter or leave the margin, exact line search, and for large fits a
      warm start from a tenth of the rows); other input takes one distributed read per step.

    Parameters
    ----------
    omega : float
        Gaussian width ω (scikit-learn's ``gamma = 1 / (2 ω²)``), in standardized
        units when ``standardize``.
    kernel : str, Kernel or Kernel subclass, default "gaussian"
        The kernel: ``"gaussian"``, ``"laplacian"``, ``"matern32"``, ``"matern52"``
        or a :class:`~bigkern.kernels.Kernel`; its width is ``omega``.
    C : float
        Weight of the data term (the paper's ν); note it multiplies a *sum* over all
        rows. Lee & Huang suggest a larger value than for a full-kernel SVM.
    loss : {"smooth_hinge", "squared_hinge"}
        The data term: Lee & Huang's smooth squared hinge (the default, their Table 1),
        or the squared hinge ``½ (1 − y f)₊²`` (as scikit-learn's
        ``LinearSVC(loss="squared_hinge")``), which its finite Newton fit solves with
        less work per step.
    smoothing : float, optional
        Smoothing α of ``p`` (``p → (·)₊`` as α → ∞) for ``loss="smooth_hinge"``;
        None means 5. The squared hinge has no smoothing: giving one with it is an
        error.
    size : int, optional
        Centers m̃ to draw. Default (with ``fraction`` None too): 10% of the rows,
        at least 2 and at most 500 (``DEFAULT_MAX_SIZE``; a pass costs ``n·m̃²``).
    fraction : float, optional
        Instead of ``size``: ``ceil(fraction · n)`` centers.
    stratified : bool
        Draw within each class, in proportion to the class sizes (Remark 2).
    centers : {"uniform", "leverage"}
        How Ã is drawn: ``"uniform"`` (the default: every usable row as likely, within
        its class when stratified), or ``"leverage"``: in proportion to the rows'
        approximate ridge leverage scores ``diag(K (K + λI)⁻¹)`` (BLESS, bottom-up from a
        uniform set, two more reads of the rows;
        :mod:`~bigkern.reduce.reduced.leverage_scores`), at ``λ = 1 / C`` (the
        penalty on a sum of squares that ``C`` makes), or a larger λ the scoring sets
        resolve; rare and sparse regions get more centers.
    standardize : bool
        Center each feature on its median, divide by a robust σ (10%/90% quantiles;
        both from a uniform sample of up to 2,000 usable rows, drawn in the read that
        draws Ã) and clip to ±5 robust σ
        (:data:`~bigkern.features.scaling.CLIP_SCALED`), so that no heavy-tailed
        feature decides the kernel's distances alone.
    tol : float
        Stop when ``‖∇F‖ ≤ tol · ‖∇F(0)‖``.
    max_iter : int
        Most Newton iterations.
    hessian : {"float64", "float32"}
        Precision of the Hessian's products (``syrk``, ``n·m̃²`` flops per pass, most of
        the work). ``"float32"`` runs them on float32 copies of the scaled kernel
        blocks (twice the values per vector instruction; a fit gains less, as the rest
        of its work is unchanged) and switches to float64 for the last iterations; the
        gradient, hence the solution, stays float64. Its fits then agree across
        chunkings to the convergence tolerance rather than to round-off, so the default
        is ``"float64"``.
    solver : {"auto", "newton", "newton-cg"}
        ``"newton"``: each Newton step forms the Hessian ``I + C Σ ℓ'' a aᵀ`` (``n·m̃²``
        flops a pass) and factors it (above). ``"newton-cg"``: each Newton
        step is solved inexactly by conjugate gradients on products ``Σ ℓ'' a (a·p)``
        (``2·n·m̃`` flops, over the rows inside the margin for the squared hinge),
        preconditioned from a uniform sample of the rows (Falkon's preconditioner),
        with an Armijo line search (:mod:`bigkern.solvers.newton_cg`); numpy rows whose
        kernel rows fit ``bigkern.in_memory_kernel_bytes`` (float32 rows for float32
        data) are held in memory, others are read once per CG iteration. ``"auto"``:
        ``"newton-cg"`` from 3,000 centers with the kernel rows held (10,000 over chunked
        data, where each CG iteration is a read; for k > 2 classes on held rows from
        ``2/k`` of 3,000 for the squared hinge and ``4/k`` for the smooth one, at least
        1,000), else ``"newton"``.
        ``fit_report_["solver_choice"]`` says which ran and why. k > 2 classes: on held
        kernel rows, as two (Newton–CG solves the k one-vs-rest problems side by side,
        a core each); over chunked data by the lockstep Newton method, one read a pass for
        all k (``"newton-cg"`` there is a ValueError).
    random_state : int, RandomState or None
        Seed of the reduced set (the same seed gives the same Ã, and the same model,
        for any chunking and number of workers), and of the rows ``calibration``
        holds out.
    calibration : {None, "sigmoid", "isotonic"}, default None
        Probabilities: None gives none (no ``predict_proba``); "sigmoid" (Platt) or
        "isotonic" fit a calibrator of the decision values on a share of the rows held
        out of the fit (:mod:`bigkern.models.calibrated_fit`).

    Attributes
    ----------
    classes_ : ndarray (k,)
        The labels, sorted (two classes: negative, positive).
    expansion_ : KernelExpansion
        Centers Ã (standardized), coefficients ``v`` (m̃,), intercept ``−γ``; for k > 2
        classes, coefficients (m̃, k) and intercepts (k,), column j class ``classes_[j]``'s.
    reduced_index_ : ndarray of int
        Global row numbers of the centers.
    fit_report_ : dict
        ``solver`` (how it was fitted), ``solver_choice`` (``solver="auto"``'s reason), for
        Newton–CG ``cg_iterations`` and ``cg_residuals`` per Newton step, ``iterations``,
        ``passes`` (Newton reads; products over all rows in memory), ``reads`` (with the
        draw of Ã). For k > 2 classes: ``iterations`` the most of any class, ``passes`` the
        reads their lockstep took, ``by_class`` each class's ``iterations``, ``passes``,
        ``converged`` and ``grad_norm``; ``converged`` all of them, ``grad_norm`` and
        ``grad_norm0`` the least converged class's. Also ``backtracked``, ``steps`` (for k >
        2, one list per class), ``grad_norm``, ``grad_norm0``, ``converged``, ``objective``,
        ``n_basis``, ``n_duplicates``, row counts (``n_rows``, ``n_valid``, ``n_absent``,
        ``n_nonfinite``, ``n_nonfinite_y``, ``n_nonfinite_by_feature``),
        ``n_clipped_in_reduced_set_by_feature`` (values of Ã beyond the clip, for each
        feature with any), timings. Not saved with the model.

    Notes
    -----
    Rows with a non-finite feature are left out of the fit and counted (over
    ``bigkern.max_nonfinite_fraction`` of the present rows is an error); dask
    input stays lazy and is read once to draw Ã and once per Newton pass, whatever
    the number of classes.

    ``decision_function`` gives, for two classes, ``f(x) = K(x, Ã) v − γ`` per row
    (> 0 → ``classes_[1]``); for k > 2 classes an (n, k) array whose column j is the
    one-vs-rest value ``f_j(x)`` of ``classes_[j]``, and ``predict`` the class of the
    largest. The values are on the scale of the squared hinge's margin: the fit pushes
    ``y f`` to 1 or beyond, so ``|f| ≈ 1`` at the margin and 0 on the boundary; they are
    no probabilities (columns neither sum to anything nor lie in [0, 1]).

    Examples
    --------
    The same seed gives the same model from a dask array in any chunks:

    >>> import dask.array as da
    >>> import numpy as np
    >>> from bigkern import ReducedSVC
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 2))
    >>> y = np.where((X**2).sum(axis=1) < 1.5, 1, -1)  # cloud (1) inside a circle, clear (-1)
    >>> model = ReducedSVC(omega=1.0, C=10.0, size=30, random_state=0).fit(X, y)
    >>> model.expansion_.n_basis, bool(model.score(X, y) > 0.9)
    (30, True)
    >>> Xd, yd = da.from_array(X, chunks=(100, 2)), da.from_array(y, chunks=100)
    >>> lazy = ReducedSVC(omega=1.0, C=10.0, size=30, random_state=0).fit(Xd, yd)
    >>> bool(np.allclose(lazy.decision_function(X), model.decision_function(X)))
    True

    Three classes (sectors of the plane): one decision column per class.

    >>> sector = np.digitize(np.arctan2(X[:, 1], X[:, 0]), [-1.0, 1.0])
    >>> labels = np.array(["clear", "cloud", "shadow"])[sector]
    >>> three = ReducedSVC(omega=1.0, C=10.0, size=30, random_state=0).fit(X, labels)
    >>> three.classes_.tolist(), three.decision_function(X).shape
    (['clear', 'cloud', 'shadow'], (300, 3))
    >>> bool(three.score(X, labels) > 0.9)
    True
    """

    _allow_nan = True
    _binary_only = False
    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        **NEWTON_CONSTRAINTS,
        "loss": [StrOptions({"smooth_hinge", "squared_hinge"})],
        "smoothing": [domain("smoothing"), None],
        "stratified": ["boolean"],
        "calibration": CALIBRATION,
    }

    def __init__(
        self,
        omega: float = 1.0,
        C: float = 1.0,
        *,
        kernel: Any = "gaussian",
        loss: str = "smooth_hinge",
        smoothing: float | None = None,
        size: int | None = None,
        fraction: float | None = None,
        stratified: bool = True,
        centers: str = "uniform",
        standardize: bool = True,
        tol: float = 1e-8,
        max_iter: int = 50,
        hessian: str = "float64",
        solver: str = "auto",
        random_state: Any = None,
        calibration: str | None = None,
    ) -> None:
        self.omega = omega
        self.C = C
        self.kernel = kernel
        self.loss = loss
        self.smoothing = smoothing
        self.size = size
        self.fraction = fraction
        self.stratified = stratified
        self.centers = centers
        self.standardize = standardize
        self.tol = tol
        self.max_iter = max_iter
        self.hessian = hessian
        self.solver = solver
        self.random_state = random_state
        self.calibration = calibration

    @_fit_context(prefer_skip_nested_validation=True)
    @calibrated_fit
    def fit(self, X: Any, y: Any, *, mask: Any = None) -> ReducedSVC:
        """Fit on ``X`` (n, d) — numpy, dask or a DataArray — and class labels ``y``.

        Parameters
        ----------
        X : array-like, dask array or DataArray (sample, feature), shape (n, d)
            Samples; dask input stays lazy.
        y : array-like or dask array, shape (n,)
            Labels of two classes or more (any dtype) where ``mask`` is true; each
            class needs a usable row (a class all of whose rows have a non-finite
            feature is a :class:`~bigkern.errors.LabelError` naming it).
        mask : array-like or dask array of bool, shape (n,), optional
            Rows to fit on, e.g. ``label != 0`` for the labelled pixels of
            :func:`bigkern.scenes.samples.stack_samples`; the others are left out and
            counted (``n_masked``), their labels never looked at.

        Returns
        -------
        self
        """
        t0 = time.perf_counter()
        if self.loss == "squared_hinge" and self.smoothing is not None:
            raise ValueError(f"smoothing={self.smoothing!r} applies to loss='smooth_hinge' "
                             f"only: the squared hinge is not smoothed (leave smoothing None)")
        arr, y = self._fit_input(X, y)
        labels, lazy_labels = fit_labels(self, y, mask)
        # numpy rows are drawn, and fitted when they fit in memory, with no task graph:
        # the dask arrays of a distributed fit are made only when it needs them
        held = not lazy_labels and isinstance(arr, np.ndarray)
        Xd, yd, md = (None, None, None) if held else as_row_chunked(
            arr, labels, mask, min_chunks=task_threads())
        n_rows = int(arr.shape[0])
        rs = select_reduced_set(arr if held else Xd, labels if held else yd,
                                size=default_size(n_rows, self.size, self.fraction,
                                                  2 if lazy_labels else len(self.classes_)),
                                fraction=self.fraction, stratified=self.stratified,
                                random_state=self.random_state, mask=mask if held else md,
                                features=getattr(self, "feature_names_in_", None),
                                scale_rows=scale_sample_rows(self),
                                **centers_keywords(self, self.omega, 1.0 / float(self.C)))
        if lazy_labels:
            classes_from_draw(self, rs)
        elif rs.class_counts is not None and len(self.classes_) > 2:
            check_classes_present(self, rs.classes, len(self.classes_))
        elif rs.class_counts is not None and len(rs.class_counts) < 2:
            raise LabelError(f"the usable rows have one class only: {type(self).__name__} "
                             f"needs samples of two classes")
        k = len(self.classes_)
        positive = self.classes_[1] if lazy_labels else 1

        @functools.cache
        def chunked() -> tuple[Any, Any, Any]:  # (X, labels for the passes, mask) as dask
            Xc, yc, mc = (Xd, yd, md) if not held else as_row_chunked(
                arr, labels, mask, min_chunks=task_threads())
            if k > 2:  # class codes: one pass serves the k one-vs-rest problems
                return Xc, yc.map_blocks(class_codes, classes=self.classes_ if lazy_labels
                                         else np.arange(k), dtype=np.float64), mc
            return Xc, yc.map_blocks(plus_minus, positive=positive, dtype=np.float64), mc

        t_draw = time.perf_counter() - t0
        basis, clipped = reduced_basis(rs, self.omega, self.standardize,
                                       getattr(self, "feature_names_in_", None), self.kernel)
        smoothing = DEFAULT_SMOOTHING if self.smoothing is None else self.smoothing
        rows_held = not lazy_labels and kernel_rows_fit_in_memory(
            arr, mask, n_rows, basis.n_basis, itemsize=held_itemsize(arr, basis))
        method, choice = choose_solver(self.solver, basis.n_basis, k, rows_held,
                                       squared_hinge=self.loss == "squared_hinge")
        if k > 2 and method == "newton-cg":  # choose_solver: the kernel rows are held
            loss = SquaredHinge() if self.loss == "squared_hinge" else SmoothHinge(
                float(smoothing))
            res, counts, extra = newton_cg_classes_fit(
                self, loss, basis, k, (arr, labels, numpy_mask(mask)), rs)
            coef, intercept = res.u[:-1], -res.u[-1]
        elif k > 2:
            loss = SquaredHinge() if self.loss == "squared_hinge" else SmoothHinge(
                float(smoothing))
            fits = not lazy_labels and kernel_rows_fit_in_memory(
                arr, mask, n_rows, basis.n_basis,
                None if self.loss == "squared_hinge" else SMOOTH_IN_MEMORY_BYTES)
            # the draw's uniform scale sample, with its labels: where a large fit starts
            sample = None if rs.scale_X is None or rs.scale_y is None else (
                rs.scale_X, class_codes(rs.scale_y, self.classes_ if lazy_labels
                                        else np.arange(k)))
            res, counts, extra = classes_fit(
                self, loss, basis, k, chunked,
                None if lazy_labels else (arr, labels, numpy_mask(mask)), fits, rs, sample)
            coef, intercept = res.u[:-1], -res.u[-1]
        elif method == "newton-cg":
            loss = SquaredHinge() if self.loss == "squared_hinge" else SmoothHinge(
                float(smoothing))
            res, counts, extra = newton_cg_fit(
                self, loss, basis, rs, chunked,
                (arr, np.where(labels == 1, 1.0, -1.0), numpy_mask(mask)) if rows_held
                else None,
                lambda: draw_sample(rs, functools.partial(plus_minus, positive=positive)))
            coef, intercept = res.u[:-1], -float(res.u[-1])
        else:
            if self.loss == "squared_hinge":
                res, counts, extra = squared_hinge_fit(self, arr, labels, mask, basis, rs,
                                                       chunked)
            else:
                rows = None if lazy_labels else (arr, np.where(labels == 1, 1.0, -1.0), mask)
                res, counts, extra = newton_fit(self, chunked, basis,
                                                SmoothHinge(float(smoothing)), in_memory=rows)
            coef, intercept = res.u[:-1], -float(res.u[-1])
        self.expansion_ = KernelExpansion.from_parts(basis.centers, coef, intercept,
                                                       float(self.omega), basis.offset,
                                                       basis.scale, clip=basis.clip,
                                                       kernel=basis.kernel)
        self.reduced_index_ = rs.index
        self.n_iter_ = res.iterations
        self.fit_report_ = fit_report(self, rs, res, counts, basis.n_basis, t0, t_draw,
                                      {**extra, "solver_choice": choice}, clipped=clipped)
        return self
