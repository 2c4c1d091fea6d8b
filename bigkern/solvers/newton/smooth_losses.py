"""The smooth losses of the reduced SVM and SVR (Lee & Huang, (5) and (6); ε-SSVR).

``p(z, α) = z + log(1 + e^{−αz}) / α`` (6) smooths the plus function ``(z)₊``;
:class:`SmoothHinge` is the squared smooth hinge of problem (5) and
:class:`SmoothEpsilonInsensitive` the squared smooth ε-insensitive loss. Each
gives its value and its first two derivatives in the decision value ``f``,
elementwise, which is all :func:`bigkern.solvers.newton.smooth_svm.newton_armijo` needs.
:class:`SquaredHinge` is their limit α → ∞, ``½ (1 − y f)₊²``: once differentiable,
with the generalized second derivative ``1`` where ``y f < 1`` and ``0`` elsewhere, so
a Newton Hessian sums only the rows inside the margin (the finite Newton method of
:mod:`bigkern.solvers.newton.finite_newton`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit

__all__ = ["SmoothEpsilonInsensitive", "SmoothHinge", "SquaredHinge", "smooth_plus"]


def smooth_plus(z: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``p(z, α)`` of (6) and its first two derivatives, elementwise and overflow-free.

    ``p(z) = z + log(1 + e^{−αz}) / α = log(1 + e^{αz}) / α``,
    ``p'(z) = σ(αz)``, ``p''(z) = α σ(αz) σ(−αz)`` (σ the logistic function).
    """
    az = alpha * np.asarray(z, dtype=np.float64)
    p = np.logaddexp(0.0, az) / alpha
    s = expit(az)
    return p, s, alpha * s * expit(-az)


@dataclass(frozen=True)
class SmoothHinge:
    """The loss of (5): ``ℓ(f, y) = ½ p(1 − y f, α)²`` for labels ``y ∈ {−1, +1}``.

    Parameters
    ----------
    alpha : float
        Smoothing parameter α > 0 of ``p`` (``p → (·)₊`` as α → ∞).
    """

    alpha: float = 5.0

    def __post_init__(self) -> None:
        if not (isinstance(self.alpha, int | float | np.number) and np.isfinite(self.alpha)
                and self.alpha > 0):
            raise ValueError(f"the smoothing parameter alpha must be a positive number; "
                             f"got {self.alpha!r}")

    def value(self, f: np.ndarray, y: np.ndarray) -> np.ndarray:
        """``ℓ(f, y)`` elementwise (``f`` and ``y`` broadcast)."""
        p = np.logaddexp(0.0, self.alpha * (1.0 - y * f)) / self.alpha
        return 0.5 * p * p

    def derivatives(self, f: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``∂ℓ/∂f`` and ``∂²ℓ/∂f²`` (≥ 0) elementwise."""
        p, dp, d2p = smooth_plus(1.0 - y * f, self.alpha)
        return -y * p * dp, dp * dp + p * d2p


@dataclass(frozen=True)
class SquaredHinge:
    """The squared hinge ``ℓ(f, y) = ½ (1 − y f)₊²`` for labels ``y ∈ {−1, +1}``.

    The limit of :class:`SmoothHinge` as α → ∞ (Mangasarian's finite Newton
    classifier; Keerthi & DeCoste's L2-SVM). ``ℓ'' `` is the generalized second
    derivative: 1 inside the margin (``y f < 1``), 0 outside, so only the rows
    inside the margin add to a Newton Hessian.

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern.solvers.newton.smooth_losses import SquaredHinge
    >>> f, y = np.array([-1.0, 0.5, 2.0]), np.ones(3)
    >>> SquaredHinge().value(f, y).tolist()
    [2.0, 0.125, 0.0]
    >>> [d.tolist() for d in SquaredHinge().derivatives(f, y)]
    [[-2.0, -0.5, -0.0], [1.0, 1.0, 0.0]]
    """

    def value(self, f: np.ndarray, y: np.ndarray) -> np.ndarray:
        """``ℓ(f, y)`` elementwise (``f`` and ``y`` broadcast)."""
        r = np.maximum(1.0 - y * f, 0.0)
        return 0.5 * r * r

    def derivatives(self, f: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``∂ℓ/∂f = −y (1 − y f)₊`` and the generalized ``∂²ℓ/∂f²`` (1 or 0) elementwise."""
        r = 1.0 - y * f
        return -y * np.maximum(r, 0.0), (r > 0.0).astype(np.float64)


@dataclass(frozen=True)
class SmoothEpsilonInsensitive:
    """Squared ε-insensitive loss, smoothed (ε-SSVR, for a reduced SVR on the same machinery).

    ``ℓ(f, y) = ½ [p(e − ε, α)² + p(−e − ε, α)²]`` with ``e = y − f``: it tends to
    ``½ (|e| − ε)₊²`` as α → ∞.

    Parameters
    ----------
    alpha : float
        Smoothing parameter α > 0.
    epsilon : float
        Half-width ε ≥ 0 of the insensitive tube.
    """

    alpha: float = 5.0
    epsilon: float = 0.1

    def __post_init__(self) -> None:
        SmoothHinge(self.alpha)  # validates alpha
        if not (isinstance(self.epsilon, int | float | np.number) and np.isfinite(self.epsilon)
                and self.epsilon >= 0):
            raise ValueError(f"epsilon must be a non-negative number; got {self.epsilon!r}")

    def value(self, f: np.ndarray, y: np.ndarray) -> np.ndarray:
        """``ℓ(f, y)`` elementwise (``f`` and ``y`` broadcast)."""
        e = y - f
        a = self.alpha
        p1 = np.logaddexp(0.0, a * (e - self.epsilon)) / a
        p2 = np.logaddexp(0.0, a * (-e - self.epsilon)) / a
        return 0.5 * (p1 * p1 + p2 * p2)

    def derivatives(self, f: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``∂ℓ/∂f`` and ``∂²ℓ/∂f²`` (≥ 0) elementwise."""
        e = y - f
        p1, d1, s1 = smooth_plus(e - self.epsilon, self.alpha)
        p2, d2, s2 = smooth_plus(-e - self.epsilon, self.alpha)
        return p2 * d2 - p1 * d1, d1 * d1 + p1 * s1 + d2 * d2 + p2 * s2
