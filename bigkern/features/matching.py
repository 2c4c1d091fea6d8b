"""Where a model meets data: the features it was fitted on, by name and in order.

A model fitted on ``['NDAI', 'logSD', 'CORR']`` computes its decision from
three columns in that order; given the same three under other names, or in
another order, it would still compute a mask, silently wrong. So every door
by which scenes reach a fitted model (:func:`bigkern.predict_scenes`,
``bigkern predict``) asks :func:`model_features` which features to read, and
:func:`with_model_features` derives those the model was fitted on but the
scenes do not store (``logSD`` from ``SD``, as :data:`DERIVED` records).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import xarray as xr

from bigkern.features.derived import DERIVED_FROM_ATTR, with_features
from bigkern.features.variables import DERIVED

__all__ = ["model_features", "stored_sources", "with_model_features"]


def model_features(model: Any, features: Sequence[str] | None = None) -> list[str]:
    """The features to give ``model``, in its order; ``features`` checked against its own.

    Parameters
    ----------
    model : fitted estimator
        With ``n_features_in_`` and, when it was fitted on named features,
        ``feature_names_in_``.
    features : sequence of str, optional
        The caller's names. Default: the model's.

    Returns
    -------
    list of str

    Raises
    ------
    ValueError
        ``features`` differ from the names the model was fitted on (other names,
        missing or extra ones, or the same ones in another order: the message
        says which), or, for a model fitted without names, their number differs.

    Examples
    --------
    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> model = SimpleNamespace(n_features_in_=3,
    ...                         feature_names_in_=np.array(["NDAI", "logSD", "CORR"], object))
    >>> model_features(model)
    ['NDAI', 'logSD', 'CORR']
    >>> model_features(model, ["CORR", "logSD", "NDAI"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: features ['CORR', 'logSD', 'NDAI'] are the model's in another order: ...
    """
    names = getattr(model, "feature_names_in_", None)
    fitted = None if names is None else [str(f) for f in names]
    if features is None:
        if fitted is None:
            raise ValueError(f"the {type(model).__name__} was fitted without feature names: "
                             f"pass features=[...], {model.n_features_in_} scene variables in "
                             f"the order of its training columns")
        return fitted
    given = [str(f) for f in features]
    if fitted is None:
        if len(given) != model.n_features_in_:
            raise ValueError(f"{len(given)} features given; the {type(model).__name__} takes "
                             f"{model.n_features_in_}")
        return given
    if given == fitted:
        return given
    hint = "(leave features out to use them)"
    if sorted(given) == sorted(fitted):
        raise ValueError(f"features {given} are the model's in another order: it was fitted "
                         f"on {fitted}, in that order {hint}")
    missing = [f for f in fitted if f not in given]
    extra = [f for f in given if f not in fitted]
    parts = ([f"lack {missing}"] if missing else []) + ([f"add {extra}"] if extra else [])
    raise ValueError(f"features {given} {' and '.join(parts)}: the {type(model).__name__} "
                     f"was fitted on {fitted}, in that order {hint}")


def stored_sources(ds: xr.Dataset, features: Sequence[str]) -> list[str]:
    """The variables of ``ds`` that ``features`` are read from: derived ones by their source.

    A feature is derived when ``ds`` lacks it, or when :func:`~bigkern.with_features`
    added it (it carries ``bigkern_derived_from``); a store's own ``logSD`` is read as is.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> ds = xr.Dataset({v: ("x", np.ones(2)) for v in ["NDAI", "SD", "CORR"]})
    >>> stored_sources(ds, ["NDAI", "logSD", "CORR"])
    ['NDAI', 'SD', 'CORR']
    """
    out: list[str] = []
    for name in features:
        if name in ds.data_vars:  # stored, or derived here (and marked so)
            source = str(ds[name].attrs.get(DERIVED_FROM_ATTR, name))
        else:
            source = DERIVED[name][0] if name in DERIVED else name
        if source not in out:
            out.append(source)
    return out


def with_model_features(ds: xr.Dataset, features: Sequence[str]) -> xr.Dataset:
    """``ds`` with each of ``features`` it lacks but can derive (``logSD`` from ``SD``), lazily.

    A variable the scenes store under a derived feature's name is used as stored.

    Examples
    --------
    >>> from bigkern.datasets import make_scenes
    >>> ds = make_scenes(1, (8, 8), radiances=False)
    >>> "logSD" in with_model_features(ds, ["NDAI", "logSD", "CORR"])
    True
    """
    wanted = [f for f in features if f not in ds.data_vars and f in DERIVED
              and DERIVED[f][0] in ds.data_vars]
    return with_features(ds, wanted) if wanted else ds
