"""Tests of bigkern.datasets: synthetic scenes, shared data, the MISR text and CSV readers."""
