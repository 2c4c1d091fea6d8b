"""The percentile-bin SVM (Shi & Yu, 5.2): a Gaussian SVM on the bins' centres, each
weighted by its rows.

Two classes are the paper's fit: scikit-learn's ``SVC`` on the occupied bins' centres
with ``sample_weight`` their counts. k > 2 classes are k one-vs-rest SVMs on the same
bins (:func:`_one_vs_rest_points`), no further read of the rows. The shared parts of the
binned classifiers are :mod:`bigkern.models.binned`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
from sklearn.svm import SVC

from bigkern.errors import LabelError
from bigkern.kernels import Gaussian, as_kernel, omega_to_gamma
from bigkern.models._constraints import domain
from bigkern.models.binned import _BinnedKernelClassifier
from bigkern.reduce.binning.quantiles import DECILES

__all__ = ["BinnedSVC"]


class BinnedSVC(_BinnedKernelClassifier):
    """Gaussian-kernel SVM (libsvm via scikit-learn) on percentile-bin centers (Shi & Yu, 5.2.2).

    Each bin is one training point with its majority label and, when
    ``weighted``, a sample weight proportional to its count (scaled to mean 1,
    so ``C`` keeps its usual meaning).

    k > 2 classes are k weighted SVMs on the same bins, one per class (one-vs-rest):
    in class j's problem a bin is a +1 point weighted by its rows of class j and
    a −1 point weighted by its other rows (a pure bin is one point). That is
    the hinge loss of the bin's rows, all placed at its center, rather than of
    a majority label: with k classes a bin is often mixed without any class
    holding half of it, and the majority-against-the-rest label would then
    make it "rest" in every problem (the binary model keeps the paper's
    majority labels). libsvm's own k-class SVC is one-vs-one with a vote,
    which no kernel expansion can hold; these k problems give one (bins, k)
    expansion, the centers the bins that support any class.
    ``decision_function`` gives the (n, k) SVM decision values, ``predict``
    the class of the largest; they are margins, not probabilities.

    Parameters
    ----------
    omega : float
        Gaussian width ω (scikit-learn's ``gamma = 1 / (2 ω²)``).
    kernel : str, Kernel or Kernel subclass, default "gaussian"
        The kernel: ``"gaussian"``, ``"laplacian"``, ``"matern32"``, ``"matern52"``
        or a :class:`~bigkern.kernels.Kernel`; its width is ``omega``.
    C : float
        SVM cost.
    weighted : bool
        Weight bins by their counts.
    quantiles, standardize, calibration
        As in :class:`BinnedKernelRidgeClassifier`.

    Attributes
    ----------
    classes_ : ndarray (k,)
        The labels, sorted; for two, (negative, positive).
    expansion_ : KernelExpansion
        The fitted model: coefficients (support bins,) or (support bins, k).
    n_support_ : int
        Bins that are support vectors (of any class's problem).
    n_bins_, fit_report_
        As in :class:`BinnedKernelRidgeClassifier`.

    Examples
    --------
    >>> import numpy as np
    >>> from bigkern import BinnedSVC
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 2))
    >>> y = np.where((X**2).sum(axis=1) < 1.5, 1, -1)  # cloud (1) inside a circle, clear (-1)
    >>> y[rng.random(300) < 0.2] = 0  # unlabelled pixels, left out by the mask
    >>> model = BinnedSVC(omega=0.8, C=10.0).fit(X, y, mask=y != 0)
    >>> model.fit_report_["n_masked"], model.classes_.tolist()
    (56, [-1, 1])
    >>> bool(model.score(X[y != 0], y[y != 0]) > 0.9)
    True

    Labels of three classes (strings too) give three one-vs-rest columns:

    >>> sky = np.array(["clear", "haze", "cloud"])[np.digitize(X[:, 0], [-0.5, 0.5])]
    >>> model = BinnedSVC(omega=0.8, C=10.0).fit(X, sky)
    >>> model.classes_.tolist(), model.decision_function(X[:2]).shape
    (['clear', 'cloud', 'haze'], (2, 3))
    """

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        **_BinnedKernelClassifier._parameter_constraints,
        "C": [domain("C")],
        "weighted": ["boolean"],
    }

    def __init__(
        self,
        omega: float = 0.8,
        C: float = 1.0,
        *,
        kernel: Any = "gaussian",
        weighted: bool = True,
        quantiles: Sequence[float] = DECILES,
        standardize: bool = True,
        calibration: str | None = None,
    ) -> None:
        self.omega = omega
        self.C = C
        self.kernel = kernel
        self.weighted = weighted
        self.quantiles = quantiles
        self.standardize = standardize
        self.calibration = calibration

    def _solve(self, Z: np.ndarray, bins: Mapping[str, Any]
               ) -> tuple[np.ndarray, np.ndarray, float]:
        labels = np.asarray(bins["majority_label"])
        if len(np.unique(labels)) < 2:
            raise LabelError(
                f"every bin has the majority label {labels[0]!r}: an SVM needs two classes; "
                "use BinnedKernelRidgeClassifier with fuzzy labels or more balanced data"
            )
        counts = np.asarray(bins["count"]).astype(np.float64)
        weights = counts / counts.mean() if self.weighted else None
        kernel = as_kernel(self.kernel, float(self.omega))
        sign = 1.0 if np.unique(labels)[1] == self.classes_[1] else -1.0
        if type(kernel) is Gaussian:  # libsvm's own rbf
            svc = SVC(C=self.C, kernel="rbf", gamma=omega_to_gamma(self.omega))
            svc.fit(Z, labels, sample_weight=weights)
            support = svc.support_vectors_
        else:  # the kernel matrix of the bins' centres
            svc = SVC(C=self.C, kernel="precomputed")
            svc.fit(kernel(Z, Z), labels, sample_weight=weights)
            support = Z[svc.support_]
        self.n_support_ = int(svc.support_.size)
        return support, sign * svc.dual_coef_[0], sign * float(svc.intercept_[0])

    def _solve_one_vs_rest(self, Z: np.ndarray, bins: Mapping[str, Any], counts: np.ndarray
                           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """k weighted SVMs on the bins, one per class: class j's rows of a bin on the +1
        side, the bin's other rows on the −1 side (:func:`_one_vs_rest_points`).

        The centers are the bins that support any of them; coefficient (i, j) adds
        bin i's two signed duals in problem j (both sides share its center).
        """
        kernel = as_kernel(self.kernel, float(self.omega))
        gram = None if type(kernel) is Gaussian else kernel(Z, Z)
        m, k = counts.shape
        coef = np.zeros((m, k))
        intercept = np.zeros(k)
        supports = np.zeros(m, dtype=bool)
        for j in range(k):
            rows, labels, weights = _one_vs_rest_points(counts, j, self.weighted)
            if gram is None:  # libsvm's own rbf
                svc = SVC(C=self.C, kernel="rbf", gamma=omega_to_gamma(self.omega))
                svc.fit(Z[rows], labels, sample_weight=weights)
            else:
                svc = SVC(C=self.C, kernel="precomputed")
                svc.fit(gram[np.ix_(rows, rows)], labels, sample_weight=weights)
            bins_of_support = rows[svc.support_]
            np.add.at(coef[:, j], bins_of_support, svc.dual_coef_[0])  # labels −1 < +1
            supports[bins_of_support] = True
            intercept[j] = svc.intercept_[0]
        self.n_support_ = int(supports.sum())
        return Z[supports], coef[supports], intercept


def _one_vs_rest_points(counts: np.ndarray, j: int, weighted: bool
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The training points of class ``j`` against the rest on the bins of ``counts``.

    Each bin with rows of class ``j`` is a +1 point weighted by them, each bin with
    other rows a −1 point weighted by those: the bin's rows, all at its center,
    as the hinge loss sums them. Weights are scaled by the mean bin count
    (``weighted``: ``C`` keeps its meaning per row of an average bin) or by the
    bin's own count (each bin weighs 1 in all).

    Returns
    -------
    rows : ndarray of int
        The bin of each point.
    labels : ndarray of float
        +1 or −1.
    weights : ndarray of float
    """
    n = counts.sum(axis=1)
    own, rest = counts[:, j], n - counts[:, j]
    plus, minus = np.flatnonzero(own > 0), np.flatnonzero(rest > 0)
    rows = np.concatenate([plus, minus])
    labels = np.concatenate([np.ones(len(plus)), -np.ones(len(minus))])
    mass = np.concatenate([own[plus], rest[minus]]).astype(np.float64)
    weights = mass / n.mean() if weighted else mass / n[rows]
    return rows, labels, weights
