"""The Shi & Yu Tables 1-2 benchmark (benchmarks/misr_tables.py) on one real MISR scene.

Runs the ``--quick`` computation (R = 5, small grids) and checks the robust part of
the paper's pattern; skips when ../shared/data/misr is absent.
"""

from __future__ import annotations

import json

import pytest


@pytest.fixture(scope="module")
def quick_scene1(misr_dir, benchmark_script):
    return benchmark_script("misr_tables").run_scene(misr_dir / "image1.txt", quick=True)


@pytest.mark.realdata
def test_quick_tables_pattern(quick_scene1):
    res = quick_scene1
    rows = res["rows"]
    c = res["counts"]
    assert c["used"] == c["train"] + c["held_out"] == 23_803  # 18,175 clear + 5,628 cloud
    assert res["bins_check"]["ok"], res["bins_check"]["summary"]
    assert res["n_bins"] == rows["gkr_bins_fuzzy"]["n_basis"] <= 1000
    assert rows["gkr_subsample"]["n_basis"] == res["n_bins"]  # subsample of size m
    for row in rows.values():
        assert 50 < row["accuracy"] <= 100

    # (a) fuzzy-label bins do not lose to random subsamples of the same size (GKR-L2).
    assert (rows["gkr_bins_fuzzy"]["accuracy"]
            >= rows["gkr_subsample"]["accuracy"] - 1.0), res["checks"]
    # (b) the SVM on ~1000 bins is close to the SVM on the whole training half.
    assert abs(rows["svm_bins"]["accuracy"]
               - rows["svm_full_half"]["accuracy"]) <= 2.5, res["checks"]
    # (c) and fits faster (binning included).
    assert rows["svm_bins"]["seconds_fit"] < rows["svm_full_half"]["seconds_fit"]
    # Bagging 5 subsample fits does not hurt.
    assert rows["svm_bagged"]["accuracy"] >= rows["svm_subsample"]["accuracy"] - 0.5


@pytest.mark.realdata
def test_quick_tables_json_and_format(quick_scene1, benchmark_script):
    mt = benchmark_script("misr_tables")
    text = mt.format_scene(quick_scene1)
    assert "Table 1 (L2 loss)" in text and "Table 2 (hinge loss)" in text
    assert "79.22" in text and "86.46" in text  # the paper's figures next to ours
    back = json.loads(json.dumps(quick_scene1))
    assert set(back["checks"]) == {
        "a_fuzzy_bins_ge_subsample", "b_svm_bins_within_1.5_of_full",
        "c_svm_bins_fit_lt_2pct_single", "c_svm_bins_fit_lt_2pct_grid",
    }


def test_script_exits_clearly_without_data(monkeypatch, capsys, benchmark_script):
    mt = benchmark_script("misr_tables")
    monkeypatch.setattr(mt, "shared_data_dir", lambda: None)
    assert mt.main(["--quick"]) == 2
    assert "not present" in capsys.readouterr().err
