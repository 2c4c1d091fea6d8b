"""Sparse solvers and estimators of compactly supported kernels (Zhang, Genton & Liu §4)."""

from __future__ import annotations

import warnings

import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.spatial.distance import pdist
from sklearn.decomposition import KernelPCA
from sklearn.model_selection import GridSearchCV
from sklearn.svm import SVC

from bigkern import (
    CompactKernelPCA,
    CompactKernelRidge,
    CompactLSSVC,
    CompactSupport,
    CompactSVC,
    Gaussian,
    alignment_sparsity,
    choose_support_radius,
)
from bigkern.datasets import GreenRed, make_three_clusters
from bigkern.errors import BigkernWarning, LabelError
from bigkern.kernels import gaussian_kernel
from bigkern.models.compact.base import isolated_rows
from bigkern.reduce.compact.sparse_gram import sparse_gram
from bigkern.solvers.kpca import centred_projections, kernel_pca
from bigkern.solvers.lssvm import solve_lssvm
from bigkern.solvers.sparse_spd import bandwidth, has_cholmod, solve_sparse_spd
from bigkern.solvers.sparse_svm import solve_svm_dual

OMEGA = 0.6 / np.sqrt(2)  # the paper's σ = 0.6 in exp(-r²/σ²)
MIXTURE = GreenRed()


@pytest.fixture(scope="module")
def green_red():
    X, y = MIXTURE.sample(600, seed=1)
    X_test, y_test = MIXTURE.sample(1000, seed=2)
    return X, y, X_test, y_test


def _bordered_reference(K, y, lam):
    n = len(y)
    A = np.zeros((n + 1, n + 1))
    A[0, 1:] = A[1:, 0] = 1.0
    A[1:, 1:] = K + n * lam * np.eye(n)
    sol = np.linalg.solve(A, np.r_[0.0, y])
    return sol[1:], sol[0]


# -- solvers ------------------------------------------------------------------------------
METHODS = ["banded", "cg", pytest.param("cholmod", marks=pytest.mark.skipif(
    not has_cholmod(), reason="scikit-sparse (CHOLMOD) is not installed"))]


@pytest.mark.parametrize("method", METHODS)
def test_lssvm_solves_the_bordered_system(green_red, method):
    X, y, _, _ = green_red
    K = sparse_gram(X, CompactSupport(Gaussian(OMEGA), 1.2, taper_power=3))
    coef_ref, b_ref = _bordered_reference(K.toarray(), y, 1e-3)
    got = solve_lssvm(K, y, 1e-3, method=method, tol=1e-12)
    assert got.method == method
    np.testing.assert_allclose(got.coef, coef_ref, atol=1e-8 if method == "cg" else 1e-11)
    assert got.intercept == pytest.approx(b_ref, abs=1e-8)
    assert abs(got.coef.sum()) < 1e-8  # the border row: 1ᵀa = 0
    dense = solve_lssvm(K.toarray(), y, 1e-3)
    np.testing.assert_allclose(dense.coef, coef_ref, atol=1e-11)


def test_bandwidth_follows_the_definition_and_rcm_narrows_it(green_red):
    X, _, _, _ = green_red
    K = sparse_gram(X, CompactSupport(Gaussian(OMEGA), 0.8, taper_power=3))
    dense = K.toarray() != 0
    first = np.array([np.flatnonzero(row)[0] for row in dense])
    assert bandwidth(K) == 2 * int(np.max(np.arange(len(dense)) - first)) + 1
    solved = solve_sparse_spd(K + sp.identity(K.shape[0]), np.ones(K.shape[0]),
                              method="banded")
    assert solved.bandwidth_before == bandwidth(K)
    assert solved.bandwidth_after < solved.bandwidth_before / 2
    assert bandwidth(sp.identity(5)) == 1


def test_sparse_spd_rejects_bad_systems():
    with pytest.raises(ValueError, match="square"):
        solve_sparse_spd(sp.random(3, 4, density=0.5), np.ones(3))
    with pytest.raises(ValueError, match="rows"):
        solve_sparse_spd(sp.identity(3), np.ones(4))
    with pytest.raises(ValueError, match="method"):
        solve_sparse_spd(sp.identity(3), np.ones(3), method="magic")


@pytest.mark.parametrize("c", [0.2, 5.0])
def test_sparse_smo_matches_libsvm_on_the_dense_copy(green_red, c):
    X, y, X_test, _ = green_red
    kernel = CompactSupport(Gaussian(OMEGA), 1.5, taper_power=3)
    K, K_test = sparse_gram(X, kernel), sparse_gram(X_test, kernel, X)
    ours = solve_svm_dual(K, y, c, eps=1e-5)
    svc = SVC(C=c, kernel="precomputed", tol=1e-5).fit(K.toarray(), y)
    alpha = np.zeros(len(y))
    alpha[svc.support_] = np.abs(svc.dual_coef_[0])
    Q = np.outer(y, y) * K.toarray()
    libsvm_objective = 0.5 * alpha @ Q @ alpha - alpha.sum()
    assert ours.objective == pytest.approx(libsvm_objective, rel=1e-6)
    assert ours.intercept == pytest.approx(svc.intercept_[0], abs=1e-3)
    theirs = svc.decision_function(K_test.toarray())
    mine = K_test @ ours.dual_coef + ours.intercept
    np.testing.assert_allclose(mine, theirs, atol=2e-3)
    assert np.all(np.abs(ours.dual_coef) <= c + 1e-12)
    assert abs(ours.dual_coef.sum()) < 1e-9  # yᵀα = 0
    assert ours.gap < 1e-5


def test_smo_rejects_bad_labels():
    K = sp.identity(4, format="csr")
    with pytest.raises(ValueError, match="one class"):
        solve_svm_dual(K, np.ones(4), 1.0)
    with pytest.raises(ValueError, match="-1 and \\+1"):
        solve_svm_dual(K, np.array([0, 1, 0, 1]), 1.0)
    with pytest.raises(ValueError, match="box bound"):
        solve_svm_dual(K, np.array([-1, 1, -1, 1]), 0.0)


def test_kernel_pca_matches_scikit_learn_on_the_dense_copy():
    X, _ = make_three_clusters(seed=4)
    X_new, _ = make_three_clusters(5, seed=5)
    kernel = CompactSupport(Gaussian(np.sqrt(0.05)), 0.7, taper_power=3)
    K, K_new = sparse_gram(X, kernel), sparse_gram(X_new, kernel, X)
    ours = kernel_pca(K, 6)
    ref = KernelPCA(6, kernel="precomputed", eigen_solver="dense").fit(K.toarray())
    np.testing.assert_allclose(ours.eigenvalues, ref.eigenvalues_, rtol=1e-9)
    for got, want in ((centred_projections(K, ours), ref.transform(K.toarray())),
                      (centred_projections(K_new, ours), ref.transform(K_new.toarray()))):
        signs = np.sign(np.sum(got * want, axis=0))
        np.testing.assert_allclose(got * signs, want, atol=1e-8)


# -- estimators -----------------------------------------------------------------------------
@pytest.mark.determinism
def test_lssvc_is_the_same_for_numpy_and_any_dask_chunking(green_red):
    X, y, X_test, _ = green_red
    ref = CompactLSSVC(OMEGA, 1e-3, radius=1.2, taper_power=3).fit(X, y)
    for chunks in (100, 251):
        model = CompactLSSVC(OMEGA, 1e-3, radius=1.2, taper_power=3).fit(
            da.from_array(X, chunks=(chunks, 2)), y)
        np.testing.assert_allclose(model.dual_coef_, ref.dual_coef_, rtol=0, atol=1e-12)
        lazy = model.decision_function(da.from_array(X_test, chunks=(300, 2)))
        assert isinstance(lazy, da.Array)
        np.testing.assert_allclose(lazy.compute(), ref.decision_function(X_test), atol=1e-12)
    assert ref.fit_report_["gram"].nnz == sparse_gram(X, ref.kernel_).nnz
    assert ref.fit_report_["bandwidth_after"] <= ref.fit_report_["bandwidth_before"]


def test_lssvc_prediction_equals_the_dense_expansion(green_red):
    X, y, X_test, _ = green_red
    model = CompactLSSVC(OMEGA, 1e-3, radius=1.2, taper_power=3).fit(X, y)
    K_test = CompactSupport(Gaussian(OMEGA), 1.2, taper_power=3)(X_test, X)
    np.testing.assert_allclose(model.decision_function(X_test),
                               K_test @ model.dual_coef_ + model.intercept_, atol=1e-12)
    assert set(np.unique(model.predict(X_test))) <= {-1, 1}


def test_radius_by_the_quantile_shortcut(green_red):
    X, y, _, _ = green_red
    model = CompactLSSVC(OMEGA, 1e-3, tau=0.7).fit(X, y)
    assert model.fit_report_["gram"].sparsity == pytest.approx(0.7, abs=0.02)


def test_compact_kernel_ridge_regresses():
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, (400, 1))
    y = np.sin(2 * X[:, 0]) + 0.1 * rng.standard_normal(400)
    model = CompactKernelRidge(0.4, 1e-4, radius=1.5).fit(X, y)
    grid = np.linspace(-1.8, 1.8, 50)[:, None]
    assert np.max(np.abs(model.predict(grid) - np.sin(2 * grid[:, 0]))) < 0.15
    assert model.score(X, y) > 0.9
    with pytest.raises(ValueError, match="Input y contains NaN"):
        CompactKernelRidge(0.4, radius=1.5).fit(X, np.r_[y[:-1], np.nan])


def test_bad_input_is_named(green_red):
    X, y, _, _ = green_red
    with pytest.raises(ValueError, match=r"'radius' parameter of CompactLSSVC must be a float in "
                                         r"the range \(0\.0, inf\) or None"):
        CompactLSSVC(OMEGA, radius=0.0).fit(X, y)
    with pytest.raises(ValueError, match=r"'radius' parameter of CompactSVC must be a float"):
        CompactSVC(OMEGA, radius=-1.0).fit(X, y)
    with pytest.raises(ValueError, match=r"'taper_power' parameter of CompactLSSVC must be an "
                                         r"int in the range \[1, inf\) or None"):
        CompactLSSVC(OMEGA, radius=1.0, taper_power=0).fit(X, y)
    with pytest.raises(ValueError, match="nearest neighbour"):
        CompactLSSVC(OMEGA, radius=1e-6).fit(X, y)
    with pytest.raises(ValueError, match="nearest neighbour"):
        CompactKernelPCA(2, OMEGA, radius=1e-6).fit(X)
    with pytest.warns(BigkernWarning, match="no neighbour within radius"):
        model = CompactLSSVC(OMEGA, radius=0.05).fit(X, y)
    assert model.n_isolated_ == len(isolated_rows(sparse_gram(X, model.kernel_))) > 0
    with pytest.raises(LabelError, match="two classes"):
        CompactSVC(OMEGA, radius=1.0).fit(X, np.ones(len(X)))
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        CompactLSSVC(OMEGA, radius=1.0).fit(X, y[:-1])
    with pytest.raises(ValueError, match=r"'tau' parameter of CompactLSSVC must be a float in "
                                         r"the range \(0\.0, 1\.0\)"):
        CompactLSSVC(OMEGA, tau=1.5).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        CompactLSSVC(OMEGA, radius=1.0).fit(X, y).predict(np.ones((3, 3)))


# -- the paper's examples -------------------------------------------------------------------
@pytest.mark.slow
def test_table2_pattern_svm_within_one_point_of_the_dense_svm_at_mu_099():
    """Example 1: n = 200, 1,000 test points, σ = 0.6, C by rule (9), λ by 10-fold CV."""
    X, y = MIXTURE.sample(200, seed=11)
    X_test, y_test = MIXTURE.sample(1000, seed=12)
    lams = np.geomspace(1e-4, 1e-1, 7)
    dense = GridSearchCV(SVC(kernel="rbf", gamma=1 / 0.36),
                         {"C": 1 / (2 * 180 * lams)}, cv=10).fit(X, y)
    dense_error = 1 - dense.score(X_test, y_test)
    curves = alignment_sparsity(X, Gaussian(OMEGA), 2.0 ** np.linspace(-5, 5, 201), taper_power=3)
    errors = {}
    for mu in (0.90, 0.95, 0.98, 0.99):
        C = choose_support_radius(curves, mu=mu)
        search = GridSearchCV(CompactSVC(OMEGA, radius=C, taper_power=3),
                              {"C": 1 / (2 * 180 * lams)},
                              cv=10).fit(X, y)
        errors[mu] = 1 - search.score(X_test, y_test)
        assert float(curves["alignment"].sel(radius=C)) >= mu
    assert abs(errors[0.99] - dense_error) <= 0.01, (errors, dense_error)
    bayes = MIXTURE.bayes_error(X_test, y_test)
    assert min(errors.values()) >= bayes - 0.03  # nothing beats the Bayes rule by much


@pytest.mark.slow
def test_table3_pattern_sparse_lssvm_close_to_dense_at_tau_07():
    """Example 2 at a test-suite size: rule (10) via the distance quantile, λ on a tuning set."""
    X, y = MIXTURE.sample(2000, seed=21)
    X_tune, y_tune = MIXTURE.sample(1000, seed=22)
    X_test, y_test = MIXTURE.sample(2000, seed=23)
    lams = np.geomspace(1e-5, 10.0, 7)

    def tuned(make):
        scores = [make(lam).fit(X, y).score(X_tune, y_tune) for lam in lams]
        return make(lams[int(np.argmax(scores))]).fit(X, y)

    sparse_model = tuned(lambda lam: CompactLSSVC(OMEGA, lam, tau=0.7, taper_power=3))
    sparse_error = 1 - sparse_model.score(X_test, y_test)
    assert sparse_model.fit_report_["gram"].sparsity == pytest.approx(0.7, abs=0.03)
    # the dense Gaussian LS-SVM with the same bordered system
    K = gaussian_kernel(X, X, OMEGA)
    best = max(lams, key=lambda lam: np.mean(np.sign(
        gaussian_kernel(X_tune, X, OMEGA) @ (s := solve_lssvm(K, y, lam)).coef + s.intercept)
        == y_tune))
    solution = solve_lssvm(K, y, best)
    dense_error = np.mean(np.sign(gaussian_kernel(X_test, X, OMEGA) @ solution.coef
                                  + solution.intercept) != y_test)
    assert abs(sparse_error - dense_error) <= 0.01, (sparse_error, dense_error)


def test_kpca_three_clusters_separate_with_rule1_radius():
    """Example 3: C by rule (8) with γ = 0.3; the first two components split the clusters."""
    X, cluster = make_three_clusters(seed=0)
    omega = np.sqrt(0.05)  # Schölkopf & Smola's exp(-‖x − y‖² / 0.1)
    curves = alignment_sparsity(X, Gaussian(omega), 2.0 ** np.linspace(-5, 5, 201), taper_power=3)
    C = choose_support_radius(curves, gamma=0.3)
    assert 0.5 < C < 1.0  # the paper's Ĉ = 0.758 for its draw
    model = CompactKernelPCA(8, omega, radius=C, taper_power=3).fit(X)
    P = model.transform(X)[:, :2]
    means = np.array([P[cluster == c].mean(axis=0) for c in range(3)])
    spread = max(P[cluster == c].std(axis=0).max() for c in range(3))
    assert pdist(means).min() > 4 * spread
    assert model.eigenvalues_[1] > 2 * model.eigenvalues_[2]  # two leading components
    lazy = model.transform(da.from_array(X, chunks=(70, -1)))
    assert isinstance(lazy, da.Array) and lazy.shape == (len(X), 8)
    np.testing.assert_allclose(lazy.compute(), model.transform(X), rtol=0, atol=1e-12)


# -- subsampled alignment and sparsity ------------------------------------------------------
def test_sampled_curves_are_within_their_standard_errors():
    X, _ = MIXTURE.sample(3000, seed=3)
    Cs = np.geomspace(0.3, 5, 7)
    exact = alignment_sparsity(X, Gaussian(OMEGA), Cs, taper_power=3)
    errors = {}
    for m in (300, 1200):
        est = alignment_sparsity(X, Gaussian(OMEGA), Cs, taper_power=3, sample=m, seed=1)
        assert est.attrs["rows_used"] == m and est.attrs["n"] == 3000
        for key in ("alignment", "sparsity"):
            z = (est[key] - exact[key]).values / np.maximum(est[f"{key}_se"].values, 1e-9)
            assert np.all(np.abs(z) < 5), (m, key, z)
        errors[m] = float(np.abs(est["sparsity"] - exact["sparsity"]).max())
        nonzeros = (1 - est["sparsity"].values) * 3000**2
        np.testing.assert_allclose(est["nonzeros"].values, nonzeros, rtol=1e-6)
    assert errors[1200] < errors[300]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        same = alignment_sparsity(X, Gaussian(OMEGA), Cs, taper_power=3, sample=5000)
    np.testing.assert_array_equal(same["alignment"].values, exact["alignment"].values)
    with pytest.raises(ValueError, match="groups"):
        alignment_sparsity(X, Gaussian(OMEGA), Cs, sample=10, groups=8)


@pytest.mark.parametrize("method", METHODS)
def test_sparse_spd_methods_solve_several_right_hand_sides(green_red, method):
    X, y, _, _ = green_red
    M = (sparse_gram(X, CompactSupport(Gaussian(OMEGA), 1.0, taper_power=3))
         + 0.3 * sp.identity(len(X)))
    B = np.column_stack([np.ones(len(X)), y, np.arange(len(X)) % 7])
    want = np.linalg.solve(M.toarray(), B)
    got = solve_sparse_spd(M, B, method=method, tol=1e-12)
    np.testing.assert_allclose(got.solution, want, atol=1e-9)
    if method == "cg":
        assert got.iterations > 0


def test_auto_method_follows_the_conditioning():
    X, y = MIXTURE.sample(3000, seed=5)
    K = sparse_gram(X, CompactSupport(Gaussian(OMEGA), 0.8, taper_power=3))  # ~80% zeros
    easy = solve_lssvm(K, y, 1.0)  # ridge n·λ = 3000 ≫ ‖K‖: a few CG steps
    hard = solve_lssvm(K, y, 1e-9)  # κ ~ 10⁷: the banded factorization
    assert (easy.method, hard.method) == ("cg", "banded")
    assert easy.solve.info["cg_flops"] < easy.solve.info["banded_flops"]
    assert hard.solve.info["banded_flops"] < hard.solve.info["cg_flops"]
    for solution in (easy, hard):
        forced = solve_lssvm(K, y, solution.ridge / len(y),
                             method="banded" if solution.method == "cg" else "cg", tol=1e-12)
        np.testing.assert_allclose(solution.coef, forced.coef, atol=1e-7)
        assert solution.intercept == pytest.approx(forced.intercept, abs=1e-7)


def test_symmetric_storage_multiplies_like_the_full_matrix(green_red):
    from bigkern.solvers.sparse_spd import SymmetricCSR

    X, _, _, _ = green_red
    K = sparse_gram(X, CompactSupport(Gaussian(OMEGA), 1.0, taper_power=3))
    v = np.random.default_rng(0).standard_normal(len(X))
    np.testing.assert_allclose(SymmetricCSR(K) @ v, K @ v, rtol=1e-12, atol=1e-12)
    no_diagonal = K - sp.diags(K.diagonal())
    np.testing.assert_allclose(SymmetricCSR(no_diagonal) @ v, no_diagonal @ v, atol=1e-12)
