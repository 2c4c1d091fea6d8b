"""Tests of bigkern.kernels: the Gaussian kernel, its expansions and fused blocks."""
