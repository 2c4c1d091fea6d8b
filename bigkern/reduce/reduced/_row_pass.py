"""The shared parts of the least-squares passes (one read of ``X`` and ``y``).

The passes of :mod:`bigkern.reduce.reduced.normal_equations` and
:mod:`bigkern.reduce.reduced.folds` turn every row chunk of ``X`` (n, d) and
``y`` (n,) into a partial ``{"acc": ndarray, "counts": dict}``; partials are
added, and the row counts are checked (rows with a non-finite feature or target
are left out, counted, and tolerated up to ``bigkern.max_nonfinite_fraction``).
:func:`run_pass` declares that recipe and runs it on the one pass driver of
:mod:`bigkern.reduce.passes`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import dask
import dask.array as da
import numpy as np

from bigkern import config
from bigkern.cluster.compute import task_threads
from bigkern.errors import DataQualityError
from bigkern.kernels import kernel_blocks
from bigkern.kernels.basis import block_step
from bigkern.reduce.passes import (
    RowReduction,
    add_counts,
    as_float_block,
    as_row_chunked,
    run_reduction,
    unwrap_samples,
    valid_rows,
)

__all__ = ["BasisBroadcast", "as_arrays", "augmented_blocks", "count_attrs", "run_pass",
           "usable_rows"]


def usable_rows(Xb: np.ndarray, yb: np.ndarray, start: int, mb: np.ndarray | None = None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, int]]:
    """The chunk as floats, y as float64, the usable rows and the counts (with first bad rows).

    Rows where the mask chunk ``mb`` is false are left out and counted as ``masked``
    (their ``y`` is never looked at: unlabelled pixels may hold any value there).
    """
    X = as_float_block(Xb)
    valid, counts = valid_rows(X, None if mb is None else np.asarray(mb).ravel())
    y = np.asarray(yb, dtype=np.float64).ravel()
    bad_y = valid & ~np.isfinite(y)
    counts["nonfinite_y"] = int(bad_y.sum())
    counts["valid"] -= counts["nonfinite_y"]
    valid &= ~bad_y
    firsts = {"first_nonfinite": -1, "first_nonfinite_y": -1}
    if counts["nonfinite"]:
        some = ~valid & ~bad_y & np.isfinite(X).any(axis=1)
        firsts["first_nonfinite"] = start + int(np.flatnonzero(some)[0])
    if counts["nonfinite_y"]:
        firsts["first_nonfinite_y"] = start + int(np.flatnonzero(bad_y)[0])
    return X, y, valid, {**counts, **firsts}


def augmented_blocks(X: np.ndarray, basis: Any, valid: np.ndarray, block_rows: int | None
                     ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The augmented kernel rows ``a = [K(x, Ã), −1]`` of ``X``'s valid rows, a block at a
    time: ``(rows, A)``, ``A`` a float64 view of one work buffer, overwritten by the next
    block (the reduced SVM's passes fold each block into their sums before the next)."""
    m = basis.n_basis
    step = block_step(max(1, len(X)), block_rows)
    work = np.empty((step, m + 1))
    for rows, G in kernel_blocks(X, basis, valid=valid, block_rows=step):
        A = work[:len(rows)]
        A[:, :m] = G
        A[:, m] = -1.0
        yield rows, A


def combine_partials(parts: list[dict[str, Any]]) -> dict[str, Any]:
    acc = parts[0]["acc"].copy(order="K")
    for p in parts[1:]:
        acc += p["acc"]
    firsts = ("first_nonfinite", "first_nonfinite_y")
    counts = add_counts([{k: v for k, v in p["counts"].items() if k not in firsts}
                         for p in parts])
    for k in firsts:
        counts[k] = min((p["counts"][k] for p in parts if p["counts"][k] >= 0), default=-1)
    return {"acc": acc, "counts": counts}


def as_arrays(X: Any, y: Any) -> tuple[Any, Any, list[str] | None]:
    """Array data of ``X`` (sample, feature) and ``y``, and ``X``'s feature names if any."""
    X, y, _, names = unwrap_samples(X, y, None, None)
    if y is None:
        raise ValueError("y is required: one target per row of X")
    if not isinstance(X, da.Array):
        X = np.asarray(X)
    if not isinstance(y, da.Array):
        y = np.asarray(y)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (sample, feature); got shape {X.shape}")
    if y.ndim != 1 or y.shape[0] != X.shape[0]:
        raise ValueError(f"y must be 1-D with one entry per row of X ({X.shape[0]}); got shape "
                         f"{y.shape}")
    return X, y, names


def run_pass(X: Any, y: Any, func: Any, *, name: str, label: str, split_every: int | None,
             mask: Any = None, **kwargs: Any) -> dict[str, Any]:
    """One read of ``X``, ``y`` (and ``mask``): ``func`` per row chunk, tree-reduced; checks counts.

    numpy input is split into at least :func:`bigkern.cluster.compute.task_threads`
    row chunks (BLAS runs one thread per task on dask's threaded scheduler).

    ``func(X_chunk, y_chunk, mask_chunk, start=first_row, **kwargs)`` returns a
    partial ``{"acc": ndarray, "counts": dict}`` (``mask_chunk`` is None without a
    mask); the ``acc`` arrays are added.
    """
    # in-memory rows: one chunk per thread at least, as the work per row is heavy (m̃²)
    Xd, yd, md = as_row_chunked(X, y, mask, min_chunks=task_threads())
    recipe = RowReduction(name, chunk=func, combine=combine_partials, finalize=_checked,
                          with_start=True)
    return run_reduction(recipe, Xd, yd, md, split_every=split_every, label=label, **kwargs)


def _checked(res: dict[str, Any]) -> dict[str, Any]:
    check_counts(res["counts"])
    return res


def check_counts(c: dict[str, int]) -> None:
    bad = c["nonfinite"] + c["nonfinite_y"]
    present = bad + c["valid"]
    limit = float(config.get("max_nonfinite_fraction"))
    where = []
    if c["nonfinite"]:
        where.append(f"{c['nonfinite']} with a non-finite feature in X (first: row "
                     f"{c['first_nonfinite']})")
    if c["nonfinite_y"]:
        where.append(f"{c['nonfinite_y']} with a non-finite y (first: row "
                     f"{c['first_nonfinite_y']})")
    if present and bad / present > limit:
        raise DataQualityError(
            f"{bad} of {present} present rows ({bad / present:.1%}) are unusable: "
            f"{'; '.join(where)}; over the limit bigkern.max_nonfinite_fraction={limit:g}")
    if c["valid"] == 0:
        masked = f"are masked out ({c['masked']}), " if c.get("masked") else ""
        raise DataQualityError(
            f"no usable rows: all {c['rows']} rows {masked}have no finite feature "
            f"({c['absent']}) or are unusable{': ' + '; '.join(where) if where else ''}")


def count_attrs(c: dict[str, int]) -> dict[str, int]:
    """Counts as attributes: ``n_<count>`` (``n_masked`` only when rows were masked)."""
    return {f"n_{k}" if not k.startswith("first") else k: int(v) for k, v in c.items()
            if k != "masked" or v}


class BasisBroadcast:
    """Ships a pass object's ``basis`` once per fit: scattered to every worker when a
    distributed client is in use, else one :func:`dask.delayed` object shared by all the
    tasks of a pass. A context manager; :meth:`basis_handle` is what tasks take."""

    basis: Any
    _handle: Any = None
    _future: Any = None

    def __enter__(self) -> Any:
        from bigkern.cluster.compute import current_client

        client = current_client()
        if client is not None:
            self._future = client.scatter(self.basis, broadcast=True, hash=False)
            self._handle = self._future
        else:
            self._handle = dask.delayed(self.basis, pure=True, traverse=False)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._future is not None:
            self._future.release()
        self._future = self._handle = None

    def basis_handle(self, name: str) -> Any:
        """The shipped basis, or an error when used outside its ``with`` block."""
        if self._handle is None:
            raise RuntimeError(f"use {name} as a context manager (with ...:)")
        return self._handle
