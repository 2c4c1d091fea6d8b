"""Reduced-kernel normal equations in one distributed pass.

For a reduced set of centers Ã (m̃ rows, e.g. a uniform random sample of the
data, as in Lee & Huang's reduced SVM) the rectangular kernel matrix
``G = K(A, Ã)`` has one row per sample: n × m̃, far too large to store when n
is 10^7 or more. Least-squares methods on this basis (OHTED, reduced kernel
ridge) need only::

    GᵀG (m̃ × m̃),  Gᵀy,  Gᵀ1,  yᵀy,  Σy,  n

so every row chunk of the data is turned into kernel blocks ``G_b = k(X_b, Ã)``
of ``bigkern.kernel_block_rows`` rows, each block is folded into these sums
and dropped, and the chunks' float64 partial sums are tree-reduced. The block
is appended with a column of ones and a column of ``y``, so that one BLAS
``syrk`` of ``[G_b | 1 | y_b]`` gives all six pieces at once (the same
products, rounded once, in float64).

Kernel blocks are evaluated in the data's precision (float32 data → float32
exponentials; with at most :data:`~bigkern.kernels.fused_loops.FUSED_MAX_FEATURES`
features in one compiled sweep per row, :func:`~bigkern.kernels.fused_loops.fused_kernel_block`).
They are cast to float64 before the product, so ``GᵀG`` and ``Gᵀy`` are exact
float64 sums of the products of one and the same (float32-rounded) basis matrix.
(A float32 product, twice as fast, was tried and dropped: its round-off, about
1e-7 of the block sums, is amplified by ``K(Ã, Ã)^{-1/2}`` in the Nyström
system to a few percent of its spectrum, which made it indefinite.)

:func:`reduced_residual_sums` is the second pass of a fit: the residual sum of
squares of a fitted expansion on the data, for checking a noise variance
computed from the pieces (``yᵀy − 2wᵀGᵀy + wᵀGᵀGw`` loses digits to
cancellation when the fit is good).

:func:`kernel_blocks` is the per-chunk building block, reusable by other
reductions on the same rectangular basis (e.g. the reduced SVM's gradients).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import xarray as xr

from bigkern import config
from bigkern.kernels.basis import (
    Basis,
    block_step,
    exponent_left,
    exponent_right,
    kernel_blocks,
    row_blocks,
    syrk_product,
)
from bigkern.kernels.fused_loops import FUSED_MAX_FEATURES, fused_kernel_block
from bigkern.reduce.reduced._row_pass import as_arrays, count_attrs, run_pass, usable_rows
from bigkern.reduce.sampling import uniform_from_index

__all__ = [
    "kernel_blocks",
    "one_vs_rest_targets",
    "reduced_normal_equations",
    "reduced_residual_sums",
]


def fold_of_rows(rows: np.ndarray, n_folds: int, seed: int) -> np.ndarray:
    """The fold (0 … ``n_folds − 1``) of each global row number, by a seeded hash."""
    u = uniform_from_index(np.asarray(rows, dtype=np.int64), seed)
    return np.minimum((u * n_folds).astype(np.int64), n_folds - 1)


def one_vs_rest_targets(codes: np.ndarray, n_classes: int) -> np.ndarray:
    """The ±1 one-vs-rest targets of class codes: ``Y[i, j] = +1`` where ``codes[i] == j``,
    else −1 (a row whose code is NaN is NaN in every column).

    Examples
    --------
    >>> one_vs_rest_targets(np.array([0.0, 2.0, 1.0]), 3)
    array([[ 1., -1., -1.],
           [-1., -1.,  1.],
           [-1.,  1., -1.]])
    """
    codes = np.asarray(codes, dtype=np.float64).ravel()
    Y = np.where(codes[:, None] == np.arange(n_classes), 1.0, -1.0)
    Y[np.isnan(codes)] = np.nan
    return Y


def _targets(y: np.ndarray, n_classes: int | None) -> np.ndarray:
    """``y`` itself (one target), or the one-vs-rest targets (n, k) of the codes ``y``."""
    return y if n_classes is None else one_vs_rest_targets(y, n_classes)


def _n_targets(n_classes: int | None) -> int:
    return 1 if n_classes is None else int(n_classes)


def _fold_accumulators(n: int, m: int, n_widths: int, n_folds: int, seed: int,
                       start: int, n_targets: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """The fold of each of a chunk's ``n`` rows, and zeroed ``(m+1+t, m+1+t, widths, folds)``
    sums for ``t`` target columns (Fortran-ordered slices: ``BᵀB`` by syrk, of which the
    upper triangle is read)."""
    fold = (np.zeros(n, dtype=np.int64) if n_folds == 1
            else fold_of_rows(start + np.arange(n), n_folds, seed))
    width = m + 1 + n_targets
    return fold, np.zeros((width, width, n_widths, n_folds), order="F")


def _add_rows(acc: np.ndarray, work: np.ndarray, G: np.ndarray, y: np.ndarray) -> None:
    """``acc += [G | 1 | y]ᵀ[G | 1 | y]`` (upper triangle), through the C-ordered ``work``;
    ``y`` (rows,) or (rows, t): one target or ``t`` of them, the columns after the ones."""
    k, m = G.shape
    W = work[:k]
    W[:, :m] = G
    W[:, m] = 1.0
    if y.ndim == 1:
        W[:, m + 1] = y
    else:
        W[:, m + 1:] = y
    acc += syrk_product(W)


def _normal_chunk(Xb: np.ndarray, yb: np.ndarray, mb: np.ndarray | None = None, *,
                  basis: Basis, omegas: tuple[float, ...], n_folds: int, seed: int,
                  start: int, block_rows: int | None,
                  n_classes: int | None = None) -> dict[str, Any]:
    """Upper triangles of ``[G_w | 1 | y]ᵀ[G_w | 1 | y]`` per width and fold over one chunk.

    ``acc[:, :, i, f]`` (float64, Fortran-ordered slices) sums the usable rows of fold
    ``f`` at width ``omegas[i]``; one width and one fold is the plain pass of
    :func:`reduced_normal_equations`. With ``n_classes`` = k, ``y`` holds class codes
    and ``y`` in the product is their k one-vs-rest ±1 columns
    (:func:`one_vs_rest_targets`): the kernel block and ``GᵀG`` serve all k.
    """
    X, y, valid, counts = usable_rows(Xb, yb, start, mb)
    y = _targets(y, n_classes)
    if not basis.is_gaussian:
        return _normal_chunk_rows(X, y, valid, counts, basis=basis, omegas=omegas,
                                  n_folds=n_folds, seed=seed, start=start,
                                  block_rows=block_rows)
    m = basis.n_basis
    t = _n_targets(n_classes)
    dtype = np.dtype(np.float32 if X.dtype == np.float32 else np.float64)
    # float32 kernel values of few features: one compiled sweep per row writes them
    fused = dtype == np.float32 and X.shape[1] <= FUSED_MAX_FEATURES
    n = len(X)
    fold, acc = _fold_accumulators(n, m, len(omegas), n_folds, seed, start, t)
    right = exponent_right(basis.centers, 0.5, dtype)  # γ = 1/2: the product is S
    centers_t = np.ascontiguousarray(basis.centers.T, dtype=np.float32)
    lowest = float(np.ceil(np.log(np.finfo(dtype).tiny)))
    inv_sq = [1.0 / (w * w) for w in omegas]
    step = block_step(n, block_rows)
    # syrk runs well below its peak on thin blocks: up to 64 MB of rows
    step = min(max(n, 1), max(step, min(16384, 2**26 // (8 * (m + 1 + t)))))
    S = None if fused else np.empty((step, m), dtype=dtype)
    # [G | 1 | y] of a block, C-ordered so that its transpose is the Fortran operand of syrk
    work = np.empty((step, m + 1 + t))
    G = np.empty((step, m), dtype=dtype)
    for sl in row_blocks(n, step):
        rows = sl.start + np.flatnonzero(valid[sl])
        if len(rows) == 0:
            continue
        if not fused:
            Sb = S[:len(rows)]
            np.matmul(exponent_left(X[rows], basis, 0.5, dtype), right, out=Sb)  # −‖z − c‖²/2
            np.minimum(Sb, 0, out=Sb)
        for f in range(n_folds):
            in_fold = fold[rows] == f
            k = int(in_fold.sum())
            if k == 0:
                continue
            yf = y[rows[in_fold]]
            Gf = G[:k]
            if not fused:
                Sf = Sb[in_fold] if k < len(rows) else Sb
            for i, scale in enumerate(inv_sq):
                if fused:
                    fused_kernel_block(X, rows[in_fold], centers_t, 0.5 * scale, basis.offset,
                                       basis.scale, Gf, basis.clip)
                else:
                    np.multiply(Sf, dtype.type(scale), out=Gf)
                    np.maximum(Gf, lowest, out=Gf)
                    np.exp(Gf, out=Gf)
                _add_rows(acc[:, :, i, f], work, Gf, yf)
    return {"acc": acc, "counts": counts}


def _normal_chunk_rows(X: np.ndarray, y: np.ndarray, valid: np.ndarray,
                       counts: dict[str, Any], *, basis: Basis, omegas: tuple[float, ...],
                       n_folds: int, seed: int, start: int,
                       block_rows: int | None) -> dict[str, Any]:
    """:func:`_normal_chunk` for a kernel other than the Gaussian: its blocks row by row
    (:func:`~bigkern.kernels.kernel_blocks`), one pass over the chunk per width; ``y``
    (rows,) or (rows, t) targets."""
    m = basis.n_basis
    t = 1 if y.ndim == 1 else y.shape[1]
    fold, acc = _fold_accumulators(len(X), m, len(omegas), n_folds, seed, start, t)
    step = block_step(len(X), block_rows)
    work = np.empty((step, m + 1 + t))
    for i, omega in enumerate(omegas):
        for rows, G in kernel_blocks(X, basis.with_width(omega), valid=valid, block_rows=step):
            for f in range(n_folds):
                in_fold = fold[rows] == f
                k = int(in_fold.sum())
                if k == 0:
                    continue
                _add_rows(acc[:, :, i, f], work, G[in_fold] if k < len(rows) else G,
                          y[rows[in_fold]])
    return {"acc": acc, "counts": counts}


def _residual_chunk(Xb: np.ndarray, yb: np.ndarray, mb: np.ndarray | None = None, *,
                    basis: Basis, start: int,
                    coef: np.ndarray, intercept: float, block_rows: int | None
                    ) -> dict[str, Any]:
    """Σ r², Σ r of the residuals ``r = y − (G coef + intercept)`` over one chunk."""
    X, y, valid, counts = usable_rows(Xb, yb, start, mb)
    rss = 0.0
    rsum = 0.0
    step = block_step(len(X), block_rows)
    work = np.empty((step, basis.n_basis))  # reused: no fresh multi-MB temporary per block
    for rows, G in kernel_blocks(X, basis, valid=valid, block_rows=step):
        G64 = work[:len(rows)]
        G64[...] = G
        r = y[rows] - (G64 @ coef + intercept)
        rss += float(r @ r)
        rsum += float(r.sum())
    return {"acc": np.array([rss, rsum]), "counts": counts}


def reduced_normal_equations(
    X: Any,
    y: Any,
    centers: Any,
    omega: float,
    *,
    offset: Any = None,
    scale: Any = None,
    clip: float | None = None,
    split_every: int | None = None,
    mask: Any = None,
    kernel: Any = "gaussian",
) -> xr.Dataset:
    """The normal equations of least squares on a reduced kernel basis, in one read.

    With ``G = K(A, Ã)`` (n × m̃; for the Gaussian
    ``G_ij = exp(-‖(x_i − offset)/scale − c_j‖² / (2ω²))``)
    this computes ``GᵀG``, ``Gᵀy``, ``Gᵀ1``, ``yᵀy``, ``Σy`` and ``n`` over the
    usable rows without ever forming ``G``: per row chunk and per block of
    ``bigkern.kernel_block_rows`` rows, the block is evaluated, folded into
    float64 sums by one BLAS ``syrk`` and dropped; chunk sums are tree-reduced.

    Parameters
    ----------
    X : array-like, dask array or DataArray, shape (n, d)
        Samples (dims ``(sample, feature)`` for a DataArray).
    y : array-like or dask array, shape (n,)
        Targets.
    centers : array-like, shape (m̃, d)
        The reduced set Ã, in the space of ``(x − offset) / scale``.
    omega : float
        Gaussian kernel width ω > 0 (see :mod:`bigkern.kernels`).
    offset, scale : array-like, shape (d,), optional
        Standardization of ``X`` (default none).
    clip : float, optional
        Standardized values are clipped to ``±clip`` (default: not clipped).
    split_every : int, optional
        Fan-in of the tree reduction (default ``bigkern.split_every``).
    mask : array-like or dask array of bool, shape (n,), optional
        Rows to use (e.g. the labelled pixels); the others are left out and
        counted (``n_masked``), their ``y`` never looked at.
    kernel : str, Kernel or Kernel subclass
        The kernel (default the Gaussian); its width is ``omega``
        (:func:`bigkern.kernels.as_kernel`).

    Returns
    -------
    xarray.Dataset
        ``GtG (basis, basis_)``, ``Gty (basis)``, ``Gsum (basis)``, scalars
        ``yty``, ``ysum`` (float64) and ``n`` (rows used); ``centers (basis, feature)``,
        ``offset``, ``scale (feature)``, ``clip`` (inf: not clipped). attrs: ``omega``,
        the row counts ``n_rows``, ``n_valid``, ``n_absent`` (no finite feature),
        ``n_nonfinite`` (some feature non-finite), ``n_nonfinite_y``, and
        ``first_nonfinite``, ``first_nonfinite_y`` (global row of the first such row, -1 if
        none).

    Raises
    ------
    DataQualityError
        When the share of present rows with a non-finite feature or target is over
        ``bigkern.max_nonfinite_fraction``, or no row is usable.
    ValueError
        For mismatched shapes, non-finite centers, ω ≤ 0 or bad ``offset``/``scale``.

    Examples
    --------
    Least squares on ten Gaussians, from the sums alone:

    >>> import numpy as np
    >>> from bigkern import reduced_normal_equations
    >>> X = np.random.default_rng(0).uniform(0, 1, size=(300, 1))
    >>> y = np.sin(2 * np.pi * X[:, 0])
    >>> ne = reduced_normal_equations(X, y, centers=np.linspace(0, 1, 10)[:, None], omega=0.1)
    >>> ne["GtG"].shape, int(ne["n"])
    ((10, 10), 300)
    >>> GtG, Gty = ne["GtG"].values, ne["Gty"].values
    >>> coef = np.linalg.solve(GtG + 1e-8 * np.eye(10), Gty)
    >>> rss = float(ne["yty"]) - 2 * coef @ Gty + coef @ GtG @ coef
    >>> bool(rss / 300 < 1e-3)
    True
    """
    X, y, names = as_arrays(X, y)
    basis = Basis.checked(centers, omega, int(X.shape[1]), offset, scale, clip, kernel)
    m = basis.n_basis
    res = run_pass(X, y, _normal_chunk, basis=basis, omegas=(basis.omega,), n_folds=1, seed=0,
                   name="reduced-normal-equations", label=f"reduced normal equations ({m} centers)",
                   split_every=split_every, mask=mask,
                   block_rows=config.get("kernel_block_rows"))
    acc = np.triu(res["acc"][:, :, 0, 0])
    full = acc + np.triu(acc, 1).T
    counts = res["counts"]
    return xr.Dataset(
        {
            "GtG": (("basis", "basis_"), full[:m, :m]),
            "Gty": ("basis", full[:m, m + 1]),
            "Gsum": ("basis", full[:m, m]),
            "yty": ((), full[m + 1, m + 1]),
            "ysum": ((), full[m, m + 1]),
            "n": ((), np.int64(counts["valid"])),
            "centers": (("basis", "feature"), basis.centers),
            "offset": ("feature", basis.offset),
            "scale": ("feature", basis.scale),
            "clip": ((), basis.clip),
        },
        coords={"basis": np.arange(m), "basis_": np.arange(m),
                **({"feature": names} if names else {})},
        attrs={"omega": basis.omega, "kernel": basis.kernel.name, **count_attrs(counts)},
    )


def reduced_residual_sums(
    X: Any,
    y: Any,
    centers: Any,
    omega: float,
    coef: Any,
    intercept: float = 0.0,
    *,
    offset: Any = None,
    scale: Any = None,
    clip: float | None = None,
    split_every: int | None = None,
    mask: Any = None,
    kernel: Any = "gaussian",
) -> xr.Dataset:
    """Residual sums of ``f(x) = Σ_j coef_j g_j(x) + intercept`` on the data, in one read.

    The same rows are used as by :func:`reduced_normal_equations` (the same
    arguments give the same usable rows and the same kernel blocks).

    Parameters
    ----------
    X, y, centers, omega, offset, scale, clip, split_every, mask, kernel
        As for :func:`reduced_normal_equations`.
    coef : array-like, shape (m̃,)
        Weights of the basis functions.
    intercept : float
        Constant term.

    Returns
    -------
    xarray.Dataset
        Scalars ``rss`` (Σ r²), ``residual_sum`` (Σ r) and ``n``, with
        ``r = y − f(x)``; attrs as for :func:`reduced_normal_equations`.
    """
    X, y, _ = as_arrays(X, y)
    basis = Basis.checked(centers, omega, int(X.shape[1]), offset, scale, clip, kernel)
    coef = np.asarray(coef, dtype=np.float64)
    if coef.shape != (basis.n_basis,):
        raise ValueError(f"coef must have one entry per center ({basis.n_basis}); got shape "
                         f"{coef.shape}")
    if not np.all(np.isfinite(coef)) or not math.isfinite(float(intercept)):
        raise ValueError("coef and intercept must be finite")
    res = run_pass(X, y, _residual_chunk, basis=basis, name="reduced-residual-sums",
                    label="residual sums", split_every=split_every, mask=mask, coef=coef,
                    intercept=float(intercept), block_rows=config.get("kernel_block_rows"))
    counts = res["counts"]
    return xr.Dataset(
        {"rss": ((), res["acc"][0]), "residual_sum": ((), res["acc"][1]),
         "n": ((), np.int64(counts["valid"]))},
        attrs={"omega": basis.omega, **count_attrs(counts)},
    )
