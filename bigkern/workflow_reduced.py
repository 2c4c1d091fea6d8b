"""Fitting the reduced-kernel models on a scene store (``bigkern fit --model reduced-…``).

:func:`fit_reduced_scenes` fits :class:`~bigkern.models.ReducedSVC`,
:class:`~bigkern.models.ReducedSVR`, :class:`~bigkern.models.NystromKernelRidge`
or :class:`~bigkern.models.NystromKernelRidgeClassifier` lazily on the pixels of
a scene dataset — the labelled pixels for a classifier, the pixels with a finite
target variable for a regressor — passing the rows to fit on as ``mask=``, so
nothing is loaded on the client. By default it fits **once**, on a random half
of those pixels (a hash of the pixel index, as :func:`bigkern.workflow.fit_scenes`
splits), and scores that one model on the other half in one more pass; the
model returned is the one fitted on the training half (there is no refit).
With ``split=False`` it fits on all of them and scores nothing.
"""

from __future__ import annotations

import difflib
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import xarray as xr

from bigkern.features import with_features
from bigkern.io.scenes import stack_samples
from bigkern.io.validity import FillValues, ValidRanges, ensure_validity
from bigkern.models.registry import cli_spec
from bigkern.reduce.sampling import random_split
from bigkern.tuning import holdout_score

__all__ = [
    "ReducedOutcome",
    "check_param_names",
    "describe_fit",
    "fit_reduced_scenes",
]

def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def check_param_names(cls: type, params: dict[str, Any]) -> None:
    """Raise a ValueError naming the valid parameters when ``params`` has an unknown one.

    Parameters
    ----------
    cls : type
        A scikit-learn estimator class constructible without arguments.
    params : dict
        Parameters to pass to it.
    """
    valid = sorted(cls().get_params())
    unknown = [name for name in params if name not in valid]
    if not unknown:
        return
    close = [m for name in unknown for m in difflib.get_close_matches(name, valid, n=1)]
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    raise ValueError(f"unknown parameter{'s' if len(unknown) > 1 else ''} "
                     f"{', '.join(map(repr, unknown))} of {cls.__name__}{hint}; valid "
                     f"parameters: {', '.join(valid)}")


@dataclass
class ReducedOutcome:
    """A reduced-kernel model fitted on a scene dataset, with what it was fitted on.

    Attributes
    ----------
    model : estimator
        The fitted model (on the training half unless ``split`` is false).
    split : bool
        Whether the model was fitted on a random half and scored on the other.
    pixels : str
        The pixels eligible, in words (the labelled pixels, or those with a finite target).
    seed : int
        Seed of the split.
    metric : {"accuracy", "rmse"} or None
        The held-out score's kind (None without a split).
    score : float or None
        Held-out accuracy (fraction) or root mean squared error.
    n_scored : int
        Held-out rows scored.
    target_std : float or None
        Standard deviation of the scored held-out targets (regression only).
    seconds : dict of str to float
        ``fit`` and ``score`` wall times.
    """

    model: Any
    split: bool
    pixels: str
    seed: int = 0
    metric: str | None = None
    score: float | None = None
    n_scored: int = 0
    target_std: float | None = None
    seconds: dict[str, float] = field(default_factory=dict)


def _samples(ds: xr.Dataset, features: Sequence[str], target: str | None
             ) -> tuple[xr.DataArray, Any, Any, Any, str]:
    """X (named), y, the rows eligible, the pixel ids and the eligible pixels in words."""
    if target is None:
        s = stack_samples(ds, features, labelled_only=True)
        return s.as_dataarray(), s.y, s.mask, s.pixel, "labelled pixels"
    # target stacked with the features: one cube, so X and y share their chunks
    s = stack_samples(ds, [*features, target], labelled_only=False)
    X = xr.DataArray(s.X[:, :-1], dims=("sample", "feature"),
                     coords={"feature": list(features)})
    y = s.X[:, -1]
    return X, y, np.isfinite(y), s.pixel, f"pixels with a finite {target}"


def fit_reduced_scenes(
    ds: xr.Dataset,
    *,
    model: str = "reduced-svc",
    features: Sequence[str],
    target: str | None = None,
    params: dict[str, Any] | None = None,
    split: bool = True,
    seed: int = 0,
    fill_values: FillValues = None,
    valid_ranges: ValidRanges = None,
) -> ReducedOutcome:
    """Fit a reduced-kernel model on the pixels of a scene dataset, lazily.

    Parameters
    ----------
    ds : xarray.Dataset
        Scenes ``(scene, y, x)`` with the stored variables and ``label``.
    model : {"reduced-svc", "reduced-svr", "nystrom-krr"}
        A ``--model`` name of :mod:`bigkern.models.registry` whose engine is
        ``reduced``: ``nystrom-krr`` is the classifier without a ``target`` and the
        regressor with one.
    features : sequence of str
        Feature variables, any number; derived ones (``logSD``) are added first.
    target : str, optional
        Variable a regression predicts (not one of ``features``). Regressions fit
        on every pixel where it is finite, labelled or not; classifiers on the
        labelled pixels.
    params : dict, optional
        Estimator parameters; ``random_state`` defaults to ``seed``.
    split : bool
        Fit on a random half (by a hash of the pixel index and ``seed``) and score
        on the other in one pass; otherwise fit on every eligible pixel.
    seed : int
        Seed of the split and (unless given in ``params``) of the reduced set.
    fill_values, valid_ranges : optional
        The validity rules, as for :func:`bigkern.open_scenes`. Variables that have
        not been through them (a Dataset built in memory) get them before any
        feature is derived, so every door into a fit masks the same values.

    Returns
    -------
    ReducedOutcome
        The fitted model, what it was fitted on and its held-out score.
    """
    spec = cli_spec(model, target)
    cls = spec.cls
    if spec.engine != "reduced":
        raise ValueError(f"{model} is not a reduced-kernel model: fit it with "
                         f"bigkern.workflow.fit_scenes")
    params = dict(params or {})
    check_param_names(cls, params)
    features = list(features)
    if target is not None and target in features:
        raise ValueError(f"the target {target!r} is also a feature: a model would only copy "
                         f"it; leave it out of the features")
    params.setdefault("random_state", seed)
    estimator = cls(**params)
    ds = ensure_validity(ds, fill_values=fill_values, valid_ranges=valid_ranges)
    ds = with_features(ds, [*features, *([target] if target else [])])
    X, y, eligible, pixel, pixels = _samples(ds, features, target)
    out = ReducedOutcome(estimator, split, pixels, seed)
    train = held_out = eligible
    if split:
        train, held_out = random_split(pixel, eligible, fraction=0.5, seed=seed)
    name = cls.__name__
    _say(f"bigkern: fitting {name} on {'a random half' if split else 'all'} of the {pixels} "
         f"({len(features)} features: {' '.join(features)})")
    t0 = time.perf_counter()
    out.model = estimator.fit(X, y, mask=train)
    out.seconds["fit"] = time.perf_counter() - t0
    _say(f"bigkern: {_report_text(out)} ({out.seconds['fit']:.1f} s)")
    if not split:
        return out
    t1 = time.perf_counter()
    out.metric, out.score, out.n_scored, out.target_std = holdout_score(
        out.model, X.data, y, mask=held_out)
    out.seconds["score"] = time.perf_counter() - t1
    _say(f"bigkern: held-out {_score_text(out)} ({out.seconds['score']:.1f} s)")
    return out


def _masked_text(out: ReducedOutcome) -> str:
    """What the rows masked out of the fit are."""
    others = ("unlabelled pixels" if out.pixels == "labelled pixels"
              else out.pixels.replace("pixels with a", "pixels without a"))
    return f"the held-out half and the {others}" if out.split else f"the {others}"


def _report_text(out: ReducedOutcome) -> str:
    """Centers, Newton iterations and passes (or reads), and the row counts of a fit."""
    report = out.model.fit_report_
    if "iterations" in report:
        solver = (f"{report['iterations']} Newton iterations in {report['passes']} passes "
                  f"({report['reads']} reads with the draw of the centers"
                  f"{'' if report.get('converged', True) else '; NOT CONVERGED'})")
    else:
        n = report.get("n_candidates", 1)
        solver = (f"{report.get('reads', 2)} reads (the draw of the centers, one pass)"
                  + (f", best of {n} (omega, lam) candidates by "
                     f"{out.model.get_params().get('n_folds')}-fold CV on the fitted rows"
                     if n > 1 else ""))
    by_feature = ", ".join(f"{k}: {v:,}" for k, v in
                           report.get("n_nonfinite_by_feature", {}).items() if v)
    return (f"{report['n_basis']} centers, {solver}; {report.get('n_valid', 0):,} rows used, "
            f"{report.get('n_masked', 0):,} masked out ({_masked_text(out)}), "
            f"{report.get('n_nonfinite', 0):,} left out with a missing, fill or out-of-range "
            f"feature{' (' + by_feature + ')' if by_feature else ''}, "
            f"{report.get('n_absent', 0):,} absent (no feature at all)"
            + (f", {report['n_nonfinite_y']:,} with a non-finite target"
               if report.get("n_nonfinite_y") else ""))


def _score_text(out: ReducedOutcome) -> str:
    if out.metric == "accuracy":
        return f"accuracy {out.score:.2%} on {out.n_scored:,} pixels of the other half"
    return (f"RMSE {out.score:.4g} on {out.n_scored:,} pixels of the other half "
            f"(their target's standard deviation {out.target_std:.4g})")


def _param_text(model: Any) -> str:
    """The width and regularization the model was fitted with (the chosen candidates)."""
    report, params = model.fit_report_, model.get_params()
    keys = [k for k in ("omega", "C", "lam", "epsilon", "penalty") if k in params]
    return ", ".join(f"{k}={report.get(k, params[k]):g}" if k != "penalty"
                     else f"{k}={params[k]}" for k in keys)


def describe_fit(out: ReducedOutcome) -> str:
    """One sentence: what was fitted, on what, how it scored, and which model that is.

    Parameters
    ----------
    out : ReducedOutcome
        The outcome of :func:`fit_reduced_scenes`.

    Returns
    -------
    str
    """
    head = f"fitted {type(out.model).__name__} ({_param_text(out.model)})"
    if not out.split:
        return (f"{head} on all {out.pixels} (no held-out score: --no-search): "
                f"{_report_text(out)}")
    return (f"{head} on the random training half of the {out.pixels} (seed {out.seed}): "
            f"{_report_text(out)}; held-out {_score_text(out)}; the model saved is this one, "
            f"fitted on the training half only (not refitted on all pixels)")
