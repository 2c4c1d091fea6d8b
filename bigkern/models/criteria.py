"""Selection criteria that need no held-out pass: a support radius, Mallows' Cp, noise.

:func:`choose_support_radius` and :func:`distance_quantile` pick the support
radius of a compactly supported kernel (Zhang, Genton & Liu); :func:`mallows_cp`,
:func:`difference_noise_variance` and :func:`grid_argmin` choose the periodic
kernel ridge's width and penalty from the fitted sums alone. Held-out scoring
passes are in :mod:`bigkern.jobs.tuning`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import xarray as xr

__all__ = [
    "choose_support_radius",
    "difference_noise_variance",
    "distance_quantile",
    "grid_argmin",
    "mallows_cp",
]


def choose_support_radius(
    curves: xr.Dataset, *, gamma: float | None = None, mu: float | None = None,
    tau: float | None = None,
) -> float:
    """Support radius ``C`` by one of Zhang, Genton & Liu's three rules (eqs. 8–10).

    Give exactly one of:

    - ``gamma``: maximize ``A(C) + γ S(C)`` (ties: the smallest ``C``);
    - ``mu``: maximize ``S(C)`` subject to ``A(C) ≥ μ`` (the smallest such ``C``);
    - ``tau``: maximize ``A(C)`` subject to ``S(C) ≥ τ`` (the largest such ``C``).

    Parameters
    ----------
    curves : xarray.Dataset
        :func:`~bigkern.reduce.alignment_sparsity` output over a grid of ``C``.

    Raises
    ------
    ValueError
        When no ``C`` of the grid meets the constraint (the message gives the
        best reached), or not exactly one rule is given.

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern import Gaussian, alignment_sparsity, choose_support_radius
    >>> X = np.random.default_rng(0).normal(size=(200, 2))
    >>> curves = alignment_sparsity(X, Gaussian(omega=1.0), radii=[0.5, 1.0, 2.0, 4.0])
    >>> choose_support_radius(curves, tau=0.5)  # best alignment with at least 50% zeros
    1.0
    >>> choose_support_radius(curves, mu=0.9)  # sparsest with alignment at least 0.9
    4.0
    >>> choose_support_radius(curves, mu=0.99999)
    Traceback (most recent call last):
        ...
    ValueError: no C of the grid reaches alignment mu=0.99999: ...
    """
    given = {k: v for k, v in {"gamma": gamma, "mu": mu, "tau": tau}.items() if v is not None}
    if len(given) != 1:
        raise ValueError(f"give exactly one of gamma, mu, tau; got {sorted(given) or 'none'}")
    curves = curves.sortby("radius")
    radii = curves["radius"].values
    align = curves["alignment"].values
    sparse = curves["sparsity"].values
    if gamma is not None:
        if not gamma > 0:
            raise ValueError(f"gamma must be positive; got {gamma!r}")
        return float(radii[int(np.argmax(align + gamma * sparse))])
    if mu is not None:
        ok = np.flatnonzero(align >= mu)
        if not len(ok):
            raise ValueError(f"no C of the grid reaches alignment mu={mu}: the largest C "
                             f"({radii[-1]:g}) gives A={align[-1]:.4f}; extend the grid upwards")
        return float(radii[ok[np.argmax(sparse[ok])]])
    ok = np.flatnonzero(sparse >= tau)
    if not len(ok):
        raise ValueError(f"no C of the grid reaches sparsity tau={tau}: the smallest C "
                         f"({radii[0]:g}) gives S={sparse[0]:.4f}; extend the grid downwards")
    best = ok[align[ok] == align[ok].max()]
    return float(radii[best[-1]])


def distance_quantile(
    X: Any, q: float | Sequence[float], *, n_rows: int = 2000, seed: int = 0
) -> np.ndarray:
    """Quantiles of the pairwise distances ``‖x_i − x_j‖`` over all n² ordered pairs.

    The shortcut of rule (10): ``C = distance_quantile(X, 1 − τ)`` leaves about
    a fraction ``τ`` of the Gram matrix zero. With more than ``n_rows`` rows,
    the distances are those among a uniform, chunking-independent sample of
    ``n_rows`` rows (:func:`~bigkern.reduce.sampling.sample_rows`, ``n_rows²`` pairs
    including the diagonal, as in the n² of ``S(C)``); otherwise all pairs.

    Returns
    -------
    numpy.ndarray
        One distance per probability in ``q`` (a 0-d array for a scalar ``q``).

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern import distance_quantile
    >>> X = np.random.default_rng(0).normal(size=(300, 2))
    >>> np.round(distance_quantile(X, [0.1, 0.5, 0.9]), 2)
    array([0.64, 1.65, 3.01])
    >>> radius = distance_quantile(X, 1 - 0.7)  # rule (10): about 70% of K_C zero
    >>> radius.shape, round(float(radius), 2)
    ((), 1.18)
    """
    from bigkern.kernels import pairwise_distances, row_blocks
    from bigkern.reduce.passes import require_finite_rows
    from bigkern.reduce.sampling import sample_rows

    probs = np.asarray(q, dtype=np.float64)
    if not np.all((probs >= 0) & (probs <= 1)):
        raise ValueError(f"quantile probabilities must be in [0, 1]; got {q!r}")
    n = int(X.shape[0])
    if n > n_rows or not isinstance(X, np.ndarray):
        X, _, _ = sample_rows(X, n=min(n, n_rows), seed=seed)
    X = require_finite_rows(X, "X", "a distance quantile")
    distances = np.concatenate([pairwise_distances(X[sl], X).ravel()
                                for sl in row_blocks(len(X), 512)])
    return np.quantile(distances, probs)


# ---------------------------------------------------------------------------------------------
# Mallows' Cp for linear smoothers (Shi & Yu §5.1)
# ---------------------------------------------------------------------------------------------
def mallows_cp(
    residual_ss: np.typing.ArrayLike, trace_hat: np.typing.ArrayLike, n: int, sigma2: float
) -> np.ndarray:
    """Mallows' Cp of a linear smoother ``ŷ = S y``, on the risk scale.

    Shi & Yu (§5.1) choose (ω, λ_B) at "the minimal point of Mallows' C_p"
    (Mallows 1973) without writing it out; for a linear smoother this is::

        Cp = ‖y − S y‖² / n + 2 σ² trace(S) / n,

    an unbiased estimate of ``E‖S y − f‖²/n + σ²`` for any (also non-symmetric,
    e.g. binned) ``S`` when ``σ²`` is the noise variance. Mallows' own form
    ``RSS/σ² − n + 2 trace(S)`` is ``n/σ² · Cp − 2n`` here: the same minimiser.

    Parameters
    ----------
    residual_ss : array_like
        Residual sums of squares ``‖y − S y‖²`` (any shape, e.g. one per grid point).
    trace_hat : array_like
        ``trace(S)`` (degrees of freedom), broadcastable with ``residual_ss``.
    n : int
        Number of observations the residuals are summed over.
    sigma2 : float
        Noise variance σ²: the known one, or an estimate such as
        :func:`difference_noise_variance`.

    Returns
    -------
    numpy.ndarray
        Cp values, broadcast shape of the inputs.

    Examples
    --------
    Three smoothers, each fitting closer at the price of more degrees of freedom:

    >>> import numpy as np
    >>> from bigkern import mallows_cp
    >>> rss = np.array([10.0, 8.0, 7.5])
    >>> df = np.array([2.0, 6.0, 12.0])
    >>> cp = mallows_cp(rss, df, n=100, sigma2=0.5)  # (RSS + 2 σ² trace) / n
    >>> cp, int(np.argmin(cp))
    (array([0.12 , 0.14 , 0.195]), 0)
    """
    if int(n) != n or n < 1:
        raise ValueError(f"n must be a positive integer; got {n!r}")
    s2 = float(sigma2)
    if not (np.isfinite(s2) and s2 >= 0):
        raise ValueError(f"sigma2 must be finite and >= 0; got {sigma2!r}")
    rss = np.asarray(residual_ss, dtype=np.float64)
    df = np.asarray(trace_hat, dtype=np.float64)
    return (rss + 2.0 * s2 * df) / int(n)


def difference_noise_variance(x: np.typing.ArrayLike, y: np.typing.ArrayLike, *,
                              period: float | None = 1.0) -> float:
    """Noise variance from successive differences (Rice 1984): ``Σ (y_(i+1) − y_(i))² / (2 k)``.

    The ``y`` are ordered by ``x``; with a ``period`` the last point is also
    differenced with the first (``k = n`` differences), otherwise ``k = n − 1``.
    Model-free and nearly unbiased for a smooth regression function.

    Parameters
    ----------
    x, y : array_like, shape (n,)
        Design points and responses (n ≥ 2).
    period : float or None, default 1.0
        Period of ``x`` (``None``: not periodic).

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern import difference_noise_variance
    >>> rng = np.random.default_rng(0)
    >>> x = rng.uniform(0, 1, 400)
    >>> y = np.sin(2 * np.pi * x) + 0.1 * rng.standard_normal(400)  # noise variance 0.01
    >>> round(difference_noise_variance(x, y), 3)
    0.011
    """
    x = np.asarray(x, dtype=np.float64).reshape(-1)
    y = np.asarray(y, dtype=np.float64).reshape(-1)
    if len(x) != len(y) or len(y) < 2:
        raise ValueError(f"x and y need the same length >= 2; got {len(x)} and {len(y)}")
    ys = y[np.argsort(x, kind="stable")]
    diffs = np.diff(ys)
    if period is not None:
        diffs = np.append(diffs, ys[0] - ys[-1])
    return float(np.sum(diffs**2) / (2.0 * len(diffs)))


def grid_argmin(scores: np.typing.ArrayLike) -> tuple[int, ...]:
    """Index of the smallest score of a grid; ties go to the first in C order; NaN never wins."""
    s = np.asarray(scores, dtype=np.float64)
    if s.size == 0 or not np.isfinite(s).any():
        raise ValueError("no finite score on the grid")
    flat = np.where(np.isfinite(s), s, np.inf).ravel()
    return tuple(int(i) for i in np.unravel_index(int(np.argmin(flat)), s.shape))

