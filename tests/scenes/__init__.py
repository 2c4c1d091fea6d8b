"""Tests of bigkern.scenes: scene stores, granules, CF conventions, validity."""
