"""Chunking-independent random choices: splits and row samples."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest

from bigkern.reduce.sampling import random_split, sample_rows, uniform_from_index


def test_uniform_is_uniform_and_seeded():
    u = uniform_from_index(np.arange(200_000), 3)
    assert u.min() >= 0 and u.max() < 1
    assert abs(u.mean() - 0.5) < 0.005
    np.testing.assert_array_equal(u, uniform_from_index(np.arange(200_000), 3))
    assert not np.array_equal(u, uniform_from_index(np.arange(200_000), 4))


def test_split_halves_are_disjoint():
    mask = np.arange(10_000) % 3 != 0
    a, b = random_split(np.arange(10_000), mask, seed=1)
    assert not np.any(a & b)
    np.testing.assert_array_equal(a | b, mask)


@pytest.mark.parametrize("chunks", [100, 777, 5000])
def test_sample_rows_is_the_same_for_any_chunking(chunks):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5000, 2)).astype(np.float32)
    x[::7, 0] = np.nan
    y = rng.choice([-1, 1], size=5000)
    mask = y > -2
    ref_X, _ref_y, ref_i = sample_rows(x, y, n=300, mask=mask, seed=5)
    got_X, got_y, got_i = sample_rows(da.from_array(x, chunks=(chunks, 2)),
                                      da.from_array(y, chunks=chunks), n=300, seed=5,
                                      mask=da.from_array(mask, chunks=chunks))
    np.testing.assert_array_equal(ref_i, got_i)
    np.testing.assert_array_equal(ref_X, got_X)
    np.testing.assert_array_equal(got_X, x[got_i])
    np.testing.assert_array_equal(got_y, y[got_i])
    assert np.isfinite(got_X).all()
    assert len(np.unique(got_i)) == 300


def test_sample_too_large():
    with pytest.raises(ValueError, match="only 10 usable rows"):
        sample_rows(np.ones((10, 1)), n=11)
