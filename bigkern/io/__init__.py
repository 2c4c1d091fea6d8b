"""Scene stores and model files: open, validate, stack, ingest, write."""

from bigkern.io.chunking import ChunkWarning
from bigkern.io.misr_text import MISR_TEXT_COLUMNS, ingest_misr_text, read_misr_text
from bigkern.io.model_store import read_model_dataset, write_model_dataset
from bigkern.io.regression_csv import load_regression, read_regression_csv
from bigkern.io.samples import Samples, stack_samples
from bigkern.io.scene_dims import SCENE_DIMS
from bigkern.io.scenes import default_chunks, open_scenes, validate_scenes, write_scenes
from bigkern.io.validity import apply_validity, validity_report, validity_rules

__all__ = [
    "MISR_TEXT_COLUMNS",
    "SCENE_DIMS",
    "ChunkWarning",
    "Samples",
    "apply_validity",
    "default_chunks",
    "ingest_misr_text",
    "load_regression",
    "open_scenes",
    "read_misr_text",
    "read_model_dataset",
    "read_regression_csv",
    "stack_samples",
    "validate_scenes",
    "validity_report",
    "validity_rules",
    "write_model_dataset",
    "write_scenes",
]

