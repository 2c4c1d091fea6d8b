"""Scenes of three classes: ``bigkern synth --classes 3`` → ``bigkern fit`` (calibrated) →
``bigkern predict``, in-process on the session's LocalCluster.

The prediction store holds a ``class`` map with CF flags named from the label's own
``flag_meanings`` and a probability map per class whose pixels are the reloaded model's
``predict_proba`` of the same pixels; a two-class store still writes ``cloud_mask`` (and,
calibrated, ``cloud_probability``).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from bigkern.cli.main import main
from bigkern.features import with_features
from bigkern.models import load_model
from bigkern.scenes import open_scenes
from bigkern.scenes.samples import stack_samples
from bigkern.store.zarr_store import open_zarr

FEATURES = ["NDAI", "logSD", "CORR"]


@pytest.fixture(scope="module")
def on_cluster(client):
    return ["--scheduler", client.scheduler.address]


def _pixels(store):
    s = stack_samples(with_features(open_scenes(store), FEATURES), FEATURES,
                      labelled_only=False)
    return s.X.compute(), s.y.compute()


@pytest.mark.parametrize("model", ["reduced-svc", "nystrom-krr"])
def test_three_classes_fit_and_predict_with_probabilities(tmp_path, on_cluster, model, capsys):
    store = tmp_path / "three.zarr"
    assert main(["synth", "-o", str(store), "--scenes", "2", "--shape", "40", "56",
                 "--classes", "3", "--seed", "1", *on_cluster]) == 0
    fitted = tmp_path / "m.zarr"
    assert main(["fit", str(store), "-o", str(fitted), "--model", model,
                 "--features", *FEATURES, "--param", "calibration=sigmoid",
                 "--param", "random_state=0", *on_cluster]) == 0
    out = tmp_path / "p.zarr"
    assert main(["predict", str(store), str(fitted), "-o", str(out), *on_cluster]) == 0
    said = capsys.readouterr().out
    assert "pixels per predicted class: clear" in said
    # the held-out score: accuracy and the calibrated probabilities' log loss
    loss = float(re.search(r"held-out accuracy [\d.]+%, log loss ([\d.]+) on [\d,]+ pixels of "
                           r"the other half \(3 classes\)", said).group(1))
    assert 0 < loss < np.log(3)

    pred = open_zarr(out)
    names = ["clear", "low_cloud", "high_cloud"]
    assert pred["class"].dtype == np.int8
    assert pred["class"].attrs["flag_values"] == [1, 2, 3, 0]
    assert pred["class"].attrs["flag_meanings"] == " ".join([*names, "no_prediction"])
    assert sorted(pred.data_vars) == sorted(["class", *(f"probability_{n}" for n in names)])
    assert "cloud_mask" not in pred and "decision" not in pred

    reloaded = load_model(fitted)
    np.testing.assert_array_equal(reloaded.classes_, [1, 2, 3])
    X, _ = _pixels(store)
    keep = np.isfinite(X).all(axis=1)
    classes = pred["class"].values.reshape(-1)
    np.testing.assert_array_equal(classes[keep], reloaded.predict(X[keep]))
    assert (classes[~keep] == 0).all()  # no class is made up for a pixel with no feature
    proba = np.stack([pred[f"probability_{n}"].values.reshape(-1) for n in names], axis=1)
    # float32 maps of the float64 probabilities of the same pixels
    np.testing.assert_allclose(proba[keep], reloaded.predict_proba(X[keep]), atol=1e-6)
    np.testing.assert_allclose(proba[keep].sum(axis=1), 1.0, atol=1e-5)
    assert np.isnan(proba[~keep]).all()


def test_two_classes_keep_their_names_and_add_cloud_probability(tmp_path, on_cluster):
    store = tmp_path / "two.zarr"
    assert main(["synth", "-o", str(store), "--scenes", "1", "--shape", "40", "56",
                 "--seed", "4", *on_cluster]) == 0
    fitted = tmp_path / "m.zarr"
    assert main(["fit", str(store), "-o", str(fitted), "--model", "reduced-svc",
                 "--features", *FEATURES, "--param", "calibration=sigmoid",
                 "--param", "random_state=0", *on_cluster]) == 0
    for probability, extra in (("all", ["cloud_probability"]), ("none", [])):
        out = tmp_path / f"p-{probability}.zarr"
        assert main(["predict", str(store), str(fitted), "-o", str(out), "--probability",
                     probability, *on_cluster]) == 0
        pred = open_zarr(out)
        assert sorted(pred.data_vars) == sorted(["cloud_mask", "decision", *extra])
        assert pred["cloud_mask"].attrs["flag_meanings"] == "clear no_prediction cloud"
    X, _ = _pixels(store)
    keep = np.isfinite(X).all(axis=1)
    p = open_zarr(tmp_path / "p-all.zarr")["cloud_probability"].values.reshape(-1)
    np.testing.assert_allclose(p[keep], load_model(fitted).predict_proba(X[keep])[:, 1],
                               atol=1e-6)
