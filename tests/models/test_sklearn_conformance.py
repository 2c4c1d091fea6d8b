"""scikit-learn's own estimator checks, run over bigkern's estimators on the shared base.

Every failure left is listed below with the reason it is accepted.

:class:`~bigkern.models.PeriodicKernelRidge` takes points on a circle, shape
``(n,)`` or ``(n, 1)``, and declares it as scikit-learn's own
``IsotonicRegression`` does (``one_d_array=True, two_d_array=False``).
scikit-learn's ``check_estimator`` skips such an estimator outright (every
check builds k-column ``X``; with ``one_d_array`` and ``two_d_array`` both
true, checks such as ``check_fit2d_1feature`` index the 1-D ``X`` they made as
2-D and crash). The checks that apply to points on a circle are mirrored at the
end of this module, one test each.
"""

from __future__ import annotations

import pickle

import dask
import numpy as np
import pytest
import scipy.sparse
from sklearn.base import clone
from sklearn.exceptions import DataConversionWarning, NotFittedError, SkipTestWarning
from sklearn.utils.estimator_checks import check_estimator, parametrize_with_checks

from bigkern.models import (
    BinnedKernelRidgeClassifier,
    BinnedSVC,
    NystromKernelRidge,
    NystromKernelRidgeClassifier,
    OHTRegressor,
    PeriodicKernelRidge,
    ReducedSVC,
    ReducedSVR,
)
from bigkern.models.registry import check_instances

# scikit-learn's checks fit the compact models on a few random rows, some of which have no
# neighbour within the default support radius: the model says so (a BigkernWarning, an error
# elsewhere in the suite); here that is the data of the check, not a fault
pytestmark = pytest.mark.filterwarnings(
    "ignore:.*have no neighbour within radius:bigkern.errors.BigkernWarning")

NAN_ROWS = ("the check makes 9 of 30 rows NaN, over bigkern.max_nonfinite_fraction (25%), "
            "then predicts them; predict refuses rows that cannot be predicted rather than "
            "make up a class (decision_function gives NaN)")
TINY_CV = ("10 samples in 4-D: two-fold CV halves of 5 are interpolated by the Gaussian basis "
           "at every default width (the stable set has 5 components, so OHT's noise variance "
           "(21) is undefined) and fit says so rather than pick a width it could not score; "
           "the check sets no seed: the instance has random_state=1, one of the 8 splits in "
           "10 (seeds 0-9) where this happens, so that the run is reproducible")

UNDERFIT = ("the default reduced set (10% of the rows: 20 centers) at omega = 1 in the check's "
            "10 standardized features underfits its 200 rows (training R^2 about 0.2 < 0.5; "
            "0.5-0.64 with 100 centers)")

EXPECTED_FAILURES: dict[type, dict[str, str]] = {
    # (check_methods_subset_invariance failed while a row's float32 decision value depended
    # on its kernel block's BLAS path; the fused kernel evaluates every row on its own)
    BinnedSVC: {"check_estimators_pickle": NAN_ROWS},
    BinnedKernelRidgeClassifier: {"check_estimators_pickle": NAN_ROWS},
    OHTRegressor: {"check_regressors_no_decision_function": TINY_CV},
    ReducedSVC: {"check_estimators_pickle": NAN_ROWS},
    ReducedSVR: {"check_estimators_pickle": NAN_ROWS, "check_regressors_train": UNDERFIT},
    NystromKernelRidge: {"check_estimators_pickle": NAN_ROWS,
                         "check_regressors_train": UNDERFIT},
    NystromKernelRidgeClassifier: {"check_estimators_pickle": NAN_ROWS},
}


def _expected(estimator) -> dict[str, str]:
    return EXPECTED_FAILURES.get(type(estimator), {})


@pytest.fixture(autouse=True)
def _local_scheduler():
    """Checks fit thousands of tiny models: dask's synchronous scheduler, no cluster."""
    with dask.config.set(scheduler="sync"):
        yield


@parametrize_with_checks(check_instances(), expected_failed_checks=_expected)
def test_scikit_learn_conformance(estimator, check):
    check(estimator)


def test_no_estimator_has_more_than_three_expected_failures():
    assert all(len(v) <= 3 for v in EXPECTED_FAILURES.values())


# -- PeriodicKernelRidge: points on a circle (see the module docstring) ------------------------


def test_periodic_declares_one_d_input_and_scikit_learn_skips_it():
    """Only ``check_estimator_cloneable`` runs (and passes, in the list above)."""
    tags = PeriodicKernelRidge().__sklearn_tags__()
    assert tags.input_tags.one_d_array and not tags.input_tags.two_d_array
    with pytest.warns(SkipTestWarning, match="Can't test estimator PeriodicKernelRidge"):
        run = check_estimator(PeriodicKernelRidge(), on_fail=None)
    assert [(r["check_name"], r["status"]) for r in run] == [("check_estimator_cloneable",
                                                              "passed")]


def _circle(n: int = 60, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 1, n)
    return x, np.sin(2 * np.pi * x) + 0.1 * rng.standard_normal(n)


def _fitted(**params) -> PeriodicKernelRidge:
    x, y = _circle()
    return PeriodicKernelRidge(omega=0.5, lam=1e-3, **params).fit(x, y)


def check_nan_inf():
    x, y = _circle()
    for bad in (np.nan, np.inf):
        xb = x.copy()
        xb[0] = bad
        with pytest.raises(ValueError, match=r"NaN|inf"):
            PeriodicKernelRidge().fit(xb, y)
        with pytest.raises(ValueError, match=r"NaN|inf"):
            _fitted().predict(xb)


def check_sparse_complex_empty():
    x, y = _circle()
    with pytest.raises(TypeError, match="Sparse data was passed"):
        PeriodicKernelRidge().fit(scipy.sparse.csr_matrix(x[:, None]), y)
    with pytest.raises(ValueError, match="Complex data not supported"):
        PeriodicKernelRidge().fit(x.astype(complex), y)
    with pytest.raises(ValueError, match=r"0 sample\(s\)"):
        PeriodicKernelRidge().fit(np.empty(0), np.empty(0))
    with pytest.raises(ValueError, match=r"0 feature\(s\)"):
        PeriodicKernelRidge().fit(np.empty((5, 0)), y[:5])


def check_one_sample_and_requires_y():
    with pytest.raises(ValueError, match="n_samples=1"):
        PeriodicKernelRidge().fit([0.5], [1.0])
    with pytest.raises(ValueError, match="requires y to be passed, but the target y is None"):
        PeriodicKernelRidge().fit(_circle()[0], None)


def check_n_features_in():
    x, y = _circle()
    model = PeriodicKernelRidge()
    with pytest.raises(ValueError, match="takes one column"):
        model.fit(np.c_[x, x, x], y)
    with pytest.raises(NotFittedError):  # a refused fit leaves it unfitted
        model.predict(x)
    model.fit(x, y)
    assert model.n_features_in_ == 1 and not hasattr(model, "feature_names_in_")
    with pytest.raises(ValueError, match="expecting 1 features"):
        model.predict(np.c_[x, x])
    with pytest.raises(ValueError, match="Reshape your data"):
        model.predict(0.5)


def check_not_fitted():
    with pytest.raises(NotFittedError):
        PeriodicKernelRidge().predict(_circle()[0])


def check_supervised_y_2d():
    x, y = _circle()
    with pytest.warns(DataConversionWarning, match="column-vector y"):
        column = PeriodicKernelRidge().fit(x, y[:, None])
    np.testing.assert_array_equal(column.predict(x), PeriodicKernelRidge().fit(x, y).predict(x))


def check_fit_returns_self_idempotent_and_params_untouched():
    x, y = _circle()
    model = PeriodicKernelRidge(omega=0.5, lam=1e-3, n_bins=20)
    params = model.get_params()
    assert model.fit(x, y) is model
    assert model.get_params() == params
    first = model.predict(x)
    np.testing.assert_array_equal(model.fit(x, y).predict(x), first)
    np.testing.assert_array_equal(clone(model).fit(x, y).predict(x), first)


def check_pickle():
    model = _fitted(n_bins=20)
    x, _ = _circle(30, seed=1)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(model)).predict(x), model.predict(x))


def check_dtypes_and_lists():
    x, y = _circle()
    ref = _fitted().predict(x)
    model = PeriodicKernelRidge(omega=0.5, lam=1e-3)
    np.testing.assert_allclose(model.fit(x.astype(np.float32), y).predict(x), ref, rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_array_equal(model.fit(x.tolist(), y.tolist()).predict(x.tolist()), ref)
    np.testing.assert_array_equal(model.fit(x[:, None], y).predict(x[:, None]), ref)


def check_subset_and_order_invariance():
    model = _fitted(n_bins=20)
    x, _ = _circle(40, seed=2)
    full = model.predict(x)
    np.testing.assert_allclose(np.concatenate([model.predict(x[:13]), model.predict(x[13:])]),
                               full, rtol=1e-12, atol=1e-12)
    order = np.random.default_rng(3).permutation(len(x))
    np.testing.assert_allclose(model.predict(x[order]), full[order], rtol=1e-12, atol=1e-12)


def check_regressors_train():
    x, y = _circle(200)
    with pytest.raises(ValueError):
        PeriodicKernelRidge().fit(x, y[:-1])
    model = PeriodicKernelRidge(omega=0.5, lam=1e-3).fit(x, y)
    assert model.predict(x).shape == y.shape and model.score(x, y) > 0.5
    assert not hasattr(model, "decision_function") and not hasattr(model, "predict_proba")


ONE_D_CHECKS = [check_nan_inf, check_sparse_complex_empty, check_one_sample_and_requires_y,
                check_n_features_in, check_not_fitted, check_supervised_y_2d,
                check_fit_returns_self_idempotent_and_params_untouched, check_pickle,
                check_dtypes_and_lists, check_subset_and_order_invariance, check_regressors_train]


@pytest.mark.parametrize("check", ONE_D_CHECKS, ids=lambda c: c.__name__)
def test_periodic_kernel_ridge_on_points_of_a_circle(check):
    check()
