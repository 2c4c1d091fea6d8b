"""One feature cube: the fit and the prediction read the same numbers from the same scenes.

:func:`bigkern.scenes.feature_cube` is the one way from scenes to features. These
tests hold the property it is for, without looking inside either path: on the
same scenes (a zarr store on disk, or dask-chunked data with fills, values out of
range and features chunked unlike each other), the rows ``stack_samples`` gives a
fit, put back at their pixels, are the cube ``predict_scenes`` evaluates, bit for
bit, NaN where NaN; so the pixels a fit leaves out are those a prediction leaves
unpredicted. The prediction's cube is read back through its output: a probe model
whose decision is one column of the rows it is given.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import BaseEstimator, RegressorMixin

from bigkern.datasets import make_scenes
from bigkern.errors import StoreError
from bigkern.features import with_features
from bigkern.jobs.predict import mask_codes, predict_scenes
from bigkern.models import BinnedSVC
from bigkern.scenes import feature_cube, open_scenes, stack_samples, write_scenes
from bigkern.scenes.validity import ensure_validity

FEATURES = ["NDAI", "logSD", "CORR"]


class ColumnProbe(RegressorMixin, BaseEstimator):
    """A "model" whose decision is column ``j`` of its rows: the prediction shows the cube."""

    def __init__(self, features: list[str], j: int = 0) -> None:
        self.features = features
        self.j = j
        self.feature_names_in_ = np.asarray(features, dtype=object)
        self.n_features_in_ = len(features)
        self.n_basis_ = 1

    def decision_rows(self, X: np.ndarray) -> np.ndarray:
        return np.asarray(X)[:, self.j]


def _scenes(seed: int = 3, shape: tuple[int, int] = (20, 24)) -> xr.Dataset:
    """Three scenes with a fill value, out-of-range values and NaN put into the features."""
    ds = make_scenes(3, shape, seed=seed, radiances=False).compute()
    rng = np.random.default_rng(seed)
    for name, bad in (("NDAI", -9999.0), ("SD", -1.0), ("CORR", 7.0), ("CORR", np.nan)):
        data = ds[name].values.copy()
        data.reshape(-1)[rng.choice(data.size, size=data.size // 20, replace=False)] = bad
        ds[name] = (ds[name].dims, data, ds[name].attrs)
    return ds


def _fit_cube(ds: xr.Dataset, features: list[str], **rules) -> tuple[np.ndarray, dict]:
    """The fit's rows put back at their pixels, as ``fit_scenes`` stacks them."""
    ds = ensure_validity(ds, **rules)  # fit_scenes: every variable meets the rules first,
    ds = with_features(ds, features)  # then the derived features are added
    s = stack_samples(ds, features, labelled_only=False)
    shape = tuple(ds.sizes[d] for d in ("scene", "y", "x"))
    X, pixel = (np.asarray(a) for a in (s.X.compute(), s.pixel.compute()))
    cube = np.empty((int(np.prod(shape)), len(features)), dtype=X.dtype)
    cube[pixel] = X
    return cube.reshape(*shape, len(features)), s.counts()


def _predict_cube(ds: xr.Dataset, features: list[str], **rules) -> np.ndarray:
    """The cube ``predict_scenes`` evaluates, column by column through the probe."""
    columns = [predict_scenes(ColumnProbe(features, j), ds, **rules)["prediction"].values
               for j in range(len(features))]
    return np.stack(columns, axis=-1)


def _assert_same(fit: np.ndarray, pred: np.ndarray) -> None:
    assert fit.dtype == pred.dtype == np.float32
    assert fit.shape == pred.shape
    np.testing.assert_array_equal(np.isnan(fit), np.isnan(pred))
    assert fit.tobytes() == pred.tobytes()  # bit for bit, NaN where NaN


def test_fit_and_prediction_read_the_same_cube_from_a_store(tmp_path):
    ds = _scenes().chunk({"scene": 1, "y": 8, "x": 24})
    ds["NDAI"].attrs["_FillValue"] = -9999.0
    path = tmp_path / "scenes.zarr"
    write_scenes(ds, path)
    opened = open_scenes(path)
    fit, counts = _fit_cube(opened, FEATURES)
    pred = _predict_cube(opened, FEATURES)
    _assert_same(fit, pred)
    # the rules masked something in every feature, and the fit counts what the cube holds
    assert np.isnan(fit).any(axis=(0, 1, 2)).all()
    assert counts["nonfinite"] + counts["absent"] == int((~np.isfinite(fit).all(-1)).sum())


@pytest.mark.parametrize("rules", [False, True], ids=["store-rules", "given-rules"])
@settings(max_examples=3, deadline=None)
@given(seed=st.integers(0, 2**16), rows=st.integers(6, 20), cols=st.integers(8, 24),
       corr_rows=st.integers(4, 20), stored_logsd=st.booleans())
def test_fit_and_prediction_read_the_same_cube_however_chunked(rules, seed, rows, cols,
                                                               corr_rows, stored_logsd):
    ds = _scenes(seed).chunk({"scene": 1, "y": rows, "x": cols})
    ds["CORR"] = ds["CORR"].chunk({"scene": 3, "y": corr_rows, "x": 24})  # not as NDAI's
    if stored_logsd:  # a store's own logSD is read as stored, by both
        ds = with_features(ds, ["logSD"])
        ds["logSD"].attrs = {}
    # rules that mask more than the defaults do: a fill of 0.0 in SD, CORR cut at 0.5
    # (a store's own logSD is its own stored variable: the rules name it, not SD, which a
    # prediction would refuse as not among the variables it reads)
    kw = {"valid_ranges": {"CORR": (None, 0.5), "logSD": (0.0, None)}} if stored_logsd else {
        "fill_values": {"SD": 0.0}, "valid_ranges": {"CORR": (None, 0.5), "SD": (1.0, None)}}
    kw = kw if rules else {}
    fit, _ = _fit_cube(ds, FEATURES, **kw)
    _assert_same(fit, _predict_cube(ds, FEATURES, **kw))
    if rules:  # the given rules did mask: CORR above 0.5, logSD where SD < 1
        assert not (fit[..., 2] > 0.5).any() and not (fit[..., 1] < 0).any()
    direct = feature_cube(ds, FEATURES, derive=True, **kw)
    assert direct.chunks == ds["NDAI"].data.chunks  # the first feature's chunks, for all
    assert direct.cube.chunks[:3] == direct.chunks and direct.cube.chunks[3] == (3,)


def test_a_model_leaves_unpredicted_exactly_the_pixels_a_fit_leaves_out():
    ds = _scenes(seed=11)
    s = stack_samples(with_features(ensure_validity(ds), FEATURES), FEATURES)
    model = BinnedSVC(omega=0.8, C=1.0).fit(s.as_dataarray(), s.y, mask=s.mask)
    pred = predict_scenes(model, ds)
    none = mask_codes(model.classes_)[2]
    fit, _ = _fit_cube(ds, FEATURES)
    np.testing.assert_array_equal(pred["cloud_mask"].values == none,
                                  ~np.isfinite(fit).all(axis=-1))


def test_both_paths_refuse_a_missing_feature_in_the_same_words():
    ds = _scenes().drop_vars("CORR")
    with pytest.raises(StoreError) as fit_error:
        stack_samples(ds, ["NDAI", "CORR"])
    with pytest.raises(StoreError) as predict_error:
        predict_scenes(ColumnProbe(["NDAI", "CORR"]), ds)
    assert str(fit_error.value) == str(predict_error.value)
    assert "lacks feature(s) ['CORR']" in str(fit_error.value)


def test_fused_and_stacked_cubes_are_the_same_numbers(monkeypatch):
    """A chunk up to ``FUSED_CUBE_BYTES`` is one task fused with its reads; a larger one
    stacks a task per feature. Both give the same cube, bit for bit, NaN where NaN, and
    the fused one costs a single task per chunk."""
    import dask

    import bigkern.scenes.samples as samples

    ds = _scenes(3).chunk({"scene": 1, "y": 8, "x": 24})
    ds["CORR"] = ds["CORR"].chunk({"scene": 3, "y": 5, "x": 24})  # rechunked to NDAI's
    kw = {"fill_values": {"SD": 0.0}, "valid_ranges": {"CORR": (None, 0.5)}}
    fused = feature_cube(ds, FEATURES, derive=True, **kw).cube
    monkeypatch.setattr(samples, "FUSED_CUBE_BYTES", 0)
    stacked = feature_cube(ds, FEATURES, derive=True, **kw).cube
    assert fused.chunks == stacked.chunks
    values = fused.compute()
    np.testing.assert_array_equal(values, stacked.compute())
    assert np.isnan(values).any()  # the rules masked something
    (one,), (many,) = dask.optimize(fused), dask.optimize(stacked)
    n_chunks = int(np.prod(fused.numblocks))
    tasks = {name: len({k for k in dict(c.__dask_graph__()) if isinstance(k, tuple)})
             for name, c in (("fused", one), ("stacked", many))}
    assert tasks["fused"] < tasks["stacked"], tasks
    assert sum(1 for k in dict(one.__dask_graph__()) if isinstance(k, tuple)
               and k[0] == fused.name) == n_chunks
