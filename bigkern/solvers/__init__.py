"""Single-node solvers of the small systems built by :mod:`bigkern.reduce`."""

from bigkern.solvers.kernel_ridge import solve_weighted_kernel_ridge
from bigkern.solvers.kpca import kernel_pca
from bigkern.solvers.lssvm import solve_lssvm
from bigkern.solvers.oht import OHTSolution, oht_fit, oht_from_normal_equations
from bigkern.solvers.periodic import (
    SmootherPath,
    equal_bins,
    exact_periodic_kernel,
    wrapped_gaussian_kernel,
)
from bigkern.solvers.rls import RidgeEigensystem, condition_estimate
from bigkern.solvers.rls_extended import extended_solve
from bigkern.solvers.sparse_spd import bandwidth, solve_sparse_spd
from bigkern.solvers.sparse_svm import solve_svm_dual

__all__ = [
    "OHTSolution",
    "RidgeEigensystem",
    "SmootherPath",
    "bandwidth",
    "condition_estimate",
    "equal_bins",
    "exact_periodic_kernel",
    "extended_solve",
    "kernel_pca",
    "oht_fit",
    "oht_from_normal_equations",
    "solve_lssvm",
    "solve_sparse_spd",
    "solve_svm_dual",
    "solve_weighted_kernel_ridge",
    "wrapped_gaussian_kernel",
]
