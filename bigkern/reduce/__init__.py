"""Distributed passes that reduce chunked samples to small systems.

The pass engine is this package's top level: :mod:`~bigkern.reduce.passes` (chunk →
combine → aggregate reductions over row-chunked samples), :mod:`~bigkern.reduce.row_tasks`,
:mod:`~bigkern.reduce.row_loops` (compiled row validity and label loops),
:mod:`~bigkern.reduce.sampling` (seeded, chunking-independent row draws and splits) and
:mod:`~bigkern.reduce.extremes` (suspected fill values). One sub-package per family of
reductions: :mod:`~bigkern.reduce.binning` (percentile bins),
:mod:`~bigkern.reduce.reduced` (reduced-kernel normal equations and Newton sums) and
:mod:`~bigkern.reduce.compact` (the sparse Gram matrix of a compact kernel).
"""

from bigkern.reduce.binning.bins import bin_index, bin_statistics, robust_scaler
from bigkern.reduce.binning.percentile import percentile_bins
from bigkern.reduce.binning.plan import BinningPlan
from bigkern.reduce.binning.quantiles import (
    DECILES,
    QUANTILE_METHODS,
    quantile_edges,
    quantile_summary,
)
from bigkern.reduce.compact.alignment import alignment_sparsity
from bigkern.reduce.compact.sparse_gram import GramReport, gram_report, sparse_gram
from bigkern.reduce.reduced.folds import reduced_normal_equations_folds
from bigkern.reduce.reduced.normal_equations import reduced_normal_equations, reduced_residual_sums
from bigkern.reduce.reduced.reduced_set import ReducedSet, select_reduced_set
from bigkern.reduce.sampling import random_split, sample_rows

__all__ = [
    "DECILES",
    "QUANTILE_METHODS",
    "BinningPlan",
    "GramReport",
    "ReducedSet",
    "alignment_sparsity",
    "bin_index",
    "bin_statistics",
    "gram_report",
    "percentile_bins",
    "quantile_edges",
    "quantile_summary",
    "random_split",
    "reduced_normal_equations",
    "reduced_normal_equations_folds",
    "reduced_residual_sums",
    "robust_scaler",
    "sample_rows",
    "select_reduced_set",
    "sparse_gram",
]
