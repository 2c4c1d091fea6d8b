"""The reads of the leverage draw: rounds of scores and weighted hash draws over row chunks.

:func:`leverage_rounds` runs rounds ``1 … H`` of
:mod:`~bigkern.reduce.reduced.leverage_scores`' algorithm (which describes it): each round
one read whose chunk task (:func:`leverage_chunk`) scores the chunk's pool rows on the
previous round's set and keeps, per stratum, the rows of smallest exponential key
``E / ℓ̃``; :func:`combine_leverage` merges such shares in a tree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import dask
import numpy as np

from bigkern.kernels import Basis
from bigkern.reduce.passes import RowReduction, as_float_block, run_reduction, valid_rows
from bigkern.reduce.reduced.leverage_scores import (
    POOL_PER_CENTER,
    RESOLVED_SHARE,
    SCORE_FLOOR,
    RoundState,
    check_score_lam,
    resolved_lam,
    round_state,
    scores_on_rows,
    sketch_spectrum,
    stratum_key,
)
from bigkern.reduce.reduced.row_draws import allocate
from bigkern.reduce.sampling import uniform_from_index

__all__ = ["LeverageDraw", "combine_leverage", "leverage_chunk", "leverage_rounds"]


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
        keys = [None] if classes is None else [stratum_key(c) for c in classes]
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


def _round_seeds(seed: int, h: int) -> tuple[int, int]:
    """The pool's and the keys' hash seeds of round ``h`` (independent of round 0's)."""
    words = np.random.SeedSequence([int(seed), 43, int(h)]).generate_state(2, dtype=np.uint32)
    return int(words[0]), int(words[1])


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
        groups = [(stratum_key(v), np.flatnonzero(inverse == i)) for i, v in enumerate(values)]
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
