"""Expansions of k columns (a classifier's k classes): one kernel evaluation per row serves
every column, and each column is, bit for bit, the one-column expansion of its coefficients."""

from __future__ import annotations

import numpy as np
import pytest

from bigkern import KernelExpansion
from bigkern.models._base import ClassesMixin, _classes_of


def _parts(seed: int = 0, m: int = 37, d: int = 3, k: int = 4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(300, d))
    X[5, 1] = np.nan
    X[17, 0] = np.inf
    return X, rng.normal(size=(m, d)), rng.normal(size=(m, k)), rng.normal(size=k)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kernel", ["gaussian", "laplacian", "matern32", "matern52"])
def test_each_column_is_its_own_expansion_bit_for_bit(dtype, kernel):
    X, C, W, b = _parts()
    both = KernelExpansion.from_parts(C, W, b, 1.3, kernel=kernel, dtype=dtype)
    assert both.n_outputs == 4
    D = both.decision(X)
    assert D.shape == (300, 4) and D.dtype == np.float64
    for j in range(4):
        alone = KernelExpansion.from_parts(C, W[:, j], b[j], 1.3, kernel=kernel, dtype=dtype)
        assert alone.n_outputs == 1
        np.testing.assert_array_equal(D[:, j], alone.decision(X))
    assert np.isnan(D[[5, 17]]).all() and np.isfinite(np.delete(D, [5, 17], axis=0)).all()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_columns_agree_with_the_blas_path_and_any_block(dtype):
    X, C, W, b = _parts(1)
    e = KernelExpansion.from_parts(C, W, b, 0.9, dtype=dtype)
    D = e.decision(X)
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(e.decision(X, path="blas"), D, rtol=tol, atol=tol)
    # a row's values do not depend on the rows around it
    np.testing.assert_array_equal(np.vstack([e.decision(X[:100]), e.decision(X[100:])]), D)


def test_a_shared_intercept_and_no_centres():
    X, C, W, _ = _parts(2, k=3)
    e = KernelExpansion.from_parts(C, W, 0.5, 1.0, dtype="float64")
    np.testing.assert_array_equal(e.intercept, [0.5, 0.5, 0.5])
    empty = KernelExpansion.from_parts(np.zeros((0, 3)), np.zeros((0, 3)), [1.0, 2.0, 3.0],
                                       1.0)
    D = empty.decision(X)
    assert D.shape == (300, 3)
    np.testing.assert_array_equal(D[0], [1.0, 2.0, 3.0])
    assert np.isnan(D[5]).all()


def test_wrong_intercepts_are_refused():
    _, C, W, _ = _parts()
    with pytest.raises(ValueError, match="one intercept per column"):
        KernelExpansion.from_parts(C, W, [1.0, 2.0], 1.0)


def test_one_column_stays_one_dimensional():
    X, C, W, b = _parts()
    e = KernelExpansion.from_parts(C, W[:, :1], b[:1], 1.0)
    assert e.n_outputs == 1 and e.coef.ndim == 1 and isinstance(e.intercept, float)
    assert e.decision(X).shape == (300,)


class _Codes(ClassesMixin):
    _binary_only = False


def test_codes_of_k_classes_and_the_largest_decision_wins():
    y = np.array(["snow", "clear", "cloud", "clear", "snow"])
    model = _Codes()
    codes = model._fit_classes(y)
    np.testing.assert_array_equal(model.classes_, ["clear", "cloud", "snow"])
    np.testing.assert_array_equal(codes, [2, 0, 1, 0, 2])
    assert codes.dtype == np.int8
    dec = np.array([[0.1, 0.3, -1.0], [2.0, -1.0, 0.0]])
    np.testing.assert_array_equal(_classes_of(dec, model.classes_), ["cloud", "clear"])


def test_a_row_with_no_decision_gets_no_class():
    dec = np.array([[0.1, 0.3, -1.0], [np.nan, np.nan, np.nan]])
    with pytest.raises(Exception, match="1 row"):
        _classes_of(dec, np.array([1, 2, 3]))


def test_binary_only_models_keep_their_message():
    class Binary(ClassesMixin):
        pass

    with pytest.raises(ValueError, match="Only binary classification is supported"):
        Binary()._fit_classes(np.array([1, 2, 3]))
    with pytest.raises(ValueError, match="one class only"):
        _Codes()._fit_classes(np.array([4, 4]))
    with pytest.raises(ValueError, match="one label per row"):
        _Codes()._fit_classes(np.array([[1, 0], [0, 1], [1, 1]]))


@pytest.mark.parametrize("suffix", ["zarr", "nc"])
def test_a_model_of_k_columns_is_saved_and_loaded_bit_for_bit(tmp_path, suffix):
    from bigkern import load_model, save_model
    from bigkern.models import ReducedSVC

    X, _, W, b = _parts(3, d=2, k=3)
    rng = np.random.default_rng(3)
    Xf = rng.normal(size=(60, 2))
    model = ReducedSVC(omega=1.0, size=6, random_state=0).fit(Xf, (Xf[:, 0] > 0).astype(int))
    e = model.expansion_
    # the binary fit's basis with three columns of coefficients: the file's layout of a
    # three-class model, whichever model fitted it
    model.expansion_ = KernelExpansion.from_parts(e.centers, W[:6], b, e.omega, e.offset,
                                                  e.scale, clip=e.basis.clip)
    model.classes_ = np.array([2, 5, 7])
    path = tmp_path / f"m.{suffix}"
    save_model(model, path)
    back = load_model(path)
    np.testing.assert_array_equal(back.classes_, [2, 5, 7])
    assert back.expansion_.n_outputs == 3
    np.testing.assert_array_equal(back.decision_function(X), model.decision_function(X))
    keep = np.isfinite(X).all(axis=1)
    np.testing.assert_array_equal(back.predict(X[keep]), model.predict(X[keep]))
    assert set(back.predict(X[keep])) <= {2, 5, 7}
    # dask rows: one lazy task per row chunk, the same values and classes
    import dask
    import dask.array as da

    with dask.config.set(scheduler="sync"):
        lazy = back.decision_function(da.from_array(X, chunks=(70, 2)))
        assert lazy.shape == (300, 3)
        np.testing.assert_array_equal(lazy.compute(), model.decision_function(X))
        np.testing.assert_array_equal(
            back.predict(da.from_array(X[keep], chunks=(50, 2))).compute(),
            model.predict(X[keep]))


@pytest.mark.parametrize("suffix", ["zarr", "nc"])
def test_string_classes_are_saved_in_netcdf_and_zarr(tmp_path, suffix):
    from bigkern import KernelRidgeClassifier, load_model, save_model

    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 2))
    y = np.array(["clear", "low_cloud", "high_cloud"])[np.digitize(X[:, 0], [-0.4, 0.4])]
    model = KernelRidgeClassifier(omega=1.0).fit(X, y)
    path = tmp_path / f"m.{suffix}"
    save_model(model, path)
    back = load_model(path)
    np.testing.assert_array_equal(back.classes_, model.classes_)
    np.testing.assert_array_equal(back.predict(X), model.predict(X))
