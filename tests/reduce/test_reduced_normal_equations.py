"""Reduced-kernel normal equations: pieces against dense numpy products, counts, errors, reads."""

from __future__ import annotations

from collections import Counter

import dask
import dask.array as da
import numpy as np
import pytest
import xarray as xr
from hypothesis import given
from hypothesis import strategies as st
from scipy.spatial.distance import cdist

import bigkern
from bigkern.errors import DataQualityError
from bigkern.reduce.reduced.normal_equations import reduced_normal_equations, reduced_residual_sums


def dense_G(X, centers, omega, offset=None, scale=None):
    """The n × m Gaussian kernel matrix by scipy's pairwise distances (independent reference)."""
    Z = np.asarray(X, dtype=np.float64)
    if offset is not None:
        Z = (Z - offset) / scale
    return np.exp(-cdist(Z, np.asarray(centers, dtype=np.float64), "sqeuclidean")
                  / (2.0 * omega**2))


def assert_pieces(ds, G, y, rtol=1e-10):
    """GtG, Gsum (sums of positive terms: entry-wise relative) and Gty, yty, ysum, n."""
    np.testing.assert_allclose(ds["GtG"].values, G.T @ G, rtol=rtol, atol=0)
    np.testing.assert_allclose(ds["Gsum"].values, G.sum(axis=0), rtol=rtol, atol=0)
    # Gty may cancel: relative to the sum of magnitudes
    np.testing.assert_allclose(ds["Gty"].values, G.T @ y, rtol=0,
                               atol=rtol * float(np.max(G.T @ np.abs(y))))
    np.testing.assert_allclose(float(ds["yty"]), y @ y, rtol=rtol)
    np.testing.assert_allclose(float(ds["ysum"]), y.sum(), rtol=0,
                               atol=rtol * float(np.abs(y).sum()))
    assert int(ds["n"]) == len(y)
    for name in ("GtG", "Gty", "Gsum", "yty", "ysum"):
        assert ds[name].dtype == np.float64


def problem(seed, n=400, d=3, m=25):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * rng.uniform(0.5, 3, d) + rng.normal(size=d)
    y = np.sin(X[:, 0]) + 0.3 * X[:, -1] + 0.1 * rng.normal(size=n)
    offset, scale = X.mean(axis=0), X.std(axis=0)
    centers = (X[rng.choice(n, m, replace=False)] - offset) / scale
    return X, y, centers, offset, scale


@pytest.fixture(autouse=True)
def quiet():
    with bigkern.config.set(progress=False):
        yield


@pytest.mark.parametrize("kind, chunks, block_rows", [
    ("numpy", None, 4096),
    ("numpy", None, 7),
    ("dask", 400, 64),
    ("dask", 61, 4096),
    ("dask", 61, 16),
    ("dask", (1, 150, 49, 200), 33),
])
def test_pieces_equal_dense_products(kind, chunks, block_rows):
    X, y, C, offset, scale = problem(1)
    if kind == "dask":
        X, y = da.from_array(X, chunks=(chunks, -1)), da.from_array(y, chunks=(chunks,))
    with dask.config.set(scheduler="sync"), bigkern.config.set(kernel_block_rows=block_rows):
        ds = reduced_normal_equations(X, y, C, 0.7, offset=offset, scale=scale, split_every=2)
    Xm, ym = np.asarray(X), np.asarray(y)
    assert_pieces(ds, dense_G(Xm, C, 0.7, offset, scale), ym)
    assert ds["GtG"].dims == ("basis", "basis_")
    np.testing.assert_array_equal(ds["GtG"].values, ds["GtG"].values.T)
    np.testing.assert_array_equal(ds["centers"].values, C)
    assert ds.attrs["n_rows"] == ds.attrs["n_valid"] == 400
    assert ds.attrs["omega"] == 0.7


@pytest.mark.determinism
@given(seed=st.integers(0, 2**31), n=st.integers(1, 250), d=st.integers(1, 4),
       m=st.integers(1, 20), n_chunks=st.integers(1, 12), block_rows=st.integers(1, 80),
       split_every=st.integers(2, 5), omega=st.floats(0.2, 4.0), lazy=st.booleans())
def test_pieces_any_chunking(seed, n, d, m, n_chunks, block_rows, split_every, omega, lazy):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = rng.normal(size=n)
    C = rng.normal(size=(m, d))
    if lazy:
        step = max(1, -(-n // n_chunks))
        X, y = da.from_array(X, chunks=(step, -1)), da.from_array(y, chunks=(step,))
    with dask.config.set(scheduler="sync"), bigkern.config.set(kernel_block_rows=block_rows):
        ds = reduced_normal_equations(X, y, C, omega, split_every=split_every)
    assert_pieces(ds, dense_G(np.asarray(X), C, omega), np.asarray(y))


def test_on_local_cluster_with_dataarray(client):
    X, y, C, offset, scale = problem(2, n=3000, d=4, m=60)
    Xa = xr.DataArray(da.from_array(X, chunks=(700, -1)), dims=("sample", "feature"),
                      coords={"feature": ["a", "b", "c", "d"]})
    ds = reduced_normal_equations(Xa, da.from_array(y, chunks=700), C, 1.3, offset=offset,
                                  scale=scale)
    assert_pieces(ds, dense_G(X, C, 1.3, offset, scale), y)
    assert list(ds["feature"].values) == ["a", "b", "c", "d"]
    coef = np.random.default_rng(0).normal(size=60)
    res = reduced_residual_sums(Xa, y, C, 1.3, coef, 0.25, offset=offset, scale=scale)
    r = y - dense_G(X, C, 1.3, offset, scale) @ coef - 0.25
    np.testing.assert_allclose(float(res["rss"]), r @ r, rtol=1e-10)
    np.testing.assert_allclose(float(res["residual_sum"]), r.sum(), rtol=0,
                               atol=1e-10 * np.abs(r).sum())
    assert int(res["n"]) == 3000


def test_float32_data_are_accumulated_in_float64():
    X, y, C, _, _ = problem(3, n=2000)
    X32, y32 = X.astype(np.float32), y.astype(np.float32)
    with dask.config.set(scheduler="sync"):
        ds = reduced_normal_equations(da.from_array(X32, chunks=(500, -1)), y32, C, 1.0)
    G = dense_G(X32, C, 1.0)
    # float32 exponentials: each entry of G is good to a few float32 ulps; the sums of
    # 2000 products are not float32-rounded (they would be off by ~1e-5 relative)
    assert_pieces(ds, G, y32.astype(np.float64), rtol=2e-6)
    n_exact = float(ds["Gsum"].values.sum())
    assert ds["GtG"].dtype == np.float64 and n_exact > 0


def test_nonfinite_rows_are_left_out_and_counted():
    X, y, C, offset, scale = problem(4, n=500)
    X[[3, 250, 251], 1] = np.nan  # some feature non-finite
    X[17, 0] = np.inf
    X[[40, 41], :] = np.nan  # absent: no finite feature
    y[[5, 499]] = np.nan  # non-finite target
    y[260] = -np.inf
    ok = np.isfinite(X).all(axis=1) & np.isfinite(y)
    with dask.config.set(scheduler="sync"):
        ds = reduced_normal_equations(da.from_array(X, chunks=(120, -1)),
                                      da.from_array(y, chunks=120), C, 0.9,
                                      offset=offset, scale=scale)
    assert_pieces(ds, dense_G(X[ok], C, 0.9, offset, scale), y[ok])
    a = ds.attrs
    assert (a["n_rows"], a["n_valid"], a["n_absent"], a["n_nonfinite"], a["n_nonfinite_y"]) \
        == (500, 491, 2, 4, 3)
    assert (a["first_nonfinite"], a["first_nonfinite_y"]) == (3, 5)
    coef = np.ones(len(C))
    res = reduced_residual_sums(X, y, C, 0.9, coef, offset=offset, scale=scale)
    r = y[ok] - dense_G(X[ok], C, 0.9, offset, scale) @ coef
    np.testing.assert_allclose(float(res["rss"]), r @ r, rtol=1e-10)
    assert int(res["n"]) == 491 and res.attrs["n_nonfinite_y"] == 3


def test_too_many_nonfinite_rows_raise():
    X, y, C, _, _ = problem(5, n=200)
    y[100:180] = np.nan  # 80 of 200 present rows: 40 %
    with (bigkern.config.set(max_nonfinite_fraction=0.25),
          pytest.raises(DataQualityError, match=r"80 of 200.*non-finite y \(first: row 100\)")):
        reduced_normal_equations(X, y, C, 1.0)
    with bigkern.config.set(max_nonfinite_fraction=0.5):
        assert int(reduced_normal_equations(X, y, C, 1.0)["n"]) == 120
    X[:] = np.nan
    with pytest.raises(DataQualityError, match="no usable rows"):
        reduced_normal_equations(X, y, C, 1.0)


@pytest.mark.parametrize("change, message", [
    (lambda a: {**a, "y": a["y"][:-1]}, r"y must be 1-D with one entry per row of X \(50\)"),
    (lambda a: {**a, "y": a["y"][:, None]}, "y must be 1-D"),
    (lambda a: {**a, "X": a["X"][:, 0]}, "X must be 2-D"),
    (lambda a: {**a, "centers": a["centers"][:, :2]}, "centers have 2 columns but X has 3"),
    (lambda a: {**a, "centers": a["centers"][0]}, "centers must be a non-empty 2-D array"),
    (lambda a: {**a, "centers": np.zeros((0, 3))}, "centers must be a non-empty 2-D array"),
    (lambda a: {**a, "centers": np.where(np.arange(5)[:, None] == 3, np.nan, a["centers"])},
     r"non-finite value \(first: center 3\)"),
    (lambda a: {**a, "omega": 0.0}, "omega must be positive"),
    (lambda a: {**a, "omega": -1.0}, "omega must be positive"),
    (lambda a: {**a, "omega": np.nan}, "omega must be a positive finite"),
    (lambda a: {**a, "omega": np.inf}, "omega must be a positive finite"),
    (lambda a: {**a, "offset": np.zeros(2)}, r"offset must have one entry per feature \(3\)"),
    (lambda a: {**a, "scale": np.array([1.0, 0.0, 1.0])}, "scale must be positive"),
    (lambda a: {**a, "y": None}, "y is required"),
])
def test_bad_input_raises_clear_errors(change, message):
    rng = np.random.default_rng(6)
    args = {"X": rng.normal(size=(50, 3)), "y": rng.normal(size=50),
            "centers": rng.normal(size=(5, 3)), "omega": 1.0, "offset": None, "scale": None}
    a = change(args)
    with pytest.raises(ValueError, match=message):
        reduced_normal_equations(a["X"], a["y"], a["centers"], a["omega"], offset=a["offset"],
                                 scale=a["scale"])


def test_residual_sums_reject_bad_coef():
    rng = np.random.default_rng(7)
    X, y, C = rng.normal(size=(20, 2)), rng.normal(size=20), rng.normal(size=(4, 2))
    with pytest.raises(ValueError, match=r"coef must have one entry per center \(4\)"):
        reduced_residual_sums(X, y, C, 1.0, np.ones(3))
    with pytest.raises(ValueError, match="must be finite"):
        reduced_residual_sums(X, y, C, 1.0, np.ones(4), np.nan)


def counted_source(data, bounds):
    """A dask array whose chunks come from a loader that counts its calls (real dask tasks)."""
    calls = Counter()

    def load(i):
        calls[i] += 1
        return data[bounds[i]:bounds[i + 1]]

    blocks = [da.from_delayed(dask.delayed(load, pure=True)(i),
                              shape=(bounds[i + 1] - bounds[i], data.shape[1]), dtype=data.dtype)
              for i in range(len(bounds) - 1)]
    return da.concatenate(blocks, axis=0), calls


def test_each_pass_reads_the_data_once():
    X, y, C, offset, scale = problem(8, n=1000)
    bounds = [0, 130, 400, 401, 777, 1000]
    source, calls = counted_source(np.column_stack([X, y]), bounds)
    Xd, yd = source[:, :3], source[:, 3]
    with dask.config.set(scheduler="threads"):
        ds = reduced_normal_equations(Xd, yd, C, 0.8, offset=offset, scale=scale,
                                      split_every=2)
        assert dict(calls) == dict.fromkeys(range(len(bounds) - 1), 1)
        calls.clear()
        reduced_residual_sums(Xd, yd, C, 0.8, np.ones(len(C)), offset=offset, scale=scale)
        assert dict(calls) == dict.fromkeys(range(len(bounds) - 1), 1)
    assert_pieces(ds, dense_G(X, C, 0.8, offset, scale), y)


def svd_ohted(G, y, eta=1e-10):
    """OHTED on an in-memory basis from the SVD of G (no normal equations), y centred.

    ``G = U S Vᵀ``: the orthogonal components are ``a_j = s_j u_j``, ``γ_j = s_j²``,
    ``v̂_j = u_jᵀ(y − ȳ) / s_j``; σ̂² by Hagiwara's (21) with the projection on the
    stable set; thresholds ``σ̂² 2 log n / γ_j``; ``w̄ = V v̄``.
    """
    n = len(y)
    yc = y - y.mean()
    U, s, Vt = np.linalg.svd(G, full_matrices=False)
    stable = s * s > eta
    U, s, Vt = U[:, stable], s[stable], Vt[stable]
    proj = U.T @ yc
    sigma2 = (yc @ yc - proj @ proj) / (n - len(s))
    v = proj / s
    keep = v * v > sigma2 * 2 * np.log(n) / (s * s)
    return {"weights": Vt[keep].T @ v[keep], "ls_weights": Vt.T @ v, "intercept": y.mean(),
            "sigma2": sigma2, "kept": np.flatnonzero(keep), "n_stable": len(s)}


def test_ohted_from_pieces_matches_in_memory_ohted():
    oht = pytest.importorskip("bigkern.solvers.oht", reason="the OHT solver has not landed")
    rng = np.random.default_rng(9)
    n, m, omega = 10_000, 150, 0.6
    X = rng.uniform(-2, 2, size=(n, 3)) * [1.0, 3.0, 0.5] + [0.0, 5.0, -1.0]
    y = np.sin(2 * X[:, 0]) * np.cos(X[:, 1] / 3) + 0.8 * X[:, 2] ** 2 + 0.1 * rng.normal(size=n)
    offset, scale = X.mean(axis=0), X.std(axis=0)
    C = (X[rng.choice(n, m, replace=False)] - offset) / scale
    Xd, yd = da.from_array(X, chunks=(1800, -1)), da.from_array(y, chunks=1800)
    with dask.config.set(scheduler="threads"):
        ds = reduced_normal_equations(Xd, yd, C, omega, offset=offset, scale=scale)
    sol = oht.oht_from_normal_equations(ds["GtG"].values, ds["Gty"].values, float(ds["yty"]),
                                        int(ds["n"]), method="ED", Gsum=ds["Gsum"].values,
                                        ysum=float(ds["ysum"]))
    G = dense_G(X, C, omega, offset, scale)
    ref = svd_ohted(G, y)
    assert sol.n_stable == ref["n_stable"] and 0 < len(ref["kept"]) < ref["n_stable"]
    assert sorted(sol.kept) == list(ref["kept"])
    np.testing.assert_allclose(sol.weights, ref["weights"], rtol=0,
                               atol=1e-8 * np.abs(ref["weights"]).max())
    np.testing.assert_allclose(sol.intercept, ref["intercept"], rtol=1e-12)
    np.testing.assert_allclose(sol.sigma2, ref["sigma2"], rtol=1e-8)
    fitted = G @ sol.weights + sol.intercept
    np.testing.assert_allclose(fitted, G @ ref["weights"] + ref["intercept"], rtol=0,
                               atol=1e-8 * np.abs(fitted).max())
    # the in-memory OHTED of the solver module agrees too
    mem = oht.oht_fit(G, y, method="ED")
    np.testing.assert_allclose(sol.weights, mem.weights, rtol=0,
                               atol=1e-8 * np.abs(mem.weights).max())
    # σ̂² checked on the data: the second pass gives (n - l) σ̂² for the least-squares fit
    with dask.config.set(scheduler="threads"):
        res = reduced_residual_sums(Xd, yd, C, omega, ref["ls_weights"], ref["intercept"],
                                    offset=offset, scale=scale)
    np.testing.assert_allclose(float(res["rss"]) / (n - sol.n_stable), sol.sigma2, rtol=1e-8)
