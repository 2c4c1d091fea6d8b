"""scikit-learn style estimators: percentile bins (distributed) + a small kernel solve (local).

``fit`` accepts numpy arrays, dask arrays or an ``xarray.DataArray`` with
dims ``(sample, feature)``; the ``feature`` coordinate of a DataArray is
remembered and checked when predicting. Every fitted model is a Gaussian
kernel expansion ``f(x) = Σ_j c_j k(z(x), b_j) + b`` in robustly
standardized features ``z``; its class is the positive one where ``f > 0``.
"""

from __future__ import annotations

from bigkern.models.baselines import KernelRidgeClassifier
from bigkern.models.binned import BinnedKernelRidge, BinnedSVC
from bigkern.models.compact import CompactKernelPCA, CompactKernelRidge, CompactLSSVC, CompactSVC
from bigkern.models.kernel_regression import LOOKernelRidge
from bigkern.models.nystrom import NystromKernelRidge, NystromKernelRidgeClassifier
from bigkern.models.oht import OHTRegressor
from bigkern.models.periodic import PeriodicKernelRidge, shi_yu_grid
from bigkern.models.persistence import load_model, load_model_dataset, save_model
from bigkern.models.reduced import ReducedSVC, ReducedSVR
from bigkern.models.rls import GaussianRLS

__all__ = [
    "BinnedKernelRidge",
    "BinnedSVC",
    "CompactKernelPCA",
    "CompactKernelRidge",
    "CompactLSSVC",
    "CompactSVC",
    "GaussianRLS",
    "KernelRidgeClassifier",
    "LOOKernelRidge",
    "NystromKernelRidge",
    "NystromKernelRidgeClassifier",
    "OHTRegressor",
    "PeriodicKernelRidge",
    "ReducedSVC",
    "ReducedSVR",
    "load_model",
    "load_model_dataset",
    "save_model",
    "shi_yu_grid",
]
