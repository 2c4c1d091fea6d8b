"""Scene stores and model files: open, validate, stack, ingest, write."""

from bigkern.io.misr_text import MISR_TEXT_COLUMNS, ingest_misr_text, read_misr_text
from bigkern.io.model_store import load_model, save_model
from bigkern.io.regression_csv import load_regression, read_regression_csv
from bigkern.io.scenes import (
    SCENE_DIMS,
    Samples,
    default_chunks,
    open_scenes,
    stack_samples,
    validate_scenes,
    write_scenes,
)
from bigkern.io.validity import apply_validity, validity_report, validity_rules

__all__ = [
    "MISR_TEXT_COLUMNS",
    "SCENE_DIMS",
    "Samples",
    "apply_validity",
    "default_chunks",
    "ingest_misr_text",
    "load_model",
    "load_regression",
    "open_scenes",
    "read_misr_text",
    "read_regression_csv",
    "save_model",
    "stack_samples",
    "validate_scenes",
    "validity_report",
    "validity_rules",
    "write_scenes",
]
