"""Percentile binning (Shi & Yu): exact per-feature quantiles, then the statistics of each
occupied bin, in one to three passes.

:func:`~bigkern.reduce.binning.percentile.percentile_bins` is the entry point; its plans
(:mod:`~bigkern.reduce.binning.in_memory`, the fused two-read plan of
:mod:`~bigkern.reduce.binning.radix_select`, the one-read plan of
:mod:`~bigkern.reduce.binning.one_read`) give bit-identical bins.
:mod:`~bigkern.reduce.binning.quantiles` holds the quantile summaries,
:mod:`~bigkern.reduce.binning.bins` the bin statistics pass and dataset,
:mod:`~bigkern.reduce.binning.fixed_point` the exact sums,
:mod:`~bigkern.reduce.binning.outliers` the robust outlier check.
"""
