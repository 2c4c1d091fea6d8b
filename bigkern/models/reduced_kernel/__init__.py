"""Estimators on a reduced kernel K(A, Ã) (Lee & Huang): one pass of sums per Newton step.

* :mod:`~bigkern.models.reduced_kernel.reduced` — :class:`ReducedSVC`, the smooth
  reduced SVM;
* :mod:`~bigkern.models.reduced_kernel.reduced_svr` — :class:`ReducedSVR`;
* :mod:`~bigkern.models.reduced_kernel.nystrom` — :class:`NystromKernelRidge` and
  :class:`NystromKernelRidgeClassifier`, solved directly or by preconditioned
  conjugate gradients (:mod:`~bigkern.models.reduced_kernel.nystrom_cg`).

The package's ``__init__`` imports nothing; :mod:`bigkern.models` names each class.
"""
