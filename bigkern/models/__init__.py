"""scikit-learn style estimators, each a small solve on what a few passes over the data give.

``fit`` accepts numpy arrays, dask arrays or an ``xarray.DataArray`` with dims
``(sample, feature)``; the ``feature`` coordinate of a DataArray is remembered
and checked when predicting. Every Gaussian model predicts through one
:class:`~bigkern.kernels.KernelExpansion`, ``f(x) = Σ_j c_j k(z(x), b_j) + b``
in robustly standardized features ``z``; a classifier's class is the positive
one where ``f > 0``. :func:`save_model` / :func:`load_model` write and read any
of them (zarr or netCDF, checksummed).

On percentile bins (Shi & Yu; the bins come from :func:`bigkern.reduce.percentile_bins`):

* :class:`BinnedSVC` — a Gaussian SVM on the bins' centres, weighted by their counts;
* :class:`BinnedKernelRidgeClassifier` — a kernel ridge *classifier* on the bins.

On a reduced kernel (Lee & Huang): one pass of normal equations or Newton sums per fit:

* :class:`ReducedSVC`, :class:`ReducedSVR` — the smooth reduced SVM and SVR;
* :class:`NystromKernelRidge` (regression), :class:`NystromKernelRidgeClassifier`.

On a compactly supported kernel (Zhang, Genton & Liu), a sparse Gram matrix:

* :class:`CompactSVC`, :class:`CompactLSSVC`, :class:`CompactKernelRidge`,
  :class:`CompactKernelPCA`.

Regression with the regularization chosen from the data:

* :class:`GaussianRLS` — Gaussian RLS and its asymptotics (Lippert & Rifkin);
* :class:`OHTRegressor` — orthogonalization and thresholding (Hagiwara);
* :class:`LOOKernelRidge` — the regularization method of Hagiwara's experiments:
  λ by closed-form leave-one-out, the width by two-fold cross-validation;
* :class:`PeriodicKernelRidge` — the periodic Gaussian kernel on [0, 1),
  optionally on equal-width bins (Shi & Yu), with :func:`shi_yu_grid`.

In memory, as a peer for the others: :class:`KernelRidgeClassifier`.
"""

from __future__ import annotations

from bigkern.lazy import lazy_names
from bigkern.models.registry import specs

#: Each public name and the module it lives in: every estimator of the registry, and the
#: model files' functions. Imported on first use, so that reading the registry
#: (``bigkern --help``) or one estimator's module loads no other.
_HOMES = {
    **{spec.name: str(spec.estimator).partition(":")[0].removeprefix(f"{__name__}.")
       for spec in specs()},
    "load_model": "persistence.model_files",
    "load_model_dataset": "persistence.model_files",
    "predicted_classes": "_base",
    "save_model": "persistence.model_files",
    "shi_yu_grid": "regression.periodic",
}

__all__ = sorted(_HOMES)

__getattr__, __dir__ = lazy_names(__name__, _HOMES)
