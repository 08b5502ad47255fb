"""The provenance graph as it is read: expansion of stored segments, the in-memory index, and
the provenance expressions its nodes encode. Nothing here imports pyspark (recording the graph
is capture's business).

>>> from lipspark.graph import GraphIndex, polynomial
>>> GraphIndex.__name__, polynomial.__module__
('GraphIndex', 'lipspark.graph.expression')
"""
from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from lipspark.graph.expand import expand_segments
    from lipspark.graph.expression import evaluate, polynomial, token_name
    from lipspark.graph.index import GraphIndex

__all__ = ["GraphIndex", "expand_segments", "polynomial", "evaluate", "token_name"]

# imported on first use: a query reads a mapped index and never needs expansion (pandas, pyarrow)
_WHERE = {"GraphIndex": "index", "expand_segments": "expand", "polynomial": "expression", "evaluate": "expression", "token_name": "expression"}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(import_module(f"lipspark.graph.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'lipspark.graph' has no attribute {name!r}")
