"""The compact classifiers: the least-squares SVM and the SVM on a sparse ``K_C``
(Zhang, Genton & Liu, §4.1–4.2), two classes or k."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from sklearn.base import _fit_context

from bigkern.models._constraints import domain
from bigkern.models.calibrated_fit import CALIBRATION, calibrated_fit
from bigkern.models.compact.base import (
    LSSVM_CONSTRAINTS,
    _CompactClassifier,
    _CompactKernelModel,
)
from bigkern.solvers.sparse_svm import solve_svm_dual, solve_svm_duals

__all__ = ["CompactLSSVC", "CompactSVC"]


class CompactLSSVC(_CompactClassifier):
    """Least-squares SVM with a compactly supported kernel (eqs. 13–14), two classes or k.

    **k classes**: one-vs-rest, column j fitting the ±1 target "``classes_[j]`` or not".
    The LS-SVM system matrix ``K_C + nλI`` does not depend on the target, so all k
    columns are solved together: one factorization and k + 1 triangular solves
    (``"cholmod"``, ``"banded"``), or k conjugate-gradient sequences that share each
    sparse product (``"cg"``). k classes thus cost one sparse Gram matrix and one
    factorization, as two do; each column equals the binary fit of its class against
    the rest (bit for bit with the direct and CG solvers of
    :func:`~bigkern.solvers.lssvm.solve_lssvm`; ``solver="auto"`` weighs CG's cost, which
    grows with k, against the factorization's, which does not, so it may choose another
    method for k classes than for two, and then the columns agree to CG's tolerance). A
    multinomial or one-vs-one variant would lose exactly this sharing.

    **The decision function's scale**: column j (or the single column of two classes)
    is the regularized least-squares fit of the ±1 target, so it is near +1 on rows of
    its class and near −1 elsewhere; 0 is the binary boundary. It is not a
    probability, and values beyond ±1 are common.

    Parameters
    ----------
    omega : float
        Kernel width ω (for the Gaussian, the paper's σ is ``ω√2``).
    lam : float
        λ of eq. (13); the ridge on ``K_C``'s diagonal is ``n λ``.
    kernel : str, Kernel class or Kernel, default "gaussian"
        The radial kernel tapered: "gaussian", "matern32", "matern52" or a
        :class:`~bigkern.kernels.Kernel` of the Euclidean distance, of width ``omega``.
    radius : float, optional
        Support radius; None → the ``1 − tau`` quantile of pairwise distances.
    tau : float
        Target sparsity of rule (10) when ``radius`` is None.
    taper_power : int, optional
        Taper power (default the smallest positive definite one, ⌈(d+1)/2⌉).
    solver : {"auto", "cholmod", "banded", "cg"}
        Sparse solve of ``K_C + nλI`` (see :mod:`bigkern.solvers.sparse_spd`).
    calibration : {None, "sigmoid", "isotonic"}, default None
        Probabilities: None gives none (no ``predict_proba``); "sigmoid" (Platt) or
        "isotonic" fit a calibrator of the decision values on a share of the rows held
        out of the fit (:mod:`bigkern.models.calibrated_fit`).

    Attributes
    ----------
    classes_ : ndarray (k,)
        The class labels, sorted.
    dual_coef_, intercept_ : the expansion ``f(x) = b + Σ a_i k_C(x, x_i)``: (n,) and a
        float for two classes, (n, k) and (k,) for k, column j that of ``classes_[j]``.
    support_radius_ : float
    fit_report_ : dict
        ``"gram"``: the :class:`~bigkern.reduce.compact.sparse_gram.GramReport` of ``K_C``
        (nonzeros, sparsity, memory); the solve's method, seconds, bandwidth before and
        after reordering, factor memory and iterations.
    n_isolated_ : int
        Training rows with no neighbour within ``radius``.

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern import CompactLSSVC
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 2))
    >>> y = np.where((X**2).sum(axis=1) < 1.5, 1, -1)  # cloud (1) inside a circle, clear (-1)
    >>> model = CompactLSSVC(omega=0.5, lam=1e-3, radius=1.5).fit(X, y)
    >>> model.fit_report_["gram"].shape, bool(model.fit_report_["gram"].sparsity > 0.5)
    ((300, 300), True)
    >>> bool(model.score(X, y) > 0.9)
    True

    Three classes (rings), one factorization:

    >>> rings = np.digitize(np.hypot(X[:, 0], X[:, 1]), [0.8, 1.6])  # 0, 1, 2
    >>> three = CompactLSSVC(omega=0.5, lam=1e-3, radius=1.5).fit(X, rings)
    >>> three.classes_.tolist(), three.decision_function(X[:4]).shape
    ([0, 1, 2], (4, 3))
    >>> bool(three.score(X, rings) > 0.8)
    True
    """

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        **LSSVM_CONSTRAINTS,
        "calibration": CALIBRATION,
    }

    def __init__(self, omega: float = 0.5, lam: float = 1e-3, *, kernel: Any = "gaussian",
                 radius: float | None = None, tau: float = 0.7, taper_power: int | None = None,
                 solver: str = "auto", calibration: str | None = None) -> None:
        self.omega = omega
        self.lam = lam
        self.kernel = kernel
        self.radius = radius
        self.tau = tau
        self.taper_power = taper_power
        self.solver = solver
        self.calibration = calibration

    @_fit_context(prefer_skip_nested_validation=True)
    @calibrated_fit
    def fit(self, X: Any, y: Any) -> CompactLSSVC:
        """Fit on samples ``X`` (numpy, dask or DataArray) and targets ``y``."""
        return self._fit_lssvm(X, y, y_numeric=False)


class CompactSVC(_CompactClassifier):
    """SVM (hinge loss, eq. 11) with a compactly supported kernel, solved sparse; two
    classes or k.

    **k classes**: one-vs-rest: k SVM duals, class j (+1) against the rest (−1), on the
    one sparse Gram matrix ``K_C`` of all the rows, built once and laid out for the
    solver once (:func:`~bigkern.solvers.sparse_svm.solve_svm_duals`, one problem per
    thread). Why not one-vs-one, scikit-learn's ``SVC`` choice: here the Gram matrix, not
    the solver, is the costly part (a k-d tree search over all pairs within the radius),
    and one-vs-rest uses it whole, where one-vs-one would cut k(k−1)/2 sub-matrices from
    it; one-vs-rest predicts with k columns (one sparse kernel row per new row times an
    (n, k) matrix) where one-vs-one needs k(k−1)/2 and a vote; and on pendigits and
    page-blocks one-vs-rest was the more accurate, for about the same solver time
    (``benchmarks/compact_classes.py --ovo``; the figures are on the benchmark pages):
    the tapered kernel leaves many rows with no neighbour among a pair's two classes, and
    there a pairwise decision is its intercept alone. Each column equals the binary fit
    of its class against the rest bit for bit (the same SMO steps on the same matrix).

    **The decision function's scale**: column j (or the single column of two classes)
    is the SVM's margin function ``f_j(x) = Σ α_i y_i k_C(x, x_i) − ρ_j``: ``|f| ≥ 1``
    outside the margin, no probability; columns of different classes are compared as
    they are (``predict`` takes the largest), as in scikit-learn's one-vs-rest.

    Parameters
    ----------
    omega, kernel, radius, tau, taper_power, calibration
        As in :class:`CompactLSSVC`.
    C : float
        SVM penalty: the weight of the hinge losses, libsvm's box bound on the dual
        coefficients (the paper's λ of eq. (11) is ``1 / (2 n C)``).
    tol : float
        KKT tolerance of the SMO solver (libsvm's default 1e-3).

    Attributes
    ----------
    classes_ : ndarray (k,)
        The class labels, sorted.
    dual_coef_, intercept_ : the expansion ``f(x) = Σ α_i y_i k_C(x, x_i) − ρ``: (n,) and
        a float for two classes, (n, k) and (k,) for k, column j that of ``classes_[j]``.
    support_ : ndarray
        Rows with a nonzero dual coefficient (in any column).
    support_radius_ : float
    fit_report_ : dict
        ``"gram"`` as in :class:`CompactLSSVC`; the solver's ``iterations``, ``seconds``,
        ``objective`` and final KKT ``gap`` (lists of k for k classes).

    Examples
    --------
    Without ``radius``, rule (10): ``tau=0.5`` takes the median pairwise distance.

    >>> import numpy as np
    >>> from bigkern import CompactSVC
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 2))
    >>> y = np.where((X**2).sum(axis=1) < 1.5, 1, -1)  # cloud (1) inside a circle, clear (-1)
    >>> model = CompactSVC(omega=0.5, C=1.0, tau=0.5).fit(X, y)
    >>> round(model.support_radius_, 2), bool(len(model.support_) < 300)
    (1.65, True)
    >>> bool(model.score(X, y) > 0.9)
    True

    Three classes (rings), one Gram matrix for the three one-vs-rest problems:

    >>> rings = np.digitize(np.hypot(X[:, 0], X[:, 1]), [0.8, 1.6])  # 0, 1, 2
    >>> three = CompactSVC(omega=0.5, C=10.0, tau=0.5).fit(X, rings)
    >>> three.dual_coef_.shape, three.intercept_.shape
    ((300, 3), (3,))
    >>> bool(three.score(X, rings) > 0.8)
    True
    """

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        **_CompactKernelModel._parameter_constraints,
        "C": [domain("C")],
        "tol": [domain("tol")],
        "calibration": CALIBRATION,
    }

    def __init__(self, omega: float = 0.5, C: float = 1.0, *, kernel: Any = "gaussian",
                 radius: float | None = None, tau: float = 0.7, taper_power: int | None = None,
                 tol: float = 1e-3, calibration: str | None = None) -> None:
        self.omega = omega
        self.C = C
        self.kernel = kernel
        self.radius = radius
        self.tau = tau
        self.taper_power = taper_power
        self.tol = tol
        self.calibration = calibration

    @_fit_context(prefer_skip_nested_validation=True)
    @calibrated_fit
    def fit(self, X: Any, y: Any) -> CompactSVC:
        """Fit on samples ``X`` and labels ``y`` of two classes or more."""
        _, y, K = self._gram(X, y)
        target = self._targets(y)
        if target.ndim == 1:
            solution = solve_svm_dual(K, target, float(self.C), eps=self.tol)
            self.dual_coef_, self.intercept_ = solution.dual_coef, solution.intercept
            self.support_ = np.flatnonzero(solution.dual_coef)
            self.fit_report_ |= {"iterations": solution.iterations,
                                 "seconds": solution.seconds,
                                 "objective": solution.objective, "gap": solution.gap}
            return self
        solutions = solve_svm_duals(K, target, float(self.C), eps=self.tol)
        self.dual_coef_ = np.column_stack([s.dual_coef for s in solutions])
        self.intercept_ = np.array([s.intercept for s in solutions])
        self.support_ = np.flatnonzero(np.any(self.dual_coef_ != 0, axis=1))
        self.fit_report_ |= {name: [getattr(s, name) for s in solutions]
                             for name in ("iterations", "seconds", "objective", "gap")}
        return self
