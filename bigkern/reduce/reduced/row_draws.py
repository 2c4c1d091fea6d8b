"""One chunk's share of the reduced-set draw, and the merge of the chunks' shares.

:func:`~bigkern.reduce.reduced.reduced_set.select_reduced_set` runs one read:
each chunk's task (:func:`draw_chunk`) gives the usable rows with the smallest
row hashes per stratum (and, for the scale sample, over all strata) with the
chunk's row counts; :func:`combine_draws` merges such shares in a tree, keeping
the smallest hashes; :func:`allocate` shares the draws among the classes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bigkern.reduce.passes import add_counts, as_float_block, valid_rows
from bigkern.reduce.sampling import smallest_rows, uniform_from_index

__all__ = ["MAX_STRATA", "allocate", "combine_draws", "draw_chunk"]

#: Most distinct labels a stratified draw accepts (strata are classes, not targets).
MAX_STRATA = 256
_FIRSTS = ("first_nonfinite", "first_nonfinite_y")


def draw_chunk(Xb: np.ndarray, yb: np.ndarray | None, mb: np.ndarray | None = None, *,
                start: int, keep: int, seed: int, stratified: bool,
                keep_scale: int = 0) -> dict[str, Any]:
    """Per stratum, the ``keep`` usable rows of a chunk with the smallest hashes; the
    ``keep_scale`` such rows of all strata together (the scale sample); counts."""
    X = as_float_block(Xb)
    valid, counts = valid_rows(X, None if mb is None else np.asarray(mb).ravel(),
                               extremes=True)
    firsts = {"first_nonfinite": -1, "first_nonfinite_y": -1}
    if counts["nonfinite"]:
        some = ~valid & np.isfinite(X).any(axis=1)
        firsts["first_nonfinite"] = start + int(np.flatnonzero(some)[0])
    counts["nonfinite_y"] = 0
    labels = None
    if yb is not None:
        labels = np.asarray(yb).ravel()
        if labels.dtype.kind in "fc":
            bad_y = valid & ~np.isfinite(labels)
            if bad_y.any():
                counts["nonfinite_y"] = int(bad_y.sum())
                counts["valid"] -= counts["nonfinite_y"]
                firsts["first_nonfinite_y"] = start + int(np.flatnonzero(bad_y)[0])
                valid &= ~bad_y
    rows = np.flatnonzero(valid)
    index = start + rows
    u = uniform_from_index(index, seed)
    classes: dict[Any, int] | None = None
    if labels is not None:
        values, inverse, n_each = np.unique(labels[rows], return_inverse=True, return_counts=True)
        if len(values) <= MAX_STRATA:
            classes = {_key(v): int(c) for v, c in zip(values, n_each, strict=True)}
        elif stratified:
            raise ValueError(f"y has {len(values)} distinct values in rows {start}..."
                             f"{start + len(labels) - 1}: stratified draws take class labels "
                             f"(at most {MAX_STRATA}); use stratified=False for other targets")
    strata: dict[Any, dict[str, np.ndarray]] = {}
    if stratified and labels is not None:
        groups = [(_key(v), np.flatnonzero(inverse == i)) for i, v in enumerate(values)]
    else:
        groups = [(None, np.arange(len(rows)))]
    # the usable rows by (hash, row number), sorted once when a sample must be cut from
    # them: each stratum's and the scale sample's smallest hashes are a filter of it
    cut = keep_scale or any(len(sel) > keep for _, sel in groups)
    order = np.lexsort((index, u)) if cut else None
    member = np.zeros(len(rows), dtype=bool)
    for key, sel in groups:
        if len(sel) > keep:
            member[:] = False
            member[sel] = True
            sel = order[member[order]][:keep]
        strata[key] = {"u": u[sel], "index": index[sel],
                       "X": np.asarray(X[rows[sel]], dtype=np.float64),
                       "y": None if labels is None else labels[rows[sel]]}
    scale = None
    if keep_scale:
        sel = order[:keep_scale]
        scale = {"u": u[sel], "index": index[sel],
                 "X": np.asarray(X[rows[sel]], dtype=np.float64),
                 "y": None if labels is None else labels[rows[sel]]}
    return {"strata": strata, "classes": classes, "counts": counts, "firsts": firsts,
            "scale": scale}


def _key(v: Any) -> Any:
    return v.item() if hasattr(v, "item") else v


def combine_draws(parts: list[dict[str, Any]], *, keep: int, keep_scale: int = 0
                  ) -> dict[str, Any]:
    """The merge of chunks' (or merged) shares: the ``keep`` smallest hashes per stratum,
    the ``keep_scale`` smallest of the scale sample, the class and row counts added."""
    keys: list[Any] = []
    for p in parts:
        keys += [k for k in p["strata"] if k not in keys]
    strata = {k: smallest_rows([p["strata"][k] for p in parts if k in p["strata"]], n=keep)
              for k in keys}
    classes: dict[Any, int] | None = {}
    for p in parts:
        if p["classes"] is None or classes is None:
            classes = None
            continue
        for k, c in p["classes"].items():
            classes[k] = classes.get(k, 0) + c
    if classes is not None and len(classes) > MAX_STRATA:
        classes = None
    firsts = {k: min((p["firsts"][k] for p in parts if p["firsts"][k] >= 0), default=-1)
              for k in _FIRSTS}
    scale = None
    if keep_scale:
        scale = smallest_rows([p["scale"] for p in parts], n=keep_scale)
    return {"strata": strata, "classes": classes,
            "counts": add_counts([p["counts"] for p in parts]), "firsts": firsts,
            "scale": scale}


def allocate(size: int, counts: np.ndarray) -> np.ndarray:
    """Split ``size`` draws over strata in proportion to ``counts``; each stratum gets ≥ 1.

    Largest remainders (ties to the earlier stratum); a stratum never gets more
    than its count. Requires ``len(counts) <= size <= counts.sum()``.
    """
    counts = np.asarray(counts, dtype=np.int64)
    share = size * counts / counts.sum()
    out = np.floor(share).astype(np.int64)
    rest = size - int(out.sum())
    order = np.lexsort((np.arange(len(counts)), -(share - out)))
    out[order[:rest]] += 1
    while (out == 0).any():  # a class too rare for its share still gets one center
        out[int(np.argmax(out))] -= 1
        out[int(np.flatnonzero(out == 0)[0])] = 1
    return out
