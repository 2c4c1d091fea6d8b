"""Newton–CG for the reduced SVM: the finite-Newton / Newton–Armijo solution, in memory and
over chunks, and ``solver="auto"``'s choice."""

from __future__ import annotations

import dask
import dask.array as da
import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from bigkern import ReducedSVC, ReducedSVR
from bigkern.models.reduced_kernel import _newton_cg_fit
from bigkern.solvers.newton.finite_newton import finite_newton
from bigkern.solvers.newton.smooth_losses import SquaredHinge
from bigkern.solvers.newton.smooth_svm import drive
from bigkern.solvers.newton_cg.held_rows import HeldKernelRows, newton_cg
from bigkern.solvers.newton_cg.preconditioning import SampledPreconditioner, preconditioned_cg


def _kernel_problem(n: int = 400, m: int = 40, seed: int = 0
                    ) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = np.where((X**2).sum(axis=1) + 0.3 * rng.normal(size=n) < 1.4, 1.0, -1.0)
    Z = X[:m]
    A = np.exp(-0.5 * ((X[:, None, :] - Z[None]) ** 2).sum(axis=2))
    return np.column_stack([A, -np.ones(n)]), y


@pytest.mark.parametrize(("precondition", "exact"), [(False, False), (True, False),
                                                     (True, True)])
def test_newton_cg_is_the_finite_newton_solution(precondition: bool, exact: bool) -> None:
    A, y = _kernel_problem()
    exact = finite_newton(A, y, C=10.0, tol=1e-12)
    pre = SampledPreconditioner(A[::4], y[::4], len(A), C=10.0, loss=SquaredHinge(),
                                most=30) if precondition else None
    res = newton_cg(HeldKernelRows(A, y, SquaredHinge()), A.shape[1], C=10.0, tol=1e-12,
                    preconditioner=pre, exact_line_search=exact)
    assert res.converged
    np.testing.assert_allclose(res.u, exact.u, atol=1e-6)
    # line searches: the start's, one a step, one a backtrack, and a last one that may
    # find F optimal to round-off
    line = res.passes - sum(res.cg_iterations)
    assert line - (1 + res.iterations + res.backtracked) in (0, 1)


def test_float32_rows_steer_only() -> None:
    # float32 held rows: the curvature products are float32, the gradient float64
    A, y = _kernel_problem(seed=1)
    A32 = A.astype(np.float32)
    exact = finite_newton(A32.astype(np.float64), y, C=10.0, tol=1e-12)
    res = newton_cg(HeldKernelRows(A32, y, SquaredHinge()), A.shape[1], C=10.0, tol=1e-12)
    np.testing.assert_allclose(res.u, exact.u, atol=1e-6)


def test_the_preconditioner_cuts_iterations() -> None:
    A, y = _kernel_problem(seed=2)
    H = np.eye(A.shape[1]) + 10.0 * A.T @ A  # at u = 0 every row is in the margin
    g = -10.0 * (y @ A)
    counts = []
    for pre in (None, SampledPreconditioner(A[::2], y[::2], len(A), C=10.0,
                                            loss=SquaredHinge())):
        apply = (lambda r: r) if pre is None else pre.at(np.zeros(A.shape[1]))
        d, its, _ = drive(preconditioned_cg(g, apply, rtol=1e-8, max_iter=500),
                            lambda p: H @ p)
        np.testing.assert_allclose(H @ d, -g, atol=1e-6 * np.linalg.norm(g))
        counts.append(its)
    assert counts[1] < counts[0] / 2


def _rings(n: int = 1200, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    return X, np.where((X**2).sum(axis=1) + 0.3 * rng.normal(size=n) < 1.4, 1, -1)


@pytest.mark.parametrize("loss", ["squared_hinge", "smooth_hinge"])
def test_reduced_svc_newton_cg_in_memory_and_chunks_match_newton(loss: str) -> None:
    X, y = _rings(500)
    kw = {"omega": 1.0, "C": 10.0, "size": 30, "random_state": 0, "loss": loss,
          "tol": 1e-12}
    newton = ReducedSVC(solver="newton", **kw).fit(X, y)
    held = ReducedSVC(solver="newton-cg", **kw).fit(X, y)
    assert held.fit_report_["solver"].startswith("newton-cg, in memory")
    want = newton.decision_function(X)
    np.testing.assert_allclose(held.decision_function(X), want, atol=1e-6)
    with dask.config.set(scheduler="synchronous"):
        for rows in ((250,) if loss == "smooth_hinge" else (250, 173)):
            lazy = ReducedSVC(solver="newton-cg", **kw).fit(
                da.from_array(X, chunks=(rows, 2)), da.from_array(y, chunks=rows))
            rep = lazy.fit_report_
            assert rep["solver"].startswith("newton-cg, one read")
            # one read to draw Ã, one per line search and per CG iteration
            assert rep["reads"] == 1 + rep["passes"]
            line = rep["passes"] - sum(rep["cg_iterations"])
            assert line - (1 + rep["iterations"] + rep["backtracked"]) in (0, 1)
            np.testing.assert_allclose(lazy.decision_function(X), want, atol=1e-6)


def test_non_convergence_warns_with_iterations_and_residual() -> None:
    X, y = _rings(400)
    with pytest.warns(ConvergenceWarning, match=r"after 1 Newton iterations and \d+ CG "
                                                r"iterations.*gradient norm.*CG residual"):
        ReducedSVC(omega=1.0, C=10.0, size=30, random_state=0, loss="squared_hinge",
                   solver="newton-cg", max_iter=1).fit(X, y)


def test_auto_chooses_and_reports(monkeypatch: pytest.MonkeyPatch) -> None:
    X, y = _rings(400)
    kw = {"omega": 1.0, "C": 10.0, "size": 30, "random_state": 0, "loss": "squared_hinge"}
    small = ReducedSVC(**kw).fit(X, y)
    assert small.fit_report_["solver"].startswith("finite newton")
    assert "under 3,000 on kernel rows in memory" in small.fit_report_["solver_choice"]
    monkeypatch.setattr(_newton_cg_fit, "AUTO_NEWTON_CG_CENTERS", 30)
    large = ReducedSVC(**kw).fit(X, y)
    assert large.fit_report_["solver"].startswith("newton-cg")
    assert "at least 30" in large.fit_report_["solver_choice"]
    with dask.config.set(scheduler="synchronous"):
        lazy = ReducedSVC(**kw).fit(da.from_array(X, chunks=(200, 2)),
                                    da.from_array(y, chunks=200))
    assert "under 10,000 on chunked data" in lazy.fit_report_["solver_choice"]
    labels = np.digitize(X[:, 0], [-0.5, 0.5])
    # k held classes: from 2/k (squared hinge) or 4/k (smooth) of the two-class threshold,
    # at least AUTO_CLASSES_NEWTON_CG_CENTERS, at most the two-class threshold
    three = ReducedSVC(**kw).fit(X, labels)
    assert three.fit_report_["solver"].startswith("newton-cg, in memory")
    assert "3 classes, 30 centers, at least 30" in three.fit_report_["solver_choice"]
    monkeypatch.setattr(_newton_cg_fit, "AUTO_NEWTON_CG_CENTERS", 3000)
    for loss, labelled, said in (
            ("squared_hinge", labels, "3 classes, 30 centers, under 2,000"),
            ("smooth_hinge", labels, "3 classes, 30 centers, under 3,000"),
            ("squared_hinge", np.arange(len(X)) % 12, "12 classes, 30 centers, under 1,000"),
            ("smooth_hinge", np.arange(len(X)) % 12, "12 classes, 30 centers, under 1,000")):
        fitted = ReducedSVC(**{**kw, "loss": loss}).fit(X, labelled)
        assert said in fitted.fit_report_["solver_choice"], (loss, said)
    monkeypatch.setattr(_newton_cg_fit, "AUTO_NEWTON_CG_CENTERS", 30)
    with dask.config.set(scheduler="synchronous"):
        Xd, ld = da.from_array(X, chunks=(200, 2)), da.from_array(labels, chunks=200)
        lazy_three = ReducedSVC(**kw).fit(Xd, ld)
        assert "3 classes over chunked data" in lazy_three.fit_report_["solver_choice"]
        with pytest.raises(ValueError, match="fits 3 classes on kernel rows held in memory"):
            ReducedSVC(solver="newton-cg", **kw).fit(Xd, ld)


@pytest.mark.parametrize(("loss", "atol"), [("squared_hinge", 1e-6), ("smooth_hinge", 1e-5)])
def test_k_classes_by_newton_cg_on_held_rows_are_the_lockstep_newton_solution(
        loss: str, atol: float) -> None:
    X, _ = _rings(600)
    labels = np.array(["west", "middle", "east"])[np.digitize(X[:, 0], [-0.5, 0.5])]
    kw = {"omega": 1.0, "C": 10.0, "size": 30, "random_state": 0, "loss": loss,
          "tol": 1e-12}
    newton = ReducedSVC(solver="newton", **kw).fit(X, labels)
    held = ReducedSVC(solver="newton-cg", **kw).fit(X, labels)
    rep = held.fit_report_
    assert rep["solver"].startswith("newton-cg, in memory")
    assert rep["solver"].endswith("3 classes side by side")
    assert len(rep["by_class"]["cg_iterations"]) == 3 and all(rep["cg_iterations"])
    assert rep["converged"]
    np.testing.assert_array_equal(held.classes_, newton.classes_)
    np.testing.assert_allclose(held.decision_function(X), newton.decision_function(X),
                               atol=atol)
    assert np.mean(held.predict(X) == newton.predict(X)) == 1.0


def test_reduced_svr_newton_cg_in_memory_and_chunks_match_newton() -> None:
    rng = np.random.default_rng(3)
    X = rng.uniform(-2, 2, size=(400, 2))
    y = np.sin(2 * X[:, 0]) * np.cos(X[:, 1]) + 0.1 * rng.normal(size=400)
    kw = {"omega": 1.0, "C": 10.0, "epsilon": 0.05, "size": 30, "random_state": 0,
          "tol": 1e-12}
    newton = ReducedSVR(solver="newton", **kw).fit(X, y)
    held = ReducedSVR(solver="newton-cg", **kw).fit(X, y)
    assert newton.fit_report_["solver"].startswith("newton-armijo")
    assert held.fit_report_["solver"].startswith("newton-cg, in memory")
    want = newton.predict(X)
    np.testing.assert_allclose(held.predict(X), want, atol=1e-6)
    with dask.config.set(scheduler="synchronous"):
        lazy = ReducedSVR(solver="newton-cg", **kw).fit(da.from_array(X, chunks=(173, 2)),
                                                       da.from_array(y, chunks=173))
    assert lazy.fit_report_["solver"].startswith("newton-cg, one read")
    np.testing.assert_allclose(lazy.predict(X), want, atol=1e-6)


@pytest.mark.determinism
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_held_row_products_do_not_depend_on_the_threads(dtype: type) -> None:
    from bigkern.solvers.newton_cg.held_rows import row_parts
    from bigkern.solvers.newton_cg.method import CurvaturePass, LinePass

    rng = np.random.default_rng(4)
    n = 200_000
    A = np.column_stack([rng.random((n, 40)), -np.ones(n)]).astype(dtype)
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    # the products run in parts (the curvature's over about half of the rows)
    assert len(row_parts(n // 2, 2**20 // (A.itemsize * A.shape[1]))) > 1
    u, d = 0.1 * rng.standard_normal(41), rng.standard_normal(41)
    answers = []
    for threads in (1, 2, 3):
        rows = HeldKernelRows(A, y, SquaredHinge(), threads=threads)
        line = rows(LinePass(u, d, (1.0, 0.5), 1.0))
        answers.append((line.loss, line.grad, rows(CurvaturePass(u + d, d))))
    for other in answers[1:]:
        for a, b in zip(answers[0], other, strict=True):
            np.testing.assert_array_equal(a, b)
