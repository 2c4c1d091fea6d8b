"""The ``bigkern`` command.

* :mod:`bigkern.cli.commands` — ``main``: fit, predict, demo, plot and the others;
* :mod:`bigkern.cli.parser` — the argument parser, read from the model registry;
* :mod:`bigkern.cli.inputs` and :mod:`bigkern.cli.checks` — inputs and outputs
  checked before a cluster starts;
* :mod:`bigkern.cli.ingest` — ``bigkern ingest``;
* :mod:`bigkern.cli.signals` — interrupts and terminations ending a run cleanly.

The package's ``__init__`` imports nothing.
"""
