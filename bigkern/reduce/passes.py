"""Chunk → combine → finalize reductions over the row chunks of sample arrays.

Every distributed pass of bigkern has the same shape: a pure function of one
row chunk (of ``X``, and of ``y``/``mask`` when given) returns a small partial
result; partials are merged associatively in a tree of fan-in ``split_every``;
the root is turned into the final result. Partials are small Python objects
(dicts of numpy arrays), never n-sized.

A pass declares its three functions once, as a :class:`RowReduction` recipe
(the shape of flox's ``Aggregation``), and one driver runs every recipe:
:func:`reduction_graph` builds the graph (for passes computed together with
others), :func:`run_reduction` computes it and finalizes. The helpers here
(:func:`valid_rows`, :func:`add_counts` ...) are public because packages above
(:mod:`bigkern.jobs.tuning`, :mod:`bigkern.models`) declare passes of their own and
report the row counts they return.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import dask
import dask.array as da
import numpy as np
import xarray as xr
from dask.delayed import Delayed

from bigkern import config
from bigkern.reduce.row_tasks import row_partials

__all__ = [
    "NONFINITE_FEATURE",
    "RowReduction",
    "add_counts",
    "as_float_block",
    "as_row_chunked",
    "int_counts",
    "nonfinite_by_column",
    "per_feature_counts",
    "reduction_graph",
    "require_finite_rows",
    "row_partials",
    "row_starts",
    "run_reduction",
    "tree_reduce",
    "unwrap_samples",
    "valid_rows",
    "without_per_feature",
]

#: Count key prefix of the rows left out because feature ``j`` is non-finite
#: (``nonfinite_feature_0``, ``nonfinite_feature_1`` ...; ``n_``-prefixed in attrs).
NONFINITE_FEATURE = "nonfinite_feature_"


def unwrap_samples(
    X: Any, y: Any, mask: Any, features: Sequence[str] | None
) -> tuple[Any, Any, Any, Sequence[str] | None]:
    """The arrays inside xarray ``X`` (sample, feature), ``y`` and ``mask``, and feature names.

    A DataArray ``X`` must have a ``feature`` dimension; its ``feature``
    coordinate gives the names unless ``features`` is given. The data are
    returned as they are (a dask-backed DataArray stays lazy: ``numpy.asarray``
    on it would compute it).
    """
    import xarray as xr

    if isinstance(X, xr.DataArray):
        if X.ndim != 2 or "feature" not in X.dims:
            raise ValueError(f"a DataArray X must have dims (sample, feature); got {X.dims}")
        X = X.transpose(..., "feature")
        if features is None and "feature" in X.coords:
            features = [str(f) for f in X["feature"].values]
        X = X.data
    y, mask = (a.data if isinstance(a, xr.DataArray) else a for a in (y, mask))
    return X, y, mask, features


def as_row_chunked(
    X: Any, y: Any = None, mask: Any = None, *, min_chunks: int = 1
) -> tuple[da.Array, da.Array | None, da.Array | None]:
    """Return ``X`` (n, d) and optional ``y``, ``mask`` (n,) as dask arrays with equal row chunks.

    ``X`` is rechunked to a single chunk along features; ``y`` and ``mask``
    take ``X``'s row chunks. numpy inputs become one dask chunk per ~100 MB, and
    at least ``min_chunks`` chunks of at least ``bigkern.kernel_block_rows`` rows
    where there are rows enough: a pass whose work per row is heavy (the reduced
    kernel's ``m̃²``) passes :func:`bigkern.cluster.compute.task_threads` so every thread
    gets a share. Dask input keeps its chunks.
    """
    if not isinstance(X, da.Array):
        X = np.asarray(X)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D (sample, feature); got shape {X.shape}")
        rows = max(1, int(config.get("chunk_bytes")) // max(1, X.itemsize * X.shape[1]))
        if min_chunks > 1:
            parts = max(1, min(int(min_chunks), X.shape[0] // int(config.get("kernel_block_rows"))))
            rows = min(rows, -(-X.shape[0] // parts))
        X = da.from_array(X, chunks=(rows, -1))
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (sample, feature); got shape {X.shape}")
    if len(X.chunks[1]) != 1:
        X = X.rechunk({1: -1})
    out = [X]
    for name, arr in (("y", y), ("mask", mask)):
        if arr is None:
            out.append(None)
            continue
        if isinstance(arr, xr.DataArray):  # its data: a dask-backed one stays lazy
            arr = arr.data
        if not isinstance(arr, da.Array):
            arr = np.asarray(arr)
            if arr.shape == (X.shape[0],):  # else the check below names the problem
                arr = da.from_array(arr, chunks=(X.chunks[0],))
        if arr.ndim != 1 or arr.shape[0] != X.shape[0]:
            raise ValueError(
                f"{name} must be 1-D with one entry per row of X ({X.shape[0]}); "
                f"got shape {arr.shape}"
            )
        if arr.chunks[0] != X.chunks[0]:
            arr = arr.rechunk((X.chunks[0],))
        out.append(arr)
    return out[0], out[1], out[2]


@dataclass(frozen=True)
class RowReduction:
    """The recipe of one distributed pass: chunk → combine → finalize.

    Parameters
    ----------
    name : str
        Task-name prefix (what the dashboard and the task stream show).
    chunk : callable
        ``chunk(X_block, *other_blocks, **kwargs) -> partial``: a pure function of
        one row chunk (``other_blocks`` are the matching chunks of ``y``, a mask
        ..., or ``None``). With ``with_start``, it also gets ``start=`` the global
        number of the chunk's first row (for errors naming a row).
    combine : callable
        ``combine(list_of_partials) -> partial``, associative: the tree may
        group partials in any way.
    finalize : callable, optional
        ``finalize(root_partial) -> result``, run on the client after compute
        (checks of the counts, turning sums into the small system).
    with_start : bool
        Pass ``start=`` to ``chunk``.
    """

    name: str
    chunk: Callable[..., Any]
    combine: Callable[[list[Any]], Any]
    finalize: Callable[[Any], Any] | None = None
    with_start: bool = False


def row_starts(chunks: Sequence[int]) -> list[int]:
    """Global number of the first row of each chunk of row lengths ``chunks``."""
    return [int(s) for s in np.concatenate(([0], np.cumsum(chunks)[:-1]))]


def reduction_graph(
    reduction: RowReduction,
    X: da.Array,
    *others: da.Array | None,
    split_every: int | None = None,
    **kwargs: Any,
) -> Delayed:
    """The graph of one pass: ``reduction.chunk`` per row chunk, tree-combined (unfinalized).

    ``X`` and ``others`` must share row chunks (see :func:`as_row_chunked`);
    ``kwargs`` go to every chunk call (wrap a large array in one
    :func:`dask.delayed` so that it travels once, not once per task).
    """
    if reduction.with_start:
        parts = row_partials(reduction.chunk, X, *others, name=reduction.name,
                             starts=row_starts(X.chunks[0]), **kwargs)
    else:
        parts = row_partials(reduction.chunk, X, *others, name=reduction.name, **kwargs)
    return tree_reduce(parts, reduction.combine, split_every=split_every,
                       name=f"{reduction.name}-combine")


def run_reduction(
    reduction: RowReduction,
    X: da.Array,
    *others: da.Array | None,
    split_every: int | None = None,
    label: str | None = None,
    **kwargs: Any,
) -> Any:
    """Run one pass (one read of ``X`` and ``others``) and finalize its result.

    Computes through :func:`bigkern.cluster.compute.compute` (the cluster's client when
    there is one, with progress under ``label``).
    """
    from bigkern.cluster.compute import compute

    graph = reduction_graph(reduction, X, *others, split_every=split_every, **kwargs)
    (root,) = compute(graph, label=label or reduction.name)
    return reduction.finalize(root) if reduction.finalize is not None else root


def tree_reduce(
    partials: Sequence[Delayed],
    combine: Callable[[list[Any]], Any],
    *,
    split_every: int | None = None,
    name: str = "combine",
) -> Delayed:
    """Merge ``partials`` in a tree of fan-in ``split_every`` with ``combine(list) -> partial``."""
    if not partials:
        raise ValueError("nothing to reduce: the input has no chunks")
    k = max(2, int(split_every or config.get("split_every")))
    level = list(partials)
    fn = dask.delayed(combine, pure=True, name=name)
    while len(level) > 1:
        level = [fn(level[i : i + k]) for i in range(0, len(level), k)]
    return level[0]


def valid_rows(
    Xb: np.ndarray, mb: np.ndarray | None, *, extremes: bool = False
) -> tuple[np.ndarray, dict[str, Any]]:
    """Rows of a chunk usable for fitting, and counts of the rows left out.

    A row is used when its mask entry is true (or no mask is given) and every
    feature is finite. Left-out rows are counted as ``masked`` (mask false),
    ``absent`` (every feature non-finite: no data there) or ``nonfinite``
    (some but not all features non-finite); the ``nonfinite`` rows are also
    counted per feature, as ``nonfinite_feature_<j>`` for column ``j`` (see
    :func:`nonfinite_by_column`). Every count is a plain int, so the counts
    add with :func:`add_counts` and fit in netCDF/zarr attributes.

    With ``extremes`` (the first pass of a fit), the counts also carry the
    usable rows' :class:`~bigkern.reduce.extremes.ValueExtremes` under the key
    ``"extremes"``: they add with the counts, and :func:`int_counts` leaves them
    out of attributes (see :func:`bigkern.reduce.extremes.warn_suspected_fills`).
    """
    X = as_float_block(Xb)
    use_mask = mb is not None
    m = np.ascontiguousarray(mb, dtype=bool) if use_mask else np.zeros(0, dtype=bool)
    from bigkern.reduce.row_loops import SMALL_CHUNK_VALUES, row_status, row_status_small

    if X.size <= SMALL_CHUNK_VALUES:
        valid, c = row_status_small(X, m if use_mask else None)
    else:
        valid, c = row_status(X, m, use_mask)
    counts = {"rows": int(c[0]), "masked": int(c[1]), "absent": int(c[2]),
              "nonfinite": int(c[3]), "valid": int(c[4])}
    by_column = nonfinite_by_column(X, valid, m if use_mask else None, counts["nonfinite"])
    counts.update({f"{NONFINITE_FEATURE}{j}": int(v) for j, v in enumerate(by_column)})
    if extremes:
        from bigkern.reduce.extremes import EXTREMES_KEY, check_enabled, chunk_extremes

        if check_enabled():
            counts[EXTREMES_KEY] = chunk_extremes(X, valid)
    return valid, counts


def int_counts(counts: Any, *, prefix: str = "n_") -> dict[str, int]:
    """The integer row counts of ``counts`` as attributes (``<prefix><key>``), and only them.

    Leaves out what is not a count (the ``"extremes"`` a first pass carries).
    """
    return {f"{prefix}{k}": int(v) for k, v in counts.items()
            if isinstance(v, int | np.integer)}


def nonfinite_by_column(
    X: np.ndarray, valid: np.ndarray, mask: np.ndarray | None, n_nonfinite: int
) -> np.ndarray:
    """Per column, the rows left out because that feature is non-finite.

    Counted over the *nonfinite* rows of :func:`valid_rows` (mask true, some
    but not all features non-finite): absent rows (no finite feature: no data
    at all) and masked rows are not a feature's fault. A row with two
    non-finite features counts once in each, so the sum over columns is at
    least ``n_nonfinite``. Costs nothing when ``n_nonfinite`` is 0.
    """
    d = X.shape[1]
    if not n_nonfinite:
        return np.zeros(d, dtype=np.int64)
    left_out = ~valid if mask is None else ~valid & mask
    bad = ~np.isfinite(X[left_out])
    present = ~bad.all(axis=1)
    return bad[present].sum(axis=0, dtype=np.int64)


def per_feature_counts(
    counts: Any, names: Sequence[str], *, prefix: str = "n_"
) -> dict[str, int]:
    """``{feature name: rows left out because it is non-finite}`` from counts or attrs.

    ``counts`` holds ``<prefix>nonfinite_feature_<j>`` keys (``prefix`` is
    ``"n_"`` for the attrs of bins, quantile summaries and fit reports, ``""``
    for the raw counts of :func:`valid_rows`); column ``j`` is ``names[j]``.
    Features without a key (counts from before per-feature counting) are left out.
    """
    out = {}
    for j, name in enumerate(names):
        key = f"{prefix}{NONFINITE_FEATURE}{j}"
        if key in counts:
            out[str(name)] = int(counts[key])
    return out


def without_per_feature(counts: Any, *, prefix: str = "n_") -> dict[str, Any]:
    """``counts`` without its per-column ``nonfinite_feature_<j>`` keys."""
    return {k: v for k, v in counts.items()
            if not str(k).startswith(f"{prefix}{NONFINITE_FEATURE}")}


def require_finite_rows(X: Any, what: str, needed_for: str, offset: int = 0) -> np.ndarray:
    """``X`` as a 2-D float64 array; a row with a non-finite feature raises, naming it.

    For methods that cannot leave rows out (a Gram matrix has one row per sample).
    ``offset`` is the global number of ``X``'s first row (for a chunk).
    """
    from bigkern.errors import DataQualityError

    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"{what} must be 2-D (sample, feature); got shape {X.shape}")
    bad = ~np.isfinite(X).all(axis=1)
    if bad.any():
        rows = np.flatnonzero(bad)
        raise DataQualityError(
            f"{what} has {len(rows)} row(s) with a non-finite feature (first: row "
            f"{offset + int(rows[0])}); "
            f"{needed_for} needs finite features: drop or impute them first"
        )
    return X


def as_float_block(Xb: np.ndarray) -> np.ndarray:
    """A C-contiguous float32/float64 copy-if-needed of a chunk."""
    X = np.asarray(Xb)
    if X.dtype not in (np.float32, np.float64):
        X = X.astype(np.float64)
    return np.ascontiguousarray(X)


def add_counts(parts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Sum dicts of row counts key by key (ints, or per-feature arrays added elementwise).

    A key missing from some parts counts 0 there; inputs are never modified.
    """
    out: dict[str, Any] = {}
    for p in parts:
        for k, v in p.items():
            out[k] = out[k] + v if k in out else (v.copy() if isinstance(v, np.ndarray) else v)
    return out
