"""Names imported on first use (PEP 562 module ``__getattr__``), and the public names' table.

``bigkern.scenes``, ``bigkern.models``, ``bigkern.datasets`` and ``bigkern.features``
name each public name's submodule in a table and import it when the name is first
read (:func:`lazy_names`), so that a light module of the package (the registry, the
feature names) loads without the heavy ones.

The facade, ``bigkern/__init__.py``, keeps its public names in one table of
:class:`Section` rows; :func:`facade_sources`, :func:`stub_text` and :func:`api_page`
make from it the lazy imports and ``__all__``, the type stubs
(``bigkern/__init__.pyi``) and the API reference (``docs/api/index.md``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Section", "api_page", "facade_sources", "lazy_names", "stub_text"]


def lazy_names(package: str, homes: Mapping[str, str]
               ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package`` for the names of ``homes``.

    Parameters
    ----------
    package : str
        The package's full name (``"bigkern.scenes"``).
    homes : mapping of str to str
        Each public name → the submodule of ``package`` it lives in (``"reading"``).

    Examples
    --------
    The last lines of a package's ``__init__.py``::

        __getattr__, __dir__ = lazy_names(__name__, {"open_scenes": "reading"})
    """
    module = importlib.import_module(package)

    def __getattr__(name: str) -> Any:
        if name not in homes:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{homes[name]}"), name)
        setattr(module, name, value)  # once imported, an ordinary attribute
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(module), *homes})

    return __getattr__, __dir__


@dataclass(frozen=True)
class Section:
    """One section of the public names: a heading of the API reference and its names.

    Attributes
    ----------
    title : str
        The heading in ``docs/api/index.md``.
    names : mapping of str to str
        Each name → the module it is defined in, in the order the page lists them.
    intro : str
        A paragraph under the heading, or nothing.
    module : str
        The module whose attributes the names are: ``"bigkern"`` for the public
        names (``bigkern.open_scenes``); a submodule (``"bigkern.config"``) for a
        section that documents that submodule's own functions.

    Examples
    --------
    >>> from bigkern.lazy import Section
    >>> Section("Clusters", {"connect": "bigkern.cluster.client"}).names["connect"]
    'bigkern.cluster.client'
    """

    title: str
    names: Mapping[str, str]
    intro: str = ""
    module: str = "bigkern"


def facade_sources(sections: Iterable[Section]) -> dict[str, str]:
    """Each public name of the facade → its module, from the sections of ``module="bigkern"``.

    Raises
    ------
    ValueError
        A name is listed twice.
    """
    sources: dict[str, str] = {}
    for section in sections:
        if section.module != "bigkern":
            continue
        for name, module in section.names.items():
            if name in sources:
                raise ValueError(f"the public name {name!r} is listed twice")
            sources[name] = module
    return sources


def stub_text(sections: Iterable[Section], submodules: Iterable[str]) -> str:
    """The text of ``bigkern/__init__.pyi``: every public name imported eagerly, for type
    checkers and IDEs (the facade itself imports each on first use).

    Examples
    --------
    >>> text = stub_text([Section("Clusters", {"connect": "bigkern.cluster.client"})],
    ...                  ["config"])
    >>> "from bigkern.cluster.client import connect as connect" in text
    True
    """
    sources = facade_sources(sections)
    subs = sorted(submodules)
    by_module: dict[str, list[str]] = {}
    for name, module in sources.items():
        by_module.setdefault(module, []).append(name)
    lines = ['"""Type stubs of the public names; made from the table in bigkern/__init__.py."""',
             "", *(f"from bigkern import {s} as {s}" for s in subs)]
    for module in sorted(by_module):
        for name in sorted(by_module[module]):
            lines.append(f"from {module} import {name} as {name}")
    lines.append("from bigkern.version import __version__ as __version__")
    lines += ["", "__all__ = ["]
    lines += [f'    "{name}",' for name in sorted([*sources, *subs, "__version__"])]
    lines.append("]")
    return "\n".join(lines) + "\n"


def api_page(sections: Iterable[Section], preamble: str) -> str:
    """The text of ``docs/api/index.md``: ``preamble``, then one autosummary per section.

    Examples
    --------
    >>> page = api_page([Section("Clusters", {"connect": "bigkern.cluster.client"})], "# API")
    >>> page.splitlines()[2], page.splitlines()[-2].strip()
    ('## Clusters', 'connect')
    """
    parts = [preamble.rstrip("\n"), ""]
    current = "bigkern"
    for section in sections:
        parts += [f"## {section.title}", ""]
        if section.intro:
            parts += [section.intro.rstrip("\n"), ""]
        parts.append("```{eval-rst}")
        if section.module != current:
            parts += [f".. currentmodule:: {section.module}", ""]
            current = section.module
        parts += [".. autosummary::", "   :toctree: generated", "   :nosignatures:", ""]
        parts += [f"   {name}" for name in section.names]
        parts += ["```", ""]
    return "\n".join(parts)
