"""The reduced set Ã: stratified, uniform, chunking-independent, NaN-free, duplicate-free."""

from __future__ import annotations

import dask
import dask.array as da
import numpy as np
import pytest
import xarray as xr
from hypothesis import given
from hypothesis import strategies as st

from bigkern.errors import DataQualityError, LabelError
from bigkern.reduce.reduced.reduced_set import (
    DuplicateCentersWarning,
    resolve_size,
    select_reduced_set,
)
from bigkern.reduce.reduced.row_draws import allocate
from bigkern.reduce.sampling import uniform_from_index


def _data(n: int = 1200, d: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.where(rng.random(n) < 0.25, "cloud", "clear")
    return X, y


@pytest.fixture(autouse=True)
def _sync():
    with dask.config.set(scheduler="sync"):
        yield


@pytest.mark.determinism
@given(chunks=st.lists(st.integers(1, 400), min_size=1, max_size=8),
       seed=st.integers(0, 2**31 - 2), stratified=st.booleans())
def test_draw_does_not_depend_on_chunking(chunks, seed, stratified):
    X, y = _data(600)
    X[::37, 1] = np.nan
    sizes = []
    left = len(X)
    for c in chunks:
        if left <= 0:
            break
        sizes.append(min(c, left))
        left -= sizes[-1]
    if left > 0:
        sizes.append(left)
    ref = select_reduced_set(X, y, size=40, stratified=stratified, random_state=seed)
    got = select_reduced_set(da.from_array(X, chunks=(tuple(sizes), 3)),
                             da.from_array(y, chunks=(tuple(sizes),)), size=40,
                             stratified=stratified, random_state=seed)
    np.testing.assert_array_equal(ref.index, got.index)
    np.testing.assert_array_equal(ref.X, got.X)
    np.testing.assert_array_equal(ref.y, got.y)
    assert ref.counts == got.counts


def test_a_numpy_input_is_drawn_in_memory_as_the_pass_draws_it():
    """numpy input (up to bigkern.in_memory_rows rows) skips the task graph: the same rows,
    labels and counts as the chunked pass, with a mask and non-finite rows; above the
    limit it takes the pass."""
    X, y = _data(900)
    X[::29, 2] = np.inf
    mask = np.arange(900) % 5 != 0
    chunked = select_reduced_set(da.from_array(X, chunks=(250, 3)),
                                 da.from_array(y, chunks=250), size=50, random_state=3,
                                 mask=da.from_array(mask, chunks=250))
    for limit in (10**6, 100):  # in memory; the pass
        with dask.config.set({"bigkern.in_memory_rows": limit}):
            held = select_reduced_set(X, y, size=50, random_state=3, mask=mask)
        np.testing.assert_array_equal(held.index, chunked.index)
        np.testing.assert_array_equal(held.X, chunked.X)
        np.testing.assert_array_equal(held.y, chunked.y)
        assert held.counts == chunked.counts and held.counts["masked"] == 180


@pytest.mark.parametrize("scale_rows", [200, 5000])
def test_the_scale_sample_is_the_smallest_hashes_of_all_usable_rows(scale_rows):
    """The same read draws the scale sample: the usable rows of smallest hash over all
    classes (all of them when fewer), the same for numpy input and any chunking."""
    X, y = _data(900)
    X[::29, 2] = np.inf
    mask = np.arange(900) % 5 != 0
    held = select_reduced_set(X, y, size=50, random_state=3, mask=mask, scale_rows=scale_rows)
    usable = np.flatnonzero(mask & np.isfinite(X).all(axis=1))
    u = uniform_from_index(usable, held.seed)
    expected = usable[np.lexsort((usable, u))[:scale_rows]]
    np.testing.assert_array_equal(held.scale_X, X[expected])
    assert len(held.scale_X) == min(scale_rows, len(usable))
    for chunks in (250, 77):
        chunked = select_reduced_set(da.from_array(X, chunks=(chunks, 3)),
                                     da.from_array(y, chunks=chunks), size=50, random_state=3,
                                     mask=da.from_array(mask, chunks=chunks),
                                     scale_rows=scale_rows)
        np.testing.assert_array_equal(chunked.scale_X, held.scale_X)
        np.testing.assert_array_equal(chunked.index, held.index)
    assert select_reduced_set(X, y, size=50, random_state=3).scale_X is None
    with pytest.raises(ValueError, match="scale_rows must be an int >= 0"):
        select_reduced_set(X, y, size=50, scale_rows=-1)


def test_each_class_gets_its_smallest_hashes_in_proportion():
    X, y = _data(1200)
    rs = select_reduced_set(X, y, size=100, random_state=7)
    np.testing.assert_array_equal(rs.classes, ["clear", "cloud"])
    n_each = np.array([(y == c).sum() for c in rs.classes])
    np.testing.assert_array_equal(rs.class_counts, n_each)
    np.testing.assert_array_equal(rs.drawn_per_class, allocate(100, n_each))
    assert rs.drawn_per_class.sum() == 100 and abs(rs.drawn_per_class[1] - 100 * n_each[1]
                                                   / 1200) < 1
    u = uniform_from_index(np.arange(len(X)), rs.seed)
    for c, k in zip(rs.classes, rs.drawn_per_class, strict=True):
        rows = np.flatnonzero(y == c)
        expected = np.sort(rows[np.argsort(u[rows], kind="stable")[:k]])
        np.testing.assert_array_equal(rs.index[rs.y == c], expected)
    np.testing.assert_array_equal(rs.X, X[rs.index])
    assert np.all(np.diff(rs.index) > 0)


def test_unstratified_and_unlabelled_draws_are_the_smallest_hashes():
    X, y = _data(500)
    for labels, stratified in ((None, True), (y, False)):
        rs = select_reduced_set(X, labels, size=30, stratified=stratified, random_state=3)
        u = uniform_from_index(np.arange(len(X)), rs.seed)
        np.testing.assert_array_equal(rs.index, np.sort(np.argsort(u, kind="stable")[:30]))


def test_allocation_gives_every_class_a_center():
    np.testing.assert_array_equal(allocate(10, np.array([1000, 3])), [9, 1])
    np.testing.assert_array_equal(allocate(3, np.array([5, 5, 5])), [1, 1, 1])
    np.testing.assert_array_equal(allocate(5, np.array([10, 10])), [3, 2])  # ties: earlier


def test_non_finite_rows_are_never_drawn_and_are_counted():
    X, _ = _data(400)
    y = np.where(np.arange(400) % 2 == 0, 1.0, -1.0)
    X[:50, 0] = np.nan           # some feature non-finite
    X[50:60] = np.inf            # absent (no finite feature)
    y[60:70] = np.nan            # label non-finite
    rs = select_reduced_set(X, y, size=300, random_state=0)
    assert np.all(rs.index >= 70) and np.isfinite(rs.X).all()
    c = rs.counts
    assert (c["nonfinite"], c["absent"], c["nonfinite_y"], c["valid"]) == (50, 10, 10, 330)
    assert c["nonfinite_feature_0"] == 50 and c["first_nonfinite"] == 0
    assert c["first_nonfinite_y"] == 60
    with pytest.raises(ValueError, match="331 is more than the 330 usable rows"):
        select_reduced_set(X, y, size=331, random_state=0)


def test_too_many_non_finite_rows_is_an_error():
    X, y = _data(100)
    X[:40, 1] = np.nan
    with pytest.raises(DataQualityError, match="max_nonfinite_fraction"):
        select_reduced_set(X, y, size=10)


def test_duplicate_rows_are_dropped_counted_and_named():
    X, _ = _data(300)
    X[100:300] = X[0]  # 201 identical rows
    with pytest.warns(DuplicateCentersWarning, match="repeat an earlier drawn row"):
        rs = select_reduced_set(X, None, size=150, random_state=1)
    assert len(np.unique(rs.X, axis=0)) == rs.size
    assert rs.n_duplicates == 150 - rs.size and rs.n_duplicates > 0


def test_size_and_fraction_are_checked():
    X, y = _data(50)
    for kwargs, match in (({"size": 1}, "at least 2"), ({"size": 51}, "more than the 50 rows"),
                          ({"size": 2.5}, "must be an int"), ({}, "give the reduced-set size"),
                          ({"size": 5, "fraction": 0.1}, "not both"),
                          ({"fraction": 0.0}, r"in \(0, 1\]"), ({"fraction": 1.5}, r"\(0, 1\]"),
                          ({"fraction": 0.01}, "at least 2")):
        with pytest.raises(ValueError, match=match):
            select_reduced_set(X, y, **kwargs)
    assert resolve_size(None, 0.1, 55) == 6
    assert select_reduced_set(X, y, fraction=1.0, random_state=0).size == 50
    with pytest.raises(ValueError, match="smaller than the number of classes"):
        select_reduced_set(X, np.arange(50) % 3, size=2)


def test_one_class_and_non_class_labels_are_refused_when_stratifying():
    X, _ = _data(400)
    with pytest.raises(LabelError, match="one class only"):
        select_reduced_set(X, np.ones(400), size=10)
    assert select_reduced_set(X, np.ones(400), size=10, stratified=False).size == 10
    with pytest.raises(ValueError, match="distinct values"):
        select_reduced_set(X, np.arange(400.0) * 3, size=10)  # a regression target
    rs = select_reduced_set(X, np.arange(400.0) * 3, size=10, stratified=False)
    assert rs.classes is None and rs.size == 10


def test_dataarray_input_and_string_labels():
    X, y = _data(300)
    arr = xr.DataArray(X.T, dims=("feature", "sample"), coords={"feature": ["a", "b", "c"]})
    rs = select_reduced_set(arr, xr.DataArray(y, dims="sample"), size=20, random_state=2)
    ref = select_reduced_set(X, y, size=20, random_state=2)
    np.testing.assert_array_equal(rs.X, ref.X)
    assert set(rs.y) == {"clear", "cloud"}
