"""A provenance graph (or a view, or a part of one) as a W3C PROV document.

:func:`to_prov` maps a :class:`~lipspark.graph.index.GraphIndex` to a
:class:`prov.model.ProvDocument` (the W3C PROV data model as the ``prov`` package implements
it); :func:`write_prov` writes it as PROV-JSON or PROV-N. The mapping (see docs/export.md):

* every p-node and v-node is an entity ``lps:n<id>`` (``lps:n-123`` for a negative id), except
  module invocation nodes (type ``m``) and zoomed-out modules (type ``z``), which are activities;
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
...     pd.DataFrame({"id": [1, 2, -3], "kind": "p", "label": ["Cars:C2", "Cars:C3", "δ"],
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

if TYPE_CHECKING:  # pragma: no cover
    from prov.model import ProvDocument

__all__ = ["LPS_NAMESPACE", "LPS_PREFIX", "MAX_NODES", "OPERATIONS", "operations", "to_prov", "write_prov"]

#: The namespace of lipspark's PROV identifiers and attributes.
LPS_NAMESPACE = "https://lipspark.invalid/ns#"
LPS_PREFIX = "lps"
#: Default refusal threshold of :func:`write_prov` (PROV documents are built in memory).
MAX_NODES = 200_000
#: The ``lps:operation`` values: the semiring operation a node applies to its children.
OPERATIONS = ("token", "times", "plus", "delta", "tensor", "aggregate", "black_box", "constant")
AGGREGATE_LABELS = ("Count", "Sum", "Min", "Max", "Avg")

_M, _Z = NODE_TYPES.index("m"), NODE_TYPES.index("z")
_P_OPS = {"·": "times", "+": "plus", "δ": "delta"}
_V_OPS = {"⊗": "tensor", "·": "times"}


def operations(graph: GraphIndex, positions: np.ndarray | None = None) -> list[str | None]:
    """The semiring operation of the nodes at ``positions`` (all by default), ``None`` for
    invocation and zoom nodes.

    Decided on the whole graph, as :func:`lipspark.query.polynomial.polynomial` reads it: ``·``,
    ``+``, ``δ`` p-nodes are ``times``, ``plus``, ``delta``; other p-nodes are ``token`` when they
    have no children, else ``black_box`` (a relation-level UDF); ``⊗`` v-nodes are ``tensor``,
    Count/Sum/Min/Max/Avg v-nodes ``aggregate``, ``·`` v-nodes (a value crossing a module
    boundary) ``times``, other v-nodes ``constant`` without children, else ``black_box``.

    >>> import pandas as pd
    >>> g = GraphIndex.build(pd.DataFrame({"id": [1, 2, 3, 4], "kind": ["p", "v", "v", "v"],
    ...                                    "label": ["R:a", "1", "⊗", "Sum"]}),
    ...                      pd.DataFrame({"src": [1, 2, 3], "dst": [3, 3, 4]}))
    >>> operations(g)
    ['token', 'constant', 'tensor', 'aggregate']
    """
    sel = np.arange(len(graph)) if positions is None else np.asarray(positions, dtype=np.int64)
    indeg = np.diff(graph.in_ptr)
    labels = np.append(np.asarray(graph.labels, dtype=object), "")[graph.label_code[sel]]  # code -1 (no label): ""
    out: list[str | None] = []
    for pos, label in zip(sel.tolist(), labels.tolist()):
        if graph.type_code[pos] in (_M, _Z):
            out.append(None)
            continue
        if not graph.is_v[pos]:
            op = _P_OPS.get(label) or ("token" if indeg[pos] == 0 else "black_box")
        elif label in AGGREGATE_LABELS:
            op = "aggregate"
        else:
            op = _V_OPS.get(label) or ("constant" if indeg[pos] == 0 else "black_box")
        out.append(op)
    return out


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
    col = graph.nodes[name].iloc[sel].astype(object)
    out = []
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
    ns = doc.add_namespace(LPS_PREFIX, LPS_NAMESPACE)
    q = {"kind": ns["kind"], "type": ns["type"], "operation": ns["operation"], "aggregate": ns["aggregate"],
         "relation": ns["relation"], "module": ns["module"], "node": ns["node"], "execution": ns["execution"],
         "invocation": ns["invocation"], "column": ns["column"], "value": ns["value"], "zoomed": ns["zoomed"],
         "multiplicity": ns["multiplicity"]}
    pnode, vnode, invocation, zoomed = ns["PNode"], ns["VNode"], ns["Invocation"], ns["ZoomedInvocation"]

    ids = graph.ids
    names = {int(p): ns[f"n{int(ids[p])}"] for p in sel.tolist()}
    ops = operations(graph, sel)
    cols = {c: _column(graph, c, sel) for c in ("label", "relation", "tuple", "module", "node", "execution", "invocation", "column", "value")}
    inv_pos = graph.invocation_pos[sel]
    is_activity = np.zeros(len(graph), dtype=bool)
    is_activity[sel] = np.isin(graph.type_code[sel], (_M, _Z))

    # ------------------------------------------------------------- entities, then activities
    activities = []
    for i, pos in enumerate(sel.tolist()):
        code = int(graph.type_code[pos])
        label = "" if cols["label"][i] is None else str(cols["label"][i])
        own = int(ids[pos])
        if is_activity[pos]:
            activities.append((i, pos, code, label, own))
            continue
        attrs: list[tuple[Any, Any]] = [("prov:label", label), ("prov:type", vnode if graph.is_v[pos] else pnode),
                                        (q["kind"], "v" if graph.is_v[pos] else "p")]
        if NODE_TYPES[code]:
            attrs.append((q["type"], NODE_TYPES[code]))
        attrs.append((q["operation"], ops[i]))
        if ops[i] == "aggregate":
            attrs.append((q["aggregate"], label))
        for c in ("relation", "column", "module", "node", "execution"):
            if cols[c][i] is not None:
                attrs.append((q[c], _literal(cols[c][i])))
        if cols["invocation"][i] is not None and int(cols["invocation"][i]) != own:
            attrs.append((q["invocation"], ns[f"n{int(cols['invocation'][i])}"]))
        if graph.is_v[pos]:
            if cols["value"][i] is not None:
                value = _literal(cols["value"][i])
                attrs += [(q["value"], value), ("prov:value", value)]
        elif cols["tuple"][i] is not None:
            attrs.append(("prov:value", str(cols["tuple"][i])))
        doc.entity(names[pos], attrs)
    for i, pos, code, label, own in activities:
        attrs = [("prov:label", label), ("prov:type", zoomed if code == _Z else invocation), (q["type"], NODE_TYPES[code])]
        for c in ("module", "node", "execution"):
            if cols[c][i] is not None:
                attrs.append((q[c], _literal(cols[c][i])))
        if code == _Z:
            attrs.append((q["zoomed"], True))
            inv = cols["invocation"][i]
            if inv is not None and int(inv) != own:
                attrs.append((q["invocation"], ns[f"n{int(inv)}"]))
        doc.activity(names[pos], other_attributes=attrs)

    # ------------------------------------------------------------- relations, in (derived, source) id order
    member = np.zeros(len(graph), dtype=bool)
    member[sel] = True
    em = member[graph.src] & member[graph.dst]
    n = np.int64(max(len(graph), 1))
    pairs, counts = np.unique(graph.dst[em] * n + graph.src[em], return_counts=True)
    generated: set[tuple[int, int]] = set()
    op_of = dict(zip(sel.tolist(), ops))
    for key, count in zip(pairs.tolist(), counts.tolist()):
        dst, src = divmod(key, int(n))
        if is_activity[src] and is_activity[dst]:
            doc.wasInformedBy(names[dst], names[src], other_attributes=_times(q, count))
        elif is_activity[src]:
            generated.add((dst, src))
            if graph.type_code[dst] in (NODE_TYPES.index("i"), NODE_TYPES.index("s")):
                doc.used(names[src], names[dst], other_attributes=_times(q, count))
            else:
                doc.wasGeneratedBy(names[dst], names[src], other_attributes=_times(q, count))
        elif is_activity[dst]:
            doc.used(names[dst], names[src], other_attributes=_times(q, count))
        else:
            op = op_of[dst]
            extra: list[tuple[Any, Any]] = [(q["operation"], op)]
            if op == "aggregate":
                extra.append((q["aggregate"], graph.label(dst)))
            doc.wasDerivedFrom(names[dst], names[src], other_attributes=extra + _times(q, count))
    # intermediate nodes are generated by the invocation that created them (no edge says so)
    m_code = graph.type_code == _M
    for i, pos in enumerate(sel.tolist()):
        inv = int(inv_pos[i])
        if inv < 0 or is_activity[pos] or not member[inv] or not m_code[inv] or NODE_TYPES[graph.type_code[pos]] in ("i", "s"):
            continue
        if (pos, inv) not in generated:
            doc.wasGeneratedBy(names[pos], names[inv])
    return doc


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
    >>> g = GraphIndex.build(pd.DataFrame({"id": [1, 2], "kind": "p", "label": ["R:a", "δ"]}),
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
    text = doc.serialize(format="json") if format == "json" else doc.get_provn()
    with atomic_open(path, "w") as fh:
        fh.write(text)
        if not text.endswith("\n"):
            fh.write("\n")
    return len(doc.get_records())
