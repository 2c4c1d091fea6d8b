"""Sphinx configuration of bigkern's documentation site.

Build it from the repository root (``pip install ".[docs]"`` first)::

    python -m sphinx -W --keep-going -b html docs docs/_build/html

The three notebooks of ``notebooks/`` (copied into ``docs/notebooks/`` at each build)
are executed at every build, at the small size the test suite uses and on the
real data of ``../shared/data`` where it is (``BIGKERN_SHARED_DATA``);
``BIGKERN_DOCS_EXECUTE=0`` skips that for a quick build of the pages alone (the
notebooks then show without outputs). Where the test suite has just executed them
and left the executed copies in ``$BIGKERN_EXECUTED_NOTEBOOKS`` (``.ci/run``), the
site shows those instead of running them again.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sphinx.application import Sphinx

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))  # document the working tree's bigkern, installed or not

import bigkern  # noqa: E402

# -- project ---------------------------------------------------------------------------

project = "bigkern"
author = "The bigkern developers"
copyright = "the bigkern developers, BSD-3-Clause"
version = release = bigkern.__version__

extensions = [
    "myst_nb",  # markdown pages (it brings myst-parser) and notebooks
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "sphinx.ext.viewcode",
    # `.. plot::` blocks (in ```{eval-rst} on a markdown page): their code runs at each
    # build and its figure is drawn into the page (the models page's reliability diagram)
    "matplotlib.sphinxext.plot_directive",
]
templates_path = ["_templates"]
exclude_patterns = [
    "_build",
    "Thumbs.db",
    ".DS_Store",
    "**.ipynb_checkpoints",
]
root_doc = "index"

# -- markdown (myst) -------------------------------------------------------------------

myst_enable_extensions = ["colon_fence", "deflist", "dollarmath", "fieldlist"]
# anchors for headings down to ###, so that [text](page.md#a-heading) links work
myst_heading_anchors = 3

# -- notebooks (myst-nb) ---------------------------------------------------------------

# The notebooks live in notebooks/ at the repository's root; the build copies them into
# docs/notebooks/ (not kept in git). A link to them would not do: Sphinx and myst resolve
# a linked notebook to its real path, outside this folder, and then its links to the
# pages ("../user-guide/scenes.md") and to the other notebooks no longer resolve.
_NOTEBOOK_COPIES = DOCS / "notebooks"


def _cell_sources(path: Path) -> list[str]:
    cells = json.loads(path.read_text())["cells"]
    return ["".join(c["source"]) if isinstance(c["source"], list) else c["source"]
            for c in cells]


def _executed(sources: dict[str, Path]) -> dict[str, Path] | None:
    """Copies of the notebooks executed by the test suite, if it left one of each.

    ``tests/house/test_notebooks.py`` writes the notebooks it executes (at the same small
    size as here) to ``$BIGKERN_EXECUTED_NOTEBOOKS``; ``.ci/run`` sets it and builds
    the site after the tests, so that CI runs each notebook once. A copy counts only
    if its cells are those of the notebook now in ``notebooks/``.
    """
    folder = os.environ.get("BIGKERN_EXECUTED_NOTEBOOKS")
    if not folder:
        return None
    runs = {name: Path(folder) / name for name in sources}
    if all(run.is_file() and _cell_sources(run) == _cell_sources(source)
           for run, source in zip(runs.values(), sources.values(), strict=True)):
        return runs
    return None


def _copy_notebooks() -> bool:
    """Copy the notebooks into ``docs/notebooks/``; True if they are executed copies."""
    _NOTEBOOK_COPIES.mkdir(exist_ok=True)
    sources = {p.name: p for p in sorted((ROOT / "notebooks").glob("*.ipynb"))}
    executed = _executed(sources)
    for name, source in (executed or sources).items():
        copy = _NOTEBOOK_COPIES / name
        if not copy.exists() or copy.read_bytes() != source.read_bytes():
            shutil.copy2(source, copy)  # with its time, so that Sphinx rereads only changes
    for stale in _NOTEBOOK_COPIES.glob("*.ipynb"):
        if stale.name not in sources:
            stale.unlink()
    return executed is not None


_RUN_BY_THE_TESTS = _copy_notebooks()

EXECUTE = os.environ.get("BIGKERN_DOCS_EXECUTE", "1") != "0" and not _RUN_BY_THE_TESTS
nb_execution_mode = "force" if EXECUTE else "off"
nb_execution_raise_on_error = True  # a notebook that fails fails the build
nb_execution_timeout = 600  # seconds per cell
nb_execution_show_tb = True
nb_merge_streams = True
# the notebooks run as tests/house/test_notebooks.py runs them: at the small size, with their
# work folders (tempfile.mkdtemp) in a folder of the build's own that is removed at the
# end, and on a LocalCluster of their own, never on a scheduler named in the environment
os.environ.setdefault("BIGKERN_NOTEBOOK_SIZE", "small")
# notebook 02 reads the real MISR scenes of ../shared/data beside the repository where they
# are: by path, since the notebooks run in temporary folders with the bigkern installed,
# which does not know where the repository is (it falls back to synthetic scenes, saying so)
os.environ.setdefault("BIGKERN_SHARED_DATA", str(ROOT.parent / "shared" / "data"))
os.environ.pop("DASK_SCHEDULER_ADDRESS", None)
_NOTEBOOK_TMP = tempfile.mkdtemp(prefix="bigkern-docs-") if EXECUTE else None
if _NOTEBOOK_TMP is not None:
    os.environ["TMPDIR"] = _NOTEBOOK_TMP
nb_execution_in_temp = True  # each notebook's working directory is a fresh temporary one

# -- figures drawn by the build (matplotlib's plot directive) -------------------------

# the code shown above its figure, one PNG (no source link, no other formats); the code
# starts from `import numpy as np` and `from matplotlib import pyplot as plt`
plot_include_source = True
plot_html_show_source_link = False
plot_html_show_formats = False
plot_formats = [("png", 100)]

# -- API reference (autosummary, autodoc, numpydoc) -----------------------------------

autosummary_generate = True
autosummary_generate_overwrite = True
autodoc_typehints = "none"  # the numpydoc Parameters sections give the types
autodoc_member_order = "groupwise"
numpydoc_show_class_members = False  # the class template lists the members
numpydoc_class_members_toctree = False
numpydoc_validation_checks: set[str] = set()
numpydoc_xref_param_type = False
numpydoc_attributes_as_param_list = True

# -- HTML ------------------------------------------------------------------------------

html_theme = "pydata_sphinx_theme"
html_title = f"bigkern {release}"
html_static_path: list[str] = []
html_show_sourcelink = False
html_theme_options = {
    "navbar_align": "left",
    "header_links_before_dropdown": 7,
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
    "secondary_sidebar_items": ["page-toc"],
}
html_context = {"default_mode": "light"}
pygments_style = "sphinx"


def _attribute_doc(name: str) -> list[str] | None:
    """The docstring written below the assignment of ``bigkern.<name>`` in its module.

    autodoc finds such a docstring only in the module that assigns the name, not in
    ``bigkern``, which imports it; without this, ``bigkern.DECILES`` would show the
    docstring of ``tuple``.
    """
    from sphinx.pycode import ModuleAnalyzer

    value = getattr(bigkern, name)
    for modname, module in sorted(sys.modules.items()):
        if not modname.startswith("bigkern.") or getattr(module, name, None) is not value:
            continue
        try:
            docs = ModuleAnalyzer.for_module(modname).find_attr_docs()
        except Exception:  # a module without source: look further
            continue
        if ("", name) in docs:
            return list(docs[("", name)])
    return None


def _attribute_docstring(app: Sphinx, what: str, name: str, obj: object, options: object,
                    lines: list[str]) -> None:
    if what == "data" and name.startswith("bigkern.") and name.count(".") == 1:
        lines[:] = _attribute_doc(name.split(".")[1]) or lines


def _remove_notebook_tmp(app: Sphinx, exception: BaseException | None) -> None:
    if _NOTEBOOK_TMP is not None:
        shutil.rmtree(_NOTEBOOK_TMP, ignore_errors=True)


def setup(app: Sphinx) -> None:
    app.connect("build-finished", _remove_notebook_tmp)
    # before numpydoc (priority 500) turns the docstring into reST
    app.connect("autodoc-process-docstring", _attribute_docstring, priority=400)
