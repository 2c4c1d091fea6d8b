"""Tests of bigkern.jobs: figures, the Nyström spectrum, fits and predictions losing workers."""
