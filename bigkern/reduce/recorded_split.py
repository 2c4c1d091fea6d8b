"""The training half of a searched fit, binned from key histograms recorded at write time.

A searched fit of the ``bins`` engine (:func:`bigkern.fit_scenes`) bins the
first part of :func:`~bigkern.reduce.sampling.random_split` of the labelled
pixels, not all of them, so the histograms a store records over every labelled
pixel (:mod:`bigkern.reduce.recorded_histograms`) do not stand for its rows.
The split is a hash of each pixel's id (the C-order index of ``(scene, y, x)``)
and the seed: the writer, which stacks the same ids, also records the first
part of the split of :data:`RECORDED_SEED` and :data:`RECORDED_FRACTION` (the
fit's defaults), and :func:`recorded_split` makes the split and the
:class:`~bigkern.store.key_histograms.KeyHistogramSource` of its first part.

The record of a part says which split it is (:func:`split_identity`: the rule,
the seed, the fraction and a fingerprint of the rule's output); a fit with
another seed or fraction, or after the rule changed, falls back with the reason
(:func:`split_mismatch`).
"""

from __future__ import annotations

import dataclasses
import functools
import zlib
from typing import TYPE_CHECKING, Any

import numpy as np

from bigkern.reduce.sampling import random_split
from bigkern.store.key_histograms import KeyHistogramSource

if TYPE_CHECKING:
    from bigkern.scenes.samples import Samples

__all__ = [
    "RECORDED_FRACTION",
    "RECORDED_SEED",
    "SPLIT_RULE",
    "first_part_mask",
    "recorded_split",
    "split_identity",
    "split_mismatch",
]

#: How the split is made: a change of :func:`~bigkern.reduce.sampling.random_split`'s
#: rule must change this name (the fingerprint in :func:`split_identity` also sees it).
SPLIT_RULE = ("random_split-v1: first part where splitmix64(pixel + seed * golden) / 2**53 < "
              "fraction, pixel the C-order index of (scene, y, x)")
#: The seed of the split whose first part a store records: a searched fit's default.
RECORDED_SEED = 0
#: The share of the labelled pixels in that first part: a searched fit's.
RECORDED_FRACTION = 0.5
_FINGERPRINT_ROWS = 4096
_SLICE_ROWS = 1 << 20


@functools.cache
def _fingerprint(seed: int, fraction: float) -> int:
    """CRC-32 of the first part that the split rule gives ids 0 … 4095 at ``seed``."""
    first, _ = random_split(np.arange(_FINGERPRINT_ROWS), fraction=fraction, seed=seed)
    return zlib.crc32(np.packbits(first).tobytes())


def split_identity(seed: int, fraction: float) -> dict[str, Any]:
    """What a record of a split's first part says about the split (JSON-able).

    Examples
    --------
    >>> ident = split_identity(0, 0.5)
    >>> ident["seed"], ident["fraction"], ident["rule"] == SPLIT_RULE
    (0, 0.5, True)
    >>> split_identity(1, 0.5)["fingerprint"] != ident["fingerprint"]
    True
    """
    return {"rule": SPLIT_RULE, "seed": int(seed), "fraction": float(fraction),
            "fingerprint": _fingerprint(int(seed), float(fraction))}


def first_part_mask(mask: np.ndarray | None, pixel: np.ndarray, split: dict[str, Any]
                    ) -> np.ndarray:
    """The rows of a chunk in the first part of ``split`` (and in ``mask``).

    Taken :data:`_SLICE_ROWS` rows at a time: the hash's temporaries stay small beside
    the chunk being written.

    Examples
    --------
    >>> pixel = np.arange(10)
    >>> first = first_part_mask(None, pixel, split_identity(0, 0.5))
    >>> bool((first == random_split(pixel, fraction=0.5, seed=0)[0]).all())
    True
    """
    pixel = np.asarray(pixel)
    out = np.empty(pixel.shape, dtype=bool)
    for start in range(0, len(pixel), _SLICE_ROWS):
        rows = slice(start, start + _SLICE_ROWS)
        out[rows], _ = random_split(pixel[rows], None if mask is None else mask[rows],
                                    fraction=split["fraction"], seed=split["seed"])
    return out


def split_mismatch(recorded: dict[str, Any] | None, wanted: dict[str, Any]) -> str | None:
    """Why a first part recorded for the split ``recorded`` does not stand for ``wanted``
    (None: it does).

    Examples
    --------
    >>> split_mismatch(split_identity(0, 0.5), split_identity(3, 0.5))
    'the training half was recorded for the split of seed 0; this split has seed 3'
    >>> split_mismatch(split_identity(0, 0.5), split_identity(0, 0.5)) is None
    True
    """
    if recorded is None:
        return ("the store recorded no first part of a split (written before bigkern "
                "recorded the training half, or by a recorder without pixel ids)")
    changed = "the split rule changed since the training half was recorded"
    if recorded.get("rule") != wanted["rule"]:
        return changed
    if recorded.get("seed") != wanted["seed"]:
        return (f"the training half was recorded for the split of seed {recorded.get('seed')}; "
                f"this split has seed {wanted['seed']}")
    if recorded.get("fraction") != wanted["fraction"]:
        return (f"the training half was recorded for a first part of fraction "
                f"{recorded.get('fraction')}; this split's is {wanted['fraction']}")
    if recorded.get("fingerprint") != wanted["fingerprint"]:  # same name, other output
        return changed
    return None


def recorded_split(samples: Samples, *, fraction: float = RECORDED_FRACTION,
                   seed: int = RECORDED_SEED) -> tuple[Any, Any, KeyHistogramSource | None]:
    """A random split of the samples' rows, and the record its first part may use.

    The parts are :func:`~bigkern.reduce.sampling.random_split`'s of
    ``samples.pixel`` and ``samples.mask``; the source (None when the samples have
    no record) is ``samples.recorded`` for the first part: give it with
    ``mask=first`` to :func:`~bigkern.reduce.binning.percentile.percentile_bins`
    as ``recorded``. When the store recorded the first part of this very split,
    binning it reads the data once; else the bins' ``recorded`` attr says why not.

    Parameters
    ----------
    samples : Samples
        From :func:`bigkern.stack_samples` (labelled pixels).
    fraction, seed
        As for :func:`~bigkern.reduce.sampling.random_split`.

    Returns
    -------
    first, second : dask arrays of bool
    source : KeyHistogramSource or None

    Examples
    --------
    >>> import tempfile
    >>> from bigkern import open_scenes, stack_samples, write_scenes
    >>> from bigkern.datasets import make_scenes
    >>> from bigkern.reduce import percentile_bins
    >>> from bigkern.reduce.recorded_histograms import KEY_HISTOGRAM_RECORDER
    >>> tmp = tempfile.TemporaryDirectory()
    >>> store = write_scenes(make_scenes(2, (64, 64), seed=0, radiances=False),
    ...                      f"{tmp.name}/s.zarr", recorder=KEY_HISTOGRAM_RECORDER)
    >>> s = stack_samples(open_scenes(store), ["NDAI", "SD", "CORR"])
    >>> train, held_out, source = recorded_split(s, seed=0)
    >>> bins = percentile_bins(s.X, s.y, mask=train, recorded=source)
    >>> bins.attrs["plan"], bins.attrs["passes"], bins.attrs["recorded"]
    ('recorded', 1, 'ok')
    >>> train, _, source = recorded_split(s, seed=1)
    >>> percentile_bins(s.X, s.y, mask=train, recorded=source).attrs["recorded"]
    'fallback: the training half was recorded for the split of seed 0; this split has seed 1'
    >>> tmp.cleanup()
    """
    first, second = random_split(samples.pixel, samples.mask, fraction=fraction, seed=seed)
    source = samples.recorded
    if source is None or samples.mask is None or source.names[2] != samples.mask.name:
        return first, second, source  # none, or not these samples': the checks say why
    return first, second, dataclasses.replace(
        source, names=(source.names[0], source.names[1], first.name),
        split=split_identity(seed, fraction))
