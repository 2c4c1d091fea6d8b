"""Model files: every estimator saved and loaded through one path, checksummed and bounded.

* :mod:`bigkern.models.persistence.model_files` — :func:`save_model`,
  :func:`load_model` and :func:`load_model_dataset` for every estimator of the registry;
* :mod:`bigkern.models.persistence.model_store` — a model's dataset written to and
  read from zarr or netCDF (:func:`write_model_dataset`, :func:`read_model_dataset`);
* :mod:`bigkern.models.persistence.model_digest` — the digest that proves a file is
  the model that was saved;
* :mod:`bigkern.models.persistence.model_limits` — declared sizes checked before a
  model file is read.

Each public name is imported from its module on first use.
"""

from __future__ import annotations

from bigkern.lazy import lazy_names

_HOMES = {
    "load_model": "model_files",
    "load_model_dataset": "model_files",
    "read_model_dataset": "model_store",
    "save_model": "model_files",
    "write_model_dataset": "model_store",
}

__all__ = sorted(_HOMES)

__getattr__, __dir__ = lazy_names(__name__, _HOMES)
