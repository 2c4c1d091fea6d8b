"""Every estimator declares its parameters' domains as scikit-learn does, and fit checks them.

Each public estimator (a row of :mod:`bigkern.models.registry`) lists every constructor
parameter in ``_parameter_constraints``; ``fit`` (and ``fit_bins``) validate them first,
so a value outside its domain raises scikit-learn's ``InvalidParameterError`` (a
``ValueError``) naming the parameter and the estimator — at fit time, not at
construction (scikit-learn's rule: ``__init__`` only stores). What a declaration cannot
say — the values inside a list of candidates — is checked by ``fit`` too, naming the
parameter and the entry.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.utils._param_validation import InvalidParameterError, StrOptions, make_constraint
from sklearn.utils.estimator_checks import check_param_validation

from bigkern.models.registry import ModelSpec, specs

SPECS = specs()
IDS = [spec.name for spec in SPECS]


def _data(spec: ModelSpec) -> tuple[np.ndarray, np.ndarray | None]:
    """A tiny numpy data set the estimator could fit (points on [0, 1) for the periodic one)."""
    rng = np.random.default_rng(0)
    if spec.name == "PeriodicKernelRidge":
        x = rng.uniform(0, 1, (12, 1))
        return x, np.sin(2 * np.pi * x[:, 0])
    X = rng.normal(size=(12, 2))
    if spec.target == "class":
        return X, np.where(X[:, 0] > 0, 1, -1)
    if spec.target == "value":
        return X, X[:, 0] - X[:, 1]
    return X, None


def _refused(spec: ModelSpec, name: str, value: Any) -> InvalidParameterError:
    """The error of fitting ``spec``'s estimator with ``name=value`` (construction is fine)."""
    est = spec.cls(**{**spec.check_params, name: value})
    with pytest.raises(InvalidParameterError) as caught:
        est.fit(*_data(spec))
    return caught.value


def _says(err: Exception, spec: ModelSpec, name: str) -> None:
    assert re.search(rf"The '{name}' parameter of {spec.name} must be .* Got .* instead",
                     str(err)), str(err)


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_every_parameter_has_a_declared_constraint(spec):
    est = spec.cls(**spec.check_params)
    assert set(est._parameter_constraints) == set(est.get_params()), spec.name
    for name, constraints in est._parameter_constraints.items():
        assert constraints and constraints != "no_validation", (spec.name, name)
        for constraint in constraints:
            make_constraint(constraint)  # one scikit-learn understands
        assert any(make_constraint(c).is_satisfied_by(est.get_params()[name])
                   for c in constraints), f"{spec.name}: the default {name} is refused"


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_scikit_learn_param_validation_check(spec):
    """scikit-learn's own check: a value of no valid type, then an invalid one of each
    declared kind, for every parameter, refused by fit (and fit_transform) naming it."""
    check_param_validation(spec.name, spec.cls(**spec.check_params))


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
@pytest.mark.parametrize("bad", [-1.0, 0.0, np.inf, np.nan, "wide"])
def test_a_bad_gaussian_width_is_refused_at_fit_time(spec, bad):
    assert "omega" in spec.cls().get_params(), f"{spec.name} has no kernel width"
    _says(_refused(spec, "omega", bad), spec, "omega")


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_a_zero_penalty_is_refused_at_fit_time(spec):
    params = spec.cls().get_params()
    names = [n for n in ("C", "lam", "epsilon") if n in params]
    if not names:
        pytest.skip(f"{spec.name} has no penalty")
    for name in names:
        if name == "epsilon":  # a tube may be 0, not negative
            _says(_refused(spec, name, -0.1), spec, name)
        else:
            _says(_refused(spec, name, 0.0), spec, name)
            _says(_refused(spec, name, -1.0), spec, name)


def _options(spec: ModelSpec) -> list[str]:
    return [name for name, constraints in spec.cls._parameter_constraints.items()
            if any(isinstance(c, StrOptions) for c in constraints)]


@pytest.mark.parametrize("spec", [s for s in SPECS if _options(s)],
                         ids=[s.name for s in SPECS if _options(s)])
def test_an_unknown_option_is_refused_at_fit_time(spec):
    for name in _options(spec):
        err = _refused(spec, name, "no-such-option")
        _says(err, spec, name)
        assert "a str among" in str(err), str(err)  # the valid options are listed


_CANDIDATES = [
    ("NystromKernelRidge", "omega", [0.5, -1.0], r"omega\[1\] = -1\.0"),
    ("NystromKernelRidgeClassifier", "lam", [], r"lam must be one number or a non-empty"),
    ("OHTRegressor", "omega", (1.0, 0.0), r"omega\[1\] = 0\.0"),
    ("LOOKernelRidge", "omega", [np.nan], r"omega\[0\] = nan"),
    ("LOOKernelRidge", "lam", [1.0, -5.0], r"lam\[1\] = -5\.0"),
    ("GaussianRLS", "lam", [1e-3, np.inf], r"lam\[1\] = inf"),
    ("GaussianRLS", "lam", [1e-3, 0.0], r"lam\[1\] = 0\.0"),
    ("PeriodicKernelRidge", "lam", [1.0, 0.0], r"lam\[1\] = 0\.0"),
    ("PeriodicKernelRidge", "omega", [0.5, -2.0], r"omega\[1\] = -2\.0"),
]


@pytest.mark.parametrize(("model", "name", "value", "says"), _CANDIDATES,
                         ids=[f"{m}-{n}" for m, n, _, _ in _CANDIDATES])
def test_lists_of_candidates_are_declared_and_each_value_is_checked(model, name, value, says):
    spec = next(s for s in SPECS if s.name == model)
    est = spec.cls(**{**spec.check_params, name: value})
    est._validate_params()  # a list is a valid type: its values are fit's to check
    with pytest.raises(ValueError, match=says):
        est.fit(*_data(spec))


def test_candidates_fit_and_one_value_still_does():
    from bigkern.models import NystromKernelRidge, OHTRegressor

    spec = next(s for s in SPECS if s.cls is NystromKernelRidge)
    X, y = _data(spec)
    many = NystromKernelRidge(omega=[0.5, 1.0], lam=np.array([1e-3, 1e-1]), size=6,
                              random_state=0).fit(X, y)
    assert many.omega_ in (0.5, 1.0) and many.cv_scores_.shape == (2, 2)
    x = np.linspace(-1, 1, 40)[:, None]
    assert OHTRegressor(omega=1.0, random_state=1).fit(x, np.sin(3 * x[:, 0])).omega_ == 1.0


def test_construction_and_set_params_store_anything():
    """scikit-learn's rule: nothing is checked before fit (clone and grids rely on it)."""
    from bigkern.models import BinnedSVC

    est = BinnedSVC(omega=-1.0, C="x")
    assert clone(est).get_params()["omega"] == -1.0
    est.set_params(omega=0.5, C=1.0)
    est._validate_params()


CLI_SPECS = [s for s in SPECS if s.cli]


@pytest.mark.parametrize("spec", CLI_SPECS, ids=[s.name for s in CLI_SPECS])
def test_the_command_refuses_what_the_estimator_declares_invalid(spec):
    """``bigkern fit --param`` reads the same declarations: a value outside a declared
    interval or options is refused before any file is read, naming the flag."""
    from sklearn.utils._param_validation import Interval, generate_invalid_param_val

    from bigkern.cli.checks import UsageError, check_params

    for name, constraints in spec.cls._parameter_constraints.items():
        for constraint in constraints:
            if isinstance(constraint, Interval):
                bad = generate_invalid_param_val(constraint)
            elif isinstance(constraint, StrOptions):
                bad = "no-such-option"
            else:
                continue
            with pytest.raises(UsageError, match=rf"^--param {name}="):
                check_params(spec.cls, {name: bad})
            _says(_refused(spec, name, bad), spec, name)
