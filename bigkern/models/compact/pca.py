"""Kernel PCA with a compactly supported kernel (Zhang, Genton & Liu, §4.3): ``eigsh`` on
the implicitly centred sparse ``K_C``."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from sklearn.base import TransformerMixin, _fit_context

from bigkern.models._constraints import domain
from bigkern.models._input import map_rows
from bigkern.models.compact.base import _CompactKernelModel
from bigkern.reduce.compact.sparse_gram import sparse_gram
from bigkern.solvers.kpca import centred_projections, kernel_pca

__all__ = ["CompactKernelPCA"]


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
