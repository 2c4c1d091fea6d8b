"""Saving and loading the compactly supported kernel models (zarr and netCDF)."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest
import xarray as xr
from sklearn.base import clone

from bigkern import CompactKernelPCA, CompactKernelRidge, CompactLSSVC, CompactSVC
from bigkern.datasets import GreenRed
from bigkern.models import load_model, save_model

X, Y = GreenRed().sample(400, seed=2)
LABELS = np.where(Y > 0, "cloud", "clear")

CASES = [
    (CompactLSSVC(omega=0.4, lam=1e-3, tau=0.7), LABELS),
    (CompactKernelRidge(omega=0.4, lam=1e-3, radius=1.2, taper_power=3), X[:, 0] ** 2 - X[:, 1]),
    (CompactSVC(omega=0.4, C=1.25, tau=0.6), Y),
    (CompactKernelPCA(3, omega=0.4, radius=1.5), None),
]


def _output(model, Z):
    return model.transform(Z) if isinstance(model, CompactKernelPCA) else model.predict(Z)


@pytest.mark.determinism
@pytest.mark.parametrize("suffix", ["zarr", "nc"])
@pytest.mark.parametrize(("est", "target"), CASES, ids=lambda c: type(c).__name__)
def test_round_trip_predicts_the_same(tmp_path, est, target, suffix):
    model = clone(est).fit(X, target) if target is not None else clone(est).fit(X)
    back = load_model(save_model(model, tmp_path / f"model.{suffix}"))
    assert type(back) is type(model) and back.get_params() == model.get_params()
    Z, _ = GreenRed().sample(60, seed=5)
    np.testing.assert_array_equal(_output(back, Z), _output(model, Z))
    np.testing.assert_array_equal(_output(back, da.from_array(Z, chunks=25)).compute(),
                                  _output(model, Z))
    assert back.support_radius_ == model.support_radius_
    assert back.kernel_ == model.kernel_
    if hasattr(model, "classes_"):
        np.testing.assert_array_equal(back.classes_, model.classes_)
    if isinstance(model, CompactSVC):
        np.testing.assert_array_equal(back.support_, model.support_)


def test_feature_names_survive(tmp_path):
    Xa = xr.DataArray(X, dims=("sample", "feature"), coords={"feature": ["NDAI", "SD"]})
    model = CompactLSSVC(omega=0.4, radius=1.0, taper_power=2).fit(Xa, Y)
    back = load_model(save_model(model, tmp_path / "m.zarr"))
    assert list(back.feature_names_in_) == ["NDAI", "SD"]
    with pytest.raises(ValueError, match="feature"):
        back.predict(Xa.assign_coords(feature=["SD", "CORR"]))


def test_a_compact_model_of_another_radial_kernel_saves_and_loads_it(tmp_path):
    from bigkern.kernels import Matern32

    model = CompactLSSVC(omega=0.4, lam=1e-3, kernel="matern32", radius=1.2).fit(X, LABELS)
    assert isinstance(model.kernel_.kernel, Matern32)
    gaussian = CompactLSSVC(omega=0.4, lam=1e-3, radius=1.2).fit(X, LABELS)
    assert not np.array_equal(model.decision_function(X), gaussian.decision_function(X))
    again = load_model(save_model(model, tmp_path / "m.zarr"))
    assert isinstance(again.kernel_.kernel, Matern32) and again.kernel == "matern32"
    np.testing.assert_array_equal(again.decision_function(X), model.decision_function(X))


def test_a_kernel_of_another_distance_is_refused_by_a_compact_model():
    with pytest.raises(ValueError, match=r"laplacian.*manhattan distance.*Euclidean"):
        CompactSVC(omega=0.4, kernel="laplacian", radius=1.2).fit(X, Y)


def test_a_compact_file_of_the_first_format_is_refused_saying_to_refit(tmp_path):
    from bigkern.errors import StoreError
    from bigkern.models.persistence.compact_files import compact_from_dataset

    ds = CompactSVC(omega=0.4, radius=1.2).fit(X, Y).to_dataset()
    ds.attrs["bigkern_format"] = 1
    with pytest.raises(StoreError, match=r"model format 1.*refit"):
        compact_from_dataset(ds, CompactSVC)
