"""The reduced set Ã of a reduced-kernel model, drawn in one pass without loading the data.

Lee & Huang's reduced SVM builds its separating surface on a *uniform random
subset* Ã of the training rows (Corollary 1), drawn *within each class* and
combined (Remark 2: stratified sampling reduces the Monte-Carlo variance).
:func:`select_reduced_set` draws it from a chunked dask (or numpy) array in
one read:

* every usable row gets a uniform number from a seeded hash of its **global
  row number** (:func:`bigkern.reduce.sampling.uniform_from_index`), and a
  stratum's sample is its rows with the smallest numbers (ties by row number).
  The draw therefore depends on the data and the seed only — never on the
  chunking or the number of workers — and each stratum's sample is uniform
  over that stratum's usable rows;
* each chunk keeps at most ``size`` candidates per stratum (only those leave
  a worker); candidates are merged in a tree and trimmed;
* the ``size`` draws are shared between the classes in proportion to their
  usable rows (largest remainders; every class gets at least one center);
* rows with a non-finite feature (or a NaN label) are never drawn; they are
  counted (as in every bigkern pass, over ``bigkern.max_nonfinite_fraction``
  of the present rows is an error);
* a numpy input of at most ``bigkern.in_memory_rows`` rows is drawn by the same
  chunk function on the whole array, with no task graph (the same rows);
* identical drawn rows are kept once: duplicate centers add nothing to the
  basis but change the penalty of a reduced model. They are dropped, counted in
  ``n_duplicates`` and named in a :class:`DuplicateCentersWarning`;
* with ``scale_rows``, the same read also draws a larger uniform sample of the
  usable rows (all classes together, by the same hashes) for the features'
  robust scale, so that the scale's quantiles do not rest on a small Ã;
* with ``centers="leverage"`` that read draws a small uniform set, and a few more
  reads (:mod:`~bigkern.reduce.reduced.leverage_scores`) draw Ã in proportion to the
  rows' approximate ridge leverage scores (BLESS), per class when stratified.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
from sklearn.utils import check_random_state

from bigkern import config
from bigkern.errors import BigkernWarning, LabelError
from bigkern.kernels import Basis
from bigkern.reduce.extremes import EXTREMES_KEY, warn_suspected_fills
from bigkern.reduce.passes import (
    RowReduction,
    as_row_chunked,
    run_reduction,
    unwrap_samples,
)
from bigkern.reduce.reduced._row_pass import check_counts
from bigkern.reduce.reduced.leverage_rounds import leverage_rounds
from bigkern.reduce.reduced.leverage_scores import (
    check_score_lam,
    round_sizes,
    score_template,
    uniform_inclusion,
)
from bigkern.reduce.reduced.row_draws import allocate, combine_draws, draw_chunk

__all__ = ["CENTERS", "DEFAULT_SCORE_LAM", "DuplicateCentersWarning", "ReducedSet",
           "resolve_size", "select_reduced_set"]

#: How the centers are drawn: uniformly (within each class when stratified), or in
#: proportion to the rows' approximate ridge leverage scores.
CENTERS = ("uniform", "leverage")
#: The leverage scores' penalty λ when none is given (the Nyström models' default ``lam``).
DEFAULT_SCORE_LAM = 1e-3

class DuplicateCentersWarning(BigkernWarning):
    """Identical rows were drawn into a reduced set; all but one of each were dropped."""


@dataclass(frozen=True, eq=False)
class ReducedSet:
    """A drawn reduced set Ã and what the draw saw.

    Attributes
    ----------
    X : ndarray, shape (m̃, d)
        The drawn rows (raw feature values, float64), in ascending global row order.
    y : ndarray, shape (m̃,) or None
        Their labels.
    index : ndarray of int, shape (m̃,)
        Their global row numbers.
    classes : ndarray or None
        The distinct labels of the usable rows (sorted), when ``y`` was given and
        has at most :data:`~bigkern.reduce.reduced.row_draws.MAX_STRATA` of them.
    class_counts : ndarray of int or None
        Usable rows per class.
    drawn_per_class : ndarray of int or None
        Rows of Ã per class (after dropping duplicates).
    counts : dict
        Row counts of the pass: ``rows``, ``valid`` (usable), ``absent`` (no finite
        feature), ``nonfinite`` (some feature non-finite), ``nonfinite_y``,
        ``nonfinite_feature_<j>``, ``first_nonfinite``, ``first_nonfinite_y``.
    n_duplicates : int
        Drawn rows dropped because an identical row was drawn too.
    seed : int
        The hash seed of the draw.
    scale_X : ndarray, shape (s, d) or None
        The ``scale_rows`` sample (raw values, float64), when one was asked for:
        ``min(scale_rows, usable rows)`` usable rows drawn uniformly, classes together.
    scale_y : ndarray, shape (s,) or None
        Their labels, when ``y`` was given (a k-class fit starts from a fit on them).
    centers : str
        How Ã was drawn: ``"uniform"`` or ``"leverage"``.
    scores : ndarray, shape (m̃,) or None
        ``"leverage"``: the centers' approximate ridge leverage scores ℓ̃.
    effective_dimension : float or None
        ``"leverage"``: ``Σ ℓ̃`` over the usable rows, the effective dimension's estimate
        at ``score_lam``.
    score_lam : float or None
        ``"leverage"``: the penalty of the final scores: ``lam``, or the larger one at
        which the set before the last resolves the scores
        (:func:`~bigkern.reduce.reduced.leverage_scores.resolved_lam`).
    reads : int
        Reads of the rows the draw made (``1 + rounds`` for ``"leverage"``).
    """

    X: np.ndarray
    y: np.ndarray | None
    index: np.ndarray
    classes: np.ndarray | None
    class_counts: np.ndarray | None
    drawn_per_class: np.ndarray | None
    counts: dict[str, int] = field(default_factory=dict)
    n_duplicates: int = 0
    seed: int = 0
    scale_X: np.ndarray | None = None
    scale_y: np.ndarray | None = None
    centers: str = "uniform"
    scores: np.ndarray | None = None
    effective_dimension: float | None = None
    score_lam: float | None = None
    reads: int = 1

    @property
    def size(self) -> int:
        """Number of centers m̃."""
        return int(self.X.shape[0])


def resolve_size(size: Any, fraction: Any, n_rows: int) -> int:
    """The number of rows to draw: ``size``, or ``ceil(fraction · n_rows)``; checked.

    ``n_rows`` is the number of rows of ``X`` (usable or not), known without a read.
    """
    if size is not None and fraction is not None:
        raise ValueError("give size or fraction, not both")
    if size is None and fraction is None:
        raise ValueError("give the reduced-set size (an int >= 2) or a fraction in (0, 1]")
    if fraction is not None:
        if isinstance(fraction, bool) or not isinstance(fraction, int | float | np.number) \
                or not 0 < float(fraction) <= 1:
            raise ValueError(f"fraction must be a number in (0, 1]; got {fraction!r}")
        size = math.ceil(float(fraction) * n_rows)
    if isinstance(size, bool) or not isinstance(size, int | np.integer):
        raise ValueError(f"size must be an int (number of centers); got {size!r}")
    size = int(size)
    if size < 2:
        raise ValueError(f"the reduced set needs at least 2 rows; got size={size}"
                         + (f" (fraction={fraction} of {n_rows} rows)" if fraction else ""))
    if size > n_rows:
        raise ValueError(f"size={size} is more than the {n_rows} rows of X")
    return size


def select_reduced_set(
    X: Any,
    y: Any = None,
    *,
    size: int | None = None,
    fraction: float | None = None,
    stratified: bool = True,
    random_state: Any = None,
    split_every: int | None = None,
    mask: Any = None,
    features: Sequence[str] | None = None,
    scale_rows: int = 0,
    centers: str = "uniform",
    lam: float | None = None,
    score_basis: Basis | Callable[[ReducedSet], Basis] | None = None,
) -> ReducedSet:
    """Draw a random reduced set Ã from the usable rows, per class: uniform in one read, or
    by approximate ridge leverage scores in a few.

    Parameters
    ----------
    X : array-like, dask array or DataArray, shape (n, d)
        Samples (dims ``(sample, feature)`` for a DataArray). Never loaded whole:
        each chunk sends at most ``size`` rows per class to the client.
    y : array-like or dask array, shape (n,), optional
        Class labels (any dtype). With ``stratified`` the draw is uniform within
        each class and the classes share ``size`` in proportion to their usable rows.
    size : int, optional
        Number of rows to draw (≥ 2, ≤ the usable rows).
    fraction : float, optional
        Instead of ``size``: draw ``ceil(fraction · n)`` rows, ``n`` the rows of ``X``.
    stratified : bool
        Stratify by ``y`` (Lee & Huang's Remark 2). Ignored without ``y``.
    random_state : int, RandomState or None
        Seed of the row hashes (the same seed gives the same set for any chunking).
    split_every : int, optional
        Fan-in of the tree merge (default ``bigkern.split_every``).
    mask : array-like or dask array of bool, shape (n,), optional
        Rows that may be drawn (e.g. the labelled pixels); the others are left
        out and counted (``masked``), their ``y`` never looked at.
    features : sequence of str, optional
        Names of the columns, for warnings (a DataArray's ``feature`` coordinate
        by default).
    scale_rows : int
        Also draw this many usable rows (all of them when fewer), classes together,
        as ``ReducedSet.scale_X`` (their labels ``scale_y``): the sample the features'
        robust scale is computed from. 0 (the default) draws none.
    centers : {"uniform", "leverage"}
        ``"uniform"``: every usable row (of a class, when stratified) is as likely.
        ``"leverage"``: rows are drawn in proportion to their approximate ridge
        leverage scores ``diag(K (K + λI)⁻¹)`` (BLESS, bottom-up from a uniform set of
        ``m̃ / 16`` rows), in :data:`~bigkern.reduce.reduced.leverage_scores.ROUNDS` more
        reads (:mod:`~bigkern.reduce.reduced.leverage_scores`); per class when stratified.
    lam : float, optional
        ``"leverage"``: the scores' ridge penalty λ, on a sum of squares (a Nyström
        model's ``lam``; ``1 / C`` for an SVM); default :data:`DEFAULT_SCORE_LAM`.
    score_basis : Basis or callable, optional
        ``"leverage"``: the kernel, width and standardization of the scores (a
        :class:`~bigkern.kernels.Basis`, whose centers are ignored), or a function of
        the first, uniform draw (a :class:`ReducedSet` with the scale sample) that
        returns one — a model's own basis. Default: the Gaussian of width 1 on the
        features robustly standardized from the scale sample (Ã's first draw when
        ``scale_rows`` is 0), clipped to ±5.

    Returns
    -------
    ReducedSet
        The rows, their labels and global row numbers, class counts, row counts.

    Raises
    ------
    ValueError
        ``size`` < 2 or more than the usable rows; both or neither of ``size`` and
        ``fraction``; a stratifying ``y`` with more than
        :data:`~bigkern.reduce.reduced.row_draws.MAX_STRATA` values; ``centers`` not
        one of :data:`CENTERS`; ``lam`` not a positive finite number.
    LabelError
        A stratified draw whose usable rows have one class only.
    DataQualityError
        Over ``bigkern.max_nonfinite_fraction`` of the present rows are non-finite,
        or no row is usable.

    Warns
    -----
    DuplicateCentersWarning
        Identical rows were drawn; all but the first of each are dropped (counted in
        ``n_duplicates``), so Ã may be smaller than ``size``.
    SuspectedFillWarning
        A large share of a feature's rows hold one isolated extreme value (an
        undeclared fill value; :mod:`bigkern.reduce.extremes`).

    Examples
    --------
    A rare class gets its share of the centers:

    >>> import numpy as np
    >>> from bigkern import select_reduced_set
    >>> X = np.random.default_rng(0).normal(size=(300, 2))
    >>> y = np.where(X[:, 0] > 1.0, 1, -1)
    >>> rs = select_reduced_set(X, y, size=20, random_state=0)
    >>> rs.X.shape, rs.classes.tolist(), rs.class_counts.tolist()
    ((20, 2), [-1, 1], [253, 47])
    >>> np.unique(rs.y, return_counts=True)[1].tolist()  # 20 in proportion to 253 : 47
    [17, 3]

    By leverage scores, in three reads: the rows near the boundary and in sparse
    regions weigh more.

    >>> lev = select_reduced_set(X, y, size=40, random_state=0, centers="leverage", lam=1e-2)
    >>> lev.size, lev.reads, lev.centers, lev.scores.shape
    (40, 3, 'leverage', (40,))
    """
    if centers not in CENTERS:
        raise ValueError(f"centers must be one of {', '.join(map(repr, CENTERS))}; got "
                         f"{centers!r}")
    leverage = centers == "leverage"
    if leverage:
        lam = check_score_lam(DEFAULT_SCORE_LAM if lam is None else lam)
    X, y, mask, features = unwrap_samples(X, y, mask, features)
    held = _held_in_memory(X, y, mask)
    Xd, yd, md = (X, y, mask) if held else as_row_chunked(X, y, mask)
    n_rows = int(Xd.shape[0])
    size = resolve_size(size, fraction, n_rows)
    seed = int(check_random_state(random_state).randint(2**31 - 1))
    stratified = bool(stratified) and y is not None
    if isinstance(scale_rows, bool) or not isinstance(scale_rows, int | np.integer) \
            or scale_rows < 0:
        raise ValueError(f"scale_rows must be an int >= 0; got {scale_rows!r}")
    keep_scale = int(scale_rows)
    if held:  # the pass's chunk function on the one chunk: no task graph
        root = draw_chunk(Xd, yd, md, start=0, keep=size, seed=seed, stratified=stratified,
                           keep_scale=keep_scale)
    else:
        recipe = RowReduction("reduced-set", chunk=draw_chunk,
                              combine=partial(combine_draws, keep=size, keep_scale=keep_scale),
                              with_start=True)
        root = run_reduction(recipe, Xd, yd, md, split_every=split_every,
                             label=f"drawing a reduced set of {size} rows",
                             keep=size, seed=seed, stratified=stratified,
                             keep_scale=keep_scale)
    names = list(features) if features is not None else [
        f"column {j}" for j in range(Xd.shape[1])]
    warn_suspected_fills(root["counts"].pop(EXTREMES_KEY, None), names)
    if not leverage:
        return _finalize(root, size, seed, stratified, n_rows)
    _check_usable(root, size, n_rows)
    # round 0: a uniform set of m̃ / GROWTH^ROUNDS among the candidates this read kept
    # (each stratum's ``size`` smallest hashes hold its smallest ``m_0``); a class apiece
    n_classes = 0 if root["classes"] is None or not stratified else len(root["classes"])
    sizes = round_sizes(size, least=n_classes)
    first = _finalize(root, sizes[0], seed, stratified, n_rows, warn=False)
    template = score_template(score_basis, first)
    draw = leverage_rounds(
        Xd, yd, md, held=held, first_X=first.X,
        first_inclusion=uniform_inclusion(first, stratified), template=template,
        lam=float(lam), sizes=sizes,
        classes=first.classes if stratified else None,
        class_counts=first.class_counts if stratified else None,
        n_usable=int(first.counts["valid"]), seed=seed, split_every=split_every)
    rs = _finalize({**root, "strata": draw.strata}, size, seed, stratified, n_rows)
    return dataclasses.replace(rs, centers="leverage",
                               effective_dimension=draw.effective_dimension,
                               score_lam=draw.lams[-1], reads=1 + draw.reads)


def _held_in_memory(X: Any, y: Any, mask: Any) -> bool:
    """Whether the draw runs in memory: numpy ``X`` (2-D, at most ``bigkern.in_memory_rows``
    rows), ``y`` and ``mask`` numpy arrays of its length (or None), ``mask`` boolean.

    The draw depends on the rows' hashes, never on the chunks, so this is the dask
    draw's result without its task graph, a fixed cost that weighs on a small fit.
    """
    if not isinstance(X, np.ndarray) or X.ndim != 2 \
            or len(X) > int(config.get("in_memory_rows")):
        return False
    return all(a is None or (isinstance(a, np.ndarray) and a.shape == (len(X),))
               for a in (y, mask)) and (mask is None or mask.dtype == bool)


def _check_usable(root: dict[str, Any], size: int, n_rows: int) -> dict[str, Any]:
    """The pass's counts, checked; ``size`` at most the usable rows."""
    counts = {**root["counts"], **root["firsts"]}
    check_counts(counts)
    usable = int(counts["valid"])
    if size > usable:
        raise ValueError(f"size={size} is more than the {usable} usable rows of X ({n_rows} rows; "
                         f"{n_rows - usable} left out: masked {counts['masked']}, absent "
                         f"{counts['absent']}, non-finite "
                         f"{counts['nonfinite']}, non-finite y {counts['nonfinite_y']})")
    return counts


def _finalize(root: dict[str, Any], size: int, seed: int, stratified: bool,
              n_rows: int, *, warn: bool = True) -> ReducedSet:
    counts = _check_usable(root, size, n_rows)
    cls = root["classes"]
    classes = class_counts = None
    if cls is not None:
        keys = sorted(cls, key=_sort_key)
        classes = np.asarray(keys)
        class_counts = np.asarray([cls[k] for k in keys], dtype=np.int64)
    strata = root["strata"]
    if stratified:
        if len(classes) < 2:
            raise LabelError(f"y has one class only among the usable rows ({classes.tolist()}): "
                             f"a stratified reduced set needs two classes or more")
        if size < len(classes):
            raise ValueError(f"size={size} is smaller than the number of classes "
                             f"({len(classes)}): each class needs a center")
        want = dict(zip(keys, allocate(size, class_counts), strict=True))
    else:
        want = {None: size}
    picked = []
    for k, n_k in want.items():
        s = strata[k]
        order = np.lexsort((s["index"], s["u"]))[:n_k]
        picked.append({name: None if a is None else a[order] for name, a in s.items()})
    index = np.concatenate([p["index"] for p in picked])
    order = np.argsort(index, kind="stable")
    index = index[order]
    Xs = np.concatenate([p["X"] for p in picked])[order]
    ys = None if picked[0]["y"] is None else np.concatenate([p["y"] for p in picked])[order]
    scores = np.concatenate([p["score"] for p in picked])[order] \
        if "score" in picked[0] else None
    _, first = np.unique(Xs, axis=0, return_index=True)
    n_dup = len(Xs) - len(first)
    if n_dup:
        keep = np.zeros(len(Xs), dtype=bool)
        keep[first] = True
        if warn:
            warnings.warn(
                f"{n_dup} of the {len(Xs)} drawn rows repeat an earlier drawn row (first: "
                f"row {int(index[~keep][0])}); they are dropped, leaving {int(keep.sum())} "
                f"centers", DuplicateCentersWarning, stacklevel=3)
        Xs, index = Xs[keep], index[keep]
        ys = None if ys is None else ys[keep]
        scores = None if scores is None else scores[keep]
        if len(Xs) < 2:
            raise ValueError("the reduced set has fewer than 2 distinct rows")
    drawn = None
    if classes is not None and ys is not None:
        drawn = np.asarray([int(np.sum(ys == c)) for c in classes], dtype=np.int64)
    scale = root.get("scale")
    return ReducedSet(Xs, ys, index.astype(np.int64), classes, class_counts, drawn,
                      {k: int(v) for k, v in counts.items()}, int(n_dup), seed,
                      None if scale is None else scale["X"],
                      None if scale is None else scale["y"], scores=scores)


def _sort_key(k: Any) -> tuple[str, Any]:
    return (type(k).__name__, k)

