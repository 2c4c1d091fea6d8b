"""One table of the estimators' parameters: each one's meaning, values and command-line limits.

:data:`PARAMETERS` names every constructor parameter of a public estimator once,
with the meaning it has in every estimator that takes it
(``tests/models/test_vocabulary.py`` checks every signature against it). For a
number it also gives, in one place:

- its **domain** (:class:`Domain`): the values every estimator that takes it
  accepts, from which each estimator's ``_parameter_constraints`` entry is built
  (:func:`bigkern.models._constraints.domain`), and which a saved model is
  checked against when it is loaded;
- its **command limits**: the narrower magnitudes ``bigkern fit --param`` takes,
  those that mean something at double precision in standardized feature units (a
  width beyond [1e-6, 1e6] makes every kernel value 0 or 1; penalties beyond
  [1e-12, 1e12] are numerically 0 or ∞), with the phrase its messages use.

Where scikit-learn uses the same name, the meaning is the same; :data:`AVOIDED`
lists the scikit-learn names bigkern does not use because its concept differs,
and what bigkern calls it instead.

A hyper-parameter a model searches takes one value or a sequence of candidates
under the same name (``omega=[0.5, 1, 2]``); the model says how it chooses
(cross-validation, leave-one-out, Mallows' Cp) and keeps its choice as ``omega_``,
``lam_``.

The Gaussian kernel everywhere is ``k(x, z) = exp(−‖x − z‖² / (2ω²))``:
``omega`` is a width in the units of the (usually standardized) features, and
scikit-learn's ``gamma`` is ``1 / (2ω²)`` (:func:`bigkern.kernels.omega_to_gamma`).
The one exception in scale is :class:`~bigkern.models.PeriodicKernelRidge`,
whose ``omega`` is Shi & Yu's width on the unit circle.

Examples
--------
>>> from bigkern.models.parameters import AVOIDED, PARAMETERS
>>> PARAMETERS["tau"].meaning
'target sparsity τ of a compact kernel’s Gram matrix, used when radius is None'
>>> PARAMETERS["omega"].domain, PARAMETERS["omega"].command
(Domain(kind='real', low=1e-100, high=1e+100, closed='both'), (1e-06, 1000000.0))
>>> 0.0 in PARAMETERS["omega"].domain, 2.0 in PARAMETERS["omega"].domain
(False, True)
>>> AVOIDED["gamma"]
'omega (gamma = 1 / (2 omega²))'
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

__all__ = ["AVOIDED", "MAX_SEED", "PARAMETERS", "Domain", "Parameter"]

#: The largest seed (numpy's legacy seeds are 32-bit; every seed up to it is valid for every
#: generator bigkern uses).
MAX_SEED = 2**32 - 1


@dataclass(frozen=True)
class Domain:
    """The values one number may take: a real or whole number between two bounds.

    ``closed`` says which bounds belong to it, as scikit-learn's ``Interval``
    (``"neither"``, ``"left"``, ``"right"``, ``"both"``); ``high=None`` is no upper
    bound. A number outside it is refused by ``fit`` before any data are read.
    """

    kind: Literal["real", "integer"]
    low: float
    high: float | None = None
    closed: Literal["neither", "left", "right", "both"] = "neither"

    def __contains__(self, x: object) -> bool:
        if isinstance(x, bool) or not isinstance(x, int | float):
            return False
        if self.kind == "integer" and not float(x).is_integer():
            return False
        if not math.isfinite(x):
            return False
        above = x >= self.low if self.closed in ("left", "both") else x > self.low
        high = math.inf if self.high is None else self.high
        below = x <= high if self.closed in ("right", "both") else x < high
        return above and below

    def __str__(self) -> str:
        left = "[" if self.closed in ("left", "both") else "("
        right = "]" if self.closed in ("right", "both") else ")"
        high = "∞" if self.high is None else f"{self.high:g}"
        kind = "whole numbers" if self.kind == "integer" else "reals"
        return f"{kind} in {left}{self.low:g}, {high}{right}"


@dataclass(frozen=True)
class Parameter:
    """One constructor parameter: its meaning and, for a number, its domain and command limits.

    Attributes
    ----------
    meaning : str
        What it is, the same in every estimator that takes it.
    domain : Domain or None
        The values the estimators take (None: not a number).
    command : tuple of (float or None, float or None), or None
        The smallest and largest value ``bigkern fit --param`` takes (None: the domain's
        bound); None: the domain itself.
    what : str
        A short phrase for the command's messages ("a kernel width …").
    """

    meaning: str
    domain: Domain | None = None
    command: tuple[float | None, float | None] | None = None
    what: str = ""


_POSITIVE = Domain("real", 0.0)
_NON_NEGATIVE = Domain("real", 0.0, closed="left")
_COUNT = Domain("integer", 1, closed="left")

PARAMETERS: dict[str, Parameter] = {
    # the kernel
    "omega": Parameter(
        "kernel width ω (the Gaussian’s exp(−‖x − z‖² / (2ω²))), in feature units; or "
        "candidates", Domain("real", 1e-100, 1e100, "both"), (1e-6, 1e6),
        "a kernel width in standardized feature units"),
    "radius": Parameter("support radius of a compactly supported kernel (the paper’s C), in "
                        "feature units; None: chosen from tau", _POSITIVE),
    "tau": Parameter("target sparsity τ of a compact kernel’s Gram matrix, used when radius is "
                     "None", Domain("real", 0.0, 1.0)),
    "taper_power": Parameter("power ν of the compact kernel’s taper (1 − r/radius)₊^ν; None: "
                             "the smallest positive definite one, ⌈(d + 1)/2⌉", _COUNT),
    "kernel": Parameter("which kernel function: 'gaussian', 'laplacian', 'matern32', "
                        "'matern52' or a bigkern.kernels.Kernel, of width omega (as "
                        "scikit-learn’s kernel)"),
    "approximation": Parameter("how a kernel is computed: 'exact', or an approximation named "
                               "by its paper ('wrapped': Shi & Yu’s G^J)"),
    "n_wraps": Parameter("wraps J of Shi & Yu’s wrapped periodic kernel G^J", _COUNT),
    "wrap": Parameter("take x mod 1 instead of refusing x outside [0, 1)"),
    # the penalty
    "C": Parameter("SVM penalty: the weight of the data-fit term (as scikit-learn’s C); each "
                   "model documents what it multiplies", _POSITIVE, (1e-12, 1e12),
                   "an SVM cost"),
    "lam": Parameter("ridge penalty λ on the function (each model documents its scale); or "
                     "candidates", _POSITIVE, (1e-15, 1e12), "a ridge penalty"),
    "penalty": Parameter("the regularizer: 'rkhs' (cᵀKc, the function’s RKHS norm) or 'coef' "
                         "(‖c‖²)"),
    "epsilon": Parameter("half-width ε of the SVR’s insensitive tube (as scikit-learn’s "
                         "epsilon)", _NON_NEGATIVE, (None, 1e12),
                         "the width of the SVR's insensitive tube"),
    "loss": Parameter("the data term’s loss ('squared_hinge' as scikit-learn’s LinearSVC; "
                      "'smooth_hinge' Lee & Huang’s smoothed one)"),
    "smoothing": Parameter("smoothing α of the smooth plus function p(z, α) → (z)₊ as α → ∞ "
                           "(Lee & Huang)", _POSITIVE, (1e-12, 1e12),
                           "the smoothing α of the smooth SVM's plus function"),
    "eta": Parameter("bound η of the orthogonal-hard-thresholding stable set (Hagiwara)",
                     _POSITIVE),
    "sigma2": Parameter("noise variance σ² for Mallows’ Cp; None: estimated", _NON_NEGATIVE),
    # the data
    "standardize": Parameter("robust standardization of the features (median, 10%/90% "
                             "quantiles; clipped to ±5 robust σ in the reduced-kernel models)"),
    "quantiles": Parameter("percentile bins per feature (Shi & Yu)"),
    "n_bins": Parameter("equal-width bins of the input", _COUNT),
    "weighted": Parameter("weight each bin by its count"),
    "bin_target": Parameter("a bin’s target: 'fuzzy' (its share of positives) or 'majority' "
                            "(its majority label, the bin counted once)"),
    "size": Parameter("centers of the reduced set or basis (Lee & Huang’s m̃; None: the "
                      "model’s default)", Domain("integer", 2, closed="left"),
                      (None, 2**31 - 1), "a number of centers"),
    "fraction": Parameter("centers of the reduced set as a fraction of the rows",
                          Domain("real", 0.0, 1.0, "right"), None, "a fraction of the rows"),
    "stratified": Parameter("draw the reduced set per class"),
    "centers": Parameter("how the reduced set is drawn: 'uniform' or 'leverage' (in proportion "
                         "to approximate ridge leverage scores)"),
    # the solver
    "method": Parameter("which algorithm of the paper (named as there)"),
    "solver": Parameter("which linear solver (as scikit-learn’s solver)"),
    "tol": Parameter("convergence tolerance (as scikit-learn’s tol)", _POSITIVE, (1e-300, 1.0),
                     "a convergence tolerance"),
    "max_iter": Parameter("iteration limit (as scikit-learn’s max_iter)", _COUNT,
                          (None, 10**6), "a number of iterations"),
    "cg_start": Parameter("where conjugate gradients start: a subset's solution or zero"),
    "hessian": Parameter("precision of the Newton Hessian’s products ('float64' or "
                         "'float32')"),
    "precision": Parameter("floating-point precision of the solve ('double', 'extended' or "
                           "'auto')"),
    "dps": Parameter("decimal digits of extended precision", _COUNT),
    "n_folds": Parameter("folds of the estimator’s own cross-validation",
                         Domain("integer", 2, closed="left"), (None, 1000),
                         "a number of cross-validation folds"),
    "fit_intercept": Parameter("fit an unpenalized intercept (as scikit-learn’s "
                               "fit_intercept)"),
    "n_components": Parameter("number of components kept (as scikit-learn’s n_components)",
                              _COUNT),
    "calibration": Parameter("how a classifier’s probabilities are calibrated on rows held out "
                             "of its fit: None (no predict_proba), 'sigmoid' or 'isotonic' (as "
                             "scikit-learn’s CalibratedClassifierCV method)"),
    "random_state": Parameter("seed of every random draw (as scikit-learn’s random_state)",
                              Domain("integer", 0, MAX_SEED, "both"), None, "a seed"),
}
"""Every constructor parameter of a public estimator: its meaning, domain and command limits."""

AVOIDED: dict[str, str] = {
    "gamma": "omega (gamma = 1 / (2 omega²))",
    "sigma": "omega",
    "widths": "omega (one name for one width or candidates)",
    "omegas": "omega (one name for one width or candidates)",
    "lams": "lam (one name for one penalty or candidates)",
    "ridges": "lam",
    "grid": "the parameter itself, given candidates",
    "basis": "size",
    "alpha": "lam (a ridge penalty) or smoothing (Lee & Huang’s α)",
    "nu": "taper_power (NuSVC’s nu is a fraction of support vectors)",
}
"""Names no estimator takes (scikit-learn's meaning differs, or a second name for one
concept), with bigkern's name for what they might be mistaken for."""
