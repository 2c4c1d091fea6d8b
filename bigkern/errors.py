"""Exception and warning types that bigkern users catch.

Every error raised for bad input names *what* is wrong and *where* (variable,
scene, feature), so that a batch job's log is enough to fix the input.
"""

from __future__ import annotations

__all__ = [
    "BigkernError",
    "BigkernWarning",
    "ClusterError",
    "DataQualityError",
    "DoublePrecisionWarning",
    "ExtendedPrecisionWarning",
    "IllConditionedWarning",
    "LabelError",
    "MissingExtraError",
    "NoResidualDegreesOfFreedomError",
    "StoreError",
    "UnknownSettingError",
]


class BigkernError(Exception):
    """Base class of every error raised by bigkern.

    Examples
    --------
    Catching it catches each of bigkern's errors, here a misspelt setting:

    >>> import bigkern
    >>> try:
    ...     bigkern.config.set(chunk_byte=10**8)  # meant chunk_bytes
    ... except bigkern.BigkernError as err:
    ...     print(type(err).__name__)
    UnknownSettingError
    """


class StoreError(BigkernError, ValueError):
    """A scene store is unusable: missing, empty, wrong dims or a feature absent.

    Examples
    --------
    >>> import tempfile
    >>> import bigkern
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     bigkern.open_scenes(f"{tmp}/missing.zarr")
    Traceback (most recent call last):
        ...
    bigkern.errors.StoreError: no scene store at .../missing.zarr: the path does not exist
    >>> issubclass(bigkern.StoreError, (bigkern.BigkernError, ValueError))
    True
    """


class LabelError(BigkernError, ValueError):
    """Labels are unusable: values that are no class, one class only, mismatched length.

    Examples
    --------
    >>> import bigkern
    >>> from bigkern.datasets import make_scenes
    >>> ds = make_scenes(1, (8, 8), radiances=False).compute()
    >>> ds["label"][0, 0, 0] = 2
    >>> bigkern.validate_scenes(ds)
    Traceback (most recent call last):
        ...
    bigkern.errors.LabelError: variable 'label' in the scene dataset has 1 value(s) outside ...
    """


class DataQualityError(BigkernError, ValueError):
    """Data are present but too damaged to fit on (e.g. a non-finite rate over the limit).

    Examples
    --------
    An in-memory classifier refuses a NaN, naming where it is:

    >>> import numpy as np
    >>> from bigkern import DataQualityError, KernelRidgeClassifier
    >>> X = np.random.default_rng(0).normal(size=(20, 2))
    >>> X[3, 1] = np.nan
    >>> try:
    ...     KernelRidgeClassifier().fit(X, np.arange(20) % 2)
    ... except DataQualityError as err:
    ...     print(err)
    Input X contains NaN: X in fit has 1 non-finite value(s) (NaN or ±inf); first at row 3, ...
    """


class NoResidualDegreesOfFreedomError(BigkernError, ValueError):
    """OHT's stable set has ``l ≥ n`` components: the noise variance (21) is undefined.

    Examples
    --------
    A width so narrow that the basis interpolates the data:

    >>> import numpy as np
    >>> from bigkern import OHTRegressor
    >>> x = np.linspace(0, 1, 12)[:, None]
    >>> OHTRegressor(omega=[0.01]).fit(x, np.sin(6 * x[:, 0]))
    Traceback (most recent call last):
        ...
    bigkern.errors.NoResidualDegreesOfFreedomError: at width 0.01 the stable set has ...
    """


class UnknownSettingError(BigkernError, KeyError, ValueError):
    """A bigkern setting that does not exist (a typo): the message names the closest ones.

    Examples
    --------
    >>> import bigkern
    >>> try:
    ...     bigkern.config.set(chunk_byte=10**8)
    ... except bigkern.UnknownSettingError as err:
    ...     print(err)
    unknown bigkern setting 'chunk_byte'; did you mean 'chunk_bytes'?
    >>> issubclass(bigkern.UnknownSettingError, (bigkern.BigkernError, KeyError))
    True
    """

    def __str__(self) -> str:
        # KeyError would print the message in quotes, as if it were the missing key
        return str(self.args[0]) if self.args else ""


class ClusterError(BigkernError, RuntimeError):
    """The Dask cluster cannot run the computation (e.g. every worker paused on memory).

    Examples
    --------
    Also raised when :func:`bigkern.connect` cannot make or reach a cluster:

    >>> import bigkern
    >>> bigkern.connect(profile="no-such-profile")
    Traceback (most recent call last):
        ...
    bigkern.errors.ClusterError: unknown cluster profile 'no-such-profile'; the profiles in ...
    """


class MissingExtraError(BigkernError, ImportError):
    """A capability needs a package of one of bigkern's extras, and it is not installed.

    Figures need ``bigkern[plot]`` (matplotlib); extended-precision Gaussian RLS
    needs ``bigkern[precision]`` (python-flint, or mpmath). The message names
    what needed it and the ``pip install`` that adds it.

    Examples
    --------
    It is an :class:`ImportError` too, so code that tolerates a missing package
    keeps working:

    >>> import bigkern
    >>> issubclass(bigkern.MissingExtraError, (bigkern.BigkernError, ImportError))
    True
    >>> from bigkern.extras import require
    >>> require("no_such_module", extra="plot", purpose="this example")
    Traceback (most recent call last):
        ...
    bigkern.errors.MissingExtraError: this example needs matplotlib, which is not installed: ...
    """


class BigkernWarning(UserWarning):
    """A tolerated problem that the user should know about.

    Examples
    --------
    A taper power below ``(d + 1) / 2`` is allowed, with a warning:

    >>> import warnings
    >>> import numpy as np
    >>> from bigkern import BigkernWarning, CompactSupport, Gaussian
    >>> kernel = CompactSupport(Gaussian(1.0), radius=2.0, taper_power=1)  # d = 3 needs 2
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     K = kernel(np.zeros((4, 3)), np.zeros((4, 3)))
    >>> [w.category is BigkernWarning for w in caught]
    [True]

    ``warnings.simplefilter("error", BigkernWarning)`` makes every one of them an error.
    """


class IllConditionedWarning(BigkernWarning):
    """A linear system is too ill-conditioned for a plain double-precision solve.

    Examples
    --------
    Repeated rows and a negligible ridge leave ``K + λI`` singular; a jitter is added:

    >>> import warnings
    >>> import numpy as np
    >>> from bigkern import IllConditionedWarning, KernelRidgeClassifier
    >>> X = np.repeat(np.random.default_rng(0).normal(size=(10, 2)), 3, axis=0)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     model = KernelRidgeClassifier(omega=10.0, lam=1e-17).fit(X, np.arange(30) % 2)
    >>> [issubclass(w.category, IllConditionedWarning) for w in caught]
    [True]
    """


class DoublePrecisionWarning(IllConditionedWarning):
    """Double precision cannot resolve ``K + λnI``: the solution may be garbage.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from bigkern import GaussianRLS
    >>> x = np.linspace(0, 1, 40)[:, None]
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     model = GaussianRLS(omega=1.0, lam=1e-14, precision="double").fit(x, x[:, 0])
    >>> [w.category.__name__ for w in caught]
    ['DoublePrecisionWarning']
    """


class ExtendedPrecisionWarning(BigkernWarning):
    """The solve was switched to (or needed more) extended precision.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from bigkern import GaussianRLS
    >>> x = np.linspace(0, 1, 40)[:, None]
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     model = GaussianRLS(omega=1.0, lam=1e-14).fit(x, x[:, 0])  # precision="auto"
    >>> [w.category.__name__ for w in caught], model.precision_
    (['ExtendedPrecisionWarning'], 'extended')
    """
