"""Approximate ridge leverage scores of the rows, and centers drawn in proportion to them.

The ridge leverage score of row ``i`` at penalty λ (on a *sum* of squares, as the
Nyström models' ``lam``) is ``ℓ_λ(x_i) = (K (K + λ I)⁻¹)_ii`` — in Rudi, Carratino &
Rosasco's (2018) notation ``λ = n·λ_BLESS``. Their sum is the effective dimension of
the kernel ridge problem, and centers drawn in proportion to them give a Nyström
approximation as accurate as a uniform draw with fewer centers.

:func:`~bigkern.reduce.reduced.leverage_rounds.leverage_rounds` estimates them bottom-up,
as BLESS does, in a few reads of the rows. Round 0 is the uniform (stratified) draw of
:func:`~bigkern.reduce.reduced.reduced_set.select_reduced_set`, of ``m̃ / q^H``
centers (``q`` = :data:`GROWTH`, ``H`` rounds). Round ``h = 1 … H`` reads the rows once:

* every usable row of a uniform *pool* (rows whose hash of the global row number is
  below a rate: about :data:`POOL_PER_CENTER` rows per center to draw; all rows in
  the last round) gets its approximate score on the previous round's set ``J``
  (``m_J`` centers, each drawn with probability ``π_j``)::

      ℓ̃(x_i) = (k(x_i, x_i) − g_iᵀ (K_JJ + λ_h diag(π))⁻¹ g_i) / λ_h,   g_i = k(J, x_i)

  — exactly ``ℓ_λ`` when ``J`` holds every row (``π = 1``) — at
  ``λ_h = λ · m̃ / m_h`` (``λ · q^(H−h)``: a set ``q`` times smaller resolves the scores
  of a penalty ``q`` times larger), or at the larger penalty at which the effective
  dimension, as the first (uniform) set's spectrum estimates it, is a quarter of
  ``J``'s size (:func:`sketch_spectrum`, :func:`resolved_lam`, once, m_0³ flops):
  a set far smaller than the effective dimension scores every row it does not cover
  at about ``1 / λ``, and the draw would swing from one region to another. Per block
  of rows: the kernel block (rows × m_J) and a triangular solve with the Cholesky
  factor of the m_J × m_J matrix, n·m_J·(d + m_J) flops;
* the round's ``m_h = m̃ / q^(H−h)`` centers are drawn **without replacement with
  probabilities in proportion to the scores** (per class when stratified, the classes
  sharing ``m_h`` as the uniform draw's do), by exponential keys: row ``i`` gets
  ``E_i / ℓ̃_i`` with ``E_i = −log(1 − u_i)``, ``u_i`` a uniform number from a seeded
  hash of its global row number, and the ``m_h`` smallest keys are kept (Efraimidis &
  Spirakis). A chunk sends its smallest keys per stratum; they merge in a tree. The
  draw depends on the rows and the seed only, not on the chunking (up to keys equal
  to rounding);
* each drawn center's inclusion probability ``π_j ≈ rate · min(1, m_h ℓ̃_j / Σ ℓ̃)`` (the
  sum over its stratum's pool, added up in the same read) weighs it in the next
  round's factor, as BLESS's weights do.

Reads in all: ``1 + H`` (:data:`ROUNDS` = 2 by default: three reads, where the uniform
draw takes one); with q = 2 the last read, over all rows, costs n·(m̃/2)·(d + m̃/2)
flops, a quarter of a direct Nyström pass's n·m̃². The factor travels to the workers
once per round.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg

from bigkern.kernels import Basis
from bigkern.kernels.basis import kernel_blocks

__all__ = [
    "GROWTH",
    "POOL_PER_CENTER",
    "ROUNDS",
    "RoundState",
    "check_score_lam",
    "exact_leverage_scores",
    "resolved_lam",
    "round_sizes",
    "round_state",
    "score_template",
    "scores_on_rows",
    "sketch_spectrum",
    "stratum_key",
    "uniform_inclusion",
]

#: Rounds of scoring after the uniform draw (each one read of the rows).
ROUNDS = 2
#: Each round's set is this many times the one before it (and its penalty this many
#: times smaller).
GROWTH = 2
#: An intermediate round scores a uniform pool of about this many rows per center it draws.
POOL_PER_CENTER = 20
#: The smallest first (uniform) set, unless the final set is smaller.
FIRST_SIZE = 32
#: A round scores at a penalty no smaller than the one at which its set's estimate of the
#: effective dimension is this share of the set's size (:func:`resolved_lam`).
RESOLVED_SHARE = 0.25
#: Scores are kept at least this (a row on a center at a tiny λ scores about 0).
SCORE_FLOOR = 1e-12


def check_score_lam(lam: Any) -> float:
    """``lam`` as a positive finite float; raises naming it otherwise.

    Examples
    --------
    >>> check_score_lam(1e-3)
    0.001
    >>> try:
    ...     check_score_lam(0)
    ... except ValueError as err:
    ...     print(err)
    lam (the ridge penalty of the leverage scores) must be a positive finite number; got 0
    """
    ok = isinstance(lam, int | float | np.integer | np.floating) and not isinstance(lam, bool)
    if not ok or not math.isfinite(float(lam)) or float(lam) <= 0:
        raise ValueError(f"lam (the ridge penalty of the leverage scores) must be a positive "
                         f"finite number; got {lam!r}")
    return float(lam)


def round_sizes(size: int, rounds: int = ROUNDS, growth: int = GROWTH,
                least: int = 2) -> list[int]:
    """The set sizes ``m_0 < … < m_H = size`` of the rounds: ``size / growth^(H−h)``, at least
    ``min(size, max(FIRST_SIZE, least))``.

    Examples
    --------
    >>> round_sizes(1000), round_sizes(100), round_sizes(40)
    ([250, 500, 1000], [32, 50, 100], [32, 32, 40])
    """
    floor = min(int(size), max(FIRST_SIZE, int(least)))
    return [max(floor, math.ceil(size / growth ** (rounds - h))) for h in range(rounds + 1)]


@dataclass(frozen=True, eq=False)
class RoundState:
    """What a scoring read needs of the previous round's set: its basis and factor.

    Attributes
    ----------
    basis : Basis
        The kernel (width ω) on the set's standardized centers.
    factor : ndarray, shape (m_J, m_J)
        Lower Cholesky factor of ``K_JJ + lam · diag(π)``.
    lam : float
        The round's penalty λ_h.
    diagonal : float
        ``k(x, x)`` (1 for every radial kernel bigkern has).
    jitter : float
        What was added to the diagonal for the factor to exist (0 mostly).
    """

    basis: Basis
    factor: np.ndarray
    lam: float
    diagonal: float
    jitter: float = 0.0


def round_state(template: Basis, centers_raw: np.ndarray, inclusion: np.ndarray,
                lam: float) -> RoundState:
    """Factor ``K_JJ + lam · diag(inclusion)`` for the raw centers ``centers_raw``, in the
    kernel and standardization of ``template`` (whose own centers are ignored)."""
    from bigkern.features.scaling import standardized

    Z = np.clip(standardized(centers_raw, template.offset, template.scale),
                -template.clip, template.clip)
    basis = Basis(Z, template.kernel, template.offset, template.scale, template.clip)
    K = template.kernel(Z, Z)
    M = K + np.diag(lam * np.asarray(inclusion, dtype=np.float64))
    jitter = 0.0
    while True:
        try:
            L = np.linalg.cholesky(M + jitter * np.eye(len(M)))
            break
        except np.linalg.LinAlgError:
            jitter = max(1e-12 * float(np.trace(M)) / len(M), 10 * jitter)
    diagonal = float(template.kernel.radial(np.zeros(1))[0])
    return RoundState(basis, L, float(lam), diagonal, jitter)


def scores_on_rows(X: np.ndarray, valid: np.ndarray, state: RoundState) -> np.ndarray:
    """Approximate leverage scores ``ℓ̃`` of the rows ``valid`` of the raw block ``X``
    (float64, in row order), on ``state``'s set; kept at least :data:`SCORE_FLOOR`."""
    out = np.empty(int(valid.sum()), dtype=np.float64)
    at = 0
    for _, G in kernel_blocks(X, state.basis, valid=valid, dtype=np.float64):
        B = scipy.linalg.solve_triangular(state.factor, G.T, lower=True, check_finite=False)
        k = G.shape[0]
        out[at:at + k] = (state.diagonal - np.einsum("ij,ij->j", B, B)) / state.lam
        at += k
    return np.maximum(out, SCORE_FLOOR)


def exact_leverage_scores(Z: np.ndarray, kernel: Any, lam: float) -> np.ndarray:
    """The exact ridge leverage scores ``diag(K (K + lam I)⁻¹)`` of the (standardized) rows
    ``Z`` — n × n, for checks on small sets.

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern.kernels import Gaussian
    >>> Z = np.random.default_rng(0).normal(size=(50, 2))
    >>> s = exact_leverage_scores(Z, Gaussian(1.0), 1e-2)
    >>> bool(((0 < s) & (s < 1)).all()), round(float(s.sum()), 1)  # the effective dimension
    (True, 22.8)
    """
    K = kernel(Z, Z)
    return np.diag(np.linalg.solve(K + lam * np.eye(len(K)), K)).copy()


def sketch_spectrum(template: Basis, centers_raw: np.ndarray,
                    inclusion: np.ndarray) -> np.ndarray:
    """The eigenvalues ``σ`` of ``D K_JJ D``, ``D = diag(π)^(−1/2)``: for a set drawn with
    inclusion probabilities ``π``, an estimate of the largest eigenvalues of the full ``K``
    (for a uniform draw of m of n rows, those of ``(n / m) K_JJ``)."""
    from bigkern.features.scaling import standardized

    Z = np.clip(standardized(centers_raw, template.offset, template.scale),
                -template.clip, template.clip)
    d = 1.0 / np.sqrt(np.asarray(inclusion, dtype=np.float64))
    K = template.kernel(Z, Z) * d[:, None] * d[None, :]
    return np.clip(scipy.linalg.eigvalsh(K, overwrite_a=True, check_finite=False), 0.0, None)


def resolved_lam(sigma: np.ndarray, dimension: float) -> float:
    """The penalty λ at which ``d̃(λ) = Σ σ / (σ + λ)`` is ``dimension`` (bisection on log λ).

    With ``σ`` the :func:`sketch_spectrum` of the uniform first set, ``d̃`` estimates the
    effective dimension ``Σ ℓ_λ`` down to where that set stops resolving it. A set of m_J
    centers cannot score the rows at a λ whose effective dimension is near or past m_J:
    every row off the set would score about ``1 / λ``. ``dimension`` must be below
    ``len(sigma)``.

    Examples
    --------
    >>> sigma = np.array([100.0, 10.0, 1.0, 0.1])
    >>> lam = resolved_lam(sigma, 2.0)
    >>> round(float(np.sum(sigma / (sigma + lam))), 6)
    2.0
    """
    lo, hi = -300.0, math.log(max(float(sigma.max()), 1e-300)) + 20.0
    for _ in range(100):  # d̃ falls as λ grows
        mid = 0.5 * (lo + hi)
        if float(np.sum(sigma / (sigma + math.exp(mid)))) > dimension:
            lo = mid
        else:
            hi = mid
    return math.exp(hi)


def score_template(score_basis: Any, first: Any) -> Basis:
    """The scores' basis: ``score_basis`` (or its value on the first draw ``first``, a
    :class:`~bigkern.reduce.reduced.reduced_set.ReducedSet`), or by default the Gaussian of
    width 1 on features robustly standardized from its scale sample, clipped to ±5."""
    if callable(score_basis):
        score_basis = score_basis(first)
    if score_basis is None:
        from bigkern.features.scaling import CLIP_SCALED, robust_standardizer

        sample = first.X if first.scale_X is None else first.scale_X
        offset, scale = robust_standardizer(sample)
        return Basis.checked(np.zeros((1, first.X.shape[1])), 1.0, first.X.shape[1],
                             offset, scale, CLIP_SCALED)
    if not isinstance(score_basis, Basis):
        raise TypeError(f"score_basis must be a Basis or a function of the first draw that "
                        f"returns one; got {type(score_basis).__name__}")
    return score_basis


def uniform_inclusion(first: Any, stratified: bool) -> np.ndarray:
    """Each center of the uniform draw ``first``'s probability of being drawn: its class's
    drawn share of the class's usable rows when ``stratified``, else the set's share of all."""
    if not stratified or first.drawn_per_class is None or first.y is None:
        return np.full(first.size, first.size / max(1, int(first.counts["valid"])))
    share = {stratum_key(c): d / n for c, d, n in zip(
        first.classes.tolist(), first.drawn_per_class, first.class_counts, strict=True)}
    return np.asarray([share[stratum_key(v)] for v in first.y], dtype=np.float64)


def stratum_key(v: Any) -> Any:
    """A label as a stratum's key: a numpy scalar as its Python value (as the uniform draw's)."""
    return v.item() if hasattr(v, "item") else v
