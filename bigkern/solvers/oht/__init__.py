"""Orthogonalization and hard thresholding regression (Hagiwara 2011).

The model is ``f(x) = Σ_j w_j g_j(x)`` on fixed basis functions (Gaussian
kernels at the training inputs in the paper, any basis here). With ``G`` the
n×m matrix ``G_ij = g_j(x_i)``, an invertible ``Q`` makes the columns of
``A = G Q`` orthogonal, ``AᵀA = Γ = diag(γ_j)``; the least-squares orthogonal
coefficients are ``v̂_j = a_jᵀy / γ_j`` (eq. 6 with ``λ_j = 0``).

* **Stable set** (section 4.3): only components with ``γ_j > η`` are used
  (``l`` of them).
* **Noise variance** (eq. 21, Carter & Eagleson): with ``H = A_l Γ_l⁻¹ A_lᵀ``, a
  projection, ``(I − H)² = I − H``, so
  ``σ̂² = (yᵀy − Σ_{j≤l} (a_jᵀy)² / γ_j) / (n − l)``.
* **Thresholds** (section 4.4): ``θ_j = σ̂² / γ_j · 2 log n``; ``v̄_j = v̂_j`` if
  ``v̂_j² > θ_j`` else 0 (eq. 7).
* **ED / ED2, GS / GS2**: ``m`` is the last surviving component; ED/GS keep only
  the survivors among the first ``m``, ED2/GS2 keep all of the first ``m``
  (section 4.5). The weights are ``w̄ = Q v̄``.

Everything is computed from the normal-equation pieces ``GᵀG``, ``Gᵀy`` and
``yᵀy`` (and the sample count ``n``), so the same solver serves an in-memory
basis and a distributed reduced basis accumulated in one pass:

* ``ED``: ``Q`` = eigenvectors of ``GᵀG`` (descending eigenvalues ``γ_j``),
  ``a_jᵀy = q_jᵀ(Gᵀy)``.
* ``GS``: Gram–Schmidt that orthogonalizes, at each step, the remaining basis
  vector with the largest residual norm. The residual norms are the diagonal of
  the Schur complement of ``GᵀG``, so this is exactly Cholesky with complete
  diagonal pivoting, ``P ᵀ GᵀG P = RᵀR`` (LAPACK ``dpstrf``): ``γ_k = R_kk²``,
  ``a_kᵀy = R_kk (R⁻ᵀ Pᵀ Gᵀy)_k``, and LAPACK stops at the first pivot ``≤ η``,
  which is the stable-set rule. The GS vectors are ``A = G P R⁻¹ diag(R)``, so
  ``w̄ = R_m⁻¹ diag(R_m) v̄`` on the pivoted basis functions ``c_1 … c_m``: a
  sparse model in the original basis. With ``G`` in memory (:func:`oht_fit`) the
  same ``R`` and pivots come from Householder QR of ``G`` with column pivoting,
  which resolves small ``γ`` that a formed ``GᵀG`` blurs.

Intercept: the paper's model has none (it standardizes ``y`` to mean zero). When
``ysum`` (and ``Gsum``) are given, ``y`` is centred first — ``Gᵀy − ȳ·Gᵀ1``,
``yᵀy − nȳ²`` — and ``ȳ`` is returned as the intercept; the denominator of (21)
stays ``n − l`` as in the paper.
"""

from bigkern.solvers.oht.dense import oht_fit, oht_fit_methods
from bigkern.solvers.oht.normal_equations import (
    METHODS,
    NoResidualDegreesOfFreedomError,
    OHTSolution,
    oht_from_normal_equations,
    oht_solutions,
)

__all__ = [
    "METHODS",
    "NoResidualDegreesOfFreedomError",
    "OHTSolution",
    "oht_fit",
    "oht_fit_methods",
    "oht_from_normal_equations",
    "oht_solutions",
]
