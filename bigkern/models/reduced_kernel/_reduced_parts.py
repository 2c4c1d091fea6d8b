"""What the reduced-kernel models share: labels, the basis, the Newton fits, the report.

:class:`~bigkern.models.reduced_kernel.reduced.ReducedSVC`,
:class:`~bigkern.models.reduced_kernel.reduced_svr.ReducedSVR` and the Nyström
models (:mod:`bigkern.models.reduced_kernel.nystrom`) draw a reduced set Ã and fit a
Gaussian expansion on it. This module holds their common steps: labels and
targets as the passes want them, the default size of Ã and its standardized
basis, the two Newton fits (:func:`newton_fit`, Newton–Armijo for the smooth
losses; :func:`squared_hinge_fit`, the finite Newton method; both in memory, with no
task graph, when a numpy input's kernel rows fit in ``bigkern.in_memory_kernel_bytes``,
else one distributed read of the data per iteration), the ``fit_report_`` and the
regressor's saved layout.
"""

from __future__ import annotations

import math
import os
import time
import warnings
from collections.abc import Callable
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import StrOptions

from bigkern import config
from bigkern.errors import BigkernWarning
from bigkern.features.scaling import (
    CLIP_SCALED,
    FAR_SCALED,
    SCALE_SAMPLE_ROWS,
    far_features,
    robust_standardizer,
    squashed_features,
    standardized,
)
from bigkern.kernels import Basis
from bigkern.models._constraints import KERNEL, domain
from bigkern.reduce.passes import (
    int_counts,
    per_feature_counts,
    without_per_feature,
)
from bigkern.reduce.reduced.svm import ReducedNewtonPasses, augmented_kernel_rows
from bigkern.solvers.newton.finite_newton import finite_newton, subset_warm_start
from bigkern.solvers.newton.in_memory_newton import InMemoryNewtonPasses
from bigkern.solvers.newton.smooth_losses import SquaredHinge
from bigkern.solvers.newton.smooth_svm import newton_armijo

__all__ = [
    "DEFAULT_MAX_SIZE",
    "NEWTON_CONSTRAINTS",
    "REDUCED_SET_CONSTRAINTS",
    "SMOOTH_IN_MEMORY_BYTES",
    "centers_keywords",
    "default_size",
    "fit_labels",
    "fit_report",
    "kernel_rows_fit_in_memory",
    "masked_targets",
    "newton_fit",
    "numpy_mask",
    "plus_minus",
    "reduced_basis",
    "scale_sample_rows",
    "squared_hinge_fit",
    "standardizer",
]

DEFAULT_MAX_SIZE = 500

#: The parameters of a reduced set drawn from the rows (the reduced and Nyström models).
REDUCED_SET_CONSTRAINTS: dict[str, list[Any]] = {
    "omega": [domain("omega")],
    "kernel": KERNEL,
    "size": [domain("size"), None],
    "fraction": [domain("fraction"), None],
    "centers": [StrOptions({"uniform", "leverage"})],
    "standardize": ["boolean"],
    "random_state": ["random_state"],
}

#: The parameters of the smooth reduced SVMs' Newton–Armijo fit.
NEWTON_CONSTRAINTS: dict[str, list[Any]] = {
    **REDUCED_SET_CONSTRAINTS,
    "C": [domain("C")],
    "smoothing": [domain("smoothing")],
    "tol": [domain("tol")],
    "max_iter": [domain("max_iter")],
    "hessian": [StrOptions({"float32", "float64"})],
    "solver": [StrOptions({"auto", "newton", "newton-cg"})],
}


def plus_minus(block: np.ndarray, positive: Any) -> np.ndarray:
    """Labels as ±1 floats: +1 where equal to the positive class."""
    return np.where(np.asarray(block) == positive, 1.0, -1.0)


def fit_labels(est: Any, y: Any, mask: Any) -> tuple[Any, bool]:
    """Labels for the passes and whether they are lazy.

    numpy ``y`` with a numpy (or no) mask becomes 0/1 codes, ``classes_`` taken from
    the rows the mask keeps (the others may hold anything, e.g. 0 for unlabelled
    pixels); a dask ``y`` or mask stays lazy, and ``classes_`` comes from the draw
    (:func:`~bigkern.models.reduced_kernel._reduced_classes.classes_from_draw`).
    """
    if isinstance(mask, xr.DataArray):
        mask = mask.data
    if isinstance(y, da.Array) or isinstance(mask, da.Array):
        return y, True
    y = np.asarray(y)
    if mask is None:
        return est._fit_classes(y), False
    keep = np.asarray(mask)
    if keep.shape != y.shape or keep.dtype != bool:
        raise ValueError(f"mask must be a boolean array with one entry per row of X "
                         f"({y.shape[0]}); got {keep.dtype} of shape {keep.shape}")
    if not keep.any():
        raise ValueError(f"mask keeps none of the {y.shape[0]} rows")
    codes = np.zeros(y.shape, dtype=np.int8)
    codes[keep] = est._fit_classes(y[keep])
    return codes, False


def masked_targets(y: Any, mask: Any) -> Any:
    """Real targets with the masked-out entries of a numpy ``y`` set to 0.

    Those rows are left out of the fit, so their values (NaN where a target is
    unknown) must not fail the finite check of numpy targets; dask targets are
    only read where the mask keeps them.
    """
    if mask is None or isinstance(y, da.Array | xr.DataArray) \
            or isinstance(mask, da.Array | xr.DataArray):
        return y
    y, keep = np.asarray(y), np.asarray(mask)
    if keep.dtype != bool or keep.shape != y.shape[:1]:
        raise ValueError(f"mask must be a boolean array with one entry per row of X "
                         f"({y.shape[0]}); got {keep.dtype} of shape {keep.shape}")
    return np.where(keep if y.ndim == 1 else keep[:, None], y, 0)


def default_size(n_rows: int, size: int | None, fraction: float | None,
                 n_classes: int = 2) -> int | None:
    """``size`` as given, or (neither ``size`` nor ``fraction`` given) 10% of the rows in
    ``[2, DEFAULT_MAX_SIZE]``, and at least ``n_classes`` (a stratified draw takes a
    center of each class)."""
    if size is None and fraction is None:
        least = max(2, int(n_classes))
        return min(n_rows, max(least, min(DEFAULT_MAX_SIZE, math.ceil(0.1 * n_rows))))
    return size


def centers_keywords(est: Any, omega: Any, lam: float) -> dict[str, Any]:
    """:func:`~bigkern.reduce.reduced.reduced_set.select_reduced_set`'s keywords for
    ``est.centers``: none for ``"uniform"``; for ``"leverage"``, the scores' penalty ``lam``
    (a Nyström model's ``lam``, an SVM's ``1 / C``) and the model's own basis at width
    ``omega`` (standardized from the first draw's scale sample, as :func:`reduced_basis`
    makes it; its warnings wait for the final set's basis)."""
    if getattr(est, "centers", "uniform") != "leverage":
        return {}
    names = getattr(est, "feature_names_in_", None)

    def score_basis(first: Any) -> Basis:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return reduced_basis(first, float(omega), est.standardize, names, est.kernel)[0]

    return {"centers": "leverage", "lam": float(lam), "score_basis": score_basis}


def scale_sample_rows(est: Any) -> int:
    """The ``scale_rows`` of ``est``'s draw: :data:`SCALE_SAMPLE_ROWS` when it standardizes."""
    return SCALE_SAMPLE_ROWS if est.standardize else 0


def standardizer() -> Callable[[Any], tuple[np.ndarray, np.ndarray]]:
    """The function the reduced-kernel models standardize with: ``bigkern.standardizer``.

    :func:`~bigkern.features.scaling.robust_standardizer` unless the setting holds a
    function of one's own, which takes the scale sample (n, d) and returns each
    feature's offset and scale.

    Raises
    ------
    TypeError
        The setting holds something other than None or a function (a string from a
        YAML file or an environment variable, say).

    Examples
    --------
    >>> import bigkern.config
    >>> standardizer() is robust_standardizer
    True
    >>> def halves(rows):
    ...     return np.zeros(rows.shape[1]), np.full(rows.shape[1], 0.5)
    >>> with bigkern.config.set(standardizer=halves):
    ...     standardizer()(np.ones((4, 2)))[1].tolist()
    [0.5, 0.5]
    """
    chosen = config.get("standardizer")
    if chosen is None:
        return robust_standardizer
    if not callable(chosen):
        raise TypeError(f"the setting bigkern.standardizer must be None or a function "
                        f"(rows -> (offset, scale)); it is {chosen!r}")
    return chosen


def reduced_basis(rs: Any, omega: float, standardize: bool, features: Any = None,
                  kernel: Any = "gaussian"
                  ) -> tuple[Basis, dict[str, int]]:
    """The Gaussian basis on the drawn rows, and the clipped values of Ã per feature.

    With ``standardize``, the features are robustly standardized
    (:func:`~bigkern.features.scaling.robust_standardizer`, or the function of the
    ``bigkern.standardizer`` setting: :func:`standardizer`) from the draw's scale
    sample (``rs.scale_X``, :data:`~bigkern.features.scaling.SCALE_SAMPLE_ROWS` rows;
    Ã itself when the draw took none) and clipped to
    ``±CLIP_SCALED`` robust σ (the same clipping applies to every row the basis
    meets). The count of clipped values in Ã (a random sample of the usable rows)
    is returned per feature, for those with any. A feature whose values in Ã
    reach beyond ``±FAR_SCALED`` robust σ is named in a
    :class:`~bigkern.errors.BigkernWarning` with its range: its heavy tail is
    flattened onto the bound, and a transform (e.g. a log) would keep it. So is a
    feature scaled by its range that a few far values squash
    (:func:`~bigkern.features.scaling.squashed_features`).
    """
    d = rs.X.shape[1]
    names = [f"f{j}" for j in range(d)] if features is None else [str(f) for f in features]
    if standardize:
        sample = rs.X if rs.scale_X is None else rs.scale_X
        offset, scale = standardizer()(sample)
        clip = CLIP_SCALED
        squashed = squashed_features(sample, offset, scale, names)
        if squashed:
            warnings.warn(
                f"{len(squashed)} feature(s) are at one value in over 80 % of the scale "
                f"sample and take their σ from their range, which a few far values set: "
                f"{', '.join(squashed)}; their other values weigh next to nothing in the "
                f"kernel. Transform such a feature (e.g. a log), or drop or clip its far "
                f"values, to keep them", BigkernWarning, stacklevel=3)
    else:
        offset, scale, clip = np.zeros(d), np.ones(d), math.inf
    raw = standardized(rs.X, offset, scale)
    far = far_features(raw, names) if standardize else []
    if far:
        warnings.warn(
            f"{len(far)} feature(s) reach beyond ±{FAR_SCALED:g} robust σ in the reduced set: "
            f"{', '.join(far)}; their values beyond ±{CLIP_SCALED:g} robust σ are clipped to "
            f"±{CLIP_SCALED:g} (a heavy tail makes the robust σ small), so the kernel does "
            f"not tell those values apart. Transform such a feature (e.g. a log) to keep them",
            BigkernWarning, stacklevel=3)
    beyond = (np.abs(raw) > clip).sum(axis=0)
    clipped = {names[j]: int(beyond[j]) for j in range(d) if beyond[j]}
    basis = Basis.checked(np.clip(raw, -clip, clip), float(omega), d, offset, scale, clip,
                          kernel)
    return basis, clipped


def newton_fit(est: Any, chunked: Callable[[], tuple[Any, Any, Any]], basis: Basis,
               loss: Any, *, in_memory: tuple[Any, Any, Any] | None = None
               ) -> tuple[Any, dict[str, int], dict[str, Any]]:
    """Newton–Armijo over the rows; warns when not converged.

    ``in_memory``, the fit's ``(X, y, mask)`` as numpy arrays (``y`` as the loss takes
    it): when their kernel rows fit (:func:`kernel_rows_fit_in_memory`, and
    :data:`SMOOTH_IN_MEMORY_BYTES`), the kernel rows
    are formed once and every iteration sums them in memory, with no task graph
    (:class:`~bigkern.solvers.newton.in_memory_newton.InMemoryNewtonPasses`). Otherwise each
    iteration is one distributed read of the dask arrays ``(X, y, mask)`` that
    ``chunked()`` makes (only then: a small fit makes no task graph). Returns the
    result, the row counts and what the fit report adds (``solver``, ``reads``).
    """
    if in_memory is not None and kernel_rows_fit_in_memory(
            in_memory[0], in_memory[2], len(in_memory[0]), basis.n_basis,
            SMOOTH_IN_MEMORY_BYTES):
        X, y, mask = in_memory
        A, y_usable, _, counts = augmented_kernel_rows(X, y, basis, numpy_mask(mask))
        rows = InMemoryNewtonPasses(A, y_usable, loss, hessian_dtype=est.hessian,
                                    block_rows=int(config.get("kernel_block_rows")),
                                    threads=os.cpu_count() or 1)
        res = newton_armijo(rows, basis.n_basis + 1, C=float(est.C), tol=float(est.tol),
                            max_iter=int(est.max_iter), refine=rows.exact_hessian,
                            first_trials=IN_MEMORY_FIRST_TRIALS)
        _warn_unconverged(est, res)
        # the data is read twice: to draw Ã, and once into the kernel rows
        return res, counts, {"solver": "newton-armijo, in memory", "reads": 2}
    Xd, yd, md = chunked()
    with ReducedNewtonPasses(Xd, yd, basis, loss, hessian_dtype=est.hessian,
                             mask=md) as passes:
        res = newton_armijo(passes, basis.n_basis + 1, C=float(est.C), tol=float(est.tol),
                            max_iter=int(est.max_iter), refine=passes.exact_hessian)
    _warn_unconverged(est, res)
    return res, passes.counts, {"solver": "newton-armijo, one pass per step"}


def numpy_mask(mask: Any) -> np.ndarray | None:
    """A mask as a numpy array (None stays None)."""
    if isinstance(mask, xr.DataArray):
        mask = mask.data
    return None if mask is None else np.asarray(mask)


def _warn_unconverged(est: Any, res: Any) -> None:
    if not res.converged:
        warnings.warn(f"{type(est).__name__} did not converge: {res.message} after "
                      f"{res.iterations} iterations (gradient norm {res.grad_norm:.3g}, "
                      f"{res.grad_norm / max(res.grad_norm0, 1e-300):.2g} of the initial)",
                      ConvergenceWarning, stacklevel=5)


#: Trial steps (1 … 1/8) of the first batch of an in-memory Newton–Armijo line search:
#: its passes are cheap, so the shorter steps wait for a second batch that few iterations
#: need, rather than every iteration paying the loss at all 21 of them.
IN_MEMORY_FIRST_TRIALS = 4

#: The smooth losses' Newton–Armijo runs in memory up to kernel rows of this size only.
#: Every iteration reads all of them; past this, forming the float32 kernel blocks anew in
#: each pass (two threads) costs less than reading the float64 rows. Below it, a fit is
#: spared the task graph of every pass.
SMOOTH_IN_MEMORY_BYTES = 2**26


def kernel_rows_fit_in_memory(X: Any, mask: Any, n_rows: int, n_basis: int,
                              limit: int | None = None, itemsize: int = 8) -> bool:
    """Whether numpy ``X`` (and mask) of ``n_rows`` rows is fitted in memory: at most
    ``bigkern.in_memory_rows`` rows whose ``n × (m̃ + 1)`` kernel rows of ``itemsize``
    bytes (float64: 8) take at most ``bigkern.in_memory_kernel_bytes`` (and at most
    ``limit`` bytes)."""
    if isinstance(mask, xr.DataArray):
        mask = mask.data
    most = int(config.get("in_memory_kernel_bytes"))
    most = most if limit is None else min(most, limit)
    return (isinstance(X, np.ndarray) and not isinstance(mask, da.Array)
            and n_rows <= int(config.get("in_memory_rows"))
            and itemsize * n_rows * (n_basis + 1) <= most)


#: The finite Newton fit starts from a subset's solution only when a Newton step over all
#: rows, n·(m̃ + 1)² multiply-adds, costs at least this: the start is a fit of its own, and
#: below this the steps it saves cost less than it does.
WARM_START_FLOPS = 4e9


def squared_hinge_fit(est: Any, X: Any, labels: Any, mask: Any, basis: Basis,
                      rs: Any, chunked: Callable[[], tuple[Any, Any, Any]]
                      ) -> tuple[Any, dict[str, int], dict[str, Any]]:
    """The squared-hinge reduced SVM by the finite Newton method.

    numpy rows whose kernel rows fit (:func:`kernel_rows_fit_in_memory`) are solved in
    memory with no task graph: the kernel rows formed once, a warm start from a
    tenth of the rows (for problems of at least :data:`WARM_START_FLOPS` per step),
    then :func:`~bigkern.solvers.newton.finite_newton.finite_newton`
    (active-row Hessian updated by the rows that change, exact line search). Other
    input takes one distributed pass per step (Newton–Armijo with the
    :class:`~bigkern.solvers.newton.smooth_losses.SquaredHinge`, each chunk's Hessian summed
    over its active rows). ``labels`` are 0/1 codes (numpy) and ``chunked()`` makes
    the ``(X, ±1 labels, mask)`` dask arrays of the distributed fit. Returns the
    :class:`~bigkern.solvers.newton.smooth_svm.NewtonResult`, the row counts and what the
    fit report adds (``solver``, ``warm_start_iterations``).
    """
    if not isinstance(labels, np.ndarray) or not kernel_rows_fit_in_memory(
            X, mask, X.shape[0], basis.n_basis):
        return newton_fit(est, chunked, basis, SquaredHinge())
    A, y, _, counts = augmented_kernel_rows(X, np.where(labels == 1, 1.0, -1.0), basis,
                                                 numpy_mask(mask))
    n, dim = A.shape
    # a tenth of the rows (at least twice the unknowns), drawn with the draw's seed: its
    # solution lies close to the full one, so the full fit needs fewer of its costly steps
    # (Ã's own rows, as a start, save none). A small problem's steps cost less than the
    # start's own: below WARM_START_FLOPS none is made
    size = max(2 * dim, n // 10)
    u0, warm = None, 0
    if size < n and n * dim * dim >= WARM_START_FLOPS:
        rows = np.sort(np.random.default_rng(rs.seed).choice(n, size, replace=False))
        start = subset_warm_start(A, y, rows, C=float(est.C),
                                  hessian_dtype=np.dtype(est.hessian))
        u0, warm = start.u, start.iterations
    res = finite_newton(A, y, C=float(est.C), u0=u0, tol=float(est.tol),
                        max_iter=int(est.max_iter), hessian_dtype=np.dtype(est.hessian))
    _warn_unconverged(est, res)
    # the data is read twice: to draw Ã, and once into the kernel rows
    return res, counts, {"solver": "finite newton, in memory", "reads": 2,
                         "warm_start_rows": size if u0 is not None else 0,
                         "warm_start_iterations": warm}


def fit_report(est: Any, rs: Any, res: Any, counts: dict[str, int], n_basis: int, t0: float,
               t_draw: float, extra: dict[str, Any] | None = None, *,
               clipped: dict[str, int] | None = None) -> dict[str, Any]:
    """The ``fit_report_`` of a reduced Newton fit (see :class:`ReducedSVC`); ``clipped`` is
    :func:`reduced_basis`'s count of clipped values in Ã per feature; ``extra`` adds or
    replaces entries."""
    names = getattr(est, "feature_names_in_", None)
    names = [f"f{i}" for i in range(est.n_features_in_)] if names is None else list(names)
    attrs = {k: v for k, v in int_counts(counts).items()
             if not k.startswith("n_first") and (k != "n_masked" or v)}
    return {
        **without_per_feature(attrs),
        "n_nonfinite_by_feature": per_feature_counts(attrs, names),
        "first_nonfinite": int(counts.get("first_nonfinite", -1)),
        "n_basis": n_basis,
        "n_duplicates": rs.n_duplicates,
        "n_clipped_in_reduced_set_by_feature": dict(clipped or {}),
        "drawn_per_class": None if rs.drawn_per_class is None else
        [int(c) for c in rs.drawn_per_class],
        "iterations": res.iterations,
        "passes": res.passes,
        "reads": res.passes + 1,
        "centers": getattr(rs, "centers", "uniform"),
        "reads_reduced_set": getattr(rs, "reads", 1),
        "backtracked": res.backtracked,
        "steps": list(res.steps),
        "refined_at": res.refined_at,
        "grad_norm": res.grad_norm,
        "grad_norm0": res.grad_norm0,
        "converged": res.converged,
        "message": res.message,
        "objective": res.objective,
        "seconds_reduced_set": t_draw,
        "seconds_total": time.perf_counter() - t0,
        **(extra or {}),
    }
