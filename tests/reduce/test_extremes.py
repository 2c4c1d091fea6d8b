"""Undeclared fill values: a large share of rows at one isolated extreme warns.

The extremes of a feature are collected in the first pass of every fit, chunk
by chunk, and merged exactly; the tests check them against numpy for any
chunking, and that every door into a fit (quantiles, each binning plan, the
reduced models, an in-memory scene Dataset) names the feature, the value and
its count.
"""

from __future__ import annotations

import warnings

import dask.array as da
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bigkern import config
from bigkern.datasets import make_scenes
from bigkern.jobs.fit import fit_scenes
from bigkern.models import NystromKernelRidge, ReducedSVC
from bigkern.reduce import quantile_summary
from bigkern.reduce.binning.percentile import percentile_bins
from bigkern.reduce.extremes import SuspectedFillWarning, ValueExtremes, chunk_extremes

NAMES = ["a", "b", "c"]


def _reference(col: np.ndarray) -> tuple[list[float], int, list[float], int]:
    values = np.unique(col)
    low = [values[0], values[1] if len(values) > 1 else np.inf]
    high = [values[-1], values[-2] if len(values) > 1 else -np.inf]
    return low, int((col == values[0]).sum()), high, int((col == values[-1]).sum())


@given(values=st.lists(st.sampled_from([-9999.0, -1.5, 0.0, 0.25, 3.0, 7.0]), min_size=2,
                       max_size=60),
       cuts=st.lists(st.integers(1, 59), max_size=6))
def test_merged_extremes_equal_numpy_for_any_chunking(values, cuts):
    X = np.array(values)[:, None]
    bounds = sorted({c for c in cuts if c < len(X)})
    parts = [chunk_extremes(p, np.ones(len(p), bool)) for p in np.split(X, bounds)]
    merged = parts[0]
    for p in parts[1:]:
        merged = merged + p
    low, n_low, high, n_high = _reference(X[:, 0])
    assert merged.low[0].tolist() == low and merged.high[0].tolist() == high
    assert (int(merged.n_low[0]), int(merged.n_high[0])) == (n_low, n_high)
    assert merged.n == len(X)


def test_invalid_rows_are_left_out():
    X = np.array([[-9999.0], [1.0], [2.0], [np.nan]])
    e = chunk_extremes(X, np.array([False, True, True, False]))
    assert e.low[0].tolist() == [1.0, 2.0] and e.n == 2


def _with_fill(n: int = 60_000, share: float = 0.2, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)).astype(np.float32)
    y = np.where(rng.random(n) < 0.5, 1, -1)
    fill = rng.random(n) < share
    X[fill, 1] = -9999.0
    return X, y, int(fill.sum())


def _suspects(fit) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit()
    return [str(w.message) for w in caught if issubclass(w.category, SuspectedFillWarning)]


@pytest.mark.parametrize("door", ["summary", "bins-numpy", "bins-fused", "bins-one-read",
                                  "reduced-svc", "nystrom"])
def test_every_fit_door_names_feature_value_and_count(door):
    X, y, n_fill = _with_fill()
    Xd, yd = da.from_array(X, chunks=(7_001, 3)), da.from_array(y, chunks=7_001)
    fits = {
        "summary": lambda: quantile_summary(Xd, features=NAMES),
        "bins-numpy": lambda: percentile_bins(X, y, features=NAMES),
        "bins-fused": lambda: percentile_bins(Xd, yd, features=NAMES),
        "bins-one-read": lambda: percentile_bins(Xd, yd, features=NAMES, plan="one-read"),
        "reduced-svc": lambda: ReducedSVC(size=40, max_iter=2).fit(X[:8000], y[:8000]),
        "nystrom": lambda: NystromKernelRidge(size=40).fit(X[:8000], X[:8000, 0]),
    }
    found = _suspects(fits[door])
    assert len(found) == 1, found
    message = found[0]
    name = "column 1" if door in ("reduced-svc", "nystrom") else "b"
    count = int((X[:8000, 1] == -9999).sum()) if name == "column 1" else n_fill
    assert f"feature {name!r}" in message
    assert f"{count:,} of" in message and "hold the value -9999" in message
    assert "fill_values=" in message


@pytest.mark.parametrize(
    "column",
    [
        np.r_[np.zeros(3000), np.random.default_rng(1).exponential(size=7000)],  # many zeros
        np.r_[np.zeros(5000), np.ones(5000)],  # two values
        np.r_[np.zeros(3000), np.ones(4000), np.full(3000, 2.0)],  # three values
        np.r_[np.full(50, -9999.0), np.random.default_rng(2).normal(size=9950)],  # 0.5 %
        np.r_[1e12, np.random.default_rng(3).normal(size=9999)],  # one wild value
        np.r_[-560042.0, np.random.default_rng(5).normal(size=96)],  # one in 97 rows: 1 %
    ],
    ids=["zeros", "binary", "three-valued", "rare-fill", "one-outlier", "one-of-97"],
)
def test_ordinary_data_do_not_warn(column):
    X = np.column_stack([column, column[::-1]]).astype(np.float64)
    assert not _suspects(lambda: quantile_summary(X))


def test_threshold_is_a_setting():
    X, _, _ = _with_fill(n=10_000, share=0.05)
    assert _suspects(lambda: quantile_summary(X))
    with config.set(suspect_fill_fraction=0.1):
        assert not _suspects(lambda: quantile_summary(X))


def test_a_fit_of_scenes_with_a_fill_the_rules_do_not_know_refuses():
    """A variable without a range: the rules cannot mask it; a fit of scenes (whose model
    predicts whole scenes) refuses after its first pass, naming what to declare, rather
    than warn and fit on those rows."""
    from bigkern.errors import DataQualityError

    ds = make_scenes(2, (48, 64), seed=3, radiances=False).compute()
    values = ds["CORR"].values.copy()
    values.reshape(-1)[::7] = -9999.0
    ds["CORR"] = (ds["CORR"].dims, values)
    with pytest.raises(DataQualityError, match=r"refusing to fit on a suspected fill value: "
                                               r"feature 'CORR': .* hold the value -9999") as err:
        fit_scenes(ds, search=False, params={"omega": 0.8, "C": 1.0},
                   valid_ranges={"CORR": None})
    assert "--fill-value CORR=-9999" in str(err.value)
    outcome = fit_scenes(ds, search=False, params={"omega": 0.8, "C": 1.0},
                         valid_ranges={"CORR": None}, fill_values={"CORR": -9999})
    assert outcome.model.n_features_in_ == 3  # declared, it is masked and the fit goes on


def test_extremes_add_is_associative():
    rng = np.random.default_rng(4)
    parts = [chunk_extremes(rng.integers(-3, 4, size=(20, 2)).astype(float), np.ones(20, bool))
             for _ in range(3)]
    left = (parts[0] + parts[1]) + parts[2]
    right = parts[0] + (parts[1] + parts[2])
    for attr in ("low", "n_low", "high", "n_high"):
        np.testing.assert_array_equal(getattr(left, attr), getattr(right, attr))
    assert isinstance(left, ValueExtremes)


def test_zero_turns_the_check_and_its_sweep_off():
    from bigkern.reduce.passes import valid_rows

    X, _, _ = _with_fill(n=10_000)
    with config.set(suspect_fill_fraction=0):
        assert not _suspects(lambda: quantile_summary(X))
        assert "extremes" not in valid_rows(X, None, extremes=True)[1]
    assert "extremes" in valid_rows(X, None, extremes=True)[1]


@pytest.mark.parametrize("seed", range(6))
def test_small_chunks_get_the_compiled_sweeps_answers_from_numpy(seed):
    """Chunks under SMALL_CHUNK_VALUES are checked by numpy (numba's start-up costs a small
    fit 0.4 s): the same rows, counts and extremes as the compiled loops."""
    from bigkern.reduce.extremes import _extremes, _extremes_small
    from bigkern.reduce.row_loops import row_status, row_status_small

    rng = np.random.default_rng(seed)
    X = rng.choice([-9999.0, 0.0, 1.5, 2.0, 7.0, np.nan, np.inf], size=(300, 1 + seed % 3))
    if seed % 2:  # a column of one value, and -0.0 beside 0.0
        X[:, -1], X[::7, 0] = 2.0, -0.0
    mask = rng.uniform(size=300) < 0.8
    for m in (mask, None):
        valid, counts = row_status_small(X, m)
        want_valid, want_counts = row_status(X, mask if m is not None else mask[:0],
                                             m is not None)
        np.testing.assert_array_equal(valid, want_valid)
        np.testing.assert_array_equal(counts, want_counts)
        for got, want in zip(_extremes_small(X, valid), _extremes(X, valid), strict=True):
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("d", [1, 31, 32, 33, 300])
def test_small_row_status_counts_any_width(d):
    """numpy's row status adds columns up to 32 features and sums rows past them: the
    rows and counts of the definition either way (300 features: no uint8 overflow). The
    reference is plain numpy: compiling the loop for each width here would only test numba."""
    from bigkern.reduce.row_loops import row_status_small

    rng = np.random.default_rng(d)
    X = rng.standard_normal((500, d))
    X[rng.random(X.shape) < 0.3 / d] = np.nan
    X[::11] = np.inf  # absent rows
    mask = rng.random(500) < 0.9
    n_finite = np.isfinite(X).sum(axis=1)
    for m in (mask, None):
        considered = np.ones(500, bool) if m is None else m
        want = considered & (n_finite == d)
        absent = int((considered & (n_finite == 0)).sum())
        valid, counts = row_status_small(X, m)
        np.testing.assert_array_equal(valid, want)
        assert counts.tolist() == [500, 500 - int(considered.sum()), absent,
                                   int(considered.sum()) - int(want.sum()) - absent,
                                   int(want.sum())]
        assert absent and (counts[3] or d == 1)  # both kinds of left-out rows occur


def test_a_derived_features_suspect_is_declared_on_its_stored_variable():
    """A suspect found in logSD suggests ``--fill-value SD=9999``, on the stored variable,
    not a fill of logSD, the derived one."""
    import math

    from bigkern.reduce.extremes import SuspectedFill

    value = float(np.float32(math.log(9999.0)))
    text = SuspectedFill("logSD", value, 500, 10_000, "above", -1.0, 3.0).message()
    assert f"hold the value {value:g} (where SD is about 9999)" in text
    assert "--fill-value SD=9999," in text and "fill_values={'SD': 9999}" in text
    assert "--fill-value logSD" not in text


@pytest.mark.parametrize("seed", range(4))
def test_columns_extremes_equal_the_stacked_sweep(seed):
    """The prediction's sweep over separate columns (no stacked copy) gives the fit's answer
    on the rows where every column is finite."""
    from bigkern.reduce.extremes import columns_extremes

    rng = np.random.default_rng(seed)
    cols = [rng.choice([-9999.0, 0.0, 1.5, 2.0, 7.0, np.nan, np.inf], size=5000).astype(dtype)
            for dtype in ("f4", "f4", "f8")[: 2 + seed % 2]]
    X = np.column_stack([c.astype("f8") for c in cols])
    assert columns_extremes(cols) == chunk_extremes(X, np.isfinite(X).all(axis=1))


@pytest.mark.parametrize("seed", range(6))
def test_sorted_extremes_equal_the_sweep(seed):
    """The in-memory plan reads the extremes off each feature's sorted usable values: the
    sweep's answer, one distinct value, signed zeros and float32 included."""
    from bigkern.reduce.extremes import sorted_extremes

    rng = np.random.default_rng(seed)
    X = rng.choice([-9999.0, -0.0, 0.0, 1.5, 2.0, 7.0, np.nan], size=(400, 1 + seed % 3))
    if seed % 2:
        X[:, -1] = 2.0
    X = X.astype("f4" if seed % 3 else "f8")
    valid = np.isfinite(X).all(axis=1) & (rng.uniform(size=400) < 0.9)
    columns = [np.sort(X[valid, j]) for j in range(X.shape[1])]
    got = sorted_extremes(columns)
    assert got == chunk_extremes(X, valid)
    ends = np.concatenate([got.low.ravel(), got.high.ravel()])
    assert not np.signbit(ends[ends == 0]).any()  # a zero is +0.0, whatever the sort did
    none = sorted_extremes([c[:0] for c in columns])
    assert none == chunk_extremes(X, np.zeros(400, bool)) and none.n == 0


def test_a_derived_feature_is_judged_in_its_stored_units():
    """log(9999) = 9.21 lies barely past logSD's span (-1.37 … 3.95), 9999 far past SD's
    (0.25 … 52): the fill of SD is suspected through logSD, not missed."""
    from bigkern.reduce.extremes import ValueExtremes

    extremes = ValueExtremes(low=np.array([[-1.37, -1.34]]), n_low=np.array([1]),
                             high=np.array([[9.21024, 3.95]]), n_high=np.array([658]),
                             n=13_346)
    (suspect,) = extremes.suspects(["logSD"])
    assert (suspect.feature, suspect.count, suspect.side) == ("logSD", 658, "above")
    assert extremes.suspects(["NDAI"]) == []  # the same numbers as a feature of its own
