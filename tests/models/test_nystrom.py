"""NystromKernelRidge(+Classifier): exact against a direct solve, one read, paths, bad input."""

from __future__ import annotations

import warnings

import dask
import dask.array as da
import numpy as np
import pandas as pd
import pytest

from bigkern.errors import IllConditionedWarning, LabelError
from bigkern.kernels import gaussian_kernel
from bigkern.models.reduced_kernel.nystrom import NystromKernelRidge, NystromKernelRidgeClassifier
from bigkern.solvers.nystrom import kernel_penalty_basis, nystrom_solve


def _wave(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, (n, 2))
    return X, np.sin(2 * X[:, 0]) + 0.3 * X[:, 1] + 0.1 * rng.standard_normal(n)


def _fit(cls, X, y, **kw):
    params = {"omega": 0.7, "lam": 0.1, "size": 60, "random_state": 3}
    with dask.config.set(scheduler="sync"):
        return cls(**{**params, **kw}).fit(X, y)


@pytest.mark.parametrize("penalty", ["rkhs", "coef"])
def test_exact_against_a_direct_in_memory_solve(penalty):
    X, y = _wave(800, seed=1)
    model = _fit(NystromKernelRidge, da.from_array(X, chunks=(170, -1)), y, standardize=False,
                 penalty=penalty)
    C = model.expansion_.centers
    G = np.hstack([gaussian_kernel(X, C, 0.7), np.ones((len(X), 1))])
    P = np.zeros((61, 61))
    P[:60, :60] = 0.1 * (gaussian_kernel(C, C, 0.7) if penalty == "rkhs" else np.eye(60))
    w = np.linalg.lstsq(np.vstack([G, np.linalg.cholesky(P + 1e-300 * np.eye(61)).T]),
                        np.concatenate([y, np.zeros(61)]), rcond=None)[0]
    Xt, _ = _wave(300, seed=2)
    want = gaussian_kernel(Xt, C, 0.7) @ w[:60] + w[60]
    np.testing.assert_allclose(model.predict(Xt), want, rtol=1e-7, atol=1e-7)
    assert model.fit_report_["reads"] == 2 and model.fit_report_["jitter"] == 0


def test_same_as_sklearn_nystroem_and_ridge():
    from sklearn.kernel_approximation import Nystroem
    from sklearn.linear_model import Ridge

    X, y = _wave(600, seed=3)
    model = _fit(NystromKernelRidge, X, y, standardize=False, lam=0.5)
    C = model.expansion_.centers
    feats = Nystroem(gamma=1 / (2 * 0.7**2), n_components=60).fit(C)
    feats.components_, feats.component_indices_ = C, np.arange(60)
    K = gaussian_kernel(C, C, 0.7)
    u, s, vt = np.linalg.svd(K)
    feats.normalization_ = (u / np.sqrt(s)) @ vt
    ridge = Ridge(alpha=0.5).fit(feats.transform(X), y)
    np.testing.assert_allclose(model.predict(X), ridge.predict(feats.transform(X)), atol=1e-5)


def test_the_cholesky_basis_gives_the_eigen_basis_solution_and_near_singular_keeps_eigen():
    """Any T with T Tᵀ = K⁻¹ gives one solution: the Cholesky basis, taken when K is well
    conditioned, solves the system the eigendecomposition's basis solves."""
    rng = np.random.default_rng(5)
    X, y = rng.normal(size=(400, 3)), rng.normal(size=400)
    C = X[:50]
    K = gaussian_kernel(C, C, 0.4)
    G = gaussian_kernel(X, C, 0.4)
    pieces = {"GtG": G.T @ G, "Gty": G.T @ y, "Gsum": G.sum(0), "ysum": y.sum(), "n": 400}
    T = kernel_penalty_basis(K)
    assert np.allclose(T, np.triu(T)) and T.shape == (50, 50)  # the Cholesky factor's
    S, U = np.linalg.eigh(K)
    eigen = nystrom_solve(pieces, U / np.sqrt(S), 0.01, transform=True)
    got = nystrom_solve(pieces, T, 0.01, transform=True)
    np.testing.assert_allclose(got.coef, eigen.coef, rtol=1e-8, atol=1e-8 * np.abs(
        eigen.coef).max())
    np.testing.assert_allclose(got.intercept, eigen.intercept, rtol=1e-8)
    # near singular (wide kernel, close centres): the eigenvalues over the cutoff only
    wide = kernel_penalty_basis(gaussian_kernel(C, C, 20.0))
    assert wide.shape[1] < 50 and not np.allclose(wide, np.triu(wide))


@pytest.mark.determinism
@pytest.mark.parametrize("chunks", [7, 64, 333])
def test_same_fit_for_any_chunking(chunks):
    X, y = _wave(600, seed=4)
    kw = {"omega": [0.5, 1.0], "lam": [1e-2, 1.0]}  # round-off × the condition number
    ref = _fit(NystromKernelRidge, X, y, **kw)
    got = _fit(NystromKernelRidge, da.from_array(X, chunks=(chunks, 2)),
               da.from_array(y, chunks=chunks), **kw)
    np.testing.assert_array_equal(ref.reduced_index_, got.reduced_index_)
    # sums in another order: round-off, amplified by the system's condition (and by the
    # cancellation in the held-out sums of squares)
    np.testing.assert_allclose(got.cv_scores_, ref.cv_scores_, rtol=1e-5)
    np.testing.assert_allclose(got.predict(X), ref.predict(X), rtol=1e-6, atol=1e-6)


def test_width_and_lambda_path_from_one_read_picks_the_best_held_out():
    X, y = _wave(1500, seed=5)
    model = _fit(NystromKernelRidge, X, y, omega=[0.1, 0.7, 5.0], lam=[1e-3, 1e-1, 1e3])
    assert model.cv_scores_.shape == (3, 3)
    i, j = np.unravel_index(np.argmin(model.cv_scores_), (3, 3))
    assert (model.omega_, model.lam_) == ([0.1, 0.7, 5.0][i], [1e-3, 1e-1, 1e3][j])
    assert model.lam_ < 1e3 and model.fit_report_["reads"] == 2
    single = _fit(NystromKernelRidge, X, y, omega=model.omega_, lam=model.lam_)
    np.testing.assert_allclose(model.predict(X), single.predict(X), rtol=1e-4, atol=1e-5)


def test_classifier_string_labels_lazy_labels_and_accuracy():
    X, _ = _wave(1000, seed=6)
    y = np.where(X[:, 0] * X[:, 1] > 0, "cloud", "clear")
    eager = _fit(NystromKernelRidgeClassifier, X, y, lam=1.0)
    lazy = _fit(NystromKernelRidgeClassifier, da.from_array(X, chunks=(300, 2)),
                da.from_array(y, chunks=300), lam=1.0)
    np.testing.assert_array_equal(lazy.reduced_index_, eager.reduced_index_)
    assert list(eager.classes_) == ["clear", "cloud"] == list(lazy.classes_)
    assert np.mean(eager.predict(X) == y) > 0.95
    # chunks of 300 rows sum GᵀG in another order than one block of 1,000; the solve with
    # 60 close centers amplifies that round-off to ~1e-4 here (measured: 1.6e-4 at most)
    np.testing.assert_allclose(lazy.decision_function(X), eager.decision_function(X),
                               rtol=1e-4, atol=5e-4)
    with pytest.raises(LabelError, match="one class only"):
        _fit(NystromKernelRidgeClassifier, X, np.ones(1000))


def test_non_finite_rows_are_left_out_and_counted():
    X, y = _wave(400, seed=7)
    Xbad = X.copy()
    Xbad[:10, 1] = np.nan
    got = _fit(NystromKernelRidge, Xbad, y)
    ref = _fit(NystromKernelRidge, X[10:], y[10:])
    rep = got.fit_report_
    assert rep["n_nonfinite"] == 10 and rep["n_valid"] == 390
    assert rep["n_nonfinite_by_feature"] == {"f0": 0, "f1": 10}
    assert np.isnan(got.predict(Xbad[:3])).all()
    assert ref.fit_report_["n_valid"] == 390


_WIDTH = r"must be a float in the range \[1e-100, 1e\+100\]"
_POSITIVE_OR_LIST = r"must be a float in the range \(0\.0, inf\) or an array-like"


@pytest.mark.parametrize("kwargs, match", [
    ({"size": 401}, "more than the 400 rows"),
    ({"size": 1}, r"'size' parameter of NystromKernelRidge must be an int in the range \[2, "),
    ({"omega": 0.0}, rf"'omega' parameter of NystromKernelRidge {_WIDTH} or an array-like"),
    ({"omega": [1.0, -1.0]}, r"omega must hold reals in \[1e-100, 1e\+100\]; omega\[1\] = -1\.0"),
    ({"lam": 0.0}, rf"'lam' parameter of NystromKernelRidge {_POSITIVE_OR_LIST}"),
    ({"lam": -1.0}, rf"'lam' parameter of NystromKernelRidge {_POSITIVE_OR_LIST}"),
    ({"lam": []}, "lam must be one number or a non-empty"),
    ({"penalty": "l1"}, r"'penalty' parameter of NystromKernelRidge must be a str among"),
    ({"n_folds": 1}, r"'n_folds' parameter of NystromKernelRidge must be an int in the range "
                     r"\[2, inf\)"),
])
def test_bad_input_is_a_clear_error(kwargs, match):
    X, y = _wave(400)
    with pytest.raises(ValueError, match=match):
        _fit(NystromKernelRidge, X, y, **kwargs)


def test_duplicate_centers_are_dropped_and_a_singular_system_gets_jitter():
    from bigkern.reduce.reduced.reduced_set import DuplicateCentersWarning

    X, y = _wave(200, seed=8)
    X = np.repeat(X[:20], 10, axis=0)  # 20 distinct rows: many duplicate centers
    y = np.repeat(y[:20], 10)
    with pytest.warns(DuplicateCentersWarning, match="dropped"):
        model = _fit(NystromKernelRidge, X, y, size=60)
    assert model.fit_report_["n_duplicates"] > 0 and model.n_basis_ <= 20
    singular = {"GtG": np.ones((2, 2)), "Gty": np.ones(2), "Gsum": np.zeros(2), "ysum": 0.0,
                "n": 3}
    with pytest.warns(IllConditionedWarning, match="mean diagonal added"):
        sol = nystrom_solve(singular, np.zeros((2, 2)), 1.0)
    assert sol.jitter > 0 and np.all(np.isfinite(sol.coef))
    with pytest.raises(ValueError, match="lam must be a positive"):
        nystrom_solve({"GtG": np.eye(2), "Gty": np.ones(2), "Gsum": np.ones(2), "ysum": 1.0,
                       "n": 3}, np.eye(2), 0.0)


def test_persistence_round_trip_is_bit_identical(tmp_path):
    from bigkern.models.persistence.expansion_files import expansion_from_dataset

    X, y = _wave(300, seed=9)
    frame = pd.DataFrame(X, columns=["a", "b"])
    model = _fit(NystromKernelRidge, frame, y)
    back = expansion_from_dataset(model.to_dataset(), NystromKernelRidge)  # load_model's path
    np.testing.assert_array_equal(back.predict(frame), model.predict(frame))
    clf = _fit(NystromKernelRidgeClassifier, frame, np.where(X[:, 0] > 0, 1, -1))
    ds = clf.to_dataset()
    assert ds.attrs["model"] == "NystromKernelRidgeClassifier"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(_reload_classifier(ds).decision_function(frame),
                                      clf.decision_function(frame))


def _reload_classifier(ds):
    """What persistence.load_model_dataset does for the registry's "expansion" family."""
    import json

    from bigkern.kernels import KernelExpansion

    params = json.loads(ds.attrs["params_json"])
    valid = NystromKernelRidgeClassifier().get_params()
    model = NystromKernelRidgeClassifier(**{k: v for k, v in params.items() if k in valid})
    model.classes_ = np.asarray(ds.attrs["classes"])
    model.n_features_in_ = int(ds.sizes["feature"])
    model.feature_names_in_ = np.asarray([str(f) for f in ds["feature"].values], dtype=object)
    model.expansion_ = KernelExpansion.from_parts(
        ds["basis"].values, ds["coef"].values, float(ds.attrs["intercept"]),
        float(ds.attrs["omega"]), ds["offset"].values, ds["scale"].values)
    return model


@pytest.mark.parametrize("cls", [NystromKernelRidge])
def test_predict_scenes_predicts_values(cls, tmp_path):
    from bigkern.datasets import make_scenes
    from bigkern.features import with_features
    from bigkern.jobs.predict import predict_scenes
    from bigkern.scenes import stack_samples

    features = ["NDAI", "logSD", "CORR"]
    ds = with_features(make_scenes(1, (32, 48), seed=4, radiances=False), features)
    ds["CORR"] = ds["CORR"].where(ds["x"] != 5)
    s = stack_samples(ds, features)
    Xs, mask = (np.asarray(a.compute()) for a in (s.X, s.mask))
    keep = mask & np.isfinite(Xs).all(axis=1)
    frame = pd.DataFrame(Xs[keep], columns=features)
    target = frame["NDAI"].to_numpy() * 0.5 + np.sin(frame["CORR"].to_numpy() * 3)
    model = cls(size=40, random_state=0).fit(frame.iloc[:300], target[:300])
    values = predict_scenes(model, ds)["prediction"].values
    assert np.isnan(values[:, :, 5]).all()
    flat = ds[features].to_array("feature").transpose(..., "feature").values.reshape(-1, 3)
    good = np.isfinite(flat).all(axis=1)
    np.testing.assert_array_equal(np.isnan(values.reshape(-1)), ~good)
    want = model.predict(pd.DataFrame(flat[good], columns=features))
    np.testing.assert_allclose(values.reshape(-1)[good], want, rtol=1e-5, atol=1e-5)
