"""Fill values and valid ranges ("lose nothing"): masked, recorded, counted per feature.

Every store here is a real zarr store on disk. Injected bad values go into
labelled pixels whose other features are finite, so that each of them costs a
fit exactly one row, which the fit report must count against that feature.
"""

from __future__ import annotations

import math

import dask
import dask.array as da
import numpy as np
import pytest
import xarray as xr

from bigkern import config
from bigkern.datasets import make_scenes
from bigkern.errors import DataQualityError, StoreError
from bigkern.features import with_features
from bigkern.jobs.fit import DEFAULT_FEATURES, fit_scenes
from bigkern.jobs.predict import predict_scenes
from bigkern.models import BinnedSVC, load_model, save_model
from bigkern.reduce.passes import valid_rows
from bigkern.scenes import (
    apply_validity,
    open_scenes,
    stack_samples,
    validity_report,
    validity_rules,
    write_scenes,
)
from bigkern.scenes.validity_sources import NETCDF_DEFAULT_FILL

FEATURES = ("NDAI", "SD", "CORR")
NETCDF_FILL32 = float(np.float32(NETCDF_DEFAULT_FILL))
QUARTILES = (0.25, 0.5, 0.75)


def _scenes(n: int = 2, shape: tuple[int, int] = (40, 48), seed: int = 5) -> xr.Dataset:
    return make_scenes(n, shape, seed=seed, radiances=False).compute()


def _usable(ds: xr.Dataset, features=FEATURES) -> np.ndarray:
    """Labelled pixels with every feature finite: the rows a fit uses."""
    ok = ds["label"].values != 0
    for f in features:
        ok &= np.isfinite(ds[f].values)
    return ok


def _inject(ds: xr.Dataset, where: dict[str, np.ndarray], values) -> xr.Dataset:
    """Put ``values`` (cycled) into ``ds[feature]`` at the flat pixel indices ``where[feature]``."""
    out = ds.copy(deep=True)
    for feature, idx in where.items():
        data = out[feature].values
        flat = data.reshape(-1)
        flat[idx] = np.resize(np.asarray(values, dtype=data.dtype), len(idx))
        out[feature] = (out[feature].dims, data, out[feature].attrs)
    return out


def _pick(ds: xr.Dataset, fraction: float, seed: int) -> np.ndarray:
    """A seeded share of the usable pixels (a positive share is at least one pixel)."""
    candidates = np.flatnonzero(_usable(ds).reshape(-1))
    k = math.ceil(fraction * len(candidates))
    return np.sort(np.random.default_rng(seed).choice(candidates, size=k, replace=False))


def _fit(store, **open_kw) -> BinnedSVC:
    ds = open_scenes(store, **open_kw)
    s = stack_samples(ds, FEATURES)
    return BinnedSVC(quantiles=QUARTILES).fit(s.as_dataarray(), s.y, mask=s.mask)


def _by_feature(counts: dict[str, int]) -> dict[str, int]:
    return {f: counts.get(f, 0) for f in FEATURES}


# ---------------------------------------------------------------------------
# masking: explicit fills, declared CF fills and ranges, MISR defaults
# ---------------------------------------------------------------------------
def test_undeclared_fill_given_with_fill_values_is_masked_and_counted(tmp_path):
    ds = _scenes()
    idx = _pick(ds, 0.05, seed=1)
    store = write_scenes(_inject(ds, {"NDAI": idx}, [-9999.0]), tmp_path / "fill.zarr")

    # No fill declared and no range: -9999 is data, until fill_values declares it.
    raw = open_scenes(store, valid_ranges={"NDAI": None})
    assert int((raw["NDAI"] == -9999).sum()) == len(idx)

    opened = open_scenes(store, fill_values={"NDAI": -9999}, valid_ranges={"NDAI": None})
    assert isinstance(opened["NDAI"].data, da.Array)  # lazy
    assert opened["NDAI"].dtype == np.float32
    ndai = opened["NDAI"].values.reshape(-1)
    assert np.isnan(ndai[idx]).all()
    assert int((opened["NDAI"] == -9999).sum()) == 0
    np.testing.assert_array_equal(opened["label"].values, ds["label"].values)  # labels untouched
    report = validity_report(opened)["NDAI"]
    # netCDF's default fill of an undeclared float variable comes with the argument's
    assert report["fill_values"] == [NETCDF_FILL32, -9999.0]
    assert report["fill_source"] == "netcdf-default,argument"
    assert report["valid_min"] is None and report["valid_max"] is None

    model = _fit(store, fill_values={"NDAI": -9999}, valid_ranges={"NDAI": None})
    assert model.fit_report_["n_nonfinite"] == len(idx)
    assert model.fit_report_["n_nonfinite_by_feature"] == {"NDAI": len(idx), "SD": 0, "CORR": 0}


def test_declared_fill_value_missing_value_and_valid_range_are_honoured(tmp_path):
    ds = _scenes(seed=6)
    fill_idx = _pick(ds, 0.03, seed=2)
    ds = _inject(ds, {"NDAI": fill_idx, "SD": fill_idx[::2]}, [-9999.0])
    ds["NDAI"].encoding["_FillValue"] = np.float32(-9999.0)
    ds["SD"].encoding["missing_value"] = np.float32(-9999.0)
    ds["SD"].attrs["valid_max"] = 20.0  # CF valid_max only: no lower bound (replaces config)
    ds["CORR"].attrs["valid_range"] = [-1.0, 0.5]
    store = tmp_path / "declared.zarr"
    ds.to_zarr(store, zarr_format=3, consolidated=False)  # a store another tool wrote

    opened = open_scenes(store)
    for name in ("NDAI", "SD"):  # xarray decodes declared fills; bigkern records them
        values = opened[name].values.reshape(-1)
        injected = fill_idx if name == "NDAI" else fill_idx[::2]
        assert np.isnan(values[injected]).all()
        report = validity_report(opened)[name]
        assert report["fill_values"] == [-9999.0] and report["fill_source"] == "encoding"
    raw_sd = ds["SD"].values
    np.testing.assert_array_equal(np.isnan(opened["SD"].values),
                                  np.isnan(raw_sd) | (raw_sd == -9999) | (raw_sd > 20))
    assert validity_report(opened)["SD"]["valid_min"] is None
    assert validity_report(opened)["SD"]["valid_max"] == 20.0
    assert validity_report(opened)["SD"]["valid_range_source"] == "attribute"
    corr = opened["CORR"].values
    np.testing.assert_array_equal(np.isnan(corr), np.isnan(ds["CORR"].values)
                                  | (ds["CORR"].values > 0.5))
    # Declared fills cost the fit one row each, counted against their feature.
    model = _fit(store, valid_ranges={"SD": None, "CORR": None})
    assert model.fit_report_["n_nonfinite_by_feature"] == {
        "NDAI": len(fill_idx), "SD": len(fill_idx[::2]), "CORR": 0}
    # An explicit range takes precedence over the CF attribute.
    wider = open_scenes(store, valid_ranges={"CORR": (-1, 1)})
    np.testing.assert_array_equal(wider["CORR"].values, ds["CORR"].values)
    assert validity_report(wider)["CORR"]["valid_range_source"] == "argument"


def test_undecoded_cf_attributes_are_honoured_and_counted_in_memory():
    """With mask_and_scale off, _FillValue/missing_value stay attributes: masked all the same."""
    ds = _scenes(n=1, shape=(8, 10))
    ds = _inject(ds, {"NDAI": np.array([0, 1, 2]), "SD": np.array([3, 4])}, [-9999.0])
    ds["NDAI"].attrs["_FillValue"] = np.float32(-9999.0)
    ds["SD"].attrs["missing_value"] = [-9999.0, -999.0]
    ds["CORR"].attrs.update(valid_min=0.0)
    out = apply_validity(ds)
    rep = validity_report(out)
    assert (rep["NDAI"]["n_fill"], rep["NDAI"]["n_out_of_range"]) == (3, 0)
    assert (rep["SD"]["n_fill"], rep["SD"]["fill_values"]) == (2, [-9999.0, -999.0])
    assert rep["CORR"]["n_out_of_range"] == int((ds["CORR"].values < 0).sum())
    assert not (out["CORR"].values < 0).any()


def test_packed_cf_valid_range_is_in_packed_units(tmp_path):
    ds = _scenes(n=1, shape=(8, 10))
    corr = ds["CORR"].values
    corr[0, 0, :3] = [1.5, -2.0, 0.25]
    ds["CORR"].encoding.update(dtype="int16", scale_factor=0.01, _FillValue=np.int16(-32768))
    ds["CORR"].attrs["valid_range"] = np.array([-100, 100], dtype=np.int16)  # packed: [-1, 1]
    store = tmp_path / "packed.zarr"
    ds.to_zarr(store, zarr_format=3, consolidated=False)
    opened = open_scenes(store)
    row = opened["CORR"].values[0, 0, :3]
    assert np.isnan(row[:2]).all() and row[2] == pytest.approx(0.25)
    rep = validity_report(opened)["CORR"]
    assert (rep["valid_min"], rep["valid_max"]) == pytest.approx((-1.0, 1.0))


def test_misr_default_ranges_mask_an_out_of_range_fill(tmp_path):
    ds = _scenes(seed=7)
    idx = _pick(ds, 0.02, seed=3)
    store = write_scenes(_inject(ds, {"CORR": idx}, [-9999.0]), tmp_path / "corr.zarr")
    opened = open_scenes(store)  # no argument: the bigkern.valid_ranges default for CORR
    assert np.isnan(opened["CORR"].values.reshape(-1)[idx]).all()
    rep = validity_report(opened)
    assert (rep["CORR"]["valid_min"], rep["CORR"]["valid_max"]) == (-1.0, 1.0)
    assert rep["CORR"]["valid_range_source"] == "config"
    assert rep["SD"]["valid_min"] == 0.0 and rep["SD"]["valid_max"] is None
    # ... and the defaults mask nothing that is good data
    for name in FEATURES:
        expected = np.isnan(ds[name].values).reshape(-1)
        if name == "CORR":
            expected[idx] = True
        np.testing.assert_array_equal(np.isnan(opened[name].values).reshape(-1), expected)
    model = _fit(store)
    assert model.fit_report_["n_nonfinite_by_feature"] == {"NDAI": 0, "SD": 0, "CORR": len(idx)}
    # fill pixels get no cloud/clear mask
    mask = predict_scenes(model, opened)["cloud_mask"].values.reshape(-1)
    assert (mask[idx] == 0).all()
    usable = _usable(ds).reshape(-1)
    usable[idx] = False
    assert (mask[usable] != 0).all()
    # the setting can be changed like any bigkern setting
    with config.set(valid_ranges={"CORR": [-1.0, 0.0]}):
        narrow = open_scenes(store)
    assert not (narrow["CORR"].values > 0).any()
    # ... also under a lower-case name, as environment variables give it
    # (BIGKERN_VALID_RANGES__CORR="[-1, 0]"), which overrides the packaged default
    with dask.config.set({"bigkern.valid_ranges.corr": [-1.0, 0.0]}):
        assert not (open_scenes(store)["CORR"].values > 0).any()
    with config.set(fill_values=[-9999.0]):  # fill values for every feature
        assert validity_report(open_scenes(store))["SD"]["fill_source"] == \
            "netcdf-default,config"
    # and range checks can be turned off
    off = open_scenes(store, valid_ranges=False)
    assert int((off["CORR"] == -9999).sum()) == len(idx)


def test_defaults_mask_nothing_in_the_synthetic_scenes():
    ds = make_scenes(2, (64, 80), seed=11).compute()  # with radiances
    out = apply_validity(ds)
    for name, entry in validity_report(out).items():
        assert entry["n_fill"] == 0 and entry["n_out_of_range"] == 0, name
    assert set(validity_report(out)) == {"NDAI", "SD", "CORR", "DF", "CF", "BF", "AF", "AN"}


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"valid_ranges": {"CORR": (1, -1)}}, r"valid range of 'CORR' is empty: its minimum 1"),
        ({"fill_values": {"FOO": -9999}}, r"'FOO', which is not a feature of the dataset"),
        ({"valid_ranges": {"label": (0, 1)}}, r"'label', a label, not a feature"),
        ({"valid_ranges": {"logSD": (0, 1)}}, r"'logSD' is derived from 'SD'"),
        ({"fill_values": {"NDAI": float("nan")}}, r"fill value of 'NDAI' must be a finite"),
        ({"fill_values": {"SD": "x"}}, r"fill value of 'SD' must be a number"),
        ({"valid_ranges": {"NDAI": (1,)}}, r"valid range of 'NDAI' must be a pair"),
        ({"valid_ranges": (0, 1)}, r"valid_ranges must be a mapping"),
    ],
    ids=["min-above-max", "unknown-feature", "label", "derived", "nan-fill", "text-fill",
         "one-bound", "not-a-mapping"],
)
def test_nonsense_input_names_the_feature(tmp_path, kwargs, match):
    ds = _scenes(n=1, shape=(8, 10))
    with pytest.raises(StoreError, match=match):
        validity_rules(ds, **kwargs)
    store = write_scenes(ds, tmp_path / "s.zarr")
    with pytest.raises(StoreError, match=match):
        open_scenes(store, **kwargs)


def test_nonsense_cf_attribute_and_setting_are_named():
    ds = _scenes(n=1, shape=(8, 10))
    ds["SD"].attrs["valid_range"] = [5.0, 1.0]
    with pytest.raises(StoreError, match=r"variable 'SD'.*valid_range is empty"):
        apply_validity(ds)
    ds = _scenes(n=1, shape=(8, 10))
    with config.set(valid_ranges={"NDAI": [3, "high"]}), \
            pytest.raises(StoreError, match=r"bigkern\.valid_ranges\.NDAI"):
        apply_validity(ds)


# ---------------------------------------------------------------------------
# counting: rows dropped = rows injected, per feature, in every report
# ---------------------------------------------------------------------------
def test_valid_rows_counts_per_feature_present_unmasked_rows_only():
    nan = np.nan
    X = np.array([[1, 2, 3], [nan, 2, 3], [nan, nan, nan], [np.inf, nan, 1], [1, 1, -np.inf],
                  [nan, 1, 1]], dtype=np.float32)
    _, counts = valid_rows(X, None)
    assert counts["nonfinite"] == 4 and counts["absent"] == 1
    assert [counts[f"nonfinite_feature_{j}"] for j in range(3)] == [3, 1, 1]
    _, counts = valid_rows(X, np.array([1, 1, 1, 1, 1, 0], dtype=bool))
    assert [counts[f"nonfinite_feature_{j}"] for j in range(3)] == [2, 1, 1]


SWEEP = [0.0, 1e-6, 0.01, 0.5, 1.0]
# NaN, ±inf, and -9999 (outside every MISR feature's default range), cycled over the pixels
BAD_VALUES = [np.nan, np.inf, -9999.0, -np.inf]


@pytest.mark.parametrize("fraction", SWEEP, ids=[f"{f:g}" for f in SWEEP])
def test_nonfinite_sweep_rows_dropped_equal_rows_injected(tmp_path, fraction):
    feature = FEATURES[SWEEP.index(fraction) % len(FEATURES)]
    ds = _scenes(seed=8)
    idx = _pick(ds, fraction, seed=SWEEP.index(fraction))
    store = write_scenes(_inject(ds, {feature: idx}, BAD_VALUES), tmp_path / "sweep.zarr")
    expected = {f: len(idx) if f == feature else 0 for f in FEATURES}
    n_usable = int(_usable(ds).sum())

    if fraction == 1.0:
        with pytest.raises(DataQualityError, match=rf"no usable rows: all \d+ rows are masked "
                                                   rf"\(\d+\), absent \(\d+\) or have a "
                                                   rf"non-finite feature \({n_usable}; "
                                                   rf"column {FEATURES.index(feature)}: "
                                                   rf"{n_usable}\)"):
            _fit(store)
        return
    if fraction == 0.5:  # over the default limit: refused, naming the feature and its count
        with pytest.raises(DataQualityError, match=rf"\({feature}: {len(idx)}\), over the limit"):
            _fit(store)
        with config.set(max_nonfinite_fraction=0.6):
            model = _fit(store)
    else:
        model = _fit(store)
    report = model.fit_report_
    assert report["n_nonfinite"] == len(idx)
    assert _by_feature(report["n_nonfinite_by_feature"]) == expected
    assert report["n_valid"] == n_usable - len(idx)
    assert not any(k.startswith("n_nonfinite_feature_") for k in report)


def test_per_feature_counts_with_several_features_and_fit_scenes(tmp_path):
    ds = _scenes(seed=9)
    rng_idx = {f: _pick(ds, share, seed=20 + i)
               for i, (f, share) in enumerate(zip(FEATURES, (0.02, 0.05, 0.0), strict=True))}
    store = write_scenes(_inject(ds, rng_idx, BAD_VALUES), tmp_path / "several.zarr")
    union = np.union1d(rng_idx["NDAI"], rng_idx["SD"])
    model = _fit(store)
    assert model.fit_report_["n_nonfinite_by_feature"] == {f: len(v) for f, v in
                                                           rng_idx.items()}
    assert model.fit_report_["n_nonfinite"] == len(union)
    # the bins (and so every binned report) carry the per-feature counts too
    outcome = fit_scenes(open_scenes(store), features=("NDAI", "logSD", "CORR"), search=False)
    assert outcome.model.fit_report_["n_nonfinite_by_feature"] == {
        "NDAI": len(rng_idx["NDAI"]), "logSD": len(rng_idx["SD"]), "CORR": 0}
    assert outcome.bins.attrs["n_nonfinite_feature_1"] == len(rng_idx["SD"])
    # a model with such a report still saves and loads
    for name in ("model.nc", "model.zarr"):
        path = save_model(outcome.model, tmp_path / name)
        loaded = load_model(path)
        np.testing.assert_array_equal(loaded.expansion_.coef, outcome.model.expansion_.coef)


@pytest.mark.filterwarnings(  # the fill taken as data is what the warning is for
    "ignore::bigkern.reduce.extremes.SuspectedFillWarning")
def test_fill_declared_gives_the_accuracy_of_nan(tmp_path):
    ds = make_scenes(3, (72, 96), seed=4, radiances=False).compute()
    idx = _pick(ds, 0.2, seed=5)
    fill = write_scenes(_inject(ds, {"NDAI": idx}, [-9999.0]), tmp_path / "fill.zarr")
    nan = write_scenes(_inject(ds, {"NDAI": idx}, [np.nan]), tmp_path / "nan.zarr")
    grid = {"omega": [0.8], "C": [1.0]}

    def accuracy(store, **kw) -> tuple[float, dict]:
        out = fit_scenes(open_scenes(store, **kw), grid=grid, seed=1)
        return out.search.best_score, out.model.fit_report_

    acc_nan, rep_nan = accuracy(nan)
    acc_fill, rep_fill = accuracy(fill, fill_values={"NDAI": -9999}, valid_ranges={"NDAI": None})
    acc_default, _ = accuracy(fill)  # the default NDAI range masks -9999 too
    with config.set(suspect_fill_fraction=0):  # the fill taken as data (else: refused)
        acc_raw, rep_raw = accuracy(fill, valid_ranges={"NDAI": None})
    assert acc_fill == acc_nan == acc_default
    assert rep_fill["n_nonfinite_by_feature"] == rep_nan["n_nonfinite_by_feature"]
    assert rep_fill["n_nonfinite_by_feature"]["NDAI"] > 0
    assert rep_raw["n_nonfinite_by_feature"]["NDAI"] == 0
    assert acc_raw < acc_nan


@pytest.mark.filterwarnings(  # an undeclared fill, in memory and in a store: said
    "ignore::bigkern.reduce.extremes.SuspectedFillWarning")
def test_in_memory_scenes_get_the_store_rules(tmp_path):
    """A Dataset held in memory is masked as the same Dataset through a store."""
    ds = make_scenes(3, (72, 96), seed=4, radiances=False).compute()
    idx = _pick(ds, 0.2, seed=5)
    filled = _inject(ds, {"NDAI": idx}, [-9999.0])  # undeclared: no _FillValue
    grid = {"omega": [0.8], "C": [1.0]}
    stored = fit_scenes(open_scenes(write_scenes(filled, tmp_path / "fill.zarr")),
                        grid=grid, seed=1)
    held = fit_scenes(filled, grid=grid, seed=1)
    assert held.search.best_score == stored.search.best_score
    untimed = [{k: v for k, v in out.model.fit_report_.items() if not k.startswith("seconds")}
               for out in (held, stored)]
    assert untimed[0] == untimed[1]
    assert untimed[0]["n_nonfinite_by_feature"]["NDAI"] > 0  # the training half's fills
    np.testing.assert_array_equal(held.model.expansion_.coef, stored.model.expansion_.coef)
    # the samples and the predictions of an in-memory Dataset are masked too
    s = stack_samples(filled, ["NDAI", "CORR"])
    expected = np.isnan(ds["NDAI"].values).reshape(-1)
    expected[idx] = True
    np.testing.assert_array_equal(np.isnan(s.X[:, 0].compute()), expected)
    mask = predict_scenes(held.model, with_features(filled, DEFAULT_FEATURES))["cloud_mask"]
    assert (mask.values.reshape(-1)[idx] == 0).all()
    # ... and the arguments of open_scenes are honoured at every door
    with config.set(suspect_fill_fraction=0):  # taken as data: the check would refuse
        raw = fit_scenes(filled, grid=grid, seed=1, valid_ranges={"NDAI": None})
    assert raw.model.fit_report_["n_nonfinite_by_feature"]["NDAI"] == 0
    # a Dataset opened from a store keeps the choice made there (no second masking)
    off = open_scenes(write_scenes(filled, tmp_path / "off.zarr"), valid_ranges=False)
    assert int((stack_samples(off, ["NDAI"]).X == -9999).sum().compute()) == len(idx)
