"""scikit-learn's own estimator checks, run over bigkern's estimators on the shared base.

Every failure left is listed below with the reason it is accepted. Estimators
not yet moved onto :class:`bigkern.models._base.BigkernEstimator` (the
regressors OHTRegressor, LOOKernelRidge, GaussianRLS, PeriodicKernelRidge) are
not listed here yet.
"""

from __future__ import annotations

import dask
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from bigkern.models import (
    BinnedKernelRidge,
    BinnedSVC,
    CompactKernelPCA,
    CompactKernelRidge,
    CompactLSSVC,
    CompactSVC,
    KernelRidgeClassifier,
)

FLOAT32_KERNEL = ("kernel blocks are evaluated in float32 (SIMD exp, 2x faster prediction): a "
                  "row's decision value depends on its block's BLAS path at ~1e-6 relative, "
                  "over the check's 1e-7")
NAN_ROWS = ("the check makes 9 of 30 rows NaN, over bigkern.max_nonfinite_fraction (25%), "
            "then predicts them; predict refuses rows that cannot be predicted rather than "
            "make up a class (decision_function gives NaN)")

EXPECTED_FAILURES: dict[type, dict[str, str]] = {
    BinnedSVC: {"check_methods_subset_invariance": FLOAT32_KERNEL,
                "check_estimators_pickle": NAN_ROWS},
    BinnedKernelRidge: {"check_methods_subset_invariance": FLOAT32_KERNEL,
                        "check_estimators_pickle": NAN_ROWS},
    KernelRidgeClassifier: {"check_methods_subset_invariance": FLOAT32_KERNEL},
}


def _expected(estimator) -> dict[str, str]:
    return EXPECTED_FAILURES.get(type(estimator), {})


@pytest.fixture(autouse=True)
def _local_scheduler():
    """Checks fit thousands of tiny models: dask's synchronous scheduler, no cluster."""
    with dask.config.set(scheduler="sync"):
        yield


@parametrize_with_checks(
    [BinnedSVC(), BinnedKernelRidge(), KernelRidgeClassifier(), CompactLSSVC(),
     CompactKernelRidge(), CompactSVC(), CompactKernelPCA()],
    expected_failed_checks=_expected,
)
def test_scikit_learn_conformance(estimator, check):
    check(estimator)


def test_no_estimator_has_more_than_three_expected_failures():
    assert all(len(v) <= 3 for v in EXPECTED_FAILURES.values())
