"""Compactly supported kernels (Zhang, Genton & Liu) at scale: the sparse Gram matrix
(:mod:`~bigkern.reduce.compact.sparse_gram`) and the alignment and sparsity curves that
choose the support radius (:mod:`~bigkern.reduce.compact.alignment`).
"""
