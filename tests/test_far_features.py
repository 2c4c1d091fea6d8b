"""A feature that decides the Gaussian kernel alone is named (issue 26's scaling warning).

What passing proves: a heavy-tailed feature, whose robust σ is a small part of its
spread, is named with its range when a reduced model standardizes it; well-scaled
features, and ``standardize=False``, warn about nothing.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from bigkern import BigkernWarning, NystromKernelRidge, ReducedSVC, ReducedSVR
from bigkern.features.scaling import FAR_SCALED, far_features


def _data(heavy: bool) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(1500, 3)), columns=["NDAI", "SD", "CORR"])
    if heavy:
        X["SD"] = rng.standard_cauchy(1500)
    return X, np.where(X["NDAI"] > 0, 1, -1)


def _caught(model, X, y) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(X, y)
    return [str(w.message) for w in caught if issubclass(w.category, BigkernWarning)]


def test_far_features_names_each_feature_beyond_the_limit():
    z = np.array([[0.0, -FAR_SCALED - 1, FAR_SCALED], [1.0, 0.0, 0.0]])
    assert far_features(z, ["a", "b", "c"]) == ["b (-21 … 0)"]
    assert far_features(z) == ["f1 (-21 … 0)"]
    assert far_features(np.zeros((0, 3))) == []


@pytest.mark.parametrize("make", [
    lambda: ReducedSVC(size=150, random_state=0),
    lambda: ReducedSVC(size=150, loss="squared_hinge", random_state=0),
    lambda: ReducedSVR(size=150, random_state=0),
    lambda: NystromKernelRidge(omega=1.0, lam=1.0, size=150, random_state=0),
])
def test_a_heavy_tailed_feature_is_named_with_its_range(make):
    X, y = _data(heavy=True)
    messages = _caught(make(), X, y)
    assert len(messages) == 1, messages
    assert "1 feature(s) reach beyond ±20 robust σ in the reduced set: SD (" in messages[0]
    assert "NDAI" not in messages[0] and "CORR" not in messages[0]
    assert _caught(make(), *_data(heavy=False)) == []


def test_unstandardized_features_are_the_users_choice():
    X, y = _data(heavy=True)
    assert _caught(ReducedSVC(size=150, standardize=False, random_state=0), X, y) == []
