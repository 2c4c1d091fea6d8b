"""Compiled loops over order-preserving keys (bigkern.reduce.binning._key_kernels) against numpy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bigkern.reduce.binning._key_kernels import _SCREEN_BITS, select_digits
from bigkern.reduce.binning.radix_select import key_dtype
from bigkern.reduce.row_kernels import take_rows


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
