"""Spectra of the full Gaussian kernel and of its Nyström approximation (Lee & Huang, §4).

Lee & Huang explain why a reduced SVM on a uniform random subset Ã of the rows
loses little: the Nyström approximation

    K̃ = K(A, Ã) K(Ã, Ã)⁻¹ K(Ã, A)

built on that subset has nearly the spectrum of the full kernel K = K(A, A).
:func:`nystrom_spectrum` computes both spectra for a data set small enough for
a dense n×n eigendecomposition (their Table 2: largest eigenvalues, the largest
eigenvalue difference and the relative trace difference), and
:func:`~bigkern.jobs.nystrom_figure.plot_nystrom_spectrum` draws the four panels of
their Figures 1–5.

This is a diagnostic, not a pass over big data: it costs O(n³) time and O(n²)
memory, so it refuses more than ``max_rows`` rows (5,000 by default, about
0.8 GB of float64 matrices). Dask input is computed whole once its row count
has been checked; no dask graph is built here.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.linalg
import xarray as xr

from bigkern import config
from bigkern.errors import DataQualityError
from bigkern.features.scaling import CLIP_SCALED, robust_standardizer, standardized
from bigkern.kernels.kernel import gaussian_kernel

__all__ = ["nystrom_spectrum"]


def nystrom_spectrum(
    X: Any,
    reduced_set: Any,
    *,
    omega: float = 1.0,
    standardize: bool = False,
    random_state: Any = None,
    max_rows: int = 5000,
    rtol: float | None = None,
) -> xr.Dataset:
    """Eigenvalues and eigenvectors of the full Gaussian kernel and of its Nyström approximation.

    The full kernel is ``K = K(A, A)``, ``K_ij = exp(-‖x_i − x_j‖² / (2 ω²))``
    over the usable rows A of ``X``; its Nyström approximation on the reduced
    set Ã is ``K̃ = K(A, Ã) K(Ã, Ã)⁺ K(Ã, A)`` (Lee & Huang, eq. 15). Both are
    eigendecomposed in full with :func:`scipy.linalg.eigh`.

    Parameters
    ----------
    X : array-like, dask array or DataArray, shape (n, d)
        The rows A (a DataArray with dims ``sample`` and ``feature`` is
        transposed to ``(sample, feature)``). A dask array is computed after its
        row count has been checked against ``max_rows`` (when its chunk sizes are
        unknown it has to be computed first). Rows with a non-finite feature are
        left out and counted (``n_nonfinite``; rows with no finite feature at all
        as ``n_absent``); as in every bigkern pass, over
        ``bigkern.max_nonfinite_fraction`` of the present rows is an error, and so
        is having no usable row.
    reduced_set : int, ReducedSet or array-like of shape (m̃, d)
        The reduced set Ã, as one of

        * an int m̃: that many distinct usable rows drawn uniformly at random
          with ``numpy.random.default_rng(random_state)`` (the layering keeps
          :mod:`bigkern.kernels` from importing
          :func:`bigkern.reduce.select_reduced_set`, which draws by hashing row
          numbers for chunked data; the draw here is uniform without
          replacement over the usable rows, like its unstratified draw);
        * a :class:`bigkern.reduce.reduced.reduced_set.ReducedSet` (anything with
          ``X``, the centers' raw feature values, and ``index``, their row
          numbers in ``X``), e.g. from ``select_reduced_set(X, size=m̃,
          stratified=False, random_state=…)``;
        * the centers themselves, an array of m̃ rows with the columns of ``X``
          (raw values: ``standardize`` applies to them too). They need not be
          rows of ``X``; their row numbers are then unknown.

        2 ≤ m̃ ≤ n (the usable rows) is required.
    omega : float
        Gaussian width ω > 0.
    standardize : bool
        Standardize the columns as the reduced-kernel models do, from the usable rows:
        the median and robust σ of :func:`~bigkern.features.scaling.robust_standardizer`
        (constant columns are only centered), clipped to
        ``±``:data:`~bigkern.features.scaling.CLIP_SCALED`.
    random_state : int, numpy.random.Generator, numpy.random.RandomState or None
        Seed of the draw when ``reduced_set`` is an int.
    max_rows : int
        Largest number of rows of ``X`` accepted.
    rtol : float, optional
        Relative cut of the pseudo-inverse of ``K(Ã, Ã)``: eigenvalues
        ``s_j ≤ rtol · max(s)`` are dropped (their number is ``rank_cut``).
        Default ``m̃ · eps`` (eps of float64), as :func:`scipy.linalg.pinvh`.

    Returns
    -------
    xarray.Dataset
        Over dim ``k`` (1…n, eigenvalues in descending order):

        * ``eigenvalue_full`` λ_k of K and ``eigenvalue_nystrom`` λ̃_k of K̃;
        * ``eigenvalue_difference`` λ_k − λ̃_k;
        * ``eigenvector_discrepancy`` √λ_k · ‖e_k − ẽ_k‖₂ (λ_k clipped at 0), with
          each ẽ_k's sign chosen so that e_k · ẽ_k ≥ 0;
        * ``cos_angle`` e_k · ẽ_k = cos θ_k (so the discrepancy is
          √(2 λ_k (1 − cos θ_k))).

        Over dim ``basis`` (m̃): ``centers`` (raw feature values, dims
        ``basis, feature``) and, when known, ``reduced_index`` (row numbers in
        ``X``, counting the rows left out). ``row_index`` (dim ``sample``) holds
        the row numbers of the n rows used.

        Attributes (Table 2 and the counts): ``largest_eigenvalue_full``,
        ``largest_eigenvalue_nystrom``, ``max_eigenvalue_difference``
        (``max_k |λ_k − λ̃_k|``), ``relative_trace_difference``
        (trace(K − K̃) / trace(K)), ``trace_full``, ``trace_nystrom``,
        ``n_rows`` (rows used, n), ``n_reduced`` (m̃), ``omega``,
        ``standardize`` (0/1), ``n_nonfinite``, ``n_absent``, ``rank_cut``,
        ``rtol``.

    Raises
    ------
    ValueError
        ``omega`` ≤ 0, more than ``max_rows`` rows, m̃ < 2 or m̃ > n, centers
        with the wrong number of columns or a non-finite value.
    bigkern.errors.DataQualityError
        No usable row, or too many non-finite rows.

    Notes
    -----
    K(Ã, Ã) is often numerically singular (near or identical centers, a wide ω),
    so K̃ is formed from its eigendecomposition ``U diag(s) Uᵀ`` as ``B Bᵀ`` with
    ``B = K(A, Ã) U_r diag(s_r)^{-1/2}`` over the kept eigenvalues ``s_r``. This
    makes K̃ symmetric positive semi-definite by construction, and since each
    dropped direction only removes a PSD term ``(K(A, Ã) u_j)(K(A, Ã) u_j)ᵀ / s_j``,
    the cut keeps Nyström's lower bound ``K̃ ≼ K`` (hence λ̃_k ≤ λ_k and
    trace(K − K̃) ≥ 0, up to round-off). K̃ has rank at most m̃: λ̃_k ≈ 0 for
    k > m̃, and the eigenvectors there (a basis of a null space), like those of
    repeated eigenvalues, are arbitrary, so only the discrepancies of the
    leading, well-separated eigenvalues mean much.

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern import nystrom_spectrum
    >>> X = np.random.default_rng(0).normal(size=(200, 2))
    >>> spectrum = nystrom_spectrum(X, 20, omega=1.0, random_state=0)  # 20 random centers
    >>> spectrum.sizes["k"], spectrum.attrs["n_reduced"]
    (200, 20)
    >>> round(spectrum.attrs["relative_trace_difference"], 3)
    0.069
    >>> bool((spectrum["eigenvalue_difference"] > -1e-8).all())  # λ̃_k ≤ λ_k
    True
    """
    omega = _checked_omega(omega)
    if isinstance(max_rows, bool) or not isinstance(max_rows, int | np.integer) or max_rows < 1:
        raise ValueError(f"max_rows must be a positive int; got {max_rows!r}")
    data, names = _rows(X, int(max_rows))
    d = data.shape[1]
    usable, counts = _usable_rows(data)
    row_index = np.flatnonzero(usable)
    A = data[usable]
    if standardize:
        offset, scale = robust_standardizer(A)
        clip = CLIP_SCALED
    else:
        offset, scale, clip = np.zeros(d), np.ones(d), np.inf
    A = standardized(A, offset, scale, clip)

    centers, reduced_index = _reduced(reduced_set, data, row_index, d, counts["n_rows"],
                                      random_state)
    m = centers.shape[0]
    C = standardized(centers, offset, scale, clip)
    if rtol is None:
        rtol = m * np.finfo(np.float64).eps
    if not (isinstance(rtol, int | float | np.number) and 0 <= float(rtol) < 1):
        raise ValueError(f"rtol must be a number in [0, 1); got {rtol!r}")
    K, Kt, rank_cut = _full_and_nystrom(A, C, omega, float(rtol))
    trace_full = float(np.trace(K))
    trace_nystrom = float(np.trace(Kt))
    pair = [K, Kt]
    del K, Kt  # _paired_spectra frees each n × n matrix once decomposed
    lam, lam_t, cos, discrepancy = _paired_spectra(pair)
    difference = lam - lam_t

    feature = np.asarray(names) if names is not None else np.arange(d)
    ds = xr.Dataset(
        {
            "eigenvalue_full": ("k", lam),
            "eigenvalue_nystrom": ("k", lam_t),
            "eigenvalue_difference": ("k", difference),
            "eigenvector_discrepancy": ("k", discrepancy),
            "cos_angle": ("k", cos),
            "centers": (("basis", "feature"), centers),
            "row_index": ("sample", row_index),
        },
        coords={"k": np.arange(1, counts["n_rows"] + 1), "feature": feature},
        attrs={
            "largest_eigenvalue_full": float(lam[0]),
            "largest_eigenvalue_nystrom": float(lam_t[0]),
            "max_eigenvalue_difference": float(np.abs(difference).max()),
            "relative_trace_difference": (trace_full - trace_nystrom) / trace_full,
            "trace_full": trace_full,
            "trace_nystrom": trace_nystrom,
            "n_rows": counts["n_rows"],
            "n_reduced": int(m),
            "omega": omega,
            "standardize": int(bool(standardize)),
            "n_nonfinite": counts["n_nonfinite"],
            "n_absent": counts["n_absent"],
            "rank_cut": rank_cut,
            "rtol": float(rtol),
        },
    )
    ds["eigenvalue_full"].attrs["long_name"] = "eigenvalue of the full kernel K(A, A)"
    ds["eigenvalue_nystrom"].attrs["long_name"] = "eigenvalue of the Nyström approximation"
    ds["eigenvector_discrepancy"].attrs["long_name"] = "sqrt(lambda_k) * ||e_k - e~_k||_2"
    if reduced_index is not None:
        ds["reduced_index"] = ("basis", reduced_index)
    return ds


def _usable_rows(data: np.ndarray) -> tuple[np.ndarray, dict[str, int]]:
    """The rows with every feature finite, and the counts; too many others is an error."""
    n_in = data.shape[0]
    finite = np.isfinite(data)
    usable = finite.all(axis=1)
    absent = ~finite.any(axis=1)
    n_absent = int(absent.sum())
    n_nonfinite = int((~usable & ~absent).sum())
    n = int(usable.sum())
    present = n + n_nonfinite
    limit = float(config.get("max_nonfinite_fraction"))
    if n == 0:
        raise DataQualityError(f"no usable rows in X: all {n_in} rows have a non-finite "
                               f"feature ({n_absent} have no finite feature at all)")
    if n_nonfinite / present > limit:
        raise DataQualityError(
            f"{n_nonfinite} of {present} present rows ({n_nonfinite / present:.1%}) of X have "
            f"a non-finite feature (first: row {int(np.flatnonzero(~usable & ~absent)[0])}), "
            f"over the limit bigkern.max_nonfinite_fraction={limit:g}")
    return usable, {"n_rows": n, "n_nonfinite": n_nonfinite, "n_absent": n_absent}


def _full_and_nystrom(A: np.ndarray, C: np.ndarray, omega: float,
                      rtol: float) -> tuple[np.ndarray, np.ndarray, int]:
    """``K(A, A)``, its Nyström approximation ``B Bᵀ`` from the centers ``C`` (eigenvalues of
    ``K(C, C)`` below ``rtol`` times the largest cut), and the number cut."""
    K = _symmetric_kernel(A, omega)
    Kmm = _symmetric_kernel(C, omega)
    Knm = gaussian_kernel(A, C, omega)
    s, U = scipy.linalg.eigh(Kmm, check_finite=False)
    keep = s > rtol * s.max()
    rank_cut = int(C.shape[0] - keep.sum())
    B = Knm @ (U[:, keep] / np.sqrt(s[keep]))
    Kt = B @ B.T
    Kt = 0.5 * (Kt + Kt.T)
    return K, Kt, rank_cut


def _paired_spectra(pair: list[np.ndarray]) -> tuple[np.ndarray, ...]:
    """Eigenvalues of ``K, K̃ = pair`` (largest first), the cosines of paired eigenvectors
    (signs aligned) and the discrepancies ``√λ_k ‖e_k − ẽ_k‖``.

    ``pair`` is emptied: each matrix is overwritten by its decomposition and let go, so
    at most one n × n matrix besides the eigenvectors is alive at a time.
    """
    lam, E = scipy.linalg.eigh(pair.pop(0), overwrite_a=True, check_finite=False)
    lam_t, Et = scipy.linalg.eigh(pair.pop(0), overwrite_a=True, check_finite=False)
    lam, E = lam[::-1], E[:, ::-1]
    lam_t, Et = lam_t[::-1], Et[:, ::-1]
    cos = np.einsum("ik,ik->k", E, Et)
    flip = cos < 0
    Et[:, flip] *= -1.0
    cos = np.minimum(np.abs(cos), 1.0)
    discrepancy = np.sqrt(np.clip(lam, 0.0, None)) * np.linalg.norm(E - Et, axis=0)
    return lam, lam_t, cos, discrepancy


def _checked_omega(omega: Any) -> float:
    if isinstance(omega, bool) or not isinstance(omega, int | float | np.number) \
            or not math.isfinite(float(omega)) or not float(omega) > 0:
        raise ValueError(f"the kernel width omega must be a positive finite number; "
                         f"got {omega!r}")
    return float(omega)


def _symmetric_kernel(Z: np.ndarray, omega: float) -> np.ndarray:
    """K(Z, Z), exactly symmetric with a unit diagonal."""
    K = gaussian_kernel(Z, Z, omega)
    K = 0.5 * (K + K.T)
    np.fill_diagonal(K, 1.0)
    return K


def _as_array(X: Any) -> tuple[Any, list[str] | None]:
    """The array data of ``X`` (a DataArray's transposed to (sample, feature)) and names."""
    names = None
    if isinstance(X, xr.DataArray):
        if X.ndim != 2:
            raise ValueError(f"a DataArray must be 2-D (sample, feature); got dims {X.dims}")
        if "feature" in X.dims:
            X = X.transpose(..., "feature")
            if "feature" in X.coords:
                names = [str(f) for f in X["feature"].values]
        X = X.data
    return X, names


def _computed(X: Any) -> np.ndarray:
    if hasattr(X, "compute") and hasattr(X, "dask"):
        from bigkern.cluster.compute import compute  # watched on any client

        (X,) = compute(X, label="reading the rows")
    return np.asarray(X, dtype=np.float64)


def _rows(X: Any, max_rows: int) -> tuple[np.ndarray, list[str] | None]:
    """``X`` as a float64 (n, d) array, its row count checked before any computing."""
    X, names = _as_array(X)
    shape = getattr(X, "shape", None)
    if shape is None:
        X = np.asarray(X)
        shape = X.shape
    if len(shape) != 2:
        raise ValueError(f"X must be 2-D (sample, feature); got shape {tuple(shape)}")
    n = shape[0]
    if n is not None and not (isinstance(n, float) and math.isnan(n)):
        _check_rows(int(n), max_rows)
    data = _computed(X)
    _check_rows(data.shape[0], max_rows)
    if data.shape[0] == 0 or data.shape[1] == 0:
        raise ValueError(f"X is empty: shape {data.shape}")
    return data, names


def _check_rows(n: int, max_rows: int) -> None:
    if n > max_rows:
        gb = 3 * 8 * n * n / 1e9
        raise ValueError(
            f"X has {n} rows, more than max_rows={max_rows}: the full n×n kernel's "
            f"eigendecomposition costs O(n³) time and about {gb:.1f} GB here; pass a row "
            f"sample (e.g. bigkern.sample_rows) or raise max_rows")


def _reduced(reduced_set: Any, data: np.ndarray, row_index: np.ndarray, d: int, n: int,
             random_state: Any) -> tuple[np.ndarray, np.ndarray | None]:
    """Raw centers (m̃, d) and their row numbers in ``X`` (None when unknown)."""
    if isinstance(reduced_set, bool):
        raise ValueError(f"reduced_set must be an int size, a ReducedSet or an array of "
                         f"centers; got {reduced_set!r}")
    if isinstance(reduced_set, int | np.integer):
        m = int(reduced_set)
        _check_size(m, n)
        rng = (random_state if isinstance(random_state, np.random.RandomState)
               else np.random.default_rng(random_state))
        index = row_index[np.sort(rng.choice(n, size=m, replace=False))]
        return data[index].copy(), index
    if hasattr(reduced_set, "X") and hasattr(reduced_set, "index"):  # a ReducedSet
        centers = _computed(reduced_set.X)
        index = np.asarray(reduced_set.index, dtype=np.int64)
    else:
        raw, _ = _as_array(reduced_set)
        if not hasattr(raw, "dtype"):
            raw = np.asarray(raw)
        if raw.ndim == 1 and raw.dtype.kind in "iu":
            raise ValueError("reduced_set is a 1-D integer array: pass an int size, a "
                             "ReducedSet, or the center rows themselves (e.g. X[index])")
        centers, index = _computed(raw), None
    if centers.ndim != 2 or centers.shape[1] != d:
        raise ValueError(f"the reduced set must be an (m̃, {d}) array of centers with the "
                         f"columns of X; got shape {centers.shape}")
    _check_size(centers.shape[0], n)
    bad = ~np.isfinite(centers).all(axis=1)
    if bad.any():
        raise ValueError(f"the reduced set has {int(bad.sum())} center(s) with a non-finite "
                         f"value (first: center {int(np.flatnonzero(bad)[0])})")
    return centers, index


def _check_size(m: int, n: int) -> None:
    if m < 2:
        raise ValueError(f"the reduced set needs at least 2 rows; got m̃ = {m} "
                         f"(X has {n} usable rows)")
    if m > n:
        raise ValueError(f"the reduced set has m̃ = {m} rows, more than the {n} usable "
                         f"rows of X")
