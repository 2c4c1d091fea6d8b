"""The kernel as a value: each kernel's function, its compiled loops, and the estimators that
take ``kernel=`` (fit in memory and on a cluster, predict, save and load)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import dask.array as da
import numpy as np
import pytest
from sklearn.gaussian_process.kernels import Matern
from sklearn.kernel_approximation import Nystroem
from sklearn.linear_model import RidgeClassifier
from sklearn.metrics.pairwise import laplacian_kernel, rbf_kernel

from bigkern import load_model, save_model
from bigkern.kernels import (
    KERNELS,
    Basis,
    Gaussian,
    Kernel,
    KernelExpansion,
    Laplacian,
    Matern32,
    Matern52,
    as_kernel,
    kernel_blocks,
)
from bigkern.models import (
    BinnedKernelRidgeClassifier,
    BinnedSVC,
    NystromKernelRidge,
    NystromKernelRidgeClassifier,
    ReducedSVC,
    ReducedSVR,
)

RNG = np.random.default_rng(7)
X = RNG.normal(size=(60, 3))
Z = RNG.normal(size=(9, 3))
NAMES = ("gaussian", "laplacian", "matern32", "matern52")


def _problem(n: int = 3000, d: int = 4, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(np.float32)
    y = np.where(X[:, 0] * X[:, 1] + 0.4 * X[:, 2] > 0, 1, -1)
    return X, y


@pytest.mark.parametrize(("kernel", "peer"), [
    (Gaussian(0.7), rbf_kernel(X, Z, gamma=1 / (2 * 0.7**2))),
    (Laplacian(1.5), laplacian_kernel(X, Z, gamma=1 / 1.5)),
    (Matern32(1.2), Matern(length_scale=1.2, nu=1.5)(X, Z)),
    (Matern52(0.9), Matern(length_scale=0.9, nu=2.5)(X, Z)),
])
def test_each_kernel_is_scikit_learns(kernel: Kernel, peer: np.ndarray) -> None:
    np.testing.assert_allclose(kernel(X, Z), peer, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", NAMES)
def test_blocks_and_expansions_agree_with_the_dense_kernel(name: str) -> None:
    offset, scale = np.array([0.1, -0.2, 0.0]), np.array([1.5, 0.8, 1.0])
    basis = Basis.checked(Z, 0.9, 3, offset, scale, kernel=name)
    dense = basis.kernel((X - offset) / scale, Z)
    got = np.empty_like(dense)
    for rows, G in kernel_blocks(X, basis, block_rows=7, dtype=np.float64):
        got[rows] = G
    np.testing.assert_allclose(got, dense, rtol=1e-10, atol=1e-12)
    coef = RNG.normal(size=len(Z))
    f = KernelExpansion.from_parts(Z, coef, 0.25, 0.9, offset, scale, kernel=name,
                                   dtype="float64")
    np.testing.assert_allclose(f.decision(X), dense @ coef + 0.25, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("name", NAMES[1:])
def test_a_rows_value_is_the_same_in_any_block(name: str) -> None:
    f = KernelExpansion.from_parts(Z, RNG.normal(size=len(Z)), 0.0, 1.1, kernel=name)
    Xn = X.copy()
    Xn[5, 1] = np.nan
    whole = f.decision(Xn)
    assert np.isnan(whole[5]) and np.isfinite(np.delete(whole, 5)).all()
    for a, b in ((0, 1), (3, 40), (17, 60)):
        assert np.array_equal(f.decision(Xn[a:b]), whole[a:b], equal_nan=True)


def test_as_kernel_takes_a_name_a_class_or_a_value_and_the_width_is_omega() -> None:
    assert as_kernel("matern52", 2.0) == Matern52(2.0)
    assert as_kernel(Laplacian, 0.5) == Laplacian(0.5)
    assert as_kernel(Laplacian(9.0), 0.5) == Laplacian(0.5)
    with pytest.raises(ValueError, match="kernel must be one of 'gaussian'"):
        as_kernel("rbf", 1.0)
    with pytest.raises(ValueError, match="positive finite"):
        Laplacian(-1.0)


@dataclass(frozen=True)
class Cauchy(Kernel):
    """A kernel of one's own: ``1 / (1 + (r/ω)²)``, with no compiled loop."""

    name: ClassVar[str] = "cauchy"

    def radial(self, r: Any) -> np.ndarray:
        return 1.0 / (1.0 + (np.asarray(r, dtype=np.float64) / self.omega) ** 2)


def test_a_kernel_of_ones_own_fits_predicts_and_is_refused_by_save(tmp_path) -> None:
    X, y = _problem(1500)
    model = NystromKernelRidgeClassifier(omega=1.5, kernel=Cauchy, size=60,
                                         random_state=0).fit(X[:1000], y[:1000])
    assert model.expansion_.kernel == Cauchy(1.5)
    assert (model.predict(X[1000:]) == y[1000:]).mean() > 0.85
    with pytest.raises(ValueError, match="KERNELS does not know this one"):
        save_model(model, tmp_path / "m.zarr")
    assert not (tmp_path / "m.zarr").exists()
    assert "cauchy" not in KERNELS


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("cls", [ReducedSVC, NystromKernelRidgeClassifier, BinnedSVC,
                                 BinnedKernelRidgeClassifier])
def test_every_classifier_takes_each_kernel_and_saves_it(cls: type, name: str, tmp_path) -> None:
    X, y = _problem()
    extra = {} if cls.__name__.startswith("Binned") else {"size": 80, "random_state": 0}
    model = cls(omega=1.5, kernel=name, **extra).fit(X[:2000], y[:2000])
    assert type(model.expansion_.kernel) is KERNELS[name]
    assert (model.predict(X[2000:]) == y[2000:]).mean() > 0.85
    save_model(model, tmp_path / "m.nc")
    again = load_model(tmp_path / "m.nc")
    assert again.get_params()["kernel"] == name
    assert again.expansion_.kernel == model.expansion_.kernel
    assert np.array_equal(again.decision_function(X[2000:]), model.decision_function(X[2000:]))


@pytest.mark.parametrize("cls", [ReducedSVR, NystromKernelRidge])
def test_regressors_take_a_kernel_value_and_save_its_name(cls: type, tmp_path) -> None:
    rng = np.random.default_rng(3)
    X = rng.uniform(-2, 2, size=(1500, 2))
    y = np.sin(2 * X[:, 0]) + 0.5 * np.abs(X[:, 1]) + 0.05 * rng.normal(size=1500)
    model = cls(omega=1.0, kernel=Matern32(5.0), size=80, random_state=0).fit(X, y)
    assert model.expansion_.kernel == Matern32(1.0)  # the width is omega
    assert model.score(X, y) > 0.9
    save_model(model, tmp_path / "m.zarr")
    again = load_model(tmp_path / "m.zarr")
    assert again.get_params()["kernel"] == "matern32"
    np.testing.assert_array_equal(again.predict(X[:50]), model.predict(X[:50]))


def test_a_laplacian_reduced_svc_on_a_cluster_is_the_in_memory_one(client) -> None:
    """A new kernel at scale is one argument: the same model from a dask array on the
    cluster's workers as from the rows in memory."""
    X, y = _problem(4000)
    params = {"omega": 2.0, "kernel": "laplacian", "size": 60, "random_state": 1, "C": 10.0}
    here = ReducedSVC(**params).fit(X, y)
    there = ReducedSVC(**params).fit(da.from_array(X, chunks=700), da.from_array(y, chunks=700))
    np.testing.assert_allclose(there.expansion_.coef, here.expansion_.coef, rtol=1e-6,
                               atol=1e-8)
    decision = there.decision_function(da.from_array(X[:1000], chunks=300)).compute()
    np.testing.assert_array_equal(decision, there.decision_function(X[:1000]))


def test_nystrom_laplacian_is_scikit_learns_nystroem_and_ridge() -> None:
    """At equal centres the Laplacian Nyström classifier scores as scikit-learn's Nystroem
    (kernel="laplacian") + RidgeClassifier on the same rows (within 0.5 points)."""
    X, y = _problem(6000, d=5, seed=4)
    Xtr, ytr, Xte, yte = X[:4000], y[:4000], X[4000:], y[4000:]
    omega, m, lam = 3.0, 300, 1e-2
    ours = NystromKernelRidgeClassifier(omega=omega, kernel="laplacian", lam=lam, size=m,
                                        standardize=False, penalty="rkhs",
                                        random_state=0).fit(Xtr, ytr)
    features = Nystroem(kernel="laplacian", gamma=1 / omega, n_components=m, random_state=0)
    peer = RidgeClassifier(alpha=lam).fit(features.fit_transform(Xtr), ytr)
    acc_ours = (ours.predict(Xte) == yte).mean()
    acc_peer = (peer.predict(features.transform(Xte)) == yte).mean()
    assert abs(acc_ours - acc_peer) <= 0.005 + 1e-12, (acc_ours, acc_peer)


def test_scenes_predicted_by_a_laplacian_model_are_its_rows_predictions(client) -> None:
    """Masks of every pixel through predict_scenes, from a model fitted on the stacked
    pixels with ``kernel="laplacian"``, equal the model's own row by row; NaN pixels get
    no class."""
    from bigkern import predict_scenes, stack_samples, with_features
    from bigkern.datasets import make_scenes

    features = ["NDAI", "logSD", "CORR"]
    ds = with_features(make_scenes(2, (48, 64), seed=3, radiances=False).compute(), features)
    ds["NDAI"][0, :2, :3] = np.nan
    s = stack_samples(ds, features)
    X, y, mask = (np.asarray(v) for v in (s.X, s.y, s.mask))
    model = ReducedSVC(omega=2.0, C=10.0, kernel="laplacian", size=40,
                       random_state=0).fit(X[mask], y[mask])
    out = predict_scenes(model, ds, features).compute()
    rows = np.column_stack([ds[f].values.ravel() for f in features])
    expected = model.decision_function(rows).reshape(ds["NDAI"].shape)
    np.testing.assert_array_equal(out["decision"].values, expected.astype(out["decision"].dtype))
    assert np.isnan(out["decision"].values[0, :2, :3]).all()
