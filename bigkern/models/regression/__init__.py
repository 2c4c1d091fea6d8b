"""Gaussian regression with the regularization chosen from the data.

* :mod:`~bigkern.models.regression.rls` — :class:`GaussianRLS` and its large-width
  limit (Lippert & Rifkin);
* :mod:`~bigkern.models.regression.oht` — :class:`OHTRegressor` (Hagiwara);
* :mod:`~bigkern.models.regression.kernel_regression` — :class:`LOOKernelRidge`;
* :mod:`~bigkern.models.regression.periodic` — :class:`PeriodicKernelRidge` (Shi & Yu).

The package's ``__init__`` imports nothing; :mod:`bigkern.models` names each class.
"""
