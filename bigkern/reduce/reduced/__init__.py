"""Reduced-kernel passes (Lee & Huang, Nyström, Hagiwara): the reduced set of centers and
the small systems its kernel columns give, accumulated over the rows.

:mod:`~bigkern.reduce.reduced.reduced_set` draws the centers;
:mod:`~bigkern.reduce.reduced.normal_equations` accumulates ``GᵀG`` and ``Gᵀy`` (one
read), :mod:`~bigkern.reduce.reduced.folds` the same per cross-validation fold and
width, :mod:`~bigkern.reduce.reduced.svm` the Newton sums of the smooth SVM; all share
the row pass of :mod:`~bigkern.reduce.reduced._row_pass`.
"""
