"""The smooth reduced support vector regressor (ε-SSVR on a reduced kernel, Lee & Huang).

:class:`ReducedSVR` shares :class:`~bigkern.models.reduced_kernel.reduced.ReducedSVC`'s machinery
(:mod:`bigkern.models.reduced_kernel._reduced_parts`): a reduced set Ã drawn uniformly in one
read, then Newton–Armijo on the smooth ε-insensitive loss over every usable row,
in memory when the kernel rows fit, else one distributed read per iteration.
"""

from __future__ import annotations

import functools
import time
from typing import Any, ClassVar

import dask.array as da
import numpy as np
from sklearn.base import _fit_context

from bigkern.cluster.compute import task_threads
from bigkern.models._base import fitted_expansion
from bigkern.models._constraints import domain
from bigkern.models.reduced_kernel._newton_cg_fit import (
    choose_solver,
    held_itemsize,
    newton_cg_fit,
)
from bigkern.models.reduced_kernel._reduced_parts import (
    NEWTON_CONSTRAINTS,
    centers_keywords,
    default_size,
    fit_report,
    kernel_rows_fit_in_memory,
    masked_targets,
    newton_fit,
    numpy_mask,
    reduced_basis,
    scale_sample_rows,
)
from bigkern.models.regression.kernel_regression import _KernelRegressor
from bigkern.reduce.passes import as_row_chunked
from bigkern.reduce.reduced.reduced_set import select_reduced_set
from bigkern.solvers.newton.smooth_losses import SmoothEpsilonInsensitive


def centre_targets(y: Any, index: np.ndarray) -> np.ndarray:
    """The targets of the centres (global row numbers ``index``), float64."""
    picked = y[np.asarray(index)]
    return np.asarray(picked.compute() if isinstance(picked, da.Array) else picked,
                      dtype=np.float64)

__all__ = ["ReducedSVR"]


class ReducedSVR(_KernelRegressor):
    """Smooth reduced support vector regression (ε-SSVR on the reduced kernel).

    Minimizes over ``u = (v, γ)``::

        C/2 Σ_i [p(e_i − ε, α)² + p(−e_i − ε, α)²] + ½ (‖v‖² + γ²),
        e_i = y_i − (K(A_i, Ã) v − γ),

    the smooth squared ε-insensitive loss (→ ``½ (|e| − ε)₊²`` as α → ∞) over every
    usable row, by the Newton–Armijo of :class:`ReducedSVC`: one read of the data
    per Newton iteration, Ã a uniform random draw of the rows.

    Parameters
    ----------
    omega, C, kernel, smoothing, size, fraction, centers, standardize, tol, max_iter
        As for :class:`ReducedSVC` (no stratification: there are no classes).
    hessian, solver, random_state
        As for :class:`ReducedSVC` (``solver="auto"``: Newton–CG from 3,000 centres on with held
        kernel rows, 10,000 over chunked data).
    epsilon : float
        Half-width ε ≥ 0 of the insensitive tube, in the units of ``y``.

    Attributes
    ----------
    expansion_ : KernelExpansion
        The fitted expansion ``f(x) = Σ_j coef_j k(z(x), c_j) + intercept``,
        ``z(x) = clip((x − offset) / scale, ±clip)`` (float64 kernel blocks).
    omega_ : float
        Its width.
    reduced_index_ : ndarray of int
        Global row numbers of the centers.
    n_iter_ : int
        Newton iterations.
    fit_report_ : dict
        As for :class:`ReducedSVC`. Not saved with the model.

    Notes
    -----
    Rows with a non-finite feature or target are left out and counted (over
    ``bigkern.max_nonfinite_fraction`` of the present rows is an error); at
    predict time such a row gets NaN.

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern import ReducedSVR
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(0, 1, size=(300, 1))
    >>> truth = np.sin(2 * np.pi * X[:, 0])
    >>> y = truth + 0.1 * rng.standard_normal(300)
    >>> model = ReducedSVR(omega=0.5, C=100.0, epsilon=0.05, size=30, random_state=0).fit(X, y)
    >>> model.n_basis_, model.fit_report_["converged"]
    (30, True)
    >>> bool(np.abs(model.predict(X) - truth).mean() < 0.1)  # close to the noiseless curve
    True
    """

    _allow_nan = True
    _saved_fitted: ClassVar[tuple[str, ...]] = ("omega_", "n_iter_")

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        **NEWTON_CONSTRAINTS,
        "epsilon": [domain("epsilon")],
    }

    def __init__(
        self,
        omega: float = 1.0,
        C: float = 1.0,
        *,
        kernel: Any = "gaussian",
        epsilon: float = 0.1,
        smoothing: float = 5.0,
        size: int | None = None,
        fraction: float | None = None,
        centers: str = "uniform",
        standardize: bool = True,
        tol: float = 1e-8,
        max_iter: int = 50,
        hessian: str = "float64",
        solver: str = "auto",
        random_state: Any = None,
    ) -> None:
        self.omega = omega
        self.C = C
        self.kernel = kernel
        self.epsilon = epsilon
        self.smoothing = smoothing
        self.size = size
        self.fraction = fraction
        self.centers = centers
        self.standardize = standardize
        self.tol = tol
        self.max_iter = max_iter
        self.hessian = hessian
        self.solver = solver
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: Any, y: Any, *, mask: Any = None) -> ReducedSVR:
        """Fit on ``X`` (n, d) — numpy, dask or a DataArray — and real targets ``y`` (n,).

        ``mask`` (n,) of bool, optional, keeps the rows to fit on (as for
        :meth:`ReducedSVC.fit`); the others are counted as ``n_masked``.

        Returns
        -------
        self
        """
        t0 = time.perf_counter()
        loss = SmoothEpsilonInsensitive(float(self.smoothing), float(self.epsilon))
        arr, y = self._fit_input(X, masked_targets(y, mask), y_numeric=True)
        if not isinstance(y, da.Array):
            y = np.asarray(y, dtype=np.float64)
        n_rows = int(arr.shape[0])
        if n_rows < 2:
            raise ValueError(f"{type(self).__name__} needs at least 2 samples to fit; got "
                             f"n_samples={n_rows}")

        @functools.cache
        def chunked() -> tuple[Any, Any, Any]:  # (X, y, mask) as dask arrays, when needed
            Xc, yc, mc = as_row_chunked(arr, y, mask, min_chunks=task_threads())
            return Xc, yc.astype(np.float64), mc

        held = not isinstance(y, da.Array) and isinstance(arr, np.ndarray)
        rs = select_reduced_set(arr if held else chunked()[0], None,
                                size=default_size(n_rows, self.size, self.fraction),
                                fraction=self.fraction, random_state=self.random_state,
                                mask=mask if held else chunked()[2],
                                features=getattr(self, "feature_names_in_", None),
                                scale_rows=scale_sample_rows(self),
                                **centers_keywords(self, self.omega, 1.0 / float(self.C)))
        t_draw = time.perf_counter() - t0
        basis, clipped = reduced_basis(rs, self.omega, self.standardize,
                                       getattr(self, "feature_names_in_", None), self.kernel)
        rows = None if isinstance(y, da.Array) else (arr, y, mask)
        fits = rows is not None and kernel_rows_fit_in_memory(
            arr, mask, n_rows, basis.n_basis, itemsize=held_itemsize(arr, basis))
        method, choice = choose_solver(self.solver, basis.n_basis, 1, fits)
        if method == "newton-cg":
            res, counts, extra = newton_cg_fit(
                self, loss, basis, rs, chunked,
                (arr, y, numpy_mask(mask)) if fits else None,
                lambda: (rs.X, centre_targets(y, rs.index)))
        else:
            res, counts, extra = newton_fit(self, chunked, basis, loss, in_memory=rows)
        extra = {**extra, "solver_choice": choice}
        self.omega_ = float(self.omega)
        self.expansion_ = fitted_expansion(self, basis.centers, res.u[:-1].copy(),
                                           -float(res.u[-1]), self.omega_, basis.offset,
                                           basis.scale, basis.clip)
        self.cv_scores_ = np.full(1, np.nan)
        self.reduced_index_ = rs.index
        self.n_iter_ = res.iterations
        self.fit_report_ = fit_report(self, rs, res, counts, basis.n_basis, t0, t_draw, extra,
                                      clipped=clipped)
        return self
