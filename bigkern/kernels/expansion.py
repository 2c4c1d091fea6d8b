"""The fitted kernel expansion every kernel model predicts through.

A :class:`KernelExpansion` is a :class:`~bigkern.kernels.basis.Basis`
(centers, a kernel of width ω, standardization) with coefficients and an
intercept: ``f(x) = Σ_j coef_j k(z(x), c_j) + intercept``. It evaluates Gaussian
float32 expansions by the compiled per-row pass of
:mod:`bigkern.kernels.fused_loops` (or kernel blocks,
:func:`~bigkern.kernels.basis.kernel_blocks`, when asked), Gaussian float64 ones
by the exact per-row pass, and the other kernels row by row in float64
(:mod:`bigkern.kernels.radial_loops`). :func:`kernel_expansion` is the one-call form.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from bigkern.kernels.basis import (
    Basis,
    checked_clip,
    kernel_blocks,
    omega_to_gamma,
)
from bigkern.kernels.fused_loops import exact_expansion, fused_expansion
from bigkern.kernels.kernel import Kernel, as_kernel
from bigkern.kernels.radial_loops import radial_expansion

__all__ = ["KernelExpansion", "kernel_expansion"]


def kernel_expansion(
    X: np.ndarray,
    basis: np.ndarray,
    coef: np.ndarray,
    omega: float,
    intercept: float = 0.0,
    *,
    offset: np.ndarray | None = None,
    scale: np.ndarray | None = None,
    clip: float | None = None,
    dtype: type = np.float32,
    block_rows: int | None = None,
) -> np.ndarray:
    """``f(x) = Σ_j coef_j k(z(x), basis_j) + intercept`` for every row of ``X``.

    ``z(x) = (x − offset) / scale``, clipped to ``±clip`` when given.

    Rows are processed in blocks of ``block_rows`` (:func:`kernel_blocks`) so
    memory stays at one block × basis whatever ``len(X)``; the kernel block is
    formed in ``dtype`` (float32 by default: the exp is the cost and SIMD
    float32 halves it) and folded into a float64 result. Rows with a
    non-finite feature give NaN.
    """
    expansion = KernelExpansion.from_parts(basis, coef, intercept, omega, offset, scale,
                                             clip=clip, dtype=np.dtype(dtype).name)
    return expansion.decision(X, block_rows=block_rows)


@dataclass(frozen=True, eq=False)
class KernelExpansion:
    """A fitted Gaussian kernel expansion: everything a model needs to predict.

    ``f(x) = Σ_j coef_j exp(-‖z(x) − c_j‖² / (2 ω²)) + intercept``,
    with the centers ``c_j``, width and standardization of ``basis``. The binned,
    baseline, reduced, OHT/RM and Gaussian RLS models all predict through one of
    these (``model.expansion_``), and so does :func:`bigkern.predict_scenes`.

    Parameters
    ----------
    basis : Basis
        Centers, width ω and standardization.
    coef : ndarray, shape (m,) or (m, k)
        One coefficient per center, or one column per output (a classifier's k
        classes: each row's kernel values are formed once and serve every column).
    intercept : float or ndarray, shape (k,)
        Added to every decision value (one per column).
    dtype : {"float32", "float64"}
        Precision of the kernel blocks (float32 halves the cost of the exp; the
        sum is float64 either way). Regressors use float64.

    Examples
    --------
    ``f(x) = exp(-x² / 2) - exp(-(x - 2)² / 2) + 0.5``:

    >>> import numpy as np
    >>> from bigkern import KernelExpansion
    >>> f = KernelExpansion.from_parts([[0.0], [2.0]], coef=[1.0, -1.0], intercept=0.5,
    ...                                  omega=1.0, dtype="float64")
    >>> f.n_basis, f.n_features
    (2, 1)
    >>> np.round(f.decision(np.array([[0.0], [1.0], [np.nan]])), 3)  # NaN in, NaN out
    array([1.365, 0.5  ,   nan])
    """

    basis: Basis
    coef: np.ndarray
    intercept: float | np.ndarray = 0.0
    dtype: str = "float32"

    @classmethod
    def from_parts(cls, centers: Any, coef: Any, intercept: Any, omega: float,
                   offset: Any = None, scale: Any = None, *, clip: float | None = None,
                   dtype: str = "float32",
                   kernel: str | Kernel | type[Kernel] = "gaussian") -> KernelExpansion:
        """Build and validate from arrays; ``centers`` may have no rows when ``coef`` is empty.

        ``coef`` of shape (m,) (or (m, 1)-like: raveled) gives one output; (m, k) with
        k ≥ 2 gives k, and ``intercept`` is then one number per column (or one for all).
        ``kernel`` is a name, a :class:`~bigkern.kernels.Kernel` class or an instance; its
        width is ``omega``.
        """
        C = np.asarray(centers, dtype=np.float64)
        c = np.asarray(coef, dtype=np.float64)
        c = c if c.ndim == 2 and c.shape[1] > 1 else c.ravel()
        if C.ndim != 2 or C.shape[0] != len(c):
            raise ValueError(f"an expansion needs one coefficient per center; got centers of "
                             f"shape {C.shape} and {len(c)} coefficients")
        if c.ndim == 2:
            b = np.asarray(intercept, dtype=np.float64)
            if b.ndim > 1 or b.size not in (1, c.shape[1]):
                raise ValueError(f"an expansion of {c.shape[1]} columns needs one intercept "
                                 f"per column (or one for all); got shape {b.shape}")
            b = np.broadcast_to(b, (c.shape[1],)).copy()
            b.flags.writeable = False
            c.flags.writeable = False
            intercepts: float | np.ndarray = b
        else:
            intercepts = float(np.asarray(intercept, dtype=np.float64).reshape(()))
        d = C.shape[1]
        if len(c):
            basis = Basis.checked(C, omega, d, offset, scale, clip, kernel)
        else:  # every basis function thresholded away: f is the intercept
            off = np.zeros(d) if offset is None else np.asarray(offset, dtype=np.float64)
            sc = np.ones(d) if scale is None else np.asarray(scale, dtype=np.float64)
            basis = Basis(C, as_kernel(kernel, float(omega)), off, sc, checked_clip(clip))
        if np.dtype(dtype) not in (np.float32, np.float64):
            raise ValueError(f"dtype must be float32 or float64; got {dtype!r}")
        return cls(basis, c, intercepts, np.dtype(dtype).name)

    @property
    def n_basis(self) -> int:
        """Number of basis functions (bins, samples, support vectors or a reduced set)."""
        return len(self.coef)

    @property
    def n_outputs(self) -> int:
        """Columns of the decision values: 1 for a (m,) ``coef``, else k."""
        return 1 if self.coef.ndim == 1 else int(self.coef.shape[1])

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
    def kernel(self) -> Kernel:
        """The kernel (with its width ω)."""
        return self.basis.kernel

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
        """``f`` for the rows of ``X`` (n, d), float64, shape (n,) or (n, k) for k outputs;
        NaN where a feature is non-finite.

        Parameters
        ----------
        X : ndarray, shape (n, d)
            Raw rows (standardized here).
        block_rows : int, optional
            Rows per kernel block of the BLAS path.
        path : {"auto", "fused", "exact", "blas"}
            ``"fused"``: one compiled pass per row in float32
            (:func:`~bigkern.kernels.fused_loops.fused_expansion`; float32 expansions
            only); ``"exact"``: one compiled pass per row in float64 with the C
            library's ``exp`` (:func:`~bigkern.kernels.fused_loops.exact_expansion`);
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
        >>> from bigkern import KernelExpansion
        >>> e = KernelExpansion.from_parts(np.zeros((1, 2)), [2.0], 0.5, omega=1.0,
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
        b = self.basis
        if self.n_basis and b.is_gaussian and path != "blas":
            if path == "fused" and self.dtype != "float32":
                raise ValueError("the fused path evaluates float32 kernels; this expansion is "
                                 f"{self.dtype}")
            fused = path == "fused" or (path == "auto" and self.dtype == "float32")
            # each row by itself in a compiled loop that writes the output: no other sweep
            return (fused_expansion if fused else exact_expansion)(
                X, b.centers, self.coef, omega_to_gamma(self.omega), self.intercept, b.offset,
                b.scale, b.clip)
        shape = (len(X),) if self.coef.ndim == 1 else (len(X), self.n_outputs)
        out = np.full(shape, np.nan, dtype=np.float64)
        if not self.n_basis:
            out[np.isfinite(X).all(axis=1)] = self.intercept
            return out
        if not b.is_gaussian and path != "blas":
            return self._radial(X, out)
        dtype = np.dtype(self.dtype)
        c = self.coef.astype(dtype)
        for rows, G in kernel_blocks(X, self.basis, block_rows=block_rows, dtype=dtype,
                                     fused=False):
            out[rows] = G @ c
        out += self.intercept
        return out

    def _radial(self, X: np.ndarray, out: np.ndarray) -> np.ndarray:
        """A kernel other than the Gaussian, each row by itself in float64."""
        b = self.basis
        if b.kernel.code > 0:
            out[:] = radial_expansion(X, b.centers, self.coef, b.kernel, self.intercept,
                                      b.offset, b.scale, b.clip)
            return out
        for rows, G in kernel_blocks(X, b, dtype=np.float64):  # a kernel of one's own
            out[rows] = G @ self.coef
        return out + self.intercept  # NaN rows stay NaN
