"""ReducedSVC: exact against a direct Newton solve of (5), deterministic, one read per pass."""

from __future__ import annotations

import warnings
from collections import Counter

import dask
import dask.array as da
import numpy as np
import pytest
from distributed import get_task_stream
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import expit

from bigkern.errors import DataQualityError, LabelError
from bigkern.kernels import KernelExpansion, gaussian_kernel
from bigkern.models.reduced_kernel.reduced import ReducedSVC
from bigkern.solvers.newton.in_memory_newton import InMemoryNewtonPasses
from bigkern.solvers.newton.smooth_svm import (
    SmoothEpsilonInsensitive,
    SmoothHinge,
    newton_armijo,
    smooth_plus,
)


def _xor(n: int, seed: int = 0, d: int = 2, noise: float = 0.05
         ) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.where(X[:, 0] * X[:, 1] > 0, 1, -1)
    flip = rng.random(n) < noise
    return X, np.where(flip, -y, y)


def classic_rsvm(K, y, C, alpha, *, tol=1e-10, max_iter=100, delta=1e-4, max_halvings=20):
    """Problem (5) by textbook Newton–Armijo, one trial step at a time (independent code)."""
    A = np.hstack([K, -np.ones((len(K), 1))])

    def F(u):
        p = np.logaddexp(0.0, alpha * (1 - y * (A @ u))) / alpha
        return 0.5 * C * np.sum(p * p) + 0.5 * u @ u

    def grad_hess(u):
        r = 1 - y * (A @ u)
        p = np.logaddexp(0.0, alpha * r) / alpha
        s = expit(alpha * r)
        g = u - C * A.T @ (y * p * s)
        w = s * s + p * alpha * s * (1 - s)
        return g, np.eye(A.shape[1]) + C * (A.T * w) @ A

    u = np.zeros(A.shape[1])
    g, H = grad_hess(u)
    g0, steps = np.linalg.norm(g), []
    while np.linalg.norm(g) > tol * g0 and len(steps) < max_iter:
        d = np.linalg.solve(H, -g)
        lam, f0 = 1.0, F(u)
        while f0 - F(u + lam * d) < -delta * lam * (g @ d) and lam > 2.0 ** -max_halvings:
            lam /= 2
        u = u + lam * d
        steps.append(lam)
        g, H = grad_hess(u)
    return u, steps


def test_smooth_plus_is_6_and_its_derivatives():
    z = np.linspace(-30, 30, 2001)
    for alpha in (0.5, 5.0, 100.0):
        p, dp, d2p = smooth_plus(z, alpha)
        with np.errstate(over="ignore"):
            direct = z + np.log1p(np.exp(-alpha * z)) / alpha
        ok = np.isfinite(direct)
        np.testing.assert_allclose(p[ok], direct[ok], rtol=1e-12, atol=1e-14)
        h = 1e-6
        np.testing.assert_allclose(dp, (smooth_plus(z + h, alpha)[0] - smooth_plus(z - h, alpha)[0])
                                   / (2 * h), atol=1e-6)
        np.testing.assert_allclose(d2p, (smooth_plus(z + h, alpha)[1]
                                         - smooth_plus(z - h, alpha)[1]) / (2 * h),
                                   atol=2e-5 * alpha)
    assert np.all(np.isfinite(smooth_plus(np.array([-1e6, 1e6]), 50.0)[0]))


@pytest.mark.parametrize("loss", [SmoothHinge(5.0), SmoothHinge(100.0),
                                  SmoothEpsilonInsensitive(5.0, 0.1),
                                  SmoothEpsilonInsensitive(50.0, 0.0)])
def test_row_losses_derivatives_and_limits(loss):
    rng = np.random.default_rng(0)
    f = rng.uniform(-3, 3, 500)
    y = rng.choice([-1.0, 1.0], 500) if isinstance(loss, SmoothHinge) else rng.normal(size=500)
    d1, d2 = loss.derivatives(f, y)
    h = 1e-6
    np.testing.assert_allclose(d1, (loss.value(f + h, y) - loss.value(f - h, y)) / (2 * h),
                               atol=1e-5)
    np.testing.assert_allclose(d2, (loss.derivatives(f + h, y)[0]
                                    - loss.derivatives(f - h, y)[0]) / (2 * h),
                               atol=1e-4 * loss.alpha)
    assert np.all(d2 >= 0)
    if isinstance(loss, SmoothHinge):  # p → (·)₊: ℓ → ½ (1 − y f)₊²
        sharp = SmoothHinge(1e4).value(f, y)
        np.testing.assert_allclose(sharp, 0.5 * np.maximum(1 - y * f, 0) ** 2, atol=1e-4)
    else:
        sharp = SmoothEpsilonInsensitive(1e4, loss.epsilon).value(f, y)
        np.testing.assert_allclose(sharp, 0.5 * np.maximum(np.abs(y - f) - loss.epsilon, 0)
                                   ** 2, atol=1e-4)


def test_newton_armijo_solves_the_smooth_svr_problem():
    """The same driver on the ε-insensitive loss: the gradient of F vanishes at the result."""
    rng = np.random.default_rng(1)
    X = rng.uniform(-2, 2, (400, 1))
    y = np.sin(2 * X[:, 0]) + 0.1 * rng.standard_normal(400)
    K = gaussian_kernel(X, X[::10], 0.5)
    A = np.hstack([K, -np.ones((400, 1))])
    loss = SmoothEpsilonInsensitive(20.0, 0.05)
    res = newton_armijo(InMemoryNewtonPasses(A, y, loss, block_rows=len(A)), A.shape[1],
                        C=10.0, tol=1e-10)
    assert res.converged
    d1, _ = loss.derivatives(A @ res.u, y)
    np.testing.assert_allclose(res.u + 10.0 * A.T @ d1, 0, atol=1e-7 * res.grad_norm0)
    assert np.sqrt(np.mean((A @ res.u - np.sin(2 * X[:, 0])) ** 2)) < 0.1


@pytest.mark.parametrize(("C", "alpha", "noise", "backtracks"),
                         [(1.0, 5.0, 0.05, False), (1e4, 20.0, 0.0, True),
                          (1e4, 50.0, 0.0, True)])
def test_batched_armijo_equals_classic_newton_armijo(C, alpha, noise, backtracks):
    """Same steps, iterations and solution as one-trial-at-a-time Newton–Armijo."""
    X, y = _xor(300, noise=noise)
    K = gaussian_kernel(X, X[:40], 0.7)
    A = np.hstack([K, -np.ones((300, 1))])
    res = newton_armijo(InMemoryNewtonPasses(A, y, SmoothHinge(alpha), block_rows=len(A)), 41,
                        C=C, tol=1e-10, max_iter=100)
    u_ref, steps_ref = classic_rsvm(K, y.astype(float), C, alpha)
    assert res.converged
    assert res.steps == steps_ref
    assert (res.backtracked > 0) == backtracks
    assert res.passes == 1 + res.iterations + res.backtracked
    np.testing.assert_allclose(res.u, u_ref, rtol=1e-8, atol=1e-10 * np.abs(u_ref).max())
    # a first batch of the step 1 alone (the others when it fails, as the in-memory fits
    # do with four): the same steps and the same solution, bit for bit, one more pass for
    # each iteration that backtracked
    two = newton_armijo(InMemoryNewtonPasses(A, y, SmoothHinge(alpha), block_rows=len(A)), 41,
                        C=C, tol=1e-10, max_iter=100, first_trials=1)
    assert two.steps == res.steps
    np.testing.assert_array_equal(two.u, res.u)
    assert two.passes == res.passes + res.backtracked


def test_exact_against_a_direct_newton_solve_with_all_samples_as_centers():
    """Ã = all samples, n ≤ 2000: decision values equal a direct solve of (5) to 1e-6."""
    X, y = _xor(1000, seed=1)
    C, alpha, omega = 10.0, 5.0, 0.8
    Xd = da.from_array(X, chunks=(300, -1))
    with dask.config.set(scheduler="sync"):
        model = ReducedSVC(omega=omega, C=C, smoothing=alpha, size=len(X), standardize=False,
                           tol=1e-12, random_state=0).fit(Xd, y)
    exp = model.expansion_
    np.testing.assert_array_equal(np.sort(exp.centers, axis=0), np.sort(X, axis=0))
    u_ref, _ = classic_rsvm(gaussian_kernel(X, exp.centers, omega), y.astype(float), C, alpha,
                            tol=1e-12)
    Xt, _ = _xor(500, seed=2)
    ref = gaussian_kernel(Xt, exp.centers, omega) @ u_ref[:-1] - u_ref[-1]
    got = KernelExpansion.from_parts(exp.centers, exp.coef, exp.intercept, omega,
                                       dtype="float64").decision(Xt)
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6 * np.abs(ref).max())
    # the float32 kernel blocks of prediction agree to float32 round-off
    np.testing.assert_allclose(model.decision_function(Xt), ref, atol=1e-4 * np.abs(ref).max())
    assert model.fit_report_["converged"] and model.fit_report_["n_basis"] == len(X)


def _fit(X, y, **kw):
    params = {"omega": 0.7, "C": 5.0, "size": 40, "random_state": 3, "tol": 1e-10}
    return ReducedSVC(**{**params, **kw}).fit(X, y)


@pytest.mark.determinism
@settings(max_examples=10)
@given(chunks=st.lists(st.integers(7, 300), min_size=1, max_size=6))
def test_same_fit_for_any_chunking(chunks):
    X, y = _xor(600, seed=4)
    sizes, left = [], len(X)
    for c in chunks:
        if left <= 0:
            break
        sizes.append(min(c, left))
        left -= sizes[-1]
    if left > 0:
        sizes.append(left)
    with dask.config.set(scheduler="sync"):
        ref = _fit(X, y)
        got = _fit(da.from_array(X, chunks=(tuple(sizes), 2)),
                   da.from_array(y, chunks=(tuple(sizes),)))
    # numpy input: the whole Newton in memory; dask input: one pass per iteration
    assert ref.fit_report_["solver"] == "newton-armijo, in memory"
    assert got.fit_report_["solver"] == "newton-armijo, one pass per step"
    np.testing.assert_array_equal(ref.reduced_index_, got.reduced_index_)
    np.testing.assert_array_equal(ref.expansion_.centers, got.expansion_.centers)
    np.testing.assert_allclose(got.expansion_.coef, ref.expansion_.coef, rtol=1e-9,
                               atol=1e-12 * np.abs(ref.expansion_.coef).max())
    assert got.fit_report_["iterations"] == ref.fit_report_["iterations"]


def test_same_fit_on_one_and_two_workers(client):
    from distributed import Client, LocalCluster

    X, y = _xor(3000, seed=5)
    Xd, yd = da.from_array(X, chunks=(500, -1)), da.from_array(y, chunks=500)
    two = _fit(Xd, yd)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster, \
            Client(cluster, set_as_default=False) as one_client, one_client.as_current():
        one = _fit(Xd, yd)
    with dask.config.set(scheduler="sync"):
        local = _fit(X, y)
    for other in (one, local):
        np.testing.assert_array_equal(two.reduced_index_, other.reduced_index_)
        np.testing.assert_allclose(other.expansion_.coef, two.expansion_.coef, rtol=1e-9,
                                   atol=1e-12 * np.abs(two.expansion_.coef).max())


def test_one_read_of_the_data_per_newton_pass(client):
    X, y = _xor(4000, seed=6, noise=0.0)
    Xd = da.from_array(X, chunks=(1000, -1), name="rsvm-source-X")
    yd = da.from_array(y, chunks=1000, name="rsvm-source-y")
    with get_task_stream(client) as ts:
        model = _fit(Xd, yd, C=1e4, smoothing=50.0)  # a setting whose line search backtracks
    rep = model.fit_report_
    names = Counter(t["key"][0] if isinstance(t["key"], tuple) else t["key"] for t in ts.data)
    assert rep["backtracked"] > 0 and rep["converged"]
    # at tol 1e-10 the fit may end at round-off, where the processor's BLAS decides: then
    # a last line search finds no decrease at any trial step, one pass more
    last_search = 1 if "no decrease" in rep["message"] else 0
    assert rep["passes"] == 1 + rep["iterations"] + rep["backtracked"] + last_search
    assert names["rsvm-source-X"] == rep["reads"] * Xd.npartitions  # reads = passes + the draw
    assert names["rsvm-source-y"] == rep["reads"] * Xd.npartitions
    newton = sum(v for k, v in names.items() if str(k).startswith("reduced-svm-newton"))
    assert newton == rep["passes"] * Xd.npartitions


def test_non_finite_rows_are_left_out_and_counted():
    X, y = _xor(800, seed=7)
    Xbad = X.copy()
    Xbad[:30, 1] = np.nan
    Xbad[30:40] = np.inf
    with dask.config.set(scheduler="sync"):
        got = _fit(Xbad, y)
        ref = _fit(X[40:], y[40:])
    rep = got.fit_report_
    assert (rep["n_nonfinite"], rep["n_absent"], rep["n_valid"]) == (30, 10, 760)
    assert rep["n_nonfinite_by_feature"] == {"f0": 0, "f1": 30}
    assert np.all(got.reduced_index_ >= 40)
    Xt, _ = _xor(200, seed=8)
    # the same usable rows (shifted row numbers draw another Ã): a similar classifier
    assert np.mean(got.predict(Xt) == ref.predict(Xt)) > 0.9
    assert np.isnan(got.decision_function(Xbad[:5])).all()
    Xbad[:400, 0] = np.nan
    with pytest.raises(DataQualityError, match="max_nonfinite_fraction"):
        _fit(Xbad, y)


_WIDTH = r"must be a float in the range \[1e-100, 1e\+100\]"
_POSITIVE = r"must be a float in the range \(0\.0, inf\)"


def test_bad_input_is_a_clear_error():
    X, y = _xor(100)
    y[:10] = 1  # the first 10 rows keep both classes below
    y[:5] = -1
    cases = [({"size": 101}, ValueError, "more than the 100 rows"),
             ({"size": 1}, ValueError, r"'size' parameter of ReducedSVC must be an int in "
                                       r"the range \[2, inf\) or None"),
             ({"omega": 0.0}, ValueError, rf"'omega' parameter of ReducedSVC {_WIDTH}"),
             ({"omega": -1.0}, ValueError, rf"'omega' parameter of ReducedSVC {_WIDTH}"),
             ({"C": 0.0}, ValueError, rf"'C' parameter of ReducedSVC {_POSITIVE}"),
             ({"C": -2.0}, ValueError, rf"'C' parameter of ReducedSVC {_POSITIVE}"),
             ({"smoothing": 0.0}, ValueError, rf"'smoothing' parameter .* {_POSITIVE}"),
             ({"tol": 0.0}, ValueError, rf"'tol' parameter of ReducedSVC {_POSITIVE}"),
             ({"max_iter": 0}, ValueError, r"'max_iter' parameter .* an int in the range "
                                           r"\[1, inf\)")]
    for kwargs, err, match in cases:
        with pytest.raises(err, match=match):
            _fit(X, y, **kwargs)
    with pytest.raises(LabelError, match="one class only"):
        _fit(X, np.ones(100))
    with pytest.raises(LabelError, match="one class only"):
        _fit(da.from_array(X, chunks=50), da.from_array(np.ones(100), chunks=50))
    # three lazy classes are fitted one-vs-rest (tests/models/test_reduced_classes.py)
    three = _fit(da.from_array(X, chunks=50), da.from_array(np.arange(100) % 3, chunks=50))
    np.testing.assert_array_equal(three.classes_, [0, 1, 2])
    X2 = X.copy()
    X2[10:, 0] = np.nan  # 90% of the present rows
    with pytest.raises(DataQualityError, match="90 of 100 present rows"):
        _fit(X2, y)
    X2[10:] = np.nan  # absent rows: no data, not bad data; too few usable rows are left
    with pytest.raises(ValueError, match="size=40 is more than the 10 usable rows"):
        _fit(X2, y)


def test_string_classes_lazy_labels_and_persistence(tmp_path):
    from bigkern.models import persistence

    X, y = _xor(600, seed=9)
    labels = np.where(y > 0, "cloud", "clear")
    with dask.config.set(scheduler="sync"):
        eager = _fit(X, labels)
        lazy = _fit(da.from_array(X, chunks=200), da.from_array(labels, chunks=200))
    np.testing.assert_array_equal(eager.classes_, ["clear", "cloud"])
    np.testing.assert_array_equal(lazy.classes_, eager.classes_)
    np.testing.assert_allclose(lazy.expansion_.coef, eager.expansion_.coef, rtol=1e-9,
                               atol=1e-12 * np.abs(eager.expansion_.coef).max())
    assert eager.score(X, labels) > 0.85
    path = persistence.save_model(eager, tmp_path / "rsvc.zarr")
    back = persistence.load_model(path)
    assert isinstance(back, ReducedSVC) and back.get_params() == eager.get_params()
    np.testing.assert_array_equal(back.decision_function(X), eager.decision_function(X))


def _csv_set(name):
    from bigkern.datasets import shared_data_dir

    root = shared_data_dir()
    path = None if root is None else root / "classification" / name
    if path is None or not path.exists():
        pytest.skip(f"../shared/data/classification/{name} is not present: real-data tests need it")
    return path


@pytest.mark.parametrize("name", ["ionosphere.data", "pima-indians-diabetes.data.csv"])
def test_accuracy_close_to_libsvm_on_real_data(name):
    """10% of n as centers (Table 1's setting): 5-fold CV accuracy within 2 points of SVC."""
    from sklearn.model_selection import StratifiedKFold
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    path = _csv_set(name)
    if name.startswith("ionosphere"):
        raw = np.loadtxt(path, delimiter=",", skiprows=1, dtype=str)
        X, y = raw[:, :-1].astype(float), raw[:, -1]
        X = X[:, X.std(axis=0) > 0]
        omega, C_svc, C_rsvm = 3.0, 10.0, 100.0  # each the best of a 4 x 3 mesh (10-fold CV)
    else:
        raw = np.loadtxt(path, delimiter=",")
        X, y = raw[:, :-1], raw[:, -1].astype(int)
        omega, C_svc, C_rsvm = 3.0, 1.0, 1.0
    gamma = 1.0 / (2 * omega**2)
    acc = {"svc": [], "rsvm": []}
    with dask.config.set(scheduler="sync"), warnings.catch_warnings():
        warnings.simplefilter("error", category=UserWarning)
        for train, test in StratifiedKFold(5, shuffle=True, random_state=0).split(X, y):
            sc = StandardScaler().fit(X[train])
            Xtr, Xte = sc.transform(X[train]), sc.transform(X[test])
            svc = SVC(C=C_svc, gamma=gamma).fit(Xtr, y[train])
            rsvm = ReducedSVC(omega=omega, C=C_rsvm, fraction=0.1, standardize=False,
                              random_state=0).fit(Xtr, y[train])
            acc["svc"].append(svc.score(Xte, y[test]))
            acc["rsvm"].append(rsvm.score(Xte, y[test]))
    svc_acc, rsvm_acc = np.mean(acc["svc"]), np.mean(acc["rsvm"])
    print(f"{name}: SVC {svc_acc:.4f}, ReducedSVC {rsvm_acc:.4f}")
    assert rsvm_acc > svc_acc - 0.02, (name, svc_acc, rsvm_acc)
