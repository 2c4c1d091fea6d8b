"""Compactly supported kernels (Zhang, Genton & Liu): a radial kernel tapered to zero."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from bigkern.errors import BigkernWarning
from bigkern.kernels.kernel import Kernel

__all__ = ["CompactSupport", "pairwise_distances"]


def pairwise_distances(X: np.ndarray, Z: np.ndarray) -> np.ndarray:
    """Euclidean distances ‖x_i − z_j‖ of all pairs (float64), summed feature by feature.

    The same arithmetic as ``scipy.spatial.distance.cdist`` (no ``‖x‖² + ‖z‖² − 2x·z``
    cancellation), so distances of coincident points are exactly 0.
    """
    X = np.asarray(X, dtype=np.float64)
    Z = np.asarray(Z, dtype=np.float64)
    out = np.zeros((len(X), len(Z)))
    for f in range(X.shape[1]):
        diff = X[:, f, None] - Z[None, :, f]
        diff *= diff
        out += diff
    return np.sqrt(out, out=out)


@dataclass(frozen=True)
class CompactSupport:
    """A radial kernel tapered to compact support (Zhang, Genton & Liu, eq. 1).

    ``k_C(x, x') = [(1 − ‖x − x'‖ / C)₊]^ν · k(x, x')``: zero beyond distance
    ``C`` (``radius``), so Gram matrices are sparse. The taper is a truncated power
    function, positive definite on R^d for integer ``ν ≥ (d + 1) / 2``
    (Gneiting 2002), so the product kernel is too. ``taper_power=None`` takes that
    smallest valid integer for the data's dimension; a smaller ``taper_power`` is
    allowed with a :class:`~bigkern.errors.BigkernWarning`.

    Parameters
    ----------
    kernel : Kernel
        A radial kernel of the Euclidean distance (its ``radial(r)``), e.g.
        :class:`Gaussian` or :class:`Matern32`.
    radius : float
        Support radius (> 0, the paper's C), in the units of the (standardized) features.
    taper_power : int, optional
        Power ν of the taper (≥ 1).

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern import CompactSupport, Gaussian
    >>> kernel = CompactSupport(Gaussian(omega=1.0), radius=1.5)
    >>> kernel.minimal_taper_power(d=2)
    2
    >>> np.round(kernel.radial([0.0, 0.75, 1.5, 3.0], d=2), 3)  # zero from the radius on
    array([1.   , 0.189, 0.   , 0.   ])
    >>> X = np.random.default_rng(0).uniform(0, 5, size=(50, 2))
    >>> K = kernel(X, X)
    >>> K.shape, bool((K == 0).mean() > 0.5)  # mostly zeros: sparse Gram matrices
    ((50, 50), True)
    """

    kernel: Kernel
    radius: float
    taper_power: int | None = None

    def __post_init__(self) -> None:
        if not (isinstance(self.radius, int | float | np.floating | np.integer) and self.radius > 0
                and math.isfinite(self.radius)):
            raise ValueError(f"the support radius must be a positive finite number; "
                             f"got {self.radius!r}")
        power = self.taper_power
        if power is not None and (int(power) != power or power < 1):
            raise ValueError(f"the taper power must be an integer >= 1; got {self.taper_power!r}")
        if not hasattr(self.kernel, "radial"):
            raise TypeError(f"kernel must be a radial kernel with .radial(r); got "
                            f"{type(self.kernel).__name__}")

    @staticmethod
    def minimal_taper_power(d: int) -> int:
        """Smallest integer ``ν ≥ (d + 1) / 2``: the taper is positive definite on R^d."""
        return math.ceil((int(d) + 1) / 2)

    def taper_power_for(self, d: int) -> int:
        """The taper power for ``d`` features (warns when below :meth:`minimal_taper_power`)."""
        least = self.minimal_taper_power(d)
        if self.taper_power is None:
            return least
        if self.taper_power < least:
            warnings.warn(
                f"taper_power={self.taper_power} is below (d + 1) / 2 = {(d + 1) / 2} for "
                f"d = {d} features: "
                f"the compactly supported kernel may not be positive definite (use taper_power >= "
                f"{least})", BigkernWarning, stacklevel=3)
        return int(self.taper_power)

    def taper(self, r: np.ndarray, d: int) -> np.ndarray:
        """``[(1 − r / C)₊]^ν`` at distances ``r`` for ``d`` features."""
        r = np.asarray(r, dtype=np.float64)
        base = np.maximum(1.0 - r / self.radius, 0.0)
        out = base.copy()
        for _ in range(self.taper_power_for(d) - 1):  # repeated products cost less than ** here
            out *= base
        return out

    def radial(self, r: np.ndarray, d: int) -> np.ndarray:
        """Kernel value at distances ``r`` for ``d`` features."""
        return self.taper(r, d) * self.kernel.radial(r)

    def __call__(self, X: np.ndarray, Z: np.ndarray) -> np.ndarray:
        """Dense kernel matrix (for checks and small problems; see ``sparse_gram``)."""
        X = np.asarray(X, dtype=np.float64)
        return self.radial(pairwise_distances(X, Z), X.shape[1])
