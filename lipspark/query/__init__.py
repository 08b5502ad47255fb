"""The provenance query layer: ZoomOut/ZoomIn, deletion propagation, traces, polynomials.

Python API (free functions over a :class:`~lipspark.graph.index.GraphIndex`, all by node id):

>>> import pandas as pd
>>> from lipspark.graph.index import GraphIndex
>>> from lipspark.query import delete, ancestors, polynomial
>>> g = GraphIndex.build(pd.DataFrame({"id": [1, 2, 3], "kind": "p", "op": ["token", "token", "·"],
...                                    "label": ["R:a", "R:b", "·"], "relation": ["R", "R", None]}),
...                      pd.DataFrame({"src": [1, 2], "dst": [3, 3]}))
>>> str(polynomial(g, 3)), ancestors(g, 3).tolist(), delete(g, [1]).removed_ids.tolist()
('R:a·R:b', [1, 2], [1, 3])

The query language (``docs/query-language.md``) runs in a :class:`Session`:

>>> Session(g).run("depends node 3 on node 2")[0].rows[0]["depends"]
True
"""
from __future__ import annotations

from lipspark.graph.expression import evaluate, expanded, polynomial, provenance_mapping
from lipspark.graph.index import GraphIndex
from lipspark.query.deletion import DeletionResult, ValueChange, delete
from lipspark.query.diff import ExecutionDiff, TupleDiff, diff
from lipspark.query.engine import Result, Session
from lipspark.query.parser import parse
from lipspark.query.prediction import Prediction, predict, what_if
from lipspark.query.selector import resolve
from lipspark.query.trace import ancestors, depends, descendants, subgraph
from lipspark.query.where import WhereRow, trace_column, where_provenance
from lipspark.query.zoom import intermediate, zoom_in, zoom_out

__all__ = [
    "GraphIndex", "Session", "Result", "parse", "resolve",
    "zoom_out", "zoom_in", "intermediate",
    "delete", "DeletionResult", "ValueChange", "what_if", "predict", "Prediction",
    "ancestors", "descendants", "subgraph", "depends",
    "polynomial", "expanded", "evaluate", "provenance_mapping",
    "where_provenance", "trace_column", "WhereRow",
    "diff", "ExecutionDiff", "TupleDiff",
]
