"""The version of bigkern, at the bottom of the import graph.

Any module may import it (stores record the version that wrote them) and
import nothing else of bigkern with it.
"""

__all__ = ["__version__"]

__version__ = "0.1.0"
