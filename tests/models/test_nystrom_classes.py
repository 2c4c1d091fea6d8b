"""NystromKernelRidgeClassifier with k classes: one read serves all k one-vs-rest problems.

A k-class fit must be the k binary one-vs-rest fits on the same centers (the direct solve
to round-off, conjugate gradients to their tolerance), read the rows as often as one
binary fit does, be the same for any chunking, refuse a label set it cannot fit, and
classify a real 10-class set as well as scikit-learn's SVC.
"""

from __future__ import annotations

import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import dask
import dask.array as da
import numpy as np
import pytest

from bigkern.errors import LabelError
from bigkern.kernels import gaussian_kernel
from bigkern.models.reduced_kernel.nystrom import NystromKernelRidgeClassifier

PENDIGITS = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "classification" \
    / "pendigits.csv"


def _four_classes(n: int = 3000, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Three features, four overlapping classes (string labels)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    score = np.column_stack([X[:, 0], X[:, 1], -X[:, 0] - X[:, 1], X[:, 2]])
    score += 0.5 * rng.standard_normal((n, 4))
    return X, np.array(["a", "b", "c", "d"])[score.argmax(axis=1)]


def _exact_decision(model: NystromKernelRidgeClassifier, X: np.ndarray) -> np.ndarray:
    """The model's decision values in float64 from its expansion (dense kernel matrix):
    ``decision_function`` evaluates the kernel in float32, whose sums round at ~1e-5 here."""
    e = model.expansion_
    Z = np.clip((X - e.offset) / e.scale, -e.basis.clip, e.basis.clip)
    return gaussian_kernel(Z, e.centers, model.omega_) @ e.coef + e.intercept


def _binary_fits(kw: dict, X: np.ndarray, labels: np.ndarray, classes: np.ndarray) -> list:
    """One binary one-vs-rest fit per class (``True`` the class, ``False`` the rest)."""
    return [NystromKernelRidgeClassifier(**kw).fit(X, labels == c) for c in classes]


# unstratified draws: the centers depend on the rows and the seed only, so the k-class fit
# and every binary fit share them (a stratified draw shares them out by the labels)
SAME_CENTERS = {"omega": 1.0, "size": 40, "random_state": 0, "stratified": False}


def test_the_direct_solve_of_k_classes_is_k_binary_fits():
    X, labels = _four_classes()
    kw = {**SAME_CENTERS, "lam": 1.0, "solver": "direct"}
    model = NystromKernelRidgeClassifier(**kw).fit(X, labels)
    assert model.classes_.tolist() == ["a", "b", "c", "d"]
    assert model.expansion_.coef.shape == (40, 4) and model.expansion_.intercept.shape == (4,)
    decision = model.decision_function(X)
    assert decision.shape == (len(X), 4)
    exact = _exact_decision(model, X)
    for j, binary in enumerate(_binary_fits(kw, X, labels, model.classes_)):
        np.testing.assert_array_equal(binary.reduced_index_, model.reduced_index_)
        coef = binary.expansion_.coef
        # GᵀY's columns come from a wider syrk than Gᵀy's: they differ in the last bit,
        # which K(Ã, Ã)^(-1/2) amplifies to ~1e-10 of the coefficients here
        assert np.abs(model.expansion_.coef[:, j] - coef).max() <= 1e-9 * np.abs(coef).max()
        assert model.expansion_.intercept[j] == pytest.approx(binary.expansion_.intercept,
                                                              abs=1e-9)
        np.testing.assert_allclose(exact[:, j], _exact_decision(binary, X), rtol=0, atol=1e-9)
        # the float32 kernel of decision_function rounds both alike, to ~1e-5
        np.testing.assert_allclose(decision[:, j], binary.decision_function(X), atol=1e-4)
    np.testing.assert_array_equal(model.predict(X), model.classes_[decision.argmax(axis=1)])
    assert model.score(X, labels) > 0.75


def test_the_candidates_are_ranked_on_the_mean_over_the_classes():
    """Every (ω, λ) is scored on the held-out squared error of the four ±1 targets, averaged
    over the classes: the mean of the binary fits' scores, from the same one read."""
    X, labels = _four_classes()
    kw = {**SAME_CENTERS, "omega": [0.5, 1.0], "lam": [0.3, 3.0, 30.0], "solver": "direct"}
    model = NystromKernelRidgeClassifier(**kw).fit(X, labels)
    binaries = _binary_fits(kw, X, labels, model.classes_)
    mean = np.mean([b.cv_scores_ for b in binaries], axis=0)
    np.testing.assert_allclose(model.cv_scores_, mean, rtol=1e-8)
    i, j = np.unravel_index(np.argmin(mean), mean.shape)
    assert (model.omega_, model.lam_) == ([0.5, 1.0][i], [0.3, 3.0, 30.0][j])
    assert model.fit_report_["reads"] == 2


@pytest.mark.filterwarnings("error::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("cg_start", ["subset", "zero"])
def test_conjugate_gradients_for_k_classes_are_k_binary_solves(cg_start):
    """Four recurrences in lockstep, each its binary solve: equal to the tolerance asked."""
    X, labels = _four_classes(n=3000)
    kw = {**SAME_CENTERS, "lam": 3.0, "solver": "cg", "tol": 1e-8, "max_iter": 200,
          "cg_start": cg_start}
    model = NystromKernelRidgeClassifier(**kw).fit(X, labels)
    report = model.fit_report_
    assert model.solver_ == "cg" and report["converged"] and report["start"] == cg_start
    exact = _exact_decision(model, X)
    binaries = _binary_fits(kw, X, labels, model.classes_)
    for j, binary in enumerate(binaries):
        coef = binary.expansion_.coef
        assert np.abs(model.expansion_.coef[:, j] - coef).max() <= 1e-6 * np.abs(coef).max()
        np.testing.assert_allclose(exact[:, j], _exact_decision(binary, X), rtol=0, atol=1e-7)
        # the same recurrence, its products summed in another order (a 4-column product
        # against a 1-column one): near tol=1e-8 that may cost or save a step or two
        assert abs(report["n_iter_by_class"][j] - binary.fit_report_["n_iter"]) <= 3
    assert report["n_iter"] == max(report["n_iter_by_class"])


def test_a_lam_path_of_k_classes_scores_the_mean_over_the_classes():
    X, labels = _four_classes()
    kw = {**SAME_CENTERS, "lam": [1.0, 10.0, 100.0], "solver": "cg", "tol": 1e-7,
          "max_iter": 200}
    model = NystromKernelRidgeClassifier(**kw).fit(X, labels)
    binaries = _binary_fits(kw, X, labels, model.classes_)
    np.testing.assert_allclose(model.cv_scores_,
                               np.mean([b.cv_scores_ for b in binaries], axis=0), rtol=1e-6)
    assert model.lam_ == [1.0, 10.0, 100.0][int(np.argmin(model.cv_scores_))]
    assert model.fit_report_["start"] == "path" and model.fit_report_["path_converged"]


# ---------------------------------------------------------------------------
# reads: k classes cost the reads of one binary fit
# ---------------------------------------------------------------------------
def _counted(X: np.ndarray, rows: int) -> tuple[da.Array, Counter]:
    """``X`` as a dask array whose chunks come from a loader counting its calls."""
    calls: Counter = Counter()
    bounds = [*range(0, len(X), rows), len(X)]

    def load(i: int) -> np.ndarray:
        calls[i] += 1
        return X[bounds[i]:bounds[i + 1]]

    blocks = [da.from_delayed(dask.delayed(load, pure=True)(i),
                              shape=(bounds[i + 1] - bounds[i], X.shape[1]), dtype=X.dtype)
              for i in range(len(bounds) - 1)]
    return da.concatenate(blocks, axis=0), calls


def _reads(kw: dict, X: np.ndarray, y: np.ndarray) -> tuple[Any, int]:
    """The fitted model and how often each chunk of ``X`` was read (the same for all)."""
    Xd, calls = _counted(X, 1000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = NystromKernelRidgeClassifier(**kw).fit(Xd, da.from_array(y, chunks=1000))
    assert len(set(calls.values())) == 1 and len(calls) == 6
    return model, calls[0]


@pytest.mark.parametrize("kw", [
    {"solver": "direct", "lam": 1.0},
    {"solver": "direct", "omega": [0.5, 1.0], "lam": [0.1, 1.0, 10.0]},  # 3 folds, 6 candidates
    {"solver": "cg", "lam": 3.0, "tol": 1e-5},
], ids=["direct", "candidates", "cg"])
def test_k_classes_read_the_rows_as_often_as_one_binary_fit(kw):
    X, labels = _four_classes(n=6000)
    kw = {**SAME_CENTERS, **kw}
    model, reads = _reads(kw, X, labels)
    binary = [_reads(kw, X, labels == c)[1] for c in model.classes_]
    if kw["solver"] == "direct":
        # the draw of the centers, then one pass for all classes, widths and folds
        assert reads == 2 == model.fit_report_["reads"]
        assert binary == [2, 2, 2, 2]
    else:
        # the draw, the subset, the right-hand side (which keeps the kernel blocks), then,
        # for chunks whose blocks are not kept, one read per step for all four classes: as
        # many as the slowest class's binary fit
        assert reads == model.fit_report_["reads"] == max(binary)
        steps = model.fit_report_["n_iter_by_class"]
        kept = model.fit_report_["kept_blocks"]
        if kept["kept_chunks"] == kept["chunks"]:
            assert reads == 3 and model.fit_report_["products"] >= max(steps)
        else:
            assert max(steps) + 3 <= reads <= max(steps) + 5  # + the restarts' residuals


# ---------------------------------------------------------------------------
# chunking, lazy labels, bad labels
# ---------------------------------------------------------------------------
@pytest.mark.determinism
@pytest.mark.parametrize("kw", [
    {"omega": [0.7, 1.4], "lam": [0.1, 10.0]},
    {"omega": 1.0, "lam": 3.0, "solver": "cg", "tol": 1e-8, "max_iter": 200},
], ids=["direct", "cg"])
def test_three_classes_give_the_same_fit_for_any_chunking(kw):
    rng = np.random.default_rng(2)
    X = rng.standard_normal((2400, 2))
    labels = np.digitize(np.hypot(X[:, 0], X[:, 1]), [0.8, 1.5]) * 10 + 10  # 10, 20, 30
    kw = {**kw, "size": 50, "random_state": 0}
    with dask.config.set(scheduler="sync"):
        ref = NystromKernelRidgeClassifier(**kw).fit(X, labels)
        fits = [NystromKernelRidgeClassifier(**kw).fit(da.from_array(X, chunks=(rows, 2)),
                                                       da.from_array(labels, chunks=rows))
                for rows in (300, 777)]
    assert ref.classes_.tolist() == [10, 20, 30]
    for got in fits:  # lazy labels: the classes found by the draw of the centers
        assert got.classes_.tolist() == [10, 20, 30]
        np.testing.assert_array_equal(got.reduced_index_, ref.reduced_index_)
        assert (got.omega_, got.lam_) == (ref.omega_, ref.lam_)
        np.testing.assert_allclose(got.cv_scores_, ref.cv_scores_, rtol=1e-6)
        # sums in another order: round-off, amplified by the condition of the system of 50
        # close centers at the chosen λ (measured: 6.4e-6 at most, direct; 2e-8, CG)
        exact = _exact_decision(ref, X)
        np.testing.assert_allclose(_exact_decision(got, X), exact, rtol=0, atol=5e-5)
        # the same classes, but where a near tie meets decision_function's float32 kernel:
        # its rounding weighs the coefficients' differences along K(Ã, Ã)'s near-null
        # directions (invisible in float64), ~1e-3 here (binary models alike)
        top = np.sort(exact, axis=1)
        clear = top[:, -1] - top[:, -2] > 1e-2
        np.testing.assert_array_equal(got.predict(X)[clear], ref.predict(X)[clear])
        assert clear.mean() > 0.97
    assert ref.score(X, labels) > 0.9


def test_one_class_is_a_label_error():
    X, _ = _four_classes(n=300)
    for y in (np.full(300, "a"), da.from_array(np.full(300, "a"), chunks=100)):
        with pytest.raises(LabelError, match=r"one class only.*\(\['a'\]\)"):
            NystromKernelRidgeClassifier(size=20).fit(X, y)


def test_a_class_with_no_usable_row_is_a_label_error_naming_it():
    X, labels = _four_classes(n=600)
    X[labels == "c", 1] = np.nan  # every row of class c unusable (few enough to tolerate)
    with dask.config.set({"bigkern.max_nonfinite_fraction": 0.5}), \
            pytest.raises(LabelError, match=r"class\(es\) \['c'\] of y have no usable row"):
        NystromKernelRidgeClassifier(size=40, random_state=0).fit(X, labels)
    mask = labels != "c"  # masked out, class c is no class of the fit
    with dask.config.set({"bigkern.max_nonfinite_fraction": 0.5}):
        model = NystromKernelRidgeClassifier(size=40, random_state=0).fit(X, labels, mask=mask)
    assert model.classes_.tolist() == ["a", "b", "d"]


def test_a_k_class_model_file_gives_the_same_decision_values(tmp_path):
    from bigkern.models.persistence.model_files import load_model, save_model

    X, labels = _four_classes(n=600)
    model = NystromKernelRidgeClassifier(size=40, random_state=0).fit(X, labels)
    save_model(model, tmp_path / "model.zarr")
    back = load_model(tmp_path / "model.zarr")
    np.testing.assert_array_equal(back.classes_, model.classes_)
    np.testing.assert_array_equal(back.decision_function(X), model.decision_function(X))
