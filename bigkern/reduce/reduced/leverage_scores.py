"""Approximate ridge leverage scores of the rows, and centers drawn in proportion to them.

The ridge leverage score of row ``i`` at penalty λ (on a *sum* of squares, as the
Nyström models' ``lam``) is ``ℓ_λ(x_i) = (K (K + λ I)⁻¹)_ii`` — in Rudi, Carratino &
Rosasco's (2018) notation ``λ = n·λ_BLESS``. Their sum is the effective dimension of
the kernel ridge problem, and centers drawn in proportion to them give a Nyström
approximation as accurate as a uniform draw with fewer centers.

:func:`leverage_rounds` estimates them bottom-up, as BLESS does, in a few reads of
the rows. Round 0 is the uniform (stratified) draw of
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
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import dask
import numpy as np
import scipy.linalg

from bigkern.kernels import Basis
from bigkern.kernels.basis import kernel_blocks
from bigkern.reduce.passes import RowReduction, as_float_block, run_reduction, valid_rows
from bigkern.reduce.reduced.row_draws import allocate
from bigkern.reduce.sampling import uniform_from_index

__all__ = [
    "GROWTH",
    "POOL_PER_CENTER",
    "ROUNDS",
    "LeverageDraw",
    "RoundState",
    "check_score_lam",
    "exact_leverage_scores",
    "leverage_rounds",
    "resolved_lam",
    "round_sizes",
    "round_state",
    "score_template",
    "scores_on_rows",
    "sketch_spectrum",
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


@dataclass(frozen=True, eq=False)
class LeverageDraw:
    """The result of :func:`leverage_rounds`: the last round's draw, per stratum.

    Attributes
    ----------
    strata : dict
        Per stratum key (a class, or None), the drawn rows: ``u`` (their keys),
        ``index``, ``X`` (raw, float64), ``y``, ``score`` (their ``ℓ̃``).
    inclusion : dict
        Per stratum key, the drawn rows' inclusion probabilities π (in ``strata``'s order).
    effective_dimension : float
        ``Σ ℓ̃`` over the usable rows (the last round scores them all): an estimate of
        the effective dimension at λ.
    reads : int
        Reads of the rows the rounds made (``H``).
    sizes : list of int
        The sets' sizes ``m_0 … m_H`` asked for.
    jitter : float
        The largest jitter a round's factor needed.
    lams : list of float
        The penalty of each round's scores, ``λ_1 … λ_H``.
    """

    strata: dict[Any, dict[str, Any]]
    inclusion: dict[Any, np.ndarray]
    effective_dimension: float
    reads: int
    sizes: list[int]
    jitter: float
    lams: list[float]


def leverage_rounds(
    X: Any, y: Any, mask: Any, *, held: bool, first_X: np.ndarray,
    first_inclusion: np.ndarray, template: Basis, lam: float, sizes: Sequence[int],
    classes: Sequence[Any] | None, class_counts: np.ndarray | None, n_usable: int,
    seed: int, split_every: int | None = None,
) -> LeverageDraw:
    """Rounds ``1 … H`` of the leverage draw, from the uniform round 0 (see the module).

    Parameters
    ----------
    X, y, mask : dask arrays with the same row chunks (or numpy arrays when ``held``)
        The rows; ``y`` labels the strata (None: one stratum).
    held : bool
        Run each round's chunk function once on the numpy arrays (no task graph).
    first_X : ndarray, shape (m_0, d)
        Round 0's centers (raw values).
    first_inclusion : ndarray, shape (m_0,)
        Their inclusion probabilities (the uniform draw's: a class's share of its rows).
    template : Basis
        The kernel, width and standardization of the scores (its centers are ignored).
    lam : float
        The penalty λ of the final scores (on a sum of squares).
    sizes : sequence of int
        ``m_0 … m_H`` (:func:`round_sizes`).
    classes, class_counts : optional
        The strata (classes, sorted) and their usable rows, when stratified.
    n_usable : int
        Usable rows (for the pools' rates).
    seed : int
        The draw's seed; each round hashes with seeds derived from it.
    split_every : int, optional
        Fan-in of the tree merge.
    """
    lam = check_score_lam(lam)
    H = len(sizes) - 1
    centers, inclusion = np.asarray(first_X, dtype=np.float64), np.asarray(first_inclusion)
    total = n_usable
    jitter = 0.0
    root: dict[str, Any] = {}
    lams: list[float] = []
    sigma = sketch_spectrum(template, centers, inclusion)  # of the uniform set: once
    for h in range(1, H + 1):
        lam_h = max(lam * sizes[H] / sizes[h],
                    resolved_lam(sigma, min(RESOLVED_SHARE * len(centers), 0.5 * len(sigma))))
        lams.append(lam_h)
        state = round_state(template, centers, inclusion, lam_h)
        jitter = max(jitter, state.jitter)
        rate = 1.0 if h == H else min(1.0, POOL_PER_CENTER * sizes[h] / max(1, total))
        keys = [None] if classes is None else [_key(c) for c in classes]
        want = dict(zip(keys, [sizes[h]] if classes is None
                        else allocate(sizes[h], np.asarray(class_counts)), strict=True))
        pool_seed, key_seed = _round_seeds(seed, h)
        kwargs = {"want": want, "rate": rate, "pool_seed": pool_seed, "key_seed": key_seed,
                  "stratified": classes is not None}
        if held:
            root = leverage_chunk(X, y, mask, start=0, state=state, **kwargs)
        else:
            recipe = RowReduction("leverage-scores", chunk=leverage_chunk,
                                  combine=partial(combine_leverage, want=want),
                                  with_start=True)
            root = run_reduction(recipe, X, y, mask, split_every=split_every,
                                 label=f"leverage scores, round {h} of {H} "
                                       f"({len(centers)} centers)",
                                 state=dask.delayed(state, pure=True, traverse=False),
                                 **kwargs)
        incl = {}
        for k, s in root["strata"].items():
            pool_sum = max(root["sums"].get(k, 0.0), SCORE_FLOOR)
            incl[k] = rate * np.minimum(1.0, want[k] * s["score"] / pool_sum)
        centers = np.concatenate([s["X"] for s in root["strata"].values()])
        inclusion = np.concatenate(list(incl.values()))
    d_eff = float(sum(root["sums"].values()))
    return LeverageDraw(root["strata"], incl, d_eff, H, list(sizes), jitter, lams)


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
    share = {_key(c): d / n for c, d, n in zip(
        first.classes.tolist(), first.drawn_per_class, first.class_counts, strict=True)}
    return np.asarray([share[_key(v)] for v in first.y], dtype=np.float64)


def _round_seeds(seed: int, h: int) -> tuple[int, int]:
    """The pool's and the keys' hash seeds of round ``h`` (independent of round 0's)."""
    words = np.random.SeedSequence([int(seed), 43, int(h)]).generate_state(2, dtype=np.uint32)
    return int(words[0]), int(words[1])


def _key(v: Any) -> Any:
    return v.item() if hasattr(v, "item") else v


def leverage_chunk(Xb: np.ndarray, yb: np.ndarray | None, mb: np.ndarray | None = None, *,
                   start: int, state: RoundState, want: dict[Any, int], rate: float,
                   pool_seed: int, key_seed: int, stratified: bool) -> dict[str, Any]:
    """One chunk of a scoring round: the pool rows' scores, their sum per stratum, and per
    stratum the ``want[k]`` rows of smallest key ``E / ℓ̃``."""
    X = as_float_block(Xb)
    valid, _ = valid_rows(X, None if mb is None else np.asarray(mb).ravel())
    labels = None if yb is None else np.asarray(yb).ravel()
    if labels is not None and labels.dtype.kind in "fc":
        valid &= np.isfinite(labels)  # as the uniform draw: a NaN label is not usable
    rows = np.flatnonzero(valid)
    if rate < 1.0:
        rows = rows[uniform_from_index(start + rows, pool_seed) < rate]
    pool = np.zeros(len(X), dtype=bool)
    pool[rows] = True
    score = scores_on_rows(X, pool, state)
    index = start + rows
    key = -np.log1p(-uniform_from_index(index, key_seed)) / score
    if stratified and labels is not None:
        values, inverse = np.unique(labels[rows], return_inverse=True)
        groups = [(_key(v), np.flatnonzero(inverse == i)) for i, v in enumerate(values)]
    else:
        groups = [(None, np.arange(len(rows)))]
    strata, sums = {}, {}
    for k, sel in groups:
        sums[k] = float(np.sum(score[sel]))
        n_k = want.get(k, 0)
        if len(sel) > n_k:
            sel = sel[np.lexsort((index[sel], key[sel]))[:n_k]]
        strata[k] = {"u": key[sel], "index": index[sel],
                     "X": np.asarray(X[rows[sel]], dtype=np.float64),
                     "y": None if labels is None else labels[rows[sel]],
                     "score": score[sel]}
    return {"strata": strata, "sums": sums}


def combine_leverage(parts: list[dict[str, Any]], *, want: dict[Any, int]) -> dict[str, Any]:
    """Merge chunks' (or merged) rounds: per stratum the ``want[k]`` smallest keys (ties by
    row number), sorted by key; the score sums added."""
    strata: dict[Any, dict[str, Any]] = {}
    sums: dict[Any, float] = {}
    for p in parts:
        for k, v in p["sums"].items():
            sums[k] = sums.get(k, 0.0) + v
    for k in sums:
        got = [p["strata"][k] for p in parts if k in p["strata"]]
        u = np.concatenate([g["u"] for g in got])
        index = np.concatenate([g["index"] for g in got])
        order = np.lexsort((index, u))[:want.get(k, 0)]
        strata[k] = {name: None if got[0][name] is None else
                     np.concatenate([g[name] for g in got])[order] for name in got[0]}
    return {"strata": strata, "sums": sums}
