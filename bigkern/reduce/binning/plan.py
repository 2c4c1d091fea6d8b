"""How :func:`~bigkern.reduce.binning.percentile.percentile_bins` reads the data: its plans.

Every plan gives the same bins, bit for bit; they differ in how many times they
read the data and in what they hold in memory meanwhile:

``"in-memory"``
    A numpy input binned in the client in one read, with no task graph
    (:mod:`bigkern.reduce.binning.in_memory`). Dask inputs are computed into
    memory first.
``"recorded"``
    Histograms recorded at write, one read (:mod:`bigkern.reduce.recorded_histograms`).
``"one-read"``
    A seeded sample places the edges and one full read bins the rows and
    checks the sample (:mod:`bigkern.reduce.binning.one_read`). The chunks
    the sample overlaps stay in worker memory until the read reaches them.
    When the read shows that the sample misplaced an edge, it was the fused
    plan's first read and the ``"fused-or-three-pass"`` plan finishes.
``"fused"``
    A key histogram read, then one read that bins the rows whose cells are
    certain and keeps the others on their workers
    (:mod:`bigkern.reduce.binning.fused`): two reads.
``"three-pass"``
    Histogram, refine and binning reads: three reads, nothing held.
``"fused-or-three-pass"``
    The histogram read, then the fused plan when at most
    ``bigkern.max_deferred_fraction`` of the rows would wait for the exact
    edges, else the three-pass plan.

:meth:`BinningPlan.choose` picks the fastest that fits: ``"in-memory"`` for a
numpy input of at most ``bigkern.in_memory_rows`` rows, ``"one-read"`` when
the chunks its sample holds take at most :data:`HELD_MEMORY_SHARE` of the
smallest worker's memory, else ``"fused-or-three-pass"``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

import dask
import numpy as np

from bigkern import config
from bigkern.cluster.memory import machine_memory, worker_memory
from bigkern.reduce.binning.fixed_point import FixedPointGrid
from bigkern.reduce.binning.one_read_sample import OneReadSample, sample_windows
from bigkern.reduce.binning.quantiles import QuantilePlan
from bigkern.reduce.passes import row_starts, unwrap_samples

__all__ = ["HELD_MEMORY_SHARE", "PLAN_NAMES", "BinningPlan", "PlanResult", "PlanRun",
           "held_sample_bytes"]

#: The plans' names, fastest first (``"in-memory"`` only for small inputs).
PLAN_NAMES = ("in-memory", "recorded", "one-read", "fused", "three-pass", "fused-or-three-pass")

#: Largest share of the smallest worker's memory that the one-read plan's held
#: chunks may take for :meth:`BinningPlan.choose` to pick it. In the worst case
#: every held chunk sits on one worker, which also reads its own chunk and holds
#: its kept rows meanwhile; distributed starts spilling at 60 % of the limit.
HELD_MEMORY_SHARE = 0.25


@dataclass(frozen=True)
class BinningPlan:
    """A plan of :func:`~bigkern.reduce.binning.percentile.percentile_bins`.

    Attributes
    ----------
    name : str
        One of :data:`PLAN_NAMES` (see the module docstring).
    sample : OneReadSample
        How the one-read plan samples the rows (unused by the other plans).

    Examples
    --------
    >>> import numpy as np
    >>> import dask.array as da
    >>> from bigkern.reduce.binning.plan import BinningPlan
    >>> BinningPlan.choose(np.zeros((1000, 3))).name
    'in-memory'
    >>> BinningPlan.choose(da.zeros((10**6, 3), chunks=(10**5, 3))).name
    'one-read'
    >>> BinningPlan("three-pass")
    BinningPlan(name='three-pass', sample=OneReadSample(rows=4194304, windows=2, z=4.0, seed=0, scale_offsets=(0, -1)))
    """  # noqa: E501

    name: str = "one-read"
    sample: OneReadSample = field(default_factory=OneReadSample)

    def __post_init__(self) -> None:
        if self.name not in PLAN_NAMES:
            raise ValueError(f"unknown percentile_bins plan {self.name!r}; the plans are "
                             f"{', '.join(repr(p) for p in PLAN_NAMES)}")
        if not isinstance(self.sample, OneReadSample):
            raise TypeError(f"sample must be a OneReadSample; got {type(self.sample).__name__}")

    @classmethod
    def choose(
        cls, X: Any, y: Any = None, mask: Any = None, *, sample: OneReadSample | None = None,
        memory_bytes: int | None = None,
    ) -> BinningPlan:
        """The fastest exact plan for these inputs that fits the workers' memory.

        Parameters
        ----------
        X, y, mask
            The inputs of :func:`~bigkern.reduce.binning.percentile.percentile_bins`.
        sample : OneReadSample, optional
            The one-read plan's sample (default ``OneReadSample()``).
        memory_bytes : int, optional
            Memory of the smallest worker; by default
            :func:`~bigkern.cluster.memory.worker_memory`, or this machine's memory
            without a cluster.

        Returns
        -------
        BinningPlan
            ``"in-memory"`` when none of the inputs is a dask collection and
            ``X`` has at most ``bigkern.in_memory_rows`` rows; else
            ``"one-read"`` when :func:`held_sample_bytes` is at most
            :data:`HELD_MEMORY_SHARE` of ``memory_bytes``; else
            ``"fused-or-three-pass"``.

        Examples
        --------
        >>> import dask.array as da
        >>> from bigkern.reduce.binning.plan import BinningPlan
        >>> X = da.zeros((10**6, 3), chunks=(10**5, 3))
        >>> BinningPlan.choose(X, memory_bytes=2**30).name
        'one-read'
        >>> BinningPlan.choose(X, memory_bytes=10**6).name
        'fused-or-three-pass'
        """
        sample = OneReadSample() if sample is None else sample
        if not any(dask.is_dask_collection(a) for a in (X, y, mask)):
            shape = np.shape(X)
            rows = shape[0] if len(shape) else 0
            if rows <= int(config.get("in_memory_rows")):
                return cls("in-memory", sample)
        if memory_bytes is None:  # the smallest worker's, else this machine's
            memory_bytes = worker_memory() or machine_memory()
        if held_sample_bytes(X, y, mask, sample) <= HELD_MEMORY_SHARE * memory_bytes:
            return cls("one-read", sample)
        return cls("fused-or-three-pass", sample)

    @classmethod
    def resolve(cls, plan: str | BinningPlan | None, X: Any, y: Any = None,
                mask: Any = None) -> BinningPlan:
        """The plan that ``plan`` (a name, a plan, or None: :meth:`choose`) gives.

        Examples
        --------
        >>> import numpy as np
        >>> from bigkern.reduce.binning.plan import BinningPlan
        >>> BinningPlan.resolve("fused", np.zeros((10, 2))).name
        'fused'
        >>> BinningPlan.resolve(None, np.zeros((10, 2))).name
        'in-memory'
        """
        if plan is None:
            return cls.choose(X, y, mask)
        if isinstance(plan, BinningPlan):
            return plan
        if isinstance(plan, str):
            return cls(plan)
        raise TypeError(f"plan must be a plan name ({', '.join(PLAN_NAMES)}), a BinningPlan "
                        f"or None; got {type(plan).__name__}")


def held_sample_bytes(X: Any, y: Any = None, mask: Any = None,
                      sample: OneReadSample | None = None) -> int:
    """Bytes of the chunks of ``X``, ``y`` and ``mask`` that the one-read plan's sample holds.

    The chunks overlapping the sample's windows
    (:func:`~bigkern.reduce.binning.one_read_sample.sample_windows`) stay in
    worker memory until the full read reaches them. A numpy ``X`` is counted in
    the chunks it is read in (one per ``bigkern.chunk_bytes``), a non-float
    ``X`` as float64.

    Examples
    --------
    >>> import dask.array as da
    >>> from bigkern.reduce.binning.plan import held_sample_bytes
    >>> X = da.zeros((10**6, 3), dtype="float32", chunks=(10**5, 3))
    >>> held_sample_bytes(X)  # two windows of 2**21 rows: every chunk
    12000000
    """
    sample = OneReadSample() if sample is None else sample
    X, y, mask, _ = unwrap_samples(X, y, mask, None)
    shape = np.shape(X)
    if len(shape) != 2:
        return 0  # percentile_bins names the error
    n, d = shape
    dtype = np.dtype(getattr(X, "dtype", np.float64))
    x_item = dtype.itemsize if dtype in (np.float32, np.float64) else 8
    row_bytes = d * x_item + sum(_itemsize(a) for a in (y, mask) if a is not None)
    if dask.is_dask_collection(X):
        chunks = X.chunks[0]
    else:  # as bigkern.reduce.passes.as_row_chunked reads a numpy X
        rows = max(1, int(config.get("chunk_bytes")) // max(1, dtype.itemsize * d))
        chunks = (rows,) * (n // rows) + ((n % rows,) if n % rows else ())
    starts = row_starts(chunks)
    held = {i for a, b in sample_windows(n, sample) for i, s in enumerate(starts)
            if s < b and s + chunks[i] > a}
    return int(sum(chunks[i] for i in held) * row_bytes)


def _itemsize(values: Any) -> int:
    dtype = getattr(values, "dtype", None)
    return np.dtype(dtype if dtype is not None else np.asarray(values).dtype).itemsize


class PlanResult(NamedTuple):
    """What a plan hands back to :func:`~bigkern.reduce.binning.percentile.percentile_bins`."""

    #: The combined partial bins (:func:`~bigkern.reduce.binning.partials.combine_bins`).
    bins: dict[str, Any]
    #: Per feature, its quantile edges.
    edges: tuple[np.ndarray, ...]
    #: Value of every (feature, rank) order statistic the quantile plan wants.
    order_statistics: dict[tuple[int, int], float]
    #: Per feature, the sparse key-group histogram ``(groups, counts)`` of the usable rows.
    histograms: Sequence[tuple[np.ndarray, np.ndarray]]
    #: The fixed-point grid of the sums.
    grid: FixedPointGrid
    #: Share of the usable rows the fused plan may keep (whichever plan ran).
    kept_fraction_bound: float
    #: Full reads of the data.
    passes: int
    #: The plan that finished: ``"in-memory"``, ``"one-read"``, ``"fused"`` or ``"three-pass"``.
    plan: str


class PlanRun(Protocol):
    """One run of a plan: its prepared inputs, its first read, then its bins.

    :func:`~bigkern.reduce.binning.percentile.percentile_bins` calls
    :meth:`first_read` (counts, labels and key-group histograms, as the
    histogram pass gives them), takes the classes from it, then
    :meth:`finish`; :meth:`attrs` adds what the run says about itself.
    """

    X: Any
    y: Any
    mask: Any
    names: list[str]

    def first_read(self) -> dict[str, Any]:
        """The first-pass result: ``counts``, ``hist`` and ``labels``."""
        ...

    def finish(self, first: dict[str, Any], quantile_plan: QuantilePlan,
               classes: tuple[Any, ...] | None) -> PlanResult:
        """The edges and the combined bins, counting the labels of ``classes`` (two or
        more; None: no labels)."""
        ...

    def attrs(self) -> dict[str, Any]:
        """Attrs the run adds to the bins."""
        ...
