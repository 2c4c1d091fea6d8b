"""Kernels as values, the bases and expansions built on them, and their compiled loops.

* :mod:`bigkern.kernels.kernel` — :class:`Kernel` and the built-in kernels
  (:class:`Gaussian`, :class:`Laplacian`, :class:`Matern32`, :class:`Matern52`),
  each a value of one width ω; :func:`as_kernel` turns an estimator's ``kernel=``
  into one;
* :mod:`bigkern.kernels.basis` — :class:`Basis` (centers, a kernel,
  standardization) and :func:`kernel_blocks`, the one place kernel blocks are
  formed;
* :mod:`bigkern.kernels.expansion` — :class:`KernelExpansion`, what every kernel
  model predicts through;
* :mod:`bigkern.kernels.fused_loops`, :mod:`bigkern.kernels.product_loops` and
  :mod:`bigkern.kernels.radial_loops` — the compiled per-row passes: the
  Gaussian's expansions, kernel blocks and the products ``Gᵀ(G v)`` of conjugate
  gradients; the other kernels' blocks and expansions;
* :mod:`bigkern.kernels.compact` — :class:`CompactSupport` (Zhang, Genton & Liu);
* :mod:`bigkern.kernels.periodic` — :class:`PeriodicGaussian`, the periodic Gaussian kernel on
  [0, 1) (Shi & Yu);
* :mod:`bigkern.kernels.row_sums` — the sums over kernel rows one Newton pass of the
  reduced SVM returns (Lee & Huang), shared by the distributed pass and the solver.
"""

from bigkern.kernels.basis import (
    Basis,
    exponent_left,
    exponent_right,
    kernel_blocks,
    row_blocks,
)
from bigkern.kernels.compact import CompactSupport, pairwise_distances
from bigkern.kernels.expansion import KernelExpansion, kernel_expansion
from bigkern.kernels.kernel import (
    KERNELS,
    Gaussian,
    Kernel,
    Laplacian,
    Matern32,
    Matern52,
    as_kernel,
    gaussian_kernel,
    omega_to_gamma,
    squared_distances,
)
from bigkern.kernels.periodic import (
    PeriodicGaussian,
    exact_periodic_kernel,
    wrap_error_bound,
    wrapped_gaussian_kernel,
)

__all__ = [
    "KERNELS",
    "Basis",
    "CompactSupport",
    "Gaussian",
    "Kernel",
    "KernelExpansion",
    "Laplacian",
    "Matern32",
    "Matern52",
    "PeriodicGaussian",
    "as_kernel",
    "exact_periodic_kernel",
    "exponent_left",
    "exponent_right",
    "gaussian_kernel",
    "kernel_blocks",
    "kernel_expansion",
    "omega_to_gamma",
    "pairwise_distances",
    "row_blocks",
    "squared_distances",
    "wrap_error_bound",
    "wrapped_gaussian_kernel",
]
