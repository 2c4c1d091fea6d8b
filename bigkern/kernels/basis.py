"""Kernel bases, and the one place their blocks are formed.

A :class:`Basis` (centers, a kernel of width ω, standardization) is the basis of
every bigkern model with kernel basis functions; the expansion each predicts
through, a basis with coefficients, is
:class:`bigkern.kernels.expansion.KernelExpansion`. :func:`kernel_blocks` forms
the kernel blocks ``K(X_b, centers)`` one block of rows at a time, for
predictions and for the distributed passes that fold blocks into normal
equations: the Gaussian ``exp(-‖s − t‖² / (2 ω²))`` (Shi & Yu's width; the
paper's normalising constant is absorbed into the coefficients) by a matrix
product or its fused loop, the other kernels row by row
(:mod:`bigkern.kernels.radial_loops`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from bigkern import config
from bigkern.features.scaling import standardized
from bigkern.kernels.fused_loops import FUSED_MAX_FEATURES, fused_kernel_block
from bigkern.kernels.kernel import (
    Gaussian,
    Kernel,
    as_kernel,
    omega_to_gamma,
    pairwise_distances_of,
)
from bigkern.kernels.radial_loops import radial_block

__all__ = [
    "Basis",
    "block_step",
    "exponent_left",
    "exponent_right",
    "kernel_blocks",
    "row_blocks",
    "syrk_product",
]


def block_step(n: int, block_rows: int | None = None) -> int:
    """Rows per kernel block for ``n`` rows: ``block_rows`` or ``bigkern.kernel_block_rows``."""
    return max(1, min(n, int(block_rows or config.get("kernel_block_rows"))))


def row_blocks(n: int, block_rows: int | None = None) -> Iterator[slice]:
    """Slices of at most ``block_rows`` rows (default: ``bigkern.kernel_block_rows``)."""
    step = int(block_rows or config.get("kernel_block_rows"))
    for start in range(0, n, step):
        yield slice(start, min(n, start + step))


@dataclass(frozen=True, eq=False)
class Basis:
    """Kernel basis functions ``g_j(x) = k(z(x), c_j)`` of one kernel of width ω.

    ``z(x) = clip((x − offset) / scale, −clip, clip)`` per feature
    (:func:`bigkern.features.scaling.standardized`).

    Parameters
    ----------
    centers : ndarray, shape (m, d)
        The basis functions' centers (bins, support vectors, a reduced set Ã),
        in the standardized space.
    kernel : Kernel
        The kernel and its width ω (:class:`~bigkern.kernels.Gaussian` for every
        model unless its ``kernel=`` says otherwise).
    offset, scale : ndarray, shape (d,)
        Standardization applied to the data before the kernel (zeros / ones for none).
    clip : float
        Standardized values are clipped to ``±clip`` (``inf``, the default: not clipped).

    Examples
    --------
    :meth:`checked` builds one, validating each part against the data's ``d``:

    >>> from bigkern import Basis
    >>> basis = Basis.checked([[0.0, 0.0], [1.0, 1.0]], omega=0.5, d=2, scale=[2.0, 2.0])
    >>> basis.n_basis, basis.offset.tolist(), basis.scale.tolist(), basis.kernel
    (2, [0.0, 0.0], [2.0, 2.0], Gaussian(omega=0.5))
    >>> Basis.checked([[0.0, 0.0]], omega=0.5, d=3)
    Traceback (most recent call last):
        ...
    ValueError: centers have 2 columns but X has 3 features
    """

    centers: np.ndarray
    kernel: Kernel
    offset: np.ndarray
    scale: np.ndarray
    clip: float = math.inf

    @classmethod
    def checked(cls, centers: Any, omega: float, d: int, offset: Any = None,
                scale: Any = None, clip: float | None = None,
                kernel: str | Kernel | type[Kernel] = "gaussian") -> Basis:
        """Validate the parts for data with ``d`` features; every error names the argument.

        ``kernel`` is a name, a :class:`~bigkern.kernels.Kernel` class or an instance
        (:func:`~bigkern.kernels.as_kernel`); its width is ``omega``.
        """
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
        return cls(C, as_kernel(kernel, float(omega)), vecs[0], vecs[1], checked_clip(clip))

    @property
    def omega(self) -> float:
        """The kernel's width ω."""
        return self.kernel.omega

    @property
    def is_gaussian(self) -> bool:
        """Whether the kernel is the Gaussian (which has the fused loops)."""
        return type(self.kernel) is Gaussian

    def with_width(self, omega: float) -> Basis:
        """The same basis at width ``omega``."""
        return Basis(self.centers, self.kernel.with_width(omega), self.offset, self.scale,
                     self.clip)

    @property
    def n_basis(self) -> int:
        """Number of basis functions m̃."""
        return int(self.centers.shape[0])


def checked_clip(clip: Any) -> float:
    """``clip`` as a float bound (``None`` → ``inf``); raises unless it is positive.

    Examples
    --------
    >>> checked_clip(None), checked_clip(5)
    (inf, 5.0)
    """
    if clip is None:
        return math.inf
    if not isinstance(clip, int | float | np.integer | np.floating) or not clip > 0:
        raise ValueError(f"clip (the bound on standardized values) must be a positive "
                         f"number or None; got {clip!r}")
    return float(clip)


def kernel_blocks(
    X: np.ndarray,
    basis: Basis,
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
    basis : Basis
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
        (:func:`bigkern.kernels.fused_loops.fused_kernel_block`) instead of a BLAS product
        and three elementwise sweeps. Default: for float32 blocks of at most
        :data:`~bigkern.kernels.fused_loops.FUSED_MAX_FEATURES` features.

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
    subnormal, which SIMD exp handles on a slow path. This is the one place in
    bigkern where Gaussian kernel blocks are formed.
    """
    X = np.asarray(X)
    if dtype is None:
        dtype = np.float32 if X.dtype.itemsize <= 4 and X.dtype.kind == "f" else np.float64
    dtype = np.dtype(dtype)
    n = X.shape[0]
    if valid is None:
        valid = np.isfinite(X).all(axis=1)
    if not basis.is_gaussian:
        if fused:
            raise ValueError(f"the fused kernel block is the Gaussian's; the basis's kernel "
                             f"is {basis.kernel!r}")
        yield from _radial_blocks(X, basis, valid, block_step(n, block_rows), dtype)
        return
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
            fused_kernel_block(X, rows, centers_t, gamma, basis.offset, basis.scale, G,
                               basis.clip)
            yield rows, G
            continue
        np.matmul(exponent_left(X[rows], basis, gamma, dtype), right, out=G)
        np.clip(G, lowest, 0, out=G)
        np.exp(G, out=G)
        yield rows, G

def _radial_blocks(X: np.ndarray, basis: Basis, valid: np.ndarray, step: int,
                   dtype: np.dtype) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """:func:`kernel_blocks` of a kernel other than the Gaussian: each row by itself, in
    float64 (a compiled loop for the built-in kernels, NumPy for one's own)."""
    work = np.empty((step, basis.n_basis), dtype=dtype)
    for sl in row_blocks(len(X), step):
        rows = sl.start + np.flatnonzero(valid[sl])
        if len(rows) == 0:
            continue
        G = work[:len(rows)]
        if basis.kernel.code > 0:
            radial_block(X, rows, basis.centers, basis.kernel, basis.offset, basis.scale,
                         basis.clip, G)
        else:
            Z = standardized(X[rows], basis.offset, basis.scale, basis.clip)
            G[...] = basis.kernel.radial(pairwise_distances_of(Z, basis.centers,
                                                               basis.kernel.metric))
        yield rows, G


def syrk_product(B: np.ndarray) -> np.ndarray:
    """``BᵀB`` (both triangles) of a C-ordered block by BLAS ``syrk``, with the GIL released.

    numpy's ``matmul`` recognises ``B.T @ B`` and calls its BLAS's ``?syrk``. It
    is used rather than :func:`scipy.linalg.blas.dsyrk` because scipy's f2py
    wrapper holds the GIL for the whole call: two dask threads then take turns
    instead of running side by side, where numpy's call releases it.
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


def exponent_left(X: np.ndarray, basis: Basis, gamma: float, dtype: Any) -> np.ndarray:
    """Left factor ``[z, −γ‖z‖², 1]`` of raw rows ``X`` standardized to ``z``, (k, d + 2)."""
    Z = standardized(X, basis.offset, basis.scale, basis.clip)
    return np.column_stack([Z, -gamma * np.einsum("ij,ij->i", Z, Z),
                            np.ones(len(Z))]).astype(dtype)
