"""The colours, panels and legend of a k-class prediction's figure.

:func:`bigkern.plot_scene` draws a two-class cloud mask in the fixed colours of
:data:`bigkern.jobs.plot.MASK_COLORS`. A class map (``class``, written by
:func:`bigkern.predict_scenes` for k > 2 classes) names its classes in its CF
flags; here each class gets a colour of matplotlib's qualitative ``tab10`` (or
``tab20`` past ten classes), "no prediction" near-black, and the expert labels
are drawn in the same colours so the two maps compare at a glance. A calibrated
prediction adds a panel of the predicted class's probability.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import xarray as xr

__all__ = ["ClassColours", "class_colours", "predicted_probability"]

#: The colour of "no prediction" (and of an unlabelled pixel).
NO_CLASS_COLOUR = "#202020"


@dataclass(frozen=True)
class ClassColours:
    """The class codes of a class map, their names and colours, for its panels and legend.

    Attributes
    ----------
    codes : ndarray of int
        The classes' codes, then the "no prediction" code (the map's ``flag_values``).
    names : list of str
        Their ``flag_meanings``.
    colours : list of str
        One colour per code.
    """

    codes: np.ndarray
    names: list[str]
    colours: list[str]

    def indices(self, values: np.ndarray, unlabelled: int | None = None) -> np.ndarray:
        """``values`` (class codes, or labels) as colour indices; the unlabelled value and
        anything that is no class are drawn as "no prediction" (the last index)."""
        v = np.asarray(values)
        out = np.full(v.shape, len(self.codes) - 1, dtype=np.int16)
        finite = np.isfinite(v) if v.dtype.kind == "f" else np.ones(v.shape, bool)
        for i, code in enumerate(self.codes[:-1]):
            out[finite & (v == code)] = i
        if unlabelled is not None:
            out[v == unlabelled] = len(self.codes) - 1
        return out

    def colormap(self) -> tuple[Any, Any]:
        """A ListedColormap and BoundaryNorm of :meth:`indices`."""
        from matplotlib.colors import BoundaryNorm, ListedColormap

        cmap = ListedColormap(self.colours, name="bigkern_classes")
        return cmap, BoundaryNorm(np.arange(len(self.colours) + 1) - 0.5, cmap.N)

    def legend_handles(self) -> list[Any]:
        """One patch per class and one for "no prediction"."""
        from matplotlib.patches import Patch

        return [Patch(facecolor=c, edgecolor="0.5", label=name.replace("_", " "))
                for c, name in zip(self.colours, self.names, strict=True)]


def class_colours(class_map: xr.DataArray) -> ClassColours:
    """The :class:`ClassColours` of a ``class`` variable, from its CF flags.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> m = xr.DataArray(np.zeros((2, 2), "i1"), attrs={
    ...     "flag_values": np.array([1, 2, 3, 0], "i1"),
    ...     "flag_meanings": "clear thin_cloud thick_cloud no_prediction"})
    >>> c = class_colours(m)
    >>> c.names, c.colours[-1], c.indices(np.array([3, 0, 7])).tolist()
    (['clear', 'thin_cloud', 'thick_cloud', 'no_prediction'], '#202020', [2, 3, 3])
    """
    from matplotlib import colormaps
    from matplotlib.colors import to_hex

    codes = np.asarray(class_map.attrs["flag_values"]).astype(np.int64)
    names = str(class_map.attrs["flag_meanings"]).split()
    k = len(codes) - 1
    palette = colormaps["tab10" if k <= 10 else "tab20"]
    colours = [to_hex(palette(i % palette.N)) for i in range(k)] + [NO_CLASS_COLOUR]
    return ClassColours(codes, names, colours)


def predicted_probability(pred: xr.Dataset) -> xr.DataArray | None:
    """The probability of the predicted class: ``probability``, else the largest of the
    ``probability_<class>`` maps (NaN where there is no prediction), else None."""
    if "probability" in pred:
        return pred["probability"]
    maps = [pred[v] for v in pred.data_vars if str(v).startswith("probability_")]
    if not maps:
        return None
    return xr.concat(maps, dim="_class").max("_class", skipna=False)
