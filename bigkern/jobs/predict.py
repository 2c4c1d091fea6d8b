"""Lazy prediction over whole scenes: a decision value and a cloud mask for every pixel
(classifiers), or a predicted value (regressors)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr

from bigkern import config
from bigkern.cluster.compute import task_threads
from bigkern.cluster.memory import worker_memory
from bigkern.features.matching import model_features
from bigkern.jobs.class_outputs import (
    PROBABILITY_OUTPUTS,
    class_map_codes,
    class_maps,
    probability_map,
)
from bigkern.jobs.prediction_fills import attach_inputs, decide_and_look
from bigkern.scenes.cf import cf_attrs
from bigkern.scenes.dims import SCENE_DIMS, DimMapping, from_scene_dims, scene_dims
from bigkern.scenes.labels import class_names, label_classes
from bigkern.scenes.samples import feature_cube
from bigkern.scenes.validity import FillValues, ValidRanges
from bigkern.store.regions import RegionReport, write_regions

__all__ = ["mask_codes", "predict_scenes", "prediction_job",
           "write_predictions"]


def task_chunks(
    chunks: tuple[tuple[int, ...], ...], max_pixels: int
) -> tuple[tuple[int, ...], ...]:
    """``(scene, y, x)`` chunks no larger than ``max_pixels``, splitting scenes, then rows.

    Chunks already small enough are kept; a larger one is cut into single
    scenes and, if a scene is still too large, into bands of whole rows.
    """
    scene_c, y_c, x_c = chunks
    width = max(x_c)
    if max(scene_c) * max(y_c) * width <= max_pixels:
        return chunks
    new_scene = tuple(1 for c in scene_c for _ in range(c))
    rows = max(1, max_pixels // width)
    new_y = tuple(part for c in y_c for part in _split(c, rows))
    return new_scene, new_y, x_c


#: Prediction tasks per worker thread that a store of few chunks is split into, at least
#: (the last wave of tasks leaves threads idle; the more waves, the less it weighs) ...
TASKS_PER_THREAD = 4
#: ... into tasks of no fewer pixels than this (a smaller task's fixed costs show).
MIN_TASK_PIXELS = 1 << 20


def balanced_task_pixels(chunks: tuple[tuple[int, ...], ...], max_pixels: int,
                         threads: int) -> int:
    """Pixels per prediction task: at most ``max_pixels``, and small enough that ``threads``
    threads get :data:`TASKS_PER_THREAD` tasks each (not below :data:`MIN_TASK_PIXELS`).

    Store chunks within the result stay whole, one task each: splitting them costs a
    split and a merge of every chunk, and their scheduling, for nothing once every
    thread has tasks enough.

    Examples
    --------
    >>> from bigkern.jobs.predict import balanced_task_pixels
    >>> many = ((1,) * 40, (1024,), (2048,))  # 40 chunks of 2 M pixels
    >>> balanced_task_pixels(many, 1 << 25, threads=2) >= 2 * 1024 * 2048  # kept whole
    True
    >>> balanced_task_pixels(((1,), (8192,), (8192,)), 1 << 25, threads=8)  # one scene
    2097152
    """
    total = int(np.prod([sum(c) for c in chunks], dtype=np.int64))
    wanted = -(-total // (TASKS_PER_THREAD * max(1, threads)))
    return int(min(max_pixels, max(MIN_TASK_PIXELS, wanted)))


def _split(n: int, size: int) -> list[int]:
    """``n`` as near-equal parts of at most ``size``."""
    k = -(-n // size)
    base, extra = divmod(n, k)
    return [base + 1] * extra + [base] * (k - extra)


def _fit_task_to_memory(arrays: Sequence[da.Array], chunks: tuple[tuple[int, ...], ...],
                        n_basis: int, budget: int, max_pixels: int) -> int:
    """Pixels per prediction task that fit ``budget`` bytes; raise if reading cannot.

    A task holds its features as float32 and float64 copies, the decision, and
    one kernel block of ``bigkern.kernel_block_rows`` × ``n_basis`` doubles; the
    task that reads a store chunk holds every feature's chunk and their stack.
    """
    from bigkern.errors import ClusterError

    d = len(arrays)
    itemsize = max(a.dtype.itemsize for a in arrays)
    store_chunk = max(chunks[0]) * max(chunks[1]) * max(chunks[2])
    read_bytes = 2 * d * itemsize * store_chunk
    if read_bytes > budget:
        raise ClusterError(
            f"a store chunk of {store_chunk:,} pixels × {d} features needs about "
            f"{read_bytes / 1e6:,.0f} MB to read and stack, over the {budget / 1e6:,.0f} MB "
            f"a task may use on the smallest worker (its memory limit per thread × "
            f"distributed.worker.memory.target): give workers more memory or rewrite the "
            f"store with smaller chunks")
    fixed = 2 * int(config.get("kernel_block_rows")) * max(1, n_basis) * 8
    per_pixel = d * (4 + 8) + 8
    fits = (budget - read_bytes // 2 - fixed) // per_pixel
    if fits < max(chunks[2]):  # not even one row of a scene
        raise ClusterError(
            f"predicting with {n_basis} basis functions needs about "
            f"{(read_bytes // 2 + fixed) / 1e6:,.0f} MB per task before the first pixel, "
            f"over the {budget / 1e6:,.0f} MB a task may use on the smallest worker: give "
            f"workers more memory or set a smaller bigkern.kernel_block_rows")
    return int(min(max_pixels, fits))


def mask_codes(classes: Any) -> tuple[int, int, int]:
    """The int8 codes of a cloud mask: negative class, positive class, and "no prediction".

    "No prediction" is 0 (MISR's "unlabelled") unless 0 is one of the classes;
    then it is -128, so that it is never a real class (:func:`class_map_codes` of two).
    """
    (neg, pos), none = class_map_codes(classes)
    return neg, pos, none


def predict_scenes(
    model: Any,
    ds: xr.Dataset,
    features: Sequence[str] | None = None,
    *,
    fill_values: FillValues = None,
    valid_ranges: ValidRanges = None,
    dims: DimMapping = None,
    probability: str = "all",
) -> xr.Dataset:
    """Predict every pixel of every scene, lazily (tasks of ~``bigkern.predict_block_pixels``).

    Parameters
    ----------
    model : fitted bigkern estimator
        Any fitted bigkern model with a kernel expansion: anything with
        ``decision_rows`` and ``n_basis_`` — a classifier with two integer
        ``classes_``, or a regressor.
    ds : xarray.Dataset
        Scene dataset with the model's features as ``(scene, y, x)`` variables.
    features : sequence of str, optional
        Feature variables in the model's order; defaults to the names the model
        was fitted with. Checked against them (names and order, see
        :func:`bigkern.features.matching.model_features`). A derived feature the
        model was fitted on (``logSD``) is derived here from its stored source
        (``SD``) when ``ds`` does not hold it.
    fill_values, valid_ranges : optional
        The validity rules, as for :func:`bigkern.open_scenes`: features that
        have not been through them (a Dataset built in memory) get them here,
        so a fill value never gets a class (see
        :func:`bigkern.scenes.validity.ensure_validity`).
    dims : mapping of str to str, optional
        For a dataset whose dims are not named ``(scene, y, x)``: bigkern's dim
        → the dataset's, e.g. ``{"scene": "time"}``. A dataset opened with
        :func:`bigkern.open_scenes` and ``dims=`` remembers its mapping. The
        output has the dataset's own dim names.
    probability : {"all", "max", "none"}
        For a classifier fitted with ``calibration=``: a probability map per class
        (``"all"``; two classes: ``cloud_probability``, of ``classes_[1]``), of the
        predicted class only (``"max"``, k classes), or none. Models without
        calibration write none.

    Returns
    -------
    xarray.Dataset
        ``decision`` (float32; NaN where a feature is missing) and
        ``cloud_mask`` (int8: the model's classes, e.g. 1 cloud / -1 clear,
        and the "no prediction" flag — 0, or -128 when 0 is a class, see
        :func:`mask_codes` — where a feature is missing), aligned with ``ds``.
        Unlabelled pixels are predicted too. For a regressor: ``prediction``
        (float32; NaN where a feature is missing) only.

        The output keeps ``ds``'s coordinates on its dims (``lat``/``lon``, a
        time per scene …) and its attributes, with CF's ``Conventions`` and a
        line appended to ``history`` (see :func:`bigkern.scenes.cf.cf_attrs`),
        plus ``model``, ``features`` and (classifier) ``classes``. Per
        variable: ``long_name``; ``decision``/``prediction`` are float32 with
        ``_FillValue`` NaN (``units = "1"`` for the dimensionless decision);
        ``cloud_mask`` has CF ``flag_values`` (int8) and ``flag_meanings``, one
        word per code, e.g. ``clear no_prediction cloud``.

        k > 2 classes: ``class`` (int8, the class labels and the "no prediction"
        code, CF flags with the names the label declares) and the probabilities
        asked for; see :mod:`bigkern.jobs.class_outputs`.

    Examples
    --------
    >>> from bigkern import BinnedSVC, predict_scenes, stack_samples
    >>> from bigkern.datasets import make_scenes
    >>> scenes = make_scenes(2, (24, 32), seed=0, radiances=False).rename(scene="time")
    >>> s = stack_samples(scenes, ["NDAI", "SD", "CORR"], dims={"scene": "time"})
    >>> model = BinnedSVC(omega=0.8, C=1.0).fit(s.as_dataarray(), s.y, mask=s.mask)
    >>> pred = predict_scenes(model, scenes, dims={"scene": "time"})
    >>> pred["cloud_mask"].dims, pred["cloud_mask"].attrs["flag_meanings"]
    (('time', 'y', 'x'), 'clear no_prediction cloud')
    >>> pred.attrs["Conventions"], pred.attrs["history"].split(" ", 1)[1]  # doctest: +ELLIPSIS
    ('CF-1.10', 'bigkern ... predict_scenes: BinnedSVC')
    """
    from sklearn.base import is_regressor

    if not callable(getattr(model, "decision_rows", None)):
        raise TypeError(f"{type(model).__name__} cannot predict scenes: predict_scenes takes "
                        f"a fitted bigkern model with a kernel expansion (decision_rows)")
    if probability not in PROBABILITY_OUTPUTS:
        raise ValueError(f"probability must be one of {PROBABILITY_OUTPUTS}; got "
                         f"{probability!r}")
    n_classes = len(getattr(model, "classes_", ()))  # a regressor has none
    features = model_features(model, features)
    # the fit's feature cube; the features the model was fitted on are derived (logSD
    # from SD) after the stored variables met the validity rules
    fc = feature_cube(ds, features, fill_values=fill_values, valid_ranges=valid_ranges,
                      dims=dims, derive=True)
    ds, arrays, chunks, sources = fc.ds, fc.arrays, fc.chunks, fc.sources
    mapping = scene_dims(ds)
    # the stored variables read (SD for logSD), for a check of undeclared fills
    stored = fc.stored_arrays()
    cube = fc.cube
    max_pixels = balanced_task_pixels(chunks, int(config.get("predict_block_pixels")),
                                      task_threads())
    budget = worker_memory(per_task=True)
    if budget is not None:
        max_pixels = _fit_task_to_memory(arrays, chunks, model.n_basis_, budget,
                                         max_pixels)
    tasks = task_chunks(chunks, max_pixels)
    cube = cube.rechunk((*tasks, -1))
    columns = n_classes if n_classes > 2 else 1
    decision, looked = decide_and_look(cube, model.decision_rows, columns)
    if decision.chunks[:3] != chunks:
        decision = decision.rechunk(chunks if columns == 1 else (*chunks, (columns,)))
    coords = {str(k): v.variable for k, v in ds.coords.items() if set(v.dims) <= set(SCENE_DIMS)}
    attrs = {**cf_attrs(ds.attrs, f"predict_scenes: {type(model).__name__}"),
             "model": type(model).__name__, "features": features}
    # CF: every output variable is on the input's grid mapping (its CRS), when it has one
    grid = {"grid_mapping": name} if (name := _grid_mapping(ds, features)) else {}
    if is_regressor(model):
        out = xr.Dataset({"prediction": (SCENE_DIMS, decision)}, coords=coords, attrs=attrs)
        out["prediction"].attrs = {"long_name": f"value predicted by {type(model).__name__} "
                                                f"from {', '.join(features)}", **grid}
        out["prediction"].encoding["_FillValue"] = np.float32(np.nan)
        return attach_inputs(from_scene_dims(out, mapping), features, looked, sources, stored)
    calibration = getattr(model, "calibration_", None)
    # the classes the label declares (its "unlabelled" value is none), to name them
    declared = label_classes(ds["label"]) if "label" in ds else None
    if n_classes > 2:
        maps = class_maps(decision, model.classes_, class_names(model.classes_, declared),
                          calibration, probability, type(model).__name__, grid)
        out = xr.Dataset(maps.variables, coords=coords, attrs={**attrs, "classes": maps.codes})
        return attach_inputs(from_scene_dims(out, mapping), features, looked, sources, stored)
    neg, pos, none = mask_codes(model.classes_)
    mask = da.where(da.isnan(decision), none, da.where(decision > 0, pos, neg)).astype(np.int8)
    out = xr.Dataset(
        {
            "decision": (SCENE_DIMS, decision),
            "cloud_mask": (SCENE_DIMS, mask),
        },
        coords=coords,
        attrs={**attrs, "classes": [neg, pos]},
    )
    if calibration is not None and probability != "none":
        out["cloud_probability"] = (SCENE_DIMS, probability_map(decision, calibration)[..., 1])
        out["cloud_probability"].attrs = {
            "long_name": f"probability of class {pos} (calibrated on held-out rows)",
            "units": "1", "valid_min": np.float32(0), "valid_max": np.float32(1), **grid}
        out["cloud_probability"].encoding["_FillValue"] = np.float32(np.nan)
    words = class_names([neg, pos], declared, undeclared=("negative", "positive"))
    out["cloud_mask"].attrs = {
        "long_name": f"class predicted by {type(model).__name__}"
                     + (" (cloud mask)" if words == ["clear", "cloud"] else ""),
        "flag_values": np.array([neg, none, pos], dtype=np.int8),
        "flag_meanings": f"{words[0]} no_prediction {words[1]}", **grid,
    }
    out["decision"].attrs = {"long_name": "kernel decision value (> 0: positive class)",
                             "units": "1", **grid}
    out["decision"].encoding["_FillValue"] = np.float32(np.nan)
    return attach_inputs(from_scene_dims(out, mapping), features, looked, sources, stored)


def _grid_mapping(ds: xr.Dataset, features: Sequence[str]) -> str | None:
    """The CF ``grid_mapping`` the features share (rioxarray's ``spatial_ref``), if kept."""
    names = {ds[f].attrs.get("grid_mapping") or ds[f].encoding.get("grid_mapping")
             for f in features} - {None}  # a derived feature (logSD) carries none
    if len(names) == 1:
        (name,) = names
        if name and name in ds.coords:
            return str(name)
    return None


def _in_words(summary: dict[str, int], pred: xr.Dataset) -> dict[str, int]:
    """The counts of each predicted class under its name (``cloud``, ``clear`` …)."""
    if "class" in pred:  # k classes: counted by code, named by the map's flags
        attrs = pred["class"].attrs
        names = dict(zip(np.asarray(attrs["flag_values"]).tolist(),
                         str(attrs["flag_meanings"]).split(), strict=True))
        return {"pixels": summary.get("pixels", 0),
                **{names[int(k[5:])]: v for k, v in summary.items() if k.startswith("code_")},
                "no_prediction": summary.get("no_prediction", 0)}
    if "cloud_mask" not in pred or "positive" not in summary:
        return summary
    attrs = pred["cloud_mask"].attrs
    words = str(attrs.get("flag_meanings", "")).split()
    if len(words) != 3:
        return summary
    neg, _, pos = words
    out = {"pixels": summary.get("pixels", 0)}
    out[pos] = summary["positive"]
    out[neg] = summary["negative"]
    out["no_prediction"] = summary.get("no_prediction", 0)
    return out


_OWN_HISTORY = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z (?=bigkern \S+ predict_scenes: )",
                          re.MULTILINE)


def _job_attrs(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """``attrs`` without the time of :func:`predict_scenes`'s ``history`` line.

    The same prediction made twice (a rerun that resumes) differs only in that time.
    """
    out = dict(attrs)
    if isinstance(out.get("history"), str):
        out["history"] = _OWN_HISTORY.sub("", out["history"])
    return out


def _count_predictions(decision: np.ndarray, mask: np.ndarray | None = None,
                       *_: np.ndarray) -> dict[str, int]:
    """Pixels, pixels with no prediction, and (with a mask) pixels per predicted sign in
    one region (a probability map after them is not needed)."""
    no_prediction = int(np.count_nonzero(np.isnan(decision)))
    counts = {"pixels": int(decision.size), "no_prediction": no_prediction}
    if mask is not None:
        positive = int(np.count_nonzero(decision > 0))
        counts.update(positive=positive, negative=int(mask.size) - no_prediction - positive)
    return counts


def _count_classes(classes: np.ndarray, *_: np.ndarray, codes: Sequence[int],
                   none: int) -> dict[str, int]:
    """Pixels, pixels with no prediction, and pixels per class code of a class map's region
    (the first of the region's blocks; the probability maps are not needed)."""
    counts = {"pixels": int(classes.size),
              "no_prediction": int(np.count_nonzero(classes == none))}
    counts.update({f"code_{c}": int(np.count_nonzero(classes == c)) for c in codes})
    return counts


def _summarize(pred: xr.Dataset) -> Any:
    """The region summary of a prediction: by sign (two classes, or a regressor's pixels) or
    by class (k classes)."""
    if "class" not in pred:
        return _count_predictions
    import functools

    values = np.asarray(pred["class"].attrs["flag_values"]).tolist()
    codes, none = values[:-1], values[-1]
    return functools.partial(_count_classes, codes=codes, none=none)


def prediction_job(pred: xr.Dataset) -> str:
    """A digest of what ``pred`` computes (inputs, model, features, chunks), for resuming.

    Two processes that build the same prediction from the same store and
    model get the same digest (dask's deterministic tokenization of the graph
    and of the attributes, less the time of the ``history`` line that
    :func:`predict_scenes` appended: a rerun made later resumes the same job).
    """
    import dask
    from dask.base import tokenize

    with dask.config.set({"tokenize.ensure-deterministic": True}):
        return tokenize(*(pred[v].data.name for v in pred.data_vars), _job_attrs(pred.attrs))


def write_predictions(
    pred: xr.Dataset,
    path: str | Path,
    *,
    overwrite: bool = False,
    resume: bool = True,
    inputs: Sequence[str | Path] = (),
    storage_options: dict[str, Any] | None = None,
) -> RegionReport:
    """Write :func:`predict_scenes` output to zarr region by region, resumably; or to a file.

    A ``path`` ending in ``.nc`` writes a CF netCDF4 file, one ending in
    ``.tif`` a cloud-optimized GeoTIFF with a band per scene and the input's
    CRS (the ``formats`` extra; see :mod:`bigkern.store.formats.prediction_files` for what
    each keeps and guarantees: both are published whole, neither resumes).
    Any other path is a zarr store:

    Each store chunk is one region, computed and written by one task with a
    checksum; an interrupted run leaves a store marked ``writing`` (refused by
    bigkern's readers), and rerunning the same prediction resumes it,
    computing only the regions that are missing or fail their checksums.

    The store gets the prediction's coordinates (those of the scenes:
    ``lat``/``lon``, a time per scene …, written block by block when they are
    lazy, again by a run that resumes) and its attributes, CF ones included
    (``Conventions``, ``history``, each variable's ``long_name``, ``units``,
    ``_FillValue``, ``flag_values``/``flag_meanings``). A resumed store keeps
    the ``history`` of the run that started it.

    Parameters
    ----------
    pred : xarray.Dataset
        The lazy output of :func:`predict_scenes`.
    path : str, Path or URL
        Target store (or ``.nc``/``.tif`` file): a local path or an fsspec URL
        (``s3://bucket/masks.zarr``).
    overwrite : bool
        Replace an existing prediction store (or file) that bigkern wrote.
    resume : bool
        Resume an unfinished store of the same prediction (default).
    inputs : sequence of paths
        The scene store and model file: ``path`` may not be, contain or lie in them.
    storage_options : dict, optional
        fsspec options when ``path`` is a URL (credentials, ``endpoint_url`` …).

    Returns
    -------
    RegionReport
        Regions computed, reused and found damaged, and ``summary`` with the
        counts ``pixels``, ``no_prediction`` and, for a classifier, the pixels of
        each class by its name (:func:`bigkern.scenes.labels.class_names`: ``cloud``
        and ``clear`` for bigkern's labels).

    Examples
    --------
    >>> import tempfile
    >>> from bigkern import BinnedSVC, predict_scenes, stack_samples, write_predictions
    >>> from bigkern.datasets import make_scenes
    >>> scenes = make_scenes(2, (24, 32), seed=0, radiances=False)
    >>> s = stack_samples(scenes, ["NDAI", "SD", "CORR"])
    >>> model = BinnedSVC(omega=0.8).fit(s.as_dataarray(), s.y, mask=s.mask)
    >>> tmp = tempfile.TemporaryDirectory()
    >>> report = write_predictions(predict_scenes(model, scenes), f"{tmp.name}/masks.zarr")
    >>> report.n_regions, report.n_computed, report.summary["pixels"]
    (2, 2, 1536)
    >>> again = write_predictions(predict_scenes(model, scenes), report.path)  # a rerun
    >>> again.n_computed, again.n_reused  # every region is there and checks out
    (0, 2)
    >>> tmp.cleanup()
    """
    from bigkern.jobs.prediction_fills import inputs_extremes, prediction_inputs, total_extremes
    from bigkern.reduce.extremes import warn_suspected_fills
    from bigkern.store.formats.prediction_files import prediction_file_format, write_prediction_file

    read = prediction_inputs(pred)
    if prediction_file_format(path) is not None:
        report = write_prediction_file(
            pred, path, overwrite=overwrite, inputs=inputs, storage_options=storage_options,
            summarize=_summarize(pred), label=f"predicting and writing {path}")
        extremes = None
    else:
        report = write_regions(
            pred, path, kind="predictions", job=prediction_job(pred),
            overwrite=overwrite, resume=resume, inputs=inputs, summarize=_summarize(pred),
            storage_options=storage_options, label=f"predicting and writing {path}",
            along=[read.extremes] if read is not None else (),
        )
        extremes = total_extremes(report.along[0]) if report.along else None
    if read is not None:
        if extremes is None:  # not computed with the regions: a pass of its own
            extremes, names = inputs_extremes(read), read.names
        else:
            names = read.features
        report.suspects = warn_suspected_fills(extremes, names, stacklevel=3)
    report.summary = _in_words(report.summary, pred)
    return report
