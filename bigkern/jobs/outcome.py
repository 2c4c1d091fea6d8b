"""The outcome of a fit job, and what the job says: progress lines and one closing sentence.

:class:`FitOutcome` is what :func:`bigkern.jobs.fit.fit_scenes` returns for
every model. Progress goes to stderr as it happens (:func:`say`);
:func:`describe_fit` is the sentence ``bigkern fit`` prints once the model is
written: the model and its parameters (which were fixed, which the search
chose), the rows it was fitted on and those left out, and its held-out score.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

import xarray as xr

from bigkern.jobs.tuning import GridSearchResult

__all__ = ["FitOutcome", "describe_fit", "params_text", "report_text", "say", "score_text"]


@dataclass
class FitOutcome:
    """A model fitted on a scene dataset: what it was fitted on and how it scored.

    Attributes
    ----------
    model : estimator
        The fitted model: the best of the search (``bins``), the one fitted on
        the training half (``reduced``), or the one fitted on every eligible
        pixel without a search.
    engine : {"bins", "reduced"}
        How it was fitted (its registry row's engine).
    pixels : str
        The pixels eligible, in words ("labelled pixels", "pixels with a finite SST").
    seed : int
        Seed of the split.
    split : bool
        Whether the model was fitted on a random half and scored on the other.
    fixed : dict
        The parameters given, so not searched (every one of them, with or
        without a search).
    search : GridSearchResult or None
        The held-out grid search over the bins (``bins`` with a split only).
    bins : xarray.Dataset or None
        The bins the model was fitted on (``bins`` only).
    metric : {"accuracy", "rmse"} or None
        The held-out score's kind (None without a split).
    score : float or None
        Held-out accuracy (a fraction) or root mean squared error.
    n_scored : int
        Held-out rows scored.
    target_std : float or None
        Standard deviation of the scored held-out targets (regression only).
    log_loss : float or None
        Mean held-out log loss of a classifier fitted with ``calibration``.
    seconds : dict of str to float
        Wall times of the steps.
    """

    model: Any
    engine: str
    pixels: str
    seed: int = 0
    split: bool = True
    fixed: dict[str, Any] = field(default_factory=dict)
    search: GridSearchResult | None = None
    bins: xr.Dataset | None = None
    metric: str | None = None
    score: float | None = None
    n_scored: int = 0
    target_std: float | None = None
    log_loss: float | None = None
    seconds: dict[str, float] = field(default_factory=dict)


def say(msg: str) -> None:
    """Print one progress line of a job on stderr, at once."""
    print(msg, file=sys.stderr, flush=True)


def params_text(params: dict[str, Any], *, quote: bool = True) -> str:
    """``name=value`` pairs, floats in their shortest form (other values quoted as repr).

    Examples
    --------
    >>> params_text({"omega": 0.8, "C": 10, "penalty": "rkhs"})
    "omega=0.8, C=10, penalty='rkhs'"
    >>> params_text({"penalty": "rkhs"}, quote=False)
    'penalty=rkhs'
    """
    return ", ".join(f"{k}={v:g}" if isinstance(v, float) else
                     f"{k}={v!r}" if quote else f"{k}={v}" for k, v in params.items())


def _masked_text(out: FitOutcome) -> str:
    """What the rows masked out of the fit are."""
    others = ("unlabelled pixels" if out.pixels == "labelled pixels"
              else out.pixels.replace("pixels with a", "pixels without a"))
    return f"the held-out half and the {others}" if out.split else f"the {others}"


def report_text(out: FitOutcome) -> str:
    """Centres, Newton iterations and passes (or reads), and the row counts of a row fit."""
    report = out.model.fit_report_
    if "iterations" in report:
        solver = (f"{report['iterations']} Newton iterations in {report['passes']} passes "
                  f"({report['reads']} reads with the draw of the centers"
                  f"{'' if report.get('converged', True) else '; NOT CONVERGED'})")
    elif report.get("solver") == "cg":
        start = (f" from the solution on {report['start_rows']:,} rows "
                 f"({report['start_iterations']} iterations in memory)"
                 if report.get("start") == "subset" else "")
        solver = (f"{report['n_iter']} conjugate-gradient iterations{start} to a relative "
                  f"residual of {report['residual']:.1e} ({report['reads']} reads with the draw "
                  f"of the centers{'' if report['converged'] else '; NOT CONVERGED'})")
    else:
        n = report.get("n_candidates", 1)
        solver = (f"{report.get('reads', 2)} reads (the draw of the centers, one pass)"
                  + (f", best of {n} (omega, lam) candidates by "
                     f"{out.model.get_params().get('n_folds')}-fold CV on the fitted rows"
                     if n > 1 else ""))
    return (f"{report['n_basis']} centers, {solver}; {report.get('n_valid', 0):,} rows used, "
            f"{report.get('n_masked', 0):,} masked out ({_masked_text(out)}), "
            f"{report.get('n_nonfinite', 0):,} left out with a missing, fill or out-of-range "
            f"feature{_by_feature(report, ' (', ')')}, "
            f"{report.get('n_absent', 0):,} absent (no feature at all)"
            + (f", {report['n_nonfinite_y']:,} with a non-finite target"
               if report.get("n_nonfinite_y") else ""))


def _by_feature(report: dict[str, Any], before: str, after: str = "") -> str:
    """The non-finite rows per feature, where there are any, between ``before`` and ``after``."""
    text = ", ".join(f"{k}: {v:,}" for k, v in report.get("n_nonfinite_by_feature", {}).items()
                     if v)
    return f"{before}{text}{after}" if text else ""


def score_text(out: FitOutcome) -> str:
    """The held-out score in words."""
    if out.metric == "accuracy":
        classes = getattr(out.model, "classes_", ())
        loss = "" if out.log_loss is None else f", log loss {out.log_loss:.4f}"
        return (f"accuracy {out.score:.2%}{loss} on {out.n_scored:,} pixels of the other half"
                + (f" ({len(classes)} classes)" if len(classes) > 2 else ""))
    return (f"RMSE {out.score:.4g} on {out.n_scored:,} pixels of the other half "
            f"(their target's standard deviation {out.target_std:.4g})")


def _chosen_params(model: Any) -> str:
    """The width and regularization a row fit ended with (the chosen candidates)."""
    report, params = model.fit_report_, model.get_params()
    keys = [k for k in ("omega", "C", "lam", "epsilon", "penalty") if k in params]
    return ", ".join(f"{k}={report.get(k, params[k]):g}" if k != "penalty"
                     else f"{k}={params[k]}" for k in keys)


def _searched_params(out: FitOutcome) -> str:
    """Which parameters of a binned fit were fixed and which the held-out search chose."""
    fixed = params_text(out.fixed, quote=False)
    if out.search is None:
        return f"{fixed}; no search" if out.fixed else "defaults; no search"
    parts = [f"{fixed} fixed by --param"] if out.fixed else []
    chosen = out.search.best_params
    parts.append(f"{params_text(chosen, quote=False)} chosen by the held-out search" if chosen
                 else "nothing left to search")
    return "; ".join(parts) + f", held-out accuracy {out.search.best_score:.2%}"


def describe_fit(out: FitOutcome) -> str:
    """One sentence: what was fitted, on what, how it scored, and which model that is.

    Parameters
    ----------
    out : FitOutcome
        The outcome of :func:`bigkern.jobs.fit.fit_scenes`.

    Returns
    -------
    str
    """
    name = type(out.model).__name__
    if out.engine == "bins":
        report = out.model.fit_report_
        return (f"fitted {name} ({_searched_params(out)}) on {report['n_bins_occupied']} bins "
                f"of {report['n_valid']:,} pixels ({report['n_nonfinite']:,} rows with a "
                f"missing, fill or out-of-range feature left out{_by_feature(report, ' — ')}; "
                f"{report.get('n_outliers', 0):,} extreme values kept)")
    head = f"fitted {name} ({_chosen_params(out.model)})"
    if not out.split:
        return (f"{head} on all {out.pixels} (no held-out score: --no-search): "
                f"{report_text(out)}")
    return (f"{head} on the random training half of the {out.pixels} (seed {out.seed}): "
            f"{report_text(out)}; held-out {score_text(out)}; the model saved is this one, "
            f"fitted on the training half only (not refitted on all pixels)")
