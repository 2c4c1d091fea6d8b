"""Newton's method for the reduced SVM's and SVR's smooth problems, on the reduced kernel rows.

The problem ``F(u) = C Σ ℓ(a_i·u, y_i) + ½ ‖u‖²`` of Lee & Huang's reduced SVM (and its
SVR), solved by Newton steps whose Hessian is formed over the rows:

* :mod:`~bigkern.solvers.newton.smooth_losses` — the row losses (smooth and squared
  hinge, ε-insensitive) and their derivatives;
* :mod:`~bigkern.solvers.newton.smooth_svm` — Newton–Armijo as a generator of the passes
  it needs over the rows (:func:`~bigkern.solvers.newton.smooth_svm.newton_armijo`);
* :mod:`~bigkern.solvers.newton.finite_newton` and
  :mod:`~bigkern.solvers.newton.finite_newton_classes` — the squared hinge's finite
  Newton method with its exact line search, for two classes and for k in lockstep;
* :mod:`~bigkern.solvers.newton.lockstep_newton` — k one-vs-rest problems by
  Newton–Armijo, one read of the rows serving them all;
* :mod:`~bigkern.solvers.newton.in_memory_newton` — the passes over kernel rows held in
  memory, on the cores side by side.

Newton–CG, which solves each step by conjugate gradients instead of forming the Hessian,
is :mod:`bigkern.solvers.newton_cg`. The package's ``__init__`` imports nothing.
"""
