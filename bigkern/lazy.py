"""Packages that import their public names on first use (PEP 562 module ``__getattr__``).

``bigkern.io``, ``bigkern.models`` and ``bigkern.features`` name each public name's
submodule in a table and import it when the name is first read, so that a light
module of the package (the registry, paths and claims, the feature names) loads
without the heavy ones.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(package: str, homes: Mapping[str, str]
               ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package`` for the names of ``homes``.

    Parameters
    ----------
    package : str
        The package's full name (``"bigkern.io"``).
    homes : mapping of str to str
        Each public name → the submodule of ``package`` it lives in (``"scenes"``).

    Examples
    --------
    The last lines of a package's ``__init__.py``::

        __getattr__, __dir__ = lazy_names(__name__, {"open_scenes": "scenes"})
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
