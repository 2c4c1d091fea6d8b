"""Percentile bins in one full read: a sample places the edges, the read checks it.

The fused plan (:mod:`bigkern.reduce.binning.fused`) reads the data twice: a
histogram of order-preserving key groups places every edge in a known group,
then a bin-or-keep read bins the rows whose cells are certain and keeps the
others on their workers. Here a sample places the edges, and the histogram is
counted during the bin-or-keep read itself:

1. **Sample.** ``windows`` runs of consecutive rows, ``rows`` in all, one at a
   seeded position (:func:`~bigkern.reduce.sampling.uniform_from_index` of
   its number) in each of equal strata of the rows: the same rows whatever
   the chunking. The chunks that overlap a window are read, held in worker
   memory and their window rows histogrammed. They are not read again: the
   full read takes them from memory. The sample's cost is that memory (about
   ``windows`` to ``2 × windows`` chunks) and a pause between its compute
   and the read's.
2. **Guess.** Each order statistic the selection needs (both ranks of every
   split point, the 10/50/90 % ranks, minimum and maximum) gets a *window*
   of key groups: those between the sample's ranks ``p·m ± (z·√(m·p(1−p)·(1 −
   m/n)) + z + 1)``. Groups in a window are kept; any other group gets the
   cell its position among the windows implies. The fixed-point scale of the
   sums is guessed too, as candidate scales.
3. **One read.** Each chunk counts its rows, labels and key-group histograms
   (exactly the fused plan's first read), sums each row whose groups all lie
   outside the windows at every candidate scale, and keeps the others.
4. **Check.** The exact histograms give the exact target groups, grid and
   outlier counts as in the fused plan. The guess held when every target
   group was kept, every occupied group that was not got its exact cell, the
   exact scale is a candidate and the sample showed the classes of ``y``.
   Then the edges are selected from the kept rows, those are binned where
   they are and merged with the certain bins at the exact scale: the bins
   are bit-identical to the fused plan's. The kept rows' refine, the
   selection's last step (on a worker) and their binning make one graph, so
   the plan costs three round trips (sample, read, kept rows); a target group
   too large to collect at once adds refine passes of the kept rows.
   Otherwise the read was the fused plan's first read and its second read
   follows (the ``one_read`` attr says why): a misplaced edge of one feature
   may have mis-binned rows of any bin, and finding them takes a full read
   anyway.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import dask
import numpy as np

from bigkern import config
from bigkern.cluster.compute import compute
from bigkern.reduce.binning.bins import n_classes_of
from bigkern.reduce.binning.fixed_point import FixedPointGrid
from bigkern.reduce.binning.fused import histogram_plan_bins
from bigkern.reduce.binning.one_read_chunks import (
    _chunk_arrays,
    _combine_read,
    _edges,
    _from_held,
    _kept_bins,
    _kept_edges,
    _one_read_chunk,
    _read_summary,
    _refine_kept,
    _window_part,
    certain_bins,
)
from bigkern.reduce.binning.one_read_sample import (
    Guess,
    OneReadSample,
    guess,
    sample_windows,
    summed_limit,
    window_tables,
)
from bigkern.reduce.binning.outliers import histogram_grid
from bigkern.reduce.binning.partials import combine_bins
from bigkern.reduce.binning.plan import PlanResult
from bigkern.reduce.binning.quantiles import QuantilePlan
from bigkern.reduce.binning.radix_select import (
    KEEP,
    Bucket,
    RadixSelection,
    _combine_first,
    _first_pass_chunk,
    _usable_first,
    combine_refine,
    dense_histograms,
    finish_selection,
    histogram_pass,
)
from bigkern.reduce.passes import row_partials, row_starts, tree_reduce

__all__ = ["OneRead", "OneReadSample", "sample_windows"]


# ---------------------------------------------------------------------------
# the plan
# ---------------------------------------------------------------------------
@dataclass
class OneRead:
    """One run of the one-read plan (see the module docstring).

    :meth:`first_read` draws the sample (:meth:`draw_sample`: reads the sample
    windows, holding their chunks, and makes the guess) and runs the full read
    (:meth:`read`), returning its first-pass result (the two-read plan's first
    read, exactly); when the plan cannot run it is the histogram pass instead.
    :meth:`finish` checks the guess and, when it holds, gives the combined
    bins, else the ``"fused-or-three-pass"`` plan finishes. ``status`` says
    what happened, for the bins' attrs. ``X``, ``y`` and ``mask`` are
    row-chunked dask arrays, ``classes`` those the caller gave (or None).
    """

    X: Any
    y: Any
    mask: Any
    probs: np.ndarray
    where: np.ndarray
    classes: tuple[Any, ...] | None
    names: Sequence[str]
    sample: OneReadSample = field(default_factory=OneReadSample)
    status: str = "not run"
    sample_rows: int = 0
    held_chunks: int = 0
    _guess: Guess | None = None
    _held: dict[int, Any] = field(default_factory=dict)  # chunk -> its (X, y, mask)
    _parts: list[Any] = field(default_factory=list)
    _certain: dict[str, Any] | None = None
    _mismatch: bool = False
    _classes: tuple[Any, ...] | None = None

    def attrs(self) -> dict[str, Any]:
        """The plan attrs this run adds to the bins."""
        return {"one_read": self.status, "sample_rows": int(self.sample_rows),
                "sample_chunks_held": int(self.held_chunks)}

    def first_read(self) -> dict[str, Any]:
        """The full read (after the sample), or the histogram pass when the plan is skipped."""
        if not np.all((self.probs >= 0) & (self.probs <= 1)):  # the histogram plan names it
            self.status = "skipped: probabilities outside [0, 1]"
        elif self.classes is not None and len(self.classes) < 2:
            self.status = "skipped: fewer than two classes"
        elif len(self.where) >= KEEP:
            self.status = f"skipped: {len(self.where)} quantiles per feature"
        elif self.draw_sample(float(config.get("max_deferred_fraction"))):
            return self.read()
        elif self._held:  # skipped after the sample was read
            return self.histogram_read()
        return histogram_pass(self.X, self.y, self.mask)

    def histogram_read(self) -> dict[str, Any]:
        """The histogram pass of the plan that follows a skip, taking the chunks the sample
        holds from memory: they are not read twice."""
        parts = self._chunk_tasks(_first_pass_chunk, "quantile-histogram")
        root = tree_reduce(parts, _combine_first, name="quantile-histogram-combine")
        self._held.clear()
        (first,) = compute(root, label="exact quantiles: histogram pass")
        return _usable_first(first)

    def finish(self, first: dict[str, Any], quantile_plan: QuantilePlan,
               classes: tuple[Any, ...] | None) -> PlanResult:
        """The bins of the read when the sample's guess held, else the two-read plan's.

        ``first`` is :meth:`first_read`'s result; after a skip or a fallback it
        was the histogram pass of the ``"fused-or-three-pass"`` plan, which
        finishes.
        """
        if self.status == "not run":
            done = self._bins_of_read(first, quantile_plan, classes)
            if done is not None:
                return done
        return histogram_plan_bins(self.X, self.y, self.mask, first, quantile_plan, self.where,
                                   classes, None)

    def draw_sample(self, max_kept: float) -> bool:
        """Read the sample windows and guess; False (with ``status``) when no guess is made."""
        n = self.X.shape[0]
        starts = row_starts(self.X.chunks[0])
        ends = [s + c for s, c in zip(starts, self.X.chunks[0], strict=True)]
        windows = sample_windows(n, self.sample)
        pieces = [(i, max(a, starts[i]) - starts[i], min(b, ends[i]) - starts[i])
                  for a, b in windows for i in range(len(starts))
                  if starts[i] < b and ends[i] > a]
        if not pieces:
            return self._skip("no rows to sample")
        held = sorted({i for i, _, _ in pieces})
        # one task reads a held chunk of X, y and mask together: read apart, the scheduler
        # put both held chunks of X on one worker and both of y on the other
        reads = row_partials(_chunk_arrays, self.X, self.y, self.mask, name="one-read-sample-read")
        self._held = dict(zip(held, dask.persist(*(reads[i] for i in held)), strict=True))
        self.held_chunks = len(held)
        part = dask.delayed(_window_part, pure=True, name="one-read-sample")
        graph = tree_reduce([part(self._held[i], lo=lo, hi=hi) for i, lo, hi in pieces],
                            _combine_first, name="one-read-sample-combine")
        (first,) = compute(graph, label="percentile bins: sampling")
        self.sample_rows = int(first["counts"]["valid"])
        if self.sample_rows == 0:
            return self._skip("no usable row in the sample")
        self._classes = self.classes
        if self.y is not None:
            labels = first["labels"]
            if self.classes is None and isinstance(labels, np.ndarray) and len(labels) >= 2:
                self._classes = tuple(c.item() if hasattr(c, "item") else c for c in labels)
        share = first["counts"]["rows"] / max(n, 1)
        self._guess = guess(first["hist"], self.probs, self.where, self.X.dtype, self.sample,
                             share)
        if self._guess.kept_estimate > max_kept:
            return self._skip(f"the sample's windows hold {self._guess.kept_estimate:.1%} of "
                              f"its rows (over max_deferred_fraction={max_kept:g})")
        return True

    def _skip(self, reason: str) -> bool:
        """Give up the plan after the sample (its held chunks serve the histogram pass)."""
        self.status = f"skipped: {reason}"
        return False

    def _chunk_tasks(self, func: Any, name: str, **kwargs: Any) -> list[Any]:
        """``func(X, y, mask, **kwargs)`` of every row chunk, one delayed each: the chunks
        the sample holds from memory, the others read in their task."""
        fresh = row_partials(func, self.X, self.y, self.mask, name=name, **kwargs)
        held = dask.delayed(_from_held, pure=True, name=f"{name}-held")
        return [held(self._held[i], func=func, **kwargs) if i in self._held else task
                for i, task in enumerate(fresh)]

    def read(self) -> dict[str, Any]:
        """The one full read; returns its first-pass result (counts, histograms, labels)."""
        g = self._guess
        assert g is not None, "draw_sample first"
        d = self.X.shape[1]
        tables = dask.delayed(window_tables, pure=True)(g.upper, g.ranges,
                                                         summed_limit(g.scales), self.X.dtype)
        kw = {"tables": tables, "n_cells": np.full(d, len(self.where) + 1, dtype=np.int64),
              "scales": g.scales, "classes": self._classes if self.y is not None else None,
              "guessed_classes": self.classes is None}
        parts = self._chunk_tasks(_one_read_chunk, "one-read", **kw)
        parts = list(dask.persist(*parts))  # the kept rows stay on their workers
        summary = dask.delayed(_read_summary, pure=True)  # on the part's worker: not its rows
        root = tree_reduce([summary(p) for p in parts], _combine_read, name="one-read-combine")
        self._parts = parts
        self._held.clear()
        (res,) = compute(root, label="percentile bins: one read")
        self._certain, self._mismatch = res["bins"], bool(res["mismatch"])
        return _usable_first(res["first"])

    def _misplaced(self, selection: RadixSelection, plan: QuantilePlan,
                   hist: Sequence[tuple[np.ndarray, np.ndarray]], grid: FixedPointGrid,
                   ) -> list[str]:
        """Why the guess failed (empty when it held); ``hist`` is the read's sparse histograms."""
        g = self._guess
        assert g is not None
        d = self.X.shape[1]
        upper = selection.top_groups(dict.fromkeys(range(d), plan.hi[self.where]))
        why = []
        for f in range(d):
            occupied = hist[f][0]  # increasing, every count > 0
            certain = occupied[~g.keep[f, occupied]]
            cells = np.searchsorted(np.sort(g.upper[f]), certain, side="left")
            exact = np.searchsorted(np.sort(upper[f]), certain, side="left")
            if not g.keep[f, selection.target_groups(f)].all():
                why.append(f"{self.names[f]}: an order statistic outside the sample's windows")
            elif not np.array_equal(cells, exact):
                why.append(f"{self.names[f]}: an edge outside its window")
            if grid.scales[f] not in g.scales[:, f]:
                why.append(f"{self.names[f]}: fixed-point scale {grid.scales[f]} not among the "
                           f"sample's candidates {sorted(g.scales[:, f].tolist())}")
        return why

    def _bins_of_read(
        self, first: dict[str, Any], plan: QuantilePlan, classes: tuple[Any, ...] | None,
    ) -> PlanResult | None:
        """Check the guess against the read's exact histograms; the bins, or None to fall back.

        ``first`` is :meth:`read`'s result, ``plan`` its quantile plan,
        ``classes`` those of the labels as the two-read plan takes them.
        """
        g = self._guess
        assert g is not None and self._certain is not None, "read first"
        d = self.X.shape[1]
        if self.y is not None and (self._mismatch or self._classes != classes):
            return self.fallback("the sample did not show the classes of y")
        hist = dense_histograms(first)
        selection = RadixSelection(self.X.dtype, hist, plan.wanted(d))
        grid = histogram_grid(first["hist"], self.X.dtype)  # the sparse form: no 2**20 scan
        kept_bound = sum(int(hist[f, selection.target_groups(f)].sum())
                         for f in range(d)) / first["counts"]["valid"]
        why = self._misplaced(selection, plan, first["hist"], grid)
        if why:
            return self.fallback("; ".join(why))
        parts = self._parts
        refine = dask.delayed(_refine_kept, pure=True)

        def kept_graph(buckets: Sequence[Bucket]) -> Any:
            return tree_reduce([refine(p, buckets=buckets) for p in parts], combine_refine,
                               name="quantile-refine-combine")

        # the first refine and the binning of the kept rows in one round trip: a worker
        # descends the selection with the refine's counts and selects the edges
        buckets = selection.plan()
        descended, edges = dask.delayed(_kept_edges, pure=True, nout=2)(
            selection, buckets, kept_graph(buckets), plan, self.where)
        n_classes = n_classes_of(classes)
        kept = _kept_bins(parts, edges, grid, n_classes)
        selection, edge_list, kept = compute(descended, edges, kept,
                                             label="percentile bins: the kept rows")
        if edge_list is None:  # a group too large to collect at once: more refine passes
            finish_selection(self.X, self.mask, selection, graph=kept_graph)
            edge_list = _edges(selection, plan, self.where)
            (kept,) = compute(_kept_bins(parts, edge_list, grid, n_classes),
                              label="percentile bins: binning the kept rows")
        res = combine_bins([certain_bins(self._certain, g.scales, grid), kept])
        self.status = "ok"
        self._parts = []
        return PlanResult(res, edge_list, selection.values(), first["hist"], grid, kept_bound,
                          selection.passes, "one-read")

    def fallback(self, reason: str) -> None:
        """Give up the read's kept rows: the two-read plan finishes (``status`` says why)."""
        self.status = f"fallback: {reason}"
        self._parts = []
        self._certain = None
