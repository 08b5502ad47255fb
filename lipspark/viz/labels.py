"""What each node of a drawing says, in the notation of the Lipstick paper's figures (§3, Figures 2 and 3).

Tokens by their name (``Cars:C2``), operators by their symbol (``·``, ``+``, ``δ``, ``⊗``),
aggregates and black boxes by their function and value (``Count=2``, ``calcBid=19500.0``),
constants by their value, module invocations by their token ``M_<module>[<execution>]``,
zoomed-out modules by the module (``dealer1 [z]``), and module input, state and output nodes by
their type, relation and tuple (``[s] Cars(C2, Civic)``; a value of one column:
``[o] Bids.Amount=19500.0``). After a deletion a changed value reads ``before→after``
(``Count 2→1``; ``?`` where the graph cannot recompute it). A label is one line of at most
:data:`LABEL_CHARS` characters, cut with ``…``: :func:`node_label` gives the whole text (the
drawing shows it in the node's hover title) and :func:`shorten` the line drawn. Control and
format characters are escaped (``\\n``), so a value cannot break the line or reorder its text.

Labels are plain text: the drawing puts them on a canvas with ``fillText``, never as HTML.

>>> import pandas as pd
>>> from lipspark.graph.index import GraphIndex
>>> g = GraphIndex.build(pd.DataFrame({"id": [1, 2, 3], "kind": ["p", "v", "p"], "op": ["token", "count", "state"],
...                                    "label": ["Cars:C2", "Count", "·"], "value": [None, 2.0, None], "type": [None, None, "s"],
...                                    "relation": [None, None, "Cars"], "tuple": [None, None, '{"CarId": "C2", "Model": "Civic"}']}),
...                      pd.DataFrame({"src": [1], "dst": [3]}))
>>> [node_label(g, p, g.attrs(p)) for p in range(3)]
['Cars:C2', 'Count=2', '[s] Cars(C2, Civic)']
>>> node_label(g, 1, g.attrs(1), change=(2, 1))
'Count 2→1'
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from lipspark.graph.expression import token_name
from lipspark.graph.index import NODE_TYPES, GraphIndex
from lipspark.query.edgedata import EdgeData
from lipspark.query.text import printable
from lipspark.vocabulary import UNKNOWN, Op

__all__ = ["LABEL_CHARS", "node_label", "edge_label", "shorten", "shown"]

#: the longest label drawn; a longer one is cut with "…" (the hover title has all of it)
LABEL_CHARS = 30
#: the longest value inside a label (``Sum=…``)
_VALUE_CHARS = 16


def _plain(v: Any) -> Any:
    if v is None or (isinstance(v, float) and np.isnan(v)) or str(v) == "<NA>":
        return None
    return v.item() if hasattr(v, "item") else v


def _whole(v: Any) -> Any:
    return int(v) if isinstance(v, float) and v.is_integer() else v


def shown(v: Any, limit: int = _VALUE_CHARS) -> str:
    """A value as a label shows it: ``?`` for a value the graph cannot tell (a what-if through
    a black box), ``null`` for none, long text cut.

    >>> shown(19500.0), shown(None), shown("x" * 40)
    ('19500.0', 'null', 'xxxxxxxxxxxxxxx…')
    """
    if v is UNKNOWN:  # a what-if value the graph cannot recompute (never a data value "unknown")
        return "?"
    v = _plain(v)
    if v is None:
        return "null"
    s = printable(str(v))
    return s if len(s) <= limit else s[:limit - 1] + "…"


def shorten(label: str, limit: int = LABEL_CHARS) -> str:
    """The line drawn for ``label``: at most ``limit`` characters, cut with ``…``.

    >>> shorten("[s] Cars(D1C000004, Audi A6, 2019, blue)")
    '[s] Cars(D1C000004, Audi A6, …'
    """
    return label if len(label) <= limit else label[:limit - 1] + "…"


def _tuple_text(t: Any) -> str:
    if isinstance(t, str):
        try:
            t = json.loads(t)
        except ValueError:
            return printable(t)
    if isinstance(t, dict):
        return ", ".join("null" if v is None else printable(str(v)) for v in t.values())
    return "" if t is None else printable(str(t))


def node_label(g: GraphIndex, p: int, row: dict[str, Any], change: tuple[Any, Any] | None = None) -> str:
    """The whole label of the node at position ``p`` of ``g`` (``row``: its attributes, as
    :meth:`GraphIndex.attrs` or a row of :meth:`GraphIndex.frame` gives them); ``change``: its
    value before and after a deletion, when the deletion changed it."""
    op = Op(int(g.op[p]))
    t = NODE_TYPES[g.type_code[p]]
    label = printable(g.label(p))
    value = _plain(row.get("value"))
    name: str
    if op == Op.TOKEN:
        return label
    if op == Op.INVOCATION:
        return printable(token_name(g, p))
    if op == Op.ZOOM:
        return f"{printable(str(_plain(row.get('module')) or label))} [z]"
    if op.is_boundary:
        relation = printable(str(_plain(row.get("relation")) or ""))
        column = _plain(row.get("column"))
        name = (f"[{t}] " if t else "") + (relation or op.label)
        if column is not None:
            name += "." + printable(str(column))
        elif not g.is_v[p] and _plain(row.get("tuple")) is not None:
            name += f"({_tuple_text(_plain(row.get('tuple')))})"
        if not g.is_v[p]:
            return name
    elif op in (Op.TIMES, Op.PLUS, Op.DELTA, Op.TENSOR, Op.MONUS):
        return op.label
    elif op == Op.CONDITION and change is not None:  # its outcome, not a value: say it may differ
        return f"{label or op.label} ?"
    elif op == Op.CONSTANT:  # its label is its value as captured (``1``, not ``1.0``)
        return (label or shown(value)) if change is None else f"{shown(change[0])}→{shown(change[1])}"
    else:  # aggregates, black boxes, conditions: the function, then the value it has
        name = label or op.label
        if op == Op.COUNT:  # a count is a whole number, though a value column may hold it as 2.0
            value = _whole(value)
            change = None if change is None else (_whole(change[0]), _whole(change[1]))
    if change is not None:
        return f"{name} {shown(change[0])}→{shown(change[1])}"
    if value is None or not g.is_v[p]:
        return name
    return f"{name}={shown(value)}"


def edge_label(label: str, edges: Sequence[EdgeData]) -> str:
    """A zoomed-out invocation's label with the data on its output edges: each output relation,
    its row count and its change since the previous execution (rows added and removed; ``new``
    where there is none), compact: the drawing cuts a label at :data:`LABEL_CHARS` characters.

    >>> e = EdgeData("output", "Bids1", "dealer1", "dealer1_bid", 2, 7, "d", False, rows=412, previous=410, added=3, removed=1)
    >>> edge_label("dealer1 [z]", [e])
    'dealer1 [z] Bids1 412 +3−1'
    """
    outs = [f"{printable(e.relation)} {e.rows} {e.change().replace(' ', '')}" for e in edges if e.kind == "output"]
    return f"{label} {', '.join(outs)}" if outs else label
