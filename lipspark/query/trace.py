"""Backward and forward traces, subgraph and dependency queries (sections 4.3 and 5.1).

* ``ancestors``: every node with a path into the node (its provenance, down to base tuples);
* ``descendants``: every node the node flows into;
* ``subgraph``: ancestors and descendants of the node, and the siblings of its descendants
  (the other nodes with an edge into a descendant: what the descendants were derived from
  together with it), as in Lipstick's Query Processor;
* ``depends``: node ``n`` depends on ``n′`` iff ``n`` is gone after deleting ``n′`` (Def. 4.2).

All take and return node ids and touch only the nodes of their answer (plus, for ``depends``,
the descendants of the deleted nodes).

>>> import pandas as pd
>>> from lipspark.graph.index import GraphIndex
>>> g = GraphIndex.build(pd.DataFrame({"id": [1, 2, 3, 4], "kind": "p", "op": ["token", "token", "·", "+"],
...                                    "label": ["R:a", "R:b", "·", "+"]}),
...                      pd.DataFrame({"src": [1, 2, 1, 3], "dst": [3, 3, 4, 4]}))
>>> subgraph(g, 2).tolist()
[1, 2, 3, 4]
>>> depends(g, 4, [2]), depends(g, 3, [2])
(False, True)
"""
from __future__ import annotations

from typing import Iterable

import numpy as np

from lipspark.graph.index import GraphIndex
from lipspark.query.deletion import propagate

__all__ = ["ancestors", "descendants", "subgraph", "depends", "subgraph_positions"]


def ancestors(g: GraphIndex, node: int) -> np.ndarray:
    """Ids of the nodes with a path to ``node`` (the backward trace), sorted."""
    return np.sort(g.ids[g.ancestors(g.position(node))])


def descendants(g: GraphIndex, node: int) -> np.ndarray:
    """Ids of the nodes reachable from ``node`` (the forward trace), sorted."""
    return np.sort(g.ids[g.descendants(g.position(node))])


def subgraph_positions(g: GraphIndex, seeds: Iterable[int]) -> np.ndarray:
    """Positions of the subgraph of the nodes at positions ``seeds`` (see module docstring)."""
    seeds = np.unique(np.asarray(list(seeds), dtype=np.int64))
    up = g.ancestors(seeds)
    down = g.descendants(seeds)
    siblings = g.gather_children(down)
    return np.unique(np.concatenate([seeds, up, down, siblings]))


def subgraph(g: GraphIndex, node: int) -> np.ndarray:
    """Ids of the subgraph of ``node``: ancestors, descendants and siblings of descendants."""
    return np.sort(g.ids[subgraph_positions(g, [g.position(node)])])


def depends(g: GraphIndex, node: int, on: Iterable[int]) -> bool:
    """True iff ``node`` is removed when the nodes ``on`` are deleted (a dependency query)."""
    removed = propagate(g, g.positions(on))
    return bool(removed[g.position(node)])
