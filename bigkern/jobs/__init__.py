"""Scene-level jobs the CLI, the demo and the notebooks share.

- :mod:`bigkern.jobs.fit`: the one fit job, :func:`~bigkern.jobs.fit.fit_scenes`,
  for every ``--model`` of the registry (its parameters in
  :mod:`~bigkern.jobs.fit_params`, its outcome and words in :mod:`~bigkern.jobs.outcome`);
- :mod:`bigkern.jobs.plot`: a scene's figure, :func:`~bigkern.jobs.plot.plot_scene`;
- :mod:`bigkern.jobs.reliability_figure`: how calibrated class probabilities are,
  :func:`~bigkern.jobs.reliability_figure.plot_reliability`;
- :mod:`bigkern.jobs.demo`: ``bigkern demo`` end to end, :func:`~bigkern.jobs.demo.run_demo`.

This package imports nothing itself, so a job loads only what it uses.
"""
