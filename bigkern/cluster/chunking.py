"""Chunk guidance: warn, refuse or rechunk when a chunking makes too many tasks or too small ones.

Every bigkern pass runs one task per chunk, and the scheduler spends a fixed
time on each task whatever its size, so the chunking decides whether a job's
pace is set by its cores or by its one scheduler:

* a task's work grows with its pixels and the scheduler's share does not: with
  tasks of 10⁶ pixels one scheduler keeps hundreds of cores busy, with tasks of
  10⁵ pixels a tenth as many, so below ~10⁶ pixels per task the overhead
  dominates at scale;
* a graph of more than ~10⁶ tasks is beyond what one scheduler handles well
  (minutes of scheduling per pass, and a graph of gigabytes).

How many tasks a chunking makes, and the chunks to use instead, are
:mod:`bigkern.cluster.task_plans`' business; this module holds the guidance.
:func:`check_chunks` warns (:class:`ChunkWarning`) when a chunking crosses
either limit. :func:`bigkern.scenes.open_scenes` plans a store's tasks from its
metadata alone (:func:`~bigkern.cluster.task_plans.planned_tasks`) before it
lists, reads or computes anything, and :func:`guide_chunks` then refuses,
rechunks or warns, as
``bigkern.chunk_guidance.too_many_tasks`` says. The limits are the
``bigkern.chunk_guidance`` settings.
"""

from __future__ import annotations

import warnings
from typing import Any

import xarray as xr

from bigkern.cluster.task_plans import TaskPlan, _setting, task_plan
from bigkern.errors import BigkernWarning

__all__ = ["ChunkWarning", "check_chunks", "crosses_guidance", "guide_chunks"]

_POLICIES = ("rechunk", "error", "warn")


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
    >>> from bigkern.cluster.task_plans import planned_tasks
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
        f"{_bytes(plan.bytes_per_task)}), {' and '.join(problems)}; the scheduler spends a "
        f"fixed time on every task, so it rather than the cores would set the pace. "
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
        :func:`~bigkern.cluster.task_plans.planned_tasks`, from metadata alone).
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
