"""Newton–CG for the reduced SVM and SVR: Newton steps solved by preconditioned CG.

The problem is :func:`~bigkern.solvers.newton.smooth_svm.newton_armijo`'s: with the augmented
kernel rows ``a_i = [K(x_i, Ã), −1]`` and ``u = (v, γ)``::

    F(u) = C Σ_i ℓ(a_i·u, y_i) + ½ ‖u‖²,   ∇F = u + C Σ ℓ' a,   H = I + C Σ ℓ'' a aᵀ.

Newton–Armijo forms ``H`` (``n·m̃²`` flops a pass) and factors it (``m̃³``). Here the
Newton system ``H d = −∇F`` is solved *inexactly* by preconditioned conjugate gradients
(:func:`preconditioned_cg`) on products ``H p = p + C Σ ℓ'' a (a·p)``: one product over
the rows costs ``2·n_S·m̃`` (``n_S`` the rows with curvature: for the squared hinge,
those inside the margin), and on chunked data it is one read.

**Forcing.** Step ``k`` stops CG at the relative residual ``‖H d + g‖ ≤ η ‖g‖``
(an inexact Newton method, Dembo, Eisenstat & Steihaug 1982): a fixed ``η``
(:data:`FORCING`, 0.1: linear convergence at rate about η once the active set has
settled), or ``η_k = min(½, √(‖g_k‖ / ‖g_0‖))`` (superlinear, Eisenstat & Walker 1994).

**Preconditioner** (:class:`SampledPreconditioner`, after Falkon's, Rudi, Carratino &
Rosasco 2017). The sum over all ``n`` rows is estimated from a uniform sample of ``s``
rows whose augmented kernel rows ``b_j`` are at hand::

    P = I + C (n / s) Σ_j ℓ''(b_j·u, y_j) b_j b_jᵀ  ≈  H.

Falkon's sample is the centres themselves; here it is the centres and the draw's
scale sample (chunked data), or up to ``4 (m̃ + 1)`` of the held rows (in memory). For
the squared hinge only the sampled rows inside the margin enter, a uniform sample of
the rows that make ``H``; the centres alone leave too few of them to span ``H``'s
large directions (on the benchmark's data, 60–160 CG iterations a step against
10–40 from ``m̃`` sampled rows inside the margin). At most ``most`` of them are kept
(reweighted), so a step's preconditioner costs at most ``most² (m̃ + 1)`` flops to
form and ``most³/3`` to factor (Woodbury: ``P⁻¹ r = r − Bᵀ (I + B Bᵀ)⁻¹ B r``), no
``n``-sized work; a step where at most :data:`REUSE_CHANGED` of the sampled rows'
curvature changed keeps the step before's. The intercept's column ``−1`` is part of
each ``b_j``, so the ridge ``I`` and the intercept need no special case.

**Line search.** The batched Armijo search of
:func:`~bigkern.solvers.newton.smooth_svm.newton_armijo`: one pass gives ``F`` at the trial
steps ``1, ½, …`` and the gradient speculatively at the full step; a shorter step
costs one more pass.

A Newton step therefore costs ``1 + (CG iterations)`` passes (reads of chunked data),
and none of them forms an ``m̃ × m̃`` sum over the rows.
* :mod:`~bigkern.solvers.newton_cg.method` — :func:`newton_cg_iterates`, the method as a
  generator of the passes it needs (``LinePass``, ``CurvaturePass``);
* :mod:`~bigkern.solvers.newton_cg.preconditioning` — ``SampledPreconditioner`` and
  ``preconditioned_cg``;
* :mod:`~bigkern.solvers.newton_cg.held_rows` — the passes over kernel rows held in
  memory, and ``newton_cg``; :mod:`bigkern.reduce.reduced.newton_cg_passes` answers them
  over chunked data.

The package's ``__init__`` imports nothing.
"""
