"""The parameters of a fit job: names checked, values fixed or searched.

A parameter is given one way: one value fixes it, a list of values makes it a
candidate set (searched over the bins, or chosen among by the estimator). The
grid a binned model searches is the registry's default grid less the fixed
parameters, with the candidates given in place of the defaults.
"""

from __future__ import annotations

import difflib
from typing import Any

from bigkern.models.registry import default_grid

__all__ = ["check_param_names", "search_grid", "split_candidates"]


def check_param_names(cls: type, params: dict[str, Any]) -> None:
    """Raise a ValueError naming the valid parameters when ``params`` has an unknown one.

    Parameters
    ----------
    cls : type
        A scikit-learn estimator class constructible without arguments.
    params : dict
        Parameters to pass to it.

    Examples
    --------
    >>> from bigkern.models import BinnedSVC
    >>> check_param_names(BinnedSVC, {"omega": 1.0})
    >>> check_param_names(BinnedSVC, {"omgea": 1.0})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: unknown parameter 'omgea' of BinnedSVC (did you mean omega?); valid parameters: ...
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


def split_candidates(params: dict[str, Any]) -> tuple[dict[str, Any], dict[str, list[Any]]]:
    """``params`` as (fixed values, candidate lists).

    Examples
    --------
    >>> split_candidates({"omega": 0.8, "C": [1, 10]})
    ({'omega': 0.8}, {'C': [1, 10]})
    """
    fixed = {k: v for k, v in params.items() if not isinstance(v, list)}
    candidates = {k: list(v) for k, v in params.items() if isinstance(v, list)}
    return fixed, candidates


def search_grid(model: str, fixed: dict[str, Any] | None = None,
                grid: dict[str, list[Any]] | None = None,
                candidates: dict[str, list[Any]] | None = None, *,
                n_features: int | None = None) -> dict[str, list[Any]]:
    """The grid a binned model searches when ``fixed`` parameters are fixed.

    Parameters
    ----------
    model : str
        A ``--model`` name with a default grid (``svc``, ``ridge``).
    fixed : dict, optional
        Parameters fixed to one value: left out of the default grid.
    grid : dict, optional
        The grid to search instead of the registry's (less ``fixed``).
    candidates : dict, optional
        Candidates given with the parameters: they replace the default
        candidates of their parameter, or join ``grid``.
    n_features : int, optional
        The number of features: the default grid's widths scale with it
        (:func:`bigkern.models.registry.default_grid`).

    Returns
    -------
    dict
        Parameter → candidates; empty when every parameter of the grid is fixed.

    Raises
    ------
    ValueError
        A parameter is given two ways: fixed and searched, or both in ``grid``
        and in ``candidates``.

    Examples
    --------
    >>> search_grid("svc", {"omega": 0.8}, candidates={"C": [1.0, 10.0]})
    {'C': [1.0, 10.0]}
    >>> search_grid("ridge", {"lam": 0.01}, n_features=8)["omega"][:3]
    [0.707, 1.0, 1.41]
    """
    fixed, candidates = fixed or {}, candidates or {}
    if grid is None:
        grid = {k: v for k, v in default_grid(model, n_features).items() if k not in fixed}
        return {**grid, **candidates}
    for other, what in ((fixed, "a fixed value"), (candidates, "a list of candidates")):
        both = sorted(set(grid) & set(other))
        if both:
            raise ValueError(f"{', '.join(both)} given both as {what} "
                             f"({', '.join(f'{k}={other[k]!r}' for k in both)}) and as a grid "
                             f"to search: give each parameter one way")
    return {**{k: list(v) for k, v in grid.items()}, **candidates}
