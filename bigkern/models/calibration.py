"""Calibrated class probabilities from a classifier's decision values.

A classifier's decision values rank the rows but are on no stated scale. A
*calibrator* maps them to class probabilities; it is fitted on rows the model did not
fit (:mod:`bigkern.models.calibrated_fit` holds them out), so that its probabilities
say how often the model is right rather than how well it fits its own rows.

Two calibrators, as scikit-learn's ``CalibratedClassifierCV`` names them:

``"sigmoid"``
    Two classes: Platt scaling, ``P(classes_[1] | f) = 1 / (1 + exp(−(a f + b)))``,
    ``a`` and ``b`` the maximum-likelihood fit to Platt's smoothed targets
    (``(N₊ + 1) / (N₊ + 2)`` for a positive row, ``1 / (N₋ + 2)`` for a negative one,
    which keeps the fit finite when the held-out rows are separable), solved by
    Newton's method. k classes: temperature scaling, ``softmax(a f + b)`` of the k
    one-vs-rest decision columns, one slope ``a`` and an intercept per class, fitted to
    Platt's smoothing spread over all the rows (:func:`temperature_scaling`).
``"isotonic"``
    The non-decreasing step function of the decision value that fits the class
    indicator best in least squares (pool adjacent violators), the indicator taken as
    Platt's smoothed targets (:func:`platt_targets`) so that no step is 0 or 1: a step
    of held-out rows that were all negative would otherwise give a row of the class a
    probability of 0, hence an unbounded log loss; interpolated linearly
    between its steps and constant beyond the ends; for k classes one per class on its
    one-vs-rest column, each row then divided by its sum (a row of zeros becomes
    uniform).

The fitted calibrator is a :class:`ProbabilityCalibration`: plain arrays, so that it
is saved with the model and evaluated in a prediction task with numpy alone.
:func:`expected_calibration_error` measures how well probabilities are calibrated.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["METHODS", "ProbabilityCalibration", "calibration_variables",
           "expected_calibration_error", "fit_calibration", "platt_scaling", "platt_targets",
           "saved_calibration", "temperature_scaling"]

#: The calibrators ``calibration=`` takes.
METHODS = ("sigmoid", "isotonic")


@dataclass(frozen=True, eq=False)
class ProbabilityCalibration:
    """A fitted map from decision values to class probabilities, as plain arrays.

    Attributes
    ----------
    method : {"sigmoid", "isotonic"}
        The calibrator (see :mod:`bigkern.models.calibration`).
    n_classes : int
        k, the columns of :meth:`probabilities`.
    coef : ndarray (1, 1) or (k, k)
        ``"sigmoid"``: the slope ``a`` of Platt scaling (two classes) or the weights
        ``W`` of ``softmax(W f + b)`` (k classes: ``a`` times the identity, as
        :func:`temperature_scaling` fits it; a general ``W`` is evaluated too); empty for
        ``"isotonic"``.
    intercept : ndarray (1,) or (k,)
        ``"sigmoid"``: ``b``, or the k intercepts ``b``; empty for ``"isotonic"``.
    knots : ndarray (m,)
        ``"isotonic"``: the decision values of the steps of every column, one after
        the other; empty for ``"sigmoid"``.
    levels : ndarray (m,)
        ``"isotonic"``: the probability at each knot.
    starts : ndarray (c + 1,)
        ``"isotonic"``: column ``j``'s knots are ``knots[starts[j]:starts[j + 1]]`` (one
        column for two classes, k otherwise).
    """

    method: str
    n_classes: int
    coef: np.ndarray
    intercept: np.ndarray
    knots: np.ndarray
    levels: np.ndarray
    starts: np.ndarray

    def probabilities(self, decision: Any) -> np.ndarray:
        """Class probabilities, (n, k), of decision values (n,) (two classes) or (n, k).

        Column ``j`` is the probability of ``classes_[j]``; each row sums to 1. A row
        with a non-finite decision value (a row that cannot be predicted) is a row of
        NaN: no probability is made up for it.

        Examples
        --------
        >>> import numpy as np
        >>> cal = fit_calibration(np.array([-2.0, -1.0, 1.0, 2.0]), np.array([0, 0, 1, 1]),
        ...                       "isotonic", 2)
        >>> cal.probabilities(np.array([-3.0, 1.5, np.nan])).tolist()  # Platt's targets
        [[0.75, 0.25], [0.25, 0.75], [nan, nan]]
        """
        f = np.asarray(decision, dtype=np.float64)
        binary = self.n_classes == 2
        f2 = f.reshape(-1, 1) if binary else f.reshape(len(f), self.n_classes)
        good = np.isfinite(f2).all(axis=1)
        out = np.full((len(f2), self.n_classes), np.nan)
        if not good.any():
            return out
        g = f2[good]
        if self.method == "sigmoid" and binary:
            p1 = _expit(g[:, 0] * self.coef[0, 0] + self.intercept[0])
            out[good] = np.column_stack([1.0 - p1, p1])
        elif self.method == "sigmoid":
            out[good] = _softmax(g @ self.coef.T + self.intercept)
        elif binary:
            p1 = self._column(0, g[:, 0])
            out[good] = np.column_stack([1.0 - p1, p1])
        else:
            p = np.column_stack([self._column(j, g[:, j]) for j in range(self.n_classes)])
            total = p.sum(axis=1, keepdims=True)
            uniform = np.full_like(p, 1.0 / self.n_classes)
            out[good] = np.divide(p, total, out=uniform, where=total > 0)
        return out

    def _column(self, j: int, f: np.ndarray) -> np.ndarray:
        """Column ``j``'s isotonic step function, interpolated, constant beyond its ends."""
        lo, hi = int(self.starts[j]), int(self.starts[j + 1])
        return np.interp(f, self.knots[lo:hi], self.levels[lo:hi])


def calibration_variables(calibration: ProbabilityCalibration | None
                          ) -> tuple[dict[str, Any], dict[str, Any]]:
    """The variables and attrs that save a calibrator in a model's Dataset (none for None).

    ``"sigmoid"``: ``calibration_coef (calibration_output, calibration_input)`` and
    ``calibration_intercept (calibration_output)``; ``"isotonic"``: ``calibration_knots``
    and ``calibration_levels (calibration_knot)``, ``calibration_starts
    (calibration_column_edge)``; attrs ``calibration_method`` and ``calibration_classes``
    (k). :func:`saved_calibration` reads them back.
    """
    if calibration is None:
        return {}, {}
    attrs = {"calibration_method": calibration.method,
             "calibration_classes": int(calibration.n_classes)}
    if calibration.method == "sigmoid":
        return {"calibration_coef": (("calibration_output", "calibration_input"),
                                     calibration.coef),
                "calibration_intercept": ("calibration_output", calibration.intercept)}, attrs
    return {"calibration_knots": ("calibration_knot", calibration.knots),
            "calibration_levels": ("calibration_knot", calibration.levels),
            "calibration_starts": ("calibration_column_edge",
                                   np.asarray(calibration.starts, dtype=np.int64))}, attrs


def saved_calibration(ds: Any) -> ProbabilityCalibration | None:
    """The calibrator :func:`calibration_variables` saved in ``ds``, or None if there is none.

    Raises
    ------
    StoreError
        A calibrator of an unknown method, or whose arrays do not fit together.
    """
    from bigkern.errors import StoreError

    method = ds.attrs.get("calibration_method")
    if method is None:
        return None
    k = int(ds.attrs.get("calibration_classes", 0))
    empty = np.empty(0)

    def array(name: str) -> np.ndarray:
        if name not in ds.variables:
            raise StoreError(f"the model's {method} calibrator lacks variable {name!r}")
        return np.asarray(ds[name].values, dtype=np.float64)

    if method == "sigmoid":
        coef, intercept = array("calibration_coef"), array("calibration_intercept")
        width = 1 if k == 2 else k
        if k < 2 or coef.shape != (width, width) or intercept.shape != (width,):
            raise StoreError(f"the model's sigmoid calibrator has coef {coef.shape} and "
                             f"intercept {intercept.shape} for {k} classes")
        return ProbabilityCalibration(method, k, coef, intercept, empty, empty,
                                      np.zeros(1, dtype=np.intp))
    if method != "isotonic":
        raise StoreError(f"the model's calibrator has method {method!r}; bigkern knows "
                         f"{METHODS}")
    knots, levels = array("calibration_knots"), array("calibration_levels")
    starts = array("calibration_starts").astype(np.intp)
    columns = 1 if k == 2 else k
    if (k < 2 or len(starts) != columns + 1 or starts[0] != 0 or starts[-1] != len(knots)
            or np.any(np.diff(starts) < 1) or len(levels) != len(knots)):
        raise StoreError(f"the model's isotonic calibrator's knots do not fit together "
                         f"({len(knots)} knots, column starts {starts.tolist()}, {k} classes)")
    return ProbabilityCalibration(method, k, np.empty((0, 0)), empty, knots, levels, starts)


def _expit(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * z))  # 1 / (1 + e^−z) without overflow


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def fit_calibration(decision: np.ndarray, codes: np.ndarray, method: str,
                    n_classes: int) -> ProbabilityCalibration:
    """Fit a calibrator to decision values and the class codes of the same rows.

    Parameters
    ----------
    decision : ndarray (n,) or (n, k)
        Finite decision values of rows the model did not fit: (n,) for two classes
        (> 0 → class 1), (n, k) one-vs-rest columns for k > 2.
    codes : ndarray of int (n,)
        The rows' classes as 0 … k − 1 (the columns of the probabilities).
    method : {"sigmoid", "isotonic"}
    n_classes : int
        k.

    Returns
    -------
    ProbabilityCalibration

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> f = rng.normal(size=2000)
    >>> codes = (rng.random(2000) < 1 / (1 + np.exp(-3 * f))).astype(int)
    >>> cal = fit_calibration(f, codes, "sigmoid", 2)
    >>> bool(abs(cal.coef[0, 0] - 3.0) < 0.3)  # the slope of the sigmoid the codes were drawn from
    True
    """
    f = np.asarray(decision, dtype=np.float64)
    codes = np.asarray(codes, dtype=np.intp)
    if method not in METHODS:
        raise ValueError(f"calibration must be one of {METHODS}; got {method!r}")
    if len(codes) == 0:
        raise ValueError("no rows to fit a calibrator on")
    empty = np.empty(0)
    if method == "sigmoid" and n_classes == 2:
        slope, intercept = platt_scaling(f.ravel(), codes)
        return ProbabilityCalibration(method, 2, np.array([[slope]]), np.array([intercept]),
                                      empty, empty, np.zeros(1, dtype=np.intp))
    if method == "sigmoid":
        slope, intercept = temperature_scaling(f, codes, n_classes)
        return ProbabilityCalibration(method, n_classes, slope * np.eye(n_classes), intercept,
                                      empty, empty, np.zeros(1, dtype=np.intp))
    columns = [f.ravel()] if n_classes == 2 else [f[:, j] for j in range(n_classes)]
    targets = [codes == 1] if n_classes == 2 else [codes == j for j in range(n_classes)]
    steps = [_isotonic_steps(col, platt_targets(t))
             for col, t in zip(columns, targets, strict=True)]
    starts = np.cumsum([0] + [len(k) for k, _ in steps])
    return ProbabilityCalibration(method, n_classes, np.empty((0, 0)), empty,
                                  np.concatenate([k for k, _ in steps]),
                                  np.concatenate([v for _, v in steps]), starts)


def platt_scaling(decision: np.ndarray, codes: np.ndarray, *, tol: float = 1e-12,
                  max_iter: int = 100) -> tuple[float, float]:
    """Platt's sigmoid ``P(1 | f) = 1 / (1 + exp(−(a f + b)))`` fitted to two-class codes.

    Maximizes the likelihood of Platt's smoothed targets ``t = (N₊ + 1) / (N₊ + 2)``
    for code 1 and ``1 / (N₋ + 2)`` for code 0, by Newton's method with
    backtracking on the decision values divided by their largest magnitude (the
    slope is scaled back), from Platt's starting point ``a = 0``,
    ``b = log((N₊ + 1) / (N₋ + 1))``.

    Parameters
    ----------
    decision : ndarray (n,)
        Finite decision values.
    codes : ndarray (n,)
        1 for the positive class, 0 for the other.
    tol : float
        Stop when the largest gradient entry is at most ``tol`` times the rows.
    max_iter : int
        Most Newton steps.

    Returns
    -------
    (a, b) : tuple of float

    Examples
    --------
    >>> import numpy as np
    >>> a, b = platt_scaling(np.array([-2.0, -1.0, 0.5, 1.0, 2.0]), np.array([0, 0, 0, 1, 1]))
    >>> bool(a > 0)
    True
    """
    f = np.asarray(decision, dtype=np.float64)
    positive = np.asarray(codes) == 1
    n_pos = float(positive.sum())
    n_neg = float(len(f) - n_pos)
    t = platt_targets(positive)
    scale = float(np.max(np.abs(f))) if len(f) else 0.0
    scale = scale if scale > 0 else 1.0
    x = f / scale

    def loss(u: np.ndarray) -> float:  # −Σ t log p + (1 − t) log(1 − p), p = expit(z)
        z = u[0] * x + u[1]
        return float(np.sum(np.logaddexp(0.0, z) - t * z))

    u = np.array([0.0, np.log((n_pos + 1.0) / (n_neg + 1.0))])
    value = loss(u)
    for _ in range(max_iter):
        p = _expit(u[0] * x + u[1])
        r = p - t
        # sums of products, not BLAS dot products: a vector's ddot on a busy machine's
        # threaded BLAS costs a hundred times the arithmetic
        grad = np.array([np.sum(r * x), r.sum()])
        if np.max(np.abs(grad)) <= tol * max(len(f), 1):
            break
        w = p * (1.0 - p)
        wx = np.sum(w * x)
        hess = np.array([[np.sum(w * x * x), wx], [wx, w.sum()]]) + 1e-12 * np.eye(2)
        step = np.linalg.solve(hess, grad)
        accepted = _armijo_step(loss, u, step, grad, value)
        if accepted is None:
            break  # no decrease left: converged to round-off
        u, value = accepted
    return float(u[0] / scale), float(u[1])


def temperature_scaling(decision: np.ndarray, codes: np.ndarray, n_classes: int, *,
                        tol: float = 1e-10, max_iter: int = 100) -> tuple[float, np.ndarray]:
    """k-class sigmoid: ``P(j | f) = softmax(a f + b)_j``, one slope ``a`` for all the
    columns and an intercept ``b_j`` per class (k + 1 parameters, ``b_0 = 0``).

    Fitted by Newton's method with backtracking to smoothed targets: a row aims at
    ``(n + 1) / (n + 2)`` for its own class and shares ``1 / (n + 2)`` among the
    others, ``n`` the rows. This is Platt's prior spread over all the rows rather than
    one class's: it keeps the slope finite when the rows are separable, yet lets the
    probability of a confident row reach ``1 − 1/(n + 2)`` (per-class counts would cap it
    at ``1 − 1/(N_c + 2)``, which costs every correct row ``log((N_c + 2)/(N_c + 1))``
    of log loss, a third of scikit-learn SVC's whole log loss on pendigits). One slope
    rather than a k × k matrix: with few errors among the rows, a full multinomial
    over-fits its k(k + 1) parameters (measured in ``benchmarks/classes.py``).

    Parameters
    ----------
    decision : ndarray (n, k)
        Finite one-vs-rest decision values.
    codes : ndarray of int (n,)
        Classes 0 … k − 1.
    n_classes : int
        k.
    tol : float
        Stop when the largest gradient entry is at most ``tol`` times the rows.
    max_iter : int
        Most Newton steps.

    Returns
    -------
    (a, b) : float and ndarray (k,)

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> F = rng.normal(size=(5000, 3))
    >>> z = 2.0 * F + np.array([0.0, 0.5, -0.5])
    >>> p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    >>> codes = (rng.random(5000)[:, None] > p.cumsum(axis=1)).sum(axis=1)
    >>> a, b = temperature_scaling(F, codes, 3)
    >>> bool(abs(a - 2.0) < 0.2), np.round(b, 1).tolist()  # drawn with a = 2
    (True, [0.0, 0.5, -0.5])
    """
    f = np.asarray(decision, dtype=np.float64).reshape(len(codes), n_classes)
    codes = np.asarray(codes, dtype=np.intp)
    n, k = f.shape
    own = (n + 1.0) / (n + 2.0)
    t = np.full((n, k), (1.0 - own) / (k - 1))
    t[np.arange(n), codes] = own
    scale = float(np.max(np.abs(f))) if n else 0.0
    scale = scale if scale > 0 else 1.0
    x = f / scale
    counts = np.bincount(codes, minlength=k).astype(np.float64)

    def logits(u: np.ndarray) -> np.ndarray:
        return u[0] * x + np.concatenate([[0.0], u[1:]])

    def loss(u: np.ndarray) -> float:  # −Σ t log softmax(z), each row's targets sum to 1
        z = logits(u)
        top = z.max(axis=1)
        lse = top + np.log(np.exp(z - top[:, None]).sum(axis=1))
        return float(np.sum(lse) - np.sum(t * z))

    # start: slope 0, intercepts the log of the (smoothed) class shares
    u = np.concatenate([[0.0], np.log((counts[1:] + 1.0) / (counts[0] + 1.0))])
    value = loss(u)
    for _ in range(max_iter):
        p = _softmax(logits(u))
        r = p - t
        px = np.sum(p * x, axis=1)  # E_p[x] per row
        grad = np.concatenate([[np.sum(r * x)], r[:, 1:].sum(axis=0)])
        if np.max(np.abs(grad)) <= tol * max(n, 1):
            break
        hess = np.empty((k, k))
        hess[0, 0] = np.sum(p * x * x) - np.sum(px * px)
        cross = np.sum(p[:, 1:] * (x[:, 1:] - px[:, None]), axis=0)
        hess[0, 1:] = hess[1:, 0] = cross
        hess[1:, 1:] = np.diag(p[:, 1:].sum(axis=0)) - p[:, 1:].T @ p[:, 1:]
        step = np.linalg.solve(hess + 1e-12 * n * np.eye(k), grad)
        accepted = _armijo_step(loss, u, step, grad, value)
        if accepted is None:
            break  # no decrease left: converged to round-off
        u, value = accepted
    return float(u[0] / scale), np.concatenate([[0.0], u[1:]])


def _armijo_step(loss: Callable[[np.ndarray], float], u: np.ndarray, step: np.ndarray,
                 grad: np.ndarray, value: float) -> tuple[np.ndarray, float] | None:
    """The Newton step ``u − rate·step``, halved until ``loss`` decreases enough (Armijo),
    with its loss; None when no rate above 1e-10 does (converged to round-off)."""
    rate = 1.0
    while rate > 1e-10:
        trial = u - rate * step
        trial_value = loss(trial)
        if trial_value <= value - 1e-4 * rate * float(grad @ step):
            return trial, trial_value
        rate /= 2.0
    return None


def platt_targets(positive: np.ndarray) -> np.ndarray:
    """Platt's smoothed targets of two-class rows: ``(N₊ + 1) / (N₊ + 2)`` for a positive
    row, ``1 / (N₋ + 2)`` for a negative one (the posterior means under a uniform prior).

    A calibrator fitted to them never reaches 0 or 1 where it has seen finitely many
    rows: a held-out set of separable rows does not make a sure, possibly wrong, answer.

    >>> platt_targets(np.array([True, False, False])).tolist()
    [0.6666666666666666, 0.25, 0.25]
    """
    positive = np.asarray(positive, dtype=bool)
    n_pos = float(positive.sum())
    n_neg = float(len(positive) - n_pos)
    return np.where(positive, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))


def _isotonic_steps(f: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The knots and levels of the isotonic fit of ``target`` on ``f``."""
    from sklearn.isotonic import IsotonicRegression

    iso = IsotonicRegression(out_of_bounds="clip", y_min=0.0, y_max=1.0).fit(f, target)
    return (np.asarray(iso.X_thresholds_, dtype=np.float64),
            np.asarray(iso.y_thresholds_, dtype=np.float64))


def expected_calibration_error(y_true: Any, proba: Any, *, classes: Any = None,
                               n_bins: int = 15) -> float:
    """Expected calibration error of class probabilities: how far confidence is from accuracy.

    The rows are put in ``n_bins`` equal-width bins ``(i/n_bins, (i+1)/n_bins]`` of
    their largest probability (the confidence of the predicted class); the error is
    ``Σ_b (|b| / n) · |accuracy(b) − confidence(b)|``, 0 for perfectly calibrated
    probabilities (Guo et al. 2017).

    Parameters
    ----------
    y_true : array-like (n,)
        True labels.
    proba : array-like (n, k)
        Probabilities, column ``j`` that of ``classes[j]`` (as ``predict_proba`` gives
        them with ``classes_``).
    classes : array-like (k,), optional
        The labels of the columns; default the sorted labels of ``y_true`` (then every
        class must occur in it).
    n_bins : int
        Bins of the confidence.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> proba = np.array([[0.9, 0.1], [0.2, 0.8], [0.3, 0.7], [0.6, 0.4]])
    >>> y = np.array(["clear", "cloud", "cloud", "cloud"])
    >>> round(expected_calibration_error(y, proba), 3)  # (0.1 + 0.2 + 0.3 + 0.6) / 4
    0.3
    """
    y = np.asarray(y_true)
    p = np.asarray(proba, dtype=np.float64)
    classes = np.unique(y) if classes is None else np.asarray(classes)
    if p.ndim != 2 or p.shape != (len(y), len(classes)):
        raise ValueError(f"proba must be (n, k) = ({len(y)}, {len(classes)}) for "
                         f"{len(classes)} classes; got shape {p.shape}")
    if len(y) == 0:
        raise ValueError("no rows to measure the calibration of")
    codes = np.searchsorted(classes, y).clip(0, len(classes) - 1)
    if not np.all(classes[codes] == y):
        raise ValueError(f"y_true holds labels not in classes: "
                         f"{np.unique(y[classes[codes] != y]).tolist()}")
    confidence = p.max(axis=1)
    correct = (p.argmax(axis=1) == codes).astype(np.float64)
    which = np.clip(np.ceil(confidence * n_bins).astype(np.intp) - 1, 0, n_bins - 1)
    gap = (np.bincount(which, weights=correct, minlength=n_bins)
           - np.bincount(which, weights=confidence, minlength=n_bins))
    return float(np.abs(gap).sum() / len(y))
