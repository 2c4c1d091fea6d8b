"""Percentile binning (Shi & Yu): exact per-feature quantiles, then the statistics of each
occupied bin, in one to three reads of the data.

:func:`~bigkern.reduce.binning.percentile.percentile_bins` is the entry point. It runs
one :class:`~bigkern.reduce.binning.plan.BinningPlan` — by default the fastest exact
plan that fits the workers' memory — and every plan gives bit-identical bins:
:mod:`~bigkern.reduce.binning.in_memory` (small numpy inputs, no task graph),
:mod:`~bigkern.reduce.binning.one_read` (a sample places the edges, one read),
:mod:`~bigkern.reduce.binning.fused` (the fused two-read and the three-pass plans).
:mod:`~bigkern.reduce.binning.quantiles` holds the quantile summaries,
:mod:`~bigkern.reduce.binning.bins` the bin statistics pass and dataset,
:mod:`~bigkern.reduce.binning.partials` a chunk's partial bins and their merge,
:mod:`~bigkern.reduce.binning.fixed_point` the exact sums,
:mod:`~bigkern.reduce.binning.outliers` the robust outlier check.
"""
