"""Nyström kernel ridge by preconditioned conjugate gradients (``solver="cg"``, ``"auto"``).

``solver="cg"`` solves the system the direct solver factors, without ``GᵀG``: it must
give the direct solver's predictions, on numpy or on a cluster, whatever the chunking;
a solve that stops short says so (iterations and residual), never silently.
"""

from __future__ import annotations

import re

import dask.array as da
import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from bigkern import NystromKernelRidge, NystromKernelRidgeClassifier
from bigkern.kernels import Basis, gaussian_kernel, kernel_blocks
from bigkern.reduce.reduced.products import kernel_products
from bigkern.solvers.conjugate_gradients import FalkonPreconditioner, preconditioned_cg

# a converged solve warns of nothing (once, the recurrence's residual met tol while the true
# one did not, and the solve ran on to max_iter and said so)
pytestmark = pytest.mark.filterwarnings("error::sklearn.exceptions.ConvergenceWarning")


def _regression(n: int = 2000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    return X, np.sin(X[:, 0]) + 0.3 * X[:, 1] + 0.1 * rng.standard_normal(n)


#: the direct solve's coefficients, not the default's accuracy-level stop (tol 2e-2)
TIGHT = {"tol": 1e-7, "max_iter": 100}


def _relative(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a - b).max() / np.abs(b).max())


def test_cg_gives_the_direct_solvers_predictions():
    X, y = _regression()
    kw = {"omega": 1.0, "lam": 1.0, "size": 150, "random_state": 0}
    direct = NystromKernelRidge(**kw).fit(X, y)
    cg = NystromKernelRidge(**kw, solver="cg", **TIGHT).fit(X, y)
    np.testing.assert_array_equal(cg.expansion_.centers, direct.expansion_.centers)
    assert _relative(cg.predict(X), direct.predict(X)) < 1e-6
    report = cg.fit_report_
    assert report["solver"] == "cg" and report["converged"] and report["residual"] <= 1e-7
    # the draw, the preconditioner's sample (no subset: it would be most of the rows), the
    # right-hand side (which keeps the kernel blocks: the steps read no rows)
    assert report["kept_blocks"]["kept_chunks"] == report["kept_blocks"]["chunks"]
    assert report["reads"] == 3 and report["products"] >= report["n_iter"]
    assert report["preconditioner"].startswith("Gram matrix of a sample of")
    assert report["n_valid"] == len(y)


def test_cg_classifier_gives_the_direct_solvers_labels():
    X, y = _regression(seed=1)
    labels = np.where(y > 0, "cloud", "clear")
    kw = {"omega": 1.0, "lam": 1.0, "size": 150, "random_state": 0}
    direct = NystromKernelRidgeClassifier(**kw).fit(X, labels)
    cg = NystromKernelRidgeClassifier(**kw, solver="cg", **TIGHT).fit(X, labels)
    # K(Ã, Ã) is near singular here: the direct solve drops its eigendirections under
    # 1e-10 of the largest, CG adds ε·m̃ to its diagonal, and the two solutions part there
    assert _relative(cg.decision_function(X), direct.decision_function(X)) < 1e-3
    np.testing.assert_array_equal(cg.predict(X), direct.predict(X))


def test_a_solve_that_stops_short_names_its_iterations_and_residual():
    X, y = _regression()
    with pytest.warns(ConvergenceWarning, match=r"after 3 iterations .* relative residual"):
        model = NystromKernelRidge(omega=1.0, lam=1e-3, size=150, random_state=0,
                                   solver="cg", max_iter=3, tol=1e-7).fit(X, y)
    assert not model.fit_report_["converged"] and model.fit_report_["n_iter"] == 3
    assert model.fit_report_["residual"] > 1e-7


@pytest.mark.parametrize("chunks", [250, 333])
def test_any_chunking_gives_the_same_fit(chunks):
    X, y = _regression(n=1000)
    kw = {"omega": 1.0, "lam": 10.0, "size": 60, "random_state": 0, "solver": "cg"}
    reference = NystromKernelRidge(**kw).fit(X, y)
    chunked = NystromKernelRidge(**kw).fit(da.from_array(X, chunks=(chunks, 3)),
                                           da.from_array(y, chunks=chunks))
    np.testing.assert_array_equal(chunked.expansion_.centers, reference.expansion_.centers)
    # sums in another order: equal to rounding (amplified by the solve), not bit for bit
    assert _relative(chunked.predict(X), reference.predict(X)) < 1e-7


def test_cg_on_a_cluster_with_masked_and_missing_rows(client):
    X, y = _regression(n=1000)
    X[::97, 1] = np.nan  # tolerated, counted
    mask = np.ones(len(y), dtype=bool)
    mask[::5] = False
    kw = {"omega": 1.0, "lam": 10.0, "size": 60, "random_state": 0}
    Xd, yd, md = (da.from_array(a, chunks=400) if a.ndim == 1 else
                  da.from_array(a, chunks=(400, 3)) for a in (X, y, mask))
    cg = NystromKernelRidge(**kw, solver="cg", **TIGHT).fit(Xd, yd, mask=md)
    direct = NystromKernelRidge(**kw).fit(X, y, mask=mask)
    finite = np.isfinite(X).all(axis=1)
    assert _relative(cg.predict(X[finite]), direct.predict(X[finite])) < 1e-6
    assert cg.fit_report_["n_masked"] == direct.fit_report_["n_masked"] == (~mask).sum()
    assert cg.fit_report_["n_nonfinite"] == direct.fit_report_["n_nonfinite"] > 0


@pytest.mark.parametrize("kw, words", [
    ({"omega": [0.5, 1.0]}, "2 widths"),
    ({"penalty": "coef"}, "penalty='rkhs'"),
])
def test_cg_refuses_what_only_the_direct_solver_does(kw, words):
    X, y = _regression(n=200)
    with pytest.raises(ValueError, match=words):
        NystromKernelRidge(**{"size": 20, "solver": "cg", **kw}).fit(X, y)


def test_kernel_products_are_the_products_of_the_kernel_matrix():
    rng = np.random.default_rng(2)
    X, y = rng.standard_normal((700, 2)), rng.standard_normal(700)
    mask = rng.uniform(size=700) < 0.8
    basis = Basis.checked(X[:30], omega=0.7, d=2)
    V = rng.standard_normal((30, 2))
    got = kernel_products(da.from_array(X, chunks=(123, 2)), da.from_array(y, chunks=123),
                          basis, V, mask=da.from_array(mask, chunks=123))
    G = gaussian_kernel(X[mask], X[:30], 0.7)
    np.testing.assert_allclose(got["GtGV"], G.T @ (G @ V), rtol=1e-12)
    np.testing.assert_allclose(got["Gty"], G.T @ y[mask], rtol=1e-12)
    np.testing.assert_allclose(got["Gsum"], G.sum(axis=0), rtol=1e-12)
    assert got["n"] == mask.sum() and got["ysum"] == pytest.approx(y[mask].sum())


@pytest.mark.parametrize("targets", [True, False])
def test_the_compiled_products_of_float32_rows_are_the_kernel_blocks_products(targets):
    """Float32 rows take the compiled per-row loop: its products are those of the kernel
    blocks it never forms (the same float32 kernel values, summed in float64), with rows
    masked out or holding NaN left out, and the targets' sums only when asked for."""
    rng = np.random.default_rng(4)
    X = (3.0 * rng.standard_normal((900, 5)) + 1.0).astype(np.float32)
    X[[7, 400], 2] = np.nan
    y = rng.standard_normal(900)
    mask = rng.uniform(size=900) < 0.9
    basis = Basis.checked(X[10:50].astype(np.float64), omega=1.3, d=5,
                                  offset=np.full(5, 1.0), scale=np.full(5, 3.0))
    V = 1e3 * rng.standard_normal((40, 2))  # large, of both signs: float32 sums would fail
    got = kernel_products(da.from_array(X, chunks=(250, 5)), da.from_array(y, chunks=250),
                          basis, V, targets=targets, mask=da.from_array(mask, chunks=250))
    used = mask & np.isfinite(X).all(axis=1)
    G = np.concatenate([G.astype(np.float64) for _, G in  # the same float32 kernel values
                        kernel_blocks(X[used], basis, fused=True, block_rows=64)])
    # each entry within float64 round-off of the sum of its terms' magnitudes (G >= 0)
    bound = G.T @ (G @ np.abs(V))
    assert (np.abs(got["GtGV"] - G.T @ (G @ V)) <= 1e-12 * bound).all()
    assert got["counts"]["n_valid"] == used.sum()
    assert got["counts"]["n_nonfinite"] == (mask & ~np.isfinite(X).all(axis=1)).sum()
    if targets:
        np.testing.assert_allclose(got["Gty"], G.T @ y[used], rtol=1e-12,
                                   atol=1e-12 * (G.T @ np.abs(y[used])).max())
        np.testing.assert_allclose(got["Gsum"], G.sum(axis=0), rtol=1e-12)
        assert got["n"] == used.sum() and got["ysum"] == pytest.approx(y[used].sum())
    else:
        assert set(got) == {"GtGV", "counts"}


def test_the_preconditioner_makes_few_iterations_and_a_warm_start_fewer():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((1500, 2))
    G, K = gaussian_kernel(X, X[:60], 1.0), gaussian_kernel(X[:60], X[:60], 1.0)
    rhs = G.T @ np.cos(X[:, 1])
    H = G.T @ G + 1.0 * K  # condition ~1e15: the residual, not a solve, is the yardstick
    plain = preconditioned_cg(lambda v: G.T @ (G @ v), rhs,
                              FalkonPreconditioner.from_kernel(K, 1500, 1.0), 1.0)
    assert plain.converged and plain.n_iter <= 60
    assert np.linalg.norm(H @ plain.coef - rhs) < 1e-7 * np.linalg.norm(rhs)
    assert np.linalg.cond(H) > 1e10
    warm = preconditioned_cg(lambda v: G.T @ (G @ v), rhs,
                             FalkonPreconditioner.from_kernel(K, 1500, 1.0), 1.0,
                             start=plain.coef)
    assert warm.converged and warm.n_iter < plain.n_iter // 2
    # the start's product given by the caller: the same solve, one product fewer (the
    # coefficients of this ill-conditioned system differ in round-off, G c does not)
    start = 0.5 * plain.coef
    pre = FalkonPreconditioner.from_kernel(K, 1500, 1.0)
    asked = preconditioned_cg(lambda v: G.T @ (G @ v), rhs, pre, 1.0, start=start)
    given = preconditioned_cg(lambda v: G.T @ (G @ v), rhs, pre, 1.0, start=start,
                              start_product=G.T @ (G @ start))
    assert given.converged and asked.converged
    assert given.n_products == asked.n_products - 1 and given.n_iter == asked.n_iter
    np.testing.assert_allclose(G @ given.coef, G @ asked.coef, rtol=0, atol=1e-6)


def test_the_fit_job_reports_the_iterations_and_the_residual():
    from bigkern.datasets import make_scenes
    from bigkern.jobs.fit import fit_scenes
    from bigkern.jobs.outcome import report_text

    scenes = make_scenes(2, (48, 64), seed=4, radiances=False).compute()
    out = fit_scenes(scenes, model="nystrom-krr", params={"solver": "cg", "lam": 1.0},
                     search=False)
    text = report_text(out)
    assert re.search(r"conjugate-gradient iterations.* to a relative residual of", text), text
    assert f"({out.model.fit_report_['reads']} reads with the draw" in text


def test_a_solve_at_its_round_off_floor_stops_there_and_keeps_its_best_iterate():
    """Products with a relative noise of 1e-12 (round-off, which T⁻¹ amplifies by cond(K)
    here) cannot reach tol=1e-12: CG stops when its recomputed residual has not
    improved at two restarts running, well before max_iter, returns the best iterate it
    saw and says why it stopped."""
    rng = np.random.default_rng(5)
    X = rng.standard_normal((1500, 2))
    G, K = gaussian_kernel(X, X[:60], 1.0), gaussian_kernel(X[:60], X[:60], 1.0)
    rhs = G.T @ np.cos(X[:, 1])
    noise = np.random.default_rng(6)

    def noisy(v: np.ndarray) -> np.ndarray:
        exact = G.T @ (G @ v)
        return exact + 1e-12 * np.linalg.norm(exact) * noise.standard_normal(len(v))

    pre = FalkonPreconditioner.from_kernel(K, 1500, 1.0)
    with pytest.warns(ConvergenceWarning, match=r"no longer decreasing.* raise lam"):
        found = preconditioned_cg(noisy, rhs, pre, 1.0, tol=1e-12, max_iter=1000)
    assert not found.converged and found.n_iter < 200
    # the iterate returned is good to its reported residual (measured with exact products)
    H = G.T @ G + 1.0 * (pre.T.T @ pre.T)  # K with its jitter, as CG solves it
    exact = pre.apply_transpose(rhs - H @ found.coef)
    assert np.linalg.norm(exact) / np.linalg.norm(pre.apply_transpose(rhs)) < 1e-3
    assert 1e-12 < found.residual < 1e-3


def test_a_start_from_a_subset_is_near_the_solution_and_changes_no_solution():
    """With many rows per center, CG starts from the solution on a random subset of about
    10 rows per center, held in memory: three iterations over all rows from there leave a
    residual over five times smaller than three from zero; run to convergence, the
    solution is the direct solve's, the same for any chunking, whose subset is the same
    rows (drawn by a hash of the global row number)."""
    X, y = _regression(n=6000, seed=7)
    Xf = X.astype(np.float32)  # the compiled products
    kw = {"omega": 1.0, "lam": 1e-2, "size": 40, "random_state": 0}
    short = {}
    for start in ("subset", "zero"):
        with pytest.warns(ConvergenceWarning, match="after 3 iterations"):
            model = NystromKernelRidge(**kw, solver="cg", cg_start=start, max_iter=3,
                                       tol=1e-7)
            short[start] = model.fit(Xf, y).fit_report_
    assert short["subset"]["start"] == "subset" and short["zero"]["start"] == "zero"
    assert 0.75 * 400 < short["subset"]["start_rows"] < 1.25 * 400  # 10 rows per center
    assert short["subset"]["start_iterations"] > 0
    # one read gathers the subset (and the preconditioner's sample from it), one the zero
    # start's preconditioner sample; the right-hand side's read gives the start's product
    assert short["subset"]["reads"] == short["zero"]["reads"]
    assert short["subset"]["residual"] < 0.2 * short["zero"]["residual"]

    direct = NystromKernelRidge(**kw).fit(Xf, y).predict(X)
    rows = set()
    for chunks in (None, 700, 1111):
        Xi, yi = (Xf, y) if chunks is None else (da.from_array(Xf, chunks=(chunks, 3)),
                                                 da.from_array(y, chunks=chunks))
        model = NystromKernelRidge(**kw, solver="cg", max_iter=200, tol=1e-7).fit(Xi, yi)
        assert model.fit_report_["converged"] and model.fit_report_["start"] == "subset"
        rows.add(model.fit_report_["start_rows"])
        np.testing.assert_allclose(model.predict(X), direct, rtol=0, atol=1e-5)
    assert len(rows) == 1


def test_the_samples_preconditioner_needs_fewer_iterations_at_small_lam():
    """The preconditioner's ``GᵀG`` from the Gram matrix of 4 subset rows per centre, not
    from the centres alone (Falkon's): at λ = 0.1 it reaches the same solution in a
    fraction of the iterations (27 against 134 here), and at λ = 10⁻⁴, where Falkon's
    stops short after 300 (residual 6·10⁻⁴), it converges in under 100 (34 here);
    ``bigkern.cg_preconditioner_rows: 0`` restores Falkon's."""
    import dask.config

    X, y = _regression(n=6000, seed=3)
    kw = {"omega": 0.7, "size": 200, "random_state": 0, "solver": "cg", "tol": 1e-6,
          "max_iter": 300}
    sampled = NystromKernelRidge(lam=0.1, **kw).fit(X, y)
    with dask.config.set({"bigkern.cg_preconditioner_rows": 0}):
        falkon = NystromKernelRidge(lam=0.1, **kw).fit(X, y)
    rs, rf = sampled.fit_report_, falkon.fit_report_
    assert rs["preconditioner"] == "Gram matrix of a sample of 800 rows"
    assert rf["preconditioner"] == "the centres' kernel (Falkon's)"
    assert rs["converged"] and rf["converged"]
    assert rs["n_iter"] < rf["n_iter"] / 3, (rs["n_iter"], rf["n_iter"])
    np.testing.assert_allclose(sampled.predict(X), falkon.predict(X), rtol=0, atol=1e-4)
    small = NystromKernelRidge(lam=1e-4, **{**kw, "max_iter": 100}).fit(X, y).fit_report_
    assert small["converged"] and small["residual"] <= 1e-6


def test_a_subset_that_would_be_most_of_the_rows_is_not_drawn():
    X, y = _regression(n=600)
    model = NystromKernelRidge(omega=1.0, lam=1.0, size=60, random_state=0,
                               solver="cg").fit(X, y)  # 10 x 60 rows > half of 600
    assert model.fit_report_["start"] == "zero" and model.fit_report_["start_rows"] == 0


# ---------------------------------------------------------------------------
# solver="auto": conjugate gradients where they win, the direct solve elsewhere
# ---------------------------------------------------------------------------
@pytest.fixture
def low_auto_threshold(monkeypatch):
    """Let ``solver="auto"`` try CG from 100 centers, so that a small case shows the choice."""
    monkeypatch.setattr("bigkern.models.reduced_kernel._nystrom_fit.AUTO_CG_CENTERS", 100)


def test_auto_takes_cg_where_the_subset_says_it_converges(low_auto_threshold):
    X, y = _regression(4000)  # a subset of 10 rows per center is at most half the rows
    kw = {"omega": 1.0, "lam": 1.0, "size": 150, "random_state": 0}
    auto = NystromKernelRidge(**kw).fit(X, y)
    cg = NystromKernelRidge(**kw, solver="cg").fit(X, y)
    assert auto.solver_ == "cg" and auto.fit_report_["solver"] == "cg"
    assert "solver='auto': conjugate gradients" in auto.fit_report_["solver_choice"]
    assert auto.fit_report_["start_residual"] <= 2 * auto.tol
    # the same fit, not a second one
    np.testing.assert_array_equal(auto.expansion_.coef, cg.expansion_.coef)


@pytest.mark.parametrize(("kw", "words"), [
    ({"lam": [0.1, 1.0]}, "1 × 2 candidates"),
    ({"penalty": "coef"}, "penalty='coef'"),
    ({"size": 99}, "99 centers, under 100"),
    ({"cg_start": "zero"}, "no subset"),
    # the subset's solve stops at 1e-3 at best: over 2 × tol, so CG would not converge
    ({"tol": 1e-9}, "over 2 × tol"),
])
def test_auto_falls_back_to_the_direct_solve_and_says_why(low_auto_threshold, kw, words):
    X, y = _regression(4000)
    base = {"omega": 1.0, "lam": 1.0, "size": 150, "random_state": 0, **kw}
    auto = NystromKernelRidge(**base).fit(X, y)
    direct = NystromKernelRidge(**{**base, "solver": "direct"}).fit(X, y)
    assert auto.solver_ == "direct" and auto.fit_report_["solver"] == "direct"
    assert words in auto.fit_report_["solver_choice"]
    # the direct fit, whole
    np.testing.assert_array_equal(auto.expansion_.coef, direct.expansion_.coef)
    assert direct.fit_report_["solver_choice"] == "solver='direct'"


def test_auto_is_the_default_and_keeps_the_direct_solve_below_its_threshold():
    X, y = _regression()
    model = NystromKernelRidgeClassifier(omega=1.0, lam=1.0, size=150, random_state=0)
    assert model.get_params()["solver"] == "auto"
    model.fit(X, np.where(y > 0, 1, -1))
    assert model.solver_ == "direct"
    assert "150 centers, under 1,000" in model.fit_report_["solver_choice"]


# ---------------------------------------------------------------------------
# several lam with solver="cg": a warm-started path, chosen on a held-out fold
# ---------------------------------------------------------------------------
def _heldout_mse(model, X, y, lam, train):
    """The held-out error of the exact solution on the training rows, in ``model``'s basis
    (its centers and scaling), by dense numpy algebra."""
    e = model.expansion_
    Z = np.clip((X - e.offset) / e.scale, -e.basis.clip, e.basis.clip)
    G = gaussian_kernel(Z, e.centers, model.omega_)
    K = gaussian_kernel(e.centers, e.centers, model.omega_)
    Gt, yt = G[train], y[train]
    g, n = Gt.sum(axis=0), len(yt)
    c = np.linalg.solve(Gt.T @ Gt - np.outer(g, g) / n + lam * K, Gt.T @ yt - g * yt.sum() / n)
    b = (yt.sum() - g @ c) / n
    return float(np.mean((G[~train] @ c + b - y[~train]) ** 2))


def test_a_lam_path_scores_each_lam_on_the_held_out_fold_and_refits_the_best():
    from bigkern.reduce.reduced.normal_equations import fold_of_rows

    X, y = _regression(3000, seed=2)
    lams = [0.3, 3.0, 30.0, 300.0]
    kw = {"omega": 1.0, "size": 120, "random_state": 0}
    path = NystromKernelRidge(**kw, lam=lams, solver="cg", n_folds=3, **TIGHT).fit(X, y)
    train = fold_of_rows(np.arange(len(y)), 3, 0) != 0  # fold 0 held out
    expected = [_heldout_mse(path, X, y, lam, train) for lam in lams]
    # each score is the held-out error of that lam's solve on the other folds
    np.testing.assert_allclose(path.cv_scores_[0], expected, rtol=1e-5)
    assert path.lam_ == lams[int(np.argmin(expected))]
    report = path.fit_report_
    assert report["n_candidates"] == 4 and report["start"] == "path"
    assert report["n_held_out"] == (~train).sum()
    assert report["path_converged"] and set(report["path_iterations"]) == set(lams)
    # the refit on all rows is the single-lam fit at the chosen lam
    single = NystromKernelRidge(**kw, lam=path.lam_, solver="cg", **TIGHT).fit(X, y)
    assert _relative(path.predict(X), single.predict(X)) < 1e-5


def test_a_lam_path_warm_starts_each_solve_from_the_one_before():
    X, y = _regression(3000, seed=3)
    kw = {"omega": 1.0, "size": 120, "random_state": 0, **TIGHT}
    lams = [10.0, 3.0, 1.0, 0.3]
    path = NystromKernelRidge(**kw, lam=lams, solver="cg").fit(X, y)
    iters = path.fit_report_["path_iterations"]
    alone = [NystromKernelRidge(**kw, lam=lam, solver="cg", cg_start="zero").fit(X, y)
             .fit_report_["n_iter"] for lam in lams[1:]]
    # after the first, a solve from its neighbour's solution takes fewer iterations than
    # the same solve from zero (on all rows here, a little more data, but the same system)
    assert sum(iters[lam] for lam in lams[1:]) < sum(alone)


def test_a_lam_path_preconditions_from_a_sample_of_its_training_rows():
    """The path draws its own sample (a stream of the hash other than its folds', which
    would draw the held-out fold) and makes each λ's preconditioner from it: fewer
    iterations than Falkon's at every λ, the same path of solutions."""
    import dask.config

    X, y = _regression(3000, seed=5)
    kw = {"omega": 0.7, "size": 120, "random_state": 0, "lam": [1.0, 0.1, 0.01],
          "solver": "cg", "tol": 1e-7, "max_iter": 200}
    sampled = NystromKernelRidge(**kw).fit(X, y)
    with dask.config.set({"bigkern.cg_preconditioner_rows": 0}):
        falkon = NystromKernelRidge(**kw).fit(X, y)
    rs, rf = sampled.fit_report_, falkon.fit_report_
    assert rs["preconditioner"].startswith("Gram matrix of a sample of")
    assert rf["preconditioner"] == "the centres' kernel (Falkon's)"
    assert rs["path_converged"] and rf["path_converged"]
    assert all(rs["path_iterations"][lam] < rf["path_iterations"][lam] for lam in kw["lam"])
    assert rs["path_iterations"][0.01] < rf["path_iterations"][0.01] / 2
    np.testing.assert_allclose(sampled.cv_scores_, falkon.cv_scores_, rtol=1e-4)
    assert sampled.lam_ == falkon.lam_


def test_a_lam_path_is_the_same_for_any_chunking():
    X, y = _regression(3000, seed=4)
    kw = {"omega": 1.0, "size": 100, "random_state": 0, "lam": [0.3, 3.0, 30.0],
          "solver": "cg", **TIGHT}
    ref = NystromKernelRidge(**kw).fit(X, y)
    for rows in (250, 1234):
        got = NystromKernelRidge(**kw).fit(da.from_array(X, chunks=(rows, 3)),
                                           da.from_array(y, chunks=rows))
        assert got.lam_ == ref.lam_
        np.testing.assert_allclose(got.cv_scores_, ref.cv_scores_, rtol=1e-6)
        assert _relative(got.predict(X), ref.predict(X)) < 1e-6


def test_auto_runs_a_lam_path_for_several_lam_with_many_centers(monkeypatch):
    monkeypatch.setattr("bigkern.models.reduced_kernel._nystrom_fit.AUTO_CG_PATH_CENTERS", 100)
    X, y = _regression(3000, seed=5)
    kw = {"omega": 1.0, "size": 120, "random_state": 0, "lam": [0.3, 3.0, 30.0], **TIGHT}
    auto = NystromKernelRidge(**kw).fit(X, y)
    path = NystromKernelRidge(**kw, solver="cg").fit(X, y)
    assert auto.solver_ == "cg" and "solver='auto': a λ path" in auto.fit_report_["solver_choice"]
    np.testing.assert_array_equal(auto.expansion_.coef, path.expansion_.coef)
    np.testing.assert_array_equal(auto.cv_scores_, path.cv_scores_)
    fewer = NystromKernelRidge(**{**kw, "size": 99}).fit(X, y)  # under the threshold: direct
    assert fewer.solver_ == "direct" and "1 × 3 candidates" in fewer.fit_report_["solver_choice"]
