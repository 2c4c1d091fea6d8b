"""The end-to-end job behind ``bigkern demo``: scenes → bins → model → cloud masks.

It runs the jobs the CLI's ``fit`` and ``predict`` run (:func:`bigkern.jobs.fit.fit_scenes`,
:func:`bigkern.jobs.predict.write_predictions`, :func:`bigkern.jobs.plot.save_scene_figure`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from bigkern.cluster.compute import compute
from bigkern.extras import available
from bigkern.features import with_features
from bigkern.jobs.fit import DEFAULT_FEATURES, fit_scenes
from bigkern.jobs.outcome import say
from bigkern.jobs.plot import save_scene_figure
from bigkern.jobs.predict import predict_scenes, write_predictions
from bigkern.models.persistence.model_files import save_model
from bigkern.reduce.recorded_histograms import KEY_HISTOGRAM_RECORDER
from bigkern.scenes.reading import default_chunks, open_scenes
from bigkern.scenes.writing import write_scenes
from bigkern.store.integrity import open_checked

__all__ = ["run_demo"]


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

    Every output in ``out`` follows bigkern's overwrite rules: with
    ``overwrite`` (the default, so that the demo can be rerun) an existing
    store, model or figure is replaced only if bigkern wrote it; a file or
    directory of anyone else at one of those paths (a foreign ``scene0.png``)
    is refused before anything is computed or written.

    Parameters
    ----------
    out : str or Path
        Output folder (created if needed).
    n_scenes : int
        Synthetic scenes.
    shape : (int, int)
        Pixels of each scene.
    seed : int
        Seed of the scenes and of the train / held-out split.
    model : {"svc", "ridge"}
        Model fitted.
    overwrite : bool
        Replace the outputs of an earlier demo in ``out``.

    Returns
    -------
    dict
        Accuracies, timings and output paths (also printed).

    Raises
    ------
    StoreError
        An output path holds something bigkern may not replace.
    """
    from bigkern.datasets import make_scenes
    from bigkern.store.figure_files import check_figure_output
    from bigkern.store.outputs import prepare_output

    out = Path(out)
    figure = out / "scene0.png"
    # every output checked first: refusing one after writing the others would half-replace
    check_figure_output(figure, overwrite=overwrite)
    for name in ("scenes.zarr", "model.zarr", "predictions.zarr"):
        prepare_output(out / name, overwrite=overwrite)
    out.mkdir(parents=True, exist_ok=True)
    timings: dict[str, float] = {}
    t = time.perf_counter()
    scenes = make_scenes(n_scenes, shape, seed=seed, chunks=default_chunks((n_scenes, *shape)))
    store = write_scenes(scenes, out / "scenes.zarr", overwrite=overwrite,
                         recorder=KEY_HISTOGRAM_RECORDER)
    timings["write scenes"] = time.perf_counter() - t
    say(f"bigkern: wrote {n_scenes} synthetic scenes of {shape[0]}×{shape[1]} to {store} "
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
    n_pred, n_ok, n_lab, n_lab_ok = _score_masks(scenes, written)
    timings["score"] = time.perf_counter() - t
    if available("matplotlib"):
        drawn = str(save_scene_figure(scenes, written, figure, scene=0, overwrite=overwrite))
    else:  # said, not silent: the figure is the one output that needs an extra
        drawn = "not drawn: matplotlib is not installed (pip install 'bigkern[plot]')"

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
                    "predictions": str(pred_path), "figure": drawn},
    }
    print("\n".join(_summary_lines(report, n_pred, n_lab)), flush=True)
    return report


def _score_masks(scenes: Any, written: Any) -> tuple[int, int, int, int]:
    """Pixels predicted, right against the truth, labelled, right against the labels."""
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
    return n_pred, n_ok, n_lab, n_lab_ok


def _summary_lines(report: dict[str, Any], n_pred: int, n_lab: int) -> list[str]:
    """The demo's closing summary: model, accuracies, timings and outputs."""
    return [
        "",
        f"bigkern demo — {report['model']} {report['params']} on {report['n_bins']} bins "
        f"({report['n_basis']} basis functions)",
        f"  accuracy vs synthetic truth: {report['accuracy_vs_truth']:.2%} of "
        f"{n_pred:,} predicted pixels (of {report['pixels']:,})",
        f"  accuracy vs expert-like labels: {report['accuracy_vs_labels']:.2%} of "
        f"{n_lab:,} labelled pixels",
        "  timings:",
        *[f"    {k:<22s}{v:7.2f} s" for k, v in report["timings"].items()],
        "  outputs:",
        *[f"    {k:<12s}{v}" for k, v in report["outputs"].items()],
    ]
