"""Single-node solvers of the small systems built by :mod:`bigkern.reduce`."""

from bigkern.solvers.kernel_ridge import solve_weighted_kernel_ridge

__all__ = ["solve_weighted_kernel_ridge"]
