"""The class maps and probability maps :func:`bigkern.predict_scenes` writes.

Two classes keep their names: ``cloud_mask`` and ``decision``, plus
``cloud_probability`` (of ``classes_[1]``) when the model was fitted with
``calibration=``. k > 2 classes give:

* ``class`` — int8, the predicted class's label value at each pixel, CF
  ``flag_values`` (the classes and the "no prediction" code) and
  ``flag_meanings`` (their names: the label's own ``flag_meanings`` when the
  scenes declare them, else ``class_<value>``);
* with a calibrated model, ``probability_<name>`` per class (float32,
  ``probability="all"``), or ``probability`` of the predicted class
  (``probability="max"``); NaN where no prediction is made.

The k decision values of a pixel are computed once, in the task that reads its
features; the maps are cheap functions of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import dask.array as da
import numpy as np

__all__ = ["PROBABILITY_OUTPUTS", "class_map_codes", "class_maps", "probability_map"]

#: What ``predict_scenes(probability=…)`` and ``bigkern predict --probability`` take.
PROBABILITY_OUTPUTS = ("all", "max", "none")


def class_map_codes(classes: Any) -> tuple[list[int], int]:
    """The int8 codes of a class map: the class labels, and the "no prediction" code.

    "No prediction" is 0 (the unlabelled value) unless 0 is a class; then −128, so that
    it is never a real class.

    Examples
    --------
    >>> class_map_codes([1, 2, 3]), class_map_codes([0, 1, 2])
    (([1, 2, 3], 0), ([0, 1, 2], -128))
    """
    values = list(np.asarray(classes).tolist())
    if not all(isinstance(v, int) or (isinstance(v, float) and v.is_integer())
               for v in values):
        raise TypeError(f"predict_scenes writes an int8 class map: the model's classes must "
                        f"be integers in [-127, 127]; got {values} (fit on integer labels)")
    codes = [int(v) for v in values]
    if not all(-127 <= v <= 127 for v in codes):
        raise TypeError(f"predict_scenes writes an int8 class map: classes {values} are "
                        f"outside [-127, 127]")
    return codes, (0 if 0 not in codes else -128)


def _class_block(decision: np.ndarray, codes: np.ndarray, none: int) -> np.ndarray:
    """The class of each pixel of a (…, k) block of decision values; ``none`` where NaN."""
    bad = np.isnan(decision).any(axis=-1)
    out = codes[np.argmax(np.where(np.isnan(decision), -np.inf, decision), axis=-1)]
    return np.where(bad, none, out).astype(np.int8)


def _probability_block(decision: np.ndarray, calibration: Any) -> np.ndarray:
    """Class probabilities (…, k) of a block of decision values ((…) or (…, k))."""
    k = int(calibration.n_classes)
    flat = decision.reshape(-1) if k == 2 else decision.reshape(-1, k)
    p = calibration.probabilities(flat)
    lead = decision.shape if k == 2 else decision.shape[:-1]
    return p.astype(np.float32).reshape(*lead, k)


def probability_map(decision: da.Array, calibration: Any) -> da.Array:
    """The (scene, y, x, k) probabilities of a lazy decision ((scene, y, x) for two classes,
    (scene, y, x, k) for k): one cheap task per block of decisions."""
    k = int(calibration.n_classes)
    chunks = (*decision.chunks[:3], (k,))
    extra = {"new_axis": 3} if decision.ndim == 3 else {}
    return decision.map_blocks(_probability_block, calibration=calibration, chunks=chunks,
                               dtype=np.float32, **extra)


def class_maps(decision: da.Array, classes: Any, names: Sequence[str], calibration: Any,
               probability: str, model_name: str, grid: dict[str, str]
               ) -> dict[str, tuple[tuple[str, ...], da.Array, dict[str, Any]]]:
    """The variables of a k-class prediction: ``class`` and the probabilities asked for.

    Returns ``{name: (dims, data, attrs)}`` on ``(scene, y, x)``.
    """
    from bigkern.scenes.dims import SCENE_DIMS

    codes, none = class_map_codes(classes)
    labels = np.asarray(codes, dtype=np.int8)
    cls = decision.map_blocks(_class_block, codes=labels, none=none, drop_axis=3,
                              dtype=np.int8)
    out = {"class": (SCENE_DIMS, cls, {
        "long_name": f"class predicted by {model_name}",
        "flag_values": np.array([*codes, none], dtype=np.int8),
        "flag_meanings": " ".join([*names, "no_prediction"]), **grid})}
    if calibration is None or probability == "none":
        return out
    proba = probability_map(decision, calibration)
    if probability == "max":
        top = proba.map_blocks(_max_probability, drop_axis=3, dtype=np.float32)
        out["probability"] = (SCENE_DIMS, top, {
            "long_name": "probability of the predicted class", "units": "1",
            "valid_min": np.float32(0), "valid_max": np.float32(1), **grid})
        return out
    for j, name in enumerate(names):
        out[f"probability_{name}"] = (SCENE_DIMS, proba[..., j], {
            "long_name": f"probability of class {name} ({codes[j]})", "units": "1",
            "valid_min": np.float32(0), "valid_max": np.float32(1), **grid})
    return out


def _max_probability(p: np.ndarray) -> np.ndarray:
    bad = np.isnan(p).any(axis=-1)
    return np.where(bad, np.float32(np.nan),
                    np.max(np.where(np.isnan(p), 0, p), axis=-1)).astype(np.float32)
