"""The suspected-fill check at prediction: the features looked at where they are read.

A fill value nobody declared (SD = 9999 in a scene, say) is a number like any
other: a fit's first pass notices it (:mod:`bigkern.reduce.extremes`), but a
prediction would give those pixels a class in silence. So
:func:`bigkern.predict_scenes` attaches to its output a lazy look at the rows it
predicts (:func:`attach_inputs`): per prediction task, the two smallest and
largest values of each feature over the rows where every feature is finite and
how many hold the extremes, merged exactly into one
:class:`~bigkern.reduce.extremes.ValueExtremes`, judged with the fit's rule (a
derived feature in its stored variable's units: ``logSD`` as ``SD``).
:func:`bigkern.write_predictions` computes it with the prediction and warns
(:class:`~bigkern.reduce.extremes.SuspectedFillWarning`) naming the variable to
declare, the value and the count. Nothing is masked by the check itself: a fill
is declared to be masked.

For a zarr output the look is computed in the same graph as the regions, from
the blocks the prediction tasks stack anyway: one compiled sweep over values
already in memory, with no read of its own. A netCDF or GeoTIFF output, whose
regions are computed a few at a time, is checked by a pass of its own over the
stored variables (one more read), as is a resumed store (over every pixel, not
only those it computes).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr

from bigkern.reduce.extremes import ValueExtremes, check_enabled, columns_extremes

__all__ = ["INPUTS_KEY", "PredictionInputs", "attach_inputs", "decide_and_look",
           "decision_and_extremes", "decision_block", "inputs_extremes",
           "prediction_inputs", "total_extremes"]

#: The key of a prediction's ``Dataset.encoding`` that holds its :class:`PredictionInputs`.
INPUTS_KEY = "bigkern_prediction_inputs"

@dataclass(frozen=True)
class PredictionInputs:
    """What a prediction reads, for its fill check: the features' extremes over the rows
    predicted (``extremes``, a lazy :class:`ValueExtremes` from the prediction's own
    tasks), and the stored variables they are read from (``names``, ``arrays``: after
    their validity rules, for a check by a pass of its own)."""

    features: tuple[str, ...]
    extremes: da.Array  # object blocks, one ValueExtremes per prediction task
    names: tuple[str, ...]
    arrays: tuple[da.Array, ...]


def attach_inputs(pred: xr.Dataset, features: Sequence[str], looked: da.Array | None,
                  names: Sequence[str], arrays: Sequence[da.Array]) -> xr.Dataset:
    """Record on ``pred`` (in ``pred.encoding``) what its writers check.

    ``looked`` holds the extremes of the features per prediction task (computed by
    the tasks that compute the decision: :func:`decision_and_extremes`), None when
    the check is off; ``names``/``arrays`` are the stored variables the features
    come from. ``looked`` is an array, not a delayed sum: computed with the
    prediction's arrays it is optimized with them and shares their tasks.
    """
    if looked is not None:
        pred.encoding[INPUTS_KEY] = PredictionInputs(tuple(map(str, features)), looked,
                                                     tuple(map(str, names)), tuple(arrays))
    return pred


def decision_and_extremes(block: np.ndarray, decision_rows: Any) -> tuple[np.ndarray,
                                                                          ValueExtremes]:
    """One prediction task: the decision of a stacked block and its features' extremes."""
    rows = block.reshape(-1, block.shape[-1])  # a view: the features are the last axis
    return (decision_block(block, decision_rows),
            columns_extremes([rows[:, j] for j in range(rows.shape[1])]))


def decision_block(block: np.ndarray, decision_rows: Any) -> np.ndarray:
    """One prediction task without the check: the decision of a stacked block, (scene, y, x)
    or, for decision values of k columns, (scene, y, x, k)."""
    flat = block.reshape(-1, block.shape[-1])
    values = np.asarray(decision_rows(flat)).astype(np.float32)
    return values.reshape(*block.shape[:-1], *values.shape[1:])


def decide_and_look(cube: da.Array, decision_rows: Any, columns: int = 1
                    ) -> tuple[da.Array, da.Array | None]:
    """The decision of every row of ``cube`` (scene, y, x, feature) and, when the
    suspected-fill check is on, the extremes of its features (one object block per task).

    ``columns`` > 1: ``decision_rows`` gives that many values per row (a classifier of
    k classes), and the decision is (scene, y, x, k), the last axis one chunk.

    Both come out of one task per block, so that the read, the stacking, the decision
    and the sweep stay one fused task (a second task reading the stacked block would
    make dask keep the block for it).
    """
    shape = {"drop_axis": 3} if columns == 1 else {"chunks": (*cube.chunks[:3], (columns,))}
    if not check_enabled():
        decision = cube.map_blocks(decision_block, decision_rows=decision_rows, **shape,
                                   dtype=np.float32, token="bigkern-decision")
        return decision, None
    both = cube.map_blocks(decision_and_extremes, decision_rows=decision_rows, drop_axis=3,
                           dtype=object, meta=np.empty((0, 0, 0), dtype=object),
                           token="bigkern-decision-and-extremes")
    decision = both.map_blocks(_first, dtype=np.float32, token="bigkern-decision",
                               meta=np.empty((0,) * (3 if columns == 1 else 4),
                                             dtype=np.float32),
                               **({} if columns == 1 else {"new_axis": 3,
                                                           "chunks": shape["chunks"]}))
    looked = both.map_blocks(_second, dtype=object,
                             chunks=tuple((1,) * len(c) for c in both.chunks),
                             meta=np.empty((0, 0, 0), dtype=object), token="bigkern-extremes")
    return decision, looked


def _first(both: tuple[np.ndarray, ValueExtremes]) -> np.ndarray:
    return both[0]


def _second(both: tuple[np.ndarray, ValueExtremes]) -> np.ndarray:
    out = np.empty((1, 1, 1), dtype=object)
    out.flat[0] = both[1]
    return out


def total_extremes(parts: np.ndarray) -> ValueExtremes | None:
    """The computed per-task extremes (an object array) merged into one."""
    total = None
    for item in np.asarray(parts).ravel():
        total = item if total is None else total + item
    return total


def prediction_inputs(pred: xr.Dataset) -> PredictionInputs | None:
    """The inputs :func:`attach_inputs` recorded, when the check is on; else None."""
    inputs = pred.encoding.get(INPUTS_KEY)
    if not isinstance(inputs, PredictionInputs) or not check_enabled():
        return None
    return inputs


def inputs_extremes(inputs: PredictionInputs) -> ValueExtremes | None:
    """The extremes of the stored inputs by a pass of their own (outputs whose regions are
    not all computed by the writer's tasks), over the pixels where every one is finite."""
    from bigkern.cluster.compute import compute

    parts = da.map_blocks(_one_block_extremes, *inputs.arrays, dtype=object,
                          chunks=tuple((1,) * len(c) for c in inputs.arrays[0].chunks))
    (found,) = compute(parts, label="checking the inputs for fills")
    return total_extremes(found)


def _one_block_extremes(*blocks: np.ndarray) -> np.ndarray:
    out = np.empty((1,) * blocks[0].ndim, dtype=object)
    out.flat[0] = columns_extremes(blocks)
    return out
