"""The feature cube of a scene dataset, and its pixels as samples: ``X (sample, feature)``.

:func:`feature_cube` is the one way from a scene dataset to the features a model
reads: dims mapped, checked, the validity rules applied, each feature aligned
with the first one's chunks and stacked into ``(scene, y, x, feature)``. The fit
(:func:`stack_samples`) and the prediction (:func:`bigkern.predict_scenes`) both
read it, so they mask the same values and see the same numbers.

Lazy and aligned with the store's chunks: every pixel in a fixed order, rows
with a non-finite feature kept as NaN for the reductions to count.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr
from numpy.typing import DTypeLike

from bigkern.errors import StoreError
from bigkern.features.matching import stored_sources, with_model_features
from bigkern.scenes.dims import DimMapping, to_scene_dims
from bigkern.scenes.key_histogram_sources import samples_source
from bigkern.scenes.labels import label_classes
from bigkern.scenes.reading import default_chunks, validate_scenes
from bigkern.scenes.validity import FillValues, ValidRanges, ensure_validity
from bigkern.store.key_histograms import KeyHistogramSource

__all__ = ["FeatureCube", "Samples", "as_dask_array", "feature_cube", "stack_samples"]


@dataclass(frozen=True)
class Samples:
    """Pixels of a scene dataset as samples.

    ``X`` (sample, feature) and ``y`` (sample) cover **every** pixel in a fixed
    order (dask chunk by chunk, each chunk in C order), so their chunks are
    known and aligned with the store's; ``mask`` marks the rows to fit on
    (labelled pixels when ``labelled_only``). Rows with a non-finite feature
    stay in ``X`` as NaN: every bigkern reduction leaves them out and counts
    them. :meth:`counts` reports what is masked.

    Examples
    --------
    >>> from bigkern import stack_samples
    >>> from bigkern.datasets import make_scenes
    >>> s = stack_samples(make_scenes(1, (16, 16), radiances=False), ["NDAI", "SD", "CORR"])
    >>> s.X.shape, s.features, s.as_dataarray().dims
    ((256, 3), ('NDAI', 'SD', 'CORR'), ('sample', 'feature'))
    >>> s.counts()
    {'pixels': 256, 'absent': 0, 'nonfinite': 0, 'unlabelled': 74, 'labelled_usable': 182}
    """

    X: da.Array
    y: da.Array | None
    mask: da.Array | None
    features: tuple[str, ...]
    pixel: da.Array  # C-order index of (scene, y, x): the same whatever the chunking
    unlabelled: int = 0  # the label value of a pixel with no label (its CF flags say which)
    #: The key histograms the store recorded when written, for these very X, y and mask
    #: (:mod:`bigkern.scenes.recorded_histograms`); give it to ``percentile_bins(recorded=)``.
    recorded: KeyHistogramSource | None = None

    def as_dataarray(self) -> xr.DataArray:
        """``X`` as a DataArray with dims (sample, feature) and the feature coordinate."""
        return xr.DataArray(self.X, dims=("sample", "feature"),
                            coords={"feature": list(self.features)})

    def counts(self) -> dict[str, int]:
        """Pixels in all, with every feature absent, with some feature non-finite, unlabelled.

        One pass over the features and labels.
        """
        finite = da.isfinite(self.X)
        all_f = finite.all(axis=1)
        none_f = ~finite.any(axis=1)
        parts = {
            "pixels": da.asarray(self.X.shape[0]),
            "absent": none_f.sum(),
            "nonfinite": (~all_f & ~none_f).sum(),
        }
        if self.y is not None:
            parts["unlabelled"] = (self.y == self.unlabelled).sum()
            parts["labelled_usable"] = ((self.y != self.unlabelled) & all_f).sum()
        from bigkern.cluster.compute import compute

        values = compute(*parts.values(), label="counting samples")
        return {k: int(v) for k, v in zip(parts, values, strict=True)}


#: A chunk's stacked features of at most this many bytes are made by one task fused with
#: the chunk's reads and validity rules (no feature block moves between workers to be
#: stacked, and a chunk costs one task, not one per feature). Larger chunks stack as
#: one task per feature and a merge: the scheduler spreads those over the workers,
#: and a task holds one feature's intermediates, not every feature's.
FUSED_CUBE_BYTES = 1 << 26


@dataclass(frozen=True)
class FeatureCube:
    """The features of a scene dataset, checked, masked and stacked: what a model reads.

    Made by :func:`feature_cube`. ``cube`` is lazy, ``(scene, y, x, feature)``,
    chunked as the first feature's store chunks with the feature axis whole;
    fill values and values outside their valid range are NaN in it.

    Attributes
    ----------
    ds : xarray.Dataset
        The dataset in bigkern's dims ``(scene, y, x)``, after the validity rules
        (each feature's attributes record them) and any derivation.
    features : tuple of str
        The features, in the order of the cube's last axis.
    arrays : tuple of dask.array.Array
        Each feature, masked, with the chunks of the first one (``chunks``).
    cube : dask.array.Array
        The features stacked on a last axis, one chunk along it.
    sources : tuple of str
        The stored variables the features are read from: a derived feature by its
        source (``SD`` for ``logSD``), each once.

    Examples
    --------
    >>> from bigkern.datasets import make_scenes
    >>> from bigkern.scenes import feature_cube
    >>> fc = feature_cube(make_scenes(2, (16, 24), seed=0, radiances=False), ["NDAI", "SD"])
    >>> fc.cube.shape, fc.cube.dtype, fc.features, fc.chunks == fc.cube.chunks[:3]
    ((2, 16, 24, 2), dtype('float32'), ('NDAI', 'SD'), True)
    """

    ds: xr.Dataset
    features: tuple[str, ...]
    arrays: tuple[da.Array, ...]
    cube: da.Array
    sources: tuple[str, ...]

    @property
    def chunks(self) -> tuple[tuple[int, ...], ...]:
        """The ``(scene, y, x)`` chunks of every feature: the first one's store chunks."""
        return self.arrays[0].chunks

    def stored_arrays(self) -> list[da.Array]:
        """The stored variables :attr:`sources` as dask arrays, masked, for a check of fills.

        A source that is itself a feature is that feature's array (the same tasks).

        Examples
        --------
        >>> from bigkern.datasets import make_scenes
        >>> from bigkern.scenes import feature_cube
        >>> fc = feature_cube(make_scenes(1, (8, 8), radiances=False), ["NDAI", "logSD"],
        ...                   derive=True)
        >>> fc.sources, [a.shape for a in fc.stored_arrays()]
        (('NDAI', 'SD'), [(1, 8, 8), (1, 8, 8)])
        """
        return [self.arrays[self.features.index(v)] if v in self.features
                else as_dask_array(self.ds[v]) for v in self.sources]


def feature_cube(
    ds: xr.Dataset,
    features: Sequence[str],
    *,
    fill_values: FillValues = None,
    valid_ranges: ValidRanges = None,
    dims: DimMapping = None,
    derive: bool = False,
    at_least: DTypeLike | None = None,
) -> FeatureCube:
    """The features of a scene dataset as one lazy ``(scene, y, x, feature)`` cube.

    The steps, in order: the dims mapped to ``(scene, y, x)``
    (:func:`to_scene_dims`); with ``derive``, the validity rules applied to the
    stored variables the features come from and the features ``ds`` lacks
    derived from them (``logSD`` from ``SD``: a fill of ``SD`` never becomes a
    ``logSD`` value); the dataset checked (:func:`validate_scenes`: dims, every
    feature present); the validity rules applied to the features not yet through
    them (:func:`bigkern.scenes.validity.ensure_validity`); each feature as a
    dask array with the first one's chunks, stacked on a last axis. Nothing is
    computed.

    Parameters
    ----------
    ds : xarray.Dataset
        Scene dataset, lazy (e.g. from :func:`open_scenes`) or in memory.
    features : sequence of str
        Feature variables, in order: the cube's last axis.
    fill_values, valid_ranges : optional
        The validity rules, as for :func:`open_scenes`; with ``derive`` they are
        applied to the stored variables, before anything is derived.
    dims : mapping of str to str, optional
        For a dataset whose dims are not named ``(scene, y, x)``: bigkern's dim
        → the dataset's, e.g. ``{"scene": "time"}`` (see :func:`to_scene_dims`).
    derive : bool
        Derive the features ``ds`` lacks but can (see
        :func:`bigkern.features.matching.with_model_features`), as a prediction
        does for the features a model was fitted on. Without it a missing
        feature is an error.
    at_least : dtype, optional
        Cast the features to their common type promoted to at least this one
        (``np.float32``: integer features become floating point) before
        stacking. None stacks them as they are (numpy's promotion).

    Returns
    -------
    FeatureCube

    Raises
    ------
    ValueError
        No features.
    StoreError
        Dims that do not map, a missing feature, a variable not on
        ``(scene, y, x)``, or validity rules that cannot hold (an empty range):
        the message names the dataset and the variable.

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern.datasets import make_scenes
    >>> from bigkern.scenes import feature_cube
    >>> scenes = make_scenes(1, (8, 8), seed=0, radiances=False)
    >>> fc = feature_cube(scenes, ["NDAI", "CORR"], valid_ranges={"NDAI": (0, None)})
    >>> fc.cube.shape, fc.ds["NDAI"].attrs["bigkern_valid_min"]
    ((1, 8, 8, 2), 0.0)
    >>> bool(np.isnan(fc.cube[..., 0].compute()).any())  # negative NDAI masked
    True
    >>> feature_cube(scenes, ["NDAI", "logSD"], derive=True).features
    ('NDAI', 'logSD')
    """
    features = tuple(features)
    if not features:
        raise ValueError("no features given")
    ds = to_scene_dims(ds, dims)
    if derive:
        # the stored variables meet the validity rules before a feature is derived
        # from them, so a fill of SD never becomes a logSD value
        sources = tuple(v for v in stored_sources(ds, features) if v in ds.data_vars)
        ds = ensure_validity(ds, sources, fill_values=fill_values, valid_ranges=valid_ranges)
        ds = with_model_features(ds, features)
        fill_values = valid_ranges = None  # the derived ones: their sources' rules apply
    validate_scenes(ds, features=features, check_labels=False)
    ds = ensure_validity(ds, features, fill_values=fill_values, valid_ranges=valid_ranges)
    if not derive:
        sources = tuple(v for v in stored_sources(ds, features) if v in ds.data_vars)
    arrays = [as_dask_array(ds[f]) for f in features]
    chunks = arrays[0].chunks
    arrays = [a if a.chunks == chunks else a.rechunk(chunks) for a in arrays]
    stacked = arrays
    if at_least is not None:
        dtype = np.result_type(*[a.dtype for a in arrays], at_least)
        stacked = [a.astype(dtype) for a in arrays]
    dtype = np.result_type(*[a.dtype for a in stacked])
    chunk_bytes = int(np.prod([max(c) for c in chunks], dtype=np.int64)) * len(stacked) \
        * dtype.itemsize
    if chunk_bytes <= FUSED_CUBE_BYTES:
        # one task per chunk, fused with its reads and validity rules: no feature block
        # moves between workers to be stacked
        cube = da.map_blocks(_stack_last, *stacked, new_axis=3,
                             chunks=(*chunks, (len(stacked),)), dtype=dtype,
                             token="bigkern-feature-cube")
    else:
        cube = da.stack(stacked, axis=-1).rechunk({3: -1})
    return FeatureCube(ds, features, tuple(arrays), cube, sources)


def _stack_last(*blocks: np.ndarray) -> np.ndarray:
    """The blocks of the features, stacked on a last axis (one C-contiguous array)."""
    return np.stack(blocks, axis=-1)


def stack_samples(
    ds: xr.Dataset,
    features: Sequence[str],
    *,
    labelled_only: bool = True,
    label: str = "label",
    fill_values: FillValues = None,
    valid_ranges: ValidRanges = None,
    dims: DimMapping = None,
) -> Samples:
    """Stack the pixels of a scene dataset into ``X (sample, feature)`` and ``y``.

    Parameters
    ----------
    ds : xarray.Dataset
        Scene dataset (dims scene, y, x), e.g. from :func:`open_scenes`.
    features : sequence of str
        Feature variables, in order; they become the ``feature`` coordinate.
    labelled_only : bool
        Set ``mask`` to the labelled pixels (label ≠ 0, or ≠ the value its CF flags call
        ``unlabelled``). When false, ``mask``
        is None and every pixel with finite features is used.
    label : str
        Name of the label variable; if absent, ``y`` and ``mask`` are None.
    fill_values, valid_ranges : optional
        The validity rules, as for :func:`open_scenes`. Features that have not
        been through them (a Dataset built in memory rather than opened with
        :func:`open_scenes`) get them here: declared CF attributes, these
        arguments, and the ``bigkern.valid_ranges`` defaults (see
        :func:`bigkern.scenes.validity.ensure_validity`).
    dims : mapping of str to str, optional
        For a dataset whose dims are not named ``(scene, y, x)``: bigkern's dim
        → the dataset's, e.g. ``{"scene": "time"}`` (see :func:`to_scene_dims`).

    Returns
    -------
    Samples

    Examples
    --------
    >>> from bigkern import stack_samples
    >>> from bigkern.datasets import make_scenes
    >>> s = stack_samples(make_scenes(1, (32, 48), seed=0), ["NDAI", "CORR"])
    >>> s.X.shape, s.features
    ((1536, 2), ('NDAI', 'CORR'))
    """
    fc = feature_cube(ds, features, fill_values=fill_values, valid_ranges=valid_ranges,
                      dims=dims, at_least=np.float32)
    ds, features, chunks = fc.ds, fc.features, fc.chunks
    X = _flatten_blocks(fc.cube, trailing=(len(features),))
    pixel = _flatten_blocks(_pixel_index(chunks), trailing=())
    y = mask = None
    unlabelled = 0  # or the value the label's CF flags call "unlabelled"
    if label in ds:
        lab = as_dask_array(ds[label])
        if lab.chunks != chunks:
            lab = lab.rechunk(chunks)
        y = _flatten_blocks(lab, trailing=())
        unlabelled = label_classes(ds[label]).unlabelled
        if labelled_only:
            mask = y != unlabelled
    elif labelled_only:
        raise StoreError(f"the dataset has no {label!r} variable; pass labelled_only=False")
    recorded = None
    if labelled_only and fill_values is None and valid_ranges is None:
        recorded = samples_source(ds, features, label, (X, y, mask), lambda ref: _labelled(
            stack_samples(ref, features, label=label)))
    return Samples(X, y, mask, features, pixel, unlabelled, recorded)


def _labelled(s: Samples) -> tuple[da.Array, da.Array, da.Array]:
    return s.X, s.y, s.mask


def _pixel_index_block(shape: tuple[int, ...], block_info: Any = None) -> np.ndarray:
    loc = block_info[None]["array-location"]
    grids = np.meshgrid(*[np.arange(a, b) for a, b in loc], indexing="ij")
    return np.ravel_multi_index(grids, shape).astype(np.int64)


def _pixel_index(chunks: tuple[tuple[int, ...], ...]) -> da.Array:
    shape = tuple(sum(c) for c in chunks)
    return da.map_blocks(_pixel_index_block, shape, chunks=chunks, dtype=np.int64,
                         token="bigkern-pixel-index")


def as_dask_array(var: xr.DataArray) -> da.Array:
    """The data of ``var`` as a dask array: its own if dask-backed, else chunked by default.

    Parameters
    ----------
    var : xarray.DataArray
        A ``(scene, y, x)`` variable, lazy or in memory.

    Returns
    -------
    dask.array.Array
        ``var.data`` itself when it is a dask array, else a dask array with
        :func:`default_chunks` (about ``bigkern.chunk_bytes`` per chunk).
    """
    data = var.data
    if isinstance(data, da.Array):
        return data
    return da.from_array(np.asarray(data), chunks=tuple(default_chunks(var.shape).values()))


def _flatten_blocks(arr: da.Array, trailing: tuple[int, ...]) -> da.Array:
    """Concatenate the blocks of a (scene, y, x, ...) array, each flattened in C order."""
    lead = arr.numblocks[:3]
    pieces = []
    for idx in np.ndindex(*lead):
        block = arr.blocks[idx + (0,) * (arr.ndim - 3)]
        pieces.append(block.reshape((-1, *trailing)))
    return da.concatenate(pieces, axis=0)
