"""Exact percentile bins in one read, from key histograms recorded when the store was written.

The fused plan (:mod:`bigkern.reduce.binning.fused`) reads the data twice: a
histogram read of the top :data:`~bigkern.reduce.binning.radix_select.GROUP_BITS`
key bits of each feature over the usable rows, then the binning read. A scene
store written by :func:`bigkern.write_scenes` gets that first read's result at
write time (:func:`record_graph`, computed on the workers from the blocks being
written, in the write's own compute) and keeps it beside its chunk manifests
(:mod:`bigkern.store.key_histograms`). The ``"recorded"`` plan (:class:`RecordedRun`)
merges nothing more and reads nothing for it: it hands the record to the fused
plan's binning read, so the bins are the fused plan's, bit for bit, after one
read.

The record stands for one set of rows: the labelled pixels (label not the
unlabelled value) whose recorded features are all finite after the validity
rules. :func:`recorded_first_read` uses it only when the binning call reads
exactly those rows:

* ``X``, ``y`` and ``mask`` are the arrays :func:`bigkern.stack_samples` built
  from a dataset opened from the store, untouched (compared by dask name: the
  same name is the same computation): another mask, derived or edited features
  fall back;
* the features met the validity rules the record met;
* every chunk of every variable the record came from still has the manifest
  digest it had when it was written;
* the features are the recorded ones in any order, or a subset stacked in the
  same dtype when no recorded chunk has a row that only some features leave out
  (then every subset leaves out the same rows: exact), else a fall-back.

A record may also hold the same over the first part only of the default split
of a searched fit (:mod:`bigkern.reduce.recorded_split`): a source whose
``split`` names a split stands for that part (``mask`` its first part) and is
served by it, with the same checks, when the split is the recorded one.

A fall-back runs the plan :meth:`~bigkern.reduce.binning.plan.BinningPlan.choose`
would have run, and the bins' ``recorded`` attr says why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import dask
import numpy as np

from bigkern.reduce.binning.bins import check_cell_count
from bigkern.reduce.binning.fused import histogram_plan_bins
from bigkern.reduce.binning.plan import BinningPlan, PlanResult
from bigkern.reduce.binning.quantiles import QuantilePlan, prepare_samples
from bigkern.reduce.binning.radix_select import GROUP_BITS, _combine_first, _first_pass_chunk
from bigkern.reduce.extremes import EXTREMES_KEY, ValueExtremes, check_enabled, chunk_extremes
from bigkern.reduce.passes import (
    as_float_block,
    row_partials,
    tree_reduce,
    unwrap_samples,
    valid_rows,
)
from bigkern.reduce.recorded_split import (
    RECORDED_FRACTION,
    RECORDED_SEED,
    first_part_mask,
    split_identity,
    split_mismatch,
)
from bigkern.store.key_histograms import (
    KeyHistogramRecord,
    KeyHistogramRecorder,
    KeyHistogramSource,
    current_digests,
    read_key_histograms,
)

__all__ = [
    "KEY_HISTOGRAM_RECORDER",
    "KEY_SCHEME",
    "USABLE_RULE",
    "KeyHistogramSource",
    "RecordedRun",
    "make_record",
    "record_graph",
    "recorded_first_read",
    "recorded_run",
]

#: How the recorded keys are made: a change here must change the name.
KEY_SCHEME = (f"radix-v1: float bits mapped to order-preserving unsigned keys (-0.0 as +0.0), "
              f"top {GROUP_BITS} bits")
#: The rows the record counts.
USABLE_RULE = "labelled (label is not the unlabelled value) and every feature finite"
_BASE_COUNTS = ("rows", "masked", "absent", "nonfinite", "valid")


def _first_read_chunk(Xb: np.ndarray, yb: np.ndarray | None, mb: np.ndarray | None
                      ) -> dict[str, Any]:
    """One chunk's first-read partial, as the histogram pass gives it, extremes always."""
    part = _first_pass_chunk(Xb, yb, mb)
    counts = part["counts"]
    part["chunk_counts"] = [[int(counts[k]) for k in sorted(counts) if k != EXTREMES_KEY]]
    if EXTREMES_KEY not in counts:  # the fill check is off here: the record keeps them anyway
        X = as_float_block(Xb)
        counts[EXTREMES_KEY] = chunk_extremes(X, valid_rows(X, mb)[0])
    return part


#: The split whose first part a store records beside all its labelled rows.
RECORDED_SPLIT = split_identity(RECORDED_SEED, RECORDED_FRACTION)


def _record_chunk(Xb: np.ndarray, yb: np.ndarray | None, mb: np.ndarray | None,
                  pb: np.ndarray | None = None) -> dict[str, Any]:
    """One chunk's partial of all its usable rows and, given pixel ids ``pb``, of those
    in the first part of :data:`RECORDED_SPLIT`."""
    part = _first_read_chunk(Xb, yb, mb)
    if pb is not None:
        part["first_part"] = _first_read_chunk(Xb, yb, first_part_mask(mb, pb, RECORDED_SPLIT))
    return part


def _combine_record(parts: list[dict[str, Any]]) -> dict[str, Any]:
    out = _combine_first(parts)
    out["chunk_counts"] = [row for p in parts for row in p["chunk_counts"]]
    if "first_part" in parts[0]:
        out["first_part"] = _combine_record([p["first_part"] for p in parts])
    return out


def record_graph(X: Any, y: Any, mask: Any, pixel: Any = None) -> Any:
    """Delayed merged first-read result of row-chunked samples, with per-chunk row counts.

    Given ``pixel`` (``Samples.pixel``, with ``X``'s row chunks), the same over the
    first part of the default split of a searched fit too (:data:`RECORDED_SPLIT`).
    Compute it in the same ``compute`` as the write of the arrays ``X``, ``y`` and
    ``mask`` come from: dask then reads (or makes) each block once for both.
    """
    parts = row_partials(_record_chunk, X, y, mask, pixel, name="record-key-histograms")
    return tree_reduce(parts, _combine_record, name="record-key-histograms-combine")


def _record_of(merged: dict[str, Any], meta: dict[str, Any]) -> KeyHistogramRecord:
    keys = sorted(k for k in merged["counts"] if k != EXTREMES_KEY)
    ext: ValueExtremes = merged["counts"][EXTREMES_KEY]
    extremes = {"low": ext.low, "n_low": ext.n_low, "high": ext.high, "n_high": ext.n_high}
    labels = merged["labels"]
    part = merged.get("first_part")
    return KeyHistogramRecord(
        {**meta, "count_keys": keys},
        [(np.asarray(g), np.asarray(c)) for g, c in merged["hist"]],
        np.asarray(merged["chunk_counts"], dtype=np.int64).reshape(-1, len(keys)), extremes,
        labels if isinstance(labels, str) else np.asarray(labels),
        None if part is None else _record_of(part, {"split": RECORDED_SPLIT}))


def make_record(merged: dict[str, Any], meta: dict[str, Any]) -> KeyHistogramRecord:
    """The :class:`~bigkern.store.key_histograms.KeyHistogramRecord` of a computed
    :func:`record_graph` and its assumptions ``meta``."""
    return _record_of(merged, {**meta, "group_bits": GROUP_BITS, "key_scheme": KEY_SCHEME,
                               "usable": USABLE_RULE})


#: What :func:`bigkern.write_scenes` computes the record with (``recorder=``).
KEY_HISTOGRAM_RECORDER = KeyHistogramRecorder(record_graph, make_record)


def recorded_first_read(
    source: KeyHistogramSource | None, X: Any, y: Any, mask: Any,
) -> tuple[dict[str, Any] | None, str]:
    """The first-read result the record gives for this binning call, or None and why not."""
    if source is None:
        return None, "no recorded key histograms (a store bigkern did not write, or no labels)"
    if not all(dask.is_dask_collection(a) for a in (X, y, mask)):
        return None, "the samples are not the dask arrays stack_samples built"
    got = (X.name, y.name, mask.name)
    for what, have, want in zip(("X", "y", "mask"), got, source.names, strict=True):
        if have != want:
            return None, (f"{what} is not the one stack_samples built from the store (another "
                          f"mask, a split not made by recorded_split, or features derived or "
                          f"changed after opening)")
    try:
        records = read_key_histograms(source.store)
    except Exception as err:  # unreadable record: the data decide
        return None, f"the recorded key histograms could not be read ({type(err).__name__})"
    if not records:
        return None, "the store has no recorded key histograms of a known format"
    reasons: list[str] = []
    # only the records of these features say why not, when there are some; the record of
    # exactly these features first, then the smaller supersets
    covering = [r for r in records if set(source.features) <= set(r.features)]
    for record in sorted(covering or records, key=lambda r: (
            set(r.features) != set(source.features), len(r.features))):
        first, why = _record_first(record, source, X)
        if first is not None:
            return first, "ok"
        if why not in reasons:
            reasons.append(why)
    return None, "; ".join(reasons)


def _record_first(record: KeyHistogramRecord, source: KeyHistogramSource, X: Any
                  ) -> tuple[dict[str, Any] | None, str]:
    """The first-read result one record gives for the samples of ``source``, or why not."""
    meta = record.meta
    if meta.get("key_scheme") != KEY_SCHEME or meta.get("group_bits") != GROUP_BITS:
        return None, "the histograms were recorded with another key scheme"
    features = source.features  # X is their stack: its name says so
    missing = [f for f in features if f not in record.features]
    if missing:
        return None, f"feature(s) {missing} were not recorded"
    if str(X.dtype) != meta["dtype"]:
        return None, f"the features are stacked as {X.dtype}, recorded as {meta['dtype']}"
    for f in features:
        if source.validity.get(f) != meta["validity"].get(f):
            return None, f"feature {f!r} met other validity rules than those recorded"
    now = current_digests(source.store, list(meta["digests"]))
    for var, attr in meta["digests"].items():
        if now[var] is None or now[var].get("digests") != attr.get("digests") \
                or now[var].get("chunks") != attr.get("chunks"):
            return None, (f"variable {var!r} has chunks that changed since the histograms "
                          f"were recorded (their manifest digests differ)")
    rows = record
    if source.split is not None:  # the first part of a split: its own histograms
        why = split_mismatch(None if record.first_part is None
                             else record.first_part.meta.get("split"), source.split)
        if why is not None:
            return None, why
        rows = record.first_part
    index = [record.features.index(f) for f in features]
    keys = rows.meta["count_keys"]
    totals = dict(zip(keys, rows.row_counts.sum(axis=0).tolist(), strict=True))
    if sorted(index) != list(range(len(record.features))) and totals["nonfinite"]:
        return None, (f"a feature subset of {list(record.features)}: {totals['nonfinite']} "
                      f"recorded rows have some but not all features non-finite, so the "
                      f"subset's usable rows differ")
    return _first(rows, index, totals), "ok"


def _first(record: KeyHistogramRecord, index: list[int], totals: dict[str, int]
           ) -> dict[str, Any]:
    """The histogram pass's result for the recorded features ``index``, in that order."""
    counts: dict[str, Any] = {k: int(totals[k]) for k in _BASE_COUNTS}
    for j, f in enumerate(index):
        counts[f"nonfinite_feature_{j}"] = int(totals[f"nonfinite_feature_{f}"])
    if check_enabled():
        e = record.extremes
        counts[EXTREMES_KEY] = ValueExtremes(e["low"][index], e["n_low"][index],
                                             e["high"][index], e["n_high"][index],
                                             counts["valid"])
    return {"counts": counts, "hist": [record.histograms[f] for f in index],
            "labels": record.labels}


@dataclass
class RecordedRun:
    """A run of the ``"recorded"`` plan: the record for the first read, then the fused plan's
    binning read (the three-pass plan's reads when too many rows would wait, as the
    ``"fused-or-three-pass"`` plan decides)."""

    X: Any
    y: Any
    mask: Any
    names: list[str]
    where: np.ndarray
    first: dict[str, Any]

    def first_read(self) -> dict[str, Any]:
        """The recorded histograms: no read."""
        return self.first

    def finish(self, first: dict[str, Any], quantile_plan: QuantilePlan,
               classes: tuple[Any, ...] | None) -> PlanResult:
        """The fused (or three-pass) plan's reads after its histogram pass, less that pass."""
        res = histogram_plan_bins(self.X, self.y, self.mask, first, quantile_plan, self.where,
                                  classes, None)
        plan = "recorded" if res.plan == "fused" else res.plan
        return res._replace(passes=res.passes - 1, plan=plan)

    def attrs(self) -> dict[str, Any]:
        """The ``recorded`` attr."""
        return {"recorded": "ok"}


def recorded_run(
    plan: str | BinningPlan | None, recorded: KeyHistogramSource | None, X: Any, y: Any,
    mask: Any, features: Any, where: np.ndarray,
) -> tuple[RecordedRun | None, str | BinningPlan | None, str | None]:
    """How :func:`~bigkern.reduce.binning.percentile.percentile_bins` starts with ``recorded``.

    Parameters
    ----------
    plan, recorded, X, y, mask, features
        The arguments of ``percentile_bins``.
    where : numpy.ndarray
        Positions of the quantiles asked for among those computed.

    Returns
    -------
    run : RecordedRun or None
        A run of the ``"recorded"`` plan, when ``plan`` is that or None (the
        default) and :func:`recorded_first_read` finds the record stands for
        these samples; else None.
    plan : str, BinningPlan or None
        The plan to run instead: ``plan``, or None (the default) for ``"recorded"``.
    note : str or None
        The bins' ``recorded`` attr when the record does not serve and was given
        (or asked for): ``"fallback: <why>"``.
    """
    name = plan.name if isinstance(plan, BinningPlan) else plan
    asked = name == "recorded"
    if name not in (None, "recorded"):
        why = f"the plan {name!r} was asked for"
    else:
        Xu, yu, mu, _ = unwrap_samples(X, y, mask, features)
        first, why = recorded_first_read(recorded, Xu, yu, mu)
        if first is not None:
            Xp, yp, mp, names = prepare_samples(X, y, mask, features)
            check_cell_count(Xp.shape[1], len(where))
            return RecordedRun(Xp, yp, mp, names, where, first), plan, None
    note = f"fallback: {why}" if recorded is not None or asked else None
    return None, None if asked else plan, note
