"""Parameter selection on held-out samples, as in Shi & Yu (section 5.2).

All candidate models are scored in **one** distributed pass over the
held-out samples: each chunk is predicted by every model and only the
numbers of correct predictions travel back.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import xarray as xr
from sklearn.base import clone

from bigkern.cluster import compute
from bigkern.reduce._tree import as_row_chunked, row_partials, tree_reduce

__all__ = ["GridSearchResult", "grid_search_bins", "holdout_accuracy", "holdout_grid_search"]


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
            out[i] = int(np.sum(model.predict(Xk) == yk))
    return out


def _sum(parts: list[np.ndarray]) -> np.ndarray:
    return np.sum(parts, axis=0)


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
    """
    if not models:
        raise ValueError("no models to score")
    X, y, mask = as_row_chunked(X, y, mask)
    partials = row_partials(_accuracy_chunk, X, y, mask, name="holdout-accuracy",
                            models=tuple(models))
    (correct,) = compute(tree_reduce(partials, _sum, name="holdout-accuracy-sum"),
                         label=f"scoring {len(models)} models on held-out samples")
    n = int(correct[-1])
    if n == 0:
        raise ValueError("no held-out row can be scored (all non-finite or unlabelled)")
    return correct[:-1] / n, n


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
    """Grid search of a binned estimator that bins once and scores every model in one pass."""
    return holdout_grid_search(
        lambda p: clone(estimator).set_params(**p).fit_bins(bins),
        param_grid, X_val, y_val, mask=mask,
    )
