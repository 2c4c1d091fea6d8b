"""The one-read plan's per-chunk work and the small steps that combine it.

See :mod:`bigkern.reduce.binning.one_read` for the plan. Here: the sample windows'
first-pass partials, the full read's chunk function (first-pass partial,
certain bins at each candidate scale, kept rows), its combine, the refine
and binning of the kept rows (the first refine and the binning share one
round trip: :func:`_kept_edges` runs on a worker), and :func:`certain_bins`,
which picks the exact scale's sums from the candidates'.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

import dask
import numpy as np

from bigkern.errors import LabelError
from bigkern.reduce.binning._bin_loops import bin_ids, bin_sums_sparse
from bigkern.reduce.binning._key_loops import certain_bin_ids, sparse_histograms
from bigkern.reduce.binning._one_read_loops import one_read_ids, one_read_sums
from bigkern.reduce.binning.bins import n_classes_of
from bigkern.reduce.binning.fixed_point import FixedPointGrid, normalize_limbs
from bigkern.reduce.binning.one_read_sample import summed_limit
from bigkern.reduce.binning.partials import (
    accumulate_bins,
    combine_bins,
    dense_partial,
    padded_edges,
    row_labels,
    use_dense_sums,
)
from bigkern.reduce.binning.quantiles import QuantilePlan
from bigkern.reduce.binning.radix_select import (
    GROUP_BITS,
    Bucket,
    RadixSelection,
    _combine_first,
    _distinct_labels,
    _first_pass_chunk,
    key_dtype,
    refine_rows,
)
from bigkern.reduce.class_counts import bin_class_counts
from bigkern.reduce.passes import as_float_block, tree_reduce, valid_rows
from bigkern.reduce.row_loops import take_rows

__all__ = ["certain_bins"]


# ---------------------------------------------------------------------------
# per-chunk work
# ---------------------------------------------------------------------------
def _chunk_arrays(xb: np.ndarray, yb: Any, mb: Any) -> tuple[np.ndarray, Any, Any]:
    """A chunk's blocks of X, y and mask, read by one task (the sample holds them)."""
    return xb, yb, mb


def _window_part(held: tuple[np.ndarray, Any, Any], *, lo: int, hi: int) -> dict[str, Any]:
    """The first pass's partial of rows ``lo:hi`` of a held chunk ``(X, y, mask)``."""
    xb, yb, mb = held
    return _first_pass_chunk(np.asarray(xb)[lo:hi], None if yb is None else np.asarray(yb)[lo:hi],
                             None if mb is None else np.asarray(mb)[lo:hi])


def _from_held(held: tuple[np.ndarray, Any, Any], *, func: Callable[..., Any],
               **kwargs: Any) -> Any:
    """``func(X, y, mask, **kwargs)`` of a chunk the sample holds, as its read task would."""
    return func(*held, **kwargs)


def _one_read_chunk(
    Xb: np.ndarray, yb: np.ndarray | None, mb: np.ndarray | None, *, tables: np.ndarray,
    n_cells: np.ndarray, scales: np.ndarray, classes: tuple[Any, ...] | None,
    guessed_classes: bool,
) -> dict[str, Any]:
    """A chunk's summary (``first``: first-pass partial, ``bins``: certain bins at each
    candidate scale, ``mismatch``: whether a label fell outside guessed classes) and
    ``kept``: its kept rows (which stay on the worker; the combine drops them).

    ``scales`` (candidates, d) are the candidate fixed-point scales; ``tables``
    the guessed cell tables (:func:`~bigkern.reduce.binning.one_read_sample.window_tables`);
    ``classes`` those whose labels are counted (None: none). More than two classes
    are counted from the bin ids (the dense sweep does not give them: a second sweep
    of the chunk's keys, in memory, gives them).
    """
    X = as_float_block(Xb)
    valid, counts = valid_rows(X, mb, extremes=True)
    ukind, width = key_dtype(X.dtype)
    bits = X.view(ukind)
    n, d = X.shape
    labels = None if yb is None else _distinct_labels(np.asarray(yb), valid)
    mismatch = False
    n_classes = n_classes_of(classes)
    try:
        labels_of_rows = row_labels(yb, valid, classes)
    except LabelError:
        if not guessed_classes:
            raise
        # the classes were a guess: the plan falls back
        labels_of_rows, mismatch = np.zeros(n, dtype=bool if n_classes <= 2 else np.uint8), True
    several = n_classes > 2
    is_positive = np.zeros(n, dtype=bool) if several else labels_of_rows
    with np.errstate(over="ignore"):
        down = np.ldexp(1.0, scales)
    reach = np.nextafter(summed_limit(scales), 0.0)  # the tables keep every |x| beyond it
    n_possible = int(np.prod(n_cells, dtype=object))
    k = len(scales)
    cand_index = np.arange(k * d, dtype=np.int64)[:, None]
    no_outside, no_extreme = np.zeros(k * d, dtype=np.int64), np.full(k * d, np.nan)
    with_labels = n_classes == 2
    hist = np.zeros((d, 1 << GROUP_BITS), dtype=np.int32)  # pages touched where counted
    if use_dense_sums(n_possible, n):
        count, sums, pos, kept = one_read_sums(
            X, bits, valid, is_positive, width, GROUP_BITS, tables, n_cells, down, n_possible,
            hist)
        bins = dense_partial(count, sums, pos, no_outside, no_extreme, counts, cand_index,
                             with_labels)
        if several:  # the same guessed bins again, as ids (no histograms), for the classes
            ids, _ = certain_bin_ids(bits, valid, width, GROUP_BITS, tables, n_cells)
            bins["class_count"] = bin_class_counts(ids, labels_of_rows, bins["bin"], n_classes)
    else:
        ids, kept = one_read_ids(bits, valid, width, GROUP_BITS, tables, n_cells, hist)
        order = np.flatnonzero(ids >= 0)
        order = order[np.argsort(ids[order], kind="stable")]
        index = np.arange(d, dtype=np.int64)[:, None]
        parts = []
        for c in range(k):
            bounds = np.stack([-reach, reach, np.full(d, -np.inf), np.full(d, np.inf)], axis=1)
            parts.append(bin_sums_sparse(X, ids, is_positive, down[c][:, None],
                                         1.0 / down[c][:, None], index, bounds, order))
        uniq, cnt, _, pos = parts[0][:4]
        bins = {"counts": counts, "bin": uniq.astype(np.int64), "n": cnt,
                "sum": np.concatenate([p[2] for p in parts], axis=1), "limb_index": cand_index,
                "positive": pos if with_labels else None,
                "class_count": (bin_class_counts(ids, labels_of_rows, uniq, n_classes, order)
                                if several else None),
                "outside": no_outside, "extreme": no_extreme}
    first = {"counts": counts, "labels": labels, "hist": sparse_histograms(hist)}
    return {"first": first, "bins": bins, "mismatch": mismatch,
            "kept": {"kept_X": take_rows(X, kept), "kept_labels": labels_of_rows[kept]}}


def _read_summary(part: dict[str, Any]) -> dict[str, Any]:
    """A chunk's summary without its kept rows."""
    return {k: v for k, v in part.items() if k != "kept"}


def _refine_kept(part: dict[str, Any], *, buckets: Sequence[Bucket]) -> dict[Any, Any]:
    return refine_rows(part["kept"]["kept_X"], buckets)


def _bin_kept(part: dict[str, Any], *, edges: tuple[np.ndarray, ...], grid: FixedPointGrid,
              n_classes: int) -> dict[str, Any]:
    X = part["kept"]["kept_X"]
    padded, n_edges = padded_edges(edges)
    ids = bin_ids(X, np.ones(len(X), dtype=bool), padded, n_edges)
    n_possible = int(np.prod(n_edges + 1, dtype=object))
    return accumulate_bins(X, ids, part["kept"]["kept_labels"], grid, n_possible,
                           {"kept": len(X)}, n_classes > 0, n_classes)


def _combine_read(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """Combine the summaries of the read: first pass, certain bins, label mismatch."""
    return {"first": _combine_first([p["first"] for p in parts]),
            "bins": combine_bins([p["bins"] for p in parts]),
            "mismatch": any(p["mismatch"] for p in parts)}


def _edges(selection: RadixSelection, plan: QuantilePlan, where: np.ndarray
           ) -> tuple[np.ndarray, ...]:
    """Per feature, the edges of a finished selection."""
    d = len({f for f, _ in selection.wanted})
    edge_values = plan.edges(selection.values(), d)[:, where]
    return tuple(edge_values[f] for f in range(d))


def _kept_edges(
    selection: RadixSelection, buckets: Sequence[Bucket], counts: dict[Any, Any],
    plan: QuantilePlan, where: np.ndarray,
) -> tuple[RadixSelection, tuple[np.ndarray, ...] | None]:
    """The selection descended by one refine of the kept rows, and its edges (``None``
    while a target is still pending)."""
    selection = copy.deepcopy(selection)
    selection.update(buckets, counts, read_data=False)
    return selection, None if selection.pending else _edges(selection, plan, where)


def _bin_kept_or_none(part: dict[str, Any], *, edges: tuple[np.ndarray, ...] | None,
                      grid: FixedPointGrid, n_classes: int) -> dict[str, Any] | None:
    return None if edges is None else _bin_kept(part, edges=edges, grid=grid,
                                                n_classes=n_classes)


def _combine_kept(parts: list[dict[str, Any] | None]) -> dict[str, Any] | None:
    return None if any(p is None for p in parts) else combine_bins(parts)


def _kept_bins(parts: Sequence[Any], edges: Any, grid: FixedPointGrid, n_classes: int) -> Any:
    """Delayed combined bins of the kept rows (``None`` when ``edges`` is); ``n_classes``
    counted (0: no labels)."""
    fn = dask.delayed(_bin_kept_or_none, pure=True)
    return tree_reduce([fn(p, edges=edges, grid=grid, n_classes=n_classes) for p in parts],
                       _combine_kept, name="one-read-kept-combine")


def certain_bins(
    certain: dict[str, Any], scales: np.ndarray, grid: FixedPointGrid
) -> dict[str, Any]:
    """The certain rows' combined bins in ``grid``'s limb layout, from the candidates' sums.

    ``scales`` (candidates, d) are the candidate scales the read summed at;
    ``grid``'s scale must be one of them for each feature.
    """
    d = len(grid.scales)
    cols = [int(np.flatnonzero(scales[:, f] == grid.scales[f])[0]) * d + f for f in range(d)]
    index = grid.limb_index
    sums = np.zeros((len(certain["n"]), int(index.max()) + 1), dtype=np.int64)
    sums[:, :d] = certain["sum"][:, cols]
    return {**certain, "sum": normalize_limbs(sums, index), "limb_index": index,
            "outside": np.zeros(d, dtype=np.int64), "extreme": np.full(d, np.nan)}

