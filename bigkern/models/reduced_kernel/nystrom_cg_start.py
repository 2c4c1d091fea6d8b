"""Where the Nyström models' conjugate gradients start, and their preconditioner.

:func:`subset_start` solves the system on a random subset of about
:data:`START_ROWS_PER_CENTER` rows per centre (one read, held in memory with its kernel
blocks), by up to :data:`START_MAX_ITER` iterations: the full solve starts from that
solution (see :mod:`bigkern.models.reduced_kernel.nystrom_cg`). The same subset gives the
preconditioner: the Gram matrix of :data:`PRECONDITIONER_ROWS_PER_CENTER` of its rows per
centre stands for ``GᵀG`` (:meth:`FalkonPreconditioner.from_sample`), where Falkon's
preconditioner lets the m̃ centres stand for the rows. At bigkern's small λ the centres'
estimate leaves eigenvalues CG needs very many iterations to find, the sample's does not (the
models page of the user guide gives the measured iterations); the sample's Gram costs
``n_s·m̃²`` flops and a reduction ``T⁻ᵀ M T⁻¹`` of m̃³, once a fit
(:class:`PreconditionerSample`; a λ path draws its own sample of the training rows, one
read, and makes each λ's preconditioner from it).

:func:`centered_rhs` and :func:`less_mean` are the system's right-hand sides and product
with the intercept eliminated.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from bigkern import config
from bigkern.kernels.basis import kernel_blocks, syrk_product
from bigkern.reduce.reduced.kept_blocks import KeptKernelBlocks, kept_budget_bytes
from bigkern.reduce.reduced.products import in_memory_products, sample_usable_rows
from bigkern.solvers.conjugate_gradients import FalkonPreconditioner
from bigkern.solvers.conjugate_gradients_columns import CGColumns, preconditioned_cg_columns

__all__ = ["PRECONDITIONER_ROWS_PER_CENTER", "START_MAX_ITER", "START_ROWS_PER_CENTER",
           "START_TOL", "PreconditionerSample", "centered_rhs", "drawn_preconditioner_sample",
           "less_mean", "preconditioner_sample", "sample_preconditioner", "subset_start",
           "target_columns"]

#: Rows of the starting subset per center (at most half of the rows)
START_ROWS_PER_CENTER = 10
#: Iterations at most, and the relative residual, of the solve on the subset
START_MAX_ITER, START_TOL = 20, 1e-3
#: Rows of the preconditioner's sample per center, unless
#: ``bigkern.cg_preconditioner_rows`` says otherwise (0: Falkon's, from the centres alone)
PRECONDITIONER_ROWS_PER_CENTER = 4


def target_columns(products: dict[str, Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``Gᵀy``, ``Σy`` and ``Σy²`` of a :func:`kernel_products` result as columns: (m̃, t),
    (t,), (t,) — one column for one target, t for t classes."""
    gty = np.asarray(products["Gty"])
    if gty.ndim == 1:
        return gty[:, None], np.array([products["ysum"]]), np.array([products["yty"]])
    return gty, np.asarray(products["ysum"]), np.asarray(products["yty"])


def centered_rhs(products: dict[str, Any], fit_intercept: bool) -> np.ndarray:
    """The right-hand sides ``Gᵀy − ḡ Σy / n`` (or ``Gᵀy`` without an intercept), one column
    per target."""
    gty, ysum, _ = target_columns(products)
    gsum, n = products["Gsum"], products["n"]
    if not fit_intercept:
        return gty
    return np.column_stack([gty[:, j] - gsum * (ysum[j] / n) for j in range(len(ysum))])


def less_mean(gtgv: np.ndarray, V: np.ndarray, gsum: np.ndarray, n: int,
               fit_intercept: bool) -> np.ndarray:
    """``GᵀG V − ḡ ḡᵀV / n`` from ``GᵀG V`` (unchanged without an intercept), column by
    column (each as it would be alone)."""
    if not fit_intercept:
        return gtgv
    out = np.empty_like(gtgv)
    for j in range(V.shape[1]):
        v = np.ascontiguousarray(V[:, j])
        out[:, j] = gtgv[:, j] - gsum * (float(gsum @ v) / n)
    return out


@dataclass(frozen=True)
class PreconditionerSample:
    """The Gram matrix of a uniform sample of the rows, once: preconditioners for any number
    of rows and any λ are made from it (a λ path's, then its refit's on all rows).

    ``gram`` is None where there is no sample (``bigkern.cg_preconditioner_rows`` 0, or
    fewer sample rows than centres): Falkon's preconditioner from ``K`` alone.
    """

    K: np.ndarray
    gram: np.ndarray | None = None
    gsum: np.ndarray | None = None
    n_sample: int = 0

    def preconditioner(self, n: int, lam: float, centered: bool) -> FalkonPreconditioner:
        """The preconditioner of the system of ``n`` rows at ``lam``."""
        if self.gram is None or self.gsum is None:
            return FalkonPreconditioner.from_kernel(self.K, max(n, 1), lam, centered=centered)
        return FalkonPreconditioner.from_sample(self.K, self.gram, self.gsum, self.n_sample,
                                                max(n, 1), lam, centered=centered)


def preconditioner_sample(K: np.ndarray, Xs: np.ndarray, basis: Any, seed: int
                          ) -> PreconditionerSample:
    """The Gram matrix of a seeded draw of at most ``bigkern.cg_preconditioner_rows``
    (:data:`PRECONDITIONER_ROWS_PER_CENTER` by default) of ``Xs``'s rows per centre.

    ``Xs`` is a uniform sample of the usable rows, in row order; the draw from it is
    seeded and depends on nothing else, so the preconditioner is the same for any
    chunking.
    """
    m = basis.n_basis
    per_center = _rows_per_center()
    if per_center <= 0 or len(Xs) < m:
        return PreconditionerSample(K)
    take = min(len(Xs), per_center * m)
    rows = np.sort(np.random.default_rng(seed).choice(len(Xs), take, replace=False))
    gram, gsum, n_sample = np.zeros((m, m)), np.zeros(m), 0
    for _, G in kernel_blocks(np.asarray(Xs)[rows], basis):
        G64 = np.asarray(G, dtype=np.float64)
        gram += syrk_product(G64)
        gsum += G64.sum(axis=0)
        n_sample += len(G64)
    return PreconditionerSample(K, gram, gsum, n_sample)


def drawn_preconditioner_sample(Xd: Any, yd: Any, mask: Any, basis: Any, K: np.ndarray,
                                n_rows: float, seed: int, what: str) -> PreconditionerSample:
    """:func:`preconditioner_sample` of about ``bigkern.cg_preconditioner_rows`` of the rows
    of ``mask`` per centre (of about ``n_rows``), drawn by a seeded hash of their row
    numbers in one read (none with 0: Falkon's preconditioner). For a fit without a
    subset start, and a λ path."""
    per_center = _rows_per_center()
    if per_center <= 0:
        return PreconditionerSample(K)
    # a quarter more than needed, so that the hash's spread rarely leaves fewer
    fraction = min(1.0, 1.25 * per_center * basis.n_basis / max(1.0, float(n_rows)))
    Xs, _, _ = sample_usable_rows(Xd, yd, fraction=fraction, seed=seed, mask=mask,
                                  label=f"{what}: the preconditioner's sample")
    return preconditioner_sample(K, Xs, basis, seed)


def _rows_per_center() -> int:
    """``bigkern.cg_preconditioner_rows``: sample rows per centre (0: Falkon's)."""
    return int(config.get("cg_preconditioner_rows", PRECONDITIONER_ROWS_PER_CENTER))


def sample_preconditioner(K: np.ndarray, Xs: np.ndarray, basis: Any, n: int, lam: float,
                          fit_intercept: bool, seed: int) -> FalkonPreconditioner:
    """The preconditioner for ``n`` rows from a uniform draw of ``Xs``'s rows
    (:func:`preconditioner_sample`; with ``bigkern.cg_preconditioner_rows`` 0, or fewer
    sample rows than centres, Falkon's from ``K`` alone).

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern.kernels import Basis
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((500, 2))
    >>> basis = Basis.checked(X[:20], omega=1.0, d=2)
    >>> K = basis.kernel(basis.centers, basis.centers)
    >>> sample_preconditioner(K, X, basis, n=5000, lam=1e-3, fit_intercept=True,
    ...                       seed=0).sample_rows
    80
    """
    return preconditioner_sample(K, Xs, basis, seed).preconditioner(n, lam, fit_intercept)


def subset_start(est: Any, Xd: Any, yd: Any, md: Any, basis: Any, K: np.ndarray,
                  n_drawn: int, lam: float, n_classes: int | None
                  ) -> tuple[CGColumns | None, int, int | None, FalkonPreconditioner | None]:
    """The solution on a random subset of the rows, the subset's rows, the usable rows ``n``
    and the preconditioner for ``n`` rows; ``(None, 0, None, None)`` when there is no start
    (``cg_start="zero"``, or the subset would be over half of the ``n_drawn`` rows that the
    draw of the centers found usable). One column per target (per class with
    ``n_classes``), the columns' recurrences advanced together."""
    m = basis.n_basis
    fraction = START_ROWS_PER_CENTER * m / max(n_drawn, 1)
    if est.cg_start != "subset" or fraction > 0.5:
        return None, 0, None, None
    seed = est.random_state if isinstance(est.random_state, int | np.integer) else 0
    Xs, ys, n = sample_usable_rows(Xd, yd, fraction=fraction, seed=int(seed), mask=md,
                                   label="Nyström conjugate gradients: the starting subset")
    pre = sample_preconditioner(K, Xs, basis, n, lam, est.fit_intercept, int(seed))
    if len(Xs) < 2:
        return None, len(Xs), n, pre
    blocks = None
    if len(Xs) * m * Xs.dtype.itemsize <= kept_budget_bytes():  # the subset's blocks, kept
        blocks, first = KeptKernelBlocks.build(Xs, ys, basis, np.zeros((m, 0)),
                                               n_classes=n_classes,
                                               label="Nyström starting subset, kernel blocks")
    else:
        first = in_memory_products(Xs, ys, basis, np.zeros((m, 0)), n_classes=n_classes)
    n_s = first["n"]

    def product(V: np.ndarray) -> np.ndarray:
        gtgv = (in_memory_products(Xs, ys, basis, V, targets=False)["GtGV"] if blocks is None
                else blocks.products(V, label="Nyström starting subset"))
        return less_mean(gtgv, V, first["Gsum"], n_s, est.fit_intercept)

    scaled = FalkonPreconditioner(pre.T, pre.A * np.sqrt(n_s / n), pre.jitter, pre.centered)
    with warnings.catch_warnings():  # a start need not converge
        warnings.simplefilter("ignore", ConvergenceWarning)
        try:
            found = preconditioned_cg_columns(product, centered_rhs(first, est.fit_intercept),
                                              scaled, lam * n_s / n,
                                              tol=max(START_TOL, float(est.tol)),
                                              max_iter=START_MAX_ITER)
        finally:
            if blocks is not None:
                blocks.release()
    return found, n_s, n, pre
