"""The seams of the house: no import cycles, no private name across packages.

docs/architecture.md (Rules the tests hold): no import cycles, and no private name
(``_x``) imported from another package: if two packages need it, it is public in
the lower one.
This module checks that rule statically, with :mod:`ast`, so that an import
hidden inside a function counts as much as one at the top of a module.

The rule, precisely
-------------------
**Modules.** Every ``.py`` file below ``bigkern/`` is a module;
``pkg/__init__.py`` is the module ``pkg``.

**Imports.** Every ``import`` and ``from … import`` statement anywhere in a
module — at module level, in functions and methods, under ``try``/``if``
(``if TYPE_CHECKING:`` included) — relative ones resolved to absolute names.
Only imports of ``bigkern`` itself are considered. An import resolves to one
module: ``import a.b.c`` to ``a.b.c``; ``from a.b import x`` to ``a.b.x`` when
that is a module, else to ``a.b`` (``x`` is then an attribute of ``a.b``, e.g.
``from bigkern.reduce import percentile_bins`` depends on
``bigkern/reduce/__init__.py``, which is what Python executes).

**Cycles.** The graph has an edge ``m → t`` for each import of ``t`` by ``m``,
plus the edges Python adds: importing ``a.b.c`` first runs ``a/__init__`` and
``a/b/__init__``, so ``m`` also depends on each of those package ``__init__``
modules that ``m`` is *not* inside (for a module inside the package, its
``__init__`` is already running: no edge). Hence a package ``__init__`` that
imports (re-exports) its own submodules makes no cycle, but

* a top-level module ``bigkern.x`` importing ``bigkern.reduce._tree`` runs
  ``bigkern/reduce/__init__.py``, which imports every module of
  ``bigkern.reduce``: if one of them imports ``bigkern.x``, that is a
  cycle (and a real partial-initialisation hazard), even from a function;
* a submodule that imports names from its own package's ``__init__`` closes a
  cycle;
* so does any module that imports the root ``bigkern`` facade (``from bigkern
  import __version__``, lazily or not): the facade imports every package. A
  module that needs the version imports :mod:`bigkern.version`. ``from bigkern
  import config`` resolves to the module ``bigkern.config`` and does not touch
  the facade.

The test fails on every set of modules that import each other, directly or
through others (a strongly connected component of more than one module, or
a module that imports itself), listing a shortest cycle through each member
with the ``file:line`` of every step.

**Packages.** Each folder below ``bigkern/`` (``bigkern.scenes``, ``bigkern.store``,
``bigkern.models``, …) with everything below it (``bigkern.solvers.oht`` is part of
``bigkern.solvers``) is a package; every top-level module (``bigkern.config``,
``bigkern.errors``, …) and the root ``bigkern/__init__.py`` is a package of its own.

**Private names.** A dotted name is private when a component below
``bigkern`` starts with ``_`` and is not a dunder (``__version__`` is
public), e.g. ``bigkern.reduce._tree`` or ``bigkern.scenes.reading._as_dask``. An
import statement in package *P* that names a private module or attribute of another
package fails, reported as ``file:line imports name``; inside one package
private names are free. Scripts in ``benchmarks/`` are outside every
``bigkern`` package: they may import no private ``bigkern`` name at all (their
own ``_common`` is fine). Attribute chains such as ``bigkern.x._y`` written
out in the code count as imports of ``bigkern.x._y``.
"""

from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Import:
    """One imported name: where (file, line) and what (a dotted name, its module)."""

    file: str
    line: int
    name: str  # full dotted name, e.g. "bigkern.scenes.samples.as_dask_array"
    module: str  # the module it resolves to, e.g. "bigkern.scenes.reading"
    statement: bool = True  # False: an attribute chain ``bigkern.x._y`` in the code

    def __str__(self) -> str:
        return f"{self.file}:{self.line} imports {self.name}"


class Tree:
    """The modules of the ``bigkern`` package below ``root`` and their imports."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.package = root / "bigkern"
        self.modules = {self.module_name(p): p for p in sorted(self.package.rglob("*.py"))}

    def module_name(self, path: Path) -> str:
        """``bigkern/scenes/dims.py`` → ``bigkern.scenes.dims``; ``pkg/__init__.py`` → ``pkg``."""
        parts = list(path.relative_to(self.root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        return ".".join(parts)

    def resolve(self, name: str) -> str:
        """The deepest module that the dotted ``name`` lies in (``""`` if none)."""
        parts = name.split(".")
        while parts and ".".join(parts) not in self.modules:
            parts.pop()
        return ".".join(parts)

    def package_of(self, module: str) -> str:
        """The package a module belongs to (see the module docstring)."""
        parts = module.split(".")
        if len(parts) > 1 and (self.package / parts[1]).is_dir():
            return ".".join(parts[:2])
        return module  # the root facade, or a top-level module

    def imports(self, path: Path) -> Iterator[Import]:
        """Every ``bigkern`` name the file at ``path`` imports, at any depth."""
        rel = path.relative_to(self.root).as_posix()
        this = self.module_name(path) if path.is_relative_to(self.package) else ""
        inner: set[int] = set()  # attribute nodes inside a longer chain
        for node in ast.walk(ast.parse(path.read_text(), filename=rel)):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == "bigkern":
                        yield Import(rel, node.lineno, alias.name, self.resolve(alias.name))
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: resolve against this module's package
                    anchor = this.split(".")
                    keep = len(anchor) - node.level + (path.name == "__init__.py")
                    base = ".".join([*anchor[:keep], *([base] if base else [])])
                if base.split(".")[0] != "bigkern":
                    continue
                for alias in node.names:
                    full = base if alias.name == "*" else f"{base}.{alias.name}"
                    yield Import(rel, node.lineno, full, self.resolve(full))
            elif isinstance(node, ast.Attribute) and id(node) not in inner:
                chain = _attribute_chain(node, inner)
                if chain and chain.split(".")[0] == "bigkern" and _private_part(chain):
                    yield Import(rel, node.lineno, chain, self.resolve(chain), statement=False)

    def graph(self) -> dict[str, dict[str, list[str]]]:
        """Module → imported module → the imports behind that edge (``file:line imports name``)."""
        graph: dict[str, dict[str, list[str]]] = {m: {} for m in self.modules}
        for module, path in self.modules.items():
            for imp in self.imports(path):
                if not (imp.statement and imp.module):
                    continue
                graph[module].setdefault(imp.module, []).append(str(imp))
                # Python first runs the packages above the target: from outside such a
                # package that is a dependency on its __init__ (from inside, it is running).
                parts = imp.module.split(".")
                for depth in range(1, len(parts)):
                    parent = ".".join(parts[:depth])
                    if module != parent and not module.startswith(parent + "."):
                        init = self.modules[parent].relative_to(self.root).as_posix()
                        graph[module].setdefault(parent, []).append(f"{imp} (runs {init} first)")
        return graph

    def cycles(self) -> list[str]:
        """One report line per cycle component, then a shortest cycle through each member."""
        graph = self.graph()
        reach = {m: _reachable(m, graph) for m in graph}
        components = {frozenset({m} | {n for n in reach[m] if m in reach[n]})
                      for m in graph if m in reach[m]}
        report = []
        for component in sorted(sorted(c) for c in components):
            report.append("cycle among: " + ", ".join(component))
            seen = set()
            for start in component:
                cycle = _shortest_cycle(start, graph, set(component))
                key = frozenset(pairwise(cycle))
                if key in seen:
                    continue
                seen.add(key)
                report.append("  " + " → ".join(cycle))
                report += [f"      {graph[a][b][0]}" for a, b in pairwise(cycle)]
        return report

    def private_offenders(self) -> list[str]:
        """``file:line imports name`` for every private name imported from another package."""
        return _listed(imp for module, path in self.modules.items()
                       for imp in self.imports(path)
                       if _private_part(imp.name)
                       and self.package_of(imp.module) != self.package_of(module))


def _listed(imports: Iterable[Import]) -> list[str]:
    """``file:line imports name`` lines, once each, by file and line."""
    unique = {(imp.file, imp.line, imp.name): str(imp) for imp in imports}
    return [unique[key] for key in sorted(unique)]


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _private_part(dotted: str) -> bool:
    return any(_is_private(part) for part in dotted.split(".")[1:])


def _attribute_chain(node: ast.Attribute, inner: set[int]) -> str | None:
    """``a.b.c`` for an attribute chain rooted at a name; its inner links go to ``inner``."""
    names = []
    current: ast.expr = node
    while isinstance(current, ast.Attribute):
        names.append(current.attr)
        current = current.value
        inner.add(id(current))
    if isinstance(current, ast.Name):
        return ".".join([current.id, *reversed(names)])
    return None


def _reachable(start: str, graph: dict[str, dict[str, list[str]]]) -> set[str]:
    seen: set[str] = set()
    todo = list(graph[start])
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            todo += graph[node]
    return seen


def _shortest_cycle(start: str, graph: dict[str, dict[str, list[str]]],
                    members: set[str]) -> list[str]:
    """The shortest import path from ``start`` back to itself, within ``members``."""
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph[node]):
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [*reversed(path), start]
                if child in members and child not in previous:
                    previous[child] = node
                    following.append(child)
        frontier = following
    return []


@pytest.fixture(scope="module")
def tree() -> Tree:
    return Tree(ROOT)


def test_the_walk_sees_every_package(tree: Tree) -> None:
    for sub in ("", ".reduce", ".scenes", ".store", ".models", ".solvers", ".datasets",
                ".features", ".cli", ".jobs"):
        assert f"bigkern{sub}" in tree.modules
    # imports inside functions are seen: the predict command imports its job lazily
    cli = tree.modules["bigkern.cli.predict_command"]
    assert "bigkern.jobs.predict.predict_scenes" in {imp.name for imp in tree.imports(cli)}


def test_no_import_cycles(tree: Tree) -> None:
    report = tree.cycles()
    assert not report, "import cycles between bigkern modules:\n" + "\n".join(report)


def test_no_private_names_across_packages(tree: Tree) -> None:
    offenders = tree.private_offenders()
    assert not offenders, ("private names imported from another package (make them public "
                           "in the lower package):\n" + "\n".join(offenders))


#: docs/architecture.md's layers, top to bottom: a module imports only from its own layer
#: or the layers below it. The facade, ``__main__`` and the command line sit above all.
LAYERS = (
    ("bigkern", "bigkern.__main__", "bigkern.cli"),
    ("bigkern.jobs",),
    ("bigkern.models",),
    ("bigkern.reduce",),
    ("bigkern.solvers",),
    ("bigkern.kernels",),
    ("bigkern.datasets",),
    ("bigkern.scenes",),
    ("bigkern.store",),
    ("bigkern.features",),
    ("bigkern.cluster",),
    ("bigkern.config", "bigkern.errors", "bigkern.extras", "bigkern.lazy", "bigkern.version"),
)
#: a reduction never calls a solver, though the solvers sit below the passes
NEVER = {"bigkern.reduce": ("bigkern.solvers",)}


def _layer(package: str) -> int:
    return next(i for i, names in enumerate(LAYERS) if package in names)


def _architecture_page_layers() -> list[set[str]]:
    """The packages of each row of docs/architecture.md's "Packages, top to bottom" table."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    table = text.split("## Packages, top to bottom", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    layers = []
    for row in rows:
        names = set()
        for cell in re.findall(r"`([^`]+)`", row.split("|")[1]):
            name = cell.removeprefix("bigkern/").removesuffix("/").removesuffix(".py")
            names.add("bigkern" if name == "__init__" else f"bigkern.{name}")
        layers.append(names)
    return layers


def test_the_architecture_page_states_the_layers_the_code_has() -> None:
    assert _architecture_page_layers() == [set(names) for names in LAYERS]


def test_every_package_has_a_layer(tree: Tree) -> None:
    packages = {tree.package_of(module) for module in tree.modules}
    listed = {name for names in LAYERS for name in names}
    assert packages == listed, (sorted(packages - listed), sorted(listed - packages))


def test_no_arrow_points_up(tree: Tree) -> None:
    offenders = []
    for module, path in tree.modules.items():
        package = tree.package_of(module)
        for imp in tree.imports(path):
            target = tree.package_of(imp.module)
            if target == "bigkern" and package != "bigkern":
                continue  # ``from bigkern import config`` names a module, checked as that
            if (_layer(target) < _layer(package)
                    or any(target == n for n in NEVER.get(package, ()))):
                offenders.append(f"{imp} ({package} → {target})")
    assert not offenders, "imports against the layering:\n" + "\n".join(offenders)


def test_the_top_level_is_the_package_face(tree: Tree) -> None:
    top = sorted(p.name for p in (ROOT / "bigkern").glob("*.py"))
    assert len(top) <= 7, top


def test_no_package_folder_holds_more_than_4000_lines() -> None:
    for folder in sorted(p for p in (ROOT / "bigkern").rglob("*") if p.is_dir()
                         and (p / "__init__.py").exists()):
        lines = sum(len(f.read_text().splitlines()) for f in folder.glob("*.py"))
        assert lines <= 4000, (folder.relative_to(ROOT).as_posix(), lines)


def test_only_the_command_line_and_the_api_import_the_jobs(tree: Tree) -> None:
    # the jobs sit on top of the library: nothing they use may use them
    def allowed(package: str) -> bool:  # the facade, the command line's modules, the jobs
        return package in ("bigkern", "bigkern.jobs") or package.startswith("bigkern.cli")

    offenders = [str(imp) for module, path in tree.modules.items()
                 if not allowed(tree.package_of(module))
                 for imp in tree.imports(path)
                 if imp.module == "bigkern.jobs" or imp.module.startswith("bigkern.jobs.")]
    assert not offenders, "imports of a job from below it:\n" + "\n".join(offenders)


def test_benchmarks_import_no_private_bigkern_names(tree: Tree) -> None:
    offenders = _listed(imp for path in sorted((ROOT / "benchmarks").glob("*.py"))
                        for imp in tree.imports(path) if _private_part(imp.name))
    assert not offenders, "benchmarks import private bigkern names:\n" + "\n".join(offenders)


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_the_rule_on_a_small_tree(tmp_path: Path) -> None:
    """The checks themselves: what counts as a cycle and as a private import."""
    _write(tmp_path, {
        # a facade re-exporting its packages, and a package re-exporting its modules
        "bigkern/__init__.py": "from bigkern.a import f\nfrom bigkern.b import h\n"
                               "__version__ = '1'\n",
        "bigkern/a/__init__.py": "from bigkern.a.m import f\n",
        "bigkern/a/m.py": "def f():\n    from bigkern.top import g\n",  # lazy, upward
        "bigkern/a/_p.py": "x = 1\n",
        "bigkern/top.py": "from bigkern.a._p import x\nimport bigkern.a.m\n\n\ndef g():\n"
                          "    return bigkern.b._q.z\n",
        "bigkern/b/__init__.py": "from bigkern.b.n import h\n",
        "bigkern/b/n.py": "from bigkern.b._q import z\nfrom . import _q\n\n\ndef h():\n"
                          "    from bigkern.version import __version__\n",
        "bigkern/b/_q.py": "z = 1\n",
        "bigkern/version.py": "__version__ = '1'\n",
    })
    small = Tree(tmp_path)
    report = small.cycles()
    # top → bigkern.a.m runs bigkern/a/__init__.py first, which imports a.m, which
    # imports top (in a function): one cycle; b's re-exports and the facade make none
    assert report[0] == "cycle among: bigkern.a, bigkern.a.m, bigkern.top"
    assert len([line for line in report if line.startswith("cycle")]) == 1
    assert "  bigkern.a.m → bigkern.top → bigkern.a.m" in report
    assert small.private_offenders() == ["bigkern/top.py:1 imports bigkern.a._p.x",
                                         "bigkern/top.py:6 imports bigkern.b._q.z"]
    # importing the facade from inside closes a cycle through every package it imports
    _write(tmp_path, {"bigkern/b/_q.py": "def z():\n    from bigkern import __version__\n"})
    assert "cycle among: bigkern, bigkern.b, bigkern.b._q, bigkern.b.n" in Tree(tmp_path).cycles()


def test_the_version_is_the_one_of_bigkern_version() -> None:
    import bigkern
    import bigkern.version

    assert bigkern.__version__ is bigkern.version.__version__


def test_subpackages_are_attributes_after_import_bigkern() -> None:
    """``import bigkern`` alone makes ``bigkern.datasets.make_scenes`` and the other
    subpackages reachable (checked in a fresh interpreter: the test session imports them)."""
    import subprocess
    import sys

    subs = ("datasets", "reduce", "scenes", "store", "models", "kernels", "features", "solvers",
            "cluster", "jobs", "cli")
    code = "import bigkern\n" + "\n".join(f"bigkern.{s}" for s in subs)
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)


def test_import_bigkern_is_light_and_every_public_name_resolves() -> None:
    """``import bigkern`` imports no heavy library (each public name is imported on first
    use), and every name in ``bigkern.__all__`` then resolves (fresh interpreter)."""
    import subprocess
    import sys

    heavy = ("sklearn", "scipy", "numba", "matplotlib", "xarray", "zarr", "distributed")
    code = (
        "import sys, bigkern\n"
        f"loaded = [m for m in {heavy!r} if m in sys.modules]\n"
        "assert not loaded, f'import bigkern loaded {loaded}'\n"
        "missing = [n for n in bigkern.__all__ if getattr(bigkern, n, None) is None]\n"
        "assert not missing, missing\n"
        "assert bigkern.BinnedSVC.__module__ == 'bigkern.models.binned_svc'\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


def test_no_lazy_public_name_is_also_a_submodule() -> None:
    """A package that imports its names on first use must not name a submodule as one:
    importing ``bigkern.scenes.x`` sets the attribute ``x`` of ``bigkern.scenes`` to the module,
    which would then hide a function ``x`` (as ``validity_rules`` was hidden)."""
    import importlib
    import pkgutil

    for package in ("bigkern.scenes", "bigkern.datasets", "bigkern.models",
                    "bigkern.models.persistence", "bigkern.features"):
        module = importlib.import_module(package)
        subs = {m.name for m in pkgutil.iter_modules(module.__path__)}
        names = set(getattr(module, "_HOMES", {})) | set(getattr(module, "__all__", []))
        assert not names & subs, (package, sorted(names & subs))
        for name in sorted(names):  # and each resolves to the object, not a module
            assert not inspect.ismodule(getattr(module, name)), (package, name)
