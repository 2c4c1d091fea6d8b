"""The kernel as a value: Gaussian, Laplacian and Matérn kernels of one width ω.

A :class:`Kernel` is a radial function of the distance between two standardized
rows, ``k(s, t) = φ(r / ω)``, with a width ω that every estimator calls ``omega``.
Estimators take ``kernel=`` as a name (``"gaussian"``, ``"laplacian"``,
``"matern32"``, ``"matern52"``), a :class:`Kernel` class or an instance
(:func:`as_kernel`); their ``omega`` sets the width. A :class:`~bigkern.kernels.
gaussian.Basis` holds one, and so does every fitted expansion and saved model.

The built-in kernels have compiled per-row loops (:mod:`bigkern.kernels.radial_loops`
and, for the Gaussian, :mod:`bigkern.kernels.fused_loops`), selected by
:attr:`Kernel.code`. A kernel of one's own is a subclass with a ``name`` and a
:meth:`Kernel.radial` (and ``metric = "manhattan"`` if it is a function of the
L1 distance); it runs through NumPy blocks instead of a compiled loop.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

__all__ = ["KERNELS", "Gaussian", "Kernel", "Laplacian", "Matern32", "Matern52", "as_kernel",
           "gaussian_kernel", "omega_to_gamma", "pairwise_distances_of", "squared_distances"]


def omega_to_gamma(omega: float) -> float:
    """scikit-learn's ``gamma`` for the Gaussian width ``omega``: ``1 / (2 ω²)``."""
    if not omega > 0:
        raise ValueError(f"the kernel width omega must be positive; got {omega!r}")
    return 1.0 / (2.0 * float(omega) ** 2)


def pairwise_distances_of(X: np.ndarray, Z: np.ndarray, metric: str) -> np.ndarray:
    """Distances between the rows of ``X`` and of ``Z`` (float64), row pair by row pair.

    Each entry is computed from its two rows alone (no matrix product), so it is the
    same whatever the blocks; memory is the (n, m) result alone.
    """
    from scipy.spatial.distance import cdist

    names = {"manhattan": "cityblock", "euclidean": "euclidean"}
    if metric not in names:
        raise ValueError(f"metric must be 'euclidean' or 'manhattan'; got {metric!r}")
    return cdist(np.asarray(X, dtype=np.float64), np.asarray(Z, dtype=np.float64),
                 metric=names[metric])


def squared_distances(X: np.ndarray, Z: np.ndarray) -> np.ndarray:
    """‖x_i − z_j‖² for all pairs, via one matrix product (clipped at 0).

    ``(‖x‖² + ‖z‖²) − 2 x·z``, with two (n, m) arrays where the expression written
    out makes four (a 5,000² float64 temporary is 200 MB).
    """
    x2 = np.einsum("ij,ij->i", X, X)
    z2 = np.einsum("ij,ij->i", Z, Z)
    cross = X @ Z.T
    cross *= 2.0
    d2 = np.add(x2[:, None], z2[None, :])
    d2 -= cross
    np.maximum(d2, 0, out=d2)
    return d2


def gaussian_kernel(X: np.ndarray, Z: np.ndarray, omega: float) -> np.ndarray:
    """Gaussian kernel matrix ``exp(-‖x − z‖² / (2 ω²))`` of rows of ``X`` against rows of ``Z``.

    Computed in the dtype of ``X`` (float32 inputs give a float32 matrix).

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern import gaussian_kernel
    >>> X = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]])
    >>> K = gaussian_kernel(X, X, omega=1.0)
    >>> K.shape, K.dtype
    ((3, 3), dtype('float64'))
    >>> np.round(K[0], 3)  # exp(-r² / 2) at the distances r = 0, 1, 2
    array([1.   , 0.607, 0.135])
    >>> gaussian_kernel(X.astype(np.float32), X, omega=1.0).dtype
    dtype('float32')
    """
    dtype = np.result_type(X.dtype, np.float32)
    X = np.asarray(X, dtype=dtype)
    Z = np.asarray(Z, dtype=dtype)
    K = squared_distances(X, Z)
    K *= dtype.type(-omega_to_gamma(omega))
    np.exp(K, out=K)
    return K


@dataclass(frozen=True)
class Kernel:
    """A radial kernel ``k(s, t) = φ(‖s − t‖ / ω)`` of width ``omega``.

    Subclasses set :attr:`name`, :attr:`metric` and :meth:`radial`.

    Parameters
    ----------
    omega : float
        The width ω (> 0).

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern.kernels import Laplacian
    >>> k = Laplacian(omega=2.0)
    >>> np.round(k.radial([0.0, 2.0]), 4)  # exp(-r / ω)
    array([1.    , 0.3679])
    >>> k(np.zeros((1, 2)), np.array([[1.0, 1.0]])).round(4)  # L1 distance 2
    array([[0.3679]])
    """

    omega: float = 1.0

    #: the kernel's name in ``kernel=`` and in saved files
    name: ClassVar[str] = ""
    #: the distance it is a function of: ``"euclidean"`` or ``"manhattan"``
    metric: ClassVar[str] = "euclidean"
    #: the compiled loops' number for it; -1: none (NumPy blocks)
    code: ClassVar[int] = -1

    def __post_init__(self) -> None:
        if not (isinstance(self.omega, int | float | np.integer | np.floating)
                and math.isfinite(self.omega) and self.omega > 0):
            raise ValueError(f"the kernel width omega must be a positive finite number; "
                             f"got {self.omega!r}")
        object.__setattr__(self, "omega", float(self.omega))

    def radial(self, r: Any) -> np.ndarray:
        """The kernel's value at distances ``r`` (float64)."""
        raise NotImplementedError(f"{type(self).__name__} defines no radial function")

    def __call__(self, X: Any, Z: Any) -> np.ndarray:
        """Dense kernel matrix of the rows of ``X`` against the rows of ``Z`` (float64)."""
        return self.radial(pairwise_distances_of(np.atleast_2d(X), np.atleast_2d(Z),
                                                 self.metric))

    def with_width(self, omega: float) -> Kernel:
        """The same kernel at width ``omega``."""
        return dataclasses.replace(self, omega=float(omega))


@dataclass(frozen=True)
class Gaussian(Kernel):
    """The Gaussian kernel ``exp(-r² / (2 ω²))`` (scikit-learn's ``rbf``, ``gamma = 1/(2ω²)``).

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern import Gaussian
    >>> kernel = Gaussian(omega=0.5)
    >>> np.round(kernel.radial([0.0, 0.5, 1.0]), 3)
    array([1.   , 0.607, 0.135])
    >>> kernel(np.zeros((2, 3)), np.ones((4, 3))).shape  # rows of X against rows of Z
    (2, 4)
    """

    name: ClassVar[str] = "gaussian"
    code: ClassVar[int] = 0

    def radial(self, r: Any) -> np.ndarray:
        r = np.asarray(r, dtype=np.float64)
        return np.exp(-omega_to_gamma(self.omega) * r * r)

    def __call__(self, X: Any, Z: Any) -> np.ndarray:
        return gaussian_kernel(np.asarray(X, dtype=np.float64), Z, self.omega)


@dataclass(frozen=True)
class Laplacian(Kernel):
    """The Laplacian kernel ``exp(-‖s − t‖₁ / ω)`` of the L1 distance (scikit-learn's
    ``laplacian``, ``gamma = 1/ω``).

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern.kernels import Laplacian
    >>> from sklearn.metrics.pairwise import laplacian_kernel
    >>> X, Z = np.array([[0.0, 1.0]]), np.array([[1.0, 3.0], [0.5, 0.5]])
    >>> bool(np.allclose(Laplacian(omega=2.0)(X, Z), laplacian_kernel(X, Z, gamma=0.5)))
    True
    """

    name: ClassVar[str] = "laplacian"
    metric: ClassVar[str] = "manhattan"
    code: ClassVar[int] = 1

    def radial(self, r: Any) -> np.ndarray:
        return np.exp(-np.asarray(r, dtype=np.float64) / self.omega)


@dataclass(frozen=True)
class Matern32(Kernel):
    """The Matérn kernel of smoothness 3/2: ``(1 + a) exp(-a)``, ``a = √3 r / ω``.

    Examples
    --------
    >>> from bigkern.kernels import Matern32
    >>> float(Matern32(omega=1.0).radial(0.0))
    1.0
    """

    name: ClassVar[str] = "matern32"
    code: ClassVar[int] = 2

    def radial(self, r: Any) -> np.ndarray:
        a = math.sqrt(3.0) * np.asarray(r, dtype=np.float64) / self.omega
        return (1.0 + a) * np.exp(-a)


@dataclass(frozen=True)
class Matern52(Kernel):
    """The Matérn kernel of smoothness 5/2: ``(1 + a + a²/3) exp(-a)``, ``a = √5 r / ω``.

    Examples
    --------
    >>> from bigkern.kernels import Matern52
    >>> round(float(Matern52(omega=1.0).radial(1.0)), 3)
    0.524
    """

    name: ClassVar[str] = "matern52"
    code: ClassVar[int] = 3

    def radial(self, r: Any) -> np.ndarray:
        a = math.sqrt(5.0) * np.asarray(r, dtype=np.float64) / self.omega
        return (1.0 + a + a * a / 3.0) * np.exp(-a)


#: The built-in kernels by name.
KERNELS: dict[str, type[Kernel]] = {k.name: k for k in (Gaussian, Laplacian, Matern32, Matern52)}


def as_kernel(kernel: str | Kernel | type[Kernel], omega: float) -> Kernel:
    """The kernel value an estimator's ``kernel=`` and ``omega`` describe.

    ``kernel`` is a name of :data:`KERNELS`, a :class:`Kernel` subclass or an
    instance; the width is always ``omega``.

    Examples
    --------
    >>> from bigkern.kernels import as_kernel
    >>> as_kernel("laplacian", 2.0)
    Laplacian(omega=2.0)
    >>> as_kernel("cosine", 1.0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    ValueError: kernel must be one of 'gaussian', 'laplacian', ...; got 'cosine'
    """
    if isinstance(kernel, Kernel):
        return kernel.with_width(omega)
    if isinstance(kernel, type) and issubclass(kernel, Kernel) and kernel is not Kernel:
        return kernel(omega)
    if isinstance(kernel, str) and kernel in KERNELS:
        return KERNELS[kernel](omega)
    names = ", ".join(repr(k) for k in KERNELS)
    raise ValueError(f"kernel must be one of {names}, a Kernel subclass or a Kernel; "
                     f"got {kernel!r}")
