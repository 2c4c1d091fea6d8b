"""Scenes: open any granule as ``(scene, y, x)`` data, write scene stores, stack valid pixels.

* :mod:`bigkern.scenes.reading` — :func:`open_scenes` (a zarr store, netCDF/HDF5
  files, GeoTIFFs or a reference file, by local path or fsspec URL),
  :func:`validate_scenes`, :func:`default_chunks`;
* :mod:`bigkern.scenes.writing` — :func:`write_scenes`, checked, checksummed and
  published whole;
* :mod:`bigkern.scenes.dims` — finding a file's scene, y and x dims (CF axes,
  standard names, units, datetime values) and mapping them to :data:`SCENE_DIMS`;
* :mod:`bigkern.scenes.granules` and :mod:`bigkern.scenes.granule_formats` — the
  readers of netCDF/HDF5, GeoTIFF and reference files, and telling them apart;
* :mod:`bigkern.scenes.validity` and :mod:`bigkern.scenes.validity_sources` —
  fill values and valid ranges, where they come from, and the rows they leave out;
* :mod:`bigkern.scenes.samples` — :func:`feature_cube`, the one feature cube the
  fit (:func:`stack_samples`) and the prediction read;
* :mod:`bigkern.scenes.cf` — the CF attributes scene stores and predictions carry.

Each public name is imported from its module on first use.
"""

from __future__ import annotations

from bigkern.lazy import lazy_names

#: Each public name and the module of this package it lives in.
_HOMES = {
    "FeatureCube": "samples",
    "SCENE_DIMS": "dims",
    "Samples": "samples",
    "apply_validity": "validity",
    "default_chunks": "reading",
    "feature_cube": "samples",
    "open_scenes": "reading",
    "stack_samples": "samples",
    "validate_scenes": "reading",
    "validity_report": "validity",
    "validity_rules": "validity",
    "write_scenes": "writing",
}

__all__ = sorted(_HOMES)

__getattr__, __dir__ = lazy_names(__name__, _HOMES)
