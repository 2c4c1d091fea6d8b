"""The domains of the estimators' parameters, declared as scikit-learn declares its own.

Every public estimator lists each constructor parameter in its
``_parameter_constraints`` (scikit-learn's :mod:`sklearn.utils._param_validation`
vocabulary), and its ``fit`` validates them first (``sklearn.base._fit_context``): a
value outside its domain raises scikit-learn's ``InvalidParameterError`` (a
``ValueError``) naming the parameter, the estimator and the domain, before any data
is read. A number's domain is written once, in :data:`bigkern.models.parameters.PARAMETERS`;
:func:`domain` turns it into the declaration (tests/models/test_vocabulary.py checks
every estimator declares it so). ``bigkern fit --param`` reads the same declarations
(:mod:`bigkern.cli.checks`).

What a declaration cannot say stays a check in ``fit``: each value of a list of
candidates (:func:`candidates`), rules between two parameters, and bounds set by the
data (a reduced set no larger than the rows, ``n_bins`` at most ``n``).
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from bigkern.kernels import KERNELS, Kernel
from bigkern.models.parameters import PARAMETERS

__all__ = ["KERNEL", "candidates", "domain"]

KERNEL = [StrOptions(set(KERNELS)), Kernel, type]
"""A kernel: a name of :data:`bigkern.kernels.KERNELS`, a :class:`~bigkern.kernels.Kernel`
or a subclass of it (checked by :func:`bigkern.kernels.as_kernel` in ``fit``)."""


def domain(name: str) -> Interval:
    """The declared domain of the number ``name``: its row of the parameter table.

    Examples
    --------
    >>> domain("tau")
    Interval(Real, 0.0, 1.0, closed='neither')
    """
    d = PARAMETERS[name].domain
    if d is None:
        raise KeyError(f"{name} is not a number in bigkern.models.parameters.PARAMETERS")
    return Interval(Integral if d.kind == "integer" else Real, d.low, d.high, closed=d.closed)


def candidates(name: str, value: Any) -> tuple[float, ...]:
    """``value`` (one number or a sequence of candidates) as a tuple of floats in its domain.

    Its type is declared (``[domain(name), "array-like"]``); what a declaration cannot
    say is checked here: a sequence is non-empty and 1-D, and each of its values is in
    ``name``'s domain.

    Raises
    ------
    ValueError
        Naming the parameter and its first bad entry (``omega[1] = -1.0``).

    Examples
    --------
    >>> candidates("omega", [0.5, 2])
    (0.5, 2.0)
    """
    values = np.atleast_1d(np.asarray(value, dtype=np.float64))
    if values.ndim != 1 or values.size == 0:
        raise ValueError(f"{name} must be one number or a non-empty 1-D sequence of "
                         f"candidates; got shape {values.shape}")
    allowed = PARAMETERS[name].domain
    for i, v in enumerate(values.tolist()):
        if v not in allowed:
            raise ValueError(f"{name} must hold {allowed}; {name}[{i}] = {v!r}")
    return tuple(values.tolist())
