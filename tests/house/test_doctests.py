"""The Examples of every public name's docstring run as doctests.

The public names are the keys of ``bigkern._SOURCES``. Each is one test: its
docstring and, for a class, those of its public methods, run by the standard
library's :mod:`doctest` with ``NORMALIZE_WHITESPACE`` and ``ELLIPSIS``, each
example in a namespace of its own (it imports what it uses, as a reader would).
A constant's examples are its attribute docstring, the string after its
assignment in the module that defines it.

Bigkern's warnings are errors while the examples run: an example that shows a
warning on purpose records it with ``warnings.catch_warnings(record=True)``.
"""

from __future__ import annotations

import ast
import doctest
import inspect
import re
import sys
import warnings
from typing import Any

import pytest

import bigkern

OPTIONS = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS

#: A numpydoc Examples section: the heading, its underline, then at least one example.
EXAMPLES = re.compile(r"^Examples\n-{8,}\n(?:.*\n)*?>>> ", re.MULTILINE)

#: Names whose examples take more than ~3 s even after the imports they share with the
#: others (``--durations``): plot_nystrom_spectrum draws its four panels twice and writes
#: a PNG (~2 s of it). The first examples to need numba or scikit-learn (BigkernWarning,
#: DataQualityError in this order) pay the import, 3-5 s, whichever they are.
SLOW = frozenset({"plot_nystrom_spectrum"})

PUBLIC = list(bigkern._SOURCES)


def _is_api(obj: Any) -> bool:
    """A function or class: what must show an example (exceptions and warnings need not)."""
    if inspect.isclass(obj):
        return not issubclass(obj, BaseException)
    return inspect.isroutine(obj)


def _attribute_docstring(name: str, value: Any) -> tuple[str, str, int]:
    """The string after ``name = …`` in the bigkern module that defines ``value``.

    Returns the docstring, the module's file and the docstring's line (0-based).
    """
    for module in list(sys.modules.values()):
        if not (getattr(module, "__name__", "").startswith("bigkern")
                and module.__dict__.get(name) is value and getattr(module, "__file__", None)):
            continue
        tree = ast.parse(inspect.getsource(module))
        for stmt, after in zip(tree.body, tree.body[1:], strict=False):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else (
                [stmt.target] if isinstance(stmt, ast.AnnAssign) else [])
            if (any(isinstance(t, ast.Name) and t.id == name for t in targets)
                    and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                    and isinstance(after.value.value, str)):
                return inspect.cleandoc(after.value.value), module.__file__, after.lineno - 1
    raise LookupError(f"no docstring after the assignment of {name} in a bigkern module")


def _is_public_member(test: doctest.DocTest, name: str) -> bool:
    """The object's own docstring, or one of its public (or special) members'."""
    if test.name == name:
        return True
    last = test.name.rsplit(".", 1)[-1]
    return not last.startswith("_") or (last.startswith("__") and last.endswith("__"))


def _doctests(name: str) -> list[doctest.DocTest]:
    """The doctests of a public name, each with empty globals."""
    obj = getattr(bigkern, name)
    if inspect.isclass(obj) or inspect.isroutine(obj):
        finder = doctest.DocTestFinder(recurse=True, exclude_empty=True)
        tests = finder.find(obj, name, module=inspect.getmodule(obj), globs={})
        return [t for t in tests if _is_public_member(t, name)]
    doc, filename, lineno = _attribute_docstring(name, obj)
    return [doctest.DocTestParser().get_doctest(doc, {}, name, filename, lineno)]


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n
                                  for n in PUBLIC])
def test_examples_run(name):
    tests = _doctests(name)
    assert tests, f"{name} has no docstring examples to run"
    runner = doctest.DocTestRunner(optionflags=OPTIONS)
    report: list[str] = []
    attempted = 0
    with warnings.catch_warnings():
        warnings.simplefilter("error", bigkern.BigkernWarning)
        for test in tests:
            attempted += runner.run(test, out=report.append).attempted
    assert runner.failures == 0, "".join(report)
    assert attempted, f"{name}: no example was run"


def test_every_public_function_and_class_has_examples():
    missing = [name for name in PUBLIC if _is_api(getattr(bigkern, name))
               and not EXAMPLES.search((inspect.getdoc(getattr(bigkern, name)) or "") + "\n")]
    assert not missing, (f"public functions and classes without a numpydoc Examples "
                         f"section (with a >>> example): {missing}")
