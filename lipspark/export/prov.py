"""A provenance graph (or a view, or a part of one) as a W3C PROV document.

:func:`to_prov` maps a :class:`~lipspark.graph.index.GraphIndex` to a
:class:`prov.model.ProvDocument` (the W3C PROV data model as the ``prov`` package implements
it); :func:`write_prov` writes it as PROV-JSON or PROV-N. The mapping (see docs/export.md):

* every p-node and v-node is an entity ``lps:n<id>`` (``lps:n-123`` for a negative id), except
  module invocation nodes (operator INVOCATION, type ``m``) and zoomed-out modules (ZOOM, type
  ``z``), which are activities;
* an edge between two entities is ``wasDerivedFrom(derived, source)`` labelled with the semiring
  operation of the derived node (``lps:operation``: ``token``, ``times`` (·), ``plus`` (+),
  ``delta`` (δ), ``tensor`` (⊗), ``aggregate`` (with ``lps:aggregate``: Count/Sum/Min/Max/Avg),
  ``black_box``, ``constant``) and ``lps:multiplicity`` when the edge occurs more than once;
* an edge from an invocation to one of its input or state nodes is ``used(activity, entity)``, to
  an output node ``wasGeneratedBy(entity, activity)``; the intermediate nodes an invocation
  created (their ``invocation`` attribute) are ``wasGeneratedBy`` it as well;
* a zoomed-out module uses its inputs and generates its outputs the same way; edges the capture
  does not make are mapped by the kinds of their ends (activity → other entity:
  ``wasGeneratedBy``; entity → activity: ``used``; activity → activity: ``wasInformedBy``).

>>> import pandas as pd
>>> from lipspark.graph.index import GraphIndex
>>> g = GraphIndex.build(
...     pd.DataFrame({"id": [1, 2, -3], "kind": "p", "op": ["token", "token", "δ"], "label": ["Cars:C2", "Cars:C3", "δ"],
...                   "relation": ["Cars", "Cars", None]}),
...     pd.DataFrame({"src": [1, 1, 2], "dst": [-3, -3, -3]}))
>>> doc = to_prov(g)
>>> print(doc.get_provn())  # doctest: +NORMALIZE_WHITESPACE
document
  prefix lps <https://lipspark.invalid/ns#>
  entity(lps:n-3, [prov:label="δ", prov:type='lps:PNode', lps:kind="p", lps:operation="delta"])
  entity(lps:n1, [prov:label="Cars:C2", prov:type='lps:PNode', lps:kind="p", lps:operation="token", lps:relation="Cars"])
  entity(lps:n2, [prov:label="Cars:C3", prov:type='lps:PNode', lps:kind="p", lps:operation="token", lps:relation="Cars"])
  wasDerivedFrom(lps:n-3, lps:n1, -, -, -, [lps:operation="delta", lps:multiplicity=2])
  wasDerivedFrom(lps:n-3, lps:n2, -, -, -, [lps:operation="delta"])
endDocument
"""
from __future__ import annotations

import datetime
import decimal
import json
import math
import os
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from lipspark.errors import LipsparkError
from lipspark.export._files import atomic_open, check_size
from lipspark.graph.index import NODE_TYPES, GraphIndex
from lipspark.vocabulary import AGGREGATE_OPS, UNKNOWN, Op

if TYPE_CHECKING:  # pragma: no cover
    from prov.model import ProvDocument

__all__ = ["LPS_NAMESPACE", "LPS_PREFIX", "MAX_NODES", "OPERATIONS", "operations", "to_prov", "write_prov"]

#: The namespace of lipspark's PROV identifiers and attributes.
LPS_NAMESPACE = "https://lipspark.invalid/ns#"
LPS_PREFIX = "lps"
#: Default refusal threshold of :func:`write_prov` (PROV documents are built in memory).
MAX_NODES = 200_000
#: The ``lps:operation`` values: the semiring operation a node applies to its children.
OPERATIONS = ("token", "times", "plus", "delta", "tensor", "aggregate", "black_box", "constant", "condition", "monus",
              "add", "multiply", "negate", "inverse", "positive", "zero", "and", "or", "not", "in_group")

#: The operation of each node operator; invocations and zoomed-out modules are activities (None).
_OPERATION: dict[Op, str | None] = {
    Op.TOKEN: "token", Op.INVOCATION: None, Op.ZOOM: None, Op.TIMES: "times", Op.PLUS: "plus", Op.DELTA: "delta",
    Op.BLACK_BOX: "black_box", Op.INPUT: "times", Op.STATE: "times", Op.OUTPUT: "times", Op.TENSOR: "tensor",
    Op.CONSTANT: "constant", Op.CONDITION: "condition", Op.MONUS: "monus", **{o: "aggregate" for o in AGGREGATE_OPS},
    Op.ADD: "add", Op.MULTIPLY: "multiply", Op.NEGATE: "negate", Op.INVERSE: "inverse",
    Op.POSITIVE: "positive", Op.ZERO: "zero", Op.AND: "and", Op.OR: "or", Op.NOT: "not", Op.IN_GROUP: "in_group",
}
_OPERATION_BY_CODE = np.array([None] + [_OPERATION[Op(c)] for c in range(1, max(Op) + 1)], dtype=object)
_ACTIVITY = (int(Op.INVOCATION), int(Op.ZOOM))
_USED = (int(Op.INPUT), int(Op.STATE))


def operations(graph: GraphIndex, positions: np.ndarray | None = None) -> list[str | None]:
    """The semiring operation of the nodes at ``positions`` (all by default), ``None`` for
    invocation and zoom nodes, from each node's operator (``graph.op``), never its label.

    TIMES and the module boundary nodes (INPUT, STATE, OUTPUT: products with the invocation)
    are ``times``; PLUS ``plus``; DELTA ``delta``; BLACK_BOX (a relation- or value-level UDF,
    whatever it is called) ``black_box``; TENSOR ``tensor``; COUNT … AVG ``aggregate``;
    TOKEN ``token``; CONSTANT ``constant``; CONDITION (a filter, join or grouping over values)
    ``condition``; MONUS ``monus``; the arithmetic of a formula over aggregates ``add``,
    ``multiply``, ``negate``, ``inverse``; a filter's per-row tests ``positive``, ``zero``,
    ``and``, ``or``, ``not``.

    >>> import pandas as pd
    >>> g = GraphIndex.build(pd.DataFrame({"id": [1, 2, 3, 4, 5], "kind": ["p", "v", "v", "v", "v"],
    ...                                    "op": ["token", "constant", "⊗", "sum", "black_box"],
    ...                                    "label": ["R:a", "1", "⊗", "Sum", "Max"]}),
    ...                      pd.DataFrame({"src": [1, 2, 3, 1], "dst": [3, 3, 4, 5]}))
    >>> operations(g)
    ['token', 'constant', 'tensor', 'aggregate', 'black_box']
    """
    sel = np.arange(len(graph)) if positions is None else np.asarray(positions, dtype=np.int64)
    return list(_OPERATION_BY_CODE[graph.op[sel]])


def _selection(graph: GraphIndex, positions: Any) -> np.ndarray:
    if positions is None:
        return np.arange(len(graph), dtype=np.int64)
    sel = np.asarray(positions)
    if sel.dtype == bool:
        if len(sel) != len(graph):
            raise LipsparkError(f"a boolean selection must have one entry per node ({len(graph)}), found {len(sel)}")
        return np.flatnonzero(sel)
    sel = np.unique(sel.astype(np.int64, copy=False))
    if len(sel) and (sel[0] < 0 or sel[-1] >= len(graph)):
        raise LipsparkError(f"positions must lie in 0..{len(graph) - 1} (node positions, not ids), found {int(sel[0])}..{int(sel[-1])}")
    return sel


def _column(graph: GraphIndex, name: str, sel: np.ndarray) -> list[Any]:
    """Plain Python values of a node column at ``sel`` (missing: None)."""
    col = graph.column(name, sel)
    out: list[Any] = []
    for v in col.tolist():
        if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
            out.append(None)
        elif isinstance(v, np.generic):
            out.append(v.item())
        else:
            out.append(v)
    return out


def _literal(v: Any) -> Any:
    """A value PROV can type: str, bool, int, float, datetime; NaN/±inf as xsd:double
    literals; Decimal as xsd:decimal; dates as xsd:date; anything else as JSON text."""
    from prov.constants import XSD
    from prov.model import Literal as ProvLiteral

    if isinstance(v, (str, bool, int, datetime.datetime)):
        return v
    if isinstance(v, float):
        if math.isnan(v):
            return ProvLiteral("NaN", XSD["double"])
        if math.isinf(v):
            return ProvLiteral("INF" if v > 0 else "-INF", XSD["double"])
        return v
    if isinstance(v, decimal.Decimal):
        return ProvLiteral(str(v), XSD["decimal"])
    if isinstance(v, datetime.date):
        return ProvLiteral(v.isoformat(), XSD["date"])
    return json.dumps(v, default=str, sort_keys=True)


def to_prov(graph: GraphIndex, positions: Any = None, *, max_nodes: int | None = None) -> ProvDocument:
    """The graph (or the nodes at ``positions`` and the edges between them) as a PROV document.

    Parameters
    ----------
    graph
        A graph or a view of one (zoomed out, after a deletion).
    positions
        Node positions (not ids) to export, or a boolean mask; ``None``: every node. Operations
        are decided on the whole graph, so a cut-off node keeps its operation.
    max_nodes
        Refuse (:class:`~lipspark.errors.LipsparkError`) more nodes than this; ``None``: no limit.

    Returns
    -------
    prov.model.ProvDocument
        Entities, activities and relations as described in the module docstring, each group in
        id order, so equal graphs give equal documents.
    """
    from prov.model import ProvDocument

    sel = _selection(graph, positions)
    check_size(len(sel), max_nodes, "PROV")
    doc = ProvDocument()
    ctx = _Context(graph, sel, doc.add_namespace(LPS_PREFIX, LPS_NAMESPACE))
    for i, pos in enumerate(sel.tolist()):
        if not ctx.is_activity[pos]:
            doc.entity(ctx.names[pos], _entity_attrs(ctx, i, pos))
    for i, pos in enumerate(sel.tolist()):
        if ctx.is_activity[pos]:
            doc.activity(ctx.names[pos], other_attributes=_activity_attrs(ctx, i, pos))
    generated = _relations(doc, ctx)
    _generated_by_invocations(doc, ctx, generated)
    return doc


class _Context:
    """What the parts of :func:`to_prov` share: the selection, its PROV names, qualified
    attribute names, node columns and operations."""

    def __init__(self, graph: GraphIndex, sel: np.ndarray, ns: Any) -> None:
        self.graph, self.sel, self.ns = graph, sel, ns
        self.q = {k: ns[k] for k in ("kind", "type", "operation", "aggregate", "relation", "module", "node", "execution",
                                     "invocation", "column", "value", "zoomed", "multiplicity", "whatIf")}
        self.names = {int(p): ns[f"n{int(graph.ids[p])}"] for p in sel.tolist()}
        self.ops = operations(graph, sel)
        self.cols = {c: _column(graph, c, sel) for c in ("label", "relation", "tuple", "module", "node", "execution", "invocation", "column", "value")}
        self.is_activity = np.zeros(len(graph), dtype=bool)
        self.is_activity[sel] = np.isin(graph.op[sel], _ACTIVITY)
        self.member = np.zeros(len(graph), dtype=bool)
        self.member[sel] = True

    def label(self, i: int) -> str:
        return "" if self.cols["label"][i] is None else str(self.cols["label"][i])


def _entity_attrs(ctx: _Context, i: int, pos: int) -> list[tuple[Any, Any]]:
    """A p- or v-node's entity attributes: label, kind, type, operation, context, value or tuple."""
    g, q = ctx.graph, ctx.q
    code = int(g.type_code[pos])
    attrs: list[tuple[Any, Any]] = [("prov:label", ctx.label(i)), ("prov:type", ctx.ns["VNode"] if g.is_v[pos] else ctx.ns["PNode"]),
                                    (q["kind"], "v" if g.is_v[pos] else "p")]
    if NODE_TYPES[code]:
        attrs.append((q["type"], NODE_TYPES[code]))
    attrs.append((q["operation"], ctx.ops[i]))
    if ctx.ops[i] == "aggregate":
        attrs.append((q["aggregate"], g.op_of(pos).label))
    for c in ("relation", "column", "module", "node", "execution"):
        if ctx.cols[c][i] is not None:
            attrs.append((q[c], _literal(ctx.cols[c][i])))
    inv = ctx.cols["invocation"][i]
    if inv is not None and int(inv) != int(g.ids[pos]):
        attrs.append((q["invocation"], ctx.ns[f"n{int(inv)}"]))
    if g.is_v[pos]:
        if ctx.cols["value"][i] is UNKNOWN:  # a deletion made it unknown (a black box over a changed value)
            attrs.append((q["whatIf"], "unknown"))
        elif ctx.cols["value"][i] is not None:
            value = _literal(ctx.cols["value"][i])
            attrs += [(q["value"], value), ("prov:value", value)]
    elif ctx.cols["tuple"][i] is not None:
        attrs.append(("prov:value", str(ctx.cols["tuple"][i])))
    return attrs


def _activity_attrs(ctx: _Context, i: int, pos: int) -> list[tuple[Any, Any]]:
    """An invocation's (or a zoomed-out module's) activity attributes."""
    g, q = ctx.graph, ctx.q
    zoomed = g.op[pos] == Op.ZOOM
    attrs: list[tuple[Any, Any]] = [("prov:label", ctx.label(i)), ("prov:type", ctx.ns["ZoomedInvocation"] if zoomed else ctx.ns["Invocation"]),
                                    (q["type"], NODE_TYPES[g.type_code[pos]])]
    for c in ("module", "node", "execution"):
        if ctx.cols[c][i] is not None:
            attrs.append((q[c], _literal(ctx.cols[c][i])))
    if zoomed:
        attrs.append((q["zoomed"], True))
        inv = ctx.cols["invocation"][i]
        if inv is not None and int(inv) != int(g.ids[pos]):
            attrs.append((q["invocation"], ctx.ns[f"n{int(inv)}"]))
    return attrs


def _relations(doc: ProvDocument, ctx: _Context) -> set[tuple[int, int]]:
    """One relation per distinct edge inside the selection, in (derived, source) id order;
    returns the (entity, activity) pairs recorded as ``wasGeneratedBy``."""
    g, q, names, act = ctx.graph, ctx.q, ctx.names, ctx.is_activity
    em = ctx.member[g.src] & ctx.member[g.dst]
    n = np.int64(max(len(g), 1))
    pairs, counts = np.unique(g.dst[em] * n + g.src[em], return_counts=True)
    generated: set[tuple[int, int]] = set()
    op_of = dict(zip(ctx.sel.tolist(), ctx.ops))
    for key, count in zip(pairs.tolist(), counts.tolist()):
        dst, src = divmod(key, int(n))
        times = _times(q, count)
        if act[src] and act[dst]:
            doc.wasInformedBy(names[dst], names[src], other_attributes=times)
        elif act[src]:
            generated.add((dst, src))
            if g.op[dst] in _USED:
                doc.used(names[src], names[dst], other_attributes=times)
            else:
                doc.wasGeneratedBy(names[dst], names[src], other_attributes=times)
        elif act[dst]:
            doc.used(names[dst], names[src], other_attributes=times)
        else:
            extra: list[tuple[Any, Any]] = [(q["operation"], op_of[dst])]
            if op_of[dst] == "aggregate":
                extra.append((q["aggregate"], g.op_of(dst).label))
            doc.wasDerivedFrom(names[dst], names[src], other_attributes=extra + times)
    return generated


def _generated_by_invocations(doc: ProvDocument, ctx: _Context, generated: set[tuple[int, int]]) -> None:
    """Intermediate nodes are generated by the invocation that created them (no edge says so)."""
    g = ctx.graph
    inv_pos = g.invocation_pos[ctx.sel]
    for i, pos in enumerate(ctx.sel.tolist()):
        inv = int(inv_pos[i])
        if inv < 0 or ctx.is_activity[pos] or not ctx.member[inv] or g.op[inv] != Op.INVOCATION or g.op[pos] in _USED:
            continue
        if (pos, inv) not in generated:
            doc.wasGeneratedBy(ctx.names[pos], ctx.names[inv])


def _times(q: dict[str, Any], count: int) -> list[tuple[Any, Any]]:
    return [(q["multiplicity"], count)] if count > 1 else []


def write_prov(graph: GraphIndex, path: str | os.PathLike[str], format: Literal["json", "provn"] = "json", *,
               positions: Any = None, max_nodes: int | None = MAX_NODES) -> int:
    """Write the graph as PROV-JSON or PROV-N, atomically (nothing is written on error).

    Parameters
    ----------
    graph, positions
        As for :func:`to_prov`.
    path
        The output file (replaced if it exists).
    format
        ``"json"`` (PROV-JSON, ``ProvDocument.serialize(format="json")``) or ``"provn"``
        (PROV-N, ``ProvDocument.get_provn()``).
    max_nodes
        Refuse graphs with more nodes (default :data:`MAX_NODES`); ``None``: no limit.

    Returns
    -------
    int
        The number of PROV records written.

    Examples
    --------
    >>> import os, tempfile, pandas as pd
    >>> from prov.model import ProvDocument
    >>> g = GraphIndex.build(pd.DataFrame({"id": [1, 2], "kind": "p", "op": ["token", "δ"], "label": ["R:a", "δ"]}),
    ...                      pd.DataFrame({"src": [1], "dst": [2]}))
    >>> path = os.path.join(tempfile.mkdtemp(), "g.json")
    >>> write_prov(g, path)
    3
    >>> ProvDocument.deserialize(path, format="json") == to_prov(g)
    True
    >>> write_prov(g, path, max_nodes=1)
    Traceback (most recent call last):
    ...
    lipspark.errors.LipsparkError: the graph has 2 nodes, more than max_nodes=1 for a PROV export ...
    """
    if format not in ("json", "provn"):
        raise LipsparkError(f"unknown PROV format {format!r}; use 'json' (PROV-JSON) or 'provn' (PROV-N)")
    doc = to_prov(graph, positions, max_nodes=max_nodes)
    text = str(doc.serialize(format="json") if format == "json" else doc.get_provn())
    with atomic_open(path, "w") as fh:
        fh.write(text)
        if not text.endswith("\n"):
            fh.write("\n")
    return len(list(doc.get_records()))
