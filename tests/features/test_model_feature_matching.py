"""Where a model meets data, its features are checked: names and order, derived ones derived.

A model fitted on ['NDAI', 'logSD', 'CORR'] refuses
reordered, renamed or missing features naming its own; it predicts from
scenes that store SD only, with the masks it gives scenes that store logSD.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from bigkern import BinnedSVC, predict_scenes, stack_samples, with_features
from bigkern.datasets import make_scenes
from bigkern.features.matching import model_features

FEATURES = ["NDAI", "logSD", "CORR"]


@pytest.fixture(scope="module")
def scenes() -> xr.Dataset:
    return make_scenes(2, (32, 48), seed=4, radiances=False).compute()


@pytest.fixture(scope="module")
def model(scenes: xr.Dataset) -> BinnedSVC:
    s = stack_samples(with_features(scenes, FEATURES), FEATURES)
    return BinnedSVC(omega=0.8, C=1.0).fit(s.as_dataarray(), s.y, mask=s.mask)


@pytest.mark.parametrize(("given", "says"), [
    (["CORR", "logSD", "NDAI"], "in another order"),
    (["CORR", "SD", "NDAI"], "lack ['logSD'] and add ['SD']"),
    (["NDAI", "SD", "CORR"], "lack ['logSD'] and add ['SD']"),
    (["NDAI", "CORR"], "lack ['logSD']"),
])
def test_predict_scenes_refuses_other_features(scenes: xr.Dataset, model: BinnedSVC,
                                               given: list[str], says: str) -> None:
    with pytest.raises(ValueError, match="fitted on \\['NDAI', 'logSD', 'CORR'\\]") as err:
        predict_scenes(model, with_features(scenes, FEATURES), features=given)
    assert says in str(err.value)


def test_derived_feature_derived_by_the_prediction(scenes: xr.Dataset,
                                                   model: BinnedSVC) -> None:
    stored_sd = scenes[["NDAI", "SD", "CORR"]]
    assert "logSD" not in stored_sd
    from_sd = predict_scenes(model, stored_sd).compute()
    from_log = predict_scenes(model, with_features(scenes, FEATURES)).compute()
    np.testing.assert_array_equal(from_sd["cloud_mask"].values, from_log["cloud_mask"].values)
    np.testing.assert_array_equal(from_sd["decision"].values, from_log["decision"].values)
    assert from_sd.attrs["features"] == FEATURES


def test_fill_of_the_source_never_becomes_a_derived_value(scenes: xr.Dataset,
                                                          model: BinnedSVC) -> None:
    ds = scenes[["NDAI", "SD", "CORR"]].copy(deep=True)
    ds["SD"].values[0, :4, :] = -1.0  # declared below as SD's fill
    pred = predict_scenes(model, ds, fill_values={"SD": -1.0}).compute()
    assert (pred["cloud_mask"].values[0, :4, :] == 0).all()  # no prediction
    assert np.isnan(pred["decision"].values[0, :4, :]).all()


def test_model_without_names_needs_features(scenes: xr.Dataset) -> None:
    s = stack_samples(with_features(scenes, FEATURES), FEATURES)
    unnamed = BinnedSVC(omega=0.8, C=1.0).fit(np.asarray(s.X), np.asarray(s.y),
                                             mask=np.asarray(s.mask))
    assert not hasattr(unnamed, "feature_names_in_")
    with pytest.raises(ValueError, match="fitted without feature names: pass features"):
        predict_scenes(unnamed, with_features(scenes, FEATURES))
    with pytest.raises(ValueError, match="2 features given; the BinnedSVC takes 3"):
        model_features(unnamed, ["NDAI", "CORR"])
    out = predict_scenes(unnamed, with_features(scenes, FEATURES), features=FEATURES)
    assert out["cloud_mask"].shape == scenes["NDAI"].shape


def test_estimator_refuses_renamed_dataarray_features(scenes: xr.Dataset,
                                                      model: BinnedSVC) -> None:
    s = stack_samples(with_features(scenes, FEATURES), FEATURES).as_dataarray()
    renamed = s.assign_coords(feature=["NDAI", "SD", "CORR"])
    with pytest.raises(ValueError, match=r"lacks feature\(s\) \['logSD'\].*'NDAI', 'logSD'"):
        model.predict(renamed)
    reordered = s.isel(feature=[2, 0, 1])  # matched by name: the same predictions
    np.testing.assert_array_equal(model.decision_function(reordered),
                                  model.decision_function(s))


def test_estimator_refuses_reordered_dataframe_columns(scenes: xr.Dataset,
                                                       model: BinnedSVC) -> None:
    s = stack_samples(with_features(scenes, FEATURES), FEATURES).as_dataarray()
    frame = pd.DataFrame(np.asarray(s.values), columns=FEATURES).dropna()
    np.testing.assert_array_equal(model.predict(frame), model.predict(frame.to_numpy()))
    with pytest.raises(ValueError, match="feature names"):
        model.predict(frame[["CORR", "logSD", "NDAI"]])
