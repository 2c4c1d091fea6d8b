"""``bigkern predict``: the opened scenes predicted with the opened model, written, summed up.

:func:`run_predict` writes the predictions (resuming an unfinished store of the same
job unless ``--no-resume``), prints what it computed, the pixels left without a
prediction and any suspected undeclared fill, draws ``--png``, and returns exit
code 1 when no pixel could be predicted (the output is written all the same).
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from bigkern.cli.inputs import stores_text

__all__ = ["run_predict"]


def run_predict(args: argparse.Namespace, inputs: tuple[Any, Any]) -> int:
    """Predict every pixel of the scenes with the model, on the command's cluster.

    Returns the command's exit code: 1 when no pixel could be predicted, else 0.
    """
    from sklearn.base import is_classifier

    from bigkern.jobs.predict import predict_scenes, write_predictions

    scenes, model = inputs
    features = [str(f) for f in model.feature_names_in_]
    t = time.perf_counter()
    pred = predict_scenes(model, scenes, probability=getattr(args, "probability", "all"))
    report = write_predictions(pred, args.out,
                               overwrite=args.overwrite, resume=not args.no_resume,
                               inputs=[*args.store, args.model])
    seconds = time.perf_counter() - t
    counts = report.summary
    n, missing = counts.get("pixels", 0), counts.get("no_prediction", 0)
    if report.resumed:
        print(f"bigkern: {report.path} was started by the same prediction: "
              f"{report.n_reused} of {report.n_regions} regions were already written and "
              f"verified; {report.n_computed} computed now ({report.n_damaged} of them because "
              f"a chunk failed its checksum)")
    computed = n * report.n_computed // max(1, report.n_regions)
    print(f"bigkern: predicted {n:,} pixels in {seconds:.1f} s "
          f"({computed / seconds:,.0f} pixels/s computed); "
          f"{missing:,} without a prediction ({missing / max(1, n):.1%}); "
          f"{'masks' if is_classifier(model) else 'predicted values'} written to "
          f"{report.path}")
    by_class = {k: v for k, v in counts.items() if k not in ("pixels", "no_prediction")}
    if by_class and n:
        print("bigkern: pixels per predicted class: " + ", ".join(
            f"{name} {count:,} ({count / n:.1%})" for name, count in by_class.items()))
    for suspect in report.suspects:  # each also warned, with what to do
        name, value = suspect.stored()
        print(f"bigkern: suspected undeclared fill: {suspect.count:,} predicted pixels have "
              f"{name} = {value:g}, far {suspect.side} its other values (--fill-value "
              f"{name}={value:g} to leave them unpredicted)")
    if args.png:
        from bigkern.jobs.plot import save_scene_figure

        png = save_scene_figure(scenes, _written(report.path, pred), args.png,
                                overwrite=args.overwrite)
        print(f"bigkern: figure written to {png}")
    if n == 0 or missing == n:
        print(f"bigkern: error: no pixel of {stores_text(args)} could be predicted (every "
              f"pixel lacks a finite value of one of the features {features}); the output was "
              f"written but holds no prediction", file=sys.stderr)
        return 1
    return 0


def _written(path: Any, pred: Any) -> Any:
    """The predictions as written, for the figure: read back from zarr or netCDF; a GeoTIFF
    (which holds the mask alone) by the lazy prediction, computed for the scene drawn."""
    from bigkern.store.formats.prediction_files import prediction_file_format

    fmt = prediction_file_format(path)
    if fmt is None:
        from bigkern.store.integrity import open_checked

        return open_checked(path)
    if fmt == "netcdf":
        import xarray as xr

        return xr.open_dataset(path, engine="h5netcdf")
    return pred
