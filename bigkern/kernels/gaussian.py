"""The Gaussian kernel, and the one place its blocks are formed.

The Gaussian kernel is written with the width ω of Shi & Yu:
``k(s, t) = exp(-‖s − t‖² / (2 ω²))`` (scikit-learn's ``gamma`` is
``1 / (2 ω²)``; the paper's normalising constant is absorbed into the
coefficients). A :class:`GaussianBasis` (centers, width, standardization) is
the basis of every bigkern model with Gaussian basis functions, and a
:class:`GaussianExpansion` (a basis with coefficients and an intercept) is what
each of them predicts through. :func:`kernel_blocks` forms the kernel blocks
``K(X_b, centers)`` one block of rows at a time, for predictions
(:func:`kernel_expansion`) and for the distributed passes that fold blocks into
normal equations.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from bigkern import config
from bigkern.kernels.fused import (
    FUSED_MAX_FEATURES,
    exact_expansion,
    fused_expansion,
    fused_kernel_block,
)

__all__ = [
    "Gaussian",
    "GaussianBasis",
    "GaussianExpansion",
    "block_step",
    "exponent_left",
    "exponent_right",
    "gaussian_kernel",
    "kernel_blocks",
    "kernel_expansion",
    "omega_to_gamma",
    "row_blocks",
    "squared_distances",
    "syrk_product",
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
class Gaussian:
    """The Gaussian kernel ``exp(-r² / (2 ω²))`` as a function of the distance ``r``.

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


def block_step(n: int, block_rows: int | None = None) -> int:
    """Rows per kernel block for ``n`` rows: ``block_rows`` or ``bigkern.kernel_block_rows``."""
    return max(1, min(n, int(block_rows or config.get("kernel_block_rows"))))


def row_blocks(n: int, block_rows: int | None = None) -> Iterator[slice]:
    """Slices of at most ``block_rows`` rows (default: ``bigkern.kernel_block_rows``)."""
    step = int(block_rows or config.get("kernel_block_rows"))
    for start in range(0, n, step):
        yield slice(start, min(n, start + step))


@dataclass(frozen=True, eq=False)
class GaussianBasis:
    """Gaussian basis functions ``g_j(x) = exp(-‖(x − offset)/scale − c_j‖² / (2 ω²))``.

    Parameters
    ----------
    centers : ndarray, shape (m, d)
        The basis functions' centers (bins, support vectors, a reduced set Ã),
        in the standardized space.
    omega : float
        Kernel width ω (> 0).
    offset, scale : ndarray, shape (d,)
        Standardization applied to the data before the kernel (zeros / ones for none).

    Examples
    --------
    :meth:`checked` builds one, validating each part against the data's ``d``:

    >>> from bigkern import GaussianBasis
    >>> basis = GaussianBasis.checked([[0.0, 0.0], [1.0, 1.0]], omega=0.5, d=2, scale=[2.0, 2.0])
    >>> basis.n_basis, basis.offset.tolist(), basis.scale.tolist()
    (2, [0.0, 0.0], [2.0, 2.0])
    >>> GaussianBasis.checked([[0.0, 0.0]], omega=0.5, d=3)
    Traceback (most recent call last):
        ...
    ValueError: centers have 2 columns but X has 3 features
    """

    centers: np.ndarray
    omega: float
    offset: np.ndarray
    scale: np.ndarray

    @classmethod
    def checked(cls, centers: Any, omega: float, d: int, offset: Any = None,
                scale: Any = None) -> GaussianBasis:
        """Validate the parts for data with ``d`` features; every error names the argument."""
        C = np.asarray(centers, dtype=np.float64)
        if C.ndim != 2 or C.shape[0] < 1:
            raise ValueError(f"centers must be a non-empty 2-D array (basis, feature); got "
                             f"shape {C.shape}")
        if C.shape[1] != d:
            raise ValueError(f"centers have {C.shape[1]} columns but X has {d} features")
        bad = ~np.isfinite(C).all(axis=1)
        if bad.any():
            raise ValueError(f"centers have {int(bad.sum())} row(s) with a non-finite value "
                             f"(first: center {int(np.flatnonzero(bad)[0])})")
        if not (isinstance(omega, int | float | np.integer | np.floating)
                and math.isfinite(omega)):
            raise ValueError(f"the kernel width omega must be a positive finite number; "
                             f"got {omega!r}")
        omega_to_gamma(float(omega))  # raises for omega <= 0
        vecs = []
        for name, v, default in (("offset", offset, 0.0), ("scale", scale, 1.0)):
            v = np.full(d, default) if v is None else np.ascontiguousarray(v, dtype=np.float64)
            if v.shape != (d,):
                raise ValueError(f"{name} must have one entry per feature ({d}); got shape "
                                 f"{v.shape}")
            if not np.all(np.isfinite(v)) or (name == "scale" and np.any(v <= 0)):
                what = "positive and finite" if name == "scale" else "finite"
                raise ValueError(f"{name} must be {what}; got {v}")
            vecs.append(v)
        return cls(C, float(omega), vecs[0], vecs[1])

    @property
    def n_basis(self) -> int:
        """Number of basis functions m̃."""
        return int(self.centers.shape[0])


def kernel_blocks(
    X: np.ndarray,
    basis: GaussianBasis,
    *,
    valid: np.ndarray | None = None,
    block_rows: int | None = None,
    dtype: Any = None,
    fused: bool | None = None,
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Kernel blocks ``G_b = K(X_b, Ã)`` of the usable rows of a chunk, one block at a time.

    Parameters
    ----------
    X : ndarray, shape (n, d)
        A chunk of raw (unstandardized) samples.
    basis : GaussianBasis
        Centers, width and standardization.
    valid : ndarray of bool, shape (n,), optional
        Rows to use (default: rows whose features are all finite).
    block_rows : int, optional
        Rows per block (default ``bigkern.kernel_block_rows``).
    dtype : dtype, optional
        Precision of the exponentials: default float32 for float32 (or narrower) data,
        else float64.
    fused : bool, optional
        Evaluate float32 blocks in one compiled sweep per row
        (:func:`bigkern.kernels.fused.fused_kernel_block`) instead of a BLAS product
        and three elementwise sweeps. Default: for float32 blocks of at most
        :data:`~bigkern.kernels.fused.FUSED_MAX_FEATURES` features.

    Yields
    ------
    rows : ndarray of int
        Indices (into ``X``) of the block's rows.
    G : ndarray, shape (len(rows), m)
        The kernel block. It is a view of a work buffer that the next block
        overwrites: fold it into sums before asking for the next one.

    Notes
    -----
    The exponent ``2γ z·c − γ‖z‖² − γ‖c‖²`` (``γ = 1 / (2ω²)``) is clipped to
    ``[log(tiny), 0]``: 0 against rounding, and ``log`` of the smallest normal
    number (-87 for float32) so that far pairs give ``exp ≈ 1e-38`` rather than a
    subnormal, which SIMD exp handles at half speed. This is the one place in
    bigkern where Gaussian kernel blocks are formed.
    """
    X = np.asarray(X)
    if dtype is None:
        dtype = np.float32 if X.dtype.itemsize <= 4 and X.dtype.kind == "f" else np.float64
    dtype = np.dtype(dtype)
    n = X.shape[0]
    if valid is None:
        valid = np.isfinite(X).all(axis=1)
    gamma = omega_to_gamma(basis.omega)
    right = exponent_right(basis.centers, gamma, dtype)
    lowest = float(np.ceil(np.log(np.finfo(dtype).tiny)))
    step = block_step(n, block_rows)
    work = np.empty((step, basis.n_basis), dtype=dtype)
    if fused is None:
        fused = dtype == np.float32 and X.shape[1] <= FUSED_MAX_FEATURES
    if fused and dtype != np.float32:
        raise ValueError(f"the fused kernel block is float32; got dtype={dtype}")
    centers_t = np.ascontiguousarray(basis.centers.T, dtype=np.float32) if fused else None
    for sl in row_blocks(n, step):
        rows = sl.start + np.flatnonzero(valid[sl])
        k = len(rows)
        if k == 0:
            continue
        G = work[:k]
        if fused:
            fused_kernel_block(X, rows, centers_t, gamma, basis.offset, basis.scale, G)
            yield rows, G
            continue
        np.matmul(exponent_left(X[rows], basis, gamma, dtype), right, out=G)
        np.clip(G, lowest, 0, out=G)
        np.exp(G, out=G)
        yield rows, G

def syrk_product(B: np.ndarray) -> np.ndarray:
    """``BᵀB`` (both triangles) of a C-ordered block by BLAS ``syrk``, with the GIL released.

    numpy's ``matmul`` recognises ``B.T @ B`` and calls its BLAS's ``?syrk``. It
    is used rather than :func:`scipy.linalg.blas.dsyrk` because scipy's f2py
    wrapper holds the GIL for the whole call: two dask threads then take turns
    instead of running side by side (timed ad hoc: 10 ``dsyrk`` of 4096 × 501 on each
    of two threads took 2.06× one thread's time; numpy's took 1.02×).
    """
    return B.T @ B



def exponent_right(centers: np.ndarray, gamma: float, dtype: Any) -> np.ndarray:
    """Right factor of the kernel exponent: ``[2γc; 1; −γ‖c‖²]`` per center, (d + 2, m).

    With :func:`exponent_left`, one matrix product gives
    ``2γ z·c − γ‖z‖² − γ‖c‖² = −γ‖z − c‖²`` for every (row, center) pair.
    """
    C = np.asarray(centers, dtype=np.float64)
    return np.vstack([2.0 * gamma * C.T, np.ones(len(C)),
                      -gamma * np.einsum("ij,ij->i", C, C)]).astype(dtype)


def exponent_left(X: np.ndarray, basis: GaussianBasis, gamma: float, dtype: Any) -> np.ndarray:
    """Left factor ``[z, −γ‖z‖², 1]`` of raw rows ``X`` standardized to ``z``, (k, d + 2)."""
    Z = (np.asarray(X, dtype=np.float64) - basis.offset) / basis.scale
    return np.column_stack([Z, -gamma * np.einsum("ij,ij->i", Z, Z),
                            np.ones(len(Z))]).astype(dtype)




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

    Rows are processed in blocks of ``block_rows`` (:func:`kernel_blocks`) so
    memory stays at one block × basis whatever ``len(X)``; the kernel block is
    formed in ``dtype`` (float32 by default: the exp is the cost and SIMD
    float32 halves it) and folded into a float64 result. Rows with a
    non-finite feature give NaN.
    """
    expansion = GaussianExpansion.from_parts(basis, coef, intercept, omega, offset, scale,
                                             dtype=np.dtype(dtype).name)
    return expansion.decision(X, block_rows=block_rows)


@dataclass(frozen=True, eq=False)
class GaussianExpansion:
    """A fitted Gaussian kernel expansion: everything a model needs to predict.

    ``f(x) = Σ_j coef_j exp(-‖(x − offset)/scale − c_j‖² / (2 ω²)) + intercept``,
    with the centers ``c_j``, width and standardization of ``basis``. The binned,
    baseline, reduced, OHT/RM and Gaussian RLS models all predict through one of
    these (``model.expansion_``), and so does :func:`bigkern.predict_scenes`.

    Parameters
    ----------
    basis : GaussianBasis
        Centers, width ω and standardization.
    coef : ndarray, shape (m,)
        One coefficient per center.
    intercept : float
        Added to every decision value.
    dtype : {"float32", "float64"}
        Precision of the kernel blocks (float32 halves the cost of the exp; the
        sum is float64 either way). Regressors use float64.

    Examples
    --------
    ``f(x) = exp(-x² / 2) - exp(-(x - 2)² / 2) + 0.5``:

    >>> import numpy as np
    >>> from bigkern import GaussianExpansion
    >>> f = GaussianExpansion.from_parts([[0.0], [2.0]], coef=[1.0, -1.0], intercept=0.5,
    ...                                  omega=1.0, dtype="float64")
    >>> f.n_basis, f.n_features
    (2, 1)
    >>> np.round(f.decision(np.array([[0.0], [1.0], [np.nan]])), 3)  # NaN in, NaN out
    array([1.365, 0.5  ,   nan])
    """

    basis: GaussianBasis
    coef: np.ndarray
    intercept: float = 0.0
    dtype: str = "float32"

    @classmethod
    def from_parts(cls, centers: Any, coef: Any, intercept: float, omega: float,
                   offset: Any = None, scale: Any = None, *,
                   dtype: str = "float32") -> GaussianExpansion:
        """Build and validate from arrays; ``centers`` may have no rows when ``coef`` is empty."""
        C = np.asarray(centers, dtype=np.float64)
        c = np.asarray(coef, dtype=np.float64).ravel()
        if C.ndim != 2 or C.shape[0] != len(c):
            raise ValueError(f"an expansion needs one coefficient per center; got centers of "
                             f"shape {C.shape} and {len(c)} coefficients")
        d = C.shape[1]
        if len(c):
            basis = GaussianBasis.checked(C, omega, d, offset, scale)
        else:  # every basis function thresholded away: f is the intercept
            omega_to_gamma(float(omega))
            off = np.zeros(d) if offset is None else np.asarray(offset, dtype=np.float64)
            sc = np.ones(d) if scale is None else np.asarray(scale, dtype=np.float64)
            basis = GaussianBasis(C, float(omega), off, sc)
        if np.dtype(dtype) not in (np.float32, np.float64):
            raise ValueError(f"dtype must be float32 or float64; got {dtype!r}")
        return cls(basis, c, float(intercept), np.dtype(dtype).name)

    @property
    def n_basis(self) -> int:
        """Number of basis functions (bins, samples, support vectors or a reduced set)."""
        return len(self.coef)

    @property
    def n_features(self) -> int:
        """Features of the rows the expansion takes."""
        return int(self.basis.centers.shape[1])

    @property
    def centers(self) -> np.ndarray:
        """The centers, in the standardized space (``basis.centers``)."""
        return self.basis.centers

    @property
    def omega(self) -> float:
        """Kernel width ω."""
        return self.basis.omega

    @property
    def offset(self) -> np.ndarray:
        """Standardization offset per feature."""
        return self.basis.offset

    @property
    def scale(self) -> np.ndarray:
        """Standardization scale per feature."""
        return self.basis.scale

    def decision(self, X: np.ndarray, *, block_rows: int | None = None,
                 path: str = "auto") -> np.ndarray:
        """``f`` for the rows of ``X`` (n, d), float64; NaN where a feature is non-finite.

        Parameters
        ----------
        X : ndarray, shape (n, d)
            Raw rows (standardized here).
        block_rows : int, optional
            Rows per kernel block of the BLAS path.
        path : {"auto", "fused", "exact", "blas"}
            ``"fused"``: one compiled pass per row in float32
            (:func:`~bigkern.kernels.fused.fused_expansion`; float32 expansions
            only); ``"exact"``: one compiled pass per row in float64 with the C
            library's ``exp`` (:func:`~bigkern.kernels.fused.exact_expansion`);
            ``"blas"``: kernel blocks by a matrix product, then ``exp`` and a
            matrix-vector product. ``"auto"`` (the default) is ``"fused"`` for a
            float32 expansion and ``"exact"`` for a float64 one: both evaluate each
            row by itself, so a row's value is bit for bit the same in any block,
            chunk or worker, on a given machine. The BLAS path is not: OpenBLAS
            chooses its kernels, and so the order of the sums, by the block's shape
            and the processor (they agree to round-off, about 1e-6 relative in
            float32 and 1e-15 in float64).

        Examples
        --------
        >>> import numpy as np
        >>> from bigkern import GaussianExpansion
        >>> e = GaussianExpansion.from_parts(np.zeros((1, 2)), [2.0], 0.5, omega=1.0,
        ...                                  dtype="float64")
        >>> X = np.array([[0.0, 0.0], [1.0, 1.0], [np.nan, 0.0]])
        >>> e.decision(X).round(6).tolist()
        [2.5, 1.235759, nan]
        """
        X = np.asarray(X)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValueError(f"X must have shape (n, {self.n_features}); got {X.shape}")
        if path not in ("auto", "fused", "exact", "blas"):
            raise ValueError(f"path must be 'auto', 'fused', 'exact' or 'blas'; got {path!r}")
        out = np.full(len(X), np.nan, dtype=np.float64)
        if not self.n_basis:
            out[np.isfinite(X).all(axis=1)] = self.intercept
            return out
        if path == "fused" and self.dtype != "float32":
            raise ValueError("the fused path evaluates float32 kernels; this expansion is "
                             f"{self.dtype}")
        if path == "fused" or (path == "auto" and self.dtype == "float32"):
            return self._fused(X, out)
        if path in ("auto", "exact"):
            out[:] = exact_expansion(X, self.basis.centers, self.coef,
                                     omega_to_gamma(self.omega), self.intercept,
                                     self.basis.offset, self.basis.scale)
            return out
        dtype = np.dtype(self.dtype)
        c = self.coef.astype(dtype)
        for rows, G in kernel_blocks(X, self.basis, block_rows=block_rows, dtype=dtype,
                                     fused=False):
            out[rows] = G @ c
        out += self.intercept
        return out

    def _fused(self, X: np.ndarray, out: np.ndarray) -> np.ndarray:
        """The fused path (standardization and the NaN rule inside the compiled loop)."""
        out[:] = fused_expansion(X, self.basis.centers, self.coef, omega_to_gamma(self.omega),
                                 self.intercept, self.basis.offset, self.basis.scale)
        return out
