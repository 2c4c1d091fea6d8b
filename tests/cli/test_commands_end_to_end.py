"""The bigkern command, end to end on real zarr stores and a real LocalCluster."""

from __future__ import annotations

import numpy as np
import pytest

from bigkern.cli.main import main
from bigkern.models import load_model
from bigkern.scenes import open_scenes
from bigkern.store.zarr_store import open_zarr


def test_demo_small(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "-o", str(out), "--scenes", "2", "--shape", "64", "96",
                 "--workers", "1"]) == 0
    text = capsys.readouterr().out
    assert "accuracy vs synthetic truth" in text
    for name in ("scenes.zarr", "model.zarr", "predictions.zarr", "scene0.png"):
        assert (out / name).exists(), name
        assert str(out / name) in text
    assert (out / "scene0.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    pred = open_zarr(out / "predictions.zarr")
    assert pred["cloud_mask"].shape == (2, 64, 96)


def test_synth_fit_predict_cycle(tmp_path, capsys):
    store = tmp_path / "s.zarr"
    assert main(["synth", "-o", str(store), "--scenes", "2", "--shape", "48", "64",
                 "--workers", "1"]) == 0
    assert main(["fit", str(store), "-o", str(tmp_path / "m.zarr"), "--model", "ridge",
                 "--no-search", "--param", "omega=0.9", "--param", "lam=0.05",
                 "--workers", "1"]) == 0
    model = load_model(tmp_path / "m.zarr")
    assert model.get_params()["omega"] == 0.9
    assert list(model.feature_names_in_) == ["NDAI", "logSD", "CORR"]
    assert main(["predict", str(store), str(tmp_path / "m.zarr"), "-o",
                 str(tmp_path / "p.zarr"), "--png", str(tmp_path / "p.png"),
                 "--workers", "1"]) == 0
    text = capsys.readouterr().out
    assert "pixels/s" in text and str(tmp_path / "p.zarr") in text
    mask = open_zarr(tmp_path / "p.zarr")["cloud_mask"].values
    truth = open_scenes(store)["cloud_truth"].values
    assert (mask[mask != 0] == truth[mask != 0]).mean() > 0.7


def test_errors_are_reported_not_raised(tmp_path, capsys):
    assert main(["fit", str(tmp_path / "missing.zarr"), "-o", str(tmp_path / "m.zarr"),
                 "--workers", "1"]) == 1
    assert "does not exist" in capsys.readouterr().err


def test_bad_param_syntax(tmp_path, capsys):
    assert main(["fit", str(tmp_path), "-o", str(tmp_path / "m"), "--param", "omega",
                 "--workers", "1"]) == 2
    assert "NAME=VALUE" in capsys.readouterr().err
    assert main(["fit", str(tmp_path), "-o", str(tmp_path / "m"), "--valid-range", "CORR=1",
                 "--workers", "1"]) == 2
    assert "FEATURE=MIN:MAX" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:  # argparse's own usage errors
        main(["fit"])
    assert exit_info.value.code == 2


def test_ingest_misr_text(tmp_path, capsys):
    text = tmp_path / "scene.txt"
    rows = [f"{y} {x} {(-1) ** (x + y)} 1.0 2.0 0.5 200 190 180 170 160"
            for y in range(3) for x in range(4)]
    text.write_text("\n".join(rows) + "\n")
    assert main(["ingest", "misr-text", str(text), "-o", str(tmp_path / "s.zarr")]) == 0
    ds = open_scenes(tmp_path / "s.zarr")
    assert ds["label"].shape == (1, 3, 4)
    assert np.isin(ds["label"].values, [-1, 1]).all()
