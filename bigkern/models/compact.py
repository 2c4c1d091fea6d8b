"""Estimators with a compactly supported kernel (Zhang, Genton & Liu, §4).

Each one builds the sparse Gram matrix ``K_C`` (only pairs closer than ``C``,
found by k-d trees; chunk pairs on workers for a dask ``X``) and hands it to a
single-node sparse solver:

- :class:`CompactLSSVC` — the least-squares SVM, bordered system (14); k classes
  one-vs-rest with one factorization for all;
- :class:`CompactKernelRidge` — the same system for real-valued targets;
- :class:`CompactSVC` — the SVM dual (12) by SMO on the sparse ``K_C``; k classes
  one-vs-rest on the one ``K_C``;
- :class:`CompactKernelPCA` — kernel PCA by ``eigsh`` on the implicitly centred ``K_C``.

The kernel tapered is the Gaussian ``exp(−r²/(2ω²))`` as everywhere in bigkern (the
paper's ``exp(−r²/σ²)`` is ``ω = σ/√2``), or another radial kernel of the Euclidean
distance given as ``kernel=`` (the Matérn kernels). The support radius is ``radius``
(the paper's ``C``), or, with ``radius=None``, rule (10)'s shortcut: the ``1 − τ``
quantile of the pairwise distances, which leaves about a fraction ``τ`` of ``K_C`` zero.
Predictions visit only the training points within ``radius`` of each new point.
"""

from __future__ import annotations

import warnings
from typing import Any, ClassVar

import dask.array as da
import numpy as np
import scipy.sparse as sp
from sklearn.base import RegressorMixin, TransformerMixin, _fit_context
from sklearn.utils._param_validation import StrOptions

from bigkern.cluster.compute import compute
from bigkern.errors import BigkernWarning
from bigkern.kernels import CompactSupport, as_kernel
from bigkern.models._base import BigkernEstimator, ClassesMixin
from bigkern.models._constraints import KERNEL, domain
from bigkern.models._input import map_rows
from bigkern.models.calibrated_fit import CALIBRATION, ProbabilityMixin, calibrated_fit
from bigkern.models.criteria import distance_quantile
from bigkern.reduce.compact.sparse_gram import gram_report, sparse_gram
from bigkern.solvers.kpca import centred_projections, kernel_pca
from bigkern.solvers.lssvm import solve_lssvm
from bigkern.solvers.sparse_spd import METHODS as SPARSE_SOLVERS
from bigkern.solvers.sparse_svm import solve_svm_dual, solve_svm_duals

__all__ = ["CompactKernelPCA", "CompactKernelRidge", "CompactLSSVC", "CompactSVC"]


def isolated_rows(K: sp.csr_matrix) -> np.ndarray:
    """Rows of a Gram matrix with no stored entry besides the diagonal (no neighbour within
    the radius)."""
    K = sp.csr_matrix(K)
    counts = np.diff(K.indptr)
    return np.flatnonzero(counts - (K.diagonal() != 0) == 0)


def _radial_kernel(kernel: Any, omega: float) -> Any:
    """``kernel=`` of width ``omega`` as a kernel of the Euclidean distance, or an error.

    The taper ``(1 − r/radius)₊^ν`` is positive definite for the Euclidean distance
    ``r``, and the support is found by k-d trees in that distance; a kernel of another
    distance (the Laplacian's L1) cannot be tapered here.
    """
    value = as_kernel(kernel, omega)
    if value.metric != "euclidean":
        raise ValueError(
            f"kernel={value.name!r} is a function of the {value.metric} distance; a "
            f"compactly supported kernel tapers a kernel of the Euclidean distance: use "
            f"'gaussian', 'matern32' or 'matern52'")
    return value


class _CompactKernelModel(BigkernEstimator):
    """Shared fit preamble (validation, radius, sparse Gram, checks)."""

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "omega": [domain("omega")],
        "kernel": KERNEL,
        "radius": [domain("radius"), None],
        "tau": [domain("tau")],
        "taper_power": [domain("taper_power"), None],
    }

    def _gram(self, X: Any, y: Any = None, *,
              y_numeric: bool = False) -> tuple[Any, Any, sp.csr_matrix]:
        arr, y = self._fit_input(X, y, y_numeric=y_numeric, min_samples=2)
        if isinstance(arr, da.Array):
            # one read: the quantile sample, the Gram's chunk pairs and X_fit_ reuse it
            arr = arr.astype(np.float64).persist()
            if arr.shape[0] < 2:
                raise ValueError(f"X must have at least 2 rows; got shape {arr.shape}")
        if self.radius is None:
            radius = float(distance_quantile(arr, 1.0 - self.tau, seed=0))
        else:
            radius = self.radius
        self.kernel_ = CompactSupport(_radial_kernel(self.kernel, self.omega), radius,
                                      self.taper_power)
        self.support_radius_ = float(radius)
        K = sparse_gram(arr, self.kernel_)
        self.fit_report_ = {"gram": gram_report(K)}
        lonely = isolated_rows(K)
        self.n_isolated_ = len(lonely)
        if len(lonely) == K.shape[0]:
            raise ValueError(
                f"radius={radius:g} is smaller than the distance from every one of the "
                f"{len(lonely)} "
                "rows to its nearest neighbour: K_C is diagonal and the model cannot "
                "generalize; raise radius (or lower tau)")
        if len(lonely):
            warnings.warn(
                f"{len(lonely)} of {K.shape[0]} rows ({len(lonely) / K.shape[0]:.1%}) have no "
                f"neighbour within radius={radius:g} (first: row {lonely[0]}); their kernel rows "
                "are empty off the diagonal, so they only fit themselves", BigkernWarning,
                stacklevel=4)
        if isinstance(arr, da.Array):
            (arr,) = compute(arr, label="reading the training rows")
        self.X_fit_ = np.asarray(arr, dtype=np.float64)
        return arr, y, K

    def to_dataset(self) -> Any:
        """The fitted model (with its training rows) as a small :class:`xarray.Dataset`.

        Saved and loaded by :func:`bigkern.save_model` / :func:`bigkern.load_model`;
        see :mod:`bigkern.models.persistence.compact_files` for the layout.
        """
        from bigkern.models.persistence.compact_files import compact_to_dataset

        return compact_to_dataset(self)



class _CompactExpansion(_CompactKernelModel):
    """The decision function ``f(x) = b + Σ a_i k_C(x, x_i)`` of the classifiers and ridge,
    or its k columns ``f_j(x) = b_j + Σ a_ij k_C(x, x_i)`` (``dual_coef_`` (n, k))."""

    def decision_rows(self, X: np.ndarray) -> np.ndarray:
        """``f`` on a float array of rows in the fitted feature order, unvalidated: (n,), or
        (n, k) for k columns of coefficients, each row's kernel values (the training rows
        within the radius) found and evaluated once for all k columns; NaN for a row with
        a non-finite feature (what :func:`bigkern.predict_scenes` evaluates)."""
        X = np.asarray(X, dtype=np.float64)
        good = np.isfinite(X).all(axis=1)
        coef = self.dual_coef_
        out = np.full((len(X), *coef.shape[1:]), np.nan)
        if good.any():
            K = sparse_gram(X[good], self.kernel_, self.X_fit_)
            if coef.ndim == 1:
                out[good] = np.asarray(K @ coef).ravel() + self.intercept_
            else:
                out[good] = np.asarray(K @ coef) + self.intercept_
        return out

    @property
    def n_basis_(self) -> int:
        """Training rows with a nonzero coefficient, in any column (the expansion's size)."""
        coef = self.dual_coef_
        return int(np.count_nonzero(coef if coef.ndim == 1 else np.any(coef != 0, axis=1)))

    def _decision(self, X: Any) -> Any:
        """``f(x) = intercept_ + Σ_i dual_coef_i k_C(x, x_i)`` (lazy for a dask ``X``)."""
        arr = self._predict_input(X)  # raises NotFittedError before fit
        return map_rows(self.decision_rows, arr, trailing=np.shape(self.dual_coef_)[1:])

    def _fit_lssvm(self, X: Any, y: Any, *, y_numeric: bool) -> Any:
        """The LS-SVM bordered system (14) on ``K_C``, for labels or real targets: one
        factorization (or one CG sequence a target, sharing each sparse product) for all
        the target's columns."""
        _, y, K = self._gram(X, y, y_numeric=y_numeric)
        solution = solve_lssvm(K, self._targets(y), self.lam, method=self.solver)
        self.dual_coef_, self.intercept_ = solution.coef, solution.intercept
        spd = solution.solve
        self.fit_report_ |= {
            "method": solution.method, "seconds": solution.seconds,
            "bandwidth_before": spd.bandwidth_before, "bandwidth_after": spd.bandwidth_after,
            "factor_bytes": spd.factor_bytes, "iterations": spd.iterations,
        }
        return self


class _CompactClassifier(ProbabilityMixin, ClassesMixin, _CompactExpansion):
    """Two classes or k: one decision column per class beyond two (one-vs-rest)."""

    _binary_only = False

    def decision_function(self, X: Any) -> Any:
        """The decision values, lazy for a dask ``X``; NaN for a row with a non-finite feature.

        Two classes: ``f(x) = intercept_ + Σ_i dual_coef_i k_C(x, x_i)``, > 0 →
        ``classes_[1]``. k classes: (n, k), column j the one-vs-rest function of
        ``classes_[j]`` (coefficients ``dual_coef_[:, j]``, intercept ``intercept_[j]``);
        ``predict`` takes the largest. The scale is the model's own (see its class docs),
        not a probability.
        """
        return self._decision(X)

    def _targets(self, y: Any) -> np.ndarray:
        """Labels as ±1 targets, (n,) for two classes (+1: ``classes_[1]``) and (n, k) for
        k (column j: +1 where the class is ``classes_[j]``); sets ``classes_``."""
        codes = self._fit_classes(np.asarray(y))
        if len(self.classes_) == 2:
            return np.where(codes == 1, 1.0, -1.0)
        return np.where(codes[:, None] == np.arange(len(self.classes_)), 1.0, -1.0)


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
        **_CompactKernelModel._parameter_constraints,
        "lam": [domain("lam")],
        "solver": [StrOptions(set(SPARSE_SOLVERS))],
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



class CompactKernelRidge(RegressorMixin, _CompactExpansion):
    """LS-SVM regression (kernel ridge with an intercept) with a compactly supported kernel.

    The bordered system (14) with real-valued targets. ``predict`` returns ``f(x)``.

    Parameters
    ----------
    omega, lam, kernel, radius, tau, taper_power, solver
        As in :class:`CompactLSSVC`.

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern import CompactKernelRidge
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(0, 1, size=(200, 1))
    >>> truth = np.sin(2 * np.pi * X[:, 0])
    >>> y = truth + 0.1 * rng.standard_normal(200)
    >>> model = CompactKernelRidge(omega=0.1, lam=1e-4, radius=0.3).fit(X, y)
    >>> bool(np.abs(model.predict(X) - truth).mean() < 0.1)  # close to the noiseless curve
    True
    """

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        k: v for k, v in CompactLSSVC._parameter_constraints.items() if k != "calibration"}

    def __init__(self, omega: float = 0.5, lam: float = 1e-3, *, kernel: Any = "gaussian",
                 radius: float | None = None, tau: float = 0.7, taper_power: int | None = None,
                 solver: str = "auto") -> None:
        self.omega = omega
        self.lam = lam
        self.kernel = kernel
        self.radius = radius
        self.tau = tau
        self.taper_power = taper_power
        self.solver = solver

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: Any, y: Any) -> CompactKernelRidge:
        """Fit on samples ``X`` (numpy, dask or DataArray) and targets ``y``."""
        return self._fit_lssvm(X, y, y_numeric=True)

    def _targets(self, y: Any) -> np.ndarray:
        y = np.asarray(y, dtype=np.float64)
        if not np.all(np.isfinite(y)):
            raise ValueError(f"y has {int(np.sum(~np.isfinite(y)))} non-finite values")
        return y

    def predict(self, X: Any) -> Any:
        """Predicted targets ``f(x)`` (lazy for a dask ``X``)."""
        return self._decision(X)


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


class CompactKernelPCA(TransformerMixin, _CompactKernelModel):
    """Kernel PCA with a compactly supported kernel (§4.3).

    Parameters
    ----------
    n_components : int
        Principal axes kept.
    omega, kernel, radius, tau, taper_power
        As in :class:`CompactLSSVC`.
    random_state : int
        Seed of ARPACK's start vector (the axes are signed deterministically).

    Attributes
    ----------
    eigenvalues_ : ndarray (n_components,)
        Leading eigenvalues of the centred ``K_C`` (descending).
    eigenvectors_ : ndarray (n, n_components)
        Unit eigenvectors of the centred ``K_C`` (as scikit-learn's ``KernelPCA``); a
        row's projections are its centred kernel row times ``eigenvectors_ / √eigenvalues_``.

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern import CompactKernelPCA
    >>> X = np.random.default_rng(0).normal(size=(200, 3))
    >>> pca = CompactKernelPCA(n_components=2, omega=1.0, radius=2.5).fit(X)
    >>> pca.transform(X[:5]).shape, pca.eigenvectors_.shape
    ((5, 2), (200, 2))
    >>> bool(pca.eigenvalues_[0] >= pca.eigenvalues_[1] > 0)
    True
    """

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        **_CompactKernelModel._parameter_constraints,
        "n_components": [domain("n_components")],  # at most n - 1, checked by fit
        "random_state": [domain("random_state"), None],
    }

    def __init__(self, n_components: int = 2, omega: float = 0.5, *, kernel: Any = "gaussian",
                 radius: float | None = None, tau: float = 0.7, taper_power: int | None = None,
                 random_state: int = 0) -> None:
        self.n_components = n_components
        self.omega = omega
        self.kernel = kernel
        self.radius = radius
        self.tau = tau
        self.taper_power = taper_power
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: Any, y: Any = None) -> CompactKernelPCA:
        """Find the leading axes of the training samples ``X``."""
        _, _, K = self._gram(X)
        self._solution = kernel_pca(K, int(self.n_components), seed=self.random_state)
        self.eigenvalues_ = self._solution.eigenvalues
        self.eigenvectors_ = self._solution.eigenvectors
        return self

    def _project(self, Xb: np.ndarray) -> np.ndarray:
        K = sparse_gram(np.asarray(Xb, dtype=np.float64), self.kernel_, self.X_fit_)
        return centred_projections(K, self._solution)

    def transform(self, X: Any) -> Any:
        """Projections of ``X`` (n, d) on the axes, (n, n_components); lazy for a dask ``X``."""
        return map_rows(self._project, self._predict_input(X),
                        trailing=(int(self.n_components),))
