"""Centers by approximate ridge leverage scores: exact on all rows, chunking-free, counted reads."""

from __future__ import annotations

import dask
import dask.array as da
import numpy as np
import pytest

from bigkern.kernels import Basis
from bigkern.reduce.reduced.leverage_scores import (
    exact_leverage_scores,
    round_sizes,
    round_state,
    scores_on_rows,
)
from bigkern.reduce.reduced.reduced_set import select_reduced_set


@pytest.fixture(autouse=True)
def _sync():
    with dask.config.set(scheduler="sync"):
        yield


def _two_clusters(n: int = 600, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A tight cluster of 90 % of the rows and a wide one of 10 %."""
    rng = np.random.default_rng(seed)
    wide = rng.random(n) < 0.1
    X = np.where(wide[:, None], rng.normal(4.0, 2.0, (n, 2)), rng.normal(0.0, 0.2, (n, 2)))
    y = np.where(X[:, 0] + 0.3 * rng.standard_normal(n) > 0.2, 1, -1)
    return X, y


def test_scores_on_every_row_are_the_exact_ridge_leverage_scores():
    X, _ = _two_clusters(120)
    offset, scale = np.array([0.5, -1.0]), np.array([2.0, 1.5])
    template = Basis.checked(np.zeros((1, 2)), 0.7, 2, offset, scale, clip=5.0)
    for lam in (1e-3, 1.0):
        state = round_state(template, X, np.ones(len(X)), lam)
        got = scores_on_rows(X, np.ones(len(X), dtype=bool), state)
        Z = np.clip((X - offset) / scale, -5.0, 5.0)
        exact = exact_leverage_scores(Z, template.kernel, lam)
        # one Cholesky solve against one LU solve of the same n × n system
        np.testing.assert_allclose(got, exact, rtol=1e-8, atol=1e-10)


def test_scores_on_a_quarter_of_the_rows_bound_or_estimate_the_exact_ones():
    X, _ = _two_clusters(200)
    template = Basis.checked(np.zeros((1, 2)), 1.0, 2)
    exact = exact_leverage_scores(X, template.kernel, 0.1)
    every = np.ones(len(X), dtype=bool)
    # unweighted: x_Jᵀ (K_JJ + λI)⁻¹ x_J ≤ xᵀ (K + λI)⁻¹ x for a principal block J, so
    # the residual, and the score, is at least the exact one (about 3.5 times here)
    bound = scores_on_rows(X, every, round_state(template, X[::4], np.ones(50), 0.1))
    assert (bound >= exact - 1e-9).all() and np.median(bound / exact) > 2
    # weighted by the inclusion probability 1/4 (BLESS's λ·diag(π)): an estimate
    approx = scores_on_rows(X, every, round_state(template, X[::4], np.full(50, 0.25), 0.1))
    assert 0.8 < np.median(approx / exact) < 1.25
    assert np.corrcoef(np.argsort(np.argsort(approx)), np.argsort(np.argsort(exact)))[0, 1] \
        > 0.95


@pytest.mark.determinism
@pytest.mark.parametrize("stratified", [True, False])
def test_the_draw_is_the_same_for_numpy_and_any_chunking(stratified):
    X, y = _two_clusters(700)
    X[::53, 1] = np.nan
    ref = select_reduced_set(X, y, size=60, stratified=stratified, random_state=5,
                             centers="leverage", lam=1e-2, scale_rows=200)
    assert ref.centers == "leverage" and ref.size == 60
    for rows in ((700,), (100,) * 7, (1, 250, 3, 446)):
        got = select_reduced_set(da.from_array(X, chunks=(rows, 2)),
                                 da.from_array(y, chunks=(rows,)), size=60,
                                 stratified=stratified, random_state=5, centers="leverage",
                                 lam=1e-2, scale_rows=200)
        np.testing.assert_array_equal(got.index, ref.index)
        np.testing.assert_allclose(got.scores, ref.scores, rtol=1e-10)
        np.testing.assert_allclose(got.effective_dimension, ref.effective_dimension,
                                   rtol=1e-10)
    other = select_reduced_set(X, y, size=60, stratified=stratified, random_state=6,
                               centers="leverage", lam=1e-2)
    assert not np.array_equal(other.index, ref.index)


def test_leverage_draws_the_sparse_region_more_than_a_uniform_draw():
    X, y = _two_clusters(2000)
    wide = np.abs(X).max(axis=1) > 1.0
    uniform = select_reduced_set(X, y, size=60, stratified=False, random_state=0)
    leverage = select_reduced_set(X, y, size=60, stratified=False, random_state=0,
                                  centers="leverage", lam=1e-2,
                                  score_basis=Basis.checked(np.zeros((1, 2)), 0.5, 2))
    share_uniform = wide[uniform.index].mean()
    share_leverage = wide[leverage.index].mean()
    assert share_uniform < 0.2 < 0.5 < share_leverage, (share_uniform, share_leverage)


def test_stratified_leverage_keeps_the_class_shares():
    X, y = _two_clusters(800)
    rs = select_reduced_set(X, y, size=50, random_state=1, centers="leverage", lam=1e-2)
    uniform = select_reduced_set(X, y, size=50, random_state=1)
    np.testing.assert_array_equal(rs.drawn_per_class, uniform.drawn_per_class)


def test_the_reads_are_counted():
    X, y = _two_clusters(400)
    read = []

    def counted(block, block_info=None):
        if block_info[0]["chunk-location"][0] == 0:
            read.append(1)
        return block

    Xd = da.from_array(X, chunks=(100, 2)).map_blocks(counted, dtype=X.dtype)
    rs = select_reduced_set(Xd, da.from_array(y, chunks=100), size=40, random_state=0,
                            centers="leverage", lam=1e-2)
    assert rs.reads == len(round_sizes(40)) == 3
    assert len(read) == rs.reads
    read.clear()
    assert select_reduced_set(Xd, None, size=40, random_state=0).reads == 1 == len(read)


@pytest.mark.parametrize("lam", [0, -1.0, float("nan"), float("inf"), "1e-3", True])
def test_a_bad_lam_is_refused_before_any_read(lam):
    X, y = _two_clusters(100)
    with pytest.raises(ValueError, match=r"lam .*positive finite"):
        select_reduced_set(X, y, size=10, centers="leverage", lam=lam)


def test_bad_centers_size_and_basis_are_refused():
    X, y = _two_clusters(100)
    with pytest.raises(ValueError, match="centers must be one of 'uniform', 'leverage'"):
        select_reduced_set(X, y, size=10, centers="kmeans")
    with pytest.raises(ValueError, match="size=101 is more than the 100 rows of X"):
        select_reduced_set(X, y, size=101, centers="leverage")
    X[:50] = np.nan
    with pytest.raises(ValueError, match="size=60 is more than the 50 usable rows"):
        select_reduced_set(X, y, size=60, centers="leverage")
    with pytest.raises(TypeError, match="score_basis must be a Basis"):
        select_reduced_set(X, y, size=10, centers="leverage", score_basis="gaussian")


@pytest.mark.determinism
def test_the_models_draw_by_leverage_alike_for_numpy_and_dask():
    from bigkern import NystromKernelRidgeClassifier, ReducedSVC

    X = np.random.default_rng(0).normal(size=(400, 2))
    y = np.where((X**2).sum(axis=1) < 1.5, 1, -1)
    model = NystromKernelRidgeClassifier(omega=[0.5, 1.0, 2.0], lam=1e-2, size=30,
                                         random_state=0, centers="leverage")
    held = model.fit(X, y).reduced_index_
    lazy = model.fit(da.from_array(X, chunks=(130, 2)), da.from_array(y, chunks=130))
    np.testing.assert_array_equal(held, lazy.reduced_index_)
    assert model.score(X, y) > 0.9
    svm = ReducedSVC(omega=1.0, C=10.0, size=30, random_state=0, centers="leverage").fit(X, y)
    assert svm.fit_report_["centers"] == "leverage" and svm.fit_report_["reads_reduced_set"] == 3
    uniform = svm.set_params(centers="uniform").fit(X, y)
    assert uniform.fit_report_["reads_reduced_set"] == 1
    assert not np.array_equal(held, uniform.reduced_index_)
