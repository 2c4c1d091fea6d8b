"""The suspected-fill check at prediction: the stored inputs looked at as they are read.

A fill value nobody declared (SD = 9999 in a scene, say) is a number like any
other: a fit's first pass notices it (:mod:`bigkern.reduce.extremes`), but a
prediction would give those pixels a class in silence. So
:func:`bigkern.predict_scenes` records which stored variables its features are
read from (:func:`attach_inputs`: ``SD`` for ``logSD``), and
:func:`bigkern.write_predictions` looks at them with the same rule as the fit:
per region, the two smallest and largest values of each variable over the
pixels it predicts and how many hold the extremes (:func:`region_summarizer`),
merged exactly; each suspect is a :class:`~bigkern.reduce.extremes.SuspectedFillWarning`
naming the stored variable, the value and the count, and is in the report.
Nothing is masked by the check itself: a fill is declared to be masked.

For a zarr output the check runs in the tasks that predict and write each region,
on the blocks they read anyway (its cost: one compiled sweep of the inputs,
about 27 ms per 8.4 M × 3 float32 values). A netCDF or GeoTIFF output is
checked by a separate pass over the inputs (one more read). A resumed store
checks the regions it computes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr

from bigkern.reduce.extremes import (
    SuspectedFill,
    ValueExtremes,
    check_enabled,
    columns_extremes,
    warn_suspected_fills,
)

__all__ = ["INPUTS_KEY", "PredictionInputs", "attach_inputs", "inputs_extremes",
           "region_summarizer", "suspected_fills"]

#: The key of a prediction's ``Dataset.encoding`` that holds its :class:`PredictionInputs`.
INPUTS_KEY = "bigkern_prediction_inputs"

#: The summary key under which a region's :class:`ValueExtremes` travel.
EXTREMES = "input_extremes"


@dataclass(frozen=True)
class PredictionInputs:
    """The stored variables a prediction reads (after their validity rules), lazily."""

    names: tuple[str, ...]
    arrays: tuple[da.Array, ...]


def attach_inputs(pred: xr.Dataset, names: Sequence[str],
                  arrays: Sequence[da.Array]) -> xr.Dataset:
    """Record on ``pred`` the stored inputs the writers check (in ``pred.encoding``)."""
    pred.encoding[INPUTS_KEY] = PredictionInputs(tuple(map(str, names)), tuple(arrays))
    return pred


def prediction_inputs(pred: xr.Dataset) -> PredictionInputs | None:
    """The inputs :func:`attach_inputs` recorded, when the check is on; else None."""
    inputs = pred.encoding.get(INPUTS_KEY)
    if not isinstance(inputs, PredictionInputs) or not check_enabled():
        return None
    return inputs


def _extremes_of(blocks: Sequence[np.ndarray]) -> ValueExtremes:
    """Extremes of the pixels where every input is finite (the pixels predicted)."""
    return columns_extremes(blocks)


def region_summarizer(count: Callable[..., dict[str, Any]], n_data: int
                      ) -> Callable[..., dict[str, Any]]:
    """``count`` of a region's ``n_data`` prediction blocks, plus the extremes of the input
    blocks that follow them when the region was computed now.

    Examples
    --------
    >>> import numpy as np
    >>> summarize = region_summarizer(lambda d: {"pixels": d.size}, 1)
    >>> out = summarize(np.zeros(4), np.array([1.0, 2.0, 9999.0, 9999.0]))
    >>> out["pixels"], out["input_extremes"].high[0].tolist()
    (4, [9999.0, 2.0])
    """
    def summarize(*blocks: np.ndarray) -> dict[str, Any]:
        out = dict(count(*blocks[:n_data]))
        if len(blocks) > n_data:
            out[EXTREMES] = _extremes_of(blocks[n_data:])
        return out

    return summarize


def inputs_extremes(inputs: PredictionInputs) -> ValueExtremes:
    """The extremes of the inputs by a pass of their own (for outputs not written by tasks)."""
    from bigkern.cluster.compute import compute

    parts = da.map_blocks(_one_block_extremes, *inputs.arrays, dtype=object,
                          chunks=tuple((1,) * len(c) for c in inputs.arrays[0].chunks))
    found = compute(*parts.to_delayed().ravel(), label="checking the inputs for fills")
    total = None
    for part in found:
        item = np.asarray(part).flat[0]
        total = item if total is None else total + item
    return total


def _one_block_extremes(*blocks: np.ndarray) -> np.ndarray:
    out = np.empty((1,) * blocks[0].ndim, dtype=object)
    out.flat[0] = _extremes_of(blocks)
    return out


def suspected_fills(summary: dict[str, Any], inputs: PredictionInputs, *,
                    stacklevel: int = 4) -> list[SuspectedFill]:
    """Warn once per suspected fill among the inputs (popping the extremes off ``summary``).

    Returns
    -------
    list of SuspectedFill
        Each names the stored variable, the value and how many of the pixels
        predicted hold it.
    """
    extremes = summary.pop(EXTREMES, None)
    return warn_suspected_fills(extremes, inputs.names, stacklevel=stacklevel)
