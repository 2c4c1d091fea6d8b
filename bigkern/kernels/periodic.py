"""The periodic Gaussian kernel on [0, 1) (Shi & Yu eq. 6), exact or wrapped, as a value.

``K(s, t) = Σ_{l ∈ ℤ} exp(−l² ω² / 2) cos(2π l (s − t)) = Σ_{k ∈ ℤ} φ_σ(s − t − k)``
with ``σ = ω / (2π)``; :func:`exact_periodic_kernel` sums the Fourier series to
double precision, :func:`wrapped_gaussian_kernel` is Shi & Yu's approximation
``G^J`` (the terms ``|k| ≤ J`` of the wrapped Gaussian, on the circle distance),
with ``0 < K − G^J ≤`` :func:`wrap_error_bound`. :class:`PeriodicGaussian` is the
kernel as a :class:`~bigkern.kernels.Kernel` value — a radial function of the circle
distance, of width ω, with its approximation — that the smoothers of
:mod:`bigkern.solvers.periodic` and :class:`~bigkern.models.PeriodicKernelRidge` take.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike

from bigkern.kernels.kernel import Kernel

__all__ = [
    "APPROXIMATIONS",
    "PeriodicGaussian",
    "exact_periodic_kernel",
    "wrap_error_bound",
    "wrapped_gaussian_kernel",
]

#: How the periodic kernel is computed: its exact series, or Shi & Yu's wrapped ``G^J``.
APPROXIMATIONS = ("exact", "wrapped")

_SQRT_2PI = math.sqrt(2.0 * math.pi)
# terms below exp(-_LOG_TOL) of the largest one do not change a double
_LOG_TOL = 42.0  # e^-42 ≈ 6e-19


def _check_omega(omega: float) -> float:
    w = float(omega)
    if not (math.isfinite(w) and w > 0):
        raise ValueError(f"the kernel width omega must be positive and finite; got {omega!r}")
    return w


def _differences(s: ArrayLike, t: ArrayLike) -> np.ndarray:
    """Distance on the circle ``min(|s_i − t_j| mod 1, 1 − …)`` in [0, 1/2].

    Both kernels are even in ``s − t``; working from ``|s − t|`` (which is
    exactly symmetric in floating point) makes ``K(x, x)`` exactly symmetric.
    """
    s = np.asarray(s, dtype=np.float64).reshape(-1)
    t = np.asarray(t, dtype=np.float64).reshape(-1)
    d = np.mod(np.abs(s[:, None] - t[None, :]), 1.0)
    return np.minimum(d, 1.0 - d)


def _wrapped_at(d: np.ndarray, w: float, J: int) -> np.ndarray:
    """``G^J`` at circle distances ``d``."""
    sigma = w / (2.0 * math.pi)
    out = np.zeros_like(d)
    for k in range(-int(J), int(J) + 1):
        out += np.exp(-0.5 * ((d - k) / sigma) ** 2)
    return out / (_SQRT_2PI * sigma)


def _exact_at(d: np.ndarray, w: float) -> np.ndarray:
    """``K`` at circle distances ``d``: whichever exact series is shorter at this ω."""
    n_fourier = math.ceil(math.sqrt(2.0 * _LOG_TOL) / w)
    sigma = w / (2.0 * math.pi)
    n_wrap = math.ceil(math.sqrt(2.0 * _LOG_TOL) * sigma + 0.5)
    if 2 * n_wrap + 1 <= n_fourier:
        return _wrapped_at(d, w, n_wrap)
    out = np.ones_like(d)
    for ell in range(1, n_fourier + 1):
        out += 2.0 * math.exp(-0.5 * (ell * w) ** 2) * np.cos(2.0 * math.pi * ell * d)
    return out


def wrapped_gaussian_kernel(s: ArrayLike, t: ArrayLike, omega: float, J: int = 1) -> np.ndarray:
    """Wrapped-Gaussian approximation ``G^J(s, t) = Σ_{|k| ≤ J} φ_σ(d − k)`` of ``K``.

    Parameters
    ----------
    s, t : array_like, shape (n,) and (m,)
        Points on the circle [0, 1) (any real numbers: only ``s − t mod 1`` matters).
    omega : float
        Width ω of eq. (6); the Gaussian's standard deviation is ``σ = ω / (2π)``.
    J : int, default 1
        Number of wraps on each side (Shi & Yu use J = 1).

    Returns
    -------
    ndarray, shape (n, m)
        ``G^J``, with ``d`` the circle distance of ``s`` and ``t`` (in [0, 1/2]); it
        underestimates ``K`` by at most :func:`wrap_error_bound` ``(omega, J)``.
    """
    w = _check_omega(omega)
    if int(J) != J or J < 0:
        raise ValueError(f"J must be a non-negative integer; got {J!r}")
    return _wrapped_at(_differences(s, t), w, int(J))


def wrap_error_bound(omega: float, J: int = 1) -> float:
    """Upper bound of ``K − G^J`` over all ``s, t`` (circle distances ``|d| ≤ 1/2``).

    The missing terms are ``φ_σ(d − k)``, ``|k| > J``, each at distance at least
    ``|k| − 1/2`` from 0; the bound sums ``2 φ_σ(k − 1/2)`` over ``k > J``.
    For J = 1 and ω = 1 it is 2.6·10⁻¹⁹, i.e. 2π × 4.1·10⁻²⁰ in Shi & Yu's scale
    (their 2.1·10⁻²⁰ is the largest single omitted term; this counts both sides).
    """
    w = _check_omega(omega)
    sigma = w / (2.0 * math.pi)
    total = 0.0
    for k in range(int(J) + 1, int(J) + 200):
        term = 2.0 * math.exp(-0.5 * ((k - 0.5) / sigma) ** 2) / (_SQRT_2PI * sigma)
        total += term
        if term <= 1e-300 or term < 1e-18 * total:
            break
    return total


def exact_periodic_kernel(s: ArrayLike, t: ArrayLike, omega: float) -> np.ndarray:
    """The periodic Gaussian kernel ``K`` of eq. (6) to double precision.

    Sums whichever of the two exact series is shorter at this ω: the Fourier
    series ``1 + 2 Σ_{l=1}^{L} e^{−l²ω²/2} cos(2πl d)`` (fast for large ω) or the
    wrapped Gaussian ``Σ_{|k| ≤ J} φ_σ(d − k)`` (fast for small ω), each
    truncated where the omitted terms are below ~1e-18 of the largest.

    Parameters
    ----------
    s, t : array_like, shape (n,) and (m,)
        Points on the circle [0, 1).
    omega : float
        Width ω of eq. (6).

    Returns
    -------
    ndarray, shape (n, m)
    """
    return _exact_at(_differences(s, t), _check_omega(omega))


@dataclass(frozen=True)
class PeriodicGaussian(Kernel):
    """The periodic Gaussian kernel of Shi & Yu (eq. 6) on the circle [0, 1), of width ω.

    A radial function of the circle distance ``d = min(|s − t| mod 1, 1 − …)``: the
    exact series (``approximation="exact"``) or Shi & Yu's wrapped approximation
    ``G^J`` with ``J = n_wraps`` (``"wrapped"``). Points are numbers (any real: only
    ``s − t mod 1`` matters), given as shape (n,) or (n, 1).

    Parameters
    ----------
    omega : float
        The width ω of eq. (6); the wrapped Gaussian's standard deviation is ω / (2π).
    approximation : {"exact", "wrapped"}
        How it is computed.
    n_wraps : int
        Wraps ``J`` of ``G^J`` on each side (with ``"wrapped"``).

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern.kernels import PeriodicGaussian
    >>> kernel = PeriodicGaussian(omega=1.0)
    >>> K = kernel([0.0, 0.25, 0.9], [0.0, 1.0])
    >>> K.shape, bool(np.allclose(K[:, 0], K[:, 1]))  # period 1
    ((3, 2), True)
    >>> wrapped = PeriodicGaussian(1.0, approximation="wrapped")
    >>> bool(np.abs(wrapped([0.1], [0.6]) - kernel([0.1], [0.6])).max() < 1e-15)
    True
    """

    approximation: str = "exact"
    n_wraps: int = 1

    name: ClassVar[str] = "periodic"
    metric: ClassVar[str] = "circle"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.approximation not in APPROXIMATIONS:
            raise ValueError(f"approximation must be one of {APPROXIMATIONS}; got "
                             f"{self.approximation!r}")
        if int(self.n_wraps) != self.n_wraps or self.n_wraps < 0:
            raise ValueError(f"n_wraps must be a non-negative integer; got {self.n_wraps!r}")

    def radial(self, r: Any) -> np.ndarray:
        """The kernel at circle distances ``r`` (in [0, 1/2])."""
        d = np.asarray(r, dtype=np.float64)
        if self.approximation == "wrapped":
            return _wrapped_at(d, self.omega, int(self.n_wraps))
        return _exact_at(d, self.omega)

    def __call__(self, X: Any, Z: Any) -> np.ndarray:
        """The kernel matrix ``K(s_i, t_j)`` of points ``X`` (n,) against ``Z`` (m,)."""
        return self.radial(_differences(X, Z))
