"""The public names come from one table: ``__all__``, the lazy imports, the type stubs and
the API reference agree with ``bigkern.PUBLIC_NAMES`` and the model registry."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

import bigkern
from bigkern.lazy import Section, api_page, facade_sources, stub_text
from bigkern.models import registry

ROOT = Path(__file__).resolve().parents[2]
API_PAGE = ROOT / "docs" / "api" / "index.md"
STUBS = ROOT / "bigkern" / "__init__.pyi"
REMAKE = ("remake it: python -c 'import bigkern; from bigkern.lazy import {f}; "
          "print({f}(...), end=\"\")' (see tests/house/test_public_names.py)")


def test_all_is_the_table() -> None:
    names = facade_sources(bigkern.PUBLIC_NAMES)
    assert bigkern.__all__ == sorted([*names, *bigkern.SUBMODULES, "__version__"])


@pytest.mark.parametrize("section", bigkern.PUBLIC_NAMES, ids=lambda s: s.title)
def test_each_name_is_defined_in_the_module_the_table_names(section: Section) -> None:
    for name, module in section.names.items():
        value = getattr(importlib.import_module(module), name)
        if section.module == "bigkern":
            assert getattr(bigkern, name) is value
        else:
            assert getattr(importlib.import_module(section.module), name) is value
        home = getattr(value, "__module__", module)  # constants have no home of their own
        assert home == module, f"{name} is defined in {home}, the table says {module}"


def test_the_stubs_are_made_from_the_table() -> None:
    expected = stub_text(bigkern.PUBLIC_NAMES, bigkern.SUBMODULES)
    assert STUBS.read_text() == expected, REMAKE.format(f="stub_text")


def test_the_api_reference_is_made_from_the_table() -> None:
    page = API_PAGE.read_text()
    preamble = page[:page.index("\n## ") + 1]
    assert page == api_page(bigkern.PUBLIC_NAMES, preamble), REMAKE.format(f="api_page")


def test_every_estimator_of_the_registry_is_public_in_its_section() -> None:
    for spec in registry.specs():
        assert spec.section in registry.SECTIONS, spec.name
        assert spec.name in bigkern.__all__ and spec.name in bigkern.models.__all__
        section = next(s for s in bigkern.PUBLIC_NAMES
                       if s.title == registry.SECTIONS[spec.section])
        assert spec.name in section.names
        assert getattr(bigkern, spec.name) is spec.cls


def test_a_name_listed_twice_is_refused() -> None:
    twice = [Section("A", {"connect": "bigkern.cluster.client"}),
             Section("B", {"connect": "bigkern.cluster.client"})]
    with pytest.raises(ValueError, match="'connect' is listed twice"):
        facade_sources(twice)


def test_a_new_name_changes_the_stubs_and_the_page() -> None:
    more = (*bigkern.PUBLIC_NAMES, Section("Extra", {"new_name": "bigkern.extra"}))
    assert "new_name as new_name" in stub_text(more, bigkern.SUBMODULES)
    assert "## Extra" in api_page(more, "# API\n")
    assert STUBS.read_text() != stub_text(more, bigkern.SUBMODULES)
