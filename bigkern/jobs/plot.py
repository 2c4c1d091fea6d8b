"""A scene's figure: its features, labels and predicted mask, and how well the mask agrees.

:func:`plot_scene` returns a :class:`matplotlib.figure.Figure`, as xarray's
``.plot`` returns matplotlib objects: it never selects a backend nor touches
pyplot's global figures, so a notebook shows it inline and a script saves it.
:func:`save_scene_figure` draws it and writes the PNG by bigkern's output rules
(``bigkern predict --png``, ``bigkern demo``).

Every map of a mask or of labels uses one colour map, :data:`MASK_COLORS`
(cloud white, clear blue, no class near-black), with one legend; SD, a heavily
skewed feature, is drawn on a log scale.
"""

from __future__ import annotations

import functools
import io
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from bigkern.extras import require

__all__ = ["MASK_COLORS", "mask_colormap", "plot_scene", "save_scene_figure"]

#: The colour of each class of a cloud mask or a label map, and its name in the legend.
MASK_COLORS: dict[int, tuple[str, str]] = {
    -1: ("#3b6fb6", "clear"),
    0: ("#202020", "no class (unlabelled, or no prediction)"),
    1: ("#f4f4f4", "cloud"),
}

#: The feature panels: variable, colour map, whether its values are drawn on a log scale.
_FEATURE_PANELS = (("NDAI", "viridis", False), ("SD", "magma", True), ("CORR", "cividis", False))


@functools.cache
def _figure_class() -> type:
    """A matplotlib Figure that IPython shows as a PNG, whatever the backend or ``%matplotlib``.

    A figure made without pyplot has no display of its own in a notebook unless
    pyplot's inline backend has been activated; this one renders itself.
    """
    require("matplotlib", extra="plot", purpose="a scene's figure")
    from matplotlib.figure import Figure

    class SceneFigure(Figure):
        """A :class:`matplotlib.figure.Figure` that shows itself in IPython as a PNG."""

        def _repr_png_(self) -> bytes:
            buffer = io.BytesIO()
            self.savefig(buffer, format="png", dpi=90)
            return buffer.getvalue()

    return SceneFigure


def mask_colormap() -> tuple[Any, Any]:
    """The colour map and norm that draw −1, 0 and 1 in :data:`MASK_COLORS`.

    Returns
    -------
    (matplotlib.colors.ListedColormap, matplotlib.colors.BoundaryNorm)

    Examples
    --------
    >>> cmap, norm = mask_colormap()
    >>> cmap.N, norm.boundaries.tolist()
    (3, [-1.5, -0.5, 0.5, 1.5])
    """
    require("matplotlib", extra="plot", purpose="the mask colour map")
    from matplotlib.colors import BoundaryNorm, ListedColormap

    classes = sorted(MASK_COLORS)
    cmap = ListedColormap([MASK_COLORS[c][0] for c in classes], name="bigkern_mask")
    return cmap, BoundaryNorm([c - 0.5 for c in classes] + [classes[-1] + 0.5], cmap.N)


def _agreement(mask: np.ndarray, reference: np.ndarray) -> tuple[int, int]:
    """Pixels where both have a class (±1), and those where the classes agree."""
    both = (mask != 0) & (reference != 0) & np.isfinite(reference)
    return int(both.sum()), int((both & (mask == reference)).sum())


def _agreement_text(mask: np.ndarray, one: xr.Dataset, truth: str | None) -> str:
    """How the predicted mask agrees with the labels (and the truth), for a panel's title."""
    parts = []
    for name, what in (("label", "labels"), (truth, "truth")):
        if name and name in one:
            n, ok = _agreement(mask, np.asarray(one[name].values))
            if n:
                parts.append(f"{ok / n:.1%} agree with the {what} ({n:,} px)")
    return "\n".join(parts)


def _value_panel(ax: Any, fig: Any, name: str, values: np.ndarray, cmap: str,
                 log: bool) -> None:
    """A map of values with its colour bar; a log scale for a skewed positive feature."""
    from matplotlib.colors import LogNorm

    norm = None
    positive = values[np.isfinite(values) & (values > 0)]
    if log and positive.size:
        norm = LogNorm(vmin=float(positive.min()), vmax=float(positive.max()))
        values = np.where(values > 0, values, np.nan)
    im = ax.imshow(values, interpolation="nearest", cmap=cmap, norm=norm)
    ax.set_title(f"{name} (log scale)" if norm is not None else name)
    fig.colorbar(im, ax=ax, shrink=0.8)


def plot_scene(
    scenes: xr.Dataset,
    pred: xr.Dataset,
    *,
    scene: int = 0,
    truth: str | None = "cloud_truth",
) -> Any:
    """Figure of one scene: NDAI, SD, CORR, expert labels, predicted mask (and the truth).

    The predicted mask's title says how many of the scene's labelled (and truth)
    pixels it agrees with. For a regressor's predictions (``prediction``, no
    ``cloud_mask``) the predicted values are drawn instead, with a colour bar.

    Parameters
    ----------
    scenes : xarray.Dataset
        The scenes predicted.
    pred : xarray.Dataset
        Their predictions, with ``cloud_mask`` (or a regressor's ``prediction``).
    scene : int
        Index of the scene drawn.
    truth : str or None
        Variable of ``scenes`` drawn as the truth when present.

    Returns
    -------
    matplotlib.figure.Figure
        A figure of its own (not one of pyplot's; no backend is selected), which
        a notebook shows inline as a PNG.

    Examples
    --------
    >>> import xarray as xr
    >>> from bigkern import plot_scene
    >>> from bigkern.datasets import make_scenes
    >>> scenes = make_scenes(1, (32, 32), seed=0)
    >>> pred = xr.Dataset({"cloud_mask": scenes["cloud_truth"]})  # a perfect mask
    >>> fig = plot_scene(scenes, pred)
    >>> [ax.get_title() for ax in fig.axes if ax.get_title()][:4]
    ['NDAI', 'SD (log scale)', 'CORR', 'expert labels']
    >>> print(fig.axes[4].get_title())
    predicted mask
    100.0% agree with the labels (746 px)
    100.0% agree with the truth (1,024 px)
    """
    require("matplotlib", extra="plot", purpose="plot_scene")
    from matplotlib.patches import Patch

    one = scenes.isel(scene=scene)
    p = pred.isel(scene=scene)
    cmap, norm = mask_colormap()
    # title, values, colour map (None: the mask colours) and whether on a log scale
    panels: list[tuple[str, Any, str | None, bool]] = [
        (name, one[name].values, colours, log) for name, colours, log in _FEATURE_PANELS
        if name in one]
    if "label" in one:
        panels.append(("expert labels", one["label"].values, None, False))
    if "cloud_mask" in p:
        mask = np.asarray(p["cloud_mask"].values)
        agree = _agreement_text(mask, one, truth)
        panels.append(("predicted mask" + (f"\n{agree}" if agree else ""), mask, None, False))
    else:
        panels.append((f"predicted value ({p.attrs.get('model', 'regressor')})",
                       p["prediction"].values, "viridis", False))
    if truth and truth in one:
        panels.append(("truth", one[truth].values, None, False))
    ncols = 3
    nrows = -(-len(panels) // ncols)
    fig = _figure_class()(figsize=(4.2 * ncols, 3.6 * nrows + 0.6), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    for ax, (title, values, colours, log) in zip(axes, panels, strict=False):
        ax.set_xticks([])
        ax.set_yticks([])
        if colours is None:
            ax.imshow(values, interpolation="nearest", cmap=cmap, norm=norm)
            ax.set_title(title)
        else:
            _value_panel(ax, fig, title, np.asarray(values, dtype=float), colours, log)
    for ax in axes[len(panels):]:
        ax.axis("off")
    fig.legend(handles=[Patch(facecolor=color, edgecolor="0.5", label=name)
                        for color, name in (MASK_COLORS[c] for c in (1, -1, 0))],
               loc="outside lower center", ncols=3, frameon=False)
    fig.suptitle(f"scene {scene}")
    return fig


def save_scene_figure(
    scenes: xr.Dataset,
    pred: xr.Dataset,
    path: str | Path,
    *,
    scene: int = 0,
    truth: str | None = "cloud_truth",
    storage_options: dict[str, Any] | None = None,
    overwrite: bool = False,
) -> Path | str:
    """Draw :func:`plot_scene` and write it as a PNG at ``path``.

    Parameters
    ----------
    scenes, pred, scene, truth
        As for :func:`plot_scene`.
    path : str, Path or URL
        The PNG written: a local path or an fsspec URL (``s3://bucket/scene0.png``).
    storage_options : dict, optional
        fsspec options for a URL (see :func:`bigkern.io.urls.location`).
    overwrite : bool
        Replace an existing PNG at ``path`` that bigkern drew; anything else
        there (another file, a directory) is refused even then
        (:mod:`bigkern.io.figure_files`).

    Returns
    -------
    pathlib.Path or str
        The path written, exactly ``path``: a Path for a local path, the URL as
        given for a URL.

    Raises
    ------
    ValueError
        ``path`` does not end in ``.png``.
    StoreError
        ``path`` exists and may not be replaced.

    Examples
    --------
    >>> import tempfile
    >>> from bigkern.datasets import make_scenes
    >>> scenes = make_scenes(1, (32, 32), seed=0)
    >>> pred = xr.Dataset({"cloud_mask": scenes["cloud_truth"]})
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     save_scene_figure(scenes, pred, Path(tmp) / "scene0.png").name
    'scene0.png'
    """
    from bigkern.io.figure_files import check_figure_output, write_png

    # refused before anything is drawn; checked again when written
    target = check_figure_output(path, overwrite=overwrite, storage_options=storage_options)
    fig = plot_scene(scenes, pred, scene=scene, truth=truth)
    write_png(fig, target, overwrite=overwrite, dpi=90)
    return target.local_path if target.local else str(path)
