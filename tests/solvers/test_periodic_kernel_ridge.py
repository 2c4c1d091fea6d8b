"""Periodic Gaussian kernel, equal-spaced binning and Mallows' Cp (Shi & Yu §2–5.1).

References are independent of bigkern's code: Jacobi's theta function (mpmath),
a plain Fourier sum, explicit matrices built with numpy and solved directly,
scipy's t tests.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
import scipy.stats
from sklearn.base import clone
from threadpoolctl import threadpool_limits

from bigkern.errors import BigkernWarning, DataQualityError
from bigkern.kernels import PeriodicGaussian
from bigkern.models.criteria import difference_noise_variance, grid_argmin, mallows_cp
from bigkern.models.regression.periodic import PeriodicKernelRidge, shi_yu_grid
from bigkern.solvers.periodic import (
    SmootherPath,
    binned_hat_matrix,
    equal_bins,
    exact_periodic_kernel,
    hat_matrix,
    wrap_error_bound,
    wrapped_gaussian_kernel,
)

N = 120
X_DESIGN = (np.arange(1, N + 1) - 0.5) / N  # x_i = −1/(2n) + i/n


@pytest.fixture(autouse=True)
def _one_blas_thread():
    """The matrices here are small (≤ 120×120): BLAS threads only contend on a shared machine."""
    with threadpool_limits(1):
        yield


def f1(x):
    return np.sin(2 * np.pi * x) ** 2 * (x <= 0.5)


def f2(x):
    return -x + 2 * (x - 0.25) * (x >= 0.25) + 2 * (-x + 0.75) * (x >= 0.75)


def f3(x):
    return 1 / (2 - np.sin(2 * np.pi * x))


def f4(x):
    s, c = np.sin(2 * np.pi * x), np.cos(2 * np.pi * x)
    return 2 + s + 2 * c + 3 * s**2 + 4 * c**3 + 5 * s**3


FUNCTIONS = {"f1": f1, "f2": f2, "f3": f3, "f4": f4}


def fourier_kernel(s, t, omega):
    """1 + 2 Σ_{l ≥ 1} exp(−l²ω²/2) cos(2πl(s − t)), summed plainly to e^{−l²ω²/2} < 1e-22."""
    d = np.subtract.outer(np.asarray(s, float), np.asarray(t, float))
    ell = np.arange(1, int(10.1 / omega) + 2)
    w = np.exp(-0.5 * (ell * omega) ** 2)
    return 1 + 2 * np.tensordot(np.cos(2 * np.pi * d[..., None] * ell), w, axes=1)


def averaging_matrix(n, m):
    """B of eq. (15) for consecutive equal bins: m/n in each bin's columns."""
    p = n // m
    return np.kron(np.eye(m), np.full((1, p), m / n))


# ---------------------------------------------------------------------------------------------
# kernel
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("omega", [0.05, 0.2, 0.5, 1.0, 2.0, 2.9, 6.0])
def test_exact_kernel_matches_jacobi_theta(omega):
    # K(d) = θ₃(π d, q) with q = exp(−ω²/2)
    rng = np.random.default_rng(1)
    s, t = rng.random(7), rng.random(5)
    K = exact_periodic_kernel(s, t, omega)
    with mpmath.workdps(40):
        q = mpmath.exp(-(mpmath.mpf(omega) ** 2) / 2)
        ref = np.array([[float(mpmath.jtheta(3, mpmath.pi * (mpmath.mpf(a) - mpmath.mpf(b)), q))
                         for b in t] for a in s])
    # absolute round-off of a sum of terms up to K(0) = √(2π)/ω
    np.testing.assert_allclose(K, ref, rtol=1e-13, atol=1e-15 * max(1.0, 2.5 / omega))


@pytest.mark.parametrize("omega", [0.2, 0.5, 1.0])
def test_wrapped_g1_agrees_with_exact_for_omega_le_1(omega):
    # Shi & Yu: 0 < K − G¹ < 2.1e-20 (their scale) for ω ≤ 1 — below double round-off here
    rng = np.random.default_rng(2)
    s, t = rng.random(40), rng.random(30)
    G1 = wrapped_gaussian_kernel(s, t, omega, J=1)
    np.testing.assert_allclose(G1, fourier_kernel(s, t, omega), rtol=1e-13, atol=1e-13)
    assert wrap_error_bound(omega, 1) < 3e-19


def test_wrapped_g1_differs_from_exact_for_wide_kernels_within_bound():
    rng = np.random.default_rng(3)
    s, t = rng.random(40), rng.random(30)
    omega = 2.9  # the widest ω of the paper's grid
    gap = fourier_kernel(s, t, omega) - wrapped_gaussian_kernel(s, t, omega, J=1)
    assert gap.max() > 1e-3  # G¹ is not the periodic kernel there
    assert gap.min() > 0
    assert gap.max() <= wrap_error_bound(omega, 1) * (1 + 1e-12)
    # enough wraps recover it
    np.testing.assert_allclose(wrapped_gaussian_kernel(s, t, omega, J=6),
                               fourier_kernel(s, t, omega), rtol=1e-13)


def test_wrap_bound_is_the_papers_at_omega_1():
    # largest single omitted term of G¹ in the paper's 2π scale: (2π)^{-1/2} e^{−(3π)²/2}
    single = math.exp(-((3 * math.pi) ** 2) / 2) / math.sqrt(2 * math.pi)
    assert 2.0e-20 < single < 2.2e-20
    # this bound counts the two sides (k = ±2) in K's scale: 2 × 2π × single, plus tiny
    assert wrap_error_bound(1.0, 1) == pytest.approx(2 * 2 * math.pi * single, rel=1e-6)


@pytest.mark.parametrize(("approximation", "omega"), [("exact", 0.2), ("exact", 1.1),
                                                      ("exact", 2.9), ("wrapped", 0.2),
                                                      ("wrapped", 1.0)])
def test_kernel_matrix_symmetric_psd_periodic(approximation, omega):
    rng = np.random.default_rng(4)
    x = rng.random(80)
    kernel = PeriodicGaussian(omega, approximation)
    K = kernel(x, x)
    np.testing.assert_array_equal(K, K.T)
    ev = np.linalg.eigvalsh(K)
    assert ev.min() > -1e-12 * ev.max()
    shifted = kernel(x + 1.0, x - 3.0)
    np.testing.assert_allclose(shifted, K, rtol=1e-12, atol=1e-12)
    # translation invariant on the circle
    moved = kernel(np.mod(x + 0.37, 1), np.mod(x + 0.37, 1))
    np.testing.assert_allclose(moved, K, rtol=1e-11, atol=1e-12)


def test_wrapped_g1_is_indefinite_for_wide_kernels_and_the_path_warns():
    # the paper's ω grid reaches 2.9, beyond G¹'s validity (ω ≤ 1): G¹ loses definiteness
    G1 = wrapped_gaussian_kernel(X_DESIGN, X_DESIGN, 2.9, J=1)
    assert np.linalg.eigvalsh(G1).min() < -1e-3
    with pytest.warns(BigkernWarning, match="indefinite"):
        SmootherPath.build(X_DESIGN, PeriodicGaussian(2.9, "wrapped"))


def test_gram_eigenvalues_are_theorem_1():
    # equal-spaced design: eigenvectors are the sampled trig basis, eigenvalues n·Σ aliases
    omega = 0.8
    G = exact_periodic_kernel(X_DESIGN, X_DESIGN, omega)
    for h in (1, 3, 7):
        v = np.sqrt(2 / N) * np.cos(2 * np.pi * h * X_DESIGN)
        d = N * sum(math.exp(-((h + k * N) ** 2) * omega**2 / 2) for k in range(-3, 4))
        np.testing.assert_allclose(G @ v, d * v, atol=1e-10 * d)


# ---------------------------------------------------------------------------------------------
# binning
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("m", [60, 40, 30, 24, 20, 15, 12])
def test_equal_bins_on_the_design(m):
    p = N // m
    bins = equal_bins(X_DESIGN, m)
    np.testing.assert_array_equal(bins.counts, np.full(m, p))
    np.testing.assert_allclose(bins.centers, X_DESIGN.reshape(m, p).mean(axis=1), rtol=1e-14)
    np.testing.assert_allclose(bins.averaging_matrix(), averaging_matrix(N, m))
    y = np.random.default_rng(5).standard_normal(N)
    np.testing.assert_allclose(bins.means(y), averaging_matrix(N, m) @ y, rtol=1e-13)


def test_equal_bins_drops_empty_bins():
    x = np.array([0.01, 0.02, 0.61, 0.99])
    bins = equal_bins(x, 5)
    assert bins.n_bins == 3 and bins.n_empty == 2
    np.testing.assert_array_equal(bins.counts, [2, 1, 1])
    np.testing.assert_allclose(bins.centers, [0.015, 0.61, 0.99])


# ---------------------------------------------------------------------------------------------
# fits
# ---------------------------------------------------------------------------------------------
def test_path_matches_direct_unbinned_and_binned_smoothers():
    omega, lam = 0.9, 0.05
    y = f3(X_DESIGN) + np.random.default_rng(6).standard_normal(N)
    G = fourier_kernel(X_DESIGN, X_DESIGN, omega)
    S = G @ np.linalg.inv(G + lam * np.eye(N))
    path = SmootherPath.build(X_DESIGN, PeriodicGaussian(omega))
    np.testing.assert_allclose(path.fitted(y, [lam])[:, 0], S @ y, atol=1e-9)
    assert path.traces([lam])[0] == pytest.approx(np.trace(S), rel=1e-10)
    np.testing.assert_allclose(hat_matrix(X_DESIGN, PeriodicGaussian(omega), lam), S, atol=1e-9)

    m = 20
    lam_b = m * lam / N
    centers = X_DESIGN.reshape(m, -1).mean(axis=1)
    Gm = fourier_kernel(centers, centers, omega)
    Gnm = fourier_kernel(X_DESIGN, centers, omega)
    SB = Gnm @ np.linalg.inv(Gm + lam_b * np.eye(m)) @ averaging_matrix(N, m)
    bpath = SmootherPath.build(X_DESIGN, PeriodicGaussian(omega), equal_bins(X_DESIGN, m))
    np.testing.assert_allclose(bpath.fitted(y, [lam_b])[:, 0], SB @ y, atol=1e-9)
    assert bpath.traces([lam_b])[0] == pytest.approx(np.trace(SB), rel=1e-10)
    np.testing.assert_allclose(binned_hat_matrix(X_DESIGN, PeriodicGaussian(omega), lam_b, m), SB,
                               atol=1e-9)
    est = PeriodicKernelRidge(omega, lam, n_bins=m).fit(X_DESIGN, y)
    assert est.lam_b_ == pytest.approx(lam_b)
    np.testing.assert_allclose(est.predict(X_DESIGN), SB @ y, atol=1e-9)


def test_binned_with_one_point_per_bin_equals_unbinned():
    y = f1(X_DESIGN) + np.random.default_rng(7).standard_normal(N)
    grid = {"omega": [0.5, 1.4, 2.3], "lam": np.exp(np.linspace(-8, 4, 13))}
    full = PeriodicKernelRidge(**grid, sigma2=1.0).fit(X_DESIGN, y)
    binned = PeriodicKernelRidge(**grid, sigma2=1.0, n_bins=N).fit(X_DESIGN, y)
    assert binned.n_bins_ == N and (binned.omega_, binned.lam_) == (full.omega_, full.lam_)
    assert binned.lam_b_ == full.lam_b_ == full.lam_
    np.testing.assert_allclose(binned.centers_, X_DESIGN, rtol=1e-15)
    np.testing.assert_allclose(binned.coef_, full.coef_, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(binned.cp_.values, full.cp_.values, rtol=1e-10)
    t = np.random.default_rng(8).random(50)
    np.testing.assert_allclose(binned.predict(t), full.predict(t), atol=1e-10)


@pytest.mark.parametrize("n_bins", [None, 24])
def test_cp_choice_minimises_brute_force_cp_by_refitting(n_bins):
    rng = np.random.default_rng(9)
    y = f2(X_DESIGN) + rng.standard_normal(N)
    grid = {"omega": [0.2, 0.8, 1.7, 2.6], "lam": np.exp(-0.4 * np.arange(1, 51, 5) + 7)}
    est = PeriodicKernelRidge(**grid, sigma2=1.0, n_bins=n_bins).fit(X_DESIGN, y)
    m = N if n_bins is None else n_bins
    brute = np.empty((4, 10))
    for i, w in enumerate(grid["omega"]):
        for j, lam in enumerate(grid["lam"]):
            fit = PeriodicKernelRidge(w, lam, n_bins=n_bins).fit(X_DESIGN, y)
            rss = np.sum((y - fit.predict(X_DESIGN)) ** 2)
            if n_bins is None:
                G = fourier_kernel(X_DESIGN, X_DESIGN, w)
                df = np.trace(G @ np.linalg.inv(G + lam * np.eye(N)))
            else:
                c = X_DESIGN.reshape(m, -1).mean(axis=1)
                S = (fourier_kernel(X_DESIGN, c, w)
                     @ np.linalg.inv(fourier_kernel(c, c, w) + m * lam / N * np.eye(m))
                     @ averaging_matrix(N, m))
                df = np.trace(S)
            brute[i, j] = rss / N + 2 * 1.0 * df / N
    np.testing.assert_allclose(est.cp_.values, brute, rtol=1e-7)
    i, j = np.unravel_index(np.argmin(brute), brute.shape)
    assert (est.omega_, est.lam_) == (grid["omega"][i], grid["lam"][j])


def test_cp_is_unbiased_for_the_binned_risk():
    # E[Cp] = E‖S_B y − f‖²/n + σ² for the non-symmetric binned smoother
    omega, lam_b, m, sigma = 1.1, 0.02, 20, 0.7
    S = binned_hat_matrix(X_DESIGN, PeriodicGaussian(omega), lam_b, m)
    f = f1(X_DESIGN)
    Y = f[:, None] + sigma * np.random.default_rng(10).standard_normal((N, 4000))
    fit = S @ Y
    cp = mallows_cp(((Y - fit) ** 2).sum(axis=0), np.trace(S), N, sigma**2)
    risk = ((fit - f[:, None]) ** 2).mean(axis=0) + sigma**2
    assert abs(cp.mean() - risk.mean()) < 4 * np.std(cp - risk) / np.sqrt(4000)


def test_tuning_helpers():
    assert mallows_cp(3.0, 2.0, 10, 0.5) == pytest.approx((3 + 2 * 0.5 * 2) / 10)
    x = np.array([0.9, 0.1, 0.5])
    y = np.array([3.0, 1.0, 2.0])  # ordered by x: 1, 2, 3; wrap difference −2
    assert difference_noise_variance(x, y) == pytest.approx((1 + 1 + 4) / 6)
    assert difference_noise_variance(x, y, period=None) == pytest.approx(2 / 4)
    assert grid_argmin([[3.0, 1.0], [np.nan, 1.0]]) == (0, 1)
    with pytest.raises(ValueError, match="sigma2"):
        mallows_cp(1.0, 1.0, 5, -1.0)
    with pytest.raises(ValueError, match="finite score"):
        grid_argmin([np.nan])


def test_estimated_sigma2_is_near_the_truth():
    rng = np.random.default_rng(11)
    est = [difference_noise_variance(X_DESIGN, f3(X_DESIGN) + rng.standard_normal(N))
           for _ in range(200)]
    assert np.mean(est) == pytest.approx(1.0, abs=0.04)
    fit = PeriodicKernelRidge(**shi_yu_grid(), n_bins=20).fit(
        X_DESIGN, f3(X_DESIGN) + rng.standard_normal(N))
    assert 0.6 < fit.sigma2_ < 1.5


# ---------------------------------------------------------------------------------------------
# Shi & Yu §5.1 at m = 20, reduced repetitions (the full 300 in benchmarks/shi_yu_periodic.py)
# ---------------------------------------------------------------------------------------------
def test_binning_to_20_bins_loses_no_accuracy():
    reps, grid = 40, shi_yu_grid()
    rng = np.random.default_rng(20)
    for name, f in FUNCTIONS.items():
        truth = f(X_DESIGN)
        mse = {None: [], 20: []}
        for _ in range(reps):
            y = truth + rng.standard_normal(N)
            for m in mse:
                est = PeriodicKernelRidge(**grid, sigma2=1.0, n_bins=m).fit(X_DESIGN, y)
                mse[m].append(np.mean((est.predict(X_DESIGN) - truth) ** 2))
        p = scipy.stats.ttest_ind(mse[20], mse[None]).pvalue
        assert p > 0.1, f"{name}: binned MSE {np.mean(mse[20]):.4f} vs {np.mean(mse[None]):.4f}"
        assert np.mean(mse[None]) < 0.5  # the fits do estimate f (noise variance is 1)


# ---------------------------------------------------------------------------------------------
# estimator behaviour and bad input
# ---------------------------------------------------------------------------------------------
def test_estimator_conventions_and_wrap():
    est = PeriodicKernelRidge(0.7, 0.1, n_bins=12, wrap=True)
    assert clone(est).get_params() == est.get_params()
    y = f4(X_DESIGN)
    est.fit(X_DESIGN[:, None] + 2.0, y)
    ref = PeriodicKernelRidge(0.7, 0.1, n_bins=12).fit(X_DESIGN, y)
    np.testing.assert_allclose(est.coef_, ref.coef_, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(est.predict([-0.25]), ref.predict([0.75]), rtol=1e-12)
    assert est.cp_ is None and est.sigma2_ is None and est.n_bins_ == 12
    assert est.score(X_DESIGN, y) > 0.99


def test_estimator_with_empty_bins_uses_the_kept_bins():
    rng = np.random.default_rng(12)
    x = np.sort(np.r_[rng.uniform(0.0, 0.3, 40), rng.uniform(0.6, 0.9, 40)])
    y = f3(x) + 0.1 * rng.standard_normal(80)
    est = PeriodicKernelRidge(1.0, 0.5, n_bins=10).fit(x, y)
    assert est.n_bins_ + est.n_empty_bins_ == 10 and est.n_empty_bins_ >= 3
    assert est.lam_b_ == pytest.approx(est.n_bins_ * 0.5 / 80)
    assert est.bin_counts_.sum() == 80
    # the coefficients solve (G^(m) + λ_B I) c = bin means, at the bins' mean x
    raw = np.floor(x * 10).astype(int)
    kept = np.unique(raw)
    centers = np.array([x[raw == b].mean() for b in kept])
    means = np.array([y[raw == b].mean() for b in kept])
    G = fourier_kernel(centers, centers, 1.0)
    np.testing.assert_allclose(est.centers_, centers, rtol=1e-14)
    np.testing.assert_allclose(est.coef_, np.linalg.solve(G + est.lam_b_ * np.eye(len(G)), means),
                               rtol=1e-8, atol=1e-10)


def test_bad_input_errors():
    x, y = X_DESIGN, f3(X_DESIGN)
    with pytest.raises(ValueError, match="at least 2 samples"):
        PeriodicKernelRidge().fit([0.5], [1.0])
    with pytest.raises(DataQualityError, match=r"X in fit .* row 3"):
        PeriodicKernelRidge().fit(np.where(np.arange(N) == 3, np.nan, x), y)
    with pytest.raises(DataQualityError, match=r"y has 1 non-finite .* row 7"):
        PeriodicKernelRidge().fit(x, np.where(np.arange(N) == 7, np.nan, y))
    with pytest.raises(ValueError, match=r"\[0, 1\).* row 0: 1.0"):
        PeriodicKernelRidge().fit(np.r_[1.0, x[1:]], y)
    with pytest.raises(ValueError, match="row 2"):
        PeriodicKernelRidge().fit(np.r_[x[:2], -0.1, x[3:]], y)
    fitted = PeriodicKernelRidge().fit(x, y)
    with pytest.raises(ValueError, match="X in predict"):
        fitted.predict([0.5, 1.5])
    with pytest.raises(DataQualityError, match="X in predict"):
        fitted.predict([np.inf])
    for m in (0, 2.5):
        with pytest.raises(ValueError, match=r"'n_bins' parameter of PeriodicKernelRidge must be "
                                             r"an int in the range \[1, inf\) or None"):
            PeriodicKernelRidge(n_bins=m).fit(x, y)
    with pytest.raises(ValueError, match=rf"n_bins must be an integer in \[1, n={N}\]"):
        PeriodicKernelRidge(n_bins=N + 1).fit(x, y)
    with pytest.raises(ValueError, match=r"'omega' parameter of PeriodicKernelRidge must be a "
                                         r"float in the range \[1e-100, 1e\+100\]"):
        PeriodicKernelRidge(omega=0.0).fit(x, y)
    with pytest.raises(ValueError, match=r"'lam' parameter of PeriodicKernelRidge must be a "
                                         r"float in the range \(0\.0, inf\)"):
        PeriodicKernelRidge(lam=-1.0).fit(x, y)
    with pytest.raises(ValueError, match=r"lam\[1\] = 0\.0"):
        PeriodicKernelRidge([1.0], [1.0, 0.0]).fit(x, y)
    with pytest.raises(ValueError, match="X has 120 rows but y has 119"):
        PeriodicKernelRidge().fit(x, y[1:])
    with pytest.raises(ValueError, match=r"'approximation' parameter of PeriodicKernelRidge must "
                                         r"be a str among"):
        PeriodicKernelRidge(approximation="gauss").fit(x, y)
    with pytest.raises(ValueError, match="one column"):
        PeriodicKernelRidge().fit(np.c_[x, x], y)


def test_constant_y():
    x, y = X_DESIGN, np.full(N, 2.5)
    # Cp with an estimated σ² is degenerate: a clear error
    with pytest.raises(DataQualityError, match=r"y is constant .* 2\.5"):
        PeriodicKernelRidge(**shi_yu_grid()).fit(x, y)
    # where it does not matter it fits: fixed parameters, or a known σ²
    fit = PeriodicKernelRidge(1.0, 1e-6, n_bins=20).fit(x, y)
    np.testing.assert_allclose(fit.predict([0.1, 0.7]), 2.5, rtol=1e-4)
    fit = PeriodicKernelRidge(**shi_yu_grid(), sigma2=1.0).fit(x, y)
    pred = fit.predict(x)  # a flat fit, shrunk towards 0 by d₀/(d₀ + λ) (no intercept)
    assert np.ptp(pred) < 1e-8 and 2.0 < pred[0] <= 2.5


def test_the_periodic_kernel_is_a_kernel_value_and_the_model_keeps_it():
    from bigkern.kernels import Kernel

    kernel = PeriodicGaussian(0.7, "wrapped", n_wraps=2)
    assert isinstance(kernel, Kernel) and kernel.with_width(1.3).omega == 1.3
    np.testing.assert_array_equal(kernel(X_DESIGN, X_DESIGN),
                                  wrapped_gaussian_kernel(X_DESIGN, X_DESIGN, 0.7, J=2))
    np.testing.assert_array_equal(PeriodicGaussian(0.7)(X_DESIGN, X_DESIGN),
                                  exact_periodic_kernel(X_DESIGN, X_DESIGN, 0.7))
    y = f3(X_DESIGN)
    model = PeriodicKernelRidge([0.5, 0.9], 0.05, approximation="wrapped", n_wraps=2,
                                sigma2=1.0).fit(X_DESIGN, y)
    assert model.kernel_ == PeriodicGaussian(model.omega_, "wrapped", 2)
    np.testing.assert_allclose(model.predict(X_DESIGN),
                               model.kernel_(X_DESIGN, model.centers_) @ model.coef_)
    for bad in ({"approximation": "fourier"}, {"n_wraps": -1}, {"omega": 0.0}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            PeriodicGaussian(**{"omega": 1.0, **bad})
