"""Conjugate gradients for several right-hand sides at once, one pass over the rows a step.

A classifier of k classes fitted one-vs-rest solves k Nyström systems with the same
matrix ``H₀ + λK`` and k right-hand sides (its ±1 targets). The costly part of a
conjugate-gradient step is the product with ``H₀ = GᵀG − ḡḡᵀ/n``: a pass over the rows
that evaluates the kernel block ``G``. :func:`preconditioned_cg_columns` runs the k
recurrences of :func:`~bigkern.solvers.conjugate_gradients.preconditioned_cg` — the
same preconditioner, each column's own iterates and stopping rule — and advances them
together: each step gathers the vector every running column needs into one (m̃, a)
matrix, so one pass computes ``Gᵀ(G V)`` for all of them from one kernel evaluation
per row. A column stops when it converges; the pass of the next step leaves it out.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from bigkern.solvers.conjugate_gradients import (
    CGResult,
    FalkonPreconditioner,
    _cg_steps,
    _short_of_tol,
)

__all__ = ["CGColumns", "preconditioned_cg_columns"]


def preconditioned_cg_columns(
    product: Callable[[np.ndarray], np.ndarray],
    rhs: np.ndarray,
    preconditioner: FalkonPreconditioner,
    lam: float,
    *,
    tol: float = 1e-7,
    max_iter: int = 100,
    restart: int = 10,
    start: np.ndarray | None = None,
    start_product: np.ndarray | None = None,
    names: Sequence[str] | None = None,
) -> CGColumns:
    """Solve ``(H₀ + λ TᵀT) C = R`` for the k columns of ``R``, one product call per step.

    Each column runs its own recurrence of :func:`preconditioned_cg` — the same
    iterates, stops and warnings as that column solved alone — and the k recurrences
    advance in lockstep: every call of ``product`` takes, as the columns of one
    (m̃, a) matrix, the vector each of the ``a`` columns still running needs (its next
    direction, or its iterate when it recomputes its residual), so that one pass over
    the rows serves all of them. A column stops when it converges (or stalls, or
    reaches ``max_iter``); the others go on without it.

    Independent recurrences rather than block CG: the k one-vs-rest targets of a
    classifier, centered for the intercept, sum to zero (``Σ_j y_j = (2 − k)·1``), so
    their right-hand sides are linearly dependent and block CG's block of directions
    would be rank deficient from its first step; and each column's iterates being its
    binary solve's, the k-class fit equals k binary fits.

    Parameters
    ----------
    product : callable
        ``V ↦ H₀ V`` for ``V`` of shape (m̃, a), ``a`` ≤ k (one pass over the rows).
    rhs : ndarray, shape (m̃, k)
    preconditioner, lam, tol, max_iter, restart
        As for :func:`preconditioned_cg` (one preconditioner serves all columns).
    start, start_product : ndarray, shape (m̃, k), optional
        First guesses and their products, per column.
    names : sequence of str, optional
        What the columns are (e.g. their classes), for the warning; ``column j`` if not.

    Returns
    -------
    CGColumns

    Warns
    -----
    sklearn.exceptions.ConvergenceWarning
        Some column stopped above ``tol``: one warning naming each such column, its
        iterations and residual.

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern.kernels import gaussian_kernel
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((500, 2))
    >>> G, K = gaussian_kernel(X, X[:50], 1.0), gaussian_kernel(X[:50], X[:50], 1.0)
    >>> R = G.T @ np.column_stack([np.sin(X[:, 0]), np.cos(X[:, 1])])
    >>> calls = []
    >>> def product(V):
    ...     calls.append(V.shape[1])
    ...     return G.T @ (G @ V)
    >>> from bigkern.solvers.conjugate_gradients import FalkonPreconditioner, preconditioned_cg
    >>> pre = FalkonPreconditioner.from_kernel(K, 500, 1.0)
    >>> found = preconditioned_cg_columns(product, R, pre, lam=1.0)
    >>> bool(found.converged.all()), found.n_products == len(calls)
    (True, True)
    >>> alone = preconditioned_cg(lambda v: G.T @ (G @ v), R[:, 1], pre, lam=1.0)
    >>> found.n_iter.tolist(), alone.n_iter  # column 1 took the steps it takes alone
    ([18, 18], 18)
    >>> bool(np.allclose(G @ found.coef[:, 1], G @ alone.coef, rtol=0, atol=1e-7))
    True
    """
    R = np.asarray(rhs, dtype=np.float64)
    if R.ndim != 2:
        raise ValueError(f"rhs must be 2-D (m̃, k); got shape {R.shape}")
    k = R.shape[1]
    steps = [_cg_steps(R[:, j], preconditioner, lam, tol=tol, max_iter=max_iter,
                       restart=restart, start=None if start is None else start[:, j],
                       start_product=None if start_product is None else start_product[:, j])
             for j in range(k)]
    ended: dict[int, tuple[CGResult, str | None]] = {}
    waiting: dict[int, np.ndarray] = {}
    for j, column in enumerate(steps):
        try:
            waiting[j] = next(column)
        except StopIteration as stop:
            ended[j] = stop.value
    calls = 0
    while waiting:
        running = sorted(waiting)
        products = product(np.column_stack([waiting[j] for j in running]))
        calls += 1
        waiting = {}
        for a, j in enumerate(running):
            try:
                waiting[j] = steps[j].send(np.ascontiguousarray(products[:, a]))
            except StopIteration as stop:
                ended[j] = stop.value
    found = tuple(ended[j][0] for j in range(k))
    short = [j for j in range(k) if ended[j][1] is not None]
    if k == 1 and short:  # one right-hand side: preconditioned_cg's own words
        warnings.warn(_short_of_tol(found[0], ended[0][1], tol), ConvergenceWarning,
                      stacklevel=2)
    elif short:
        label = [f"column {j}" for j in range(k)] if names is None else list(names)
        warnings.warn(f"{len(short)} of {k} right-hand sides stopped short: " + "; ".join(
            f"{label[j]}: {_short_of_tol(found[j], ended[j][1], tol)}" for j in short),
            ConvergenceWarning, stacklevel=2)
    return CGColumns(found, calls)


@dataclass(frozen=True)
class CGColumns:
    """What :func:`preconditioned_cg_columns` found: each column's :class:`CGResult` (its
    ``n_products`` the products it took) and ``n_products``, the calls of ``product``
    (passes over the rows, each serving every column still running)."""

    columns: tuple[CGResult, ...]
    n_products: int

    @property
    def coef(self) -> np.ndarray:
        """The solutions, shape (m̃, k)."""
        return np.column_stack([c.coef for c in self.columns])

    @property
    def n_iter(self) -> np.ndarray:
        return np.array([c.n_iter for c in self.columns])

    @property
    def residual(self) -> np.ndarray:
        return np.array([c.residual for c in self.columns])

    @property
    def converged(self) -> np.ndarray:
        return np.array([c.converged for c in self.columns])

    @property
    def residual_recomputed(self) -> np.ndarray:
        return np.array([c.residual_recomputed for c in self.columns])
