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
from dataclasses import dataclass
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr

__all__ = ["PROBABILITY_OUTPUTS", "ClassMaps", "class_map_codes", "class_maps",
           "probability_map"]

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
    """The class of each pixel of a (…, k) block of decision values; ``none`` where NaN.

    The pixels that can be predicted get the class ``predict`` gives their rows
    (:func:`bigkern.models.predicted_classes`).
    """
    from bigkern.models import predicted_classes

    bad = np.isnan(decision).any(axis=-1)
    rows = np.where(bad[..., None], 0.0, decision).reshape(-1, decision.shape[-1])
    out = predicted_classes(rows, codes).reshape(bad.shape)
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


@dataclass(frozen=True)
class ClassMaps:
    """The variables of a k-class prediction and the codes of its class map.

    Attributes
    ----------
    variables : dict of str to xarray.Variable
        ``class`` and the probability maps asked for, on ``(scene, y, x)``, each with
        its CF attributes and its encoding (``_FillValue`` NaN for a probability).
    codes : list of int
        The classes as the class map's int8 codes, in the order of ``classes_``.
    none : int
        The "no prediction" code (:func:`class_map_codes`).
    """

    variables: dict[str, xr.Variable]
    codes: list[int]
    none: int


def class_maps(decision: da.Array, classes: Any, names: Sequence[str], calibration: Any,
               probability: str, model_name: str, grid: dict[str, str]) -> ClassMaps:
    """The variables of a k-class prediction: ``class`` and the probabilities asked for.

    Returns
    -------
    ClassMaps
        The variables on ``(scene, y, x)``, with their attributes and encodings, and
        the class codes they are written in.
    """
    from bigkern.scenes.dims import SCENE_DIMS

    codes, none = class_map_codes(classes)
    labels = np.asarray(codes, dtype=np.int8)
    cls = decision.map_blocks(_class_block, codes=labels, none=none, drop_axis=3,
                              dtype=np.int8)
    out = {"class": xr.Variable(SCENE_DIMS, cls, {
        "long_name": f"class predicted by {model_name}",
        "flag_values": np.array([*codes, none], dtype=np.int8),
        "flag_meanings": " ".join([*names, "no_prediction"]), **grid})}
    if calibration is None or probability == "none":
        return ClassMaps(out, codes, none)
    proba = probability_map(decision, calibration)
    nan_fill = {"_FillValue": np.float32(np.nan)}
    if probability == "max":
        top = proba.map_blocks(_max_probability, drop_axis=3, dtype=np.float32)
        out["probability"] = xr.Variable(SCENE_DIMS, top, {
            "long_name": "probability of the predicted class", "units": "1",
            "valid_min": np.float32(0), "valid_max": np.float32(1), **grid}, nan_fill)
        return ClassMaps(out, codes, none)
    for j, name in enumerate(names):
        out[f"probability_{name}"] = xr.Variable(SCENE_DIMS, proba[..., j], {
            "long_name": f"probability of class {name} ({codes[j]})", "units": "1",
            "valid_min": np.float32(0), "valid_max": np.float32(1), **grid}, nan_fill)
    return ClassMaps(out, codes, none)


def _max_probability(p: np.ndarray) -> np.ndarray:
    bad = np.isnan(p).any(axis=-1)
    return np.where(bad, np.float32(np.nan),
                    np.max(np.where(np.isnan(p), 0, p), axis=-1)).astype(np.float32)
