"""ReducedSVC with k classes: one-vs-rest in lockstep, one read of the rows per Newton pass.

The k-class fit must be the k binary one-vs-rest fits on the same reduced set Ã
(each column of the coefficients, each intercept), whichever path solved it, while
each pass over the rows serves all the problems still running.
"""

from __future__ import annotations

from collections import Counter

import dask
import dask.array as da
import numpy as np
import pytest
from distributed import get_task_stream

from bigkern.errors import LabelError
from bigkern.models.reduced_kernel.reduced import ReducedSVC
from bigkern.reduce.reduced.svm import augmented_kernel_rows
from bigkern.solvers.newton.finite_newton import finite_newton
from bigkern.solvers.newton.in_memory_newton import InMemoryNewtonPasses
from bigkern.solvers.newton.smooth_svm import SmoothHinge, newton_armijo


def _sectors(n: int, k: int = 3, seed: int = 0, noise: float = 0.05
             ) -> tuple[np.ndarray, np.ndarray]:
    """Two features; the class is the angular sector (k of them), a few labels flipped."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 2))
    y = ((np.arctan2(X[:, 1], X[:, 0]) + np.pi) * k / (2 * np.pi)).astype(int) % k
    flip = rng.random(n) < noise
    return X, np.where(flip, rng.integers(0, k, n), y)


def _fit(X, y, mask=None, **kw):
    params = {"omega": 1.0, "C": 10.0, "size": 40, "random_state": 0}
    return ReducedSVC(**{**params, **kw}).fit(X, y, mask=mask)


def _binary_fits(model, X, codes, solve):
    """Each class against the rest, solved alone on the kernel rows of the model's own Ã."""
    A, codes_usable, _, _ = augmented_kernel_rows(X, codes.astype(float),
                                                  model.expansion_.basis)
    out = []
    for j in range(len(model.classes_)):
        u = solve(A, np.where(codes_usable == j, 1.0, -1.0))
        out.append((u[:-1], -u[-1]))
    return np.column_stack([c for c, _ in out]), np.array([b for _, b in out])


def _assert_columns(model, coef, intercept, rtol, atol):
    scale = np.abs(coef).max()
    np.testing.assert_allclose(model.expansion_.coef, coef, rtol=rtol, atol=atol * scale)
    np.testing.assert_allclose(model.expansion_.intercept, intercept, rtol=rtol,
                               atol=atol * scale)


def test_k_classes_in_memory_equal_k_binary_fits():
    """Finite Newton (squared hinge) to 1e-9; the smooth hinge's Newton–Armijo, whose k-class
    Hessians leave out rows of negligible curvature (steering only), to its tolerance."""
    X, y = _sectors(900, k=4, seed=1)
    labels = np.array(["north", "east", "south", "west"])[y]
    sq = _fit(X, labels, loss="squared_hinge")
    assert sq.fit_report_["solver"] == "finite newton, in memory, 4 classes in lockstep"
    np.testing.assert_array_equal(sq.classes_, ["east", "north", "south", "west"])
    codes = np.searchsorted(sq.classes_, labels)
    coef, b = _binary_fits(sq, X, codes, lambda A, t: finite_newton(A, t, C=10.0).u)
    _assert_columns(sq, coef, b, rtol=1e-9, atol=1e-9)

    sm = _fit(X, labels)
    assert sm.fit_report_["solver"] == "newton-armijo, in memory, 4 classes in lockstep"
    coef, b = _binary_fits(sm, X, codes, lambda A, t: newton_armijo(
        InMemoryNewtonPasses(A, t, SmoothHinge(5.0)), A.shape[1], C=10.0, tol=1e-8).u)
    _assert_columns(sm, coef, b, rtol=1e-7, atol=1e-8)

    # decision_function: one column per class, in the order of classes_; predict its argmax
    dec = sm.decision_function(X)
    assert dec.shape == (900, 4)
    np.testing.assert_array_equal(sm.predict(X), sm.classes_[dec.argmax(axis=1)])
    assert sm.score(X, labels) > 0.9 and sq.score(X, labels) > 0.9


@pytest.mark.parametrize("loss", ["smooth_hinge", "squared_hinge"])
def test_k_classes_on_dask_equal_k_binary_fits(loss):
    """The distributed lockstep passes: each column its binary fit's to the Newton
    tolerance (``tol=1e-8`` of the initial gradient norm; the iterates differ by the
    round-off of the batched products, and for the smooth hinge by the negligible rows
    left out of its Hessians, so the two stop at different points within it)."""
    X, y = _sectors(900, k=3, seed=2)
    with dask.config.set(scheduler="sync"):
        lazy = _fit(da.from_array(X, chunks=(250, 2)), da.from_array(y, chunks=250),
                    loss=loss)
    rep = lazy.fit_report_
    assert rep["solver"] == "newton-armijo, one pass per step, 3 classes in lockstep"
    assert rep["converged"] and all(rep["by_class"]["converged"])
    alone = []  # each class's binary fit and its gradient norm

    def solve(A, t):
        res = finite_newton(A, t, C=10.0) if loss == "squared_hinge" else newton_armijo(
            InMemoryNewtonPasses(A, t, SmoothHinge(5.0)), A.shape[1], C=10.0)
        alone.append(res.grad_norm)
        return res.u

    coef, b = _binary_fits(lazy, X, y, solve)
    # F is 1-strongly convex (H ≥ I), so ‖u − u*‖ ≤ ‖∇F(u)‖: two iterates that both meet
    # the stopping rule lie within the sum of their gradient norms of each other
    for j in range(3):
        gap = np.hypot(np.linalg.norm(lazy.expansion_.coef[:, j] - coef[:, j]),
                       lazy.expansion_.intercept[j] - b[j])
        assert gap <= rep["by_class"]["grad_norm"][j] + alone[j], (j, gap)
    _assert_columns(lazy, coef, b, rtol=1e-5, atol=1e-6)


def test_one_read_per_newton_pass_for_three_classes_as_for_two(client):
    """k = 3: a pass is one read of X and y whatever the number of classes, and the fit
    takes the passes of its slowest class, not the sum over classes."""
    X, y = _sectors(3000, k=3, seed=3)
    Xd = da.from_array(X, chunks=(750, -1), name="rsvc-classes-X")
    yd = da.from_array(y, chunks=750, name="rsvc-classes-y")
    reports = {}
    for k, labels in ((3, yd), (2, (yd == 0).astype(int))):
        with get_task_stream(client) as ts:
            model = _fit(Xd, labels, size=60)
        rep = model.fit_report_
        names = Counter(t["key"][0] if isinstance(t["key"], tuple) else t["key"]
                        for t in ts.data)
        assert len(model.classes_) == k and rep["converged"]
        assert names["rsvc-classes-X"] == rep["reads"] * Xd.npartitions  # passes + the draw
        assert names["rsvc-classes-y"] == rep["reads"] * Xd.npartitions
        newton = sum(v for key, v in names.items()
                     if str(key).startswith("reduced-svm-newton"))
        assert newton == rep["passes"] * Xd.npartitions
        reports[k] = rep
    three = reports[3]
    assert three["reads"] == three["passes"] + 1
    assert three["passes"] == max(three["by_class"]["passes"])
    print(f"passes: 3 classes {three['passes']} (per class {three['by_class']['passes']}), "
          f"2 classes {reports[2]['passes']}")


@pytest.mark.parametrize("chunks", [(900,), (300, 300, 300), (7, 400, 93, 400), (450, 450)])
def test_same_three_class_fit_for_any_chunking(chunks):
    X, y = _sectors(900, k=3, seed=4)
    with dask.config.set(scheduler="sync"):
        ref = _fit(X, y)
        got = _fit(da.from_array(X, chunks=(chunks, 2)), da.from_array(y, chunks=(chunks,)))
    assert ref.fit_report_["solver"] == "newton-armijo, in memory, 3 classes in lockstep"
    np.testing.assert_array_equal(ref.reduced_index_, got.reduced_index_)
    np.testing.assert_allclose(got.expansion_.coef, ref.expansion_.coef, rtol=1e-9,
                               atol=1e-12 * np.abs(ref.expansion_.coef).max())
    np.testing.assert_allclose(got.expansion_.intercept, ref.expansion_.intercept, rtol=1e-9,
                               atol=1e-12 * np.abs(ref.expansion_.coef).max())
    assert got.fit_report_["by_class"]["iterations"] == ref.fit_report_["by_class"]["iterations"]


def test_reduced_set_is_stratified_over_the_classes():
    X, y = _sectors(1200, k=3, seed=5)
    y[y == 2] = np.where(np.arange((y == 2).sum()) % 4 == 0, 2, 0)  # class 2 a quarter as big
    model = _fit(X, y, size=60)
    counts = np.bincount(y, minlength=3)
    drawn = np.asarray(model.fit_report_["drawn_per_class"])
    assert drawn.sum() == 60
    np.testing.assert_allclose(drawn, 60 * counts / counts.sum(), atol=1.0)


def test_one_class_or_a_class_without_usable_rows_is_a_clear_error():
    X, y = _sectors(300, k=3, seed=6)
    with pytest.raises(LabelError, match="one class only"):
        _fit(X, np.full(300, "snow"))
    with pytest.raises(LabelError, match="one class only"):
        _fit(da.from_array(X, chunks=100), da.from_array(np.full(300, 7), chunks=100))
    labels = np.array(["clear", "cloud", "shadow"])[y]
    Xbad = X.copy()
    Xbad[labels == "shadow", 1] = np.nan  # every shadow row unusable (within the NaN limit)
    with dask.config.set({"bigkern.max_nonfinite_fraction": 0.5}), \
            pytest.raises(LabelError, match=r"\['shadow'\] of y have no usable row"):
        _fit(Xbad, labels)
    # a class held only by rows the mask leaves out is no class of the fit
    kept = _fit(X, labels, mask=labels != "shadow")
    np.testing.assert_array_equal(kept.classes_, ["clear", "cloud"])
    assert kept.decision_function(X).shape == (300,)


def _pendigits():
    from bigkern.datasets import shared_data_dir

    root = shared_data_dir()
    path = None if root is None else root / "classification" / "pendigits.csv"
    if path is None or not path.exists():
        pytest.skip("../shared/data/classification/pendigits.csv is not present: the "
                    "10-class accuracy test needs it")
    raw = np.loadtxt(path, delimiter=",", skiprows=1)
    return raw[:, :-1], raw[:, -1].astype(int)


def test_warm_start_from_the_scale_sample_is_the_same_in_memory_and_on_dask(monkeypatch):
    """Large k-class fits start from a fit on the draw's scale sample (labels kept): the
    same start and the same passes whether the rows are held or read chunk by chunk."""
    from bigkern.models.reduced_kernel import _reduced_classes

    monkeypatch.setattr(_reduced_classes, "WARM_START_FLOPS", 0.0)
    X, y = _sectors(3000, k=3, seed=7)
    with dask.config.set(scheduler="sync"):
        ref = _fit(X, y)
        got = _fit(da.from_array(X, chunks=(700, 2)), da.from_array(y, chunks=700))
    for model in (ref, got):
        assert model.fit_report_["warm_start_rows"] == 2000  # SCALE_SAMPLE_ROWS
        assert model.fit_report_["converged"]
    np.testing.assert_allclose(got.expansion_.coef, ref.expansion_.coef, rtol=1e-9,
                               atol=1e-12 * np.abs(ref.expansion_.coef).max())
    assert got.fit_report_["passes"] == ref.fit_report_["passes"]
    monkeypatch.undo()
    with dask.config.set(scheduler="sync"):
        cold = _fit(da.from_array(X, chunks=(700, 2)), da.from_array(y, chunks=700))
    assert cold.fit_report_["warm_start_rows"] == 0
    assert got.fit_report_["passes"] < cold.fit_report_["passes"]
    # the same minimizer from either start, to the Newton tolerance
    np.testing.assert_allclose(got.decision_function(X), cold.decision_function(X),
                               rtol=1e-5, atol=1e-5)


def test_a_second_batch_of_trial_steps_sums_no_hessian():
    """After a failed full step, the shorter trial steps' pass forms no Hessian (it would
    be at the failed full step, never used): the iterates are those of each class alone."""
    from bigkern.solvers.newton.in_memory_newton import InMemoryClassPasses
    from bigkern.solvers.newton.lockstep_newton import newton_armijo_lockstep

    x = np.linspace(-3, 3, 90)
    codes = np.digitize(x, [-1.0, 1.0]).astype(float)
    A = np.column_stack([np.exp(-(x[:, None] - [-2.0, -0.5, 0.5, 2.0]) ** 2), -np.ones(90)])
    rows = InMemoryClassPasses(A, codes, SmoothHinge(5.0), block_rows=32)
    second = []

    def evaluate(points):
        for q, steps in enumerate(points.steps):
            if points.at[q] == 1.0 and steps[0] < 1.0:
                second.append(points.hessian is not None and not points.hessian[q])
        return rows(points)

    out = newton_armijo_lockstep(evaluate, 5, [0, 1, 2], C=1e4, first_trials=1)
    assert second and all(second)
    for j, res in enumerate(out.results):
        alone = newton_armijo(InMemoryNewtonPasses(A, np.where(codes == j, 1.0, -1.0),
                                                   SmoothHinge(5.0), block_rows=32),
                              5, C=1e4, first_trials=1)
        assert res.steps == alone.steps
        np.testing.assert_allclose(res.u, alone.u, rtol=1e-9, atol=1e-9)
