"""Lee & Huang's Table 2 and Figures 1-2 (benchmarks/lee_huang_tables.py table2) on the real data.

Runs the benchmark's ``table2 --small`` path (2 random reduced sets per row instead
of 10) through its command line into ``tmp_path`` and checks the output has every
row — the median-distance ω, the ω matched to the paper's λ₁ and the paper's own —
for ionosphere, pima and cpu_small(1000), the JSON summaries are consistent
(Nyström's lower bound K̃ ≼ K, the match within 5% of the paper's λ₁) and the three
figures are PNGs. A few seconds; BLAS is pinned to one thread by the benchmark
itself. Skips when ``../shared/data`` is absent.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

SETS = ("ionosphere", "pima", "cpu_small")


@pytest.mark.realdata
def test_small_run_table2(tmp_path, capsys, benchmark_script):
    mod = benchmark_script("lee_huang_tables")
    absent = mod.missing_files(SETS)
    if absent:
        pytest.skip(f"real data absent: {', '.join(absent)}")
    out, js = tmp_path / "table2.txt", tmp_path / "table2.json"
    mod.main(["table2", "--small", "--out", str(out), "--fig-dir", str(tmp_path),
              "--json", str(js)])
    capsys.readouterr()
    text = out.read_text()
    assert "## Table 2: full kernel K vs Nyström K̃" in text
    assert "over 2 random reduced sets" in text
    for row in ("Ionosphere (351, 36)", "Pima (768, 39)", "cpu_small(1000) (1000, 150)",
                "paper: Ionosphere (351,36)", "paper: Pima (768, 39)",
                "paper: Comp-Act(1000) (1000, 150)"):
        assert row in text, row
    assert text.count("(median distance)") == 3
    assert text.count("(matched to the paper's λ₁)") == 3
    assert "12 of its 21 inputs" in text

    summaries = json.loads(js.read_text())["summaries"]
    assert [s["name"] for s in summaries] == list(SETS)
    for s in summaries:
        assert (s["n"], s["size"]) == {"ionosphere": (351, 36), "pima": (768, 39),
                                       "cpu_small": (1000, 150)}[s["name"]]
        assert s["omega_matched"] in mod.OMEGA_GRID
        for key in ("rule", "matched"):
            r = s["rows"][key]
            assert len(r["runs"]) == 2
            for run in r["runs"]:
                lam, lam_t = run["largest_eigenvalue_full"], run["largest_eigenvalue_nystrom"]
                assert 0 < lam_t <= lam * (1 + 1e-12) and lam <= s["n"]
                assert 0 <= run["relative_trace_difference"] < 1
                assert run["max_eigenvalue_difference"] > 0
        paper_l1 = s["paper"][0]
        assert abs(s["rows"]["matched"]["largest_eigenvalue_full"]["mean"] / paper_l1 - 1) < 0.05
        fig = Path(s["figure"])
        assert fig.parent == tmp_path and fig.name == f"lee_huang_fig_{s['name']}.png"
        assert fig.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
