"""A scene's figure: its features, labels and predicted mask, and how well the mask agrees.

:func:`plot_scene` returns a :class:`matplotlib.figure.Figure`, as xarray's
``.plot`` returns matplotlib objects: it never selects a backend nor touches
pyplot's global figures, so a notebook shows it inline and a script saves it.
:func:`save_scene_figure` draws it and writes the PNG by bigkern's output rules
(``bigkern predict --png``, ``bigkern demo``).

Every map of a mask or of labels uses one colour map, :data:`MASK_COLORS`
(cloud white, clear blue, no class near-black), with one legend; SD, a heavily
skewed feature, is drawn on a log scale.

The data may have any dims: bigkern's ``(scene, y, x)``, a store's own names
given by ``dims=`` or recorded by :func:`bigkern.scenes.dims.to_scene_dims`
(scenes opened with a mapping, predictions in the store's names), or else the
dims of the 3-D variables taken in order as ``(scene, y, x)``. Where the scenes
have coordinates to place them by — latitude and longitude (1-D, or 2-D drawn as
a mesh), or a projection's x and y (a rioxarray ``spatial_ref``) — the maps'
axes show them; otherwise the maps are images without ticks.
"""

from __future__ import annotations

import functools
import io
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from bigkern.extras import require
from bigkern.jobs.class_figure import class_colours, predicted_probability
from bigkern.jobs.map_axes import MapAxes, map_axes
from bigkern.scenes.dims import SCENE_DIMS, scene_dims
from bigkern.scenes.labels import label_classes

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


def _agreement(mask: np.ndarray, reference: np.ndarray, none: int = 0) -> tuple[int, int]:
    """Pixels where both have a class (not ``none``: 0, ±1 masks), and those where the
    classes agree."""
    both = (mask != none) & (reference != none) & np.isfinite(reference)
    return int(both.sum()), int((both & (mask == reference)).sum())


def _agreement_text(mask: np.ndarray, layers: Mapping[str, np.ndarray],
                    truth: str | None, classes: Any = None) -> str:
    """How the predicted mask agrees with the labels (and the truth), for a panel's title;
    a class map (``classes``: its ClassColours) is compared with the labels as colour
    indices, "no class" the last."""
    parts = []
    for name, what in (("label", "labels"), (truth, "truth")):
        if name and name in layers:
            if classes is not None:
                n, ok = _agreement(classes.indices(mask), layers[name], len(classes.codes) - 1)
            else:
                n, ok = _agreement(mask, layers[name])
            if n:
                parts.append(f"{ok / n:.1%} agree with the {what} ({n:,} px)")
    return "\n".join(parts)


def _dim_mapping(dims: Mapping[str, str] | None, scenes: xr.Dataset,
                 pred: xr.Dataset) -> dict[str, str]:
    """bigkern's dim -> the data's: ``dims`` given, else the mapping recorded on the data."""
    if dims is None:
        return scene_dims(scenes) or scene_dims(pred)
    if not isinstance(dims, Mapping) or not all(isinstance(v, str) for v in dims.values()):
        raise TypeError(f"dims must map bigkern's dims {SCENE_DIMS} to the data's, e.g. "
                        f"{{'scene': 'time'}}; got {dims!r}")
    unknown = [k for k in dims if k not in SCENE_DIMS]
    if unknown:
        raise ValueError(f"dims maps {unknown[0]!r}, which is not one of bigkern's dims "
                         f"{SCENE_DIMS}")
    return dict(dims)


def _grid_dims(ds: xr.Dataset, mapping: Mapping[str, str],
               what: str) -> tuple[str | None, str, str]:
    """The dims of ``ds`` that play ``scene`` (None: one 2-D scene), ``y`` and ``x``.

    By ``mapping``, or by bigkern's names; the dims left are taken in the
    order of the gridded variables' dims.
    """
    counts: dict[tuple[str, ...], int] = {}
    for var in ds.data_vars.values():
        if var.ndim in (2, 3):
            counts[tuple(map(str, var.dims))] = counts.get(tuple(map(str, var.dims)), 0) + 1
    if not counts:
        raise ValueError(f"plot_scene: {what} have no 2-D or 3-D variable to draw")
    grid = max(counts, key=lambda d: (len(d), counts[d]))  # the scenes' dims before one scene's
    roles = SCENE_DIMS[-len(grid):]
    found: dict[str, str] = {}
    for role in roles:
        name = next((n for n in (mapping.get(role), role) if n in grid), None)
        if name is not None and name not in found.values():
            found[role] = name
    rest = iter(d for d in grid if d not in found.values())
    found = {role: found.get(role) or next(rest) for role in roles}
    return found.get("scene"), found["y"], found["x"]


def _one_scene(ds: xr.Dataset, dim: str | None, scene: int, what: str) -> xr.Dataset:
    if dim is None:
        if scene not in (0, -1):
            raise IndexError(f"plot_scene: {what} hold one scene; scene={scene} is out of range")
        return ds
    return ds.isel({dim: scene})


def _scene_title(ds: xr.Dataset, dim: str | None, scene: int, names: Mapping[str, str]) -> str:
    """``scene 1``, or by its coordinate's value when it has one (``time 2013-05-17T19:20:00``)."""
    if dim is None or dim not in ds.coords or ds[dim].ndim != 1:
        return f"scene {scene}"
    value = ds[dim].values[scene]
    position = range(ds.sizes[dim])[scene]
    if value.dtype.kind in "iu" and int(value) == position:
        return f"scene {scene}"  # the coordinate only numbers the scenes
    if value.dtype.kind == "M":
        text = str(np.datetime_as_string(value, unit="s"))
    elif value.dtype.kind == "f":
        text = f"{float(value):g}"
    else:
        text = str(value)
    return f"{names.get(dim, dim)} {text} (scene {position})"


def _value_panel(ax: Any, fig: Any, axes: MapAxes, name: str, values: np.ndarray, cmap: str,
                 log: bool) -> None:
    """A map of values with its colour bar; a log scale for a skewed positive feature."""
    from matplotlib.colors import LogNorm

    norm = None
    positive = values[np.isfinite(values) & (values > 0)]
    if log and positive.size:
        norm = LogNorm(vmin=float(positive.min()), vmax=float(positive.max()))
        values = np.where(values > 0, values, np.nan)
    drawn = axes.draw(ax, values, cmap=cmap, norm=norm)
    ax.set_title(f"{name} (log scale)" if norm is not None else name)
    fig.colorbar(drawn, ax=ax, shrink=0.8)


def plot_scene(
    scenes: xr.Dataset,
    pred: xr.Dataset,
    *,
    scene: int = 0,
    truth: str | None = "cloud_truth",
    dims: Mapping[str, str] | None = None,
) -> Any:
    """Figure of one scene: NDAI, SD, CORR, expert labels, predicted mask (and the truth).

    The predicted mask's title says how many of the scene's labelled (and truth)
    pixels it agrees with. For a regressor's predictions (``prediction``, no
    ``cloud_mask``) the predicted values are drawn instead, with a colour bar.
    The figure's title names the scene by its coordinate's value (its time)
    when it has one.

    The maps' axes show latitude and longitude where the scenes (or the
    predictions) have them as coordinates: 1-D ones (a regular grid) or 2-D
    ones (a swath, each pixel drawn where it is), named ``lat``/``lon``
    (``latitude``/``longitude``) or declared by CF ``standard_name`` or
    ``units``; or a projection's x and y in metres (a rioxarray
    ``spatial_ref``). Without such coordinates the maps have no ticks.

    Parameters
    ----------
    scenes : xarray.Dataset
        The scenes predicted: in bigkern's dims ``(scene, y, x)``, in their own
        dims named by ``dims``, or as :func:`bigkern.open_scenes` returns them
        with a ``dims=`` mapping (which they record).
    pred : xarray.Dataset
        Their predictions, with ``cloud_mask`` (or a regressor's ``prediction``),
        in bigkern's dims or the scenes' own (as :func:`bigkern.predict_scenes`
        returns them).
    scene : int
        Index of the scene drawn.
    truth : str or None
        Variable of ``scenes`` drawn as the truth when present.
    dims : mapping of str to str, optional
        bigkern's dim -> the data's, e.g. ``{"scene": "time", "y": "lat", "x":
        "lon"}``, for data in their own dims. By default the mapping recorded by
        :func:`bigkern.open_scenes`; dims that neither names are taken in the
        order of the 3-D variables' dims, as ``(scene, y, x)``.

    Returns
    -------
    matplotlib.figure.Figure
        A figure of its own (not one of pyplot's; no backend is selected), which
        a notebook shows inline as a PNG.

    Raises
    ------
    ValueError
        No variable to draw, or predictions on another grid than the scenes'.

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

    In a store's own dims, with latitude and longitude:

    >>> import numpy as np
    >>> mine = scenes.rename(scene="time", y="lat", x="lon").assign_coords(
    ...     lat=70 + 0.01 * np.arange(32), lon=-150 + 0.03 * np.arange(32))
    >>> fig = plot_scene(mine, pred.rename(scene="time", y="lat", x="lon"))
    >>> fig.axes[0].get_xlabel(), fig.axes[0].get_ylabel()
    ('', 'latitude')
    >>> fig.axes[3].get_xlabel()
    'longitude'
    """
    require("matplotlib", extra="plot", purpose="plot_scene")
    from matplotlib.patches import Patch

    mapping = _dim_mapping(dims, scenes, pred)  # also a renamed dim's own name (y: lat)
    s_dims = _grid_dims(scenes, mapping, "the scenes")
    p_dims = _grid_dims(pred, mapping, "the predictions")
    one = _one_scene(scenes, s_dims[0], scene, "the scenes")
    p = _one_scene(pred, p_dims[0], scene, "the predictions")

    def values(ds: xr.Dataset, name: str, grid: tuple[str | None, str, str]) -> np.ndarray:
        return np.asarray(ds[name].transpose(*grid[1:]).values)

    layers = {name: values(one, name, s_dims) for name in
              (*(f for f, _, _ in _FEATURE_PANELS), "label", truth) if name and name in one}
    kind = next((v for v in ("cloud_mask", "class", "prediction") if v in p), "prediction")
    predicted = values(p, kind, p_dims)
    shape = (one.sizes[s_dims[1]], one.sizes[s_dims[2]])
    if predicted.shape != shape:
        raise ValueError(f"plot_scene: the predictions' grid {p_dims[1:]} of {predicted.shape} "
                         f"pixels is not the scenes' {s_dims[1:]} of {shape}")
    cmap, norm = mask_colormap()
    # title, values, colour map (None: the mask colours) and whether on a log scale
    panels: list[tuple[str, Any, str | None, bool]] = [
        (name, layers[name], colours, log) for name, colours, log in _FEATURE_PANELS
        if name in layers]
    classes = class_colours(p["class"]) if kind == "class" else None
    if classes is not None:  # k classes: their own colours, labels drawn in them too
        cmap, norm = classes.colormap()
        unlabelled = label_classes(one["label"]).unlabelled if "label" in one else None
        if "label" in layers:
            layers["label"] = classes.indices(layers["label"], unlabelled)
        agree = _agreement_text(predicted, layers, None, classes)
        predicted = classes.indices(predicted)
    if "label" in layers:
        panels.append(("expert labels", layers["label"], None, False))
    if classes is not None:
        panels.append(("predicted class" + (f"\n{agree}" if agree else ""), predicted, None,
                       False))
        top = predicted_probability(p)
        if top is not None:
            panels.append(("probability of the predicted class",
                           values(p.assign(_top=top), "_top", p_dims), "viridis", False))
    elif "cloud_mask" in p:
        agree = _agreement_text(predicted, layers, truth)
        panels.append(("predicted mask" + (f"\n{agree}" if agree else ""), predicted, None,
                       False))
    else:
        panels.append((f"predicted value ({p.attrs.get('model', 'regressor')})", predicted,
                       "viridis", False))
    if truth and truth in layers and classes is None:  # a two-class truth
        panels.append(("truth", layers[truth], None, False))
    axes_of_maps = map_axes(one, s_dims[1], s_dims[2], mapping)
    if axes_of_maps.x is None:
        axes_of_maps = map_axes(p, p_dims[1], p_dims[2], mapping)
    ncols = 3
    nrows = -(-len(panels) // ncols)
    fig = _figure_class()(figsize=(4.2 * ncols, 3.6 * nrows + 0.6), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    for i, (ax, (title, data, colours, log)) in enumerate(zip(axes, panels, strict=False)):
        if colours is None:
            axes_of_maps.draw(ax, data, cmap=cmap, norm=norm)
            ax.set_title(title)
        else:
            _value_panel(ax, fig, axes_of_maps, title, np.asarray(data, dtype=float), colours,
                         log)
        if i % ncols == 0:  # the axes' names once a row and once a column
            ax.set_ylabel(axes_of_maps.ylabel)
        if i + ncols >= len(panels):
            ax.set_xlabel(axes_of_maps.xlabel)
    for ax in axes[len(panels):]:
        ax.axis("off")
    handles = classes.legend_handles() if classes is not None else [
        Patch(facecolor=color, edgecolor="0.5", label=name)
        for color, name in (MASK_COLORS[c] for c in (1, -1, 0))]
    fig.legend(handles=handles, loc="outside lower center", ncols=min(len(handles), 6),
               frameon=False)
    title = _scene_title(scenes, s_dims[0], scene, mapping)
    if title == f"scene {scene}":
        title = _scene_title(pred, p_dims[0], scene, mapping)
    fig.suptitle(title)
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
        fsspec options for a URL (see :func:`bigkern.store.urls.location`).
    overwrite : bool
        Replace an existing PNG at ``path`` that bigkern drew; anything else
        there (another file, a directory) is refused even then
        (:mod:`bigkern.store.figure_files`).

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
    from bigkern.store.figure_files import check_figure_output, write_png

    # refused before anything is drawn; checked again when written
    target = check_figure_output(path, overwrite=overwrite, storage_options=storage_options)
    fig = plot_scene(scenes, pred, scene=scene, truth=truth)
    write_png(fig, target, overwrite=overwrite, dpi=90)
    return target.local_path if target.local else str(path)
