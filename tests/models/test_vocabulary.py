"""One vocabulary: every public estimator's parameters by ``inspect.signature``."""

from __future__ import annotations

import inspect
import re

import pytest
from sklearn.base import is_classifier, is_regressor

import bigkern
import bigkern.models
from bigkern.models.vocabulary import AVOIDED, PARAMETERS


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
                         f"bigkern.models.vocabulary.PARAMETERS")


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_every_parameter_is_documented(cls):
    missing = [p for p in _params(cls) if not _doc_of(cls, p)]
    assert not missing, f"{cls.__name__}'s docstring does not describe {missing}"


def test_one_width_name():
    for cls in ESTIMATORS:
        widths = {p for p in _params(cls) if p in ("omega", "omegas")}
        assert widths, f"{cls.__name__} takes no Gaussian width named omega/omegas"


def test_C_is_only_ever_an_svm_penalty_and_the_radius_has_its_own_name():
    takes_c = [c for c in ESTIMATORS if "C" in _params(c)]
    assert {c.__name__ for c in takes_c} == {"BinnedSVC", "ReducedSVC", "ReducedSVR"}
    for cls in takes_c:
        doc = _doc_of(cls, "C").lower()
        assert "radius" not in doc and re.search(r"penalty|cost|weight", doc), (cls, doc)
    compact = [c for c in ESTIMATORS if c.__name__.startswith("Compact")]
    assert compact and all("radius" in _params(c) and "C" not in _params(c) for c in compact)


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
