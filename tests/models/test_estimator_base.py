"""The estimator base: each thing a user could hit without it, a test.

Silent wrong answers (reordered DataFrame columns, a NaN row predicted as a
real class, string labels) and broken scikit-learn contracts (NotFittedError,
column-vector y, 1-D X, an xarray.Dataset as X), and a dask array of unknown chunk sizes
named as such.
"""

from __future__ import annotations

import dask
import dask.array as da
import numpy as np
import pandas as pd
import pytest
import xarray as xr
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from bigkern.errors import DataQualityError, LabelError
from bigkern.models import (
    BinnedKernelRidgeClassifier,
    BinnedSVC,
    CompactKernelPCA,
    CompactLSSVC,
    CompactSVC,
    KernelRidgeClassifier,
    ReducedSVC,
)
from bigkern.models._base import INTEGER_LABEL_SPAN, integer_classes

CLASSIFIERS = [
    BinnedSVC(omega=1.0, C=3.0),
    BinnedKernelRidgeClassifier(omega=1.0, lam=0.1),
    KernelRidgeClassifier(omega=1.0, lam=0.1),
    CompactLSSVC(omega=1.0, radius=3.0),
    CompactSVC(omega=1.0, radius=3.0),
]
IDS = [type(c).__name__ for c in CLASSIFIERS]


@pytest.fixture(autouse=True)
def _local_scheduler():
    with dask.config.set(scheduler="sync"):
        yield


def _data(n: int = 300, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] > 0, 1, 0)
    return X, y


@pytest.mark.parametrize("model", CLASSIFIERS, ids=IDS)
def test_reordered_dataframe_columns_are_an_error_not_a_different_answer(model):
    model = clone(model)
    X, y = _data()
    frame = pd.DataFrame(X, columns=["NDAI", "SD", "CORR"])
    model.fit(frame, y)
    assert list(model.feature_names_in_) == ["NDAI", "SD", "CORR"]
    np.testing.assert_array_equal(model.predict(frame), model.predict(X))
    with pytest.raises(ValueError, match="feature names should match"):
        model.predict(frame[["CORR", "SD", "NDAI"]])


@pytest.mark.parametrize("model", CLASSIFIERS[:3], ids=IDS[:3])
def test_a_row_that_cannot_be_predicted_never_gets_a_class(model):
    model = clone(model)
    X, y = _data()  # labels 0 / 1: 0 is a real class here
    model.fit(X, y)
    Xt = X[:5].copy()
    Xt[2, 1] = np.nan
    if model._allow_nan:
        assert np.isnan(model.decision_function(Xt)[2])
        with pytest.raises(DataQualityError, match=r"1 row\(s\) of X \(first: row 2\)"):
            model.predict(Xt)
        lazy = model.predict(da.from_array(Xt, chunks=2))
        with pytest.raises(DataQualityError, match=r"first: row 2"):
            lazy.compute()
    else:
        with pytest.raises(ValueError, match="Input X contains NaN"):
            model.predict(Xt)


@pytest.mark.parametrize("model", CLASSIFIERS, ids=IDS)
def test_string_labels_fit_and_predict(model):
    model = clone(model)
    X, y = _data()
    labels = np.where(y == 1, "cloud", "clear")
    model.fit(X, labels)
    assert model.classes_.tolist() == ["clear", "cloud"]
    pred = model.predict(X)
    assert set(np.unique(pred)) <= {"clear", "cloud"}
    assert np.mean(pred == labels) > 0.8


@pytest.mark.parametrize("model", [*CLASSIFIERS, CompactKernelPCA(omega=1.0, radius=3.0)],
                         ids=[*IDS, "CompactKernelPCA"])
def test_use_before_fit_raises_not_fitted(model):
    model = clone(model)
    X, _ = _data(10)
    method = model.transform if isinstance(model, CompactKernelPCA) else model.predict
    with pytest.raises(NotFittedError):
        method(X)


def test_kernel_pca_has_no_decision_function():
    assert not hasattr(CompactKernelPCA(), "decision_function")


@pytest.mark.parametrize("model", CLASSIFIERS, ids=IDS)
def test_column_vector_y_is_accepted_with_a_warning(model):
    model = clone(model)
    from sklearn.exceptions import DataConversionWarning

    X, y = _data()
    with pytest.warns(DataConversionWarning):
        model.fit(X, y[:, None])
    assert model.predict(X[:3]).shape == (3,)


def test_one_dimensional_x_gets_scikit_learn_s_message():
    X, y = _data()
    with pytest.raises(ValueError, match="Expected 2D array, got 1D array"):
        KernelRidgeClassifier().fit(X[:, 0], y)


@pytest.mark.parametrize("model", CLASSIFIERS[:2], ids=IDS[:2])
def test_an_xarray_dataset_as_x_points_to_stack_samples(model):
    model = clone(model)
    X, y = _data()
    ds = xr.Dataset({f: ("pixel", X[:, i]) for i, f in enumerate(["NDAI", "SD", "CORR"])})
    with pytest.raises(TypeError, match="stack_samples"):
        model.fit(ds, y)


class _BinaryOnlyBinnedSVC(BinnedSVC):
    """A model kept to two classes by ``_binary_only`` (BinnedSVC itself takes k)."""

    _binary_only = True


def test_binary_only_is_declared_in_the_tags_and_multiclass_is_refused():
    X, y = _data()
    model = _BinaryOnlyBinnedSVC()
    assert model.__sklearn_tags__().classifier_tags.multi_class is False
    with pytest.raises(LabelError, match="Only binary classification is supported"):
        model.fit(X, np.arange(len(y)) % 3)
    assert BinnedSVC().__sklearn_tags__().classifier_tags.multi_class is True


def test_masked_labels_choose_the_classes():
    """MISR labels -1 / 0 / 1 with a mask of the labelled pixels: two classes, -1 and 1."""
    X, y = _data()
    labels = np.where(y == 1, 1, -1)
    labels[::7] = 0
    model = BinnedSVC(omega=1.0, C=3.0).fit(X, labels, mask=labels != 0)
    assert model.classes_.tolist() == [-1, 1]
    assert model.fit_report_["n_masked"] == int((labels == 0).sum())


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32", "int64", "uint32"])
def test_integer_labels_are_coded_as_numpy_unique_codes_them(dtype):
    """The table of an integer range gives np.unique's classes, dtype and codes; labels
    spread wider than the table, or not integers, are left to np.unique."""
    rng = np.random.default_rng(3)
    lo = 0 if dtype.startswith("u") else -3
    for y in (rng.integers(lo, 4, size=500).astype(dtype),
              np.array([5, 5, 9], dtype=dtype), np.array([7], dtype=dtype)):
        classes, codes = integer_classes(y)
        want_classes, want_codes = np.unique(y, return_inverse=True)
        assert classes.dtype == want_classes.dtype and codes.dtype == want_codes.dtype
        np.testing.assert_array_equal(classes, want_classes)
        np.testing.assert_array_equal(codes, want_codes)
    assert integer_classes(np.array([0, INTEGER_LABEL_SPAN], dtype=np.int64)) is None
    assert integer_classes(np.array([0.0, 1.0])) is None
    assert integer_classes(np.array([], dtype=dtype)) is None
    with pytest.raises(LabelError, match="one class only"):
        BinnedSVC().fit(np.zeros((4, 2)), np.full(4, 2, dtype=dtype))


def test_dataarray_features_are_matched_by_name():
    X, y = _data()
    arr = xr.DataArray(X, dims=("sample", "feature"),
                       coords={"feature": ["NDAI", "SD", "CORR"]})
    model = BinnedSVC(omega=1.0, C=3.0).fit(arr, y)
    swapped = arr.sel(feature=["CORR", "NDAI", "SD"])
    np.testing.assert_array_equal(model.predict(swapped), model.predict(arr))
    with pytest.raises(ValueError, match=r"lacks feature\(s\) \['SD'\]"):
        model.predict(arr.sel(feature=["NDAI", "CORR"]))


def _scenes_and_samples():
    from bigkern.datasets import make_scenes
    from bigkern.features import with_features
    from bigkern.scenes import stack_samples

    features = ["NDAI", "logSD", "CORR"]
    ds = with_features(make_scenes(1, (32, 48), seed=4, radiances=False), features)
    ds["CORR"] = ds["CORR"].where(ds["x"] != 5)  # a column of pixels that cannot be predicted
    s = stack_samples(ds, features)
    X, y, mask = (np.asarray(a.compute()) for a in (s.X, s.y, s.mask))
    keep = mask & np.isfinite(X).all(axis=1)
    frame = pd.DataFrame(X[keep], columns=features)
    return ds, frame, y[keep]


@pytest.mark.parametrize("model", [BinnedSVC(omega=1.0, C=3.0), KernelRidgeClassifier(),
                                   CompactLSSVC(omega=1.0, radius=2.0),
                                   CompactSVC(omega=1.0, radius=2.0),
                                   ReducedSVC(omega=1.0, C=3.0, size=40, random_state=0)],
                         ids=["BinnedSVC", "KernelRidgeClassifier", "CompactLSSVC", "CompactSVC",
                              "ReducedSVC"])
def test_predict_scenes_works_for_every_classifier_and_never_flags_a_class(model):
    from bigkern.jobs.predict import predict_scenes

    ds, frame, y = _scenes_and_samples()
    model = clone(model).fit(frame.iloc[:400], (y[:400] + 1) // 2)  # classes 0 / 1
    pred = predict_scenes(model, ds).compute()
    flags = pred["cloud_mask"].attrs["flag_values"]
    assert flags.tolist() == [0, -128, 1]  # 0 is a class: "no prediction" is -128
    assert flags.dtype == pred["cloud_mask"].dtype == np.int8  # CF: the variable's type
    assert pred["cloud_mask"].attrs["flag_meanings"] == "negative no_prediction positive"
    mask = pred["cloud_mask"].values
    assert (mask[:, :, 5] == -128).all()
    np.testing.assert_array_equal(mask == -128, np.isnan(pred["decision"].values))
    rows = ds[["NDAI", "logSD", "CORR"]].to_array("feature").transpose(..., "feature")
    flat = rows.values.reshape(-1, 3)
    good = np.isfinite(flat).all(axis=1)
    np.testing.assert_array_equal(mask.reshape(-1)[good],
                                  model.predict(pd.DataFrame(flat[good], columns=frame.columns)))


def test_predict_scenes_refuses_string_classes_for_an_int8_mask():
    from bigkern.jobs.predict import predict_scenes

    ds, frame, y = _scenes_and_samples()
    model = BinnedSVC(omega=1.0, C=3.0).fit(frame, np.where(y > 0, "cloud", "clear"))
    with pytest.raises(TypeError, match=r"classes must be integers in \[-127, 127\]"):
        predict_scenes(model, ds)


REGRESSORS = {
    "OHTRegressor": lambda: __import__("bigkern").OHTRegressor(random_state=0),
    "LOOKernelRidge": lambda: __import__("bigkern").LOOKernelRidge(random_state=0),
    "GaussianRLS": lambda: __import__("bigkern").GaussianRLS(omega=1.0),
    "CompactKernelRidge": lambda: __import__("bigkern").CompactKernelRidge(omega=1.0),
    "ReducedSVR": lambda: __import__("bigkern").ReducedSVR(random_state=0),
    "NystromKernelRidge": lambda: __import__("bigkern").NystromKernelRidge(random_state=0),
}


@pytest.mark.parametrize("name", list(REGRESSORS))
def test_predict_scenes_predicts_values_for_every_regressor(name, tmp_path):
    from bigkern.jobs.predict import predict_scenes, write_predictions
    from bigkern.models.persistence.model_files import load_model, save_model

    ds, frame, _ = _scenes_and_samples()
    target = frame["NDAI"].to_numpy() * 0.5 + np.sin(frame["CORR"].to_numpy() * 3)
    model = REGRESSORS[name]().fit(frame.iloc[:300], target[:300])
    pred = predict_scenes(model, ds)
    assert list(pred.data_vars) == ["prediction"]
    values = pred["prediction"].values
    assert np.isnan(values[:, :, 5]).all()  # the column without CORR: no prediction
    rows = ds[["NDAI", "logSD", "CORR"]].to_array("feature").transpose(..., "feature")
    flat = rows.values.reshape(-1, 3)
    good = np.isfinite(flat).all(axis=1)
    np.testing.assert_array_equal(np.isnan(values.reshape(-1)), ~good)
    expected = model.predict(pd.DataFrame(flat[good], columns=frame.columns))
    np.testing.assert_allclose(values.reshape(-1)[good], expected,
                               rtol=1e-5, atol=1e-5)  # the scene values are float32
    # reloaded, the model predicts the scenes bit-identically; the store holds them
    again = predict_scenes(load_model(save_model(model, tmp_path / "m.zarr")), ds)
    np.testing.assert_array_equal(again["prediction"].values, values)
    report = write_predictions(again, tmp_path / "pred.zarr")
    assert report.summary["no_prediction"] == int((~good).sum())
    assert "positive" not in report.summary


def test_predict_scenes_names_a_model_without_an_expansion():
    from bigkern.jobs.predict import predict_scenes

    ds, frame, _ = _scenes_and_samples()
    pca = CompactKernelPCA(omega=1.0, n_components=2).fit(frame.iloc[:200])
    with pytest.raises(TypeError, match="CompactKernelPCA cannot predict scenes"):
        predict_scenes(pca, ds)


@pytest.mark.parametrize("name", ["OHTRegressor", "LOOKernelRidge", "GaussianRLS"])
def test_gaussian_regressors_predict_through_the_one_expansion_type(name):
    from bigkern.kernels import KernelExpansion

    _, frame, _ = _scenes_and_samples()
    model = REGRESSORS[name]().fit(frame.iloc[:200], frame["NDAI"].to_numpy()[:200])
    exp = model.expansion_
    assert isinstance(exp, KernelExpansion)
    X = frame.iloc[200:260]
    np.testing.assert_array_equal(model.predict(X), exp.decision(X.to_numpy()))
    assert model.n_basis_ == exp.n_basis


def test_rows_of_unknown_count_are_named_as_such():
    rng = np.random.default_rng(0)
    X = da.from_array(rng.normal(size=(400, 3)), chunks=100)
    y = da.from_array(np.where(rng.random(400) < 0.5, 1, -1), chunks=100)
    keep = X[:, 0] > -1
    with pytest.raises(ValueError, match=r"X is a dask array of unknown chunk sizes .* call "
                                         r"X.compute_chunk_sizes\(\) first") as err:
        BinnedSVC().fit(X[keep], y[keep])
    assert "nan" not in str(err.value)
