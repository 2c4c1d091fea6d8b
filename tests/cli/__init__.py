"""Tests of bigkern.cli: the bigkern command, its checks, messages and exits."""
