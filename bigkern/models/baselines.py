"""In-memory baselines of the papers' tables."""

from __future__ import annotations

from typing import Any, ClassVar

import dask.array as da
import numpy as np
from sklearn.base import _fit_context

from bigkern.cluster.compute import compute
from bigkern.errors import DataQualityError
from bigkern.features.scaling import robust_standardizer
from bigkern.kernels import KernelExpansion, gaussian_kernel
from bigkern.models._base import _KernelClassifier
from bigkern.models._constraints import domain
from bigkern.models.calibrated_fit import CALIBRATION, ProbabilityMixin, calibrated_fit
from bigkern.solvers.kernel_ridge import solve_weighted_kernel_ridge

__all__ = ["KernelRidgeClassifier"]


class KernelRidgeClassifier(ProbabilityMixin, _KernelClassifier):
    """Plain in-memory Gaussian kernel regularization ``c = (K + λI)⁻¹ y`` on 0/1 labels.

    The paper's baseline: fit on a random subsample of the same size as the
    number of bins (and bagged with :class:`sklearn.ensemble.BaggingClassifier`).
    Standardization, when on, uses the subsample's own median and robust σ.

    **Two classes**: ``y`` is the 0/1 indicator of ``classes_[1]`` and the decision
    function ``f(x) = Σ c_i k(x, x_i) − ½``. **k classes**: one-vs-rest, column j
    regressing the indicator of ``classes_[j]``, all k columns in one solve: the
    Cholesky factorization of ``K + λI`` (the O(n³) step) does not depend on the target,
    so it is made once and the k indicator columns are k triangular solves, O(n²)
    each. Column j equals the two-class fit of ``classes_[j]`` against the rest; a
    multinomial loss would need an iterative fit and one-vs-one k(k−1)/2 factorizations
    of sub-matrices, for a model whose whole point is one direct solve.

    **The decision function's scale**: each column is the kernel ridge estimate of
    P(class) − ½ by a least-squares fit of the indicator: near +½ on its class, near −½
    elsewhere, 0 the binary boundary. It is not a calibrated probability (it may leave
    [−½, ½]).

    Parameters
    ----------
    omega : float
        Gaussian width ω (scikit-learn's ``gamma = 1 / (2 ω²)``), in standardized units
        when ``standardize``.
    lam : float
        Ridge λ added to the kernel matrix's diagonal, ``(K + λI) c = y``.
    standardize : bool
        Robust standardization from the fitted rows (median, 10%/90% quantiles).
    calibration : {None, "sigmoid", "isotonic"}, default None
        Probabilities: None gives none (no ``predict_proba``); "sigmoid" (Platt) or
        "isotonic" fit a calibrator of the decision values on a share of the rows held
        out of the fit (:mod:`bigkern.models.calibrated_fit`).

    Examples
    --------
    The two classes may be of any type:

    >>> import numpy as np
    >>> from bigkern import KernelRidgeClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 2))
    >>> y = np.where((X**2).sum(axis=1) < 1.5, "cloud", "clear")
    >>> model = KernelRidgeClassifier(omega=0.8, lam=0.1).fit(X, y)
    >>> model.classes_.tolist(), model.predict([[0.0, 0.0], [3.0, 3.0]]).tolist()
    (['clear', 'cloud'], ['cloud', 'clear'])
    >>> bool(model.score(X, y) > 0.9)
    True

    k classes give k decision columns:

    >>> rings = np.digitize(np.hypot(X[:, 0], X[:, 1]), [0.8, 1.6])  # 0, 1, 2
    >>> three = KernelRidgeClassifier(omega=0.8, lam=0.1).fit(X, rings)
    >>> three.decision_function(X[:4]).shape, three.expansion_.coef.shape
    ((4, 3), (200, 3))
    >>> bool(three.score(X, rings) > 0.8)
    True
    """

    _binary_only = False

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "omega": [domain("omega")],
        "lam": [domain("lam")],
        "standardize": ["boolean"],
        "calibration": CALIBRATION,
    }

    def __init__(self, omega: float = 0.8, lam: float = 0.1, *, standardize: bool = False,
                 calibration: str | None = None) -> None:
        self.omega = omega
        self.lam = lam
        self.standardize = standardize
        self.calibration = calibration

    @_fit_context(prefer_skip_nested_validation=True)
    @calibrated_fit
    def fit(self, X: Any, y: Any) -> KernelRidgeClassifier:
        """Fit on in-memory samples (rows with a non-finite feature raise)."""
        arr, y = self._fit_input(X, y)
        if isinstance(arr, da.Array):
            (arr,) = compute(arr, label="reading the samples")
        arr = np.asarray(arr, dtype=np.float64)
        if not np.isfinite(arr).all():
            raise DataQualityError("KernelRidgeClassifier needs finite X; drop non-finite rows")
        codes = self._fit_classes(np.asarray(y))
        k = len(self.classes_)
        if k == 2:  # the indicator of classes_[1]
            target, intercept = codes.astype(np.float64), -0.5
        else:  # one indicator column per class
            target = (codes[:, None] == np.arange(k)).astype(np.float64)
            intercept = np.full(k, -0.5)
        if self.standardize:
            offset, scale = robust_standardizer(arr)
        else:
            offset, scale = np.zeros(arr.shape[1]), np.ones(arr.shape[1])
        Z = (arr - offset) / scale
        K = gaussian_kernel(Z, Z, self.omega)
        coef = solve_weighted_kernel_ridge(K, target, self.lam)
        self.expansion_ = KernelExpansion.from_parts(Z, coef, intercept, float(self.omega),
                                                     offset, scale)
        return self
