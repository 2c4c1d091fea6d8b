"""Binned classifiers of k classes: one-vs-rest on the same bins, no further read of the rows.

The k-class fit must equal k separate binary fits on the same bins (class j's rows
the positives), to 1e-9; two classes stay the binary model; a class with no row
is an error naming it; and on real data (page-blocks, 5 classes) the models come
near scikit-learn's SVC.
"""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest
import xarray as xr
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from bigkern.errors import LabelError
from bigkern.jobs.tuning import grid_search_bins
from bigkern.kernels import as_kernel, omega_to_gamma
from bigkern.models import BinnedKernelRidgeClassifier, BinnedSVC, load_model, save_model
from bigkern.models.binned import bin_class_counts
from bigkern.models.binned_svc import _one_vs_rest_points
from bigkern.reduce import percentile_bins

QUARTILES = (0.25, 0.5, 0.75)
NAMES = np.array(["clear", "haze", "cloud", "snow"])


def _data(n=8000, seed=0):
    """Three features; four classes by a noisy score of two of them (uneven shares)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 3)).astype(np.float32)
    score = x[:, 0] + 0.6 * x[:, 1] ** 2 + 0.4 * rng.standard_normal(n)
    return x, NAMES[np.digitize(score, [-0.7, 0.3, 1.4])]


@pytest.fixture(scope="module")
def bins():
    x, y = _data()
    return percentile_bins(da.from_array(x, chunks=(1500, 3)), da.from_array(y, chunks=1500),
                           quantiles=QUARTILES)


def _standardized(bins):
    return (bins["center"].values - bins["offset"].values) / bins["scale"].values


def _binary_bins(bins, j, *, majority_of_all=False):
    """The bins as two classes: class j's rows positive, the others negative."""
    counts = bin_class_counts(bins)
    n = counts.sum(axis=1)
    pos = counts[:, j]
    if majority_of_all:  # the bin's most frequent class (ties to the later) is class j
        k = counts.shape[1]
        majority = np.where(k - 1 - np.argmax(counts[:, ::-1], axis=1) == j, 1, 0)
    else:
        majority = np.where(2 * pos >= n, 1, 0)
    out = bins.drop_vars(["class_count", "majority_label", "class"])
    out["positive"] = ("bin", pos)
    out["fuzzy_label"] = ("bin", pos / n)
    out["majority_label"] = ("bin", majority)
    out["label_sum"] = ("bin", 2 * pos - n)
    out.attrs["classes"] = [0, 1]
    return out


def _decision64(expansion, X):
    """The expansion's decision values in float64, with the model's own kernel."""
    Z = (np.asarray(X, dtype=np.float64) - expansion.offset) / expansion.scale
    return expansion.kernel(Z, expansion.centers) @ expansion.coef + expansion.intercept


@pytest.mark.parametrize("bin_target", ["fuzzy", "majority"])
def test_ridge_of_k_classes_is_k_binary_ridges_on_the_same_bins(bins, bin_target):
    model = BinnedKernelRidgeClassifier(omega=0.7, lam=0.05, bin_target=bin_target)
    model.fit_bins(bins)
    k = len(NAMES)
    assert model.classes_.tolist() == sorted(NAMES.tolist())
    assert model.expansion_.coef.shape == (bins.sizes["bin"], k)
    np.testing.assert_array_equal(model.expansion_.intercept, np.full(k, -0.5))
    for j in range(k):
        binary = BinnedKernelRidgeClassifier(omega=0.7, lam=0.05, bin_target=bin_target)
        binary.fit_bins(_binary_bins(bins, j, majority_of_all=bin_target == "majority"))
        np.testing.assert_allclose(model.expansion_.coef[:, j], binary.expansion_.coef,
                                   rtol=0, atol=1e-9)
        np.testing.assert_array_equal(model.expansion_.centers, binary.expansion_.centers)


@pytest.mark.parametrize("kernel", ["gaussian", "laplacian"])
@pytest.mark.parametrize("weighted", [True, False])
def test_svc_of_k_classes_is_k_weighted_svms_on_the_same_bins(bins, kernel, weighted):
    model = BinnedSVC(omega=0.8, C=3.0, kernel=kernel, weighted=weighted).fit_bins(bins)
    Z = _standardized(bins)
    counts = bin_class_counts(bins)
    n = counts.sum(axis=1)
    x, _ = _data(1500, seed=5)
    zx = (x.astype(np.float64) - bins["offset"].values) / bins["scale"].values
    got = _decision64(model.expansion_, x)
    assert got.shape == (len(x), counts.shape[1])
    for j in range(counts.shape[1]):
        # each bin twice: class j's rows at +1, the others at -1, weighted by their counts
        own, rest = counts[:, j], n - counts[:, j]
        plus, minus = np.flatnonzero(own), np.flatnonzero(rest)
        points = np.concatenate([Z[plus], Z[minus]])
        labels = np.r_[np.ones(len(plus)), -np.ones(len(minus))]
        mass = np.r_[own[plus], rest[minus]].astype(float)
        weights = mass / (n.mean() if weighted else np.r_[n[plus], n[minus]])
        if kernel == "gaussian":
            ref = SVC(C=3.0, gamma=omega_to_gamma(0.8)).fit(points, labels, sample_weight=weights)
            want = ref.decision_function(zx)
        else:
            gram = as_kernel(kernel, 0.8)
            ref = SVC(C=3.0, kernel="precomputed").fit(gram(points, points), labels,
                                                       sample_weight=weights)
            want = ref.decision_function(gram(zx, points))
        np.testing.assert_allclose(got[:, j], want, rtol=0, atol=1e-9)
        assert model.expansion_.intercept[j] == pytest.approx(ref.intercept_[0], abs=1e-12)


def test_one_vs_rest_points_split_each_bin_by_its_class_counts():
    counts = np.array([[3, 0, 1], [0, 2, 0], [1, 1, 2]])
    rows, labels, weights = _one_vs_rest_points(counts, 0, weighted=True)
    assert rows.tolist() == [0, 2, 0, 1, 2]
    assert labels.tolist() == [1, 1, -1, -1, -1]
    np.testing.assert_allclose(weights * counts.sum(axis=1).mean(), [3, 1, 1, 2, 3])
    _, _, shares = _one_vs_rest_points(counts, 0, weighted=False)
    np.testing.assert_allclose(shares, [3 / 4, 1 / 4, 1 / 4, 1, 3 / 4])


@pytest.mark.parametrize("model", [BinnedKernelRidgeClassifier(omega=0.8, lam=0.05),
                                   BinnedSVC(omega=0.8, C=3.0)], ids=["ridge", "svc"])
def test_fit_predicts_k_classes_from_one_vs_rest_columns(model):
    x, y = _data()
    model.fit(x, y)
    assert model.classes_.tolist() == ["clear", "cloud", "haze", "snow"]
    assert model.fit_report_["passes"] == 1  # in memory: one read of the rows
    dec = model.decision_function(x[:500])
    assert dec.shape == (500, 4)
    np.testing.assert_array_equal(model.predict(x[:500]), model.classes_[np.argmax(dec, axis=1)])
    lazy = model.decision_function(da.from_array(x[:500], chunks=(200, 3)))
    np.testing.assert_array_equal(lazy.compute(), dec)
    held_x, held_y = _data(4000, seed=3)
    assert model.score(held_x, held_y) > 0.72  # SVC on the rows: 0.764 (the classes overlap)
    # the binned fit equals fit_bins on the bins of the same rows
    again = type(model)(**model.get_params()).fit_bins(
        percentile_bins(x, y, quantiles=model.quantiles))
    np.testing.assert_array_equal(again.expansion_.coef, model.expansion_.coef)
    np.testing.assert_array_equal(again.classes_, model.classes_)


def test_lazy_labels_find_their_classes_and_fit_as_numpy_labels():
    x, y = _data()
    numeric = np.array([7, 3, 5, 1])[np.searchsorted(NAMES, y, sorter=np.argsort(NAMES))]
    eager = BinnedKernelRidgeClassifier(quantiles=QUARTILES).fit(x, numeric)
    lazy = BinnedKernelRidgeClassifier(quantiles=QUARTILES).fit(
        da.from_array(x, chunks=(1000, 3)), da.from_array(numeric, chunks=1000))
    assert lazy.classes_.tolist() == eager.classes_.tolist() == [1, 3, 5, 7]
    np.testing.assert_allclose(lazy.expansion_.coef, eager.expansion_.coef, rtol=0, atol=1e-12)


def test_k_classes_with_a_mask_and_unlabelled_rows():
    x, y = _data()
    labels = np.searchsorted(np.sort(NAMES), y) + 1  # 1..4
    labels[::9] = 0  # unlabelled
    model = BinnedSVC(omega=0.8, C=3.0, quantiles=QUARTILES).fit(x, labels, mask=labels != 0)
    assert model.classes_.tolist() == [1, 2, 3, 4]
    assert model.fit_report_["n_masked"] == int((labels == 0).sum())


def test_two_classes_stay_the_binary_model():
    x, y = _data()
    two = np.where(y == "cloud", "cloud", "clear")
    model = BinnedKernelRidgeClassifier(quantiles=QUARTILES).fit(x, two)
    assert model.expansion_.coef.ndim == 1 and model.decision_function(x[:10]).shape == (10,)
    assert model.expansion_.n_outputs == 1


def test_one_class_raises():
    x, _ = _data(2000)
    for model in (BinnedSVC(), BinnedKernelRidgeClassifier()):
        with pytest.raises(LabelError, match="one class only"):
            model.fit(x, np.full(2000, "haze"))
        with pytest.raises(LabelError, match="one class only"):
            model.fit(da.from_array(x, chunks=(500, 3)), da.from_array(np.full(2000, 4),
                                                                        chunks=500))


def test_a_class_absent_from_the_bins_raises_naming_it():
    x, y = _data(4000)
    given = ("clear", "cloud", "haze", "rain", "snow")  # no row is "rain"
    bins = percentile_bins(x, y, classes=given, quantiles=QUARTILES)
    for model in (BinnedSVC(), BinnedKernelRidgeClassifier()):
        with pytest.raises(LabelError, match="class 'rain' has no row in the bins"):
            model.fit_bins(bins)
    # a class whose every row has a non-finite feature never reaches the bins
    x = x.copy()
    x[y == "snow", 2] = np.nan
    with pytest.raises(LabelError, match="class 'snow' has no row in the bins"):
        BinnedKernelRidgeClassifier(quantiles=QUARTILES).fit(x, y)
    # two classes too
    two = percentile_bins(x, np.where(y == "clear", 1, 0), classes=(0, 1, 2),
                          quantiles=QUARTILES)
    with pytest.raises(LabelError, match="class 2 has no row"):
        BinnedSVC().fit_bins(two)


def test_labels_outside_the_given_classes_raise():
    x, y = _data(2000)
    with pytest.raises(LabelError, match=r"'snow' .* is not one of the classes"):
        percentile_bins(x, y, classes=("clear", "cloud", "haze"), quantiles=QUARTILES)


def test_given_class_order_is_sorted_for_the_model(bins):
    reordered = bins.isel({"class": [3, 1, 0, 2]})
    reordered.attrs = {**bins.attrs, "classes": reordered["class"].values.tolist()}
    a = BinnedKernelRidgeClassifier(omega=0.7, lam=0.05).fit_bins(bins)
    b = BinnedKernelRidgeClassifier(omega=0.7, lam=0.05).fit_bins(reordered)
    assert b.classes_.tolist() == a.classes_.tolist()
    np.testing.assert_array_equal(b.expansion_.coef, a.expansion_.coef)


def test_grid_search_on_k_class_bins_scores_accuracy(bins):
    x, y = _data(3000, seed=7)
    found = grid_search_bins(BinnedSVC(), bins, {"omega": [0.3, 1.0], "C": [0.3, 3.0]}, x, y)
    assert found.scores.dims == ("omega", "C") and found.n_scored == 3000
    best = BinnedSVC(**found.best_params).fit_bins(bins)
    assert found.best_score == pytest.approx(float(np.mean(best.predict(x) == y)), abs=1e-12)
    assert found.best_score == float(found.scores.max())


def test_a_k_class_model_round_trips_through_its_file(bins, tmp_path):
    model = BinnedSVC(omega=0.8, C=3.0).fit_bins(bins)
    save_model(model, tmp_path / "model.zarr")
    loaded = load_model(tmp_path / "model.zarr")
    x, _ = _data(300, seed=3)
    np.testing.assert_array_equal(loaded.predict(x), model.predict(x))
    np.testing.assert_array_equal(loaded.classes_, model.classes_)


def _shared_csv(name):
    from bigkern.datasets import shared_data_dir

    root = shared_data_dir()
    path = None if root is None else root / "classification" / f"{name}.csv"
    if path is None or not path.exists():
        pytest.skip(f"../shared/data/classification/{name}.csv is not present")
    import pandas as pd

    frame = pd.read_csv(path)
    return frame.drop(columns="class").to_numpy(np.float64), frame["class"].to_numpy()


def test_page_blocks_five_classes_near_scikit_learn_svc():
    """Page-blocks: 10 features, 5 classes (90 % in one). At the quartiles (1573 bins of
    4378 rows) both binned models beat the majority class clearly; reported, not asserted,
    how near they come to SVC on the rows."""
    X, y = _shared_csv("page-blocks")
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.2, stratify=y, random_state=0)
    scaler = StandardScaler().fit(Xtr)
    svc = SVC(C=10.0, gamma="scale").fit(scaler.transform(Xtr), ytr)
    reference = svc.score(scaler.transform(Xte), yte)
    majority = float(np.max(np.bincount(yte)) / len(yte))
    scores = {}
    for model in (BinnedSVC(omega=1.0, C=10.0, quantiles=QUARTILES),
                  BinnedKernelRidgeClassifier(omega=1.0, lam=0.01, quantiles=QUARTILES)):
        model.fit(Xtr, ytr)
        assert model.classes_.tolist() == [1, 2, 3, 4, 5]
        scores[type(model).__name__] = model.score(Xte, yte)
    print(f"page-blocks held-out accuracy: SVC {reference:.4f}, majority {majority:.4f}, "
          + ", ".join(f"{k} {v:.4f}" for k, v in scores.items()))
    assert min(scores.values()) > majority + 0.02  # the sanity floor


def test_k_class_bins_fit_the_same_on_a_cluster(client, bins):
    x, y = _data()
    on_cluster = percentile_bins(da.from_array(x, chunks=(1500, 3)),
                                 da.from_array(y, chunks=1500), quantiles=QUARTILES)
    for name in ("class_count", "center", "count"):
        xr.testing.assert_identical(on_cluster[name], bins[name])
    a = BinnedKernelRidgeClassifier().fit_bins(on_cluster)
    b = BinnedKernelRidgeClassifier().fit_bins(bins)
    np.testing.assert_array_equal(a.expansion_.coef, b.expansion_.coef)
