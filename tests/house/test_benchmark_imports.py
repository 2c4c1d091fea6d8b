"""The benchmarks import bigkern names lazily (inside functions): check they exist.

Benchmarks are not run by the test suite, so a name moved between modules would
only fail hours into a benchmark run; this walks their imports instead.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _bigkern_imports() -> list[tuple[str, str, str]]:
    found = []
    for path in sorted(BENCHMARKS.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("bigkern"):
                found += [(path.name, node.module, alias.name) for alias in node.names]
            elif isinstance(node, ast.Import):
                found += [(path.name, alias.name, "") for alias in node.names
                          if alias.name.startswith("bigkern")]
    return found


@pytest.mark.skipif(not BENCHMARKS.is_dir(), reason="benchmarks/ is not next to tests/")
@pytest.mark.parametrize(("script", "module", "name"), _bigkern_imports())
def test_benchmark_import_exists(script: str, module: str, name: str) -> None:
    mod = importlib.import_module(module)
    if name and not hasattr(mod, name):
        is_package = hasattr(mod, "__path__")
        assert is_package and importlib.util.find_spec(f"{module}.{name}") is not None, (
            f"benchmarks/{script} imports {name!r} from {module}, which has no such name")
