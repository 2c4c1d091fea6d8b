"""Tests of bigkern.solvers: Newton, OHT, RLS, periodic and sparse solvers and their estimators."""
