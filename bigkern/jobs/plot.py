"""A scene's figure: features, labels and predicted mask (``bigkern predict --png``, demo)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import xarray as xr

__all__ = ["plot_scene"]


def plot_scene(
    scenes: xr.Dataset,
    pred: xr.Dataset,
    path: str | Path,
    *,
    scene: int = 0,
    truth: str | None = "cloud_truth",
    storage_options: dict[str, Any] | None = None,
    overwrite: bool = False,
) -> Path | str:
    """PNG of one scene: NDAI, SD, CORR, expert labels, predicted mask (and the truth).

    For a regressor's predictions (``prediction``, no ``cloud_mask``) the predicted
    values are drawn instead of the mask, with a colour bar.

    Parameters
    ----------
    scenes : xarray.Dataset
        The scenes predicted.
    pred : xarray.Dataset
        Their predictions, with ``cloud_mask`` (or a regressor's ``prediction``).
    path : str, Path or URL
        The PNG written: a local path or an fsspec URL (``s3://bucket/scene0.png``).
    scene : int
        Index of the scene drawn.
    truth : str or None
        Variable of ``scenes`` drawn as the truth when present.
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
    """
    from bigkern.io.figure_files import check_figure_output, write_png

    # refused before anything is drawn; checked again when written
    target = check_figure_output(path, overwrite=overwrite, storage_options=storage_options)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap

    one = scenes.isel(scene=scene)
    p = pred.isel(scene=scene)
    panels: list[tuple[str, Any, dict[str, Any]]] = []
    for name, cmap in (("NDAI", "viridis"), ("SD", "magma"), ("CORR", "cividis")):
        if name in one:
            panels.append((name, one[name].values, {"cmap": cmap}))
    classes = ListedColormap(["#3b6fb6", "#202020", "#f4f4f4"])  # clear, none, cloud
    if "label" in one:
        panels.append(("expert label", one["label"].values, {"cmap": classes, "vmin": -1,
                                                             "vmax": 1}))
    if "cloud_mask" in p:
        panels.append(("predicted mask", p["cloud_mask"].values,
                       {"cmap": classes, "vmin": -1, "vmax": 1}))
    else:
        panels.append((f"predicted value ({p.attrs.get('model', 'regressor')})",
                       p["prediction"].values, {"cmap": "viridis"}))
    if truth and truth in one:
        panels.append(("truth", one[truth].values, {"cmap": classes, "vmin": -1, "vmax": 1}))
    ncols = 3
    nrows = -(-len(panels) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.2 * ncols, 3.4 * nrows), squeeze=False)
    for ax, (title, data, kw) in zip(axes.ravel(), panels, strict=False):
        im = ax.imshow(data, interpolation="nearest", **kw)
        ax.set_title(title)
        ax.set_xticks([])
        ax.set_yticks([])
        if "vmin" not in kw:
            fig.colorbar(im, ax=ax, shrink=0.8)
    for ax in axes.ravel()[len(panels):]:
        ax.axis("off")
    fig.suptitle(f"scene {scene}: white = cloud, blue = clear, black = unlabelled / no data")
    fig.tight_layout()
    try:
        write_png(fig, target, overwrite=overwrite, dpi=90)
    finally:
        plt.close(fig)
    return target.local_path if target.local else str(path)
