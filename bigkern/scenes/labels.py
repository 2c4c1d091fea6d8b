"""The classes of a scene store's ``label`` variable, and the check of its values.

A label holds one integer class per pixel, and one value that means "not
labelled". Which values are classes, and what they are called, comes from the
label's CF attributes when it declares them::

    flag_values = 0, 1, 2, 3
    flag_meanings = "unlabelled clear thin_cloud thick_cloud"

the value whose meaning is ``unlabelled`` (or ``unlabeled``, ``no_label``,
``not_labelled``, ``unknown``) being the unlabelled one — else 0. A label
that declares no flags may hold any integers in [-127, 127] (the range of the
int8 class map a prediction writes), 0 meaning unlabelled; bigkern's own stores
label clear −1 and cloud 1. Any other value (a fill value such as 255 or −9999, a
NaN, a class the flags do not declare) is an error naming the scene.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr

from bigkern.errors import LabelError

__all__ = ["UNLABELLED_WORDS", "LabelClasses", "bigkern_label_flags", "check_label_values",
           "class_names", "label_classes"]

#: The ``flag_meanings`` words that mark the "not labelled" value of a label.
UNLABELLED_WORDS = frozenset({"unlabelled", "unlabeled", "no_label", "not_labelled",
                              "not_labeled", "unknown"})

#: The values a label without flags may hold: the int8 range of a predicted class map.
UNDECLARED_RANGE = (-127, 127)


def bigkern_label_flags(dtype: Any = np.int8) -> dict[str, Any]:
    """The CF flags of bigkern's own labels (−1 clear, 0 unlabelled, 1 cloud), in ``dtype``.

    Examples
    --------
    >>> bigkern_label_flags()["flag_meanings"]
    'clear unlabelled cloud'
    """
    return {"flag_values": np.array([-1, 0, 1], dtype=dtype),
            "flag_meanings": "clear unlabelled cloud"}


@dataclass(frozen=True)
class LabelClasses:
    """What a label's values mean: its classes, their names, and the unlabelled value.

    Attributes
    ----------
    values : tuple of int or None
        The declared classes (``flag_values`` less the unlabelled one), or None when
        the label declares none (then any integer in [-127, 127] is a class).
    names : tuple of str or None
        Their ``flag_meanings``, in the order of ``values``.
    unlabelled : int
        The value of a pixel with no label.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> label = xr.DataArray(np.zeros((1, 2, 2), "i1"), dims=("scene", "y", "x"), attrs={
    ...     "flag_values": [0, 1, 2, 3],
    ...     "flag_meanings": "unlabelled clear thin_cloud thick_cloud"})
    >>> found = label_classes(label)
    >>> found.values, found.unlabelled, found.name_of(2)
    ((1, 2, 3), 0, 'thin_cloud')
    """

    values: tuple[int, ...] | None
    names: tuple[str, ...] | None
    unlabelled: int = 0
    #: Whether every value is −1, 0 or 1 (bigkern's clear/unlabelled/cloud), once checked
    #: by :func:`check_label_values`; None before
    bigkern_codes: bool | None = None

    def name_of(self, value: Any) -> str | None:
        """The declared name of class ``value``, or None."""
        if self.values is None or self.names is None:
            return None
        for v, name in zip(self.values, self.names, strict=True):
            if v == value:
                return name
        return None

    def allowed(self) -> tuple[int, ...] | None:
        """The values a pixel may hold (classes and the unlabelled value), None if any
        integer in [-127, 127] may be a class."""
        return None if self.values is None else (*self.values, self.unlabelled)


def label_classes(label: xr.DataArray | None) -> LabelClasses:
    """The classes a ``label`` variable declares (its CF flags), or none declared.

    Flags that do not pair up (as many ``flag_values`` as ``flag_meanings`` words)
    or name values that are not integers declare nothing.
    """
    attrs = {} if label is None else label.attrs
    if "flag_values" not in attrs:
        return LabelClasses(None, None)
    raw = np.atleast_1d(np.asarray(attrs["flag_values"]))
    words = str(attrs.get("flag_meanings", "")).split()
    whole = raw.dtype.kind in "iu" or (raw.dtype.kind == "f"
                                       and bool(np.all(np.isfinite(raw) & (raw == np.round(raw)))))
    if len(words) != raw.size or not whole:
        # flags that do not pair up (or name no integers) declare nothing: the values are
        # checked as undeclared ones, and the CF check (bigkern.scenes.cf) names the fault
        return LabelClasses(None, None)
    values = [int(v) for v in raw.tolist()]
    unlabelled = [v for v, w in zip(values, words, strict=True) if w.lower() in UNLABELLED_WORDS]
    blank = unlabelled[0] if unlabelled else 0
    kept = [(v, w) for v, w in zip(values, words, strict=True) if v != blank]
    return LabelClasses(tuple(v for v, _ in kept), tuple(w for _, w in kept), blank)


def _bad_values(data: Any, declared: LabelClasses) -> Any:
    allowed = declared.allowed()
    if allowed is not None:
        return ~da.isin(data, allowed) if isinstance(data, da.Array) \
            else ~np.isin(data, allowed)
    low, high = UNDECLARED_RANGE
    whole = (data == np.round(data)) if np.dtype(data.dtype).kind == "f" else True
    return ~((data >= low) & (data <= high) & whole)


def check_label_values(label: xr.DataArray, where: str, dim: str = "scene") -> LabelClasses:
    """Refuse label values that are neither a class nor the unlabelled value.

    One pass over ``label`` (a sum per scene); the first offending scene and
    up to five of its values are named.

    Returns
    -------
    LabelClasses
        What the label declares.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> label = xr.DataArray(np.array([[[0, 2], [255, 1]]]), dims=("scene", "y", "x"))
    >>> check_label_values(label, "store s.zarr")
    Traceback (most recent call last):
        ...
    bigkern.errors.LabelError: variable 'label' in store s.zarr has 1 value(s) outside the ...
    """
    declared = label_classes(label)
    data = label.data
    bad = _bad_values(data, declared)
    other = ~((data == -1) | (data == 0) | (data == 1))  # beyond bigkern's own codes
    if isinstance(data, da.Array):
        from bigkern.cluster.compute import compute  # watched on any client

        per_scene, n_other = compute(bad.sum(axis=(1, 2)), other.sum(),
                                     label="checking the labels")
    else:
        per_scene, n_other = np.asarray(bad).sum(axis=(1, 2)), np.asarray(other).sum()
    if per_scene.any():
        i = int(np.flatnonzero(per_scene)[0])
        scene_data = np.asarray(label.isel({label.dims[0]: i}).values)
        values = np.unique(scene_data[np.asarray(_bad_values(scene_data, declared))])
        scene: Any = i
        if label.dims[0] in label.coords:
            value = label[label.dims[0]].values[i]
            scene = str(value) if value.dtype.kind in "mM" else value.item()
        allowed = declared.allowed()
        if allowed is not None:
            bounds = "{" + ", ".join(map(str, sorted(allowed))) + "}"
            why = (f"the label's flag_values declare its classes ({declared.unlabelled}: "
                   f"unlabelled)")
        else:
            bounds = f"the integers in [{UNDECLARED_RANGE[0]}, {UNDECLARED_RANGE[1]}]"
            why = "declare flag_values and flag_meanings to name the classes"
        raise LabelError(
            f"variable 'label' in {where} has {int(per_scene.sum())} value(s) outside "
            f"{bounds}, first in {dim} {scene!r}: {values[:5].tolist()}; {why}")
    return LabelClasses(declared.values, declared.names, declared.unlabelled,
                        bigkern_codes=not int(n_other))


def class_names(classes: Sequence[Any], declared: LabelClasses | None = None, *,
                undeclared: Sequence[str] | None = None) -> list[str]:
    """One word per class, in the words of the data.

    The label's declared ``flag_meanings`` when it names every class; else
    ``clear``/``cloud`` for bigkern's −1/1; else ``undeclared``, or ``class_<value>``.

    Parameters
    ----------
    classes : sequence
        The model's ``classes_``.
    declared : LabelClasses, optional
        What the scenes' label declares (:func:`label_classes`).
    undeclared : sequence of str, optional
        The names of classes that are neither declared nor bigkern's (a two-class
        cloud mask calls them ``negative``/``positive``); default ``class_<value>``.

    Examples
    --------
    >>> class_names([-1, 1]), class_names([1, 2, 3])
    (['clear', 'cloud'], ['class_1', 'class_2', 'class_3'])
    >>> class_names([0, 1], undeclared=("negative", "positive"))
    ['negative', 'positive']
    """
    values = [c.item() if hasattr(c, "item") else c for c in classes]
    if declared is not None and all(declared.name_of(v) is not None for v in values):
        return [str(declared.name_of(v)) for v in values]
    if values == [-1, 1]:
        return ["clear", "cloud"]
    if undeclared is not None:
        if len(undeclared) != len(values):
            raise ValueError(f"{len(undeclared)} names for {len(values)} classes")
        return list(undeclared)
    return [f"class_{v}" for v in values]
