"""The fused Gaussian expansion: a compiled pass that never forms the kernel block.

``f(z) = Σ_j c_j exp(-γ‖z − c_j‖²)`` for a row ``z`` is the distance to every
center, an exponential and a weighted sum. The BLAS path of
:func:`bigkern.kernels.kernel_blocks` writes a (rows × m) block, then clips it,
exponentiates it and multiplies it by ``c``: four sweeps over memory. Here one
compiled loop per row does all of it in vectors of length m that stay in L1:

* distances ``‖z − c_j‖²`` accumulated feature by feature (centers stored
  feature-major so the loop over ``j`` is contiguous and vectorizes);
* the exponent ``max(−γ‖z − c_j‖², log(tiny))`` — the same clipping as the
  BLAS path: never above 0, and never so low that the result is subnormal;
* ``exp`` written out so that it vectorizes: ``e·log2(e) = k + r`` with ``k``
  an integer and ``|r| ≤ ½``; ``2^r`` by its degree-6 Taylor polynomial
  (relative error below 1.7e-7 on that interval, float32 round-off level) and
  ``2^k`` added to the result's exponent bits, in registers
  (:mod:`bigkern.kernels.loop_intrinsics`), in the same sweep as the last
  feature's distance;
* the weighted sum, accumulated in float32 like the BLAS path's ``sgemv``; a
  classifier's k columns each by the same loop after one evaluation of the
  row's kernel values, so a column's values do not depend on k.

numba compiles it with ``fastmath`` (reassociation, contraction; not the
no-NaN/no-inf assumptions: a row with a non-finite feature is found in the
loop and gives NaN), so LLVM vectorizes each loop over the centers at the
widest width the CPU has (AVX-512 where there is one: on Intel LLVM would keep
to 256 bits, :func:`~bigkern.kernels.loop_intrinsics.prefer_wide_vectors`; AVX2
elsewhere), and :func:`fused_expansion` pads the centers to a multiple of
:data:`LANES` with zero coefficients, so that no center is left to a scalar
remainder loop. It releases the GIL, so dask's threads run it in parallel.
The sums' order (and so their last bits) depends on the vector width, not on
the rows around a row. :data:`FUSED_MAX_FEATURES` is the crossover for
the normal-equation passes' kernel blocks: the distance loop is d passes over
the centers, and a BLAS product, which computes the distances at its GEMM rate,
wins there when there are many features. Predictions take this path for every
number of features, because it evaluates each row by itself: a pixel's value
does not depend on the block, chunk or worker around it, which no BLAS product
can promise.

:func:`exact_expansion` is the float64 counterpart for the regressors' float64
expansions: the same per-row loop without ``fastmath`` and with the C
library's ``exp``, each row's order of operations fixed.
"""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np

from bigkern.kernels.loop_intrinsics import (
    float32_bits,
    float32_from_bits,
    prefer_wide_vectors,
)

__all__ = ["FUSED_MAX_FEATURES", "LANES", "exact_expansion", "fused_expansion",
           "fused_kernel_block"]

#: float32 lanes of the widest vectors (AVX-512's 512 bits): the fused expansion pads its
#: centers to a multiple of this many
LANES = 16

#: Above this many features the BLAS path is as fast or faster: the distances, whose share
#: of the work grows with the features, run at its GEMM rate rather than in d passes.
FUSED_MAX_FEATURES = 12

_LN2 = math.log(2.0)
_C0, _C1, _C2, _C3, _C4, _C5, _C6 = (np.float32(_LN2**k / math.factorial(k)) for k in range(7))
_LOG2E = np.float32(1.0 / _LN2)
_LOWEST = np.float32(math.ceil(math.log(np.finfo(np.float32).tiny)))  # -87, as kernel_blocks


#: fastmath without "nnan"/"ninf": the loop tests for non-finite features itself
_FASTMATH = {"nsz", "arcp", "contract", "afn", "reassoc"}


@numba.njit(inline="always")  # inlined by numba: the loops that call it still vectorize
def _pow2_fraction(r: np.float32) -> np.float32:  # pragma: no cover - compiled
    """``2^r`` for ``|r| ≤ ½`` by its degree-6 Taylor polynomial: in [0.70, 1.42], a normal
    float of exponent 126 or 127, so adding ``k << 23`` to its bits multiplies it by ``2^k``."""
    p = _C6 * r + _C5
    p = p * r + _C4
    p = p * r + _C3
    p = p * r + _C2
    p = p * r + _C1
    return p * r + _C0


@numba.njit(nogil=True, cache=True, fastmath=_FASTMATH)
def _fused_rows(X: np.ndarray, offset: np.ndarray, scale_: np.ndarray, clip: float,
                centers_t: np.ndarray, coef_t: np.ndarray, gamma: float, intercept: np.ndarray,
                lowest: np.float32, out: np.ndarray) -> None:  # pragma: no cover - compiled
    """Each row's expansion for each of the k columns of ``coef_t`` (k, m) into ``out``
    (n, k): the row's kernel values formed once, then folded into its k sums, each by
    the same loop (so a column's values do not depend on k)."""
    prefer_wide_vectors()
    n, d = X.shape
    m = centers_t.shape[1]
    z_row = np.empty(d, np.float32)
    dist = np.empty(m, np.float32)  # ‖z − c_j‖² over the features before the last
    value = np.empty(m, np.float32)  # exp(e_j)
    scale = np.float32(-gamma) * _LOG2E  # exponent in base 2
    floor = lowest * _LOG2E
    last = d - 1
    for i in range(n):
        finite = True
        for f in range(d):  # standardized in float64, then float32 (as exponent_left)
            x = np.float64(X[i, f])
            if not np.isfinite(x):
                finite = False
            z_row[f] = np.float32(min(max((x - offset[f]) / scale_[f], -clip), clip))
        if not finite:
            out[i, :] = np.nan
            continue
        if d == 1:
            dist[:] = 0
        else:
            z = z_row[0]
            for j in range(m):
                t = z - centers_t[0, j]
                dist[j] = t * t
        for f in range(1, last):
            z = z_row[f]
            for j in range(m):
                t = z - centers_t[f, j]
                dist[j] += t * t
        z = z_row[last]
        for j in range(m):  # the last feature, the exponent, 2^r and 2^k in one sweep
            t = z - centers_t[last, j]
            e = max(scale * (dist[j] + t * t), floor)
            k = np.floor(e + np.float32(0.5))
            # 2^k added to the exponent bits of 2^r: k >= -126, so never subnormal
            value[j] = float32_from_bits(float32_bits(_pow2_fraction(e - k))
                                         + (np.int32(k) << 23))
        for c in range(coef_t.shape[0]):
            s = np.float32(0)
            for j in range(m):
                s += value[j] * coef_t[c, j]
            out[i, c] = s + intercept[c]


@numba.njit(nogil=True, cache=True, fastmath=_FASTMATH)
def _kernel_row(X: np.ndarray, i: int, offset: np.ndarray, scale_: np.ndarray, clip: float,
                centers_t: np.ndarray, scale: np.float32, floor: np.float32,
                z_row: np.ndarray, dist: np.ndarray,
                value: np.ndarray) -> None:  # pragma: no cover - compiled
    """``value[j] = exp(-γ‖z_i − c_j‖²)`` (float32) for row ``i``, as in :func:`_fused_rows`;
    ``scale = −γ·log2(e)``, ``floor = lowest·log2(e)``; the other arrays are work space."""
    d = X.shape[1]
    m = centers_t.shape[1]
    for f in range(d):
        z_row[f] = np.float32(min(max((np.float64(X[i, f]) - offset[f]) / scale_[f], -clip),
                                  clip))
    dist[:] = 0
    for f in range(d):
        z = z_row[f]
        for j in range(m):
            t = z - centers_t[f, j]
            dist[j] += t * t
    for j in range(m):  # exponent, 2^r and 2^k, as in _fused_rows
        e = max(scale * dist[j], floor)
        k = np.floor(e + np.float32(0.5))
        value[j] = float32_from_bits(float32_bits(_pow2_fraction(e - k)) + (np.int32(k) << 23))


@numba.njit(nogil=True, cache=True, fastmath=_FASTMATH)
def _fused_block(X: np.ndarray, rows: np.ndarray, offset: np.ndarray, scale_: np.ndarray,
                 clip: float, centers_t: np.ndarray, gamma: float, lowest: np.float32,
                 out: np.ndarray) -> None:  # pragma: no cover - compiled
    d = X.shape[1]
    m = centers_t.shape[1]
    z_row = np.empty(d, np.float32)
    dist = np.empty(m, np.float32)
    value = np.empty(m, np.float32)
    scale = np.float32(-gamma) * _LOG2E
    floor = lowest * _LOG2E
    for a in range(len(rows)):
        _kernel_row(X, rows[a], offset, scale_, clip, centers_t, scale, floor, z_row, dist,
                    value)
        for j in range(m):
            out[a, j] = value[j]


@numba.njit(nogil=True, cache=True)  # no fastmath: one fixed order of operations per row
def _exact_rows(X: np.ndarray, offset: np.ndarray, scale_: np.ndarray, clip: float,
                centers_t: np.ndarray, coef_t: np.ndarray, gamma: float, intercept: np.ndarray,
                lowest: float, out: np.ndarray) -> None:  # pragma: no cover - compiled
    """Each row's expansion for each of the k columns of ``coef_t`` (k, m) into ``out``
    (n, k); with no fastmath, column c's value is the same, bit for bit, whatever k is."""
    n, d = X.shape
    m = centers_t.shape[1]
    z_row = np.empty(d, np.float64)
    dist = np.empty(m, np.float64)
    for i in range(n):
        finite = True
        for f in range(d):
            x = np.float64(X[i, f])
            if not np.isfinite(x):
                finite = False
            z_row[f] = min(max((x - offset[f]) / scale_[f], -clip), clip)
        if not finite:
            out[i, :] = np.nan
            continue
        dist[:] = 0.0
        for f in range(d):  # each dist[j] sums its features in order: vectorizing over j
            z = z_row[f]    # changes nothing
            for j in range(m):
                t = z - centers_t[f, j]
                dist[j] += t * t
        for j in range(m):
            dist[j] = math.exp(max(-gamma * dist[j], lowest))  # the C library's exp
        # four running sums in a fixed pattern (not reassociated: written out), so that
        # the additions need not wait on each other
        top = m - m % 4
        for c in range(coef_t.shape[0]):
            s0 = s1 = s2 = s3 = 0.0
            for j in range(0, top, 4):
                s0 += coef_t[c, j] * dist[j]
                s1 += coef_t[c, j + 1] * dist[j + 1]
                s2 += coef_t[c, j + 2] * dist[j + 2]
                s3 += coef_t[c, j + 3] * dist[j + 3]
            for j in range(top, m):
                s0 += coef_t[c, j] * dist[j]
            out[i, c] = ((s0 + s1) + (s2 + s3)) + intercept[c]


def fused_kernel_block(X: np.ndarray, rows: np.ndarray, centers_t: np.ndarray, gamma: float,
                       offset: np.ndarray, scale: np.ndarray, out: np.ndarray,
                       clip: float = math.inf) -> None:
    """Write ``exp(-γ‖z_i − c_j‖²)`` of the rows ``X[rows]`` into ``out`` (len(rows), m).

    The kernel block of the normal-equation passes in one compiled sweep per row
    (distances feature by feature, the clipped exponent, the vectorized ``exp``
    of :func:`fused_expansion`), instead of a product with ``K = d + 2`` (which
    BLAS runs far below its peak) and three elementwise sweeps.

    Parameters
    ----------
    X : ndarray, shape (n, d)
        Raw rows (float32 or float64); the rows used must be finite.
    rows : ndarray of int64
        Rows of ``X`` to evaluate, in order.
    centers_t : ndarray, shape (d, m), float32, C-contiguous
        The standardized centers, feature-major.
    gamma : float
        ``1 / (2 ω²)``.
    offset, scale : ndarray, shape (d,), float64
        Standardization ``z = (x − offset) / scale``.
    out : ndarray, shape (len(rows), m), float32
        Written in place; each row must be contiguous (a column slice of a wider
        C-ordered array is fine).
    clip : float
        ``z`` is clipped to ``±clip`` (default ``inf``: not clipped).
    """
    if len(rows):
        _fused_block(X, np.asarray(rows, dtype=np.int64), offset, scale, float(clip),
                     centers_t, float(gamma), _LOWEST, out)


def fused_expansion(X: np.ndarray, centers: np.ndarray, coef: np.ndarray, gamma: float,
                    intercept: Any = 0.0, offset: np.ndarray | None = None,
                    scale: np.ndarray | None = None, clip: float = math.inf) -> np.ndarray:
    """``Σ_j coef_j exp(-γ‖z − c_j‖²) + intercept`` for every row, ``z = (x − offset) / scale``
    clipped to ``±clip``.

    Parameters
    ----------
    X : ndarray, shape (n, d)
        Raw rows, float32 or float64 (others are converted); a row with a
        non-finite feature gives NaN.
    centers : ndarray, shape (m, d)
        The centers ``c_j``, standardized (evaluated in float32).
    coef : ndarray, shape (m,) or (m, k)
        The coefficients (float32): one column per output (a classifier's k classes),
        each row's kernel values formed once for all of them.
    gamma : float
        ``1 / (2 ω²)``.
    intercept : float or ndarray, shape (k,)
        Added to every sum (one per column).
    offset, scale : ndarray, shape (d,), optional
        Standardization (default none).
    clip : float
        Bound on the standardized values (default ``inf``: not clipped).

    Returns
    -------
    ndarray, shape (n,) or (n, k), float64
        The sums (float32 arithmetic, as the BLAS path's float32 blocks).
    """
    coef = np.asarray(coef)
    columns = coef[:, None] if coef.ndim == 1 else coef
    X, offset, scale, centers_t, c = _prepared(X, offset, scale, centers, columns.T, np.float32)
    centers_t, c = _padded_to_lanes(centers_t, c)
    out = np.empty((len(X), columns.shape[1]), dtype=np.float64)
    if len(X):
        _fused_rows(X, offset, scale, float(clip), centers_t, c, float(gamma),
                    _intercepts(intercept, columns.shape[1]), _LOWEST, out)
    return out if coef.ndim == 2 else out[:, 0]


def _padded_to_lanes(centers_t: np.ndarray, coef_t: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Centers (d, m) and coefficients (k, m) padded with zeros to a multiple of
    :data:`LANES` columns: the compiled loops' vectors are then all full, with no
    scalar remainder. A padded center's kernel value is finite and its coefficient
    0, so it adds exactly 0 to every sum."""
    m = centers_t.shape[1]
    wide = -(-m // LANES) * LANES
    if wide == m:
        return centers_t, coef_t
    padded_centers = np.zeros((centers_t.shape[0], wide), dtype=centers_t.dtype)
    padded_centers[:, :m] = centers_t
    padded_coef = np.zeros((coef_t.shape[0], wide), dtype=coef_t.dtype)
    padded_coef[:, :m] = coef_t
    return padded_centers, padded_coef


def _intercepts(intercept: Any, k: int) -> np.ndarray:
    """One intercept per column: ``intercept`` of shape (k,) or a scalar for all k."""
    b = np.asarray(intercept, dtype=np.float64)
    if b.ndim == 0:
        return np.full(k, float(b))
    if b.shape != (k,):
        raise ValueError(f"intercept must be a number or one per column ({k}); got shape "
                         f"{b.shape}")
    return np.ascontiguousarray(b)


def _prepared(X: np.ndarray, offset: np.ndarray | None, scale: np.ndarray | None,
              centers: np.ndarray, coef: np.ndarray, dtype: type
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The arguments of the compiled loops, all C-contiguous (one compiled specialization
    whatever the caller's layouts, so the image's warmed numba cache serves every model):
    rows, float64 standardization, feature-major centers and coefficients in ``dtype``."""
    X = np.ascontiguousarray(X)
    if X.dtype not in (np.float32, np.float64):
        X = X.astype(np.float64)
    d = X.shape[1]
    offset = np.zeros(d) if offset is None else np.ascontiguousarray(offset, dtype=np.float64)
    scale = np.ones(d) if scale is None else np.ascontiguousarray(scale, dtype=np.float64)
    centers_t = np.ascontiguousarray(np.asarray(centers, dtype=dtype).T)
    return X, offset, scale, centers_t, np.ascontiguousarray(coef, dtype=dtype)


def exact_expansion(X: np.ndarray, centers: np.ndarray, coef: np.ndarray, gamma: float,
                    intercept: Any = 0.0, offset: np.ndarray | None = None,
                    scale: np.ndarray | None = None, clip: float = math.inf) -> np.ndarray:
    """:func:`fused_expansion` in float64, with each row's arithmetic fixed.

    Every row is evaluated by itself, in one order of operations (no
    reassociation: the distance to each center sums its features in order,
    ``exp`` is the C library's, and the weighted sum runs as four interleaved
    partial sums in a pattern fixed by the number of centers), so a row's value
    is a function of that row alone: the same, bit for bit, in whatever block,
    chunk, thread or worker it is computed. A BLAS product cannot promise this:
    OpenBLAS picks kernels, and summation orders, by the block's shape and the
    processor. This is the float64 path of
    :meth:`~bigkern.kernels.KernelExpansion.decision` (the regressors').

    Parameters
    ----------
    X : ndarray, shape (n, d)
        Raw rows; a row with a non-finite feature gives NaN.
    centers : ndarray, shape (m, d)
        Standardized centers.
    coef : ndarray, shape (m,) or (m, k)
        Coefficients, one column per output; a column's values are the same, bit for
        bit, as those of a one-column expansion of it.
    gamma : float
        ``1 / (2 ω²)``.
    intercept : float or ndarray, shape (k,)
        Added to every sum (one per column).
    offset, scale : ndarray, shape (d,), optional
        Standardization (default none).
    clip : float
        Bound on the standardized values (default ``inf``: not clipped).

    Returns
    -------
    ndarray, shape (n,) or (n, k), float64

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0, 0.0], [1.0, 1.0]])
    >>> exact_expansion(X, np.zeros((1, 2)), np.array([2.0]), 0.5).round(6).tolist()
    [2.0, 0.735759]
    """
    coef = np.asarray(coef)
    columns = coef.reshape(len(coef), -1)
    X, offset, scale, centers_t, c = _prepared(X, offset, scale, centers, columns.T,
                                               np.float64)
    out = np.empty((len(X), columns.shape[1]), dtype=np.float64)
    if len(X):
        lowest = float(np.ceil(np.log(np.finfo(np.float64).tiny)))
        _exact_rows(X, offset, scale, float(clip), centers_t, c, float(gamma),
                    _intercepts(intercept, columns.shape[1]), lowest, out)
    return out if coef.ndim == 2 else out[:, 0]
