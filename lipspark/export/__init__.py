"""Export provenance graphs to standard formats: W3C PROV (PROV-JSON, PROV-N) and GraphML.

* :func:`to_prov` / :func:`write_prov` — a :class:`prov.model.ProvDocument` (entities for tuple
  and value nodes, activities for module invocations, ``wasDerivedFrom`` labelled with the
  semiring operation, ``used``/``wasGeneratedBy`` at module boundaries);
* :func:`write_graphml` — the graph as it is (node attributes, parallel edges) for graph tools.

Both write atomically and take an optional selection of node positions. See docs/export.md;
``lipspark export GRAPH --format prov-json|prov-n|graphml -o FILE`` on the command line.

>>> import os, tempfile, pandas as pd
>>> from lipspark.graph.index import GraphIndex
>>> g = GraphIndex.build(pd.DataFrame({"id": [1, 2], "kind": "p", "op": ["token", "δ"], "label": ["R:a", "δ"]}),
...                      pd.DataFrame({"src": [1, 1], "dst": [2, 2]}))
>>> d = tempfile.mkdtemp()
>>> write_prov(g, os.path.join(d, "g.provn"), format="provn")
3
>>> write_graphml(g, os.path.join(d, "g.graphml"))
(2, 2)
>>> sorted(os.listdir(d))
['g.graphml', 'g.provn']
"""
from __future__ import annotations

from lipspark.export.graphml import graphml_graph, write_graphml
from lipspark.export.prov import (
    LPS_NAMESPACE,
    MAX_NODES,
    OPERATIONS,
    operations,
    to_prov,
    write_prov,
)

__all__ = ["LPS_NAMESPACE", "MAX_NODES", "OPERATIONS", "graphml_graph", "operations", "to_prov", "write_graphml", "write_prov"]
