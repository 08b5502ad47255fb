"""A provenance graph as GraphML (for Gephi, yEd, Cytoscape, networkx, igraph ...).

:func:`write_graphml` writes the graph of :meth:`GraphIndex.to_networkx` with
``networkx.write_graphml``: node ids are the graph's node ids, every node attribute that is set is
written (``op``, the node's operator, by name: ``token``, ``times``, ``delta``, ``black_box``,
``count`` …; plus ``operation``, the semiring operation of
:func:`lipspark.export.prov.operations`), and the
edge multiset is kept as parallel edges with ids ``e0, e1, …``. GraphML types each attribute
once per key, so :func:`graphml_graph` makes every attribute typable first: an attribute whose
values are all ``int`` is ``long``, all ``float`` (or ``int`` and ``float``) ``double``, all
``bool`` ``boolean``; any other mix, and any other type, is written as text (JSON for lists and
dicts). Missing values are left out. Characters XML cannot carry become U+FFFD.

>>> import os, tempfile, pandas as pd, networkx as nx
>>> from lipspark.graph.index import GraphIndex
>>> g = GraphIndex.build(pd.DataFrame({"id": [1, 2, 3], "kind": ["p", "v", "v"], "op": ["token", "constant", "⊗"],
...                                    "label": ["R:a", "1", "⊗"],
...                                    "value": pd.Series([None, 1, None], dtype=object)}),
...                      pd.DataFrame({"src": [1, 1, 2], "dst": [3, 3, 3]}))
>>> path = os.path.join(tempfile.mkdtemp(), "g.graphml")
>>> write_graphml(g, path)
(3, 3)
>>> back = nx.read_graphml(path, node_type=int)
>>> back.number_of_edges(1, 3), back.nodes[2]["value"], back.nodes[3]["operation"], back.nodes[3]["op"]
(2, 1, 'tensor', 'tensor')
"""
from __future__ import annotations

import json
import math
import os
import re
from typing import Any

import numpy as np

from lipspark.export._files import atomic_open, check_size
from lipspark.export.prov import _column, _selection, operations
from lipspark.graph.index import NODE_COLUMNS, GraphIndex
from lipspark.vocabulary import UNKNOWN, Op

__all__ = ["graphml_graph", "write_graphml"]

_XML_BAD = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_LONG = (-(2**63), 2**63 - 1)


def _kind(v: Any) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int" if _LONG[0] <= v <= _LONG[1] else "text"
    if isinstance(v, float):
        return "float"
    return "text"


def _text(v: Any) -> str:
    if isinstance(v, str):
        s = v
    elif isinstance(v, (bool, list, tuple, dict)) or v is None:
        s = json.dumps(v, default=str)
    elif isinstance(v, float) and not math.isfinite(v):
        s = "NaN" if math.isnan(v) else ("INF" if v > 0 else "-INF")
    else:
        s = str(v)
    return _XML_BAD.sub("\ufffd", s)


def _typed(attrs: dict[str, dict[Any, Any]]) -> dict[str, dict[Any, Any]]:
    """Per attribute name ``{owner: value}`` → one GraphML type per attribute."""
    out = {}
    for name, values in attrs.items():
        kinds = {_kind(v) for v in values.values()}
        if kinds in ({"int"}, {"bool"}):
            out[name] = values
        elif kinds <= {"int", "float"}:
            out[name] = {k: float(v) for k, v in values.items()}
        else:
            out[name] = {k: _text(v) for k, v in values.items()}
    return out


def graphml_graph(graph: GraphIndex, positions: Any = None) -> Any:
    """The graph (or the nodes at ``positions`` and the edges between them) as a
    :class:`networkx.MultiDiGraph` that ``networkx.write_graphml`` can write and read back.

    Parameters
    ----------
    graph
        A graph or a view of one.
    positions
        Node positions (not ids) or a boolean mask; ``None``: every node.

    Returns
    -------
    networkx.MultiDiGraph
        Nodes keyed by node id with GraphML-typable attributes; one edge per edge of the
        multiset, keyed ``e0, e1, …``; graph attribute ``zoomed_out`` when the view has zoomed
        out modules.

    Examples
    --------
    >>> import pandas as pd
    >>> g = GraphIndex.build(pd.DataFrame({"id": [1, 2], "kind": "v", "op": "constant", "label": ["x", "y"], "value": [1, "a"]}),
    ...                      pd.DataFrame({"src": [1], "dst": [2]}))
    >>> h = graphml_graph(g)
    >>> h.nodes[1]["value"], h.nodes[2]["value"], list(h.edges(keys=True))
    ('1', 'a', [(1, 2, 'e0')])
    """
    import networkx as nx

    sel = _selection(graph, positions)
    ids = graph.ids[sel].tolist()
    # the attributes of GraphIndex.to_networkx(sel), read a column at a time (to_networkx reads a
    # row at a time: ~20 s for 200,000 nodes)
    per_attr: dict[str, dict[Any, Any]] = {}
    for c in NODE_COLUMNS:
        if c not in ("id", "op"):
            per_attr[c] = {node: v for node, v in zip(ids, _column(graph, c, sel)) if v is not None}
    # a value a deletion made unknown (a black box over a changed value): no value, what_if="unknown"
    unknown = [node for node, v in per_attr.get("value", {}).items() if v is UNKNOWN]
    for node in unknown:
        del per_attr["value"][node]
    per_attr["what_if"] = {node: "unknown" for node in unknown}
    per_attr["op"] = {node: Op(int(code)).name.lower() for node, code in zip(ids, graph.op[sel].tolist())}
    per_attr["operation"] = {node: op for node, op in zip(ids, operations(graph, sel)) if op is not None}
    typed = _typed({k: v for k, v in per_attr.items() if v})
    out = nx.MultiDiGraph()
    if graph.zoom:
        out.graph["zoomed_out"] = _text(",".join(graph.zoom))
    for node in ids:
        out.add_node(node, **{k: vals[node] for k, vals in typed.items() if node in vals})
    member = np.zeros(len(graph), dtype=bool)
    member[sel] = True
    em = member[graph.src] & member[graph.dst]
    edges = zip(graph.ids[graph.src[em]].tolist(), graph.ids[graph.dst[em]].tolist())
    out.add_edges_from((u, v, f"e{i}") for i, (u, v) in enumerate(edges))
    return out


def write_graphml(graph: GraphIndex, path: str | os.PathLike[str], positions: Any = None, *,
                  max_nodes: int | None = None) -> tuple[int, int]:
    """Write the graph (or a selection) as GraphML, atomically (nothing is written on error).

    Parameters
    ----------
    graph, positions
        As for :func:`graphml_graph`.
    path
        The output file (replaced if it exists).
    max_nodes
        Refuse (:class:`~lipspark.errors.LipsparkError`) more nodes than this; ``None``: no limit.

    Returns
    -------
    tuple of int
        The numbers of nodes and edges written.

    Examples
    --------
    >>> import os, tempfile, pandas as pd, networkx as nx
    >>> g = GraphIndex.build(pd.DataFrame({"id": [-5, 2], "kind": "p", "op": ["token", "·"], "label": ["R:a", "·"]}),
    ...                      pd.DataFrame({"src": [-5, -5], "dst": [2, 2]}))
    >>> path = os.path.join(tempfile.mkdtemp(), "g.graphml")
    >>> write_graphml(g, path)
    (2, 2)
    >>> sorted(nx.read_graphml(path, node_type=int).edges(keys=True))
    [(-5, 2, 'e0'), (-5, 2, 'e1')]
    """
    import networkx as nx

    sel = _selection(graph, positions)
    check_size(len(sel), max_nodes, "GraphML")
    g = graphml_graph(graph, sel)
    with atomic_open(path, "wb") as fh:
        nx.write_graphml(g, fh)
    return g.number_of_nodes(), g.number_of_edges()

