"""Compiled per-row loops of the Laplacian and Matérn kernels: kernel blocks and expansions.

Each row is standardized, its distance to every center accumulated feature by
feature (L1 for the Laplacian, L2 for the Matérn kernels), and the kernel's
radial function applied, all in float64 with the C library's ``exp`` and one
fixed order of operations per row: a row's kernel values and its expansion do
not depend on the block, chunk or worker around it. The Gaussian has its own
loops (:mod:`bigkern.kernels.fused_loops`); :attr:`bigkern.kernels.Kernel.code`
selects the function here.
"""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np

from bigkern.kernels.kernel import Kernel

__all__ = ["radial_block", "radial_expansion"]

_SQRT3 = math.sqrt(3.0)
_SQRT5 = math.sqrt(5.0)


@numba.njit(nogil=True, cache=True)
def _standardized_row(X: np.ndarray, i: int, offset: np.ndarray, scale_: np.ndarray,
                      clip: float, z: np.ndarray) -> bool:  # pragma: no cover - compiled
    finite = True
    for f in range(X.shape[1]):
        x = np.float64(X[i, f])
        if not np.isfinite(x):
            finite = False
        z[f] = min(max((x - offset[f]) / scale_[f], -clip), clip)
    return finite


@numba.njit(nogil=True, cache=True)
def _kernel_row(code: int, z: np.ndarray, centers_t: np.ndarray, inv_omega: float,
                k: np.ndarray) -> None:  # pragma: no cover - compiled
    """``k[j] = φ(distance(z, c_j))`` for every center, the kernel chosen once per row.

    The distance is accumulated feature by feature (L1 for code 1, squared L2 for codes
    2 and 3), then φ applied; each branch is a loop of its own, so the inner loops are
    free of the choice.
    """
    k[:] = 0.0
    if code == 1:
        for f in range(centers_t.shape[0]):
            zf = z[f]
            for j in range(centers_t.shape[1]):
                k[j] += abs(zf - centers_t[f, j])
        for j in range(k.shape[0]):
            k[j] = math.exp(-k[j] * inv_omega)
        return
    for f in range(centers_t.shape[0]):
        zf = z[f]
        for j in range(centers_t.shape[1]):
            t = zf - centers_t[f, j]
            k[j] += t * t
    if code == 2:
        for j in range(k.shape[0]):
            a = _SQRT3 * math.sqrt(k[j]) * inv_omega
            k[j] = (1.0 + a) * math.exp(-a)
    else:
        for j in range(k.shape[0]):
            a = _SQRT5 * math.sqrt(k[j]) * inv_omega
            k[j] = (1.0 + a + a * a / 3.0) * math.exp(-a)


@numba.njit(nogil=True, cache=True)
def _block_rows(X: np.ndarray, rows: np.ndarray, offset: np.ndarray, scale_: np.ndarray,
                clip: float, centers_t: np.ndarray, code: int, inv_omega: float,
                out: np.ndarray) -> None:  # pragma: no cover - compiled
    d, m = centers_t.shape
    z = np.empty(d, np.float64)
    k = np.empty(m, np.float64)
    for a in range(len(rows)):
        _standardized_row(X, rows[a], offset, scale_, clip, z)
        _kernel_row(code, z, centers_t, inv_omega, k)
        out[a, :] = k


@numba.njit(nogil=True, cache=True)
def _expansion_rows(X: np.ndarray, offset: np.ndarray, scale_: np.ndarray, clip: float,
                    centers_t: np.ndarray, coef_t: np.ndarray, code: int, inv_omega: float,
                    intercept: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover
    """Each row's expansion for each column of ``coef_t`` (k, m) into ``out`` (n, k), the
    row's kernel values formed once; column c's value does not depend on k."""
    d, m = centers_t.shape
    z = np.empty(d, np.float64)
    k = np.empty(m, np.float64)
    for i in range(X.shape[0]):
        if not _standardized_row(X, i, offset, scale_, clip, z):
            out[i, :] = np.nan
            continue
        _kernel_row(code, z, centers_t, inv_omega, k)
        for c in range(coef_t.shape[0]):
            s = 0.0
            for j in range(m):
                s += coef_t[c, j] * k[j]
            out[i, c] = s + intercept[c]


def _compiled(kernel: Kernel) -> int:
    if kernel.code not in (1, 2, 3):
        raise ValueError(f"no compiled loop for the {kernel.name or type(kernel).__name__} "
                         f"kernel here (code {kernel.code})")
    return kernel.code


def radial_block(X: np.ndarray, rows: np.ndarray, centers: np.ndarray, kernel: Kernel,
                 offset: np.ndarray, scale: np.ndarray, clip: float, out: np.ndarray) -> None:
    """Write ``k(z(X[rows]), centers)`` into ``out`` (len(rows), m), row by row.

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern.kernels import Laplacian
    >>> out = np.empty((1, 2))
    >>> radial_block(np.array([[0.0, 0.0]]), np.array([0]), np.array([[0.0, 0.0], [1.0, 1.0]]),
    ...              Laplacian(1.0), np.zeros(2), np.ones(2), np.inf, out)
    >>> out.round(4).tolist()
    [[1.0, 0.1353]]
    """
    code = _compiled(kernel)
    centers_t = np.ascontiguousarray(np.asarray(centers, dtype=np.float64).T)
    _block_rows(X, np.asarray(rows, dtype=np.int64), np.asarray(offset, dtype=np.float64),
                np.asarray(scale, dtype=np.float64), float(clip), centers_t, code,
                1.0 / kernel.omega, out)


def radial_expansion(X: np.ndarray, centers: np.ndarray, coef: np.ndarray, kernel: Kernel,
                     intercept: Any, offset: np.ndarray, scale: np.ndarray,
                     clip: float) -> np.ndarray:
    """``f(x) = Σ_j coef_j k(z(x), c_j) + intercept`` per row (float64; NaN for a row with a
    non-finite feature); ``coef`` (m, k) and ``intercept`` (k,) give k columns (n, k), each
    row's kernel values formed once for all of them.

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern.kernels import Matern32
    >>> radial_expansion(np.array([[0.0], [np.nan]]), np.array([[0.0]]), np.array([2.0]),
    ...                  Matern32(1.0), 0.5, np.zeros(1), np.ones(1), np.inf).tolist()
    [2.5, nan]
    """
    code = _compiled(kernel)
    coef = np.asarray(coef, dtype=np.float64)
    columns = coef.reshape(len(coef), -1)
    out = np.empty((len(X), columns.shape[1]), dtype=np.float64)
    centers_t = np.ascontiguousarray(np.asarray(centers, dtype=np.float64).T)
    _expansion_rows(np.asarray(X), np.asarray(offset, dtype=np.float64),
                    np.asarray(scale, dtype=np.float64), float(clip), centers_t,
                    np.ascontiguousarray(columns.T), code, 1.0 / kernel.omega,
                    np.broadcast_to(np.asarray(intercept, dtype=np.float64),
                                    (columns.shape[1],)).copy(), out)
    return out if coef.ndim == 2 else out[:, 0]
