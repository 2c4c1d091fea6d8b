"""``bigkern fit``: its parameters checked before any file is read, then the fit and the model file.

:func:`check_fit_flags` refuses a ``--model``/``--target`` pair the registry does not
list, a ``--param`` out of range (its magnitude first, with no estimator imported; the
names and the domains the estimator declares only when ``--param`` is given) and a
``--features`` list that repeats a name or holds the target (exit code 2).
:func:`run_fit` fits on the opened scenes and writes the model.
"""

from __future__ import annotations

import argparse
from typing import Any

from bigkern.cli.checks import UsageError, check_magnitudes, check_params, parse_params

__all__ = ["check_fit_flags", "run_fit"]


def check_fit_flags(args: argparse.Namespace) -> dict[str, object]:
    """The ``fit`` command's parameters, checked before any file is read.

    The magnitudes of the widths and penalties are checked first, with no estimator
    imported; the names and the domains the estimator declares only when
    ``--param`` is given.
    """
    from bigkern.features import DEFAULT_FEATURES
    from bigkern.models.registry import cli_spec

    params = parse_params(args.param)
    try:
        cli_spec(args.model, args.target)  # the row alone: no estimator imported
    except ValueError as err:
        raise UsageError(str(err)) from None
    check_magnitudes(params, given={item.partition("=")[0]: item for item in args.param})
    if params:  # the estimator's declarations: scikit-learn is imported from here
        _fit_usage(args, params)
    features = list(args.features or DEFAULT_FEATURES)
    repeated = sorted({f for f in features if features.count(f) > 1})
    if repeated:
        raise UsageError(f"--features names {', '.join(repeated)} more than once")
    if args.target is not None and args.target in features:
        raise UsageError(f"--target {args.target} is also one of the features "
                         f"({' '.join(features)}): a model would only copy it; choose "
                         f"--features without it")
    return params


def _fit_usage(args: argparse.Namespace, params: dict[str, object]) -> None:
    """Check the ``fit`` parameters against the estimator's own declarations (imports it)."""
    from bigkern.jobs.fit_params import check_param_names
    from bigkern.models.registry import model_class

    try:
        cls = model_class(args.model, args.target)
        check_param_names(cls, params)
    except ValueError as err:
        raise UsageError(str(err)) from None
    check_params(cls, params, lists=_list_params(args, cls),
                 given={item.partition("=")[0]: item for item in args.param})


def _list_params(args: argparse.Namespace, cls: type) -> set[str]:
    """The parameters a JSON list may give: a searching model's, Nyström's."""
    from bigkern.models.registry import cli_spec

    if cli_spec(args.model, args.target).engine == "bins":  # it searches its grid
        return set() if args.no_search else set(cls().get_params())
    return {"omega", "lam"} if args.model == "nystrom-krr" else set()


def run_fit(args: argparse.Namespace, inputs: tuple[Any, Any],
            params: dict[str, object]) -> None:
    """Fit ``--model`` on the opened scenes (on the command's cluster) and write the model."""
    from bigkern.jobs.fit import DEFAULT_FEATURES, fit_scenes
    from bigkern.jobs.outcome import describe_fit
    from bigkern.models.persistence.model_files import save_model

    scenes, _ = inputs
    outcome = fit_scenes(scenes, model=args.model, features=args.features or DEFAULT_FEATURES,
                         target=args.target, params=params, search=not args.no_search,
                         seed=args.seed)
    path = save_model(outcome.model, args.out, overwrite=args.overwrite, inputs=[*args.store])
    print(f"bigkern: {describe_fit(outcome)}; model written to {path}")
