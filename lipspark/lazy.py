"""Names of a package imported on first use (PEP 562), so that importing the package imports
none of the modules behind them — pyspark above all — until a name is asked for.

>>> import types
>>> m = types.ModuleType("pkg")
>>> m.__getattr__, m.__dir__ = exports(m.__dict__, {"sqrt": "math"})
>>> m.sqrt(4.0), "sqrt" in m.__dir__()
(2.0, True)
"""
from __future__ import annotations

import importlib
from typing import Any, Callable, MutableMapping

__all__ = ["exports"]


def exports(namespace: MutableMapping[str, Any], homes: dict[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` of a package whose names ``homes`` (name →
    the module that defines it) are imported when first read, then kept in ``namespace``."""
    package = namespace.get("__name__", "package")

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *homes})

    return __getattr__, __dir__
