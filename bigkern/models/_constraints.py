"""The domains of the estimators' parameters, declared as scikit-learn declares its own.

Every public estimator lists each constructor parameter in its
``_parameter_constraints`` (scikit-learn's :mod:`sklearn.utils._param_validation`
vocabulary), built from the pieces below, and its ``fit`` validates them first
(``sklearn.base._fit_context``): a value outside its domain raises scikit-learn's
``InvalidParameterError`` (a ``ValueError``) naming the parameter, the estimator
and the domain, before any data is read. ``bigkern fit --param`` reads the same
declarations (:mod:`bigkern.cli.checks`).

What a declaration cannot say stays a check in ``fit``: each value of a list of
candidates (:func:`positive_candidates`), rules between two parameters, and bounds
set by the data (a reduced set no larger than the rows, ``n_bins`` at most ``n``).
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from bigkern.kernels import KERNELS, Kernel
from bigkern.solvers.checks import check_ridges

__all__ = ["COUNT", "FRACTION", "KERNEL", "NON_NEGATIVE", "POSITIVE", "REDUCED_SET_SIZE",
           "positive_candidates"]

POSITIVE = Interval(Real, 0, None, closed="neither")
"""A positive finite real, (0, ∞): a Gaussian width ω, a penalty C or λ, a tolerance."""

NON_NEGATIVE = Interval(Real, 0, None, closed="left")
"""A non-negative finite real, [0, ∞): the SVR's ε, a noise variance σ²."""

FRACTION = Interval(Real, 0, 1, closed="right")
"""A fraction of the rows, (0, 1]."""

COUNT = Interval(Integral, 1, None, closed="left")
"""A positive integer: iterations, bins, components, centers of a basis."""

REDUCED_SET_SIZE = Interval(Integral, 2, None, closed="left")
"""Centers of a reduced set: at least 2 (at most the usable rows, checked by ``fit``)."""

KERNEL = [StrOptions(set(KERNELS)), Kernel, type]
"""A kernel: a name of :data:`bigkern.kernels.KERNELS`, a :class:`~bigkern.kernels.Kernel`
or a subclass of it (checked by :func:`bigkern.kernels.as_kernel` in ``fit``)."""


def positive_candidates(name: str, value: Any) -> tuple[float, ...]:
    """``value`` (one number or a sequence of candidates) as a tuple of positive floats.

    Its type is declared (``[POSITIVE, "array-like"]``); what a declaration cannot
    say is checked here: a sequence is non-empty, 1-D, and each of its values is a
    positive finite number.

    Raises
    ------
    ValueError
        Naming the parameter and its first bad entry (``omega[1] = -1.0``).
    """
    return tuple(float(v) for v in check_ridges(np.asarray(value, dtype=np.float64), name))
