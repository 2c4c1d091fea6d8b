"""A heavy-tailed feature cannot decide the Gaussian kernel alone: robust scaling, clipped.

What passing proves: the reduced models clip robustly standardized values to
±CLIP_SCALED, on every path (fit, numpy and dask, float32 and float64 predictions, a saved
and loaded model), so a value beyond the bound changes nothing; the clipped values
of the reduced set are counted per feature in ``fit_report_``; a heavy-tailed
feature, whose robust σ is a small part of its spread, is named with its range;
well-scaled features, and ``standardize=False``, warn about nothing; and on data
with such a feature the clipped default predicts better than unclipped robust scaling.
"""

from __future__ import annotations

import warnings

import dask.array as da
import numpy as np
import pandas as pd
import pytest

from bigkern import (
    BigkernWarning,
    NystromKernelRidge,
    NystromKernelRidgeClassifier,
    ReducedSVC,
    ReducedSVR,
)
from bigkern.features.scaling import (
    CLIP_SCALED,
    FAR_SCALED,
    far_features,
    robust_standardizer,
    standardized,
)
from bigkern.models.persistence.model_files import load_model_dataset


def _data(heavy: bool) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(1500, 3)), columns=["NDAI", "SD", "CORR"])
    if heavy:
        X["SD"] = rng.standard_cauchy(1500)
    return X, np.where(X["NDAI"] > 0, 1, -1)


def _caught(model, X, y) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(X, y)
    return [str(w.message) for w in caught if issubclass(w.category, BigkernWarning)]


def test_far_features_names_each_feature_beyond_the_limit():
    z = np.array([[0.0, -FAR_SCALED - 1, FAR_SCALED], [1.0, 0.0, 0.0]])
    assert far_features(z, ["a", "b", "c"]) == ["b (-21 … 0)"]
    assert far_features(z) == ["f1 (-21 … 0)"]
    assert far_features(np.zeros((0, 3))) == []


@pytest.mark.parametrize("make", [
    lambda: ReducedSVC(size=150, random_state=0),
    lambda: ReducedSVC(size=150, loss="squared_hinge", random_state=0),
    lambda: ReducedSVR(size=150, random_state=0),
    lambda: NystromKernelRidge(omega=1.0, lam=1.0, size=150, random_state=0),
])
def test_a_heavy_tailed_feature_is_named_with_its_range(make):
    X, y = _data(heavy=True)
    messages = _caught(make(), X, y)
    assert len(messages) == 1, messages
    assert "1 feature(s) reach beyond ±20 robust σ in the reduced set: SD (" in messages[0]
    assert "NDAI" not in messages[0] and "CORR" not in messages[0]
    assert _caught(make(), *_data(heavy=False)) == []


def test_unstandardized_features_are_the_users_choice():
    X, y = _data(heavy=True)
    assert _caught(ReducedSVC(size=150, standardize=False, random_state=0), X, y) == []


def test_standardized_clips_and_keeps_nan():
    z = standardized([[0.0, np.nan], [100.0, -3.0]], [0.0, 0.0], [1.0, 1.0], clip=CLIP_SCALED)
    assert z[1, 0] == CLIP_SCALED and np.isnan(z[0, 1]) and z[1, 1] == -3.0
    assert standardized([[100.0]], [0.0], [1.0])[0, 0] == 100.0  # no clip by default


_MODELS = [
    lambda: ReducedSVC(omega=1.0, C=100.0, size=150, random_state=0),
    lambda: ReducedSVC(omega=1.0, C=100.0, size=150, loss="squared_hinge", random_state=0),
    lambda: ReducedSVR(omega=1.0, C=100.0, size=150, random_state=0),
    lambda: NystromKernelRidge(omega=1.0, lam=1.0, size=150, random_state=0),
    lambda: NystromKernelRidge(omega=1.0, lam=1.0, size=150, solver="cg", random_state=0),
    lambda: NystromKernelRidgeClassifier(omega=1.0, lam=1.0, size=150, random_state=0),
]


def _decision(model, X):
    return model.decision_function(X) if hasattr(model, "classes_") else model.predict(X)


@pytest.mark.filterwarnings("ignore::bigkern.BigkernWarning")
@pytest.mark.parametrize("make", _MODELS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_values_beyond_the_bound_change_nothing_on_any_path(make, dtype):
    X, y = _data(heavy=True)
    X = X.astype(dtype)
    model = make().fit(X, y)
    report = model.fit_report_["n_clipped_in_reduced_set_by_feature"]
    assert set(report) == {"SD"} and 0 < report["SD"] < 150, report
    far, farther = X.iloc[:50].copy(), X.iloc[:50].copy()
    far["SD"], farther["SD"] = dtype(1e4), dtype(1e6)  # both beyond the bound
    base = _decision(model, far)
    assert np.array_equal(base, _decision(model, farther))
    assert not np.array_equal(base, _decision(model, X.iloc[:50]))
    loaded = load_model_dataset(model.to_dataset())
    assert loaded.to_dataset().attrs["clip"] == CLIP_SCALED
    assert np.array_equal(_decision(loaded, farther), base)
    lazy = _decision(model, da.from_array(farther.to_numpy(), chunks=(17, 3))).compute()
    np.testing.assert_array_equal(lazy, base)


@pytest.mark.filterwarnings("ignore::bigkern.BigkernWarning")
def test_the_fit_is_the_same_from_numpy_and_from_dask_chunks():
    X, y = _data(heavy=True)
    A = X.to_numpy()
    held = ReducedSVC(omega=1.0, C=100.0, size=150, random_state=0).fit(A, y)
    chunked = ReducedSVC(omega=1.0, C=100.0, size=150, random_state=0).fit(
        da.from_array(A, chunks=(400, 3)), da.from_array(y, chunks=400))
    np.testing.assert_allclose(chunked.decision_function(A), held.decision_function(A),
                               rtol=1e-6, atol=1e-6)


def test_unstandardized_models_clip_nothing():
    X, y = _data(heavy=True)
    model = ReducedSVR(size=150, standardize=False, random_state=0).fit(X, y)
    assert model.expansion_.basis.clip == np.inf
    assert model.fit_report_["n_clipped_in_reduced_set_by_feature"] == {}
    assert "clip" not in model.to_dataset().attrs


@pytest.mark.filterwarnings("ignore::bigkern.BigkernWarning")
def test_clipping_keeps_a_heavy_tailed_feature_from_deciding_the_kernel():
    """sin(2·x0) plus a Cauchy column: robust scaling without the clip lets the Cauchy
    column's far values dominate the distances (measured test MSE 0.055 against 0.046)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 3))
    X[:, 1] = rng.standard_cauchy(3000)
    y = np.sin(2 * X[:, 0]) + 0.1 * rng.normal(size=3000)
    train, test = slice(0, 2000), slice(2000, None)
    kw = {"omega": 1.0, "C": 100.0, "size": 150, "random_state": 0}
    clipped = ReducedSVR(**kw).fit(X[train], y[train])
    offset, scale = robust_standardizer(X[train])
    unclipped = ReducedSVR(**kw, standardize=False).fit((X[train] - offset) / scale, y[train])

    def mse(model, Z):
        return float(np.mean((model.predict(Z) - y[test]) ** 2))

    assert mse(clipped, X[test]) < 0.9 * mse(unclipped, (X[test] - offset) / scale)


def test_a_rare_category_is_scaled_like_a_common_one():
    """q10 = q90 (a one-hot column of a category under 10 %, a spike at zero): σ is the
    range over 2·z90, as a 0/1 column with a common category gets from its quantiles, so
    every 0/1 column weighs alike in the kernel and stays within ±2·z90 of its median;
    a constant column's σ is 1 (measured on mushroom's 117 one-hot columns: Nyström
    0.77 points behind z-scores with σ = 1 there)."""
    rng = np.random.default_rng(1)
    n = 2000
    rare = (rng.random(n) < 0.03).astype(float)
    common = (rng.random(n) < 0.4).astype(float)
    spike = np.where(rng.random(n) < 0.05, rng.exponential(1e-3, n), 0.0)
    X = np.column_stack([rare, common, spike, np.full(n, 7.0), rng.normal(size=n)])
    offset, scale = robust_standardizer(X)
    z90x2 = 2 * 1.2815515655446004
    np.testing.assert_allclose(scale[:2], 1 / z90x2)
    np.testing.assert_allclose(scale[2], spike.max() / z90x2)
    assert scale[3] == 1.0 and offset[3] == 7.0
    assert 0.9 < scale[4] < 1.1
    Z = standardized(X, offset, scale)
    assert np.abs(Z[:, :3]).max() <= z90x2 * (1 + 1e-12)


@pytest.mark.parametrize("chunked", [False, True])
def test_models_scale_a_rare_category_by_its_range(chunked):
    """Both the numpy and the dask paths of a reduced model standardize a rare 0/1
    column by its range (its robust σ from the quantiles alone would be 0)."""
    rng = np.random.default_rng(2)
    n = 1500
    X = np.column_stack([rng.normal(size=n), (rng.random(n) < 0.04).astype(float)])
    y = np.where(X[:, 0] + X[:, 1] > 0.5, 1, -1)
    data = da.from_array(X, chunks=(400, 2)) if chunked else X
    model = ReducedSVC(size=60, random_state=0).fit(data, y)
    np.testing.assert_allclose(model.expansion_.scale[1], 1 / (2 * 1.2815515655446004))
    assert model.score(X, y) > 0.9


@pytest.mark.parametrize("chunked", [False, True])
def test_a_mostly_zero_feature_squashed_by_a_wild_value_is_named(chunked):
    """A feature at 0 in 95 % of the rows takes its σ from its range; when one wild value
    sets that range the feature's other values weigh nothing, and the fit says so (a rare
    0/1 category, scaled the same way, is not named)."""
    rng = np.random.default_rng(3)
    n = 1500
    rain = np.where(rng.random(n) < 0.05, rng.exponential(2.0, n), 0.0)
    rain[7] = 5000.0
    hot = (rng.random(n) < 0.04).astype(float)
    X = pd.DataFrame({"NDAI": rng.normal(size=n), "rain": rain, "hot": hot})
    y = np.where(X["NDAI"] > 0, 1, -1)
    data = X if not chunked else da.from_array(X.to_numpy(), chunks=(400, 3))
    model = ReducedSVC(size=60, random_state=0)
    messages = _caught(model, data, y)
    squashed = [m for m in messages if "from their range" in m]
    assert len(squashed) == 1, messages
    assert ("rain (" if not chunked else "f1 (") in squashed[0]
    assert "hot" not in squashed[0] and "f2" not in squashed[0]


def _mean_and_std(rows):
    rows = np.asarray(rows, dtype=np.float64)
    return rows.mean(axis=0), rows.std(axis=0)


@pytest.mark.parametrize("model", [ReducedSVC(size=40, random_state=0),
                                   NystromKernelRidgeClassifier(size=40, random_state=0)])
def test_the_standardizer_setting_replaces_the_robust_standardizer(model):
    """``bigkern.standardizer`` gives the reduced models their offset and scale (from the
    scale sample: all 1,500 rows here); the clip to ±CLIP_SCALED still applies. Unset,
    the models' scaling is the robust standardizer's."""
    import bigkern.config

    rng = np.random.default_rng(4)
    X = rng.normal(2.0, 3.0, size=(1500, 3))
    y = np.where(X[:, 0] > 2.0, 1, -1)
    fitted = type(model)(**model.get_params()).fit(X, y)
    offset, scale = robust_standardizer(X)
    np.testing.assert_allclose(fitted.expansion_.offset, offset)
    np.testing.assert_allclose(fitted.expansion_.scale, scale)
    with bigkern.config.set(standardizer=_mean_and_std):
        fitted = type(model)(**model.get_params()).fit(X, y)
    offset, scale = _mean_and_std(X)
    np.testing.assert_allclose(fitted.expansion_.offset, offset)
    np.testing.assert_allclose(fitted.expansion_.scale, scale)
    assert fitted.expansion_.basis.clip == CLIP_SCALED
    assert fitted.score(X, y) > 0.9


def test_a_standardizer_setting_that_is_no_function_is_refused():
    import bigkern.config

    X = np.random.default_rng(5).normal(size=(200, 2))
    with bigkern.config.set(standardizer="mean_and_std"), \
            pytest.raises(TypeError, match=r"bigkern\.standardizer"):
        ReducedSVC(size=20, random_state=0).fit(X, np.where(X[:, 0] > 0, 1, -1))
