"""Compiled loops over order-preserving keys (bigkern.reduce.binning._key_loops) against numpy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bigkern.reduce.binning._bin_loops import bin_ids
from bigkern.reduce.binning._key_loops import _SCREEN_BITS, group_histograms, select_digits
from bigkern.reduce.binning._one_read_loops import one_read_ids, one_read_sums
from bigkern.reduce.binning.one_read_sample import summed_limit, window_tables
from bigkern.reduce.binning.partials import padded_edges
from bigkern.reduce.binning.radix_select import GROUP_BITS, KEEP, key_dtype
from bigkern.reduce.row_loops import int_label_range, take_rows


def _keys(X: np.ndarray) -> np.ndarray:
    """Order-preserving keys by numpy: sign bit set for >= 0, all bits flipped below; -0 = +0."""
    ukind, width = key_dtype(X.dtype)
    X = np.where(X == 0, np.zeros((), X.dtype), X)  # -0.0 takes the key of +0.0
    bits = X.view(ukind)
    sign = ukind(1) << ukind(width - 1)
    return np.where(bits & sign, ~bits, bits | sign)


def _select_digits_reference(X, valid, feature, nbits, step, prefixes):
    _, width = key_dtype(X.dtype)
    keys = _keys(X[:, feature]).astype(np.uint64)[valid]
    high = keys >> np.uint64(width - nbits)
    pos = np.searchsorted(prefixes, high)
    pos_clip = np.minimum(pos, max(len(prefixes) - 1, 0))
    hit = (pos < len(prefixes)) & (prefixes[pos_clip] == high) if len(prefixes) else \
        np.zeros(len(high), dtype=bool)
    digit = (keys >> np.uint64(width - nbits - step)) & np.uint64((1 << step) - 1)
    return (pos[hit].astype(np.uint64) << np.uint64(step)) | digit[hit]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@given(seed=st.integers(0, 2**32 - 1), n_prefixes=st.integers(0, 12),
       nbits=st.sampled_from([8, 16, _SCREEN_BITS, _SCREEN_BITS + 1, 26]),
       step=st.integers(1, 6))
def test_select_digits_with_and_without_the_bitmap_screen_match_numpy(dtype, seed, n_prefixes,
                                                                      nbits, step):
    """Keys are screened by a bitmap of prefixes up to _SCREEN_BITS bits wide, not above;
    both select the digits numpy's searchsorted selects."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((400, 2)).astype(dtype) * rng.choice([1e-3, 1.0, 1e3], (400, 1))
    X[::7, 0] = X[3, 0]  # ties
    X[5, 0] = -0.0
    valid = rng.random(400) < 0.9
    ukind, width = key_dtype(X.dtype)
    occupied = np.unique(_keys(X[:, 0]).astype(np.uint64) >> np.uint64(width - nbits))
    picks = rng.choice(occupied, min(n_prefixes, len(occupied)), replace=False)
    absent = rng.integers(0, 1 << nbits, 2).astype(np.uint64)  # prefixes no value has
    prefixes = np.unique(np.concatenate([picks, absent])).astype(np.uint64)
    got = select_digits(X.view(ukind), valid, 0, width, nbits, step, prefixes)
    want = _select_digits_reference(X, valid, 0, nbits, step, prefixes)
    np.testing.assert_array_equal(got, want)


def test_take_rows_is_fancy_indexing():
    X = np.arange(30, dtype=np.float32).reshape(10, 3)
    rows = np.array([9, 0, 4, 4], dtype=np.int64)
    np.testing.assert_array_equal(take_rows(X, rows), X[rows])
    assert take_rows(X, np.zeros(0, dtype=np.int64)).shape == (0, 3)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("d", [1, 2, 4])
def test_one_read_sweeps_match_numpy(dtype, d):
    """The one-read sweeps (compiled per feature count) against numpy: histograms, bins
    and sums at every candidate scale, kept rows; the tables keep exactly |x| >= limit."""
    rng = np.random.default_rng(d)
    n = 4000
    X = (rng.standard_normal((n, d)) * 3).astype(dtype)
    X[:8] = np.array([8.0, -8.0, np.nextafter(dtype(8), dtype(0)), -9.0, 1e30, 0.0, -0.0,
                      np.nan], dtype=dtype)[:, None]
    valid = np.isfinite(X).all(axis=1)
    is_positive = rng.random(n) < 0.4
    ukind, width = key_dtype(X.dtype)
    groups = (_keys(np.where(valid[:, None], X, 0)) >> ukind(width - GROUP_BITS)).astype(np.intp)
    edges = np.quantile(X[valid], [0.25, 0.5, 0.75], axis=0).T.astype(dtype)  # (d, 3)
    edge_groups = (_keys(edges) >> ukind(width - GROUP_BITS)).astype(np.intp)
    ranges = np.stack([edge_groups - 1, edge_groups + 1], axis=2)
    scales = np.array([[28] * d, [27] * d])  # the finest, 28, keeps |x| >= 2**3
    limit = summed_limit(scales)
    tables = window_tables(edge_groups + 1, ranges, limit, X.dtype)
    in_window = ((groups[:, :, None] >= ranges[None, :, :, 0])
                 & (groups[:, :, None] <= ranges[None, :, :, 1])).any(axis=2)
    held = tables[np.arange(d), groups] == KEEP
    assert np.array_equal(held & ~in_window, (np.abs(X) >= 8) & ~in_window & valid[:, None])
    kept_ref = np.flatnonzero(valid & held.any(axis=1))
    certain = valid & ~held.any(axis=1)
    cells = tables[np.arange(d), groups].astype(np.int64)
    n_cells = np.full(d, 4, dtype=np.int64)
    bins = np.zeros(n, dtype=np.int64)
    for f in range(d):
        bins = bins * n_cells[f] + cells[:, f]
    n_possible = int(np.prod(n_cells))
    down = np.ldexp(1.0, scales)
    hist = np.zeros((d, 1 << GROUP_BITS), dtype=np.int32)
    count, sums, positive, kept = one_read_sums(X, X.view(ukind), valid, is_positive, width,
                                                GROUP_BITS, tables, n_cells, down, n_possible,
                                                hist)
    hist_ids = np.zeros_like(hist)
    ids, kept_ids = one_read_ids(X.view(ukind), valid, width, GROUP_BITS, tables, n_cells,
                                 hist_ids)
    for f in range(d):
        assert np.array_equal(hist[f], np.bincount(groups[valid, f], minlength=1 << GROUP_BITS))
    assert np.array_equal(hist_ids, hist)
    assert np.array_equal(kept, kept_ref) and np.array_equal(kept_ids, kept_ref)
    assert np.array_equal(ids, np.where(certain, bins, -1))
    assert np.array_equal(count, np.bincount(bins[certain], minlength=n_possible))
    assert np.array_equal(positive, np.bincount(bins[certain], weights=is_positive[certain],
                                                minlength=n_possible).astype(np.int64))
    for c in range(len(scales)):
        for f in range(d):
            ints = np.rint(X[certain, f].astype(np.float64) * down[c, f]).astype(np.int64)
            want = np.zeros(n_possible, dtype=np.int64)
            np.add.at(want, bins[certain], ints)
            assert np.array_equal(sums[:, c * d + f], want)


def test_a_limit_inside_a_key_group_keeps_that_whole_group():
    """A limit that is not at a key group's start (a float32 subnormal, 2**-140, shares the
    group of 0) keeps that whole group: conservatively more rows, never fewer."""
    limit = np.float32(np.ldexp(1.0, -140))
    tables = window_tables(np.zeros((1, 0), np.intp), np.zeros((1, 0, 2), np.intp),
                           np.array([float(limit)]), np.dtype(np.float32))
    values = np.array([limit, -limit, 2 * limit, np.ldexp(1.0, -100), -1.0, 0.0],
                      dtype=np.float32)
    groups = (_keys(values) >> np.uint32(32 - GROUP_BITS)).astype(np.intp)
    assert (tables[0, groups] == KEEP).all()
    below = np.array([np.nextafter(limit, np.float32(0))], np.float32)
    assert tables[0, _keys(below)[0] >> np.uint32(32 - GROUP_BITS)] == KEEP  # limit's group


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64])
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(0, 50), span=st.integers(1, 6),
       extreme=st.booleans())
def test_int_label_range_is_numpys_unique(dtype, seed, n, span, extreme):
    """The labels of the valid rows, as numpy.unique gives them; none past ``max_span``."""
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    y = rng.integers(-2, span - 2, size=n).astype(dtype)
    if extreme and n >= 2:  # the whole range: no overflow of hi - lo
        y[:2] = [info.min, info.max]
    valid = rng.random(n) < 0.7
    lo, present = int_label_range(y, valid, 8)
    labels = np.unique(y[valid].astype(np.int64))
    if len(labels) and int(labels[-1]) - int(labels[0]) < 8:
        assert np.array_equal(np.flatnonzero(present) + lo, labels)
    else:
        assert len(present) == 0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("d", [1, 3, 9])  # 9: past the dense sweep, one sweep per feature
def test_group_histograms_are_numpys_unique_counts(dtype, d):
    rng = np.random.default_rng(d)
    X = (rng.standard_normal((3000, d)) * rng.choice([1e-3, 1.0, 1e6], size=d)).astype(dtype)
    X[::7, 0] = np.nan
    valid = np.isfinite(X).all(axis=1)
    ukind, width = key_dtype(X.dtype)
    got = group_histograms(X.view(ukind), valid, width, GROUP_BITS)
    groups = _keys(np.where(valid[:, None], X, 0)[valid]) >> ukind(width - GROUP_BITS)
    for f in range(d):
        want_groups, want_counts = np.unique(groups[:, f], return_counts=True)
        assert np.array_equal(got[f][0], want_groups) and np.array_equal(got[f][1], want_counts)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(0, 2500),
       n_edges=st.lists(st.sampled_from([0, 1, 9, 32, 33, 99]), min_size=1, max_size=3))
def test_bin_ids_are_numpys_searchsorted_for_any_number_of_edges(dtype, seed, n, n_edges):
    """The counted edges (up to 32) and the binary search agree with numpy, blocks of rows
    and their ends included; rows not valid (NaN, ±inf) get -1."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, len(n_edges))).astype(dtype)
    X[rng.random(X.shape) < 0.02] = rng.choice(np.array([np.nan, np.inf, -np.inf], dtype))
    valid = np.isfinite(X).all(axis=1)
    pool = np.r_[X[np.isfinite(X)], rng.standard_normal(8)].astype(np.float64)  # values on edges
    edges = [np.sort(rng.choice(pool, k)) for k in n_edges]  # repeats allowed, as quantiles
    cells = [np.searchsorted(e, X[:, f].astype(np.float64), side="left")
             for f, e in enumerate(edges)]
    want = np.ravel_multi_index(cells, [k + 1 for k in n_edges]) if n else np.zeros(0, int)
    got = bin_ids(np.ascontiguousarray(X), valid, *padded_edges(edges))
    np.testing.assert_array_equal(got, np.where(valid, want, -1))
