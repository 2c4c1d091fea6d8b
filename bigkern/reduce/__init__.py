"""Distributed passes that reduce chunked samples to small systems."""

from bigkern.reduce.alignment import alignment_sparsity
from bigkern.reduce.binning import bin_index, bin_statistics, robust_scaler
from bigkern.reduce.percentile import percentile_bins
from bigkern.reduce.quantiles import DECILES, QUANTILE_METHODS, quantile_edges, quantile_summary
from bigkern.reduce.reduced_folds import reduced_normal_equations_folds
from bigkern.reduce.reduced_kernel import reduced_normal_equations, reduced_residual_sums
from bigkern.reduce.reduced_set import ReducedSet, select_reduced_set
from bigkern.reduce.sampling import random_split, sample_rows
from bigkern.reduce.sparse_gram import GramReport, gram_report, sparse_gram

__all__ = [
    "DECILES",
    "QUANTILE_METHODS",
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
