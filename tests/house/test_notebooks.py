"""The walk-through notebooks run, top to bottom, at a small size (BIGKERN_NOTEBOOK_SIZE)."""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

import pytest

import bigkern

pytestmark = pytest.mark.slow_file(seconds=95)

nbformat = pytest.importorskip("nbformat", reason="nbformat is a test extra")
nbclient = pytest.importorskip("nbclient", reason="nbclient is a test extra")

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
# the site builds the notebooks from docs/notebooks, a link to notebooks/: their links are
# relative to it
DOCS_NOTEBOOKS = Path(__file__).resolve().parents[2] / "docs" / "notebooks"
# the real data sets (../shared/data beside the repository), given to the notebooks by path:
# their kernels run in a temporary folder, and an installed bigkern (pip install ".[test]")
# does not know where the repository is
SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
NAMES = ["01-quickstart.ipynb", "02-misr-cloud-detection.ipynb", "03-at-scale.ipynb",
         "04-your-own-granules.ipynb"]
# the public submodules a notebook may import from (or reach through ``bigkern.<name>.``)
PUBLIC_SUBMODULES = ("datasets", "config")
# a cell that calls one of these draws a figure
DRAWS = re.compile(r"\bplot_scene\(|\bplot_nystrom_spectrum\(|\bplt\.|\bsubplots\(|"
                   r"\.imshow\(|\.hist\(|\.plot\(|\.savefig\(")


def _execute(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> object:
    book = nbformat.read(NOTEBOOKS / name, as_version=4)
    monkeypatch.setenv("BIGKERN_NOTEBOOK_SIZE", "small")
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # the notebooks' work folders go here
    monkeypatch.setenv("BIGKERN_SHARED_DATA", str(SHARED_DATA))  # as docs/conf.py does
    monkeypatch.delenv("MISR_DIR", raising=False)
    monkeypatch.delenv("DASK_SCHEDULER_ADDRESS", raising=False)
    client = nbclient.NotebookClient(book, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    keep = os.environ.get("BIGKERN_EXECUTED_NOTEBOOKS")
    if keep:  # for the documentation site, which .ci/run builds once all are here (docs/conf.py)
        Path(keep).mkdir(parents=True, exist_ok=True)
        partial = Path(keep) / f".{name}.partial"
        nbformat.write(book, partial)
        partial.replace(Path(keep) / name)  # whole or absent: the build may be looking
    return book


def _figures_shown(book: object) -> int:
    """Assert every code cell that draws a figure shows it as a PNG; return how many do."""
    shown = 0
    for cell in book.cells:
        if cell.cell_type != "code":
            continue
        pngs = [out for out in cell.outputs if "image/png" in out.get("data", {})]
        if DRAWS.search(cell.source):
            assert pngs, f"a cell draws a figure but shows no image/png: {cell.source[:80]!r}"
            shown += 1
        for out in cell.outputs:  # a figure shown only as its repr, "<Figure size ...>"
            text = out.get("data", {}).get("text/plain", "")
            assert not text.startswith("<Figure") or "image/png" in out["data"], cell.source[:80]
    return shown


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
    assert _figures_shown(book) >= 2  # the bins' counts and the scene


@pytest.mark.slow
def test_misr_notebook_runs_with_real_or_synthetic_scenes(tmp_path, monkeypatch):
    book = _execute(NAMES[1], tmp_path, monkeypatch)
    text = _text(book)
    misr = sorted(p.name for p in (SHARED_DATA / "misr").glob("image*.txt"))
    if misr:  # the real scenes, where the shared data are
        assert f"MISR files: {misr}" in text
        assert "synthetic" not in text
    else:  # else synthetic ones, saying why
        assert "MISR files: none, so two synthetic scenes: no " in text
    for model in ("BinnedSVC", "BinnedKernelRidgeClassifier", "SVC on m random pixels"):
        assert model in text
    assert "wrong of" in text
    # the masks are drawn by plot_scene (bigkern's mask colours and legend), one per scene
    maps = [c for c in book.cells if c.cell_type == "code" and "plot_scene(" in c.source]
    assert len(maps) >= 2
    assert _figures_shown(book) >= len(maps) + 1  # and the map of the errors


@pytest.mark.slow
def test_at_scale_notebook_times_every_stage(tmp_path, monkeypatch):
    book = _execute(NAMES[2], tmp_path, monkeypatch)
    text = _text(book)
    assert "dashboard:" in text
    assert "'no_prediction'" in text
    widgets = [out for cell in book.cells for out in cell.get("outputs", [])
               if "application/vnd.jupyter.widget-view+json" in out.get("data", {})]
    assert widgets, "the distributed passes show progress widgets in a notebook"
    _figures_shown(book)


@pytest.mark.slow
def test_granules_notebook_fits_netcdf_files_and_writes_netcdf_and_geotiff(tmp_path,
                                                                          monkeypatch):
    pytest.importorskip("h5netcdf", reason="the notebook reads netCDF with the formats extra")
    pytest.importorskip("rioxarray", reason="the notebook writes GeoTIFF with the formats extra")
    book = _execute(NAMES[3], tmp_path, monkeypatch)
    text = _text(book)
    assert "dims found:" in text and "its standard_name" in text
    assert "'cloud':" in text and "'clear':" in text  # the summary in the data's words
    assert "Greenland overpass" in text  # the user's attributes, read back from the netCDF
    assert "CRS: EPSG:4326" in text  # the GeoTIFF's CRS, from the granules' grid mapping
    figure = next(c for c in book.cells if c.cell_type == "code" and "plot_scene(" in c.source)
    assert any("image/png" in out.get("data", {}) for out in figure.outputs)
    _figures_shown(book)


@pytest.mark.parametrize("name", NAMES)
def test_notebooks_are_committed_without_outputs(name):
    book = nbformat.read(NOTEBOOKS / name, as_version=4)
    for cell in book.cells:
        if cell.cell_type == "code":
            assert not cell.outputs and cell.execution_count is None, name
    assert "widgets" not in book.metadata, name  # no widget state saved from a run
    assert os.path.getsize(NOTEBOOKS / name) < 40_000


def _public_names(submodule: str = "") -> set[str]:
    """``bigkern.__all__``, or the ``__all__`` of one of its public submodules."""
    return set(getattr(bigkern, submodule).__all__ if submodule else bigkern.__all__)


def _non_public_uses(sources: list[str]) -> list[str]:
    """What the code takes from bigkern beyond its public names, and any ``._name`` it uses."""
    nodes = [node for source in sources for node in ast.walk(ast.parse(source))]
    # the names the bigkern package is bound to, in any cell
    package = {"bigkern"} | {a.asname for n in nodes if isinstance(n, ast.Import)
                             for a in n.names if a.name == "bigkern" and a.asname}

    def is_package(node: ast.AST) -> bool:
        return isinstance(node, ast.Name) and node.id in package

    found = []
    for node in nodes:
        if isinstance(node, ast.Import):  # import bigkern.<sub>
            found += [f"import {a.name}" for a in node.names if a.name.startswith("bigkern.")
                      and a.name.partition(".")[2] not in PUBLIC_SUBMODULES]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 \
                and (node.module or "").split(".")[0] == "bigkern":
            sub = node.module.partition(".")[2]
            if sub and sub not in PUBLIC_SUBMODULES:
                found.append(f"from {node.module} import ...")
            else:
                found += [f"from {node.module} import {a.name}" for a in node.names
                          if a.name not in _public_names(sub)]
        elif isinstance(node, ast.Attribute):
            if node.attr.startswith("_") and not node.attr.endswith("__"):
                found.append(f"._{node.attr.lstrip('_')} (a private attribute)")
            if is_package(node.value) and node.attr not in _public_names():  # bigkern.a
                found.append(f"bigkern.{node.attr}")
            chain = node.value  # bigkern.a.b: only through a public submodule, to its names
            if isinstance(chain, ast.Attribute) and is_package(chain.value) and (
                    chain.attr not in PUBLIC_SUBMODULES
                    or node.attr not in _public_names(chain.attr)):
                found.append(f"bigkern.{chain.attr}.{node.attr}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in ("getattr", "setattr", "hasattr") and len(node.args) > 1 \
                and isinstance(node.args[1], ast.Constant) \
                and str(node.args[1].value).startswith("_"):
            found.append(f"{node.func.id}(..., {node.args[1].value!r})")
    return found


def test_the_public_name_rule_finds_internals():
    code = ["import bigkern as bk\nfrom bigkern.store.integrity import open_checked",
            "from bigkern.reduce.sampling import random_split\nfrom bigkern import _SOURCES",
            "from bigkern.datasets import make_scenes, _variable_names",
            "model.expansion_.basis._scale\nbk.io.open_checked(p)\nbigkern.jobs.plot.MASK_COLORS",
            "import bigkern.scenes.reading\ngetattr(model, '_solve')\nbigkern.mask_colormap()"]
    found = _non_public_uses(code)
    for what in ("from bigkern.store.integrity", "from bigkern.reduce.sampling",
                 "from bigkern import _SOURCES", "import _variable_names", "._scale",
                 "bigkern.io", "bigkern.jobs", "import bigkern.scenes.reading", "'_solve'",
                 "bigkern.mask_colormap"):
        assert any(what in f for f in found), (what, found)
    assert not _non_public_uses([
        "import bigkern\nfrom bigkern import open_scenes\nfrom bigkern.datasets import make_scenes",
        "bigkern.plot_scene(s, p)\nbigkern.datasets.shared_data_dir()\nbigkern.config.get('x')",
        "import bigkern.config\nmodel.expansion_.scale\nbigkern.__version__"])


@pytest.mark.parametrize("name", NAMES)
def test_notebooks_use_only_public_names(name):
    """A notebook teaches the public API: names of ``bigkern.__all__`` and its public submodules."""
    book = nbformat.read(NOTEBOOKS / name, as_version=4)
    sources = [cell.source for cell in book.cells if cell.cell_type == "code"]
    assert _non_public_uses(sources) == [], name


@pytest.mark.parametrize("name", NAMES)
def test_notebooks_have_a_title_an_intro_and_where_next(name):
    book = nbformat.read(NOTEBOOKS / name, as_version=4)
    markdown = [cell.source for cell in book.cells if cell.cell_type == "markdown"]
    assert book.cells[0].cell_type == "markdown" and book.cells[0].source.startswith("# ")
    assert any("what you will learn" in text.lower() for text in markdown[:2]), name
    last = book.cells[-1]
    assert last.cell_type == "markdown" and last.source.startswith("## Where next"), name
    links = re.compile(r"\]\(([^)\s]+)\)")
    assert any("user-guide/" in t for t in links.findall(last.source)), name
    assert any("api/index.md" in t for t in links.findall(last.source)), name
    # every link to a page of the site leads to a page that exists
    for target in (t for text in markdown for t in links.findall(text)):
        if "://" in target or target.startswith(("#", "mailto:")):
            continue
        path = target.partition("#")[0]
        # the site's copies of the notebooks (docs/notebooks/) exist only once it is built
        folder = NOTEBOOKS if path.endswith(".ipynb") and "/" not in path else DOCS_NOTEBOOKS
        page = os.path.normpath(folder / path)
        assert os.path.isfile(page), f"{name} links to {target}, which does not exist"
