"""The one fit job: any ``--model`` of the registry, fitted on the pixels of a scene dataset.

:func:`fit_scenes` is what ``bigkern fit``, ``bigkern demo`` and the notebooks
call. It looks the model up in :mod:`bigkern.models.registry` and fits it the
way the row's engine says:

- ``bins`` (:class:`~bigkern.models.BinnedSVC`,
  :class:`~bigkern.models.BinnedKernelRidgeClassifier`): the labelled pixels
  are split into random halves, the training half is binned **once** (in one
  read of the data when the store recorded that half's key histograms at write
  time: :mod:`bigkern.reduce.recorded_split`; the report says which plan ran),
  one model per grid point is fitted on the bins and all are scored on the other
  half in one pass; the best is returned.
- ``reduced`` (every estimator whose ``fit`` takes ``mask=``: the reduced SVMs,
  the Nyström ridges): the model is fitted **once**, lazily, on a random half
  of the eligible pixels (the labelled ones for a classifier, those with a
  finite target for a regressor) and scored on the other half in one more
  pass; the model returned is that one (there is no refit).

Either way, the halves come from a hash of the pixel index and ``seed``, so
they do not depend on the chunking, and ``search=False`` fits on every
eligible pixel and scores nothing. The result is one :class:`FitOutcome`;
:func:`bigkern.jobs.outcome.describe_fit` says it in one sentence.
"""

from __future__ import annotations

import contextlib
import time
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import xarray as xr

from bigkern.errors import DataQualityError
from bigkern.features import DEFAULT_FEATURES, with_features
from bigkern.jobs.fit_params import check_param_names, search_grid, split_candidates
from bigkern.jobs.outcome import FitOutcome, params_text, report_text, say, score_text
from bigkern.jobs.tuning import grid_search_bins, holdout_score
from bigkern.models.registry import ModelSpec, cli_spec
from bigkern.reduce.binning.percentile import percentile_bins
from bigkern.reduce.extremes import SuspectedFillWarning
from bigkern.reduce.recorded_split import recorded_split
from bigkern.reduce.sampling import random_split
from bigkern.scenes.samples import stack_samples
from bigkern.scenes.validity import FillValues, ValidRanges, ensure_validity

__all__ = ["DEFAULT_FEATURES", "fit_scenes"]


def fit_scenes(
    ds: xr.Dataset,
    *,
    model: str = "svc",
    features: Sequence[str] = DEFAULT_FEATURES,
    target: str | None = None,
    params: dict[str, Any] | None = None,
    grid: dict[str, list[Any]] | None = None,
    search: bool = True,
    seed: int = 0,
    fill_values: FillValues = None,
    valid_ranges: ValidRanges = None,
) -> FitOutcome:
    """Fit a ``--model`` of the registry on the pixels of a scene dataset.

    Parameters
    ----------
    ds : xarray.Dataset
        Scenes ``(scene, y, x)`` with the stored features and ``label``.
    model : str
        A ``--model`` name of :mod:`bigkern.models.registry` (``svc``, ``ridge``,
        ``reduced-svc``, ``reduced-svr``, ``nystrom-krr`` …); with a ``target``
        its regressor (``nystrom-krr`` is a classifier without one).
    features : sequence of str
        Features to fit on; derived ones (``logSD``) are added first.
    target : str, optional
        The variable a regressor predicts (not one of ``features``); it fits on
        every pixel where the target is finite, labelled or not.
    params : dict, optional
        Estimator parameters, fixed. A list value is a set of candidates: the
        grid searched for that parameter (``bins``), or the candidates the
        estimator chooses among itself (Nyström's ``omega``, ``lam``). For a
        ``reduced`` model ``random_state`` defaults to ``seed``.
    grid : dict of str to list, optional
        The grid a ``bins`` model searches on the held-out half instead of the
        registry's default (less the parameters in ``params``); ``{}`` fits the
        one model of ``params`` on the training half and scores it.
    search : bool
        Fit on a random half and score on the other (searching ``grid`` for a
        ``bins`` model); False fits ``params`` on every eligible pixel.
    seed : int
        Seed of the split (and of a reduced model's centres unless ``params`` fix it).
    fill_values, valid_ranges : optional
        The validity rules, as for :func:`bigkern.open_scenes`. Variables that have
        not been through them (a Dataset built in memory) get them before any
        feature is derived, so every door into a fit masks the same values.

    Returns
    -------
    FitOutcome
        See :class:`bigkern.jobs.outcome.FitOutcome`.

    Raises
    ------
    ValueError
        An unknown model or parameter, a target for a classifier (or none for a
        regressor), a target among the features, a parameter given both fixed
        and as candidates, or a grid or candidates without a search.
    DataQualityError
        (a ``ValueError``) a suspected undeclared fill value in a feature (see
        :mod:`bigkern.reduce.extremes`): the message names the variable and the
        ``fill_values``/``--fill-value`` to declare; the fit stops after its first pass.

    Examples
    --------
    Fixed parameters, fitted on every labelled pixel:

    >>> from bigkern import fit_scenes
    >>> from bigkern.datasets import make_scenes
    >>> scenes = make_scenes(1, (64, 64), seed=0, radiances=False)
    >>> outcome = fit_scenes(scenes, model="ridge", params={"omega": 1.0, "lam": 0.01},
    ...                      search=False)
    >>> outcome.engine, type(outcome.model).__name__, outcome.model.n_features_in_
    ('bins', 'BinnedKernelRidgeClassifier', 3)

    A grid searched on a held-out half of the labelled pixels (progress goes to stderr):

    >>> outcome = fit_scenes(scenes, model="svc", grid={"C": [0.1, 10.0]})
    >>> outcome.metric, outcome.search.scores.dims, bool(outcome.score > 0.9)
    ('accuracy', ('C',), True)
    """
    spec = cli_spec(model, target)
    params = dict(params or {})
    check_param_names(spec.cls, params)
    features = list(features)
    if target is not None and target in features:
        raise ValueError(f"the target {target!r} is also a feature: a model would only copy "
                         f"it; leave it out of the features")
    ds = ensure_validity(ds, fill_values=fill_values, valid_ranges=valid_ranges)
    ds = with_features(ds, [*features, *([target] if target else [])])
    if spec.engine != "bins" and grid is not None:
        raise ValueError(f"{model} is fitted once, not searched over a grid: give its "
                         f"candidates (where it takes some) in params")
    with _suspected_fills_refused():
        if spec.engine == "bins":
            return _fit_on_bins(spec, ds, features, params, grid, search, seed)
        return _fit_on_rows(spec, ds, features, target, params, search, seed)


@contextlib.contextmanager
def _suspected_fills_refused() -> Iterator[None]:
    """A suspected undeclared fill ends the fit after its first pass, naming what to declare.

    An estimator warns (:class:`~bigkern.reduce.extremes.SuspectedFillWarning`) and fits
    on; a fit of scenes, which writes a model that will predict whole scenes, refuses
    instead: the fill is declared (and masked) or the check's threshold raised.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("error", SuspectedFillWarning)
        try:
            yield
        except SuspectedFillWarning as found:
            raise DataQualityError(f"refusing to fit on a suspected fill value: {found}"
                                   ) from None


def _fit_on_bins(spec: ModelSpec, ds: xr.Dataset, features: list[str], params: dict[str, Any],
                 grid: dict[str, list[Any]] | None, search: bool, seed: int) -> FitOutcome:
    """The ``bins`` engine: bin the training half once, search the grid on the other half."""
    fixed, candidates = split_candidates(params)
    if not search:
        if grid is not None or candidates:
            raise ValueError(f"candidates to search ({', '.join(grid or candidates)}) were "
                             f"given without a search: give one value each, or search")
        grid = {}
    else:
        grid = search_grid(spec.cli, fixed, grid, candidates, n_features=len(features))
    estimator = spec.cls(**fixed)
    samples = stack_samples(ds, features, labelled_only=True)
    out = FitOutcome(estimator, "bins", "labelled pixels", seed, search, fixed)
    t0 = time.perf_counter()
    if not search:
        out.bins = percentile_bins(samples.X, samples.y, mask=samples.mask, features=features,
                                   recorded=samples.recorded)
        out.seconds["binning"] = time.perf_counter() - t0
        out.model = estimator.fit_bins(out.bins)
        out.seconds["solve"] = time.perf_counter() - t0 - out.seconds["binning"]
        return out
    # the store's record of the training half (when it has one for this split): one read
    train, held_out, recorded = recorded_split(samples, fraction=0.5, seed=seed)
    bins = out.bins = percentile_bins(samples.X, samples.y, mask=train, features=features,
                                      recorded=recorded)
    out.seconds["binning"] = time.perf_counter() - t0
    say(f"bigkern: {bins.attrs['n_valid']:,} training pixels → "
        f"{bins.attrs['n_bins_occupied']} occupied bins "
        f"({bins.attrs['n_bins_empty']} empty, {bins.attrs['n_nonfinite']} non-finite rows "
        f"and {bins.attrs['n_absent']} absent pixels left out) in {out.seconds['binning']:.1f} s"
        f"; {_plan_text(bins)}")
    t1 = time.perf_counter()
    found = out.search = grid_search_bins(estimator, bins, grid, samples.X, samples.y,
                                          mask=held_out)
    out.seconds["grid_search"] = time.perf_counter() - t1
    out.model, out.metric, out.score, out.n_scored = (found.best_model, "accuracy",
                                                      found.best_score, found.n_scored)
    fixed_text = f"; fixed: {params_text(fixed)}" if fixed else ""
    what = (f"grid search over {found.scores.size} {spec.cli} models of "
            f"{', '.join(grid)}: best {found.best_params}" if grid else
            f"no parameter left to search: one {spec.cli} model")
    say(f"bigkern: {what}{fixed_text}, held-out accuracy {found.best_score:.2%} "
        f"on {found.n_scored:,} pixels ({out.seconds['grid_search']:.1f} s)")
    return out


def _plan_text(bins: xr.Dataset) -> str:
    """The binning plan that ran, its reads of the data, and why a record was not used."""
    reads = bins.attrs["passes"]
    text = f"plan {bins.attrs['plan']}, {reads} read{'s' if reads != 1 else ''} of the data"
    note = str(bins.attrs.get("recorded", ""))
    if note.startswith("fallback: "):
        text += f" (recorded histograms not used: {note.removeprefix('fallback: ')})"
    elif note == "ok":
        text += " (the store's recorded histograms of the training half)"
    return text


def _samples(ds: xr.Dataset, features: list[str], target: str | None
             ) -> tuple[xr.DataArray, Any, Any, Any, str]:
    """X (named), y, the rows eligible, the pixel ids and the eligible pixels in words."""
    if target is None:
        s = stack_samples(ds, features, labelled_only=True)
        return s.as_dataarray(), s.y, s.mask, s.pixel, "labelled pixels"
    # target stacked with the features: one cube, so X and y share their chunks
    s = stack_samples(ds, [*features, target], labelled_only=False)
    X = xr.DataArray(s.X[:, :-1], dims=("sample", "feature"), coords={"feature": features})
    y = s.X[:, -1]
    return X, y, np.isfinite(y), s.pixel, f"pixels with a finite {target}"


def _fit_on_rows(spec: ModelSpec, ds: xr.Dataset, features: list[str], target: str | None,
                 params: dict[str, Any], search: bool, seed: int) -> FitOutcome:
    """The ``reduced`` engine: one lazy fit on the training half, one scoring pass."""
    fixed = dict(params)
    params.setdefault("random_state", seed)
    X, y, eligible, pixel, pixels = _samples(ds, features, target)
    out = FitOutcome(spec.cls(**params), "reduced", pixels, seed, search, fixed)
    train = held_out = eligible
    if search:
        train, held_out = random_split(pixel, eligible, fraction=0.5, seed=seed)
    say(f"bigkern: fitting {spec.cls.__name__} on {'a random half' if search else 'all'} of "
        f"the {pixels} ({len(features)} features: {' '.join(features)})")
    t0 = time.perf_counter()
    out.model = out.model.fit(X, y, mask=train)
    out.seconds["fit"] = time.perf_counter() - t0
    say(f"bigkern: {report_text(out)} ({out.seconds['fit']:.1f} s)")
    if not search:
        return out
    t1 = time.perf_counter()
    scored = holdout_score(out.model, X.data, y, mask=held_out)
    out.metric, out.score, out.n_scored = scored.metric, scored.score, scored.n_scored
    out.target_std, out.log_loss = scored.target_std, scored.log_loss
    out.seconds["score"] = time.perf_counter() - t1
    say(f"bigkern: held-out {score_text(out)} ({out.seconds['score']:.1f} s)")
    return out
