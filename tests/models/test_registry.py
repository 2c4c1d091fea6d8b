"""One model registry: the table agrees with the package, and one row adds a model."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import bigkern
import bigkern.models
from bigkern.cli.main import main
from bigkern.datasets import make_scenes
from bigkern.models import NystromKernelRidgeClassifier, load_model, registry, save_model
from bigkern.models.registry import ModelSpec
from bigkern.scenes import write_scenes


class ToyNystromClassifier(NystromKernelRidgeClassifier):
    """A model of another package: a class of its own, reusing a reduced-kernel fit."""


def _public_estimators() -> set[str]:
    return {name for name in bigkern.models.__all__
            if inspect.isclass(obj := getattr(bigkern.models, name))
            and hasattr(obj, "fit") and hasattr(obj, "get_params")}


def test_the_table_names_every_public_estimator_once():
    names = [spec.name for spec in registry.specs()]
    assert len(names) == len(set(names))
    assert set(names) == _public_estimators()
    assert set(names) <= set(bigkern.__all__)


def test_rows_agree_with_their_classes():
    from sklearn.base import is_classifier, is_regressor

    for spec in registry.specs():
        est = spec.cls(**spec.check_params)
        assert spec.target == ("class" if is_classifier(est) else
                               "value" if is_regressor(est) else "none"), spec.name
        for name, values in (spec.grid or {}).items():
            assert name in est.get_params(), (spec.name, name)
            assert list(values) == sorted(values) and len(values) >= 3, (spec.name, name)


def test_cli_names_and_classes():
    assert registry.cli_names() == ("svc", "ridge", "reduced-svc", "reduced-svr",
                                    "nystrom-krr")
    assert registry.model_class("nystrom-krr").__name__ == "NystromKernelRidgeClassifier"
    assert registry.model_class("nystrom-krr", "CORR").__name__ == "NystromKernelRidge"
    with pytest.raises(ValueError, match=r"svc is a classifier.*use reduced-svr or nystrom-krr"):
        registry.model_class("svc", "CORR")
    with pytest.raises(ValueError, match="reduced-svr is a regression"):
        registry.model_class("reduced-svr")
    with pytest.raises(ValueError, match="model must be one of"):
        registry.model_class("svm")
    assert registry.default_grid("svc")["C"] == [0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0]
    assert registry.default_grid("reduced-svr", target="CORR") == {}


@pytest.mark.parametrize("cli", ["svc", "ridge", "reduced-svc", "nystrom-krr"])
def test_default_widths_scale_with_the_square_root_of_the_number_of_features(cli):
    """A squared distance between standardized rows grows as d: the grid's widths are
    multiples of √(d/2), the rest of the grid does not move."""
    units = registry.default_grid(cli)
    for d in (1, 3, 8, 33, 116):
        grid = registry.default_grid(cli, d)
        assert grid.keys() == units.keys()
        np.testing.assert_allclose(grid["omega"], np.multiply(units["omega"], (d / 2) ** 0.5),
                                   rtol=1e-2)  # both rounded to 3 digits
        assert all(grid[k] == units[k] for k in grid if k != "omega")
    assert min(units["omega"]) < 0.65 < max(units["omega"])  # MISR's width (0.8 on 3 features)
    with pytest.raises(ValueError, match="at least 1"):
        registry.default_grid(cli, 0)


def test_a_row_is_registered_once(monkeypatch):
    monkeypatch.setattr(registry, "_TABLE", list(registry.specs()))
    with pytest.raises(ValueError, match="registered already"):
        registry.register(ModelSpec(bigkern.models.BinnedSVC, "class", "bins", "expansion"))
    with pytest.raises(ValueError, match="--model svc for target kind 'class' is taken"):
        registry.register(ModelSpec(ToyNystromClassifier, "class", "reduced", "expansion",
                                    cli="svc"))


@pytest.fixture
def toy_registered(monkeypatch):
    monkeypatch.setattr(registry, "_TABLE", list(registry.specs()))
    return registry.register(ModelSpec(ToyNystromClassifier, "class", "reduced", "expansion",
                                       cli="toy-krr", check_params={"random_state": 0}))


def test_one_row_makes_a_model_checked_saved_and_fitted_by_the_cli(toy_registered, client,
                                                                    tmp_path, capsys):
    # the conformance list
    assert any(type(e) is ToyNystromClassifier for e in registry.check_instances())
    # save and load
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=120) > 0, 1, -1)
    fitted = ToyNystromClassifier(size=20, random_state=0).fit(X, y)
    back = load_model(save_model(fitted, tmp_path / "toy.zarr"))
    assert type(back) is ToyNystromClassifier
    np.testing.assert_array_equal(back.predict(X), fitted.predict(X))
    # the command line: a --model choice, fitted by the engine its row names
    store = tmp_path / "scenes.zarr"
    write_scenes(make_scenes(2, (24, 32), seed=1), store, chunks={"scene": 1, "y": 24, "x": 32})
    out = tmp_path / "m.zarr"
    assert main(["fit", str(store), "-o", str(out), "--model", "toy-krr", "--no-search",
                 "--scheduler", client.scheduler.address]) == 0
    assert "fitted ToyNystromClassifier" in capsys.readouterr().out
    assert type(load_model(out)) is ToyNystromClassifier


def test_without_its_row_a_model_is_not_a_choice(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["fit", str(tmp_path / "s.zarr"), "-o", str(tmp_path / "m.zarr"), "--model",
              "toy-krr"])
    assert stop.value.code == 2
    assert "invalid choice: 'toy-krr'" in capsys.readouterr().err
