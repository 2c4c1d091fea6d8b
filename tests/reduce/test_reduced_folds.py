"""Per-width, per-fold reduced normal equations in one read (bigkern.reduce.reduced.folds)."""

from __future__ import annotations

from collections import Counter

import dask.array as da
import numpy as np
import pytest
from distributed import get_task_stream

from bigkern.errors import DataQualityError
from bigkern.models.regression.oht import OHTRegressor
from bigkern.reduce import reduced_normal_equations, reduced_normal_equations_folds
from bigkern.reduce.reduced.folds import fold_of_rows, fold_pieces

PIECES = ("GtG", "Gty", "Gsum", "yty", "ysum", "n")


def _data(n: int = 2400, d: int = 3, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * [1.0, 3.0, 0.5][:d] + 2.0
    y = np.sin(X[:, 0]) + 0.2 * X[:, 1] + 0.1 * rng.standard_normal(n)
    offset, scale = X.mean(0), X.std(0)
    centers = (X[rng.choice(n, 30, replace=False)] - offset) / scale
    return X, y, centers, offset, scale


def _close(a, b, rtol=1e-12):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * max(1.0, np.abs(b).max()))


def test_each_width_and_fold_matches_the_single_width_pass_on_that_fold():
    X, y, C, offset, scale = _data()
    omegas = (0.4, 1.0, 3.0)
    ds = reduced_normal_equations_folds(da.from_array(X, chunks=(500, -1)), y, C, omegas,
                                        n_folds=3, seed=11, offset=offset, scale=scale)
    fold = fold_of_rows(np.arange(len(X)), 3, 11)
    assert sorted(Counter(fold.tolist()).values())[0] > 700  # roughly a third each
    for i, omega in enumerate(omegas):
        for f in range(3):
            ref = reduced_normal_equations(X[fold == f], y[fold == f], C, omega,
                                           offset=offset, scale=scale)
            got = fold_pieces(ds, i, f)
            for k in PIECES:
                _close(got[k], ref[k].values)
    whole = fold_pieces(ds, 1, [0, 1, 2])
    ref = reduced_normal_equations(X, y, C, 1.0, offset=offset, scale=scale)
    for k in PIECES:
        _close(whole[k], ref[k].values, rtol=1e-11)


def test_one_fold_is_the_plain_pass():
    X, y, C, offset, scale = _data(900)
    ds = reduced_normal_equations_folds(X, y, C, [0.8], n_folds=1, offset=offset, scale=scale)
    ref = reduced_normal_equations(X, y, C, 0.8, offset=offset, scale=scale)
    assert ds["GtG"].dims == ("omega", "fold", "basis", "basis_")
    for k in PIECES:
        _close(ds[k].values[0, 0] if ds[k].ndim > 1 else ds[k].values[0], ref[k].values)


def test_independent_of_chunking_and_workers(client):
    X, y, C, offset, scale = _data()
    runs = []
    for rows in (2400, 700, 333):
        Xd = da.from_array(X, chunks=(rows, -1))
        yd = da.from_array(y, chunks=rows)
        runs.append(reduced_normal_equations_folds(Xd, yd, C, (0.5, 2.0), seed=3,
                                                   offset=offset, scale=scale, split_every=2))
    for other in runs[1:]:
        for k in PIECES:
            _close(other[k].values, runs[0][k].values)
        np.testing.assert_array_equal(other["n"].values, runs[0]["n"].values)


def test_float32_data_close_to_float64():
    X, y, C, offset, scale = _data(1500)
    d64 = reduced_normal_equations_folds(X, y, C, (0.7, 2.0), offset=offset, scale=scale)
    d32 = reduced_normal_equations_folds(X.astype(np.float32), y.astype(np.float32), C,
                                         (0.7, 2.0), offset=offset, scale=scale)
    assert d32["GtG"].dtype == np.float64
    for k in ("GtG", "Gty", "Gsum"):
        _close(d32[k].values, d64[k].values, rtol=2e-5)


def test_nonfinite_rows_are_left_out_and_counted():
    X, y, C, offset, scale = _data(1000)
    X[[5, 400]] = np.nan
    X[7, 1] = np.inf
    y[12] = np.nan
    ds = reduced_normal_equations_folds(da.from_array(X, chunks=(300, -1)), y, C, (1.0,),
                                        offset=offset, scale=scale)
    assert ds.attrs["n_absent"] == 2 and ds.attrs["n_nonfinite"] == 1
    assert ds.attrs["n_nonfinite_y"] == 1 and ds.attrs["first_nonfinite_y"] == 12
    assert int(ds["n"].sum()) == 996 == ds.attrs["n_valid"]
    keep = np.isfinite(X).all(1) & np.isfinite(y)
    fold = fold_of_rows(np.arange(1000), 2, 0)
    ref = reduced_normal_equations(X[keep & (fold == 1)], y[keep & (fold == 1)], C, 1.0,
                                   offset=offset, scale=scale)
    _close(fold_pieces(ds, 0, 1)["GtG"], ref["GtG"].values)
    X[:300, 0] = np.nan  # 30% of rows present but unusable, over the default 25%
    with pytest.raises(DataQualityError, match="max_nonfinite_fraction"):
        reduced_normal_equations_folds(X, y, C, (1.0,), offset=offset, scale=scale)


def test_bad_arguments_name_the_problem():
    X, y, C, _, _ = _data(200)
    for omegas in ((), (0.0, 1.0), (np.nan,), (-1.0,)):
        with pytest.raises(ValueError, match="omegas"):
            reduced_normal_equations_folds(X, y, C, omegas)
    for n_folds in (0, True, 1.5):
        with pytest.raises(ValueError, match="n_folds"):
            reduced_normal_equations_folds(X, y, C, (1.0,), n_folds=n_folds)
    with pytest.raises(ValueError, match="centers have 2 columns"):
        reduced_normal_equations_folds(X, y, C[:, :2], (1.0,))
    with pytest.raises(ValueError, match="y must be 1-D"):
        reduced_normal_equations_folds(X, y[:-1], C, (1.0,))
    with pytest.raises(ValueError, match="scale must be positive"):
        reduced_normal_equations_folds(X, y, C, (1.0,), scale=np.zeros(3))


def _task_names(stream) -> Counter:
    return Counter(t["key"][0] if isinstance(t["key"], tuple) else t["key"] for t in stream.data)


def test_reduced_oht_cross_validation_reads_the_data_twice(client):
    """The center sample is one read; every width and both folds come from the second."""
    X, y, _, _, _ = _data(4000)
    Xd = da.from_array(X, chunks=(1000, -1), name="oht-source-X")
    yd = da.from_array(y, chunks=1000, name="oht-source-y")
    with get_task_stream(client) as ts:
        est = OHTRegressor(method="ED2", omega=(0.5, 1.0, 2.0, 4.0), size=50,
                           random_state=0).fit(Xd, yd)
    names = _task_names(ts)
    assert names["oht-source-X"] == 2 * Xd.npartitions
    assert names["oht-source-y"] == 2 * Xd.npartitions
    assert np.isfinite(est.cv_scores_).all() and est.omega_ in (0.5, 1.0, 2.0, 4.0)
