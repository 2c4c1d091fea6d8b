"""Kernel functions, evaluated block-wise so that no n×m matrix is ever whole.

The Gaussian kernel is written with the width ω of Shi & Yu:
``k(s, t) = exp(-‖s − t‖² / (2 ω²))`` (scikit-learn's ``gamma`` is
``1 / (2 ω²)``; the paper's normalising constant is absorbed into the
coefficients).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from bigkern import config
from bigkern.errors import BigkernWarning

__all__ = [
    "CompactSupport",
    "Gaussian",
    "gaussian_kernel",
    "kernel_expansion",
    "omega_to_gamma",
    "row_blocks",
]


def omega_to_gamma(omega: float) -> float:
    """scikit-learn's ``gamma`` for the Gaussian width ``omega``: ``1 / (2 ω²)``."""
    if not omega > 0:
        raise ValueError(f"the kernel width omega must be positive; got {omega!r}")
    return 1.0 / (2.0 * float(omega) ** 2)


def squared_distances(X: np.ndarray, Z: np.ndarray) -> np.ndarray:
    """‖x_i − z_j‖² for all pairs, via one matrix product (clipped at 0)."""
    x2 = np.einsum("ij,ij->i", X, X)
    z2 = np.einsum("ij,ij->i", Z, Z)
    d2 = x2[:, None] + z2[None, :] - 2.0 * (X @ Z.T)
    np.maximum(d2, 0, out=d2)
    return d2


def gaussian_kernel(X: np.ndarray, Z: np.ndarray, omega: float) -> np.ndarray:
    """Gaussian kernel matrix ``exp(-‖x − z‖² / (2 ω²))`` of rows of ``X`` against rows of ``Z``.

    Computed in the dtype of ``X`` (float32 inputs give a float32 matrix).
    """
    dtype = np.result_type(X.dtype, np.float32)
    X = np.asarray(X, dtype=dtype)
    Z = np.asarray(Z, dtype=dtype)
    K = squared_distances(X, Z)
    K *= dtype.type(-omega_to_gamma(omega))
    np.exp(K, out=K)
    return K


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
class Gaussian:
    """The Gaussian kernel ``exp(-r² / (2 ω²))`` as a function of the distance ``r``."""

    omega: float = 1.0

    def __post_init__(self) -> None:
        omega_to_gamma(self.omega)  # validates

    def radial(self, r: np.ndarray) -> np.ndarray:
        """Kernel value at distances ``r``."""
        r = np.asarray(r, dtype=np.float64)
        return np.exp(-omega_to_gamma(self.omega) * r * r)

    def __call__(self, X: np.ndarray, Z: np.ndarray) -> np.ndarray:
        """Dense kernel matrix of the rows of ``X`` against the rows of ``Z`` (float64)."""
        return gaussian_kernel(np.asarray(X, dtype=np.float64), Z, self.omega)


@dataclass(frozen=True)
class CompactSupport:
    """A radial kernel tapered to compact support (Zhang, Genton & Liu, eq. 1).

    ``k_C(x, x') = [(1 − ‖x − x'‖ / C)₊]^ν · k(x, x')``: zero beyond distance
    ``C``, so Gram matrices are sparse. The taper is a truncated power
    function, positive definite on R^d for integer ``ν ≥ (d + 1) / 2``
    (Gneiting 2002), so the product kernel is too. ``nu=None`` takes that
    smallest valid integer for the data's dimension; a smaller ``nu`` is
    allowed with a :class:`~bigkern.errors.BigkernWarning`.

    Parameters
    ----------
    kernel : radial kernel
        Anything with ``radial(r)``, e.g. :class:`Gaussian`.
    C : float
        Support radius (> 0), in the units of the (standardized) features.
    nu : int, optional
        Power of the taper (≥ 1).
    """

    kernel: Gaussian
    C: float
    nu: int | None = None

    def __post_init__(self) -> None:
        if not (isinstance(self.C, int | float | np.floating | np.integer) and self.C > 0
                and math.isfinite(self.C)):
            raise ValueError(f"the support radius C must be a positive finite number; "
                             f"got {self.C!r}")
        if self.nu is not None and (int(self.nu) != self.nu or self.nu < 1):
            raise ValueError(f"the taper power nu must be an integer >= 1; got {self.nu!r}")
        if not hasattr(self.kernel, "radial"):
            raise TypeError(f"kernel must be a radial kernel with .radial(r); got "
                            f"{type(self.kernel).__name__}")

    @staticmethod
    def minimal_nu(d: int) -> int:
        """Smallest integer ``ν ≥ (d + 1) / 2``: the taper is positive definite on R^d."""
        return math.ceil((int(d) + 1) / 2)

    def nu_for(self, d: int) -> int:
        """The taper power used for ``d`` features (warns when below :meth:`minimal_nu`)."""
        least = self.minimal_nu(d)
        if self.nu is None:
            return least
        if self.nu < least:
            warnings.warn(
                f"nu={self.nu} is below (d + 1) / 2 = {(d + 1) / 2} for d = {d} features: "
                f"the compactly supported kernel may not be positive definite (use nu >= "
                f"{least})", BigkernWarning, stacklevel=3)
        return int(self.nu)

    def taper(self, r: np.ndarray, d: int) -> np.ndarray:
        """``[(1 − r / C)₊]^ν`` at distances ``r`` for ``d`` features."""
        r = np.asarray(r, dtype=np.float64)
        base = np.maximum(1.0 - r / self.C, 0.0)
        out = base.copy()
        for _ in range(self.nu_for(d) - 1):  # integer power by products: ~10x faster than **
            out *= base
        return out

    def radial(self, r: np.ndarray, d: int) -> np.ndarray:
        """Kernel value at distances ``r`` for ``d`` features."""
        return self.taper(r, d) * self.kernel.radial(r)

    def __call__(self, X: np.ndarray, Z: np.ndarray) -> np.ndarray:
        """Dense kernel matrix (for checks and small problems; see ``sparse_gram``)."""
        X = np.asarray(X, dtype=np.float64)
        return self.radial(pairwise_distances(X, Z), X.shape[1])


def row_blocks(n: int, block_rows: int | None = None) -> Iterator[slice]:
    """Slices of at most ``block_rows`` rows (default: ``bigkern.kernel_block_rows``)."""
    step = int(block_rows or config.get("kernel_block_rows"))
    for start in range(0, n, step):
        yield slice(start, min(n, start + step))


def kernel_expansion(
    X: np.ndarray,
    basis: np.ndarray,
    coef: np.ndarray,
    omega: float,
    intercept: float = 0.0,
    *,
    offset: np.ndarray | None = None,
    scale: np.ndarray | None = None,
    dtype: type = np.float32,
    block_rows: int | None = None,
) -> np.ndarray:
    """``f(x) = Σ_j coef_j k((x − offset) / scale, basis_j) + intercept`` for every row of ``X``.

    Rows are processed in blocks of ``block_rows`` so memory stays at one
    block × basis whatever ``len(X)``; the kernel block is formed in ``dtype``
    (float32 by default: the exp is the cost and SIMD float32 halves it) in
    one work buffer reused by every block, and folded into a float64 result.
    Rows with a non-finite feature give NaN.

    The exponent is ``2γ z·b − γ‖z‖² − γ‖b‖²`` (``-γ‖z − b‖²``, with
    ``γ = 1 / (2ω²)``) clipped to ``[log(tiny), 0]``: 0 against rounding, and
    ``log`` of the smallest normal float (-87 for float32) so that far pairs
    give ``exp ≈ 1e-38`` rather than a subnormal, which SIMD exp handles at
    half speed. The change to ``f`` is below ``1e-37 · Σ|coef|``.
    """
    X = np.asarray(X)
    n, d = X.shape
    offset = np.zeros(d) if offset is None else np.asarray(offset, dtype=np.float64)
    scale = np.ones(d) if scale is None else np.asarray(scale, dtype=np.float64)
    gamma = omega_to_gamma(omega)
    B = np.asarray(basis, dtype=np.float64)
    B2g = np.ascontiguousarray((2.0 * gamma * B).T, dtype=dtype)  # (d, m)
    b2g = (gamma * np.einsum("ij,ij->i", B, B)).astype(dtype)  # (m,)
    c = np.asarray(coef, dtype=dtype)
    lowest = float(np.ceil(np.log(np.finfo(dtype).tiny)))
    out = np.full(n, np.nan, dtype=np.float64)
    step = min(n, int(block_rows or config.get("kernel_block_rows"))) or 1
    # Work buffers allocated once: dask workers set MALLOC_TRIM_THRESHOLD_, which turns
    # off glibc's adaptive mmap threshold, so a fresh multi-MB temporary per block would
    # be a fresh mmap (and page faults) per block.
    work = np.empty((step, len(c)), dtype=dtype)
    for sl in row_blocks(n, step):
        Z = (np.asarray(X[sl], dtype=np.float64) - offset) / scale
        finite = np.isfinite(Z).all(axis=1)
        rows = None if finite.all() else np.flatnonzero(finite)
        if rows is not None:
            Z = Z[rows]
        m = len(Z)
        if m == 0:
            continue
        K = work[:m]
        np.matmul(Z.astype(dtype), B2g, out=K)
        K -= (gamma * np.einsum("ij,ij->i", Z, Z)).astype(dtype)[:, None]
        K -= b2g[None, :]
        np.clip(K, lowest, 0, out=K)
        np.exp(K, out=K)
        values = K @ c
        if rows is None:
            out[sl] = values
        else:
            out[sl.start + rows] = values
    out += intercept
    return out
