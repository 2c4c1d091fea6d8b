"""Chunking-independent random choices; they live in :mod:`bigkern.reduce.sampling`.

This module keeps the public import path ``bigkern.sampling`` working.
"""

from bigkern.reduce.sampling import random_split, sample_rows, uniform_from_index

__all__ = ["random_split", "sample_rows", "uniform_from_index"]
