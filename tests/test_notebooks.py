"""The walk-through notebooks run, top to bottom, at a small size (BIGKERN_NOTEBOOK_SIZE)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="nbformat is a test extra")
nbclient = pytest.importorskip("nbclient", reason="nbclient is a test extra")

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
NAMES = ["01-quickstart.ipynb", "02-misr-cloud-detection.ipynb", "03-at-scale.ipynb"]


def _execute(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> object:
    book = nbformat.read(NOTEBOOKS / name, as_version=4)
    monkeypatch.setenv("BIGKERN_NOTEBOOK_SIZE", "small")
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # the notebooks' work folders go here
    monkeypatch.delenv("DASK_SCHEDULER_ADDRESS", raising=False)
    client = nbclient.NotebookClient(book, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    return book


def _text(book: object) -> str:
    """Everything the notebook printed or displayed as text."""
    parts = []
    for cell in book.cells:
        for out in cell.get("outputs", []):
            parts.append(out.get("text", ""))
            parts.append(out.get("data", {}).get("text/plain", ""))
    return "\n".join(parts)


@pytest.mark.slow
def test_quickstart_runs_and_predicts_the_labelled_pixels(tmp_path, monkeypatch):
    book = _execute(NAMES[0], tmp_path, monkeypatch)
    text = _text(book)
    accuracy = float(text.split("accuracy on the labelled pixels: ")[1].split()[0])
    assert accuracy > 0.85
    assert "occupied bins from" in text
    # the scene's figure shows inline, as the cell's own output (not a PNG read back)
    figure_cell = next(c for c in book.cells if "plot_scene(" in c.source)
    assert any("image/png" in out.get("data", {}) for out in figure_cell.outputs)


@pytest.mark.slow
def test_misr_notebook_runs_with_real_or_synthetic_scenes(tmp_path, monkeypatch):
    text = _text(_execute(NAMES[1], tmp_path, monkeypatch))
    assert "MISR files:" in text
    for model in ("BinnedSVC", "BinnedKernelRidgeClassifier", "SVC on m random pixels"):
        assert model in text
    assert "wrong of" in text


@pytest.mark.slow
def test_at_scale_notebook_times_every_stage(tmp_path, monkeypatch):
    book = _execute(NAMES[2], tmp_path, monkeypatch)
    text = _text(book)
    assert "dashboard:" in text
    assert "'no_prediction'" in text
    widgets = [out for cell in book.cells for out in cell.get("outputs", [])
               if "application/vnd.jupyter.widget-view+json" in out.get("data", {})]
    assert widgets, "the distributed passes show progress widgets in a notebook"


@pytest.mark.parametrize("name", NAMES)
def test_notebooks_are_committed_without_outputs(name):
    book = nbformat.read(NOTEBOOKS / name, as_version=4)
    for cell in book.cells:
        if cell.cell_type == "code":
            assert not cell.outputs and cell.execution_count is None, name
    assert os.path.getsize(NOTEBOOKS / name) < 40_000
