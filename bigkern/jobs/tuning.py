"""Parameter selection on held-out samples, as in Shi & Yu (section 5.2).

All candidate models are scored in **one** distributed pass over the
held-out samples: each chunk is predicted by every model and only the
numbers of correct predictions travel back (:func:`holdout_accuracy`);
:func:`holdout_score` scores one classifier or regressor the same way. The
criteria that need no held-out pass (a support radius from alignment curves,
Mallows' Cp, a noise variance from differences) are in :mod:`bigkern.models.criteria`.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import dask
import numpy as np
import xarray as xr
from sklearn.base import clone

from bigkern.models import predicted_classes
from bigkern.reduce.passes import RowReduction, as_row_chunked, run_reduction

__all__ = [
    "GridSearchResult",
    "HoldoutScore",
    "grid_search_bins",
    "holdout_accuracy",
    "holdout_grid_search",
    "holdout_score",
]


def _accuracy_chunk(
    Xb: np.ndarray, yb: np.ndarray, mb: np.ndarray | None, *, models: Sequence[Any]
) -> np.ndarray:
    keep = np.isfinite(Xb).all(axis=1) & np.isin(yb, models[0].classes_)
    if mb is not None:
        keep &= np.asarray(mb, dtype=bool)
    Xk, yk = Xb[keep], yb[keep]
    out = np.zeros(len(models) + 1, dtype=np.int64)
    out[-1] = len(yk)
    if len(yk):
        for i, model in enumerate(models):
            out[i] = int(np.sum(_predicted(model, Xk) == yk))
    return out


def _predicted(model: Any, X: np.ndarray) -> np.ndarray:
    """Classes of finite rows in the fitted feature order (no name check: columns in order)."""
    if hasattr(model, "decision_rows"):
        decision = model.decision_rows(np.asarray(X, dtype=np.float64))
        return predicted_classes(decision, model.classes_)
    return model.predict(X)


def _sum(parts: list[np.ndarray]) -> np.ndarray:
    return np.sum(parts, axis=0)


def _shared(obj: Any) -> Any:
    """One graph node holding ``obj``: sent once to each worker, not once per chunk."""
    return dask.delayed(obj, name=f"holdout-models-{uuid.uuid4().hex}", traverse=False)


#: One pass scoring held-out rows: correct counts per model, and the rows scored last.
_HOLDOUT_ACCURACY = RowReduction("holdout-accuracy", chunk=_accuracy_chunk, combine=_sum)


def holdout_accuracy(
    models: Sequence[Any], X: Any, y: Any, *, mask: Any = None
) -> tuple[np.ndarray, int]:
    """Accuracy of each fitted model on held-out samples, in one pass.

    Rows with a non-finite feature or a label outside the models' classes
    (e.g. unlabelled, 0) are not scored.

    Returns
    -------
    accuracies : ndarray (len(models),)
    n_scored : int
        Number of rows scored.

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern import KernelRidgeClassifier, holdout_accuracy
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 2))
    >>> y = np.where((X**2).sum(axis=1) < 1.5, 1, -1)
    >>> models = [KernelRidgeClassifier(omega=w).fit(X[:150], y[:150]) for w in (0.1, 1.0)]
    >>> accuracy, n = holdout_accuracy(models, X[150:], y[150:])
    >>> np.round(accuracy, 2), n
    (array([0.78, 0.95]), 150)
    >>> y[150:160] = 0  # unlabelled: not scored
    >>> holdout_accuracy(models, X[150:], y[150:])[1]
    140
    """
    if not models:
        raise ValueError("no models to score")
    X, y, mask = as_row_chunked(X, y, mask)
    correct = run_reduction(_HOLDOUT_ACCURACY, X, y, mask, models=_shared(tuple(models)),
                            label=f"scoring {len(models)} models on held-out samples")
    n = int(correct[-1])
    if n == 0:
        raise ValueError("no held-out row can be scored (all non-finite or unlabelled)")
    return correct[:-1] / n, n


def _score_chunk(Xb: np.ndarray, yb: np.ndarray, mb: np.ndarray | None, *,
                 model: Any) -> np.ndarray:
    """[correct or Σ squared errors, rows, Σy, Σy²] of one chunk's scorable rows; for a
    calibrated classifier, [correct, rows, Σ −log p(true class), 0]."""
    keep = np.isfinite(Xb).all(axis=1)
    classes = getattr(model, "classes_", None)
    keep &= np.isfinite(yb) if classes is None else np.isin(yb, classes)
    if mb is not None:
        keep &= np.asarray(mb, dtype=bool)
    out = np.zeros(4)
    if not keep.any():
        return out
    # decision_rows: what predict_scenes evaluates (no name check: the columns are in order)
    decision = model.decision_rows(np.asarray(Xb[keep], dtype=np.float64))
    yk = yb[keep]
    if classes is not None:
        out[:2] = np.count_nonzero(predicted_classes(decision, classes) == yk), len(yk)
        calibration = getattr(model, "calibration_", None)
        if calibration is not None:  # the log loss of its probabilities, clipped as sklearn's
            p = calibration.probabilities(decision)[np.arange(len(yk)),
                                                    np.searchsorted(classes, yk)]
            out[2] = -np.log(np.clip(p, np.finfo(np.float64).eps, 1.0)).sum()
        return out
    yk = np.asarray(yk, dtype=np.float64)
    err = decision - yk
    out[:] = float(err @ err), len(yk), float(yk.sum()), float(yk @ yk)
    return out


#: One pass scoring a model on held-out rows: correct predictions (classifier) or Σ squared
#: errors (regressor), rows scored, Σy, Σy².
_HOLDOUT_SCORE = RowReduction("holdout-score", chunk=_score_chunk, combine=_sum)


class HoldoutScore(NamedTuple):
    """A model's score on held-out rows (:func:`holdout_score`)."""

    metric: str  #: "accuracy" or "rmse"
    score: float  #: accuracy (a fraction) or RMSE
    n_scored: int  #: rows scored
    target_std: float | None  #: the scored targets' standard deviation (regressor)
    log_loss: float | None = None  #: mean log loss of a calibrated classifier's probabilities


def holdout_score(model: Any, X: Any, y: Any, *, mask: Any = None) -> HoldoutScore:
    """Accuracy (classifier) or root mean squared error (regressor) on held-out rows, one pass.

    Rows with a non-finite feature, a label outside the classifier's classes (e.g.
    0, unlabelled) or a non-finite target, or a false ``mask``, are not scored.
    Predictions are the model's ``decision_rows``, as :func:`bigkern.predict_scenes`
    computes them.

    Parameters
    ----------
    model : fitted bigkern estimator
        A classifier with ``classes_`` or a regressor, with ``decision_rows``.
    X : array-like or dask array (n, d)
        Rows, in the model's feature order.
    y : array-like or dask array (n,)
        Labels or targets.
    mask : array-like or dask array of bool (n,), optional
        The held-out rows.

    Returns
    -------
    HoldoutScore
        ``metric`` ("accuracy" or "rmse"), ``score`` (accuracy, a fraction, or RMSE),
        ``n_scored``, ``target_std`` (the scored targets' standard deviation: the RMSE
        of predicting their mean; None for a classifier) and ``log_loss`` (the mean log
        loss of a classifier fitted with ``calibration``, else None), from the same pass.
    """
    X, y, mask = as_row_chunked(X, y, mask)
    total, n, s1, s2 = run_reduction(_HOLDOUT_SCORE, X, y, mask, model=_shared(model),
                                     label="scoring the model on held-out samples")
    if n == 0:
        raise ValueError("no held-out row can be scored (each has a non-finite feature, "
                         "no label or a non-finite target)")
    if getattr(model, "classes_", None) is not None:
        calibrated = getattr(model, "calibration_", None) is not None
        return HoldoutScore("accuracy", float(total / n), int(n), None,
                            float(s1 / n) if calibrated else None)
    std = float(np.sqrt(max(0.0, s2 / n - (s1 / n) ** 2)))
    return HoldoutScore("rmse", float(np.sqrt(total / n)), int(n), std)


@dataclass
class GridSearchResult:
    """Outcome of a held-out grid search."""

    best_params: dict[str, Any]
    best_score: float
    best_model: Any
    scores: xr.DataArray  # one dim per parameter
    n_scored: int


def holdout_grid_search(
    fit: Callable[[dict[str, Any]], Any],
    param_grid: Mapping[str, Sequence[Any]],
    X_val: Any,
    y_val: Any,
    *,
    mask: Any = None,
) -> GridSearchResult:
    """Fit one model per grid point with ``fit(params)`` and keep the best on held-out data.

    Ties go to the first grid point in the grid's order.

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern import KernelRidgeClassifier, holdout_grid_search
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 2))
    >>> y = np.where((X**2).sum(axis=1) < 1.5, 1, -1)
    >>> fit = lambda params: KernelRidgeClassifier(**params).fit(X[:150], y[:150])
    >>> grid = {"omega": [0.1, 1.0], "lam": [0.01, 1.0]}
    >>> found = holdout_grid_search(fit, grid, X[150:], y[150:])
    >>> found.best_params, found.scores.dims, bool(found.best_score > 0.9)
    ({'omega': 1.0, 'lam': 1.0}, ('omega', 'lam'), True)
    """
    names = list(param_grid)
    values = [list(param_grid[k]) for k in names]
    points = [dict(zip(names, combo, strict=True)) for combo in itertools.product(*values)]
    models = [fit(p) for p in points]
    acc, n = holdout_accuracy(models, X_val, y_val, mask=mask)
    best = int(np.argmax(acc))
    scores = xr.DataArray(
        acc.reshape([len(v) for v in values]),
        dims=names,
        coords=dict(zip(names, values, strict=True)),
        name="accuracy",
    )
    return GridSearchResult(points[best], float(acc[best]), models[best], scores, n)


def grid_search_bins(
    estimator: Any,
    bins: xr.Dataset,
    param_grid: Mapping[str, Sequence[Any]],
    X_val: Any,
    y_val: Any,
    *,
    mask: Any = None,
) -> GridSearchResult:
    """Grid search of a binned estimator that bins once and scores every model in one pass.

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern import BinnedSVC, grid_search_bins, percentile_bins
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 2))
    >>> y = np.where((X**2).sum(axis=1) < 1.5, 1, -1)
    >>> bins = percentile_bins(X[:200], y[:200], quantiles=[0.25, 0.5, 0.75])  # binned once
    >>> found = grid_search_bins(BinnedSVC(), bins, {"C": [0.1, 10.0]}, X[200:], y[200:])
    >>> found.best_params, found.n_scored, found.scores.shape
    ({'C': 10.0}, 100, (2,))

    Bins of k classes are scored by accuracy too (the class of the largest
    one-vs-rest decision value):

    >>> y3 = np.digitize(X[:, 0], [-0.5, 0.5])  # three classes
    >>> bins3 = percentile_bins(X[:200], y3[:200], quantiles=[0.25, 0.5, 0.75])
    >>> found = grid_search_bins(BinnedSVC(), bins3, {"C": [0.1, 10.0]}, X[200:], y3[200:])
    >>> found.best_model.classes_.tolist(), bool(found.best_score > 0.8)
    ([0, 1, 2], True)
    """
    return holdout_grid_search(
        lambda p: clone(estimator).set_params(**p).fit_bins(bins),
        param_grid, X_val, y_val, mask=mask,
    )
