"""The ``bigkern`` command, a module per concern.

* :mod:`bigkern.cli.main` — ``console_main`` and ``main``: the dispatch, exit codes and
  one-line errors;
* a module per command: :mod:`bigkern.cli.demo_command`, :mod:`bigkern.cli.synth_command`,
  :mod:`bigkern.cli.ingest`, :mod:`bigkern.cli.fit_command`,
  :mod:`bigkern.cli.predict_command`;
* :mod:`bigkern.cli.command_cluster` — the Dask cluster a command runs on;
* :mod:`bigkern.cli.command_outputs` — a command's outputs checked and claimed;
* :mod:`bigkern.cli.parser` — the argument parser, read from the model registry;
* :mod:`bigkern.cli.inputs` and :mod:`bigkern.cli.checks` — inputs and flags checked
  before a cluster starts;
* :mod:`bigkern.cli.signals` — interrupts and terminations ending a run cleanly.

The package's ``__init__`` imports nothing.
"""
