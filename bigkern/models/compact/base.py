"""The compact models' shared parts: the fit preamble (validation, support radius, sparse
Gram matrix ``K_C``, rows with no neighbour) and the decision function
``f(x) = b + Σ a_i k_C(x, x_i)`` of the classifiers and the ridge, one column or k."""

from __future__ import annotations

import warnings
from typing import Any, ClassVar

import dask.array as da
import numpy as np
import scipy.sparse as sp
from sklearn.utils._param_validation import StrOptions

from bigkern.cluster.compute import compute
from bigkern.errors import BigkernWarning
from bigkern.kernels import CompactSupport, as_kernel
from bigkern.models._base import BigkernEstimator, ClassesMixin
from bigkern.models._constraints import KERNEL, domain
from bigkern.models._input import map_rows
from bigkern.models.calibrated_fit import ProbabilityMixin
from bigkern.models.criteria import distance_quantile
from bigkern.reduce.compact.sparse_gram import gram_report, sparse_gram
from bigkern.solvers.lssvm import solve_lssvm
from bigkern.solvers.sparse_spd import METHODS as SPARSE_SOLVERS

__all__ = ["LSSVM_CONSTRAINTS", "isolated_rows", "radial_kernel"]


def isolated_rows(K: sp.csr_matrix) -> np.ndarray:
    """Rows of a Gram matrix with no stored entry besides the diagonal (no neighbour within
    the radius)."""
    K = sp.csr_matrix(K)
    counts = np.diff(K.indptr)
    return np.flatnonzero(counts - (K.diagonal() != 0) == 0)


def radial_kernel(kernel: Any, omega: float) -> Any:
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
        self.kernel_ = CompactSupport(radial_kernel(self.kernel, self.omega), radius,
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




#: The parameters of the LS-SVM system (14) on ``K_C`` (:class:`CompactLSSVC`,
#: :class:`CompactKernelRidge`).
LSSVM_CONSTRAINTS: dict[str, list[Any]] = {
    **_CompactKernelModel._parameter_constraints,
    "lam": [domain("lam")],
    "solver": [StrOptions(set(SPARSE_SOLVERS))],
}

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
