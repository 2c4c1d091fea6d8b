"""k classes in KernelRidgeClassifier, CompactLSSVC and CompactSVC.

Each k-class model is one-vs-rest with one solve shared by the classes (one Cholesky
factorization for the kernel ridge, one sparse factorization or one CG product per
iteration for the LS-SVM, one sparse Gram matrix for the SVM's k SMO problems), so its
column j must be the two-class fit of ``classes_[j]`` against the rest: to 1e-9 here
(the LS-SVM and SVM columns are in fact bit for bit the same; the kernel ridge's k-column
triangular solve may differ from the one-column one in the last digit).
"""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest
import xarray as xr
from sklearn.base import clone

from bigkern import CompactLSSVC, CompactSVC, KernelRidgeClassifier
from bigkern.errors import LabelError, StoreError
from bigkern.models import load_model, save_model
from bigkern.models.persistence.model_store import write_model_dataset

NAMES = np.array(["clear", "cloud", "shadow", "snow"])


def _data(n: int = 360, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Four classes in the plane: quadrants, with a ring of the fourth in the middle."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    codes = (X[:, 0] > 0).astype(int) + 2 * (X[:, 1] > 0)
    codes[np.hypot(X[:, 0], X[:, 1]) < 0.6] = 3
    codes[(X[:, 0] > 0) & (X[:, 1] > 0)] = 0  # the first quadrant joins class 0
    return X, NAMES[codes]


X, LABELS = _data()
MODELS = [
    KernelRidgeClassifier(omega=0.8, lam=0.1, standardize=True),
    CompactLSSVC(omega=0.5, lam=1e-3, radius=1.5, solver="banded"),
    CompactLSSVC(omega=0.5, lam=1e-3, radius=1.5, solver="cg"),
    CompactSVC(omega=0.5, C=10.0, radius=1.5),
]
IDS = ["KernelRidgeClassifier", "CompactLSSVC-banded", "CompactLSSVC-cg", "CompactSVC"]


def _coef(model):
    if isinstance(model, KernelRidgeClassifier):
        return model.expansion_.coef, model.expansion_.intercept
    return model.dual_coef_, model.intercept_


@pytest.mark.parametrize("est", MODELS, ids=IDS)
def test_k_classes_equal_k_binary_one_vs_rest_fits(est):
    model = clone(est).fit(X, LABELS)
    assert model.classes_.tolist() == ["clear", "cloud", "shadow", "snow"]
    coef, intercept = _coef(model)
    assert coef.shape == (len(X), 4) and np.shape(intercept) == (4,)
    decision = model.decision_function(X)
    assert decision.shape == (len(X), 4)
    for j, name in enumerate(model.classes_):
        binary = clone(est).fit(X, name == LABELS)  # classes_ [False, True]: +1 is `name`
        alone, b = _coef(binary)
        np.testing.assert_allclose(coef[:, j], alone, rtol=0, atol=1e-9)
        assert intercept[j] == pytest.approx(b, abs=1e-9)
        np.testing.assert_allclose(decision[:, j], binary.decision_function(X), rtol=0,
                                   atol=1e-9)
    np.testing.assert_array_equal(model.predict(X), model.classes_[decision.argmax(axis=1)])
    assert model.score(X, LABELS) > 0.85


@pytest.mark.parametrize("est", MODELS[1:], ids=IDS[1:])
def test_compact_columns_are_their_binary_fits_bit_for_bit(est):
    """The LS-SVM's direct and CG solves and the SVM's SMO run each column's own arithmetic
    (k+1 triangular solves, k CG recurrences, k SMO runs on one laid-out matrix)."""
    model = clone(est).fit(X, LABELS)
    binary = clone(est).fit(X, LABELS == "shadow")
    np.testing.assert_array_equal(model.dual_coef_[:, 2], binary.dual_coef_)
    assert model.intercept_[2] == binary.intercept_


def test_compact_svc_support_and_report_cover_every_class():
    model = clone(MODELS[3]).fit(X, LABELS)
    nonzero = np.flatnonzero((model.dual_coef_ != 0).any(axis=1))
    np.testing.assert_array_equal(model.support_, nonzero)
    assert model.n_basis_ == len(nonzero) < len(X)
    assert len(model.fit_report_["iterations"]) == 4
    assert max(model.fit_report_["gap"]) < model.tol


def test_lssvc_cg_shares_its_sparse_products():
    """One CG product per iteration serves every class: the products are the longest
    class's iterations, not their sum."""
    model = clone(MODELS[2]).fit(X, LABELS)
    assert model.fit_report_["method"] == "cg"
    lone = [clone(MODELS[2]).fit(X, c == LABELS).fit_report_["iterations"]
            for c in model.classes_]
    assert model.fit_report_["iterations"] == max(lone) < sum(lone)


@pytest.mark.determinism
@pytest.mark.parametrize("est", MODELS[1:], ids=IDS[1:])
def test_k_class_compact_fit_is_the_same_for_numpy_and_any_dask_chunking(est):
    ref = clone(est).fit(X, LABELS)
    for chunks in (50, 97):
        got = clone(est).fit(da.from_array(X, chunks=(chunks, 2)), LABELS)
        np.testing.assert_allclose(got.dual_coef_, ref.dual_coef_, rtol=0, atol=1e-12)
        np.testing.assert_allclose(got.intercept_, ref.intercept_, rtol=0, atol=1e-12)
    lazy = ref.decision_function(da.from_array(X, chunks=(70, 2)))
    assert lazy.shape == (len(X), 4)
    np.testing.assert_array_equal(lazy.compute(), ref.decision_function(X))
    np.testing.assert_array_equal(ref.predict(da.from_array(X, chunks=(70, 2))).compute(),
                                  ref.predict(X))


@pytest.mark.parametrize("est", MODELS[1:2] + MODELS[3:], ids=["CompactLSSVC", "CompactSVC"])
def test_compact_decision_rows_give_nan_rows_and_each_kernel_row_once(est):
    model = clone(est).fit(X, LABELS)
    Z = X[:5].copy()
    Z[2, 1] = np.nan
    rows = model.decision_rows(Z)
    assert rows.shape == (5, 4)
    assert np.isnan(rows[2]).all() and np.isfinite(np.delete(rows, 2, axis=0)).all()
    np.testing.assert_array_equal(np.delete(rows, 2, axis=0),
                                  model.decision_rows(np.delete(Z, 2, axis=0)))


@pytest.mark.parametrize("est", MODELS, ids=IDS)
def test_one_class_is_refused_naming_it(est):
    with pytest.raises(LabelError, match=r"one class only \(\['snow'\]\)"):
        clone(est).fit(X, np.full(len(X), "snow"))


@pytest.mark.parametrize("est", MODELS, ids=IDS)
def test_a_class_of_one_row_is_fitted_and_no_class_is_absent(est):
    """These models fit every row, so each class of ``classes_`` is in the fit; a class
    with a single row still gets its own column."""
    labels = LABELS.copy()
    labels[7] = "wind"
    model = clone(est).fit(X, labels)
    assert model.classes_.tolist() == ["clear", "cloud", "shadow", "snow", "wind"]
    assert model.decision_function(X[:3]).shape == (3, 5)


def test_two_classes_stay_one_column():
    for est in MODELS:
        model = clone(est).fit(X, np.where(LABELS == "snow", "snow", "other"))
        assert model.decision_function(X[:3]).shape == (3,)
        assert np.ndim(_coef(model)[1]) == 0


# -- model files ---------------------------------------------------------------------------
@pytest.mark.determinism
@pytest.mark.parametrize("suffix", ["zarr", "nc"])
@pytest.mark.parametrize("est", [MODELS[1], MODELS[3]], ids=["CompactLSSVC", "CompactSVC"])
def test_a_three_class_compact_model_file_round_trips(tmp_path, est, suffix):
    labels = np.array([10, 20, 30])[np.digitize(X[:, 0], [-0.4, 0.4])]
    model = clone(est).fit(X, labels)
    ds = model.to_dataset()
    assert ds["dual_coef"].dims == ("sample", "output") and ds.sizes["output"] == 3
    assert ds["intercept"].dims == ("output",) and "intercept" not in ds.attrs
    back = load_model(save_model(model, tmp_path / f"model.{suffix}"))
    assert type(back) is type(model) and back.get_params() == model.get_params()
    np.testing.assert_array_equal(back.classes_, model.classes_)
    np.testing.assert_array_equal(back.dual_coef_, model.dual_coef_)
    np.testing.assert_array_equal(back.intercept_, model.intercept_)
    Z, _ = _data(80, seed=3)
    np.testing.assert_array_equal(back.decision_function(Z), model.decision_function(Z))
    np.testing.assert_array_equal(back.predict(da.from_array(Z, chunks=30)).compute(),
                                  model.predict(Z))
    if isinstance(model, CompactSVC):
        np.testing.assert_array_equal(back.support_, model.support_)


def test_a_binary_compact_file_keeps_its_layout():
    ds = clone(MODELS[3]).fit(X, LABELS == "snow").to_dataset()
    assert ds["dual_coef"].dims == ("sample",) and "intercept" not in ds
    assert isinstance(ds.attrs["intercept"], float)


def test_a_three_class_kernel_ridge_file_round_trips(tmp_path):
    labels = np.array([10, 20, 30])[np.digitize(X[:, 0], [-0.4, 0.4])]
    model = clone(MODELS[0]).fit(X, labels)
    back = load_model(save_model(model, tmp_path / "model.zarr"))
    np.testing.assert_array_equal(back.decision_function(X), model.decision_function(X))
    np.testing.assert_array_equal(back.classes_, model.classes_)


def test_a_compact_file_whose_columns_do_not_match_its_classes_is_refused(tmp_path):
    labels = np.array([10, 20, 30])[np.digitize(X[:, 0], [-0.4, 0.4])]
    ds = clone(MODELS[1]).fit(X, labels).to_dataset()
    path = write_model_dataset(ds.isel(output=slice(0, 2)), tmp_path / "bad.zarr")
    with pytest.raises(StoreError, match=r"3 classes but variable 'dual_coef' has 2"):
        load_model(path)


def test_feature_names_are_kept_for_k_classes():
    Xa = xr.DataArray(X, dims=("sample", "feature"), coords={"feature": ["NDAI", "SD"]})
    model = clone(MODELS[3]).fit(Xa, LABELS)
    with pytest.raises(ValueError, match="feature"):
        model.predict(Xa.assign_coords(feature=["SD", "CORR"]))
