"""Key histograms recorded while a scene store is written: what is recorded, and its write.

:func:`~bigkern.scenes.writing.write_scenes` given a ``recorder`` records, in the
compute that writes the store, what the first read of exact percentile binning
would find among the store's labelled pixels: :func:`recording` builds the lazy
computation (the recorder's, :data:`bigkern.reduce.recorded_histograms.KEY_HISTOGRAM_RECORDER`,
over the samples
:func:`~bigkern.scenes.stack_samples` stacks from the very blocks being
written), :func:`write_recording` stores its result beside the chunk manifests
(:mod:`bigkern.store.key_histograms`).

What is recorded, per feature set (every stored feature; the default features
of a fit): the float features on ``(scene, y, x)`` that get a chunk manifest
and declare no fill value other than NaN (so they read back as written), and
those derived from them (``logSD``), stacked as
:func:`~bigkern.scenes.stack_samples` stacks them, over the pixels whose
``label`` is not the unlabelled value, after the validity rules (recorded per
feature), and, with a recorder that takes pixel ids, the same over the training
half of a searched fit's default split (:mod:`bigkern.reduce.recorded_split`).
A dataset without a ``label``, or without such a feature, gets no record.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr

from bigkern.features import DEFAULT_FEATURES, DERIVED, with_features
from bigkern.scenes.dims import SCENE_DIMS
from bigkern.scenes.key_histogram_sources import recorded_rules
from bigkern.scenes.labels import label_classes
from bigkern.scenes.samples import feature_cube, stack_samples
from bigkern.scenes.validity import ensure_validity
from bigkern.scenes.validity_sources import NOT_FEATURES
from bigkern.store.key_histograms import KeyHistogramRecorder, write_key_histograms
from bigkern.store.manifest import ChunkManifest, manifest_eligible

__all__ = ["Recording", "recording", "write_recording"]


@dataclass(frozen=True)
class Recording:
    """A recording to compute with a store's write.

    Attributes
    ----------
    features : tuple of str
        The features recorded, in order.
    meta : dict
        What the record assumes, so far (the digests come with the write).
    graph : dask.delayed.Delayed
        The merged first-read result, with per-chunk row counts.
    """

    features: tuple[str, ...]
    meta: dict[str, Any]
    graph: Any


def _declares_fill(var: xr.DataArray) -> bool:
    """Whether ``var`` declares a fill value other than NaN (it would read back as NaN)."""
    for key in ("_FillValue", "missing_value"):
        for source in (var.encoding, var.attrs):
            value = source.get(key)
            if value is not None and not np.all(np.isnan(np.atleast_1d(value).astype(float))):
                return True
    return False


def recording(ds: xr.Dataset, recorder: KeyHistogramRecorder, label: str = "label"
              ) -> list[Recording]:
    """The recordings of a scene dataset about to be written (in bigkern's dims).

    One per feature set: every stored float feature, and the default features
    (:data:`~bigkern.features.DEFAULT_FEATURES`, derived ones made as a fit makes
    them) when the dataset has or can derive them. Nothing is computed: compute
    each :attr:`Recording.graph` with the write.

    Examples
    --------
    >>> from bigkern.datasets import make_scenes
    >>> from bigkern.reduce.recorded_histograms import KEY_HISTOGRAM_RECORDER
    >>> [(r.features, r.meta["dtype"]) for r in recording(
    ...     make_scenes(2, (16, 16), seed=0, radiances=False), KEY_HISTOGRAM_RECORDER)]
    [(('NDAI', 'SD', 'CORR'), 'float32'), (('NDAI', 'logSD', 'CORR'), 'float32')]
    """
    if label not in ds.data_vars or ds[label].dims != SCENE_DIMS:
        return []
    stored = tuple(
        str(k) for k, v in ds.data_vars.items()
        if v.dims == SCENE_DIMS and v.dtype.kind == "f" and str(k) not in NOT_FEATURES
        and str(k) != label and isinstance(v.data, da.Array) and manifest_eligible(v.variable)
        and not _declares_fill(v))
    sets = [stored] if stored else []
    default = tuple(DEFAULT_FEATURES)
    if set(default) != set(stored) and all(
            f in stored or (f in DERIVED and DERIVED[f][0] in stored) for f in default):
        sets.append(default)
    return [_recording(ds, features, label, recorder) for features in sets]


def _recording(ds: xr.Dataset, features: tuple[str, ...], label: str,
               recorder: KeyHistogramRecorder) -> Recording:
    sources = tuple(dict.fromkeys(DERIVED[f][0] if f in DERIVED and f not in ds else f
                                  for f in features))
    checked = with_features(ensure_validity(ds, list(sources)), features)
    samples = stack_samples(checked, features, labelled_only=True, label=label)
    meta = {"features": list(features), "sources": [*sources, label],
            "dtype": str(samples.X.dtype), "label": label,
            "unlabelled": np.asarray(label_classes(ds[label]).unlabelled).item(),
            "validity": recorded_rules(feature_cube(checked, features, at_least=np.float32).ds,
                                       features)}
    # with the pixel ids, the default split's first part is recorded too
    return Recording(features, meta,
                     recorder.graph(samples.X, samples.y, samples.mask, samples.pixel))


def write_recording(store: Any, recordings: Sequence[Recording],
                    merged: Sequence[dict[str, Any]], digests: Mapping[str, np.ndarray],
                    chunks: Mapping[str, Sequence[int]], recorder: KeyHistogramRecorder
                    ) -> int | None:
    """Write the computed recordings beside the manifests, before the store is finished.

    ``merged`` are the computed graphs; ``digests`` and ``chunks`` those given to
    :func:`~bigkern.store.manifest.write_manifests`. A recording that reads a
    variable without a manifest is left out. Returns the records' bytes (None: none).
    """
    records = []
    for rec, result in zip(recordings, merged, strict=True):
        if any(v not in digests for v in rec.meta["sources"]):
            continue
        attrs = {v: ChunkManifest(v, tuple(int(c) for c in chunks[v]),
                                  np.asarray(digests[v], dtype=np.uint32)).to_attr()
                 for v in rec.meta["sources"]}
        records.append(recorder.record(result, {**rec.meta, "digests": attrs}))
    return write_key_histograms(store, records) if records else None
