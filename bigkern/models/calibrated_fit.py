"""``calibration=`` on every classifier: held-out rows, a calibrator, ``predict_proba``.

With ``calibration="sigmoid"`` or ``"isotonic"`` a classifier's ``fit`` leaves a
share of the rows out of the model's own fit and fits a calibrator
(:mod:`bigkern.models.calibration`) to the decision values the model gives them:

* **which rows**: :func:`held_out_rows`, a hash of each row's global number and the
  model's seed (``random_state``, or :data:`DEFAULT_SEED` for a model without one or
  with None). The same rows are held out for any chunking, any number of workers,
  numpy or dask. The share is ``bigkern.calibration_share`` (default 0.2) of the rows,
  capped so that about ``bigkern.calibration_max_rows`` rows are held out at most
  (a calibrator of one or k columns needs no more; the others stay in the fit).
  A user's ``mask`` still applies: held-out rows it leaves out are not used either.
* **the extra pass**: after the fit, one more read of the held-out rows gives their
  decision values and labels (dask: one computation, only those rows brought to the
  client).
* :func:`calibrated_fit` is the ``fit`` decorator every classifier uses; a ``fit``
  with a ``mask=`` gets the user's mask and ``~held``; one without (the in-memory
  models) gets the other rows directly.
* :class:`ProbabilityMixin` gives ``predict_proba`` and ``predict_log_proba``,
  available only when ``calibration`` is set (as scikit-learn's ``SVC`` with
  ``probability=False``).

The fitted calibrator is ``calibration_`` (a
:class:`~bigkern.models.calibration.ProbabilityCalibration`, None without calibration),
and ``fit_report_["calibration"]`` says how it was fitted: ``method``, ``share`` (the
share of the rows held out), ``n_held_out`` (held-out rows the user's mask keeps: rows
the model's fit did not use), ``n_calibration`` (those with finite features and a
label, which the calibrator was fitted on), their ``log_loss`` and
``expected_calibration_error`` (of the calibrated probabilities on those same rows,
so an isotonic calibrator's is optimistic) and ``seconds`` (the whole fit).

With ``calibration=None`` (the default) nothing is held out: the fit is what it was.
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Callable
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.metaestimators import available_if

from bigkern import config
from bigkern.errors import LabelError
from bigkern.models._input import map_rows, predict_input
from bigkern.models.calibration import (
    METHODS,
    ProbabilityCalibration,
    expected_calibration_error,
    fit_calibration,
)

__all__ = ["CALIBRATION", "DEFAULT_SEED", "ProbabilityMixin", "calibrated_fit",
           "held_out_rows", "held_out_share"]

CALIBRATION = [StrOptions(set(METHODS)), None]
"""The declared values of ``calibration=`` (an estimator's ``_parameter_constraints``)."""

#: The seed of the held-out rows of a model without ``random_state`` or with None.
DEFAULT_SEED = 0

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix(z: np.ndarray) -> np.ndarray:
    """SplitMix64's finalizer: a bijection of uint64 whose output bits all depend on the input."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def held_out_rows(rows: np.ndarray, *, seed: int, share: float) -> np.ndarray:
    """Whether each row is held out: a hash of its global row number and ``seed`` below ``share``.

    A pure function of each row's number, so a chunk computes its own rows' and the
    held-out set is the same for any chunking.

    Parameters
    ----------
    rows : ndarray of int
        Global row numbers.
    seed : int
        The model's seed.
    share : float
        The expected fraction held out, in [0, 1].

    Returns
    -------
    ndarray of bool

    Examples
    --------
    >>> import numpy as np
    >>> held = held_out_rows(np.arange(100_000), seed=0, share=0.2)
    >>> round(float(held.mean()), 2)
    0.2
    >>> bool((held_out_rows(np.arange(50_000, 60_000), seed=0, share=0.2)
    ...       == held[50_000:60_000]).all())
    True
    """
    key = _mix(np.array([seed], dtype=np.uint64) + _GOLDEN)
    h = _mix(np.asarray(rows).astype(np.uint64) * _GOLDEN + key)
    u = (h >> np.uint64(11)).astype(np.float64) * 2.0 ** -53  # uniform in [0, 1)
    return u < share


def _held_block(rows: np.ndarray, seed: int, share: float) -> np.ndarray:
    return held_out_rows(rows, seed=seed, share=share)


def held_out_share(n_rows: int) -> float:
    """The share of ``n_rows`` rows held out: ``bigkern.calibration_share``, capped at
    ``bigkern.calibration_max_rows / n_rows``.

    Examples
    --------
    >>> held_out_share(1000), held_out_share(100_000_000)
    (0.2, 0.01)
    """
    share = float(config.get("calibration_share"))
    if not 0.0 < share < 1.0:
        raise ValueError(f"bigkern.calibration_share must lie in (0, 1); got {share!r}")
    cap = config.get("calibration_max_rows")
    if cap is not None and n_rows > 0:
        share = min(share, float(cap) / n_rows)
    return share


def _seed(model: Any) -> int:
    seed = getattr(model, "random_state", None)
    return DEFAULT_SEED if seed is None else int(seed)


def _sample_data(X: Any) -> Any:
    """The array inside ``X`` (a DataArray's data, (sample, feature)), else ``X`` itself."""
    if isinstance(X, xr.DataArray):
        return X.transpose(..., "feature").data if "feature" in X.dims else X.data
    return X


def _n_rows(X: Any) -> int:
    from sklearn.utils.validation import _num_samples

    return int(_num_samples(_sample_data(X)))


def _held(model: Any, X: Any, *, lazy: bool) -> tuple[Any, float]:
    """The held-out rows of ``X`` and the share: numpy, or (``lazy`` and a dask ``X``) dask
    in ``X``'s row chunks."""
    n = _n_rows(X)
    share = held_out_share(n)
    data = _sample_data(X)
    if lazy and isinstance(data, da.Array):
        rows = da.arange(n, chunks=(data.chunks[0],), dtype=np.int64)
        return rows.map_blocks(_held_block, seed=_seed(model), share=share, dtype=bool), share
    return held_out_rows(np.arange(n), seed=_seed(model), share=share), share


def _user_mask(mask: Any, n: int) -> Any:
    if mask is None:
        return None
    mask = mask.data if isinstance(mask, xr.DataArray) else mask
    if not isinstance(mask, da.Array):
        mask = np.asarray(mask)
    if tuple(mask.shape) != (n,):
        raise ValueError(f"mask must have one entry per row of X ({n}); got shape "
                         f"{tuple(mask.shape)}")
    return mask.astype(bool)


def calibrated_fit(fit: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a classifier's ``fit`` to hold rows out and calibrate on them.

    With ``calibration`` None the ``fit`` runs as it is. Otherwise it is called on
    the rows not held out (through its ``mask=`` when it takes one, else with those
    rows taken out of ``X`` and ``y``), then the held-out rows are read once more to
    fit ``calibration_`` and report it in ``fit_report_["calibration"]``. Put it
    below scikit-learn's ``_fit_context``, so the parameters are validated first.
    """
    takes_mask = "mask" in inspect.signature(fit).parameters

    @functools.wraps(fit)
    def calibrating_fit(self: Any, X: Any, y: Any, **kwargs: Any) -> Any:
        for stale in ("calibration_", "fit_report_"):  # a previous fit's, if any
            self.__dict__.pop(stale, None)
        if self.calibration is None or y is None:  # None: the fit's own error
            result = fit(self, X, y, **kwargs)
            self.calibration_ = None
            return result
        t0 = time.perf_counter()
        held, share = _held(self, X, lazy=takes_mask)  # a fit without a mask takes rows
        if takes_mask:
            user = _user_mask(kwargs.pop("mask", None), _n_rows(X))
            fit(self, X, y, mask=~held if user is None else user & ~held, **kwargs)
            use = held if user is None else held & user
            n_held = int(use.sum()) if isinstance(use, np.ndarray) else None
            decision, labels, n_held = _held_out_decisions(self, X, y, use, n_held)
        else:
            from sklearn.utils.validation import indexable

            X, y = indexable(X, y)  # same lengths; sparse stays sparse for the fit to refuse
            fit(self, *_take_rows(X, y, np.flatnonzero(~held)), **kwargs)
            X_held, y_held = _take_rows(X, y, np.flatnonzero(held))
            n_held = int(held.sum())
            decision, labels, _ = _held_out_decisions(self, X_held, y_held, None, n_held)
        self.calibration_, report = _calibrate(self, decision, labels)
        if not isinstance(getattr(self, "fit_report_", None), dict):
            self.fit_report_ = {}
        self.fit_report_["calibration"] = {"method": self.calibration, "share": share,
                                           "n_held_out": n_held, **report,
                                           "seconds": time.perf_counter() - t0}
        return self

    return calibrating_fit


def _take_rows(X: Any, y: Any, index: np.ndarray) -> tuple[Any, Any]:
    """Rows ``index`` of ``X`` and ``y`` (numpy, pandas, lists, dask or DataArray)."""
    from sklearn.utils import _safe_indexing

    def take(a: Any) -> Any:
        if isinstance(a, xr.DataArray):
            dim = next(d for d in a.dims if d != "feature") if a.ndim == 2 else a.dims[0]
            return a.isel({dim: index})
        if isinstance(a, da.Array):
            return a[index]
        return _safe_indexing(a, index)

    return take(X), take(y)


def _held_out_decisions(model: Any, X: Any, y: Any, use: Any,
                        n_held: int | None) -> tuple[np.ndarray, np.ndarray, int]:
    """Decision values and labels of the rows ``use`` (all rows when None) in one read.

    Returns only the rows whose decision value is finite (a row with a non-finite
    feature has none) and whose label is present (not NaN), and the held-out count.
    """
    arr = predict_input(model, X, allow_nan=True)
    y = y.data if isinstance(y, xr.DataArray) else y
    if isinstance(arr, da.Array) or isinstance(y, da.Array) or isinstance(use, da.Array):
        from bigkern.cluster.compute import compute

        arr = da.asarray(arr)
        chunks = (arr.chunks[0],)
        y = (y if isinstance(y, da.Array) else da.from_array(np.asarray(y), chunks=chunks))
        y = y.rechunk(chunks)
        if use is None:
            use = da.ones(arr.shape[0], dtype=bool, chunks=chunks)
        use = da.asarray(use).rechunk(chunks)
        rows = arr[use]
        trailing = _trailing(model)
        decision = map_rows(model.decision_rows, rows, trailing=trailing)
        decision, labels, count = compute(decision, y[use], use.sum(),
                                          label="calibrating on the held-out rows")
        n_held = int(count) if n_held is None else n_held
    else:
        keep = slice(None) if use is None else np.asarray(use)
        decision = model.decision_rows(np.asarray(arr)[keep])
        labels = np.asarray(y)[keep]
    decision = np.asarray(decision, dtype=np.float64)
    labels = np.asarray(labels)
    if labels.ndim == 2 and labels.shape[1] == 1:  # a column y (the fit warned about it)
        labels = labels[:, 0]
    good = np.isfinite(decision).reshape(len(decision), -1).all(axis=1)
    if labels.dtype.kind == "f":
        good &= np.isfinite(labels)
    return decision[good], labels[good], int(n_held or 0)


def _trailing(model: Any) -> tuple[int, ...]:
    k = len(model.classes_)
    return () if k == 2 else (k,)


def _calibrate(model: Any, decision: np.ndarray,
               labels: np.ndarray) -> tuple[ProbabilityCalibration, dict[str, Any]]:
    """The calibrator of the held-out rows' decision values, and its report."""
    from sklearn.metrics import log_loss

    classes = model.classes_
    if len(labels) == 0:
        raise ValueError(
            f"{type(model).__name__}(calibration={model.calibration!r}) held out no usable "
            f"row to calibrate on (bigkern.calibration_share="
            f"{config.get('calibration_share')}): give more rows")
    codes = np.searchsorted(classes, labels).clip(0, len(classes) - 1)
    unseen = classes[codes] != labels
    if unseen.any():
        raise LabelError(f"the held-out rows hold label(s) {np.unique(labels[unseen]).tolist()} "
                         f"that the fit did not see (its classes: {classes.tolist()}); "
                         f"mask them out")
    calibration = fit_calibration(decision, codes, model.calibration, len(classes))
    proba = calibration.probabilities(decision)
    return calibration, {
        "n_calibration": len(codes),
        "log_loss": float(log_loss(codes, proba, labels=np.arange(len(classes)))),
        "expected_calibration_error": expected_calibration_error(
            codes, proba, classes=np.arange(len(classes))),
    }


def _has_calibration(model: Any) -> bool:
    return model.calibration is not None


def _probability_rows(rows: np.ndarray, decision: Callable[[np.ndarray], np.ndarray],
                      calibration: ProbabilityCalibration) -> np.ndarray:
    return calibration.probabilities(decision(rows))


class ProbabilityMixin:
    """``predict_proba`` and ``predict_log_proba`` of a classifier fitted with ``calibration``."""

    @available_if(_has_calibration)
    def predict_proba(self, X: Any) -> Any:
        """Calibrated class probabilities, (n, k), column ``j`` that of ``classes_[j]``.

        Available when ``calibration`` is set. Each row sums to 1; a row with a
        non-finite feature is a row of NaN (no probability is made up for it).
        numpy in → numpy out; dask in → lazy dask out (one task per row chunk).
        """
        from sklearn.exceptions import NotFittedError

        arr = predict_input(self, X, allow_nan=True)  # raises NotFittedError first
        calibration = getattr(self, "calibration_", None)
        if calibration is None:
            raise NotFittedError(
                f"this {type(self).__name__} has no fitted calibrator (it was fitted with "
                f"calibration=None, or on precomputed bins): fit it with calibration="
                f"{self.calibration!r} to have predict_proba")
        func = functools.partial(_probability_rows, decision=self.decision_rows,
                                 calibration=calibration)
        return map_rows(func, arr, trailing=(calibration.n_classes,))

    @available_if(_has_calibration)
    def predict_log_proba(self, X: Any) -> Any:
        """The logarithm of :meth:`predict_proba` (−inf where a probability is 0)."""
        proba = self.predict_proba(X)
        if isinstance(proba, da.Array):
            return da.log(proba)
        with np.errstate(divide="ignore"):
            return np.log(proba)
