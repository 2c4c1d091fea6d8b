"""One vocabulary: every public estimator's parameters by ``inspect.signature``."""

from __future__ import annotations

import inspect
import re

import pytest
from sklearn.base import is_classifier, is_regressor

import bigkern
import bigkern.models
from bigkern.models.parameters import AVOIDED, PARAMETERS


def _estimators() -> list[type]:
    found = [getattr(bigkern.models, name) for name in bigkern.models.__all__]
    return [c for c in found if inspect.isclass(c) and hasattr(c, "fit")
            and hasattr(c, "get_params")]


ESTIMATORS = _estimators()


def _params(cls: type) -> list[str]:
    return list(inspect.signature(cls).parameters)


def _doc_of(cls: type, name: str) -> str:
    """The numpydoc entry of parameter ``name`` (following ``As in`` to its source)."""
    doc = inspect.getdoc(cls) or ""
    match = re.search(rf"^(?:\w+, )*{re.escape(name)}(?:, \w+)* : (.*?)(?=^\S|\Z)", doc,
                      re.M | re.S)
    if match:
        return match.group(1)
    shared = re.search(rf"^[\w, ]*\b{re.escape(name)}\b[\w, ]*\n\s+As (?:in|for) "
                       rf":class:`~?(?:bigkern\.models\.)?(\w+)`", doc, re.M)
    if shared:
        return _doc_of(getattr(bigkern.models, shared.group(1)), name)
    return ""


def test_there_are_the_estimators_the_package_names():
    assert len(ESTIMATORS) >= 15
    assert {c.__name__ for c in ESTIMATORS} <= set(bigkern.__all__)


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_every_parameter_is_in_the_glossary_and_none_is_avoided(cls):
    params = _params(cls)
    assert not set(params) & set(AVOIDED), (
        f"{cls.__name__} takes {sorted(set(params) & set(AVOIDED))}: "
        + "; ".join(f"{p} -> {AVOIDED[p]}" for p in set(params) & set(AVOIDED)))
    unknown = [p for p in params if p not in PARAMETERS]
    assert not unknown, (f"{cls.__name__}'s {unknown} are not in "
                         f"bigkern.models.parameters.PARAMETERS")


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_every_parameter_is_documented(cls):
    missing = [p for p in _params(cls) if not _doc_of(cls, p)]
    assert not missing, f"{cls.__name__}'s docstring does not describe {missing}"


def test_one_width_name():
    for cls in ESTIMATORS:
        assert "omega" in _params(cls), f"{cls.__name__} takes no kernel width named omega"


def test_C_is_only_ever_an_svm_penalty_and_the_radius_has_its_own_name():
    takes_c = [c for c in ESTIMATORS if "C" in _params(c)]
    assert {c.__name__ for c in takes_c} == {"BinnedSVC", "CompactSVC", "ReducedSVC", "ReducedSVR"}
    for cls in takes_c:
        doc = _doc_of(cls, "C").lower()
        assert "radius" not in doc and re.search(r"penalty|cost|weight", doc), (cls, doc)
    compact = [c for c in ESTIMATORS if c.__name__.startswith("Compact")]
    assert compact and all("radius" in _params(c) for c in compact)


def test_a_name_says_the_task():
    for cls in ESTIMATORS:
        est, name = cls(), cls.__name__
        says_classifier = name.endswith(("Classifier", "SVC"))
        says_regressor = name.endswith(("Regressor", "Ridge", "RLS", "SVR"))
        assert is_classifier(est) == says_classifier, name
        assert is_regressor(est) == says_regressor, name


def test_the_glossary_names_only_parameters_that_exist():
    used = {p for cls in ESTIMATORS for p in _params(cls)}
    assert set(PARAMETERS) == used, sorted(set(PARAMETERS) ^ used)


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_every_numeric_domain_is_the_parameter_tables(cls):
    """A number's range is written once: each declared Interval is the table's domain."""
    from sklearn.utils._param_validation import Interval

    from bigkern.models._constraints import domain

    for name, constraints in cls._parameter_constraints.items():
        for declared in (c for c in constraints if isinstance(c, Interval)):
            table = domain(name)
            assert (declared.type, declared.left, declared.right, declared.closed) == (
                table.type, table.left, table.right, table.closed), (cls.__name__, name)


def test_every_number_in_the_table_has_a_domain_and_the_command_limits_lie_in_it():
    from bigkern.cli.checks import PARAM_LIMITS

    for name, p in PARAMETERS.items():
        if p.command is not None:
            assert p.domain is not None and p.what, name
            lo, hi = p.command
            assert lo is None or lo in p.domain, name
            assert hi is None or hi in p.domain, name
    assert {name for name, p in PARAMETERS.items() if p.what} == set(PARAM_LIMITS)


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_parameters_after_the_first_two_are_keyword_only(cls):
    later = list(inspect.signature(cls).parameters.values())[2:]
    positional = [p.name for p in later if p.kind is not inspect.Parameter.KEYWORD_ONLY]
    assert not positional, f"{cls.__name__} takes {positional} by position"


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_a_fit_reports_under_one_name(cls):
    """Fit-time diagnostics are ``fit_report_`` in every estimator: no other ``*_report_``."""
    source = inspect.getsource(inspect.getmodule(cls))
    others = set(re.findall(r"\bself\.(\w+_report_)\b", source)) - {"fit_report_"}
    assert not others, f"{cls.__name__}'s module sets {sorted(others)}"
