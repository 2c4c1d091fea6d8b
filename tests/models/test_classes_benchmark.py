"""The helpers of benchmarks/classes.py (issue 42's k-class and probability benchmark).

The benchmark runs on whatever the checkout supports, so its helpers are checked
here against real bigkern and scikit-learn objects: the calibration error, the
"not available in this build" detection (a real two-class-only model), the grid
order, the missing-data exit, and one ``--small`` run on the shared page-blocks set
(skipped when ``../shared/data`` is absent).
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest


@pytest.fixture(scope="module")
def bench(benchmark_script):
    return benchmark_script("classes")


def test_calibration_error_by_hand(bench):
    proba = np.array([[0.9, 0.1], [0.2, 0.8], [0.3, 0.7], [0.6, 0.4]])
    y = np.array(["clear", "cloud", "cloud", "cloud"])
    # bins of 1/15: 0.9 (right), 0.8 (right), 0.7 (right), 0.6 (wrong) each alone
    assert bench.expected_calibration_error(y, proba) == pytest.approx(
        (0.1 + 0.2 + 0.3 + 0.6) / 4)
    # four rows at confidence 0.75, three right: calibrated, error 0
    calibrated = np.tile([0.75, 0.25, 0.0], (4, 1))
    assert bench.expected_calibration_error(np.array([0, 0, 0, 1]), calibrated,
                                            classes=np.array([0, 1, 2])) == pytest.approx(0)
    # confidence 1.0 falls in the last bin (14/15, 1]: right, no error; 0.5 right: 0.5
    edge = np.array([[1.0, 0.0], [0.5, 0.5]])
    assert bench.expected_calibration_error(np.array([0, 0]), edge,
                                            classes=np.array([0, 1])) == pytest.approx(0.25)
    with pytest.raises(ValueError, match="proba must be"):
        bench.expected_calibration_error(np.array([0, 1, 2]), proba[:3])


def test_calibration_error_matches_bigkern_when_the_build_has_it(bench):
    function, source = bench.calibration_error_function()
    try:
        theirs = importlib.import_module("bigkern.models.calibration").expected_calibration_error
    except (ImportError, AttributeError):
        assert function is bench.expected_calibration_error and "script" in source
        pytest.skip("this build has no bigkern.models.calibration.expected_calibration_error")
    assert function is theirs
    rng = np.random.default_rng(0)
    proba = rng.dirichlet(np.full(5, 0.4), size=2000)
    y = np.array([rng.choice(5, p=p) for p in proba])
    assert bench.expected_calibration_error(y, proba, classes=np.arange(5)) == pytest.approx(
        theirs(y, proba, classes=np.arange(5), n_bins=15), abs=1e-12)


def test_probability_sums_and_summaries(bench):
    proba = np.array([[0.5, 0.5], [0.2, 0.7]])
    assert bench.max_sum_error(proba) == pytest.approx(0.1)
    assert bench.mean_sd([1.0]) == (1.0, 0.0)
    assert bench.mean_sd([1.0, 3.0]) == pytest.approx((2.0, np.sqrt(2.0)))
    assert bench.ratio(3.0, 2.0) == "1.50x" and bench.ratio(1.0, 0.0) == "-"
    assert bench.most_chosen([{"omega": 2.0, "C": 10.0}] * 2 + [{"omega": 4.0, "C": 1.0}]) \
        == "ω 2, C 10 (2/3)"


def test_grid_puts_the_most_regularizing_point_first(bench):
    svm = bench.grid_points("C", [100.0, 1.0, 10.0], [1.0, 4.0])
    assert svm[0] == {"omega": 4.0, "C": 1.0} and svm[-1] == {"omega": 1.0, "C": 100.0}
    ridge = bench.grid_points("lam", [1e-4, 1e-2], [2.0])
    assert [p["lam"] for p in ridge] == [1e-2, 1e-4]


def test_cost_targets_are_the_same_rows(bench):
    y = np.repeat(np.arange(10), 3)
    targets = bench.cost_targets(y)
    multi, halves, first = targets.values()
    assert multi is y and list(targets)[1] == "binary: 0-4 vs rest"
    assert np.array_equal(halves, np.where(y < 5, 1, -1))
    assert np.array_equal(first, np.where(y == 0, 1, -1))


def test_a_two_class_only_model_is_not_available_not_a_failure(bench):
    from bigkern import ReducedSVC

    class TwoClassOnly(ReducedSVC):
        _binary_only = True

    rng = np.random.default_rng(1)
    X = rng.normal(size=(90, 2))
    y = np.repeat([0, 1, 2], 30)
    with pytest.raises(bench.NotAvailable, match="two classes only"):
        bench.fit_timed(TwoClassOnly(size=10, random_state=0), X, y)
    assert bench.fit_timed(TwoClassOnly(size=10, random_state=0), X, y % 2) > 0
    with pytest.raises(ValueError, match="omega"):  # a real error is not hidden
        bench.fit_timed(ReducedSVC(omega=-1.0, size=10), X, y % 2)


def test_a_missing_calibration_parameter_is_not_available(bench):
    from bigkern import ReducedSVC

    args = bench.parse(["--small"])
    specs = {s.name: s for s in bench.model_specs(args)}
    point = {"omega": 2.0, "C": 10.0}
    if bench.supports(ReducedSVC, "calibration"):
        model = specs["ReducedSVC"].build(point, 0, "sigmoid")
        assert model.get_params()["calibration"] == "sigmoid"
    else:
        with pytest.raises(bench.NotAvailable, match="calibration"):
            specs["ReducedSVC"].build(point, 0, "sigmoid")
    svc = specs["SVC (one-vs-one)"].build(point, 0, "platt")
    assert svc[-1].probability and svc[-1].gamma == pytest.approx(1 / 8)


def test_absent_data_exit_with_a_message(bench, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        bench.main(["--small", "--data", str(tmp_path)])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "pendigits.csv" in err and "page-blocks.csv" in err and "Traceback" not in err


@pytest.mark.realdata
def test_small_run_on_page_blocks(bench, tmp_path, capsys):
    from bigkern.datasets import shared_data_dir

    root = shared_data_dir()
    if bench.missing_files(root, ["page-blocks"]):
        pytest.skip("../shared/data/classification/page-blocks.csv is absent")
    out = tmp_path / "classes.txt"
    bench.main(["--small", "--sets", "page-blocks", "--parts", "accuracy", "probabilities",
                "--out", str(out)])
    text = out.read_text()
    assert "### page-blocks: accuracy, 3 outer folds" in text
    assert "### page-blocks: probabilities" in text and "## Acceptance" in text
    svc = next(ln for ln in text.splitlines() if ln.startswith("| SVC (one-vs-one) "))
    accuracy = float(svc.split("|")[2].split("±")[0])
    assert 85 < accuracy <= 100  # page-blocks: 90 % of the rows are class 1
    for model in ("ReducedSVC", "NystromKRClassifier"):
        row = next(ln for ln in text.splitlines() if ln.startswith(f"| {model} "))
        assert "not available in this build" in row or "±" in row


def test_warnings_of_one_kind_are_counted_on_one_line(bench, capsys):
    import warnings

    from bigkern.errors import BigkernWarning

    log = bench.Warnings()
    with log.recording("ReducedSVC"):
        warnings.warn("5 feature(s) reach beyond ±20 robust σ: f0 (-2.2 … 48.7)", BigkernWarning,
                      stacklevel=1)
        warnings.warn("6 feature(s) reach beyond ±20 robust σ: f2 (-0.3 … 1e+03)", BigkernWarning,
                      stacklevel=1)
    log.report("pendigits")
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines == ["warnings during the fits (pendigits):",
                     "  2 x ReducedSVC: BigkernWarning: # feature(s) reach beyond ±# robust σ: "
                     "f# (# … #) ..."]
    assert not log.counts  # reported once
