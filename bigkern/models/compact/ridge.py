"""Kernel ridge regression with a compactly supported kernel: the LS-SVM system (14) of
Zhang, Genton & Liu for real-valued targets."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from sklearn.base import RegressorMixin, _fit_context

from bigkern.models.compact.base import LSSVM_CONSTRAINTS, _CompactExpansion

__all__ = ["CompactKernelRidge"]


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
        **LSSVM_CONSTRAINTS}

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
