"""``bigkern fit --model reduced-svc | reduced-svr | nystrom-krr`` → ``bigkern predict``.

In-process on the session's LocalCluster (``--scheduler`` its address), on a small
synthetic store: each model is fitted on a random half of its pixels, scored on the
other half, saved, reloaded and predicted over every pixel; the prediction store
must hold what the reloaded model predicts for the same pixels.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import xarray as xr

from bigkern.cli.main import main
from bigkern.datasets import make_scenes
from bigkern.features import with_features
from bigkern.models import load_model
from bigkern.reduce.sampling import random_split
from bigkern.scenes import open_scenes, write_scenes
from bigkern.scenes.samples import stack_samples
from bigkern.store.zarr_store import open_zarr

MISR8 = ["NDAI", "logSD", "CORR", "DF", "CF", "BF", "AF", "AN"]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """Two synthetic scenes of 40 × 56 pixels, one scene per chunk."""
    path = tmp_path_factory.mktemp("reduced-cli") / "scenes.zarr"
    write_scenes(make_scenes(2, (40, 56), seed=5), path,
                 chunks={"scene": 1, "y": 40, "x": 56})
    return path


@pytest.fixture(scope="module")
def on_cluster(client):
    """The command-line flags that run a command on the session's cluster."""
    return ["--scheduler", client.scheduler.address]


def _pixels(store, features, target=None):
    """Every pixel's features (n, d), labels (n,), target (n,) or None, and pixel ids."""
    names = [*features, *([target] if target else [])]
    s = stack_samples(with_features(open_scenes(store), names), names, labelled_only=False)
    X = s.X.compute()
    return (X[:, :len(features)], s.y.compute(), X[:, -1] if target else None,
            s.pixel.compute())


def _named(X, features):
    return xr.DataArray(X, dims=("sample", "feature"), coords={"feature": list(features)})


def _number(pattern, text):
    return float(re.search(pattern, text).group(1).replace(",", ""))


CASES = {
    "reduced-svc-8-features": (["--model", "reduced-svc", "--features", *MISR8,
                                "--param", "size=40", "--param", "C=10"],
                               "ReducedSVC", MISR8, None),
    "reduced-svr": (["--model", "reduced-svr", "--target", "NDAI", "--features", "logSD",
                     "CORR", "DF", "AN", "--param", "size=40", "--param", "epsilon=0.05"],
                    "ReducedSVR", ["logSD", "CORR", "DF", "AN"], "NDAI"),
    "nystrom-krr-regressor": (["--model", "nystrom-krr", "--target", "AN", "--features", "DF",
                               "CF", "BF", "AF", "--param", "size=40",
                               "--param", "lam=[0.01, 0.1]"],
                              "NystromKernelRidge", ["DF", "CF", "BF", "AF"], "AN"),
    "nystrom-krr-classifier": (["--model", "nystrom-krr", "--param", "size=40",
                                "--param", "lam=0.1"],
                               "NystromKernelRidgeClassifier", ["NDAI", "logSD", "CORR"], None),
}


@pytest.mark.parametrize("case", list(CASES))
def test_fit_predict_every_reduced_model(case, store, on_cluster, tmp_path, capsys):
    args, name, features, target = CASES[case]
    model_path, pred_path = tmp_path / "m.zarr", tmp_path / "p.zarr"
    assert main(["fit", str(store), "-o", str(model_path), *args, *on_cluster]) == 0
    out, err = capsys.readouterr()
    assert f"fitted {name} " in out and "random training half" in out
    assert "fitted on the training half only" in out and str(model_path) in out
    assert f"fitting {name} on a random half" in err and "centers" in err

    model = load_model(model_path)
    assert type(model).__name__ == name
    assert list(model.feature_names_in_) == features
    png = tmp_path / "p.png"
    assert main(["predict", str(store), str(model_path), "-o", str(pred_path), "--png",
                 str(png), *on_cluster]) == 0
    assert png.read_bytes()[:4] == b"\x89PNG"

    X, labels, y, pixel = _pixels(store, features, target)
    finite = np.isfinite(X).all(axis=1)
    pred = open_zarr(pred_path)
    expected = model.predict(_named(X[finite], features))
    if target is None:
        assert set(pred.data_vars) == {"decision", "cloud_mask"}
        mask = pred["cloud_mask"].values.ravel()
        np.testing.assert_array_equal(mask[finite], expected)
        assert (mask[~finite] == 0).all()
        np.testing.assert_allclose(pred["decision"].values.ravel()[finite],
                                   model.decision_function(_named(X[finite], features)),
                                   rtol=1e-5, atol=1e-5)
    else:
        assert set(pred.data_vars) == {"prediction"}
        values = pred["prediction"].values.ravel()
        assert values.dtype == np.float32
        np.testing.assert_allclose(values[finite], expected, rtol=1e-5, atol=1e-5)
        assert np.isnan(values[~finite]).all()

    # the printed counts and score are those of the half it says: recompute them here
    eligible = labels != 0 if target is None else np.isfinite(y)
    train, held = random_split(pixel, eligible, fraction=0.5, seed=0)
    assert _number(r"([\d,]+) rows used", out) == np.sum(train & finite)
    scored = held & finite
    if target is None:
        accuracy = np.mean(model.predict(_named(X[scored], features)) == labels[scored])
        assert _number(r"held-out accuracy ([\d.]+)%", out) == pytest.approx(100 * accuracy,
                                                                             abs=0.006)
    else:
        rmse = np.sqrt(np.mean((model.predict(_named(X[scored], features)) - y[scored]) ** 2))
        assert _number(r"held-out RMSE ([\d.e+-]+) ", out) == pytest.approx(rmse, rel=1e-3)
    assert _number(r"on ([\d,]+) pixels of the other half", out) == np.sum(scored)


def test_no_search_fits_on_every_labelled_pixel(store, on_cluster, tmp_path, capsys):
    assert main(["fit", str(store), "-o", str(tmp_path / "m.zarr"), "--model", "reduced-svc",
                 "--no-search", "--param", "size=30", "--param", "omega=1.5",
                 *on_cluster]) == 0
    out = capsys.readouterr().out
    assert "fitted ReducedSVC (omega=1.5, C=1) on all labelled pixels" in out
    assert "no held-out score" in out and "accuracy" not in out
    X, labels, _, _ = _pixels(store, ["NDAI", "logSD", "CORR"])
    used = (labels != 0) & np.isfinite(X).all(axis=1)
    assert _number(r"([\d,]+) rows used", out) == used.sum()
    model = load_model(tmp_path / "m.zarr")
    assert model.get_params()["omega"] == 1.5 and model.get_params()["size"] == 30


@pytest.mark.parametrize(("args", "message"), [
    (["--model", "reduced-svr"], "reduced-svr is a regression"),
    (["--model", "reduced-svc", "--target", "NDAI"], "takes no target"),
    (["--model", "svc", "--target", "NDAI"], "takes no target"),
    (["--model", "nystrom-krr", "--target", "AN", "--features", "AN", "DF"],
     "also one of the features (AN DF)"),
    (["--model", "nystrom-krr", "--target", "NDAI"], "features (NDAI logSD CORR)"),
    (["--model", "reduced-svc", "--features", "NDAI", "NDAI"], "more than once"),
    (["--model", "reduced-svc", "--param", "sise=10"], "did you mean size"),
    (["--model", "nystrom-krr", "--param", "C=1"],
     "fit_intercept, fraction, kernel, lam, max_iter"),
    (["--model", "svc", "--param", "lam=1"], "of BinnedSVC"),
])
def test_usage_errors_exit_2(args, message, store, tmp_path, capsys):
    """Refused before the store is read or a cluster started."""
    assert main(["fit", str(store), "-o", str(tmp_path / "m.zarr"), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bigkern fit: error: ") and message in err
    assert not (tmp_path / "m.zarr").exists()


def test_unknown_parameter_names_the_valid_ones(store, tmp_path, capsys):
    assert main(["fit", str(store), "-o", str(tmp_path / "m.zarr"), "--model", "reduced-svr",
                 "--target", "NDAI", "--param", "gamma=0.5"]) == 2
    err = capsys.readouterr().err
    assert "unknown parameter 'gamma' of ReducedSVR" in err
    for name in ("omega", "C", "epsilon", "size", "fraction", "random_state"):
        assert name in err


def test_an_out_of_range_parameter_is_a_usage_error_before_reading(tmp_path, capsys):
    assert main(["fit", str(tmp_path / "absent.zarr"), "-o", str(tmp_path / "m.zarr"),
                 "--model", "reduced-svc", "--param", "omega=-1"]) == 2
    err = capsys.readouterr().err
    assert "omega" in err and "absent.zarr" not in err and "Traceback" not in err


@pytest.mark.parametrize(("args", "message"), [
    (["--model", "reduced-svr", "--target", "NOPE"], "NOPE"),
    (["--model", "reduced-svc", "--features", "NDAI", "XYZ"], "XYZ"),
])
def test_absent_variables_are_usage_errors(args, message, store, on_cluster, tmp_path, capsys):
    # checked on the store's metadata, before a cluster starts: exit 2, naming the flag
    assert main(["fit", str(store), "-o", str(tmp_path / "m.zarr"), *args, *on_cluster]) == 2
    err = capsys.readouterr().err
    assert "error" in err and message in err
    assert ("--target" if args[-2] == "--target" else "--features") in err
    assert "Traceback" not in err
