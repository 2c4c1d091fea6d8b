"""Distributed passes that reduce chunked samples to small systems.

The pass engine is this package's top level: :mod:`~bigkern.reduce.passes` (chunk →
combine → aggregate reductions over row-chunked samples), :mod:`~bigkern.reduce.row_tasks`,
:mod:`~bigkern.reduce.row_loops` (compiled row validity and label loops),
:mod:`~bigkern.reduce.sampling` (seeded, chunking-independent row draws and splits) and
:mod:`~bigkern.reduce.extremes` (suspected fill values). One sub-package per family of
reductions: :mod:`~bigkern.reduce.binning` (percentile bins),
:mod:`~bigkern.reduce.reduced` (reduced-kernel normal equations and Newton sums) and
:mod:`~bigkern.reduce.compact` (the sparse Gram matrix of a compact kernel).

Each public name is imported from its module on first use: importing one light module of
the package (the row draws, a recorded histogram's reader) does not load the binning,
the reduced-kernel passes and scikit-learn with it.
"""

from __future__ import annotations

from bigkern.lazy import lazy_names

#: Each public name and the module of this package it lives in.
_HOMES = {
    "DECILES": "binning.quantiles",
    "QUANTILE_METHODS": "binning.quantiles",
    "BinningPlan": "binning.plan",
    "GramReport": "compact.sparse_gram",
    "ReducedSet": "reduced.reduced_set",
    "alignment_sparsity": "compact.alignment",
    "bin_index": "binning.bins",
    "bin_statistics": "binning.bins",
    "gram_report": "compact.sparse_gram",
    "percentile_bins": "binning.percentile",
    "quantile_edges": "binning.quantiles",
    "quantile_summary": "binning.quantiles",
    "random_split": "sampling",
    "reduced_normal_equations": "reduced.normal_equations",
    "reduced_normal_equations_folds": "reduced.folds",
    "reduced_residual_sums": "reduced.normal_equations",
    "robust_scaler": "binning.bins",
    "sample_rows": "sampling",
    "select_reduced_set": "reduced.reduced_set",
    "sparse_gram": "compact.sparse_gram",
}

__all__ = sorted(_HOMES)
__getattr__, __dir__ = lazy_names(__name__, _HOMES)
