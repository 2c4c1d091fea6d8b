"""Distributed passes that reduce chunked samples to small systems."""

from bigkern.reduce.binning import bin_index, bin_statistics, robust_scaler
from bigkern.reduce.percentile import percentile_bins
from bigkern.reduce.quantiles import DECILES, QUANTILE_METHODS, quantile_edges, quantile_summary

__all__ = [
    "DECILES",
    "QUANTILE_METHODS",
    "bin_index",
    "bin_statistics",
    "percentile_bins",
    "quantile_edges",
    "quantile_summary",
    "robust_scaler",
]
