"""A reliability diagram: how often a classifier is right against how sure it says it is.

Rows are put in equal-width bins of a predicted probability; each bin gives a point
(mean predicted probability, observed frequency) and a count of rows. Calibrated
probabilities lie on the diagonal. Two kinds of curve:

``"confidence"``
    The probability of the predicted class (each row's largest) against how often the
    predicted class is the true one. Its bins are those of
    :func:`bigkern.models.calibration.expected_calibration_error` (``(i/b, (i+1)/b]``
    of the largest probability), so the error is the bins' gaps weighted by their
    counts, and the figure's title gives it.
``"classes"``
    One curve per class: the probability of class ``j`` against how often a row is of
    class ``j`` (for two classes, the second class's curve only; the first is its
    mirror image).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["CURVES", "ReliabilityBins", "plot_reliability", "reliability_bins"]

#: The kinds of curve :func:`plot_reliability` and :func:`reliability_bins` draw.
CURVES = ("confidence", "classes")


@dataclass(frozen=True)
class ReliabilityBins:
    """One curve of a reliability diagram: its rows counted in equal-width probability bins.

    Attributes
    ----------
    label : str
        What the curve is of: ``"confidence"`` or ``"class <label>"``.
    edges : ndarray (n_bins + 1,)
        The bins' edges, 0 … 1; bin ``i`` is ``(edges[i], edges[i + 1]]`` (a
        probability of 0 goes to the first bin).
    count : ndarray of int (n_bins,)
        Rows per bin.
    mean_probability : ndarray (n_bins,)
        The mean predicted probability of each bin's rows; NaN for an empty bin.
    frequency : ndarray (n_bins,)
        How often the event happened in each bin (the predicted class is the true
        one, or the row is of the class); NaN for an empty bin.
    """

    label: str
    edges: np.ndarray
    count: np.ndarray
    mean_probability: np.ndarray
    frequency: np.ndarray

    def calibration_error(self) -> float:
        """``Σ_b (|b| / n) · |frequency(b) − mean_probability(b)|`` over the non-empty bins:
        for the ``"confidence"`` curve, the expected calibration error."""
        full = self.count > 0
        gaps = np.abs(self.frequency[full] - self.mean_probability[full])
        return float(np.sum(self.count[full] * gaps) / self.count.sum())


def _codes(y_true: Any, proba: Any, classes: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rows' class codes (column numbers), the probabilities and the classes, checked."""
    y = np.asarray(y_true)
    p = np.asarray(proba, dtype=np.float64)
    classes = np.unique(y) if classes is None else np.asarray(classes)
    if p.ndim != 2 or p.shape != (len(y), len(classes)):
        raise ValueError(f"proba must be (n, k) = ({len(y)}, {len(classes)}) for "
                         f"{len(classes)} classes; got shape {p.shape}")
    if len(y) == 0:
        raise ValueError("no rows to draw the reliability of")
    if not np.isfinite(p).all():
        raise ValueError(f"proba has {int((~np.isfinite(p)).any(axis=1).sum())} row(s) that "
                         f"are not finite (rows that could not be predicted): drop them first")
    codes = np.searchsorted(classes, y).clip(0, len(classes) - 1)
    if not np.all(classes[codes] == y):
        raise ValueError(f"y_true holds labels not in classes: "
                         f"{np.unique(y[classes[codes] != y]).tolist()}")
    return codes, p, classes


def _binned(label: str, probability: np.ndarray, event: np.ndarray, n_bins: int
            ) -> ReliabilityBins:
    # the bins of expected_calibration_error: (i/b, (i+1)/b], 0 in the first
    which = np.clip(np.ceil(probability * n_bins).astype(np.intp) - 1, 0, n_bins - 1)
    count = np.bincount(which, minlength=n_bins)
    sums = np.bincount(which, weights=probability, minlength=n_bins)
    hits = np.bincount(which, weights=event.astype(np.float64), minlength=n_bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean, frequency = sums / count, hits / count
    return ReliabilityBins(label, np.linspace(0.0, 1.0, n_bins + 1), count, mean, frequency)


def reliability_bins(y_true: Any, proba: Any, *, classes: Any = None, n_bins: int = 15,
                     curve: str = "confidence") -> list[ReliabilityBins]:
    """The bins of a reliability diagram: counts, mean probability and observed frequency.

    Parameters
    ----------
    y_true : array-like (n,)
        True labels.
    proba : array-like (n, k)
        Finite probabilities, column ``j`` that of ``classes[j]`` (``predict_proba``).
    classes : array-like (k,), optional
        The labels of the columns; default the sorted labels of ``y_true``.
    n_bins : int
        Equal-width bins of [0, 1].
    curve : {"confidence", "classes"}
        The predicted class's probability (one curve), or one curve per class (the
        second class's only, for two); see :mod:`bigkern.jobs.reliability_figure`.

    Returns
    -------
    list of ReliabilityBins

    Examples
    --------
    >>> import numpy as np
    >>> proba = np.array([[0.9, 0.1], [0.2, 0.8], [0.3, 0.7], [0.6, 0.4]])
    >>> (conf,) = reliability_bins(["a", "b", "b", "b"], proba, n_bins=2)
    >>> conf.count.tolist(), conf.frequency.tolist()  # the 0.6 row is wrong
    ([0, 4], [nan, 0.75])
    >>> round(conf.calibration_error(), 3)  # |0.75 − 0.75|
    0.0
    """
    if curve not in CURVES:
        raise ValueError(f"curve must be one of {CURVES}; got {curve!r}")
    if int(n_bins) < 1:
        raise ValueError(f"n_bins must be at least 1; got {n_bins}")
    codes, p, classes = _codes(y_true, proba, classes)
    if curve == "confidence":
        correct = p.argmax(axis=1) == codes
        return [_binned("confidence", p.max(axis=1), correct, int(n_bins))]
    columns = [1] if len(classes) == 2 else range(len(classes))
    return [_binned(f"class {classes[j]}", p[:, j], codes == j, int(n_bins)) for j in columns]


def plot_reliability(
    y_true: Any,
    proba: Any | Mapping[str, Any],
    *,
    classes: Any = None,
    n_bins: int = 15,
    curve: str = "confidence",
    axes: Sequence[Axes] | None = None,
    title: str | None = None,
) -> Figure:
    """A reliability diagram of class probabilities, with the rows per bin and the ECE.

    The upper panel draws each bin's observed frequency against its mean predicted
    probability (the dotted diagonal is perfect calibration); the lower one the rows
    per bin, on a log scale. The title gives each model's expected calibration error,
    :func:`~bigkern.models.calibration.expected_calibration_error` over the same
    ``n_bins`` bins (with ``curve="confidence"``, the bins drawn).

    Parameters
    ----------
    y_true : array-like (n,)
        True labels.
    proba : array-like (n, k), or mapping of str to array-like (n, k)
        Probabilities (``predict_proba``, column ``j`` that of ``classes[j]``) of the
        rows of ``y_true``; a mapping draws several models' on the same panels, each
        under its name.
    classes : array-like (k,), optional
        The labels of the columns (a model's ``classes_``); default the sorted labels
        of ``y_true``.
    n_bins : int
        Equal-width bins of [0, 1].
    curve : {"confidence", "classes"}
        The predicted class's probability against accuracy (the bins of the ECE), or
        one curve per class (for two classes, the second class's); see
        :mod:`bigkern.jobs.reliability_figure`.
    axes : pair of matplotlib Axes, optional
        The curve's and the counts' panels, to draw into a figure of one's own (e.g.
        ``plt.subplots(2, 1, height_ratios=(3, 1), sharex=True)[1]``); default a new
        figure.
    title : str, optional
        Default: the kind of curve, the bins and the ECE of each model.

    Returns
    -------
    matplotlib.figure.Figure
        The figure drawn (that of ``axes`` when given).

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern import plot_reliability
    >>> rng = np.random.default_rng(0)
    >>> p1 = rng.uniform(size=500)
    >>> y = (rng.uniform(size=500) < p1).astype(int)  # drawn with the probabilities given
    >>> fig = plot_reliability(y, np.column_stack([1 - p1, p1]), n_bins=10)
    >>> print(fig.axes[0].get_title())
    confidence of the predicted class, 10 bins
    ECE: 0.017
    >>> len(fig.axes[1].patches)  # one bar per bin
    10
    """
    from bigkern.extras import require

    require("matplotlib", extra="plot", purpose="plot_reliability")
    from bigkern.models.calibration import expected_calibration_error

    models = dict(proba) if isinstance(proba, Mapping) else {"": proba}
    if not models:
        raise ValueError("no probabilities to draw")
    if axes is None:
        from bigkern.jobs.plot import _figure_class

        fig = _figure_class()(figsize=(6.0, 6.4), layout="constrained")
        top, bottom = fig.subplots(2, 1, height_ratios=(3, 1), sharex=True)
    else:
        top, bottom = axes
        fig = top.get_figure()
    top.plot([0, 1], [0, 1], ":", color="0.4", lw=1, label="perfectly calibrated")
    errors: dict[str, float] = {}
    drawn = [(name, b) for name, p in models.items()
             for b in reliability_bins(y_true, p, classes=classes, n_bins=n_bins, curve=curve)]
    width = 1.0 / n_bins / len(drawn)
    for i, (name, bins) in enumerate(drawn):
        if name not in errors:
            errors[name] = expected_calibration_error(y_true, models[name], classes=classes,
                                                      n_bins=n_bins)
        words = [w for w in (name, bins.label if curve == "classes" else "") if w]
        label = ", ".join(words) or "confidence"
        if curve == "confidence":
            label += f" (ECE {errors[name]:.3f})"
        full = bins.count > 0
        line = top.plot(bins.mean_probability[full], bins.frequency[full], "o-", ms=4, lw=1.2,
                        label=label)[0]
        bottom.bar(bins.edges[:-1] + i * width, bins.count, width=width, align="edge",
                   color=line.get_color(), alpha=0.8)
    top.set(xlim=(0, 1), ylim=(0, 1),
            ylabel="observed frequency" + (" (accuracy)" if curve == "confidence" else ""))
    top.grid(alpha=0.3)
    top.legend(loc="upper left", fontsize="small")
    bottom.set(yscale="log", ylabel="rows",
               xlabel=("probability of the predicted class" if curve == "confidence"
                       else "predicted probability of the class"))
    bottom.grid(alpha=0.3, axis="y")
    if title is None:
        what = ("confidence of the predicted class" if curve == "confidence"
                else "one curve per class")
        which = "ECE" if curve == "confidence" else "ECE of the predicted class"
        ece = [f"{name} {e:.3f}" if name else f"{e:.3f}" for name, e in errors.items()]
        summary = f"{which}: {'; '.join(ece)}"
        if len(summary) > 55:  # wider than the panel: a line per model
            summary = "\n".join(f"{which} {e}" for e in ece)
        title = f"{what}, {n_bins} bins\n{summary}"
    top.set_title(title)
    return fig
