"""nystrom_spectrum / plot_nystrom_spectrum: Lee & Huang's spectral comparison (Section 4)."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest
import xarray as xr

from bigkern import nystrom_spectrum, plot_nystrom_spectrum
from bigkern.errors import DataQualityError


@pytest.fixture(autouse=True)
def _one_blas_thread():
    """Dense eigh of n ≤ 800 takes 0.1 s on one thread, but can take 50× longer when
    OpenBLAS spins two threads on cores that other processes are busy with."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        yield


def _data(n: int = 80, d: int = 4, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, d))


def _kernel(A: np.ndarray, B: np.ndarray, omega: float) -> np.ndarray:
    """An independent Gaussian kernel: explicit differences, no matrix-product trick."""
    d2 = ((A[:, None, :] - B[None, :, :]) ** 2).sum(axis=-1)
    return np.exp(-d2 / (2 * omega**2))


def test_all_rows_as_reduced_set_reproduce_the_full_kernel():
    X = _data(40, 3)
    for reduced in (40, X):  # every row drawn, or every row given as centers
        s = nystrom_spectrum(X, reduced, omega=1.0, random_state=0)
        lam, lam_t = s["eigenvalue_full"].values, s["eigenvalue_nystrom"].values
        np.testing.assert_allclose(lam_t, lam, rtol=0, atol=1e-8 * lam[0])
        assert abs(s.attrs["relative_trace_difference"]) < 1e-10
        assert s.attrs["max_eigenvalue_difference"] < 1e-8 * lam[0]
        # the eigenvectors of the well-separated leading eigenvalues coincide
        assert np.all(s["eigenvector_discrepancy"].values < 1e-6)
        np.testing.assert_allclose(s["cos_angle"].values[:5], 1.0, atol=1e-10)
        assert s.attrs["n_rows"] == s.attrs["n_reduced"] == 40


def test_nystrom_is_a_lower_bound_of_the_full_kernel():
    X = _data(80, 4)
    omega = 1.5
    s = nystrom_spectrum(X, 10, omega=omega, random_state=3)
    lam, lam_t = s["eigenvalue_full"].values, s["eigenvalue_nystrom"].values
    tol = 1e-10 * lam[0]
    assert np.all(np.diff(lam) <= tol) and np.all(np.diff(lam_t) <= tol)  # descending
    assert np.all(lam_t <= lam + tol)  # K̃ ≼ K gives λ̃_k ≤ λ_k for every k
    assert s.attrs["relative_trace_difference"] > 0
    assert s.attrs["trace_full"] == pytest.approx(80.0)
    assert lam.sum() == pytest.approx(s.attrs["trace_full"], rel=1e-10)
    assert lam_t.sum() == pytest.approx(s.attrs["trace_nystrom"], rel=1e-10)
    # K̃ has rank ≤ m̃: the rest of its spectrum is round-off
    assert np.all(np.abs(lam_t[10:]) < tol)
    # the four per-k variables agree with each other
    np.testing.assert_allclose(s["eigenvalue_difference"].values, lam - lam_t)
    cos = s["cos_angle"].values
    assert np.all((cos >= 0) & (cos <= 1))
    np.testing.assert_allclose(s["eigenvector_discrepancy"].values,
                               np.sqrt(2 * np.clip(lam, 0, None) * (1 - cos)), atol=1e-6)
    # and K − K̃ is PSD for the same reduced set, built by hand
    idx = s["reduced_index"].values
    Knm = _kernel(X, X[idx], omega)
    Kt = Knm @ np.linalg.pinv(_kernel(X[idx], X[idx], omega), hermitian=True) @ Knm.T
    assert np.linalg.eigvalsh(_kernel(X, X, omega) - (Kt + Kt.T) / 2).min() > -1e-8


def test_against_a_direct_computation_on_a_tiny_case():
    rng = np.random.default_rng(7)
    X = rng.uniform(-2, 2, size=(12, 2))
    omega = 0.8
    centers = np.array([[-1.5, -1.5], [1.5, -1.5], [-1.5, 1.5], [1.5, 1.5]])
    Kmm = _kernel(centers, centers, omega)
    assert np.linalg.cond(Kmm) < 10  # well conditioned: a plain inverse is exact enough
    Knm = _kernel(X, centers, omega)
    Kt = Knm @ np.linalg.inv(Kmm) @ Knm.T
    K = _kernel(X, X, omega)
    s = nystrom_spectrum(X, centers, omega=omega)
    np.testing.assert_allclose(s["eigenvalue_full"].values, np.linalg.eigvalsh(K)[::-1],
                               atol=1e-12)
    np.testing.assert_allclose(s["eigenvalue_nystrom"].values,
                               np.linalg.eigvalsh((Kt + Kt.T) / 2)[::-1], atol=1e-12)
    assert s.attrs["relative_trace_difference"] == pytest.approx(
        np.trace(K - Kt) / np.trace(K), rel=1e-12)
    assert s.attrs["rank_cut"] == 0 and s.attrs["n_reduced"] == 4
    assert "reduced_index" not in s  # centers given: their row numbers are unknown
    np.testing.assert_array_equal(s["centers"].values, centers)


def test_standardize_is_the_same_as_standardized_input():
    """The models' scaling: robust, from the usable rows, clipped to ±5 robust σ."""
    from bigkern.features.scaling import robust_standardizer

    X = _data(50, 3) * [1.0, 10.0, 100.0] + [0.0, 5.0, -3.0]
    X[7, 1] = 1e4  # clipped
    offset, scale = robust_standardizer(X)
    Z = np.clip((X - offset) / scale, -5, 5)
    a = nystrom_spectrum(X, 8, omega=2.0, standardize=True, random_state=1)
    b = nystrom_spectrum(Z, 8, omega=2.0, random_state=1)
    np.testing.assert_allclose(a["eigenvalue_nystrom"].values, b["eigenvalue_nystrom"].values,
                               atol=1e-10)
    np.testing.assert_array_equal(a["reduced_index"].values, b["reduced_index"].values)
    np.testing.assert_array_equal(a["centers"].values, X[a["reduced_index"].values])


def test_a_reduced_set_from_select_reduced_set():
    from bigkern.reduce import select_reduced_set

    X = _data(60, 3)
    rs = select_reduced_set(X, size=9, stratified=False, random_state=4)
    s = nystrom_spectrum(X, rs, omega=1.0)
    np.testing.assert_array_equal(s["reduced_index"].values, rs.index)
    by_centers = nystrom_spectrum(X, X[rs.index], omega=1.0)
    xr.testing.assert_allclose(s.drop_vars("reduced_index"), by_centers)


def test_same_seed_same_result_and_any_input_type():
    X = _data(70, 3)
    a = nystrom_spectrum(X, 12, omega=1.0, random_state=5)
    xr.testing.assert_identical(a, nystrom_spectrum(X, 12, omega=1.0, random_state=5))
    other = nystrom_spectrum(X, 12, omega=1.0, random_state=6)
    assert not np.array_equal(a["reduced_index"].values, other["reduced_index"].values)
    chunked = da.from_array(X, chunks=(17, 3))
    xr.testing.assert_identical(a, nystrom_spectrum(chunked, 12, omega=1.0, random_state=5))
    arr = xr.DataArray(chunked.T, dims=("feature", "sample"),
                       coords={"feature": ["a", "b", "c"]})
    named = nystrom_spectrum(arr, 12, omega=1.0, random_state=5)
    assert list(named["feature"].values) == ["a", "b", "c"]
    xr.testing.assert_identical(a.drop_vars("feature"), named.drop_vars("feature"))


def test_nonfinite_rows_are_counted_and_left_out():
    X = _data(50, 3)
    X[[4, 20], 1] = np.nan
    X[30] = np.inf  # no finite feature at all
    s = nystrom_spectrum(X, 6, omega=1.0, random_state=0)
    assert s.attrs["n_nonfinite"] == 2 and s.attrs["n_absent"] == 1
    assert s.attrs["n_rows"] == 47 and s.sizes["k"] == 47
    assert not {4, 20, 30} & set(s["row_index"].values)
    assert not {4, 20, 30} & set(s["reduced_index"].values)
    clean = nystrom_spectrum(np.delete(X, [4, 20, 30], axis=0), s["centers"].values, omega=1.0)
    np.testing.assert_allclose(s["eigenvalue_nystrom"].values,
                               clean["eigenvalue_nystrom"].values, atol=1e-12)
    with pytest.raises(DataQualityError, match="no usable rows"):
        nystrom_spectrum(np.full((5, 2), np.nan), 2)
    X[:20, 0] = np.nan
    with pytest.raises(DataQualityError, match="max_nonfinite_fraction"):
        nystrom_spectrum(X, 5)


def test_bad_input_is_refused_clearly():
    X = _data(30, 2)
    with pytest.raises(ValueError, match=r"at least 2 .*m̃ = 1.*30 usable"):
        nystrom_spectrum(X, 1)
    with pytest.raises(ValueError, match=r"m̃ = 31.*30 usable"):
        nystrom_spectrum(X, 31)
    for omega in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="omega"):
            nystrom_spectrum(X, 5, omega=omega)
    with pytest.raises(ValueError, match=r"30 rows, more than max_rows=20.*O\(n³\)"):
        nystrom_spectrum(X, 5, max_rows=20)
    # a dask array is refused on its shape, before anything is computed
    with pytest.raises(ValueError, match=r"6000 rows, more than max_rows=5000.*row sample"):
        nystrom_spectrum(da.zeros((6000, 2), chunks=(1000, 2)), 5)
    with pytest.raises(ValueError, match="1-D integer array"):
        nystrom_spectrum(X, np.array([0, 3, 5]))
    with pytest.raises(ValueError, match="columns of X"):
        nystrom_spectrum(X, np.zeros((4, 3)))
    with pytest.raises(ValueError, match="non-finite"):
        nystrom_spectrum(X, np.array([[0.0, 1.0], [np.nan, 0.0]]))


def test_identical_centers_are_cut_from_the_pseudo_inverse():
    X = _data(30, 2)
    centers = np.vstack([X[:5], X[:2]])  # K(Ã, Ã) exactly singular
    s = nystrom_spectrum(X, centers, omega=1.0)
    assert s.attrs["rank_cut"] == 2
    distinct = nystrom_spectrum(X, X[:5], omega=1.0)
    np.testing.assert_allclose(s["eigenvalue_nystrom"].values,
                               distinct["eigenvalue_nystrom"].values, atol=1e-9)


def test_plot_writes_a_png(tmp_path):
    from matplotlib.figure import Figure

    s = nystrom_spectrum(_data(40, 3), 8, omega=1.0, random_state=0)
    fig = plot_nystrom_spectrum(s)
    assert isinstance(fig, Figure) and len(fig.axes) == 4
    out = plot_nystrom_spectrum(s, tmp_path / "spectrum.png", title="test")
    assert out == tmp_path / "spectrum.png"
    data = out.read_bytes()
    assert data.startswith(b"\x89PNG") and len(data) > 1000
    # every row as the reduced set: panel (c) has nothing to show and says so
    full = nystrom_spectrum(_data(10, 2), 10, omega=1.0, random_state=0)
    assert plot_nystrom_spectrum(full, str(tmp_path / "full.png")) == tmp_path / "full.png"


def test_plot_writes_to_an_fsspec_url():
    fsspec = pytest.importorskip("fsspec")
    s = nystrom_spectrum(_data(30, 2), 5, omega=1.0, random_state=0)
    url = "memory://bigkern-tests/nystrom/spectrum.png"
    assert plot_nystrom_spectrum(s, url) == url
    fs = fsspec.filesystem("memory")
    try:
        assert fs.cat(url).startswith(b"\x89PNG")
    finally:
        fs.rm("/bigkern-tests", recursive=True)


# (data set, reduced-set size of Lee & Huang's Table 2, ω on standardized columns). The
# paper's ω is not given; these make the largest eigenvalue close to theirs (162.6, 606.5).
REAL = [("ionosphere.data", 36, 5.2), ("pima-indians-diabetes.data.csv", 39, 5.5)]


@pytest.mark.realdata
@pytest.mark.parametrize(("name", "size", "omega"), REAL)
def test_table_2_on_real_data(name, size, omega):
    from sklearn.preprocessing import StandardScaler

    from bigkern.datasets import shared_data_dir

    root = shared_data_dir()
    path = None if root is None else root / "classification" / name
    if path is None or not path.exists():
        pytest.skip(f"../shared/data/classification/{name} is not present: real-data tests "
                    f"need it")
    if name.startswith("ionosphere"):
        raw = np.loadtxt(path, delimiter=",", skiprows=1, dtype=str)
        X = raw[:, :-1].astype(float)
    else:
        X = np.loadtxt(path, delimiter=",")[:, :-1]
    X = StandardScaler().fit_transform(X[:, X.std(axis=0) > 0])
    s = nystrom_spectrum(X, size, omega=omega, random_state=0)
    a = s.attrs
    print(f"\n{name} ({a['n_rows']}, {a['n_reduced']}), omega={omega}: largest eigenvalue "
          f"{a['largest_eigenvalue_full']:.3f} (full) vs {a['largest_eigenvalue_nystrom']:.3f} "
          f"(Nystrom), max diff {a['max_eigenvalue_difference']:.4f}, rel trace diff "
          f"{a['relative_trace_difference']:.4f}")
    assert a["largest_eigenvalue_nystrom"] == pytest.approx(a["largest_eigenvalue_full"],
                                                            rel=0.01)
    assert 0 < a["relative_trace_difference"] < 1
