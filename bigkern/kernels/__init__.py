"""Kernels: the Gaussian and its one basis type, compactly supported and periodic kernels.

* :mod:`bigkern.kernels.gaussian` — the Gaussian kernel, :class:`GaussianBasis` and
  :func:`kernel_blocks`, the one place Gaussian kernel blocks are formed;
* :mod:`bigkern.kernels.expansion` — :class:`GaussianExpansion`, what every Gaussian
  model predicts through;
* :mod:`bigkern.kernels.fused_loops` and :mod:`bigkern.kernels.product_loops` — the compiled
  per-row passes: expansions, kernel blocks, and the products ``Gᵀ(G v)`` of
  conjugate gradients;
* :mod:`bigkern.kernels.compact` — :class:`CompactSupport` (Zhang, Genton & Liu);
* :mod:`bigkern.kernels.periodic` — the periodic Gaussian kernel on [0, 1) (Shi & Yu);
* :mod:`bigkern.kernels.row_sums` — the sums over kernel rows one Newton pass of the
  reduced SVM returns (Lee & Huang), shared by the distributed pass and the solver.
"""

from bigkern.kernels.compact import CompactSupport, pairwise_distances
from bigkern.kernels.expansion import GaussianExpansion, kernel_expansion
from bigkern.kernels.gaussian import (
    Gaussian,
    GaussianBasis,
    exponent_left,
    exponent_right,
    gaussian_kernel,
    kernel_blocks,
    omega_to_gamma,
    row_blocks,
    squared_distances,
)
from bigkern.kernels.periodic import (
    exact_periodic_kernel,
    periodic_gaussian_kernel,
    wrap_error_bound,
    wrapped_gaussian_kernel,
)

__all__ = [
    "CompactSupport",
    "Gaussian",
    "GaussianBasis",
    "GaussianExpansion",
    "exact_periodic_kernel",
    "exponent_left",
    "exponent_right",
    "gaussian_kernel",
    "kernel_blocks",
    "kernel_expansion",
    "omega_to_gamma",
    "pairwise_distances",
    "periodic_gaussian_kernel",
    "row_blocks",
    "squared_distances",
    "wrap_error_bound",
    "wrapped_gaussian_kernel",
]
