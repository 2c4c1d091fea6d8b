"""The Newton step of the smooth reduced SVM/SVR when round-off breaks Cholesky."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from bigkern.errors import IllConditionedWarning
from bigkern.solvers.newton.smooth_svm import newton_direction


def test_cholesky_path_solves_exactly():
    rng = np.random.default_rng(0)
    B = rng.normal(size=(50, 6))
    H = np.eye(6) + 3.0 * B.T @ B
    g = rng.normal(size=6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        d = newton_direction(H, g, 3.0)
    np.testing.assert_allclose(H @ d, g, rtol=1e-10)


def test_numerically_indefinite_hessian_falls_back_with_a_warning_naming_C():
    C = 1e20
    v = np.array([1.0, 1.0])
    H = np.eye(2) + C * np.outer(v, v)  # the identity is lost to round-off: singular
    g = np.array([1.0, -1.0])
    with pytest.warns(IllConditionedWarning, match="C=1e\\+20"):
        d = newton_direction(H, g, C)
    assert np.all(np.isfinite(d))
    # the direction orthogonal to v sees the identity only (eigenvalue 1)
    np.testing.assert_allclose(d, g, atol=1e-12)


def test_reduced_svr_at_a_huge_C_fits_instead_of_raising():
    from bigkern.models import ReducedSVR

    rng = np.random.default_rng(1)
    X = rng.normal(size=(400, 3))
    y = np.sin(X[:, 0]) + 0.01 * rng.normal(size=400)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = ReducedSVR(omega=5.0, C=1e20, size=200, random_state=0).fit(X, y)
    assert any(issubclass(w.category, IllConditionedWarning) for w in caught)
    assert np.all(np.isfinite(model.predict(X)))
