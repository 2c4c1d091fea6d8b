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
    "NoResidualDegreesOfFreedomError",
    "StoreError",
    "UnknownSettingError",
]


class BigkernError(Exception):
    """Base class of every error raised by bigkern."""


class StoreError(BigkernError, ValueError):
    """A scene store is unusable: missing, empty, wrong dims or a feature absent."""


class LabelError(BigkernError, ValueError):
    """Labels are unusable: values outside {-1, 0, 1}, one class only, mismatched length."""


class DataQualityError(BigkernError, ValueError):
    """Data are present but too damaged to fit on (e.g. a non-finite rate over the limit)."""


class NoResidualDegreesOfFreedomError(BigkernError, ValueError):
    """OHT's stable set has ``l ≥ n`` components: the noise variance (21) is undefined."""


class UnknownSettingError(BigkernError, KeyError, ValueError):
    """A bigkern setting that does not exist (a typo): the message names the closest ones."""

    def __str__(self) -> str:
        # KeyError would print the message in quotes, as if it were the missing key
        return str(self.args[0]) if self.args else ""


class ClusterError(BigkernError, RuntimeError):
    """The Dask cluster cannot run the computation (e.g. every worker paused on memory)."""


class BigkernWarning(UserWarning):
    """A tolerated problem that the user should know about."""


class IllConditionedWarning(BigkernWarning):
    """A linear system is too ill-conditioned for a plain double-precision solve."""


class DoublePrecisionWarning(IllConditionedWarning):
    """Double precision cannot resolve ``K + λnI``: the solution may be garbage."""


class ExtendedPrecisionWarning(BigkernWarning):
    """The solve was switched to (or needed more) extended precision."""
