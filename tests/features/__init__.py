"""Tests of bigkern.features: feature matching and robust scaling."""
