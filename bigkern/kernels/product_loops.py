"""Products with the reduced kernel matrix, never forming it: ``Gᵀ[G V | W]`` row by row.

A conjugate-gradient iteration of the Nyström solve needs ``Gᵀ(G v)`` for
``G = K(A, Ã)`` (n × m̃). Formed block by block (:func:`bigkern.kernels.kernel_blocks`),
each block is written to memory, converted to float64 and read twice more by two
thin matrix products, which run far below the processor's peak: at m̃ in the
thousands a block does not stay in cache. Here one compiled loop per row does
it all while the row's m̃ kernel values stay in L1/L2:

* the kernel values ``g_j = exp(-γ‖z − c_j‖²)`` in float32, by the same
  compiled arithmetic as the fused kernel block (:mod:`bigkern.kernels.fused_loops`);
* the row's weights ``s_c = Σ_j g_j V[c, j]`` in float64 (a vector in CG's
  coefficient space may hold large values of both signs, which float32 sums
  would cancel away), then the row's extra weights (its target, a one);
* ``acc[c, j] += g_j · w_c`` in float64 for every weight ``w_c``.

The products are sums over rows in a fixed order within a chunk, so a chunk's
result does not depend on the blocks or threads around it; the chunks' sums
are added by the pass's tree reduction. Vectorized with ``fastmath``, a sum
over ``j`` is reassociated the same way on every call of one compiled function
(it depends on the processor's vector width, as every fused path's does).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from bigkern.kernels.fused_loops import _FASTMATH, _LOG2E, _LOWEST, _kernel_row

__all__ = ["fused_kernel_products"]


@numba.njit(nogil=True, cache=True, fastmath=_FASTMATH)
def _fused_products(X: np.ndarray, rows: np.ndarray, offset: np.ndarray, scale_: np.ndarray,
                    clip: float, centers_t: np.ndarray, gamma: float, lowest: np.float32,
                    V: np.ndarray, extra: np.ndarray,
                    acc: np.ndarray) -> None:  # pragma: no cover - compiled
    d = X.shape[1]
    m = centers_t.shape[1]
    k = V.shape[0]
    e = extra.shape[1]
    z_row = np.empty(d, np.float32)
    dist = np.empty(m, np.float32)
    value = np.empty(m, np.float32)
    w = np.empty(k + e, np.float64)
    scale = np.float32(-gamma) * _LOG2E
    floor = lowest * _LOG2E
    for a in range(len(rows)):
        _kernel_row(X, rows[a], offset, scale_, clip, centers_t, scale, floor, z_row, dist,
                    value)
        for c in range(k):  # float32 values times float64 vectors, summed in float64
            vc = V[c]
            s = 0.0
            for j in range(m):
                s += value[j] * vc[j]
            w[c] = s
        for c in range(e):
            w[k + c] = extra[a, c]
        for c in range(k + e):
            ac = acc[c]
            wc = w[c]
            for j in range(m):
                ac[j] += value[j] * wc


def fused_kernel_products(X: np.ndarray, rows: np.ndarray, centers_t: np.ndarray,
                          gamma: float, offset: np.ndarray, scale: np.ndarray,
                          vectors: np.ndarray, extra: np.ndarray, acc: np.ndarray,
                          clip: float = math.inf) -> None:
    """Add ``Gᵀ[G V | extra]`` over the rows ``X[rows]`` to ``acc``, ``G = K(Z, Ã)`` (float32).

    Parameters
    ----------
    X : ndarray, shape (n, d)
        Raw rows (float32 or float64, C-contiguous); the rows used must be finite.
    rows : ndarray of int64
        Rows of ``X`` to use, in order.
    centers_t : ndarray, shape (d, m), float32, C-contiguous
        The standardized centers, feature-major.
    gamma : float
        ``1 / (2 ω²)``.
    offset, scale : ndarray, shape (d,), float64
        Standardization ``z = (x − offset) / scale``.
    vectors : ndarray, shape (k, m), float64, C-contiguous
        ``Vᵀ``: each row one vector ``v`` of the products ``Gᵀ(G v)``.
    extra : ndarray, shape (len(rows), e), float64, C-contiguous
        Per-row weights ``w`` of the products ``Gᵀw`` (targets, ones); ``e`` may be 0.
    acc : ndarray, shape (k + e, m), float64, C-contiguous
        Added to in place: row ``c < k`` gets ``Gᵀ(G V[c])``, row ``k + c`` gets
        ``Gᵀ extra[:, c]``.
    clip : float
        ``z`` is clipped to ``±clip`` (default ``inf``: not clipped).

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern.kernels import gaussian_kernel
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((50, 3)).astype(np.float32)
    >>> C = X[:7].astype(np.float64)
    >>> v, ones = rng.standard_normal((1, 7)), np.ones((50, 1))
    >>> acc = np.zeros((2, 7))
    >>> fused_kernel_products(X, np.arange(50), np.ascontiguousarray(C.T, np.float32), 0.5,
    ...                       np.zeros(3), np.ones(3), v, ones, acc)
    >>> G = gaussian_kernel(X.astype(np.float64), C, 1.0)
    >>> bool(np.allclose(acc[0], G.T @ (G @ v[0]), rtol=1e-5))
    True
    >>> bool(np.allclose(acc[1], G.sum(axis=0), rtol=1e-5))
    True
    """
    if len(rows):
        _fused_products(X, np.asarray(rows, dtype=np.int64), offset, scale, float(clip),
                        centers_t, float(gamma), _LOWEST, vectors, extra, acc)
