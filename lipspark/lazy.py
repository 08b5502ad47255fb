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
import sys
import types
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

    _keep_exports_over_submodules(package, homes)
    return __getattr__, __dir__


def _keep_exports_over_submodules(package: str, homes: dict[str, str]) -> None:
    """A name the package exports from its submodule of the same name (``lipspark.workflow.run``,
    the function, defined in the module ``lipspark.workflow.run``) stays the export when the
    submodule is imported directly: Python sets the package's attribute to the submodule when it
    first loads it, which would make ``from lipspark.workflow import run`` give the module or the
    function depending on what was imported first. (``importlib.import_module`` and
    ``sys.modules`` still give the module.)"""
    module = sys.modules.get(package)
    shadowed = {name for name, home in homes.items() if home == f"{package}.{name}"}
    if module is None or not shadowed or type(module) is not types.ModuleType:
        return

    class _Package(types.ModuleType):
        def __setattr__(self, name: str, value: Any) -> None:
            if name in shadowed and isinstance(value, types.ModuleType) and value.__name__ == f"{package}.{name}":
                value = getattr(value, name)  # the submodule has run by now: its export is there
            super().__setattr__(name, value)

    module.__class__ = _Package
