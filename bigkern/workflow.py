"""Scene-level jobs the CLI and the demo share: fit on a store, plot a scene.

:func:`fit_scenes` bins the labelled pixels of a scene dataset once and
grid-searches a binned model on a held-out half in one pass per model family
(``bigkern fit``, ``bigkern demo``); the reduced-kernel models are fitted by
:func:`bigkern.workflow_reduced.fit_reduced_scenes`. Which ``--model`` name is
which estimator, and the grid searched by default, is :mod:`bigkern.models.registry`'s
table. :func:`plot_scene` draws one scene's
features, labels and predicted mask (``bigkern predict --png``, ``bigkern demo``).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import xarray as xr

from bigkern.features import with_features
from bigkern.io.scenes import stack_samples
from bigkern.io.validity import FillValues, ValidRanges, ensure_validity
from bigkern.models.registry import cli_spec, default_grid
from bigkern.reduce.binning.percentile import percentile_bins
from bigkern.reduce.sampling import random_split
from bigkern.tuning import GridSearchResult, grid_search_bins

__all__ = ["DEFAULT_FEATURES", "FitOutcome", "fit_scenes", "plot_scene", "search_grid"]

#: The paper's three features: log(SD), CORR, NDAI.
DEFAULT_FEATURES = ("NDAI", "logSD", "CORR")

def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


@dataclass
class FitOutcome:
    """A fitted model with how it was chosen.

    Attributes
    ----------
    model : estimator
        The fitted model.
    search : GridSearchResult or None
        The held-out search (None when none was run).
    bins : xarray.Dataset
        The bins it was fitted on.
    seconds : dict of str to float
        Wall times of the steps.
    fixed : dict
        The parameters given as ``params`` and so not searched (every one of
        them, with or without a search).
    """

    model: Any
    search: GridSearchResult | None
    bins: xr.Dataset
    seconds: dict[str, float] = field(default_factory=dict)
    fixed: dict[str, Any] = field(default_factory=dict)


def search_grid(model: str, params: dict[str, Any] | None = None,
                grid: dict[str, list[Any]] | None = None) -> dict[str, list[Any]]:
    """The grid searched for ``model`` when ``params`` are fixed.

    Parameters
    ----------
    model : {"svc", "ridge"}
        A binned model.
    params : dict, optional
        Parameters fixed to one value: left out of the default grid.
    grid : dict, optional
        The grid to search instead of the registry's (less ``params``).

    Returns
    -------
    dict
        Parameter → candidates; empty when every parameter of the grid is fixed.

    Raises
    ------
    ValueError
        A parameter is both fixed in ``params`` and searched in ``grid``.
    """
    params = params or {}
    if grid is None:
        return {k: v for k, v in default_grid(model).items() if k not in params}
    both = sorted(set(grid) & set(params))
    if both:
        raise ValueError(f"{', '.join(both)} given both as a fixed value "
                         f"({', '.join(f'{k}={params[k]!r}' for k in both)}) and as a grid to "
                         f"search: give each parameter one way")
    return {k: list(v) for k, v in grid.items()}


def fit_scenes(
    ds: xr.Dataset,
    *,
    model: str = "svc",
    features: Sequence[str] = DEFAULT_FEATURES,
    grid: dict[str, list[float]] | None = None,
    seed: int = 0,
    params: dict[str, Any] | None = None,
    fill_values: FillValues = None,
    valid_ranges: ValidRanges = None,
) -> FitOutcome:
    """Fit a binned model on the labelled pixels of a scene dataset.

    The labelled pixels are split into random halves (by a hash of the pixel
    index and ``seed``, so the split does not depend on chunking); the first
    half is binned once, a model is fitted on the bins for every grid point,
    and all of them are scored on the second half in one pass. Parameters
    given in ``params`` are fixed: the search runs over the others only (when
    ``params`` fix every parameter of the grid, the one model is fitted on the
    first half and scored on the second). With ``grid={}`` no search is run and
    ``params`` are used on all labelled pixels.

    Parameters
    ----------
    ds : xarray.Dataset
        Scenes ``(scene, y, x)`` with the stored features and ``label``.
    model : {"svc", "ridge"}
        A ``--model`` name of the registry whose engine is ``bins``:
        :class:`~bigkern.models.BinnedSVC` or
        :class:`~bigkern.models.BinnedKernelRidgeClassifier`.
    features : sequence of str
        Features to fit on; derived ones (``logSD``) are added first.
    grid : dict of str to list, optional
        Parameter grid searched on the held-out half (default
        the registry's grid of ``model`` without the parameters in ``params``); ``{}``
        fits ``params`` on every labelled pixel.
    seed : int
        Seed of the train / held-out split.
    params : dict, optional
        Parameters of the estimator, fixed (never searched).
    fill_values, valid_ranges : optional
        The validity rules, as for :func:`bigkern.open_scenes`. Variables that have
        not been through them (a Dataset built in memory) get them before any
        feature is derived, so every door into a fit masks the same values.

    Returns
    -------
    FitOutcome
        The model, the search (None without one), the parameters fixed, the
        bins and timings.

    Raises
    ------
    ValueError
        An unknown model, or a parameter both in ``params`` and in ``grid``.
    """
    spec = cli_spec(model)
    cls = spec.cls
    if spec.engine != "bins":
        raise ValueError(f"{model} is not fitted on percentile bins: fit it with "
                         f"bigkern.workflow_reduced.fit_reduced_scenes")
    params = dict(params or {})
    searching = grid is None or bool(grid)
    grid = search_grid(model, params, grid)
    estimator = cls(**params)
    ds = ensure_validity(ds, fill_values=fill_values, valid_ranges=valid_ranges)
    ds = with_features(ds, features)
    samples = stack_samples(ds, features, labelled_only=True)
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    if not searching:
        bins = percentile_bins(samples.X, samples.y, mask=samples.mask, features=features)
        seconds["binning"] = time.perf_counter() - t0
        fitted = estimator.fit_bins(bins)
        seconds["solve"] = time.perf_counter() - t0 - seconds["binning"]
        return FitOutcome(fitted, None, bins, seconds, params)
    train, held_out = random_split(samples.pixel, samples.mask, fraction=0.5, seed=seed)
    bins = percentile_bins(samples.X, samples.y, mask=train, features=features)
    seconds["binning"] = time.perf_counter() - t0
    _say(f"bigkern: {bins.attrs['n_valid']:,} training pixels → "
         f"{bins.attrs['n_bins_occupied']} occupied bins "
         f"({bins.attrs['n_bins_empty']} empty, {bins.attrs['n_nonfinite']} non-finite rows "
         f"and {bins.attrs['n_absent']} absent pixels left out) in {seconds['binning']:.1f} s")
    t1 = time.perf_counter()
    search = grid_search_bins(estimator, bins, grid, samples.X, samples.y, mask=held_out)
    seconds["grid_search"] = time.perf_counter() - t1
    fixed = f"; fixed: {_params_text(params)}" if params else ""
    what = (f"grid search over {search.scores.size} {model} models of "
            f"{', '.join(grid)}: best {search.best_params}" if grid else
            f"no parameter left to search: one {model} model")
    _say(f"bigkern: {what}{fixed}, held-out accuracy {search.best_score:.2%} "
         f"on {search.n_scored:,} pixels ({seconds['grid_search']:.1f} s)")
    return FitOutcome(search.best_model, search, bins, seconds, params)


def _params_text(params: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v!r}"
                     for k, v in params.items())


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
