"""Interactive drawings of provenance graphs, query results and deletions (pyvis / vis.js).

:func:`render` draws and optionally writes a self-contained HTML page, :func:`to_html` returns
the page, :func:`repr_html` wraps it in an ``<iframe>`` for Jupyter. See ``docs/viz.md``.

>>> import pandas as pd
>>> from lipspark.graph.index import GraphIndex
>>> g = GraphIndex.build(pd.DataFrame({"id": [1, 2], "kind": ["p", "v"], "label": ["R:a", "1"], "value": [None, 1]}),
...                      pd.DataFrame({"src": [1], "dst": [2]}))
>>> [n["shape"] for n in render(g).nodes]
['ellipse', 'box']
"""
from __future__ import annotations

from lipspark.viz.render import (
    DrawingInfo,
    levels,
    module_colours,
    render,
    repr_html,
    to_html,
)

__all__ = ["DrawingInfo", "levels", "module_colours", "render", "repr_html", "to_html"]
