"""The version of bigkern, at the bottom of the import graph.

Any module may import it (stores record the version that wrote them) without
importing the :mod:`bigkern` facade, which imports every package.
"""

__all__ = ["__version__"]

__version__ = "0.1.0"
