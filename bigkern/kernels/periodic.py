"""The periodic Gaussian kernel on [0, 1) (Shi & Yu eq. 6), exact or wrapped.

``K(s, t) = Σ_{l ∈ ℤ} exp(−l² ω² / 2) cos(2π l (s − t)) = Σ_{k ∈ ℤ} φ_σ(s − t − k)``
with ``σ = ω / (2π)``; :func:`exact_periodic_kernel` sums the Fourier series to
double precision, :func:`wrapped_gaussian_kernel` is Shi & Yu's approximation
``G^J`` (the terms ``|k| ≤ J`` of the wrapped Gaussian, on the circle distance),
with ``0 < K − G^J ≤`` :func:`wrap_error_bound`. The smoothers that use them are
in :mod:`bigkern.solvers.periodic`.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "exact_periodic_kernel",
    "periodic_gaussian_kernel",
    "wrap_error_bound",
    "wrapped_gaussian_kernel",
]

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
    sigma = w / (2.0 * math.pi)
    d = _differences(s, t)
    out = np.zeros_like(d)
    for k in range(-int(J), int(J) + 1):
        out += np.exp(-0.5 * ((d - k) / sigma) ** 2)
    return out / (_SQRT_2PI * sigma)


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
    w = _check_omega(omega)
    n_fourier = math.ceil(math.sqrt(2.0 * _LOG_TOL) / w)
    sigma = w / (2.0 * math.pi)
    n_wrap = math.ceil(math.sqrt(2.0 * _LOG_TOL) * sigma + 0.5)
    if 2 * n_wrap + 1 <= n_fourier:
        return wrapped_gaussian_kernel(s, t, w, J=n_wrap)
    d = _differences(s, t)
    out = np.ones_like(d)
    for ell in range(1, n_fourier + 1):
        out += 2.0 * math.exp(-0.5 * (ell * w) ** 2) * np.cos(2.0 * math.pi * ell * d)
    return out


def periodic_gaussian_kernel(
    s: ArrayLike, t: ArrayLike, omega: float, *, kernel: str = "exact", J: int = 1
) -> np.ndarray:
    """``K(s_i, t_j)``: the exact series (``kernel="exact"``) or ``G^J`` (``"wrapped"``)."""
    if kernel == "exact":
        return exact_periodic_kernel(s, t, omega)
    if kernel == "wrapped":
        return wrapped_gaussian_kernel(s, t, omega, J=J)
    raise ValueError(f"kernel must be 'exact' or 'wrapped'; got {kernel!r}")
