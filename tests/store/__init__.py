"""Tests of bigkern.store: claims, staging, limits, manifests, URLs, prediction files."""
