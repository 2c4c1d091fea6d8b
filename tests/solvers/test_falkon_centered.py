"""The Falkon preconditioner with the intercept's rank-one term (``centered=True``).

With an intercept the matrix is ``GᵀG − ḡḡᵀ/n + λK``; the centered preconditioner takes the
rank-one term into its approximation, which removes an outlying eigenvalue at small λ:
fewer iterations to the same solution.
"""

from __future__ import annotations

import numpy as np
import pytest

from bigkern.kernels import gaussian_kernel
from bigkern.solvers.conjugate_gradients import FalkonPreconditioner, preconditioned_cg


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_the_centered_preconditioner_takes_fewer_iterations_to_the_same_solution():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((3000, 3))
    y = np.sign(np.sin(2 * X[:, 0]) + X[:, 1])
    centers = X[rng.choice(len(X), 80, replace=False)]
    G, K = gaussian_kernel(X, centers, 1.0), gaussian_kernel(centers, centers, 1.0)
    n, gsum, lam = len(X), G.sum(axis=0), 0.01
    rhs = G.T @ y - gsum * y.sum() / n

    def product(v: np.ndarray) -> np.ndarray:
        return G.T @ (G @ v) - gsum * (gsum @ v) / n

    found = {centered: preconditioned_cg(
        product, rhs, FalkonPreconditioner.from_kernel(K, n, lam, centered=centered), lam,
        tol=1e-8, max_iter=300) for centered in (False, True)}
    assert found[True].converged
    assert found[True].n_iter < found[False].n_iter
    fitted = {c: G @ f.coef for c, f in found.items()}
    np.testing.assert_allclose(fitted[True], fitted[False], rtol=0, atol=1e-5)
    pre = FalkonPreconditioner.from_kernel(K, n, lam, centered=True)
    assert pre.centered and pre.seconds > 0
