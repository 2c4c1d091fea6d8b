"""The end-to-end job behind ``bigkern demo``: scenes → bins → model → cloud masks.

Also the building blocks the CLI's ``fit`` and ``predict`` share:
:func:`fit_scenes` (bins once, grid-searches on a held-out half in one pass
per model family) and :func:`plot_scene`.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from bigkern.cluster import compute
from bigkern.features import with_features
from bigkern.io.integrity import open_checked
from bigkern.io.model_store import save_model
from bigkern.io.scenes import open_scenes, stack_samples, write_scenes
from bigkern.models import BinnedKernelRidge, BinnedSVC
from bigkern.predict import predict_scenes, write_predictions
from bigkern.reduce.percentile import percentile_bins
from bigkern.sampling import random_split
from bigkern.tuning import GridSearchResult, grid_search_bins

__all__ = ["DEFAULT_FEATURES", "DEFAULT_GRIDS", "FitOutcome", "fit_scenes", "plot_scene",
           "run_demo"]

#: The paper's three features: log(SD), CORR, NDAI.
DEFAULT_FEATURES = ("NDAI", "logSD", "CORR")
#: Grids around the paper's (ω, λ) and an SVM (ω, C) grid, in standardized units.
DEFAULT_GRIDS: dict[str, dict[str, list[float]]] = {
    "svc": {"omega": [0.4, 0.6, 0.8, 1.0, 1.4], "C": [0.3, 1.0, 3.0, 10.0]},
    "ridge": {"omega": [0.4, 0.6, 0.8, 1.0, 1.4], "lam": [0.01, 0.03, 0.1, 0.3]},
}
_ESTIMATORS = {"svc": BinnedSVC, "ridge": BinnedKernelRidge}


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


@dataclass
class FitOutcome:
    """A fitted model with how it was chosen."""

    model: Any
    search: GridSearchResult | None
    bins: xr.Dataset
    seconds: dict[str, float] = field(default_factory=dict)


def fit_scenes(
    ds: xr.Dataset,
    *,
    model: str = "svc",
    features: Sequence[str] = DEFAULT_FEATURES,
    grid: dict[str, list[float]] | None = None,
    seed: int = 0,
    params: dict[str, Any] | None = None,
) -> FitOutcome:
    """Fit a binned model on the labelled pixels of a scene dataset.

    The labelled pixels are split into random halves (by a hash of the pixel
    index and ``seed``, so the split does not depend on chunking); the first
    half is binned once, a model is fitted on the bins for every grid point,
    and all of them are scored on the second half in one pass. With
    ``grid={}`` no search is run and ``params`` are used on all labelled pixels.
    """
    if model not in _ESTIMATORS:
        raise ValueError(f"model must be one of {sorted(_ESTIMATORS)}; got {model!r}")
    ds = with_features(ds, features)
    samples = stack_samples(ds, features, labelled_only=True)
    estimator = _ESTIMATORS[model](**(params or {}))
    seconds: dict[str, float] = {}
    grid = DEFAULT_GRIDS[model] if grid is None else grid
    t0 = time.perf_counter()
    if not grid:
        bins = percentile_bins(samples.X, samples.y, mask=samples.mask, features=features)
        seconds["binning"] = time.perf_counter() - t0
        fitted = estimator.fit_bins(bins)
        seconds["solve"] = time.perf_counter() - t0 - seconds["binning"]
        return FitOutcome(fitted, None, bins, seconds)
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
    _say(f"bigkern: grid search over {search.scores.size} {model} models: best "
         f"{search.best_params} with held-out accuracy {search.best_score:.2%} "
         f"on {search.n_scored:,} pixels ({seconds['grid_search']:.1f} s)")
    return FitOutcome(search.best_model, search, bins, seconds)


def plot_scene(
    scenes: xr.Dataset,
    pred: xr.Dataset,
    path: str | Path,
    *,
    scene: int = 0,
    truth: str | None = "cloud_truth",
) -> Path:
    """PNG of one scene: NDAI, SD, CORR, expert labels, predicted mask (and the truth)."""
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
    panels.append(("predicted mask", p["cloud_mask"].values, {"cmap": classes, "vmin": -1,
                                                            "vmax": 1}))
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
    path = Path(path)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def run_demo(
    out: str | Path = "bigkern-demo",
    *,
    n_scenes: int = 3,
    shape: tuple[int, int] = (384, 512),
    seed: int = 0,
    model: str = "svc",
    overwrite: bool = True,
) -> dict[str, Any]:
    """Synthetic scenes → zarr → bins → grid-searched model → masks in zarr → PNG.

    Returns a report with accuracies, timings and output paths (also printed).
    """
    from bigkern.datasets import make_scenes

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    timings: dict[str, float] = {}
    t = time.perf_counter()
    store = write_scenes(make_scenes(n_scenes, shape, seed=seed), out / "scenes.zarr",
                         overwrite=overwrite)
    timings["write scenes"] = time.perf_counter() - t
    _say(f"bigkern: wrote {n_scenes} synthetic scenes of {shape[0]}×{shape[1]} to {store} "
         f"({timings['write scenes']:.1f} s)")

    t = time.perf_counter()
    scenes = open_scenes(store)
    fitted = fit_scenes(scenes, model=model, seed=seed)
    timings["bin + fit + tune"] = time.perf_counter() - t
    timings.update({f"  {k}": v for k, v in fitted.seconds.items()})
    model_path = save_model(fitted.model, out / "model.zarr", overwrite=overwrite)

    t = time.perf_counter()
    pred = predict_scenes(fitted.model, with_features(scenes, DEFAULT_FEATURES))
    pred_path = write_predictions(pred, out / "predictions.zarr", overwrite=overwrite).path
    timings["predict + write"] = time.perf_counter() - t

    t = time.perf_counter()
    written = open_checked(pred_path)
    mask = written["cloud_mask"].data
    truth = scenes["cloud_truth"].data
    label = scenes["label"].data
    predicted = mask != 0
    scored = compute(
        predicted.sum(), (predicted & (mask == truth)).sum(),
        (predicted & (label != 0)).sum(), (predicted & (label != 0) & (mask == label)).sum(),
        label="scoring the masks",
    )
    n_pred, n_ok, n_lab, n_lab_ok = (int(v) for v in scored)
    timings["score"] = time.perf_counter() - t
    png = plot_scene(scenes, written, out / "scene0.png", scene=0)

    report = {
        "pixels": int(np.prod([scenes.sizes[d] for d in ("scene", "y", "x")])),
        "predicted_pixels": n_pred,
        "accuracy_vs_truth": n_ok / n_pred,
        "accuracy_vs_labels": n_lab_ok / n_lab if n_lab else float("nan"),
        "model": type(fitted.model).__name__,
        "params": fitted.search.best_params if fitted.search else {},
        "n_bins": int(fitted.bins.sizes["bin"]),
        "n_basis": fitted.model.expansion_.n_basis,
        "timings": timings,
        "outputs": {"scenes": str(store), "model": str(model_path),
                    "predictions": str(pred_path), "figure": str(png)},
    }
    lines = [
        "",
        f"bigkern demo — {report['model']} {report['params']} on {report['n_bins']} bins "
        f"({report['n_basis']} basis functions)",
        f"  accuracy vs synthetic truth: {report['accuracy_vs_truth']:.2%} of "
        f"{n_pred:,} predicted pixels (of {report['pixels']:,})",
        f"  accuracy vs expert-like labels: {report['accuracy_vs_labels']:.2%} of "
        f"{n_lab:,} labelled pixels",
        "  timings:",
        *[f"    {k:<22s}{v:7.2f} s" for k, v in timings.items()],
        "  outputs:",
        *[f"    {k:<12s}{v}" for k, v in report["outputs"].items()],
    ]
    print("\n".join(lines), flush=True)
    return report
