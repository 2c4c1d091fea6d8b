"""Estimators with a compactly supported kernel (Zhang, Genton & Liu, §4).

Each one builds the sparse Gram matrix ``K_C`` (only pairs closer than ``C``,
found by k-d trees; chunk pairs on workers for a dask ``X``) and hands it to a
single-node sparse solver:

- :class:`CompactLSSVC` — the least-squares SVM, bordered system (14); k classes
  one-vs-rest with one factorization for all;
- :class:`CompactKernelRidge` — the same system for real-valued targets;
- :class:`CompactSVC` — the SVM dual (12) by SMO on the sparse ``K_C``; k classes
  one-vs-rest on the one ``K_C``;
- :class:`CompactKernelPCA` — kernel PCA by ``eigsh`` on the implicitly centred ``K_C``.

The kernel tapered is the Gaussian ``exp(−r²/(2ω²))`` as everywhere in bigkern (the
paper's ``exp(−r²/σ²)`` is ``ω = σ/√2``), or another radial kernel of the Euclidean
distance given as ``kernel=`` (the Matérn kernels). The support radius is ``radius``
(the paper's ``C``), or, with ``radius=None``, rule (10)'s shortcut: the ``1 − τ``
quantile of the pairwise distances, which leaves about a fraction ``τ`` of ``K_C`` zero.
Predictions visit only the training points within ``radius`` of each new point.

* :mod:`~bigkern.models.compact.base` — the shared fit preamble (radius, sparse Gram,
  isolated rows) and the decision function ``f(x) = b + Σ a_i k_C(x, x_i)``;
* :mod:`~bigkern.models.compact.classifiers` — :class:`CompactLSSVC`, :class:`CompactSVC`;
* :mod:`~bigkern.models.compact.ridge` — :class:`CompactKernelRidge`;
* :mod:`~bigkern.models.compact.pca` — :class:`CompactKernelPCA`.

The package's ``__init__`` imports nothing; :mod:`bigkern.models` names each class.
"""
