"""Exact quantiles: equal to numpy.quantile for every chunking, method, NaN pattern."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from bigkern.errors import DataQualityError
from bigkern.reduce import QUANTILE_METHODS, quantile_edges, quantile_summary
from bigkern.reduce.binning.radix_select import float_keys, keys_to_floats


def _reference(x, probs, method, mask=None):
    ok = np.isfinite(x).all(axis=1)
    if mask is not None:
        ok &= mask
    return np.quantile(x[ok].astype(np.float64), probs, axis=0, method=method).T


values = st.one_of(
    st.floats(-1e6, 1e6, width=32, allow_nan=False, allow_infinity=False),
    st.sampled_from([0.0, -0.0, 1.0, np.nan, np.inf, -np.inf, 1e-30]),
)


@pytest.mark.determinism
# hypothesis's arrays repeat their extreme values, which is what an undeclared fill looks like
@pytest.mark.filterwarnings("ignore::bigkern.reduce.extremes.SuspectedFillWarning")
@given(
    data=hnp.arrays(np.float32, st.tuples(st.integers(3, 400), st.integers(1, 3)),
                    elements=values),
    chunk=st.integers(1, 150),
    method=st.sampled_from(QUANTILE_METHODS),
    probs=st.lists(st.floats(0, 1), min_size=1, max_size=5),
)
def test_equals_numpy_any_chunking(data, chunk, method, probs):
    ok = np.isfinite(data).all(axis=1)
    if not ok.any():
        with pytest.raises(DataQualityError, match="no usable rows"):
            quantile_edges(da.from_array(data, chunks=(chunk, -1)), probs)
        return
    got = quantile_edges(da.from_array(data, chunks=(chunk, -1)), probs, method=method)
    np.testing.assert_array_equal(got.values, _reference(data, probs, method))
    assert got.attrs["n_valid"] == ok.sum()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("chunks", [1000, 7777, 60_000])
def test_large_with_nans_ties_and_mask(dtype, chunks):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((60_000, 3)).astype(dtype)
    x[::97, 1] = np.nan
    x[::101, 0] = np.inf
    x[5:9000, 2] = 3.0  # a heavy tie
    x[:, 0] = np.round(x[:, 0], 2)
    mask = rng.random(len(x)) < 0.8
    probs = np.linspace(0, 1, 21)
    for method in QUANTILE_METHODS:
        got = quantile_edges(da.from_array(x, chunks=(chunks, 3)), probs, method=method,
                             mask=da.from_array(mask, chunks=chunks))
        np.testing.assert_array_equal(got.values, _reference(x, probs, method, mask))
    assert got.attrs["n_masked"] == (~mask).sum()
    assert got.attrs["n_nonfinite"] == (mask & ~np.isfinite(x).all(axis=1)).sum()


def test_float64_needing_deep_refinement():
    """Values that agree in their top 16 bits force extra passes; still exact."""
    rng = np.random.default_rng(2)
    x = (1.0 + rng.random((50_000, 1)) * 1e-9).astype(np.float64)
    got = quantile_edges(da.from_array(x, chunks=(6000, 1)), [0.1, 0.5, 0.9])
    np.testing.assert_array_equal(got.values, _reference(x, [0.1, 0.5, 0.9], "linear"))


def test_numpy_input_and_feature_names():
    x = np.arange(11, dtype=np.float32).reshape(-1, 1)
    got = quantile_edges(x, [0.25, 0.5], features=["a"])
    assert got.dims == ("feature", "quantile")
    assert list(got["feature"].values) == ["a"]
    np.testing.assert_array_equal(got.values, [[2.5, 5.0]])


def test_summary_collects_labels_and_extremes():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((5000, 2)).astype(np.float32)
    y = rng.choice([-1, 1], size=5000)
    s = quantile_summary(da.from_array(x, chunks=(700, 2)), y=da.from_array(y, chunks=700))
    assert s["labels"].values.tolist() == [-1, 1]
    np.testing.assert_array_equal(s["min"].values, x.min(axis=0))
    np.testing.assert_array_equal(s["max"].values, x.max(axis=0))
    floats = quantile_summary(x, y=rng.random(5000))
    assert floats.attrs["labels"] == "continuous"


@given(hnp.arrays(np.float32, 50, elements=st.floats(width=32, allow_nan=False,
                                                      allow_infinity=False)))
def test_keys_are_monotone_and_invertible(x):
    keys = float_keys(x)
    back = keys_to_floats(keys, np.float32)
    np.testing.assert_array_equal(back, x)
    order = np.argsort(keys, kind="stable")
    assert np.all(np.diff(x[order].astype(np.float64)) >= 0)


@pytest.mark.parametrize("probs", [[], [1.5], [-0.1], [np.nan]])
def test_bad_probabilities(probs):
    with pytest.raises(ValueError, match="probs"):
        quantile_edges(np.ones((5, 1)), probs)


def test_bad_method():
    with pytest.raises(ValueError, match="method"):
        quantile_edges(np.ones((5, 1)), [0.5], method="hazen-ish")
