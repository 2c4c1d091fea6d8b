"""One name and one meaning per parameter, across every bigkern estimator.

:data:`PARAMETERS` is the glossary: each constructor parameter of a public
estimator is named here once, with the meaning it has in every estimator that
takes it (``tests/models/test_vocabulary.py`` checks every signature against it).
Where scikit-learn uses the same name, the meaning is the same;
:data:`AVOIDED` lists the scikit-learn names bigkern does not use because its
concept differs, and what bigkern calls it instead.

The Gaussian kernel everywhere is ``k(x, z) = exp(−‖x − z‖² / (2ω²))``:
``omega`` is a width in the units of the (usually standardized) features, and
scikit-learn's ``gamma`` is ``1 / (2ω²)`` (:func:`bigkern.kernels.omega_to_gamma`).
The one exception in scale is :class:`~bigkern.models.PeriodicKernelRidge`,
whose ``omega`` is Shi & Yu's width on the unit circle.

Examples
--------
>>> from bigkern.models.vocabulary import PARAMETERS, AVOIDED
>>> PARAMETERS["tau"]
'target sparsity τ of a compact kernel’s Gram matrix, used when radius is None'
>>> AVOIDED["gamma"]
'omega (gamma = 1 / (2 omega²))'
"""

from __future__ import annotations

__all__ = ["AVOIDED", "PARAMETERS"]

PARAMETERS: dict[str, str] = {
    # the kernel
    "omega": "kernel width ω (the Gaussian’s exp(−‖x − z‖² / (2ω²))), in feature units",
    "omegas": "candidate kernel widths ω, one chosen by cross-validation",
    "radius": "support radius of a compactly supported kernel (the paper’s C), in feature "
              "units; None: chosen from tau",
    "tau": "target sparsity τ of a compact kernel’s Gram matrix, used when radius is None",
    "taper_power": "power ν of the compact kernel’s taper (1 − r/radius)₊^ν; None: the "
                   "smallest positive definite one, ⌈(d + 1)/2⌉",
    "kernel": "which kernel function: 'gaussian', 'laplacian', 'matern32', 'matern52' or a "
              "bigkern.kernels.Kernel, of width omega (as scikit-learn’s kernel)",
    "n_wraps": "wraps J of Shi & Yu’s wrapped periodic kernel G^J",
    "wrap": "take x mod 1 instead of refusing x outside [0, 1)",
    # the penalty
    "C": "SVM penalty: the weight of the data-fit term (as scikit-learn’s C); each model "
         "documents what it multiplies",
    "lam": "ridge penalty λ on the function (each model documents its scale)",
    "lams": "candidate ridge penalties λ, one chosen by leave-one-out",
    "penalty": "the regularizer: 'rkhs' (cᵀKc, the function’s RKHS norm) or 'coef' (‖c‖²)",
    "epsilon": "half-width ε of the SVR’s insensitive tube (as scikit-learn’s epsilon)",
    "loss": "the data term’s loss ('squared_hinge' as scikit-learn’s LinearSVC; "
            "'smooth_hinge' Lee & Huang’s smoothed one)",
    "smoothing": "smoothing α of the smooth plus function p(z, α) → (z)₊ as α → ∞ (Lee & "
                 "Huang)",
    "eta": "bound η of the orthogonal-hard-thresholding stable set (Hagiwara)",
    "sigma2": "noise variance σ² for Mallows’ Cp; None: estimated",
    "grid": "candidate parameter values ({name: values}) searched by the estimator itself",
    # the data
    "standardize": "robust standardization of the features (median, 10%/90% quantiles; "
                   "clipped to ±5 robust σ in the reduced-kernel models)",
    "quantiles": "percentile bins per feature (Shi & Yu)",
    "n_bins": "equal-width bins of the input",
    "weighted": "weight each bin by its count",
    "bin_target": "a bin’s target: 'fuzzy' (its share of positives) or 'majority' (its "
                  "majority label, the bin counted once)",
    "size": "centers of the reduced set (Lee & Huang’s m̃)",
    "fraction": "centers of the reduced set as a fraction of the rows",
    "stratified": "draw the reduced set per class",
    "basis": "rows drawn as the Gaussian basis (None: all rows)",
    # the solver
    "method": "which algorithm of the paper (named as there)",
    "solver": "which linear solver (as scikit-learn’s solver)",
    "tol": "convergence tolerance (as scikit-learn’s tol)",
    "max_iter": "iteration limit (as scikit-learn’s max_iter)",
    "cg_start": "where conjugate gradients start: a subset's solution or zero",
    "hessian": "precision of the Newton Hessian’s products ('float64' or 'float32')",
    "precision": "floating-point precision of the solve ('double', 'extended' or 'auto')",
    "dps": "decimal digits of extended precision",
    "n_folds": "folds of the estimator’s own cross-validation",
    "fit_intercept": "fit an unpenalized intercept (as scikit-learn’s fit_intercept)",
    "n_components": "number of components kept (as scikit-learn’s n_components)",
    "random_state": "seed of every random draw (as scikit-learn’s random_state)",
}
"""Every constructor parameter of a public estimator, with its one meaning."""

AVOIDED: dict[str, str] = {
    "gamma": "omega (gamma = 1 / (2 omega²))",
    "sigma": "omega",
    "widths": "omegas",
    "ridges": "lams",
    "alpha": "lam (a ridge penalty) or smoothing (Lee & Huang’s α)",
    "nu": "taper_power (NuSVC’s nu is a fraction of support vectors)",
}
"""Names no estimator takes (scikit-learn's meaning differs, or a second name for one
concept), with bigkern's name for what they might be mistaken for."""
