"""Small inputs: the in-memory binning path gives the dask plans' bins, bit for bit.

Only the attrs that describe the plan differ: ``plan`` ("in-memory"),
``passes`` (1) and ``n_kept`` (0, as in the three-pass plan; the fused plan
counts the rows it kept).
"""

from __future__ import annotations

import warnings

import dask.array as da
import numpy as np
import pytest
import xarray as xr
from hypothesis import event, given
from hypothesis import strategies as st

from bigkern import config
from bigkern.errors import DataQualityError, LabelError
from bigkern.models import BinnedSVC
from bigkern.reduce import percentile_bins
from bigkern.reduce.binning.bins import OutlierWarning
from bigkern.reduce.binning.in_memory import first_pass
from bigkern.reduce.binning.radix_select import _first_pass_chunk
from tests.reduce.plan_attrs import without_plan

LABELS = {
    "int8": np.array([-1, 1], dtype=np.int8),
    "float": np.array([0.0, 1.0]),
    "uint16": np.array([3, 7], dtype=np.uint16),
    "str": np.array(["clear", "cloud"]),
    "bool": np.array([False, True]),
}
QUANTILES = {
    "deciles": None,
    "quartiles": (0.25, 0.5, 0.75),
    "median": (0.5,),
    "ends": (0.0, 0.3, 0.3, 1.0),  # the extremes, and a repeated split point
}


def _outcome(fn):
    """("ok", result, warnings as (category, message)) or ("error", type, message)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = fn()
        except (ValueError, LabelError, DataQualityError) as e:
            return "error", type(e), str(e)
    return "ok", result, [(w.category, str(w.message)) for w in caught]



def _assert_same_bins(memory, dask_result, fused):
    assert memory[0] == dask_result[0], (memory, dask_result)
    if memory[0] == "error":
        assert memory[1:] == dask_result[1:]
        return
    mem, ref = memory[1], dask_result[1]
    assert mem.attrs["plan"] == "in-memory" and mem.attrs["passes"] == 1
    assert mem.attrs["n_kept"] == 0
    assert ref.attrs["plan"] == ("fused" if fused else "three-pass")
    if not fused:
        assert ref.attrs["n_kept"] == 0
    xr.testing.assert_identical(without_plan(mem), without_plan(ref))
    # the same OutlierWarnings, in the same order
    assert [w for w in memory[2] if w[0] is OutlierWarning] == \
        [w for w in dask_result[2] if w[0] is OutlierWarning]


@st.composite
def samples(draw):
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    n = draw(st.integers(1, 2500))
    d = draw(st.integers(1, 4))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    scales = 10.0 ** rng.uniform(-3, 3, size=d)
    x = (rng.standard_normal((n, d)) * scales + rng.uniform(-5, 5, size=d) * scales)
    if draw(st.booleans()):  # ties: values on edges, a constant feature, signed zeros
        x[::3, 0] = np.round(x[::3, 0], 1)
        x[::5, -1] = 0.0
        x[1::5, -1] = -0.0
        if d > 2:
            x[:, 1] = 2.5
    x = x.astype(dtype)
    nan_rate = draw(st.sampled_from([0.0, 0.01, 0.2]))
    if nan_rate:  # non-finite values: some rows partly (nonfinite), some wholly (absent)
        holes = rng.random((n, d)) < nan_rate
        x[holes] = rng.choice(np.array([np.nan, np.inf, -np.inf], dtype=dtype), size=holes.sum())
        x[rng.random(n) < nan_rate / 2] = np.nan
    if draw(st.booleans()):  # outliers: fills and one wild value (several fixed-point limbs)
        x[rng.random(n) < 0.01, rng.integers(d)] = -9999.0
        x[rng.integers(n), rng.integers(d)] = 1e12 if dtype == np.float32 else -1e200
    mask_kind = draw(st.sampled_from(["none", "bool", "int"]))
    mask = None if mask_kind == "none" else rng.random(n) < 0.8
    if mask_kind == "int":
        mask = mask.astype(np.int8)
    label_kind = draw(st.sampled_from(["none", *LABELS]))
    y = None
    classes = None
    if label_kind != "none":
        y = LABELS[label_kind][(rng.random(n) < 0.4).astype(int)]
        if draw(st.booleans()):
            classes = tuple(LABELS[label_kind].tolist())
    quantiles = QUANTILES[draw(st.sampled_from(list(QUANTILES)))]
    # at most 64 chunks: 1-row chunks still come with small n, and thousands of them would
    # cost seconds of graph per example while reaching no other chunk boundary case
    chunk = draw(st.integers(-(-n // 64), n))
    return x, y, mask, classes, quantiles, chunk


@given(case=samples(), fused=st.booleans())
def test_in_memory_bins_are_the_dask_plans_bins(case, fused):
    x, y, mask, classes, quantiles, chunk = case
    kw = {"classes": classes, "features": [f"v{i}" for i in range(x.shape[1])]}
    if quantiles is not None:
        kw["quantiles"] = quantiles
    memory = _outcome(lambda: percentile_bins(x, y, mask=mask, **kw))
    X = da.from_array(x, chunks=(chunk, -1))
    Y = None if y is None else da.from_array(y, chunks=chunk)
    M = None if mask is None else da.from_array(mask, chunks=chunk)
    dask_result = _outcome(lambda: percentile_bins(
        X, Y, mask=M, plan="fused" if fused else "three-pass", **kw))
    _assert_same_bins(memory, dask_result, fused)
    event(f"outcome: {memory[0] if memory[0] == 'ok' else memory[1].__name__}")
    if memory[0] == "ok":
        event(f"outliers: {memory[1].attrs['n_outliers'] > 0}")


@given(case=samples())
def test_first_pass_histograms_are_the_chunk_functions(case):
    """The sorted run-lengths are the first pass's key-group histogram of one chunk."""
    x, y, mask, *_ = case
    x = np.ascontiguousarray(x)
    expected = _first_pass_chunk(x, y, mask)
    if expected["counts"]["valid"] == 0:
        with pytest.raises(DataQualityError, match="no usable rows"):
            first_pass(x, y, mask)
        return
    got, columns, valid = first_pass(x, y, mask)
    assert got["counts"] == expected["counts"]
    for (g, c), (eg, ec) in zip(got["hist"], expected["hist"], strict=True):
        np.testing.assert_array_equal(g, eg)
        np.testing.assert_array_equal(c, ec)
    if y is None:
        assert got["labels"] is None
    else:
        np.testing.assert_array_equal(got["labels"], expected["labels"])
    ok = np.isfinite(x).all(axis=1) & (True if mask is None else mask.astype(bool))
    np.testing.assert_array_equal(valid, ok)  # the usable rows the binning reuses
    for f, col in enumerate(columns):
        np.testing.assert_array_equal(col, np.sort(x[ok, f]))


def _data(n, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 3)).astype(np.float32)
    x[::97, 1] = np.nan
    y = np.where(x[:, 0] + 0.5 * rng.standard_normal(n) > 0, 1, -1).astype(np.int8)
    return x, y


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_past_the_first_pass_small_chunk_size(dtype):
    """70,000 usable rows: the dask first pass histograms by key, not by sorting."""
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((72_000, 3)) * [1.0, 1e3, 1e-3]).astype(dtype)
    x[::50, 2] = np.nan
    x[5, 1] = -1e30 if dtype == np.float64 else -3e38  # an outlier, several limbs
    y = np.where(rng.random(72_000) < 0.3, 1.0, -1.0)
    mask = rng.random(72_000) < 0.99
    memory = _outcome(lambda: percentile_bins(x, y, mask=mask))
    for fused in (True, False):
        dask_result = _outcome(lambda f=fused: percentile_bins(
            da.from_array(x, chunks=(72_000, 3)), da.from_array(y, chunks=72_000),
            mask=da.from_array(mask, chunks=72_000), plan="fused" if f else "three-pass"))
        _assert_same_bins(memory, dask_result, fused)
    assert memory[1].attrs["n_valid"] > 1 << 16 and memory[1].attrs["n_outliers"] == 1


def test_row_threshold_switches_paths():
    x, y = _data(3000)
    assert percentile_bins(x, y).attrs["plan"] == "in-memory"  # default: 1,000,000 rows
    with config.set(in_memory_rows=3000):
        at = percentile_bins(x, y)
    with config.set(in_memory_rows=2999):
        above = percentile_bins(x, y)
    assert at.attrs["plan"] == "in-memory" and at.attrs["passes"] == 1
    # the default above it: the one-read plan (here its sample's windows hold too many of
    # the 3,000 rows, and it hands over to the fused plan)
    assert above.attrs["one_read"].startswith("skipped") and above.attrs["plan"] == "fused"
    xr.testing.assert_identical(without_plan(at), without_plan(above))


def test_explicit_choices():
    x, y = _data(3000)
    X, Y = da.from_array(x, chunks=(700, 3)), da.from_array(y, chunks=700)
    # dask inputs take the dask path, by default the one-read plan; plan= overrides both ways
    assert "one_read" in percentile_bins(X, Y).attrs
    assert "one_read" in percentile_bins(x, Y).attrs
    assert percentile_bins(x, y, plan="three-pass").attrs["plan"] == "three-pass"
    assert percentile_bins(x, y, plan="fused-or-three-pass").attrs["plan"] == "fused"
    loaded = percentile_bins(X, Y, plan="in-memory")
    assert loaded.attrs["plan"] == "in-memory"
    xr.testing.assert_identical(loaded, percentile_bins(x, y))
    with config.set(in_memory_rows=10):
        assert percentile_bins(x, y, plan="in-memory").attrs["plan"] == "in-memory"
    with pytest.raises(ValueError, match="unknown percentile_bins plan 'two-pass'"):
        percentile_bins(x, y, plan="two-pass")


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        ((np.zeros(10),), {}),
        ((np.zeros((10, 2)),), {"features": ["a"]}),
        ((np.full((10, 2), np.nan),), {}),
        ((np.ones((300, 2)), np.arange(300)), {}),
        ((np.ones((10, 2)), np.ones(10)), {}),
        ((np.ones((10, 2)), np.arange(10) % 2), {"classes": (1,)}),
        ((np.ones((10, 2)), np.arange(10) % 2), {"classes": (0, 1, 1)}),
        ((np.ones((10, 2)), np.arange(10) % 3), {"classes": (0, 1)}),
        ((np.ones((10, 2)), np.arange(10) % 4), {"classes": (0, 1, 2)}),
    ],
    ids=["1-D X", "names", "no usable rows", "300 classes",
         "one class", "one class given", "a class given twice", "label outside classes",
         "label outside three classes"],
)
def test_same_errors_as_the_dask_path(args, kwargs):
    memory = _outcome(lambda: percentile_bins(*args, **kwargs))
    dask_result = _outcome(lambda: percentile_bins(*args, plan="fused-or-three-pass", **kwargs))
    assert memory[0] == "error"
    assert memory == dask_result


@pytest.mark.parametrize(
    ("y", "mask", "message"),
    [
        (np.zeros(9), None, r"y must be 1-D with one entry per row of X \(10\); got shape \(9,\)"),
        (np.zeros((10, 1)), None, r"y must be 1-D .* got shape \(10, 1\)"),
        (None, np.ones(11, dtype=bool), r"mask must be 1-D .* got shape \(11,\)"),
    ],
)
def test_labels_and_mask_of_the_wrong_shape_are_named(y, mask, message):
    # (on the dask path a numpy y or mask of the wrong shape gets dask's own error instead,
    # e.g. "Chunks do not add up to shape")
    with pytest.raises(ValueError, match=message):
        percentile_bins(np.zeros((10, 2)), y, mask=mask)


def test_binned_svc_fits_in_memory_the_model_of_the_dask_path():
    x, y = _data(5000, seed=1)
    fast = BinnedSVC().fit(x, y)
    with config.set(in_memory_rows=0):
        slow = BinnedSVC().fit(x, y)
    assert fast.fit_report_["plan"] == "in-memory" and fast.fit_report_["passes"] == 1
    assert slow.fit_report_["plan"] == "fused"
    for key in ("n_valid", "n_nonfinite", "n_nonfinite_by_feature", "n_basis"):
        assert fast.fit_report_[key] == slow.fit_report_[key]
    ok = np.isfinite(x).all(axis=1)
    np.testing.assert_array_equal(fast.decision_function(x[ok]), slow.decision_function(x[ok]))


@pytest.mark.parametrize("chunk", [997, 2500, 6000])
@pytest.mark.parametrize("labels", ["int8", "str", "float"])
def test_binned_svc_numpy_and_dask_inputs_fit_one_model(chunk, labels):
    """The model is the same bit for bit whether the rows come as numpy (the in-memory
    plan) or as dask arrays in any chunking (the dask plans), with NaN rows, an outlier,
    unlabelled rows masked out, and any label dtype."""
    x, y = _data(6000, seed=3)
    x[17, 2] = 1e12
    y = LABELS[labels][(y > 0).astype(int)]
    keep = np.random.default_rng(3).random(6000) < 0.9
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OutlierWarning)
        ref = BinnedSVC(C=10.0).fit(x, y, mask=keep)
        lazy = BinnedSVC(C=10.0).fit(da.from_array(x, chunks=(chunk, -1)),
                                     da.from_array(y, chunks=chunk),
                                     mask=da.from_array(keep, chunks=chunk))
        with config.set(in_memory_rows=0):
            planned = BinnedSVC(C=10.0).fit(x, y, mask=keep)
    assert ref.fit_report_["plan"] == "in-memory" and planned.fit_report_["plan"] != "in-memory"
    ok = np.isfinite(x).all(axis=1)
    want = ref.decision_function(x[ok])
    for other in (lazy, planned):
        np.testing.assert_array_equal(other.classes_, ref.classes_)
        np.testing.assert_array_equal(other.decision_function(x[ok]), want)
        for key in ("n_valid", "n_masked", "n_nonfinite", "n_nonfinite_by_feature", "n_basis",
                    "n_outliers"):
            assert other.fit_report_[key] == ref.fit_report_[key], key
