"""Scene stores and model files: open, validate, stack, ingest, write.

Each name is imported from its module on first use, so that a light module of this
package (paths and URLs, output claims, the store's root attributes) loads without
xarray and Dask: the command line checks its paths with them before anything heavy.
"""

from __future__ import annotations

from bigkern.lazy import lazy_names

#: Each public name and the module of this package it lives in.
_HOMES = {
    "MISR_TEXT_COLUMNS": "misr_text",
    "SCENE_DIMS": "scene_dims",
    "ChunkWarning": "chunking",
    "Samples": "samples",
    "apply_validity": "validity",
    "default_chunks": "scenes",
    "ingest_misr_text": "misr_text",
    "load_regression": "regression_csv",
    "open_scenes": "scenes",
    "read_misr_text": "misr_text",
    "read_model_dataset": "model_store",
    "read_regression_csv": "regression_csv",
    "stack_samples": "samples",
    "validate_scenes": "scenes",
    "validity_report": "validity",
    "validity_rules": "validity",
    "write_model_dataset": "model_store",
    "write_scenes": "scene_writer",
}

__all__ = sorted(_HOMES)


__getattr__, __dir__ = lazy_names(__name__, _HOMES)
