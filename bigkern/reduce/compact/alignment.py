"""Alignment A(C) and sparsity S(C) of a compactly supported kernel, streamed by row blocks.

For a radial kernel ``k`` and its compactly supported version
``k_C = Φ_C · k`` (Zhang, Genton & Liu, Theorem 1 and eq. 7)::

    A(C) = Σ Φ_C K² / sqrt(Σ K² · Σ Φ_C² K²)        (0/0 = 0)
    S(C) = #{(i, j): ‖x_i − x_j‖ ≥ C} / n²           (the zero entries of K_C)

With ``sample=m`` the curves are estimated from a seeded row sample (m² pairs)
with standard errors, for n where even the streamed n² sweep is too long.

Every sum runs over all n² pairs, so each row block of ``X`` is paired with all
of ``X`` and only three sums and a count per candidate ``C`` are kept: the
n × n matrix is never stored, and a whole grid of ``C`` costs one sweep. For a
dask array the row blocks are tasks, tree-reduced in a fixed order (zero
counts are exact integers), so the curves do not depend on the number of
workers; other chunkings change them by float rounding only.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import dask
import dask.array as da
import numpy as np
import xarray as xr

from bigkern.cluster.compute import compute
from bigkern.kernels import CompactSupport, pairwise_distances, row_blocks
from bigkern.reduce.passes import as_row_chunked, require_finite_rows, tree_reduce

__all__ = ["alignment_sparsity"]


def _block_sums(
    X: np.ndarray, start: int, stop: int, *, kernel: Any, radii: np.ndarray, taper_power: int,
    block_rows: int,
) -> dict[str, np.ndarray]:
    """The sums of rows ``start:stop`` of ``X`` paired with all rows of ``X``."""
    k2 = 0.0
    cross = np.zeros(len(radii))
    tapered = np.zeros(len(radii))
    zeros = np.zeros(len(radii), dtype=np.int64)
    for sl in row_blocks(stop - start, block_rows):
        r = pairwise_distances(X[start + sl.start:start + sl.stop], X)
        K2 = kernel.radial(r)
        K2 *= K2
        k2 += float(K2.sum())
        for c, radius in enumerate(radii):
            phi = np.maximum(1.0 - r / radius, 0.0) ** taper_power
            phiK2 = phi * K2
            cross[c] += float(phiK2.sum())
            tapered[c] += float((phi * phiK2).sum())
            zeros[c] += int(np.count_nonzero(r >= radius))
    return {"k2": np.array([k2]), "cross": cross, "tapered": tapered, "zeros": zeros}


def _add(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    return {k: np.sum([p[k] for p in parts], axis=0) for k in parts[0]}


def alignment_sparsity(
    X: Any,
    kernel: Any,
    radii: Sequence[float],
    *,
    taper_power: int | None = None,
    block_rows: int = 512,
    sample: int | None = None,
    seed: int = 0,
    groups: int = 8,
) -> xr.Dataset:
    """Exact alignment ``A(C)`` and sparsity ``S(C)`` curves over a grid of support radii.

    Parameters
    ----------
    X : array-like or dask array, shape (n, d)
        Samples (standardized as the kernel expects); every row must be finite.
    kernel : radial kernel
        The dense kernel ``k`` (e.g. :class:`~bigkern.kernels.Gaussian`), or a
        :class:`~bigkern.kernels.CompactSupport` whose inner kernel and ``taper_power`` are used.
    radii : sequence of float
        Candidate support radii (> 0).
    taper_power : int, optional
        Taper power; default the smallest integer ≥ (d + 1) / 2.
    block_rows : int
        Rows paired with all of ``X`` at once (memory: ``block_rows × n`` floats).
    sample : int, optional
        Estimate the curves from a uniform, chunking-independent sample of this
        many rows (:func:`~bigkern.reduce.sampling.sample_rows`) when ``X`` has more:
        ``sample²`` pairs instead of ``n²``. The sample is also split into
        ``groups`` disjoint parts whose curves give the standard errors
        ``alignment_se`` and ``sparsity_se`` (the spread of the part estimates
        over √groups: for these pair averages the variance falls as 1/rows, so a
        part of ``sample/groups`` rows varies ``groups`` times more than the whole).
    seed : int
        Seed of the sample.
    groups : int
        Parts of the sample for the standard errors (≥ 2).

    Returns
    -------
    xarray.Dataset
        ``alignment (radius)``, ``sparsity (radius)`` and ``nonzeros (radius)`` (stored entries of
        ``K_C``; estimated for all ``n`` rows when sampled), attrs ``n``, ``taper_power``,
        ``rows_used``; with ``sample``: also ``alignment_se (radius)``, ``sparsity_se (radius)``.

    Examples
    --------
    A larger radius keeps more of the dense kernel (alignment) and fewer zeros:

    >>> import numpy as np
    >>> from bigkern import Gaussian, alignment_sparsity
    >>> X = np.random.default_rng(0).normal(size=(200, 2))
    >>> curves = alignment_sparsity(X, Gaussian(omega=1.0), radii=[0.5, 1.0, 2.0, 4.0])
    >>> np.round(curves["alignment"].values, 2), np.round(curves["sparsity"].values, 2)
    (array([0.34, 0.6 , 0.86, 0.97]), array([0.93, 0.77, 0.36, 0.02]))
    >>> curves.attrs["taper_power"]  # the smallest positive definite one for d = 2
    2
    """
    if isinstance(kernel, CompactSupport):
        taper_power = kernel.taper_power if taper_power is None else taper_power
        kernel = kernel.kernel
    radii = np.asarray(radii, dtype=np.float64).ravel()
    if not len(radii) or not np.all(np.isfinite(radii) & (radii > 0)):
        raise ValueError(f"the support radii must be positive finite numbers; got {radii}")
    n = int(X.shape[0])
    d = int(X.shape[1])
    taper_power = CompactSupport(kernel, float(radii[0]), taper_power).taper_power_for(d)
    if sample is not None and n > sample:
        return _sampled_curves(X, kernel, radii, taper_power=taper_power, block_rows=block_rows,
                               sample=sample, seed=seed, groups=groups)
    lazy = isinstance(X, da.Array)
    Xd = as_row_chunked(X)[0] if lazy else None
    if lazy:
        # all of X in one node, read once and sent once per worker; each task takes the
        # rows of one chunk from it
        full = Xd.rechunk({0: -1}).to_delayed().ravel()[0]
        checked = dask.delayed(require_finite_rows, pure=True)(full, "X", "alignment")
        bounds = np.cumsum((0, *Xd.chunks[0]))
        parts = [dask.delayed(_block_sums, pure=True)(
            checked, int(a), int(b), kernel=kernel, radii=radii, taper_power=taper_power,
            block_rows=block_rows)
            for a, b in itertools.pairwise(bounds)]
        (sums,) = compute(tree_reduce(parts, _add, name="alignment-combine"),
                          label="alignment and sparsity")
    else:
        Xm = require_finite_rows(X, "X", "alignment")
        sums = _block_sums(Xm, 0, len(Xm), kernel=kernel, radii=radii, taper_power=taper_power,
                           block_rows=block_rows)
    return _curves(sums, n, radii, taper_power=taper_power, kernel=kernel)


def _curves(sums: dict[str, np.ndarray], n: int, radii: np.ndarray, *, taper_power: int,
            kernel: Any) -> xr.Dataset:
    """A(C), S(C) and the nonzeros of K_C from the pair sums of ``n`` rows."""
    denom = np.sqrt(sums["k2"][0] * sums["tapered"])
    with np.errstate(invalid="ignore", divide="ignore"):
        alignment = np.where(denom > 0, sums["cross"] / denom, 0.0)
    nonzeros = n * n - sums["zeros"]
    return xr.Dataset(
        {
            "alignment": ("radius", alignment),
            "sparsity": ("radius", sums["zeros"] / float(n * n) if n else np.zeros(len(radii))),
            "nonzeros": ("radius", nonzeros),
        },
        coords={"radius": radii},
        attrs={"n": n, "rows_used": n, "taper_power": taper_power, "kernel": repr(kernel)},
    )


def _scaled_sums(sums: dict[str, np.ndarray], m: int, n: int,
                 k0: float) -> dict[str, np.ndarray]:
    """Sums over the n² pairs of all rows estimated from the m² pairs of a sample.

    The diagonal (``r = 0``: ``Φ = 1``, ``K² = k(0)²``, never zero) is known
    exactly and weighs ``1/n`` of the pairs, not the sample's ``1/m``; only the
    off-diagonal mean is estimated.
    """
    off = m * (m - 1)
    scaled = {}
    for key in ("k2", "cross", "tapered"):
        mean_off = (sums[key] - m * k0) / off
        scaled[key] = n * k0 + n * (n - 1) * mean_off
    scaled["zeros"] = np.rint(n * (n - 1) * (sums["zeros"] / off)).astype(np.int64)
    return scaled


def _sampled_curves(X: Any, kernel: Any, radii: np.ndarray, *, taper_power: int, block_rows: int,
                    sample: int, seed: int, groups: int) -> xr.Dataset:
    """The curves of a row sample, their standard errors from disjoint parts of it."""
    from bigkern.reduce.sampling import sample_rows

    if int(groups) < 2 or sample < 2 * int(groups):
        raise ValueError(f"groups must be >= 2 and sample >= 2 * groups; got groups={groups!r}, "
                         f"sample={sample!r}")
    n = int(X.shape[0])
    Xs, _, _ = sample_rows(X, n=int(sample), seed=seed)  # rows in hash order: random
    Xs = require_finite_rows(Xs, "X", "alignment")
    k0 = float(kernel.radial(np.zeros(1))[0]) ** 2

    def estimate(rows: np.ndarray) -> xr.Dataset:
        sums = _block_sums(rows, 0, len(rows), kernel=kernel, radii=radii, taper_power=taper_power,
                           block_rows=block_rows)
        return _curves(_scaled_sums(sums, len(rows), n, k0), n, radii, taper_power=taper_power,
                       kernel=kernel)

    whole = estimate(Xs)
    parts = [estimate(part) for part in np.array_split(Xs, int(groups))]
    spread = {k: np.std([p[k].values for p in parts], axis=0, ddof=1) / np.sqrt(len(parts))
              for k in ("alignment", "sparsity")}
    out = whole.assign(alignment_se=("radius", spread["alignment"]),
                       sparsity_se=("radius", spread["sparsity"]))
    out.attrs.update(n=n, rows_used=len(Xs), groups=int(groups), seed=seed)
    return out
