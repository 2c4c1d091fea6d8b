"""Tests of bigkern.reduce: binning, quantiles, reduced sets, sparse Grams, passes over the data."""
