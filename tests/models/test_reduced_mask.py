"""``mask=`` on the reduced-kernel fits: the labelled pixels of a scene, lazily.

A masked-out row must be exactly as if it were absent (no data): the same
reduced set (the draw hashes global row numbers) and the same passes, so the
same model, whatever its label holds (0 for unlabelled pixels, NaN for a target).
"""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest

from bigkern.datasets import make_scenes
from bigkern.models import (
    NystromKernelRidge,
    NystromKernelRidgeClassifier,
    ReducedSVC,
    ReducedSVR,
)
from bigkern.scenes.samples import stack_samples


@pytest.fixture(scope="module")
def labelled() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """X (n, 3), labels in {-1, 0, 1} (0: unlabelled), and the mask label != 0."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(1500, 3))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] ** 2 > 0.3, 1, -1)
    y[rng.random(len(y)) < 0.3] = 0
    return X, y, y != 0


def _absent_instead(X: np.ndarray, mask: np.ndarray) -> np.ndarray:
    out = X.copy()
    out[~mask] = np.nan
    return out


CLASSIFIERS = [
    lambda: ReducedSVC(omega=1.0, C=10.0, size=60, random_state=0),
    lambda: NystromKernelRidgeClassifier(omega=1.0, lam=0.1, size=60, random_state=0),
]


@pytest.mark.parametrize("make", CLASSIFIERS, ids=["ReducedSVC", "NystromClassifier"])
def test_masked_rows_are_as_if_absent(make, labelled) -> None:
    X, y, mask = labelled
    masked = make().fit(X, y, mask=mask)
    plain_y = np.where(mask, y, -1)  # any label: the rows are absent anyway
    absent = make().fit(_absent_instead(X, mask), plain_y)
    np.testing.assert_array_equal(masked.reduced_index_, absent.reduced_index_)
    np.testing.assert_allclose(masked.decision_function(X), absent.decision_function(X),
                               rtol=1e-12, atol=1e-12)
    assert masked.fit_report_["n_masked"] == int((~mask).sum())
    assert masked.fit_report_["n_valid"] == int(mask.sum())
    assert "n_masked" not in absent.fit_report_
    np.testing.assert_array_equal(masked.classes_, [-1, 1])


@pytest.mark.parametrize(("make", "tol"), [(CLASSIFIERS[0], 1e-9), (CLASSIFIERS[1], 1e-4)],
                         ids=["ReducedSVC", "NystromClassifier"])
def test_lazy_labels_and_mask_give_the_numpy_model(make, tol, labelled) -> None:
    """Other chunks: sums in another order (Nyström's system amplifies that round-off)."""
    X, y, mask = labelled
    eager = make().fit(X, y, mask=mask)
    lazy = make().fit(da.from_array(X, chunks=(400, 3)), da.from_array(y, chunks=400),
                      mask=da.from_array(mask, chunks=300))
    np.testing.assert_array_equal(lazy.classes_, eager.classes_)
    np.testing.assert_array_equal(lazy.reduced_index_, eager.reduced_index_)
    np.testing.assert_allclose(lazy.decision_function(X), eager.decision_function(X),
                               rtol=tol, atol=tol)


def test_unmasked_unlabelled_pixels_are_a_third_class(labelled) -> None:
    X, y, _ = labelled
    # ReducedSVC takes k classes: without the mask, 0 is fitted as a class of its own
    lazy = ReducedSVC(size=60, random_state=0).fit(da.from_array(X, chunks=500),
                                                   da.from_array(y, chunks=500))
    eager = ReducedSVC(size=60, random_state=0).fit(X, y)
    for model in (lazy, eager):
        np.testing.assert_array_equal(model.classes_, [-1, 0, 1])
        assert model.decision_function(X[:5]).shape == (5, 3)


@pytest.mark.parametrize("make", [
    lambda: ReducedSVR(omega=1.0, C=10.0, size=60, random_state=0),
    lambda: NystromKernelRidge(omega=1.0, lam=0.1, size=60, random_state=0),
], ids=["ReducedSVR", "NystromKernelRidge"])
def test_regressors_never_look_at_masked_targets(make, labelled) -> None:
    X, _, mask = labelled
    target = np.sin(X[:, 0]) + 0.1 * X[:, 2]
    holed = np.where(mask, target, np.nan)  # NaN where masked: not a non-finite y
    masked = make().fit(X, holed, mask=mask)
    absent = make().fit(_absent_instead(X, mask), target)
    assert masked.fit_report_["n_nonfinite_y"] == 0
    assert masked.fit_report_["n_masked"] == int((~mask).sum())
    np.testing.assert_allclose(masked.predict(X), absent.predict(X), rtol=1e-10, atol=1e-12)


def test_bad_masks_are_named(labelled) -> None:
    X, y, mask = labelled
    with pytest.raises(ValueError, match="one entry per row"):
        ReducedSVC(size=60).fit(X, y, mask=mask[:-1])
    with pytest.raises(ValueError, match="keeps none"):
        ReducedSVC(size=60).fit(X, y, mask=np.zeros(len(y), dtype=bool))
    with pytest.raises(ValueError, match="one entry per row"):
        ReducedSVR(size=60).fit(X, X[:, 0], mask=da.from_array(mask[:-1]))


def test_scene_samples_fit_lazily_on_the_labelled_pixels() -> None:
    """``stack_samples`` → ``ReducedSVC.fit(X, y, mask=)``: labels 0 stay out, nothing loaded."""
    ds = make_scenes(2, (64, 96), seed=1)
    features = ["NDAI", "SD", "CORR", "DF", "AN"]
    samples = stack_samples(ds.chunk({"scene": 1}), features, labelled_only=True)
    assert isinstance(samples.X, da.Array) and isinstance(samples.mask, da.Array)
    model = ReducedSVC(omega=1.0, C=10.0, size=80, random_state=0).fit(
        samples.X, samples.y, mask=samples.mask)
    labels = ds["label"].values.ravel()
    report = model.fit_report_
    assert report["n_masked"] == int((labels == 0).sum())
    assert report["n_valid"] + report["n_absent"] + report["n_nonfinite"] == int(
        (labels != 0).sum())
    X = samples.X.compute()
    keep = (labels != 0) & np.isfinite(X).all(axis=1)
    accuracy = float(np.mean(model.predict(X[keep]) == labels[keep]))
    assert accuracy > 0.8, accuracy
