"""Data sets: seeded synthetic scenes, the papers' examples, and readers of the real data.

* :mod:`bigkern.datasets.synthetic_scenes` — :func:`make_scenes`, MISR-like scenes
  with labels, seeded;
* :mod:`bigkern.datasets.kernel_examples` — the papers' toy examples;
* :mod:`bigkern.datasets.misr_text` — the MISR expert-labelled text files read and
  ingested into a scene store;
* :mod:`bigkern.datasets.regression_csv` — the Delve/UCI regression sets of the
  papers' tables;
* :mod:`bigkern.datasets.shared` — where the shared real data lives.

Each public name is imported from its module on first use.
"""

from __future__ import annotations

from bigkern.lazy import lazy_names

#: Each public name and the module of this package it lives in.
_HOMES = {
    "FEATURES": "synthetic_scenes",
    "MISR_TEXT_COLUMNS": "misr_text",
    "RADIANCES": "synthetic_scenes",
    "REGRESSION_SETS": "regression_csv",
    "GreenRed": "kernel_examples",
    "ingest_misr_text": "misr_text",
    "load_regression": "regression_csv",
    "make_scenes": "synthetic_scenes",
    "make_three_clusters": "kernel_examples",
    "read_misr_text": "misr_text",
    "read_regression_csv": "regression_csv",
    "shared_data_dir": "shared",
}

__all__ = sorted(_HOMES)

__getattr__, __dir__ = lazy_names(__name__, _HOMES)
