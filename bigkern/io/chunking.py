"""How many tasks a chunking makes, how large they are, and what to use instead.

Every bigkern pass runs one task per chunk, and the scheduler spends about
0.35–0.39 s per 1,000 tasks (~2,500 tasks/s; ``benchmarks/scale.py``, part
(b)), so the chunking decides whether a job's pace is set by its cores or by
its one scheduler:

* bins and prediction run at 3–4 million pixels per second per core, so with
  tasks of 10⁶ pixels the scheduler keeps ~700 cores busy, with tasks of 10⁵
  pixels only ~70: below ~10⁶ pixels per task, overhead dominates at scale;
* a graph of more than ~10⁶ tasks is beyond what one scheduler handles well
  (several minutes of scheduling per pass, and a graph of gigabytes).

:func:`task_plan` counts the tasks a chunking makes and recommends chunks of
about ``bigkern.chunk_guidance.target_pixels_per_task`` pixels (10⁷) and at
most ``bigkern.chunk_bytes`` bytes (100 MB) per task, each made of whole
existing chunks. :func:`check_chunks` warns (:class:`ChunkWarning`) when a
chunking crosses either limit. :func:`bigkern.io.open_scenes` plans a store's
tasks from its metadata alone (:func:`planned_tasks`) before it lists, reads or
computes anything, and :func:`guide_chunks` then refuses, rechunks or warns, as
``bigkern.chunk_guidance.too_many_tasks`` says. The limits are the
``bigkern.chunk_guidance`` settings.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr
from dask.array.core import normalize_chunks

from bigkern import config
from bigkern.errors import BigkernWarning

__all__ = ["ChunkWarning", "TaskPlan", "check_chunks", "crosses_guidance", "guide_chunks",
           "planned_tasks", "task_plan"]

#: Defaults of the ``bigkern.chunk_guidance`` settings, used when a key is absent
#: (e.g. after ``dask.config.set({"bigkern.chunk_guidance": {"enabled": True}})``).
_DEFAULTS = {
    "enabled": True,
    "max_tasks": 1_000_000,
    "min_pixels_per_task": 1_000_000,
    "target_pixels_per_task": 10_000_000,
    "too_many_tasks": "rechunk",
}
_POLICIES = ("rechunk", "error", "warn")

Chunks = tuple[tuple[int, ...], ...]


class ChunkWarning(BigkernWarning):
    """A chunking that makes too many tasks, or tasks too small for their overhead.

    Examples
    --------
    Chunks given to :func:`bigkern.open_scenes` are kept, and warned about when
    their tasks are smaller than ``bigkern.chunk_guidance.min_pixels_per_task``
    (lowered here to suit a small store):

    >>> import tempfile, warnings
    >>> import bigkern
    >>> from bigkern.datasets import make_scenes
    >>> tmp = tempfile.TemporaryDirectory()
    >>> store = bigkern.write_scenes(make_scenes(2, (64, 64), radiances=False),
    ...                              f"{tmp.name}/s.zarr")
    >>> small = {"chunk_guidance.min_pixels_per_task": 1000}
    >>> with bigkern.config.set(**small), warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     ds = bigkern.open_scenes(store, chunks={"y": 8})  # tasks of 8 x 64 pixels
    >>> [w.category.__name__ for w in caught]
    ['ChunkWarning']
    >>> issubclass(bigkern.ChunkWarning, bigkern.BigkernWarning)
    True
    >>> tmp.cleanup()
    """


@dataclass(frozen=True)
class TaskPlan:
    """The tasks one task per chunk makes, and the recommended chunking.

    "Pixels" are the elements of the array (the pixels of a scene variable).

    Attributes
    ----------
    dims : tuple of str
        Dimension names (``dim_0``, ``dim_1`` … for an array without names).
    shape : tuple of int
        The array's shape.
    chunks : tuple of tuple of int
        The chunks the plan is for, in dask's form (sizes along each dim).
    n_tasks : int
        Number of chunks: one task per chunk and pass.
    pixels : int
        Pixels of the whole array.
    pixels_per_task_min, pixels_per_task_median : int, float
        Smallest and median pixels of a chunk.
    bytes_per_task : int
        Bytes of the largest chunk.
    recommended : dict of str to int
        Chunk size along each dim: a multiple of the existing chunk size (the
        largest chunk along a dim whose chunks are irregular), grown from the
        last dim to the first, so that a task holds about
        ``bigkern.chunk_guidance.target_pixels_per_task`` pixels and at most
        ``bigkern.chunk_bytes`` bytes. Chunks already larger are kept.
    recommended_tasks : int
        Number of tasks with the recommended chunks.
    recommended_pixels_per_task : int
        Pixels of the largest recommended chunk.
    recommended_bytes_per_task : int
        Bytes of the largest recommended chunk.
    """

    dims: tuple[str, ...]
    shape: tuple[int, ...]
    chunks: Chunks = field(repr=False)
    n_tasks: int
    pixels: int
    pixels_per_task_min: int
    pixels_per_task_median: float
    bytes_per_task: int
    recommended: dict[str, int] = field(hash=False)
    recommended_tasks: int
    recommended_pixels_per_task: int
    recommended_bytes_per_task: int


def _setting(name: str) -> Any:
    return config.get(f"chunk_guidance.{name}", _DEFAULTS[name])


def _dims_and_data(array: Any) -> tuple[tuple[str, ...], Any]:
    """Dimension names and the underlying array (dask or numpy-like) of ``array``."""
    if isinstance(array, xr.Dataset):
        raise TypeError("task_plan takes one array; check_chunks takes a Dataset")
    if isinstance(array, xr.DataArray):
        return tuple(str(d) for d in array.dims), array.data
    if not hasattr(array, "shape"):
        array = np.asarray(array)
    return tuple(f"dim_{i}" for i in range(len(array.shape))), array


def _normalized_chunks(data: Any, dims: tuple[str, ...], chunks: Any) -> Chunks:
    """``chunks`` (or the array's own; one chunk when it is not dask) in dask's form."""
    if any(np.isnan(n) for n in data.shape):
        raise ValueError("the array's chunk sizes are unknown (NaN): compute them first "
                         "(dask's compute_chunk_sizes)")
    shape = tuple(int(n) for n in data.shape)
    own = data.chunks if isinstance(data, da.Array) else tuple((n,) for n in shape)
    if chunks is None:
        return tuple(tuple(int(c) for c in cs) for cs in own)
    if isinstance(chunks, Mapping):
        unknown = [k for k in chunks if isinstance(k, str) and k not in dims]
        if unknown:
            raise ValueError(f"chunks name dims {unknown} that the array lacks; it has {dims}")
        by_axis = {(dims.index(k) if isinstance(k, str) else int(k)): v
                   for k, v in chunks.items()}
        chunks = tuple(by_axis.get(i, own[i]) for i in range(len(shape)))
    out = normalize_chunks(chunks, shape, dtype=data.dtype, previous_chunks=own)
    return tuple(tuple(int(c) for c in cs) for cs in out)


def _task_sizes(chunks: Chunks) -> tuple[np.ndarray, np.ndarray]:
    """Distinct pixels per chunk and how many chunks have each, without listing every chunk."""
    values, counts = np.ones(1, dtype=np.int64), np.ones(1, dtype=np.int64)
    for cs in chunks:
        u, c = np.unique(np.asarray(cs, dtype=np.int64), return_counts=True)
        values = np.multiply.outer(values, u).ravel()
        counts = np.multiply.outer(counts, c).ravel()
        values, inverse = np.unique(values, return_inverse=True)
        counts = np.bincount(inverse.ravel(), weights=counts).astype(np.int64)
    return values, counts


def _weighted_median(values: np.ndarray, counts: np.ndarray) -> float:
    """Median of the multiset holding ``counts[i]`` copies of the sorted ``values[i]``."""
    total = int(counts.sum())
    cum = np.cumsum(counts)
    lo = values[np.searchsorted(cum, (total - 1) // 2, side="right")]
    hi = values[np.searchsorted(cum, total // 2, side="right")]
    return (float(lo) + float(hi)) / 2


def _recommend(shape: tuple[int, ...], chunks: Chunks, itemsize: int,
               dims: tuple[str, ...]) -> dict[str, int]:
    """Whole-chunk multiples, last dim first, up to the target pixels and the byte limit."""
    limit = max(1, min(int(_setting("target_pixels_per_task")),
                       int(config.get("chunk_bytes")) // max(1, itemsize)))
    sizes = [max(cs) if cs else 0 for cs in chunks]
    inner = 1
    for axis in range(len(shape) - 1, -1, -1):
        base, length = sizes[axis], shape[axis]
        if base == 0:
            continue
        k = max(1, min(len(chunks[axis]), limit // (base * inner)))
        size = length if k >= len(chunks[axis]) else min(length, k * base)
        sizes[axis] = size
        if size < length:
            break  # a larger outer chunk would be at least twice this task: over the limit
        inner *= size
    return dict(zip(dims, sizes, strict=True))


def task_plan(array: Any, chunks: Any = None) -> TaskPlan:
    """Count the tasks (one per chunk) of ``array`` and recommend a chunking.

    Parameters
    ----------
    array : dask array, xarray.DataArray or array-like
        The array whose chunks are planned; an array that is not dask-backed
        is one chunk.
    chunks : dict, tuple, int or str, optional
        Chunks to plan instead of the array's own: anything dask accepts
        (``{"y": 512}``, ``(1, 512, 2048)``, ``"auto"``); a mapping may name
        dims (of a DataArray) or axes, and keeps the array's chunks along the
        others.

    Returns
    -------
    TaskPlan
        Task count, pixels and bytes per task, and the recommended chunks.

    Examples
    --------
    >>> import dask.array as da
    >>> plan = task_plan(da.zeros((10, 1000, 1000), chunks=(1, 100, 1000)))
    >>> plan.n_tasks, plan.pixels_per_task_min, plan.recommended
    (100, 100000, {'dim_0': 10, 'dim_1': 1000, 'dim_2': 1000})
    """
    dims, data = _dims_and_data(array)
    norm = _normalized_chunks(data, dims, chunks)
    return _plan(dims, tuple(int(n) for n in data.shape), np.dtype(data.dtype), norm)


def planned_tasks(dims: tuple[str, ...], shape: tuple[int, ...], dtype: Any,
                  chunks: Any) -> TaskPlan:
    """:func:`task_plan` of an array known only by its metadata (nothing allocated or graphed).

    Parameters
    ----------
    dims, shape, dtype
        The array's dimension names, shape and dtype (e.g. from a store's metadata).
    chunks : tuple, mapping or str
        Its chunks, in any form dask accepts; a mapping by dim name.

    Returns
    -------
    TaskPlan
    """
    if isinstance(chunks, Mapping):
        chunks = tuple(chunks.get(d, n) for d, n in zip(dims, shape, strict=True))
    norm = normalize_chunks(chunks, shape, dtype=np.dtype(dtype))
    return _plan(tuple(dims), tuple(int(n) for n in shape), np.dtype(dtype),
                 tuple(tuple(int(c) for c in cs) for cs in norm))


def _plan(dims: tuple[str, ...], shape: tuple[int, ...], dtype: np.dtype,
          norm: Chunks) -> TaskPlan:
    itemsize = int(dtype.itemsize)
    values, counts = _task_sizes(norm)
    n_tasks = int(counts.sum())
    recommended = _recommend(shape, norm, itemsize, dims)
    rec_sizes = [recommended[d] for d in dims]
    rec_tasks = int(np.prod([-(-n // s) if s else 1 for n, s in zip(shape, rec_sizes,
                                                                       strict=True)]))
    return TaskPlan(
        dims=dims,
        shape=shape,
        chunks=norm,
        n_tasks=n_tasks,
        pixels=int(np.prod(shape)),
        pixels_per_task_min=int(values[0]),
        pixels_per_task_median=_weighted_median(values, counts),
        bytes_per_task=int(values[-1]) * itemsize,
        recommended=recommended,
        recommended_tasks=rec_tasks,
        recommended_pixels_per_task=int(np.prod(rec_sizes)),
        recommended_bytes_per_task=int(np.prod(rec_sizes)) * itemsize,
    )


def _worst_variable(ds: xr.Dataset, what: str) -> tuple[str, TaskPlan]:
    """The variable of ``ds`` whose chunks make the most tasks (ties: the smallest tasks)."""
    plans = {str(name): task_plan(var) for name, var in ds.data_vars.items()}
    if not plans:
        raise ValueError(f"{what}: the dataset has no variables whose chunks could be checked")
    name = max(plans, key=lambda k: (plans[k].n_tasks, -plans[k].pixels_per_task_median))
    return name, plans[name]


def _bytes(n: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{int(n)} B"


def check_chunks(array_or_dataset: Any, *, what: str, stacklevel: int = 2) -> TaskPlan:
    """Warn when a chunking makes too many tasks or too small ones; return its plan.

    The warning (:class:`ChunkWarning`) names ``what``, the task count, the
    pixels per task and the recommended chunks. It is given when the chunks
    make more than ``bigkern.chunk_guidance.max_tasks`` tasks, or a median
    task of fewer than ``bigkern.chunk_guidance.min_pixels_per_task`` pixels —
    but never for an array of fewer pixels than that in all (small data is
    fine in one chunk or a few), nor when ``bigkern.chunk_guidance.enabled``
    is false.

    Parameters
    ----------
    array_or_dataset : dask array, xarray.DataArray or xarray.Dataset
        The data; of a Dataset, the variable whose chunks make the most tasks
        is checked and named.
    what : str
        What the data are, for the message: a store path, a variable.
    stacklevel : int
        Passed to :func:`warnings.warn` (2: the caller of ``check_chunks``).

    Returns
    -------
    TaskPlan
        The plan checked, whether or not it warned.

    Raises
    ------
    ValueError
        A Dataset without data variables.
    """
    if isinstance(array_or_dataset, xr.Dataset):
        name, plan = _worst_variable(array_or_dataset, what)
        what = f"{what} (variable {name!r})"
    else:
        plan = task_plan(array_or_dataset)
    if not _setting("enabled"):
        return plan
    problems = _problems(plan)
    if problems:
        warnings.warn(f"{what}: {_advice(plan, problems)} Setting bigkern.chunk_guidance."
                      f"enabled to false silences this warning.",
                      ChunkWarning, stacklevel=stacklevel)
    return plan


def _problems(plan: TaskPlan) -> list[str]:
    """Which of the chunk guidance's limits ``plan`` crosses (none for small data)."""
    max_tasks = int(_setting("max_tasks"))
    min_pixels = int(_setting("min_pixels_per_task"))
    if plan.pixels < min_pixels:
        return []
    problems = []
    if plan.n_tasks > max_tasks:
        problems.append(f"more than bigkern.chunk_guidance.max_tasks ({max_tasks:,})")
    if plan.pixels_per_task_median < min_pixels:
        problems.append(f"fewer pixels per task than bigkern.chunk_guidance.min_pixels_per_task "
                        f"({min_pixels:,})")
    return problems


def crosses_guidance(plan: TaskPlan) -> bool:
    """Whether ``plan`` crosses a limit of the chunk guidance (silently; False when disabled).

    The limits :func:`check_chunks` warns about: more than
    ``bigkern.chunk_guidance.max_tasks`` tasks, or a median task of fewer than
    ``bigkern.chunk_guidance.min_pixels_per_task`` pixels (never for an array of
    fewer pixels than that in all).

    Parameters
    ----------
    plan : TaskPlan

    Returns
    -------
    bool

    Examples
    --------
    >>> dims, shape = ("scene", "y", "x"), (100, 1000, 1000)
    >>> crosses_guidance(planned_tasks(dims, shape, "f4", (1, 10, 1000)))  # 10⁴ pixels a task
    True
    >>> crosses_guidance(planned_tasks(dims, shape, "f4", (1, 1000, 1000)))
    False
    """
    return bool(_setting("enabled")) and bool(_problems(plan))


def _advice(plan: TaskPlan, problems: list[str]) -> str:
    max_tasks = int(_setting("max_tasks"))
    scale = ""
    if plan.recommended_tasks > max_tasks:
        scale = (f" Even so there are more than {max_tasks:,} tasks: split the job into "
                 f"several graphs (e.g. by scene).")
    return (
        f"its chunks make {plan.n_tasks:,} tasks of {plan.pixels_per_task_median:,.0f}"
        f" pixels (median; smallest {plan.pixels_per_task_min:,}; largest "
        f"{_bytes(plan.bytes_per_task)}), {' and '.join(problems)}; at ~0.4 s of scheduler "
        f"time per 1,000 tasks, the scheduler rather than the cores would set the pace. "
        f"Recommended chunks: {plan.recommended} ({plan.recommended_tasks:,} "
        f"task{'s' if plan.recommended_tasks != 1 else ''} of up to "
        f"{plan.recommended_pixels_per_task:,} pixels, "
        f"{_bytes(plan.recommended_bytes_per_task)}): pass them as chunks= when opening "
        f"(open_scenes(..., chunks=...)) or write the store with them "
        f"(write_scenes(..., chunks=...)).{scale}")


def guide_chunks(plan: TaskPlan, *, what: str, explicit: bool,
                 stacklevel: int = 2) -> dict[str, int] | None:
    """Apply ``bigkern.chunk_guidance.too_many_tasks`` to a store's plan, before any compute.

    ``error`` refuses a chunking that crosses the guidance's limits;
    ``rechunk`` reads the store in the recommended chunks instead (whole store
    chunks, so every value and every result is the same) unless the chunks
    were given explicitly (``explicit``: the caller's choice is kept and
    warned about); ``warn`` only warns (:class:`ChunkWarning`), as
    :func:`check_chunks` does.

    Parameters
    ----------
    plan : TaskPlan
        The plan of the chunks the store would be read with (e.g. from
        :func:`planned_tasks`, from metadata alone).
    what : str
        What is read, for the message.
    explicit : bool
        Whether the caller chose these chunks (``open_scenes(chunks=...)``).
    stacklevel : int
        Passed to :func:`warnings.warn`.

    Returns
    -------
    dict of str to int or None
        Chunks to read with instead, or None to keep them.

    Raises
    ------
    StoreError
        With ``error``; with ``rechunk`` when even the recommended chunks make
        more than ``max_tasks`` tasks; or an unknown policy.
    """
    from bigkern.errors import StoreError

    if not _setting("enabled"):
        return None
    policy = str(_setting("too_many_tasks"))
    if policy not in _POLICIES:
        raise StoreError(f"bigkern.chunk_guidance.too_many_tasks is {policy!r}; expected one "
                         f"of {', '.join(_POLICIES)}")
    problems = _problems(plan)
    if not problems:
        return None
    advice = _advice(plan, problems)
    if policy == "error":
        raise StoreError(f"{what}: refused before any computation: {advice} (Or set "
                         f"bigkern.chunk_guidance.too_many_tasks to rechunk to read it so, or "
                         f"to warn to go ahead.)")
    if policy == "rechunk" and not explicit:
        if plan.recommended_tasks > int(_setting("max_tasks")):
            raise StoreError(f"{what}: refused before any computation: {advice}")
        warnings.warn(f"{what}: {advice} Reading it in the recommended chunks "
                      f"(bigkern.chunk_guidance.too_many_tasks = rechunk).",
                      ChunkWarning, stacklevel=stacklevel)
        return dict(plan.recommended)
    warnings.warn(f"{what}: {advice} Setting bigkern.chunk_guidance.enabled to false "
                  f"silences this warning.", ChunkWarning, stacklevel=stacklevel)
    return None
