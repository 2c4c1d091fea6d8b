"""Reduced-kernel normal equations for several widths and cross-validation folds, in one read.

Choosing the Gaussian width ω of a reduced-basis fit by K-fold cross-validation
needs the normal equations of :func:`bigkern.reduce.reduced_normal_equations`
for every (width, fold) pair: a fit on the other folds' sums, a test on this
fold's. Computing them width by width and fold by fold would read the data
``widths × folds`` times; here every row chunk is read once:

* each row gets its fold from a seeded hash of its global row number
  (:func:`bigkern.reduce.sampling.uniform_from_index`), so folds do not depend on the
  chunking or on the number of workers;
* per block of rows, the half squared distances ``S = −‖z − c‖² / 2`` to the
  centers are computed once, in one matrix product;
* per width, ``G = exp(S / ω²)`` and one BLAS ``syrk`` of ``[G | 1 | y]`` per fold
  add the block to that (width, fold)'s float64 sums.

A chunk's partial holds ``widths × folds`` matrices of ``(m̃ + 2)²`` float64
(1,000 centers, 4 widths, 2 folds: 64 MB); choose ``split_every`` with that in mind.
The sums over the folds are the full data's normal equations at each width, so
the final fit at the chosen width needs no further read.

With ``n_classes`` = k the targets are k classes' one-vs-rest ±1 columns, made in
each chunk from class codes: the same ``syrk`` of ``[G | 1 | Y]`` gives ``GᵀG`` once
and ``GᵀY``, ``ΣY``, ``‖Y‖²`` per class — k classes' pieces from one read and one
kernel block per row block, for k more columns in the product.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import xarray as xr

from bigkern import config
from bigkern.reduce.reduced._row_pass import as_arrays, count_attrs, run_pass
from bigkern.reduce.reduced.normal_equations import Basis, _normal_chunk, fold_of_rows

__all__ = ["fold_of_rows", "fold_pieces", "reduced_normal_equations_folds"]


def _check_omegas(omegas: Any) -> tuple[float, ...]:
    values = np.atleast_1d(np.asarray(omegas, dtype=np.float64))
    if values.ndim != 1 or len(values) == 0 or not np.all(np.isfinite(values) & (values > 0)):
        raise ValueError(f"omegas must be a non-empty sequence of positive finite widths; got "
                         f"{omegas!r}")
    return tuple(float(v) for v in values)


def reduced_normal_equations_folds(
    X: Any,
    y: Any,
    centers: Any,
    omegas: Sequence[float],
    *,
    n_folds: int = 2,
    seed: int = 0,
    offset: Any = None,
    scale: Any = None,
    clip: float | None = None,
    split_every: int | None = None,
    mask: Any = None,
    kernel: Any = "gaussian",
    n_classes: int | None = None,
) -> xr.Dataset:
    """Normal equations of a reduced kernel basis per width and per fold, in one read.

    The pieces are those of :func:`bigkern.reduce.reduced_normal_equations`
    (``GᵀG``, ``Gᵀy``, ``Gᵀ1``, ``yᵀy``, ``Σy``, ``n``) over the usable rows of each
    fold, for each width. Row ``i`` (global row number) is in fold
    ``fold_of_rows(i, n_folds, seed)``; summing over ``fold`` gives the whole
    data's pieces.

    Parameters
    ----------
    X : array-like, dask array or DataArray, shape (n, d)
        Samples (dims ``(sample, feature)`` for a DataArray).
    y : array-like or dask array, shape (n,)
        Targets.
    centers : array-like, shape (m̃, d)
        The reduced set Ã, in the space of ``(x − offset) / scale``.
    omegas : sequence of float
        Candidate widths ω > 0.
    n_folds : int
        Number of folds (≥ 1; 1 gives the whole data's pieces per width).
    seed : int
        Seed of the fold hash.
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
        The kernel (default the Gaussian), at each width of ``omegas``.
    n_classes : int, optional
        ``y`` holds class codes 0 … k−1 (float; NaN where unknown) and the targets are
        the k one-vs-rest columns, +1 for the class and −1 for the others
        (:func:`~bigkern.reduce.reduced.normal_equations.one_vs_rest_targets`), summed
        in the same read.

    Returns
    -------
    xarray.Dataset
        ``GtG (omega, fold, basis, basis_)``, ``Gty``, ``Gsum (omega, fold, basis)``,
        ``yty``, ``ysum``, ``n (fold)``; ``centers``, ``offset``, ``scale``, ``clip``; attrs
        ``n_folds``, ``seed`` and the row counts of
        :func:`~bigkern.reduce.reduced_normal_equations`. With ``n_classes``, ``Gty``,
        ``yty`` and ``ysum`` have a last dimension ``class`` (k).

    Examples
    --------
    Three classes' pieces in one read, each those of its ±1 target alone:

    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(200, 2))
    >>> codes = np.digitize(X[:, 0], [-0.5, 0.5]).astype(float)  # classes 0, 1, 2
    >>> C = X[:8]
    >>> ds = reduced_normal_equations_folds(X, codes, C, [1.0], n_folds=1, n_classes=3)
    >>> ds["Gty"].dims, ds["ysum"].values.round().tolist()
    (('omega', 'fold', 'basis', 'class'), [[-56.0, -54.0, -90.0]])
    >>> one = reduced_normal_equations_folds(X, np.where(codes == 1, 1.0, -1.0), C, [1.0],
    ...                                      n_folds=1)
    >>> bool(np.allclose(ds["Gty"][..., 1], one["Gty"], rtol=1e-13))
    True

    Raises
    ------
    DataQualityError
        When too many present rows are unusable or none is usable.
    ValueError
        Bad widths, ``n_folds``, centers, offset or scale, or mismatched shapes.
    """
    X, y, names = as_arrays(X, y)
    omegas = _check_omegas(omegas)
    if isinstance(n_folds, bool) or not isinstance(n_folds, int | np.integer) or n_folds < 1:
        raise ValueError(f"n_folds must be a positive int; got {n_folds!r}")
    basis = Basis.checked(centers, omegas[0], int(X.shape[1]), offset, scale, clip, kernel)
    m = basis.n_basis
    t = 1 if n_classes is None else int(n_classes)
    if n_classes is not None and (isinstance(n_classes, bool) or t < 1):
        raise ValueError(f"n_classes must be a positive int; got {n_classes!r}")
    partial_mb = (m + 1 + t) ** 2 * len(omegas) * n_folds * 8 / 2**20
    res = run_pass(X, y, _normal_chunk, basis=basis, omegas=omegas, n_folds=int(n_folds),
                   seed=int(seed), n_classes=None if n_classes is None else t,
                   name="reduced-normal-equations-folds",
                   label=(f"reduced normal equations ({m} centers, {len(omegas)} widths, "
                          f"{n_folds} folds; {partial_mb:.0f} MB per partial)"),
                   split_every=split_every, mask=mask,
                   block_rows=config.get("kernel_block_rows"))
    acc = np.moveaxis(res["acc"], (2, 3), (0, 1))  # (omega, fold, m + 2, m + 2)
    upper = np.triu(acc)
    full = upper + np.swapaxes(np.triu(acc, 1), -1, -2)
    n_fold = np.rint(full[0, :, m, m]).astype(np.int64)
    if int(n_fold.sum()) != res["counts"]["valid"]:  # pragma: no cover - internal check
        raise AssertionError("fold counts do not add up to the usable rows")
    if n_classes is None:
        targets: dict[str, Any] = {
            "Gty": (("omega", "fold", "basis"), full[:, :, :m, m + 1]),
            "yty": ("fold", full[0, :, m + 1, m + 1]),
            "ysum": ("fold", full[0, :, m, m + 1]),
        }
    else:
        ys = slice(m + 1, m + 1 + t)
        targets = {
            "Gty": (("omega", "fold", "basis", "class"), full[:, :, :m, ys]),
            "yty": (("fold", "class"), np.diagonal(full[0, :, ys, ys], axis1=-2, axis2=-1)),
            "ysum": (("fold", "class"), full[0, :, m, ys]),
        }
    return xr.Dataset(
        {
            "GtG": (("omega", "fold", "basis", "basis_"), full[:, :, :m, :m]),
            "Gty": targets["Gty"],
            "Gsum": (("omega", "fold", "basis"), full[:, :, :m, m]),
            "yty": targets["yty"],
            "ysum": targets["ysum"],
            "n": ("fold", n_fold),
            "centers": (("basis", "feature"), basis.centers),
            "offset": ("feature", basis.offset),
            "scale": ("feature", basis.scale),
            "clip": ((), basis.clip),
        },
        coords={"omega": list(omegas), "fold": np.arange(n_folds), "basis": np.arange(m),
                "basis_": np.arange(m), **({"feature": names} if names else {})},
        attrs={"kernel": basis.kernel.name, "n_folds": int(n_folds), "seed": int(seed),
               **count_attrs(res["counts"])},
    )


def fold_pieces(ds: xr.Dataset, omega_index: int, folds: Any) -> dict[str, Any]:
    """The pieces of one width summed over ``folds`` (plain numpy / Python scalars; with a
    ``class`` dimension, ``Gty`` (m̃, k) and ``yty``, ``ysum`` (k,))."""
    sub = ds.isel(omega=omega_index, fold=list(np.atleast_1d(folds)))
    if "class" in ds.dims:
        yty, ysum = sub["yty"].values.sum(0), sub["ysum"].values.sum(0)
    else:
        yty, ysum = float(sub["yty"].values.sum()), float(sub["ysum"].values.sum())
    return {"GtG": sub["GtG"].values.sum(0), "Gty": sub["Gty"].values.sum(0),
            "Gsum": sub["Gsum"].values.sum(0), "yty": yty, "ysum": ysum,
            "n": int(sub["n"].values.sum())}

