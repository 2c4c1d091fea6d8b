"""Tests of bigkern.cluster: connecting, computing with progress and the watchdog, chunk plans."""
