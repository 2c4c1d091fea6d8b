"""Tests of bigkern.models: the estimators, their registry, parameters and model files."""
