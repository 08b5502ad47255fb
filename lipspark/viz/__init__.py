"""Interactive drawings of provenance graphs, query results and deletions (pyvis / vis.js).

:func:`render` draws and optionally writes a self-contained HTML page, :func:`to_html` returns
the page, :func:`repr_html` wraps it in an ``<iframe>`` for Jupyter; :func:`node_label` says what a
node's label is (:mod:`lipspark.viz.labels`), :func:`layout` where it goes (:mod:`lipspark.viz.layout`).
See ``docs/viz.md``.
Importing this package makes graphs and query results draw themselves in Jupyter: it sets
:attr:`GraphIndex.html_renderer <lipspark.graph.index.GraphIndex.html_renderer>` and
:attr:`Result.html_renderer <lipspark.query.engine.Result.html_renderer>` (the graph and query
layers do not import the drawing layer).

>>> import pandas as pd
>>> from lipspark.graph.index import GraphIndex
>>> g = GraphIndex.build(pd.DataFrame({"id": [1, 2], "kind": ["p", "v"], "op": ["token", "constant"], "label": ["R:a", "1"],
...                                    "value": [None, 1]}),
...                      pd.DataFrame({"src": [1], "dst": [2]}))
>>> [n["shape"] for n in render(g).nodes]
['ellipse', 'box']
>>> g._repr_html_().startswith("<iframe")
True
"""
from __future__ import annotations

from lipspark.graph.index import GraphIndex
from lipspark.query.engine import Result
from lipspark.viz.labels import node_label
from lipspark.viz.layout import Layout, layout, workflow_ranks
from lipspark.viz.render import (
    DrawingInfo,
    levels,
    module_colours,
    render,
    repr_html,
    to_html,
)

GraphIndex.html_renderer = repr_html
Result.html_renderer = repr_html

__all__ = ["DrawingInfo", "Layout", "layout", "levels", "module_colours", "node_label", "render", "repr_html", "to_html", "workflow_ranks"]
