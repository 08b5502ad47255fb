"""ZoomOut and ZoomIn (Lipstick section 4.1, Definition 4.1).

``zoom_out(g, modules)`` hides the intermediate computation of every invocation of the named
modules, in all executions, together with their state nodes and the base tuples adjacent to
those state nodes; each invocation is replaced by one p-node labelled with the module (type
``z``, operator ZOOM: a black box), with an edge from each of the invocation's inputs and an edge to each of its outputs.
The invocation node, the input and the output nodes stay. ``zoom_in`` is the exact inverse:
the hidden nodes and edges are kept in the zoomed view and given back node for node and edge for
edge.

A node is part of the intermediate computation of an invocation of M (Definition 4.1) iff a
path reaches it from an input or state node of an invocation of M (or from a v-node of such an
intermediate computation) with no output node on the path, itself included. Nodes that an
invocation created but no input or state reaches (constants inside the module) are hidden with
it as well, so that nothing is left dangling.

>>> import pandas as pd
>>> from lipspark.graph.index import GraphIndex
>>> n = pd.DataFrame({"id": [1, 16, 3, 4, 5, 6], "kind": "p", "op": ["token", "invocation", "input", "δ", "output", "state"],
...                   "label": ["R:a", "M", "·", "δ", "·", "·"], "type": [None, "m", "i", None, "o", "s"],
...                   "module": [None, "M", "M", "M", "M", "M"], "execution": [None, 1, 1, 1, 1, 1]})
>>> e = pd.DataFrame({"src": [1, 16, 3, 6, 4, 16, 16], "dst": [3, 3, 4, 4, 5, 5, 6]})
>>> g = GraphIndex.build(n, e)
>>> z = zoom_out(g, ["M"])
>>> sorted(z.ids.tolist()), z.num_edges
([1, 3, 5, 16, 17], 5)
>>> zoom_in(z, ["M"]).same_as(g)
True
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import numpy as np

from lipspark.errors import QueryError
from lipspark.graph.attrs import Columns, Overlay
from lipspark.graph.index import NODE_TYPES, GraphIndex, NodeSet, unique_positions
from lipspark.vocabulary import Op
from lipspark.vocabulary.ids import zoom_id

__all__ = ["zoom_out", "zoom_in", "intermediate", "ZoomRecord", "zoomed_modules"]

_I, _S, _O = (NODE_TYPES.index(t) for t in "iso")


@dataclass(frozen=True)
class ZoomRecord:
    """What a ZoomOut of one module hid: its nodes and the edges (ids and eids) they touched."""

    module: str
    nodes: NodeSet
    src: np.ndarray
    dst: np.ndarray
    eid: np.ndarray


def zoomed_modules(g: GraphIndex) -> list[str]:
    """The modules zoomed out in this view, in the order they were zoomed out."""
    return list(g.zoom)


def _invocations(g: GraphIndex, module: str) -> np.ndarray:
    return _invocations_of(g, [module])[module]


def _invocations_of(g: GraphIndex, modules: list[str]) -> dict[str, np.ndarray]:
    """Positions of the invocation nodes of each module (one pass over the invocation nodes)."""
    inv = np.flatnonzero(np.asarray(g.op) == Op.INVOCATION)
    names = g.column("module", inv)
    return {m: inv[names == m] for m in modules}


def _boundary(g: GraphIndex, inv: np.ndarray, code: int) -> np.ndarray:
    """Positions of the nodes of type ``code`` the invocations ``inv`` have an edge into."""
    ups = g.gather_parents(inv)
    return unique_positions(ups[g.type_code[ups] == code], len(g))


def intermediate(g: GraphIndex, module: str) -> np.ndarray:
    """Positions of the intermediate computation of all invocations of ``module`` (Def. 4.1)."""
    inv = _invocations(g, module)
    return _intermediate(g, inv, _boundary(g, inv, _I), _boundary(g, inv, _S))


def _intermediate(g: GraphIndex, inv: np.ndarray, inputs: np.ndarray, state: np.ndarray) -> np.ndarray:
    seeds = np.concatenate([inputs, state])
    is_out = np.asarray(g.type_code) == _O
    reached = g.descendants(seeds, stop=is_out)
    mask = np.zeros(len(g), dtype=bool)
    mask[reached] = True
    # module-internal constants: created by one of the invocations, reached by no input or state
    is_inv = np.zeros(len(g) + 1, dtype=bool)  # slot -1 (no invocation) stays False
    is_inv[inv] = True
    created = is_inv[g.invocation_pos] & (np.asarray(g.type_code) == 0)
    mask |= created
    mask &= ~is_out
    return np.flatnonzero(mask)


def _hidden(g: GraphIndex, inv: np.ndarray) -> np.ndarray:
    """Mask of everything a ZoomOut of the module with invocations ``inv`` removes (steps 3 and 4)."""
    ups = g.gather_parents(inv)
    codes = g.type_code[ups]
    state = unique_positions(ups[codes == _S], len(g))
    inputs = unique_positions(ups[codes == _I], len(g))
    mask = np.zeros(len(g), dtype=bool)
    mask[_intermediate(g, inv, inputs, state)] = True
    mask[state] = True
    kids = g.gather_children(state)
    base = kids[g.op[kids] == Op.TOKEN]
    mask[base] = True
    return mask


def zoom_out(g: GraphIndex, modules: Iterable[str]) -> GraphIndex:
    """The view of ``g`` with every invocation of ``modules`` zoomed out (section 4.1, steps 1–5)."""
    modules = list(dict.fromkeys(modules))
    known = {str(m) for m in g.distinct("module", np.flatnonzero(np.asarray(g.op) == Op.INVOCATION))}
    for m in modules:
        if m in g.zoom:
            raise QueryError(f"module {m!r} is already zoomed out; zoomin {m} first")
        if m not in known:
            raise QueryError(f"no invocation of a module {m!r} in this graph; modules: {', '.join(sorted(known)) or 'none'}")
    hidden_all = np.zeros(len(g), dtype=bool)
    masks = {}
    invocations = _invocations_of(g, modules)
    for m in modules:
        masks[m] = _hidden(g, invocations[m])
        hidden_all |= masks[m]
    gsrc, gdst, geid = g.src, g.dst, g.eid
    # which module hides each node (their hidden sets are disjoint: each is what its own
    # invocations computed), so every edge is classified with two gathers, not two per module
    hidden_by = np.full(len(g), -1, dtype=np.int16)
    for k, m in enumerate(modules):
        hidden_by[masks[m]] = k
    if int((hidden_by >= 0).sum()) != sum(int(masks[m].sum()) for m in modules):
        raise QueryError(f"cannot zoom out {', '.join(modules)} together: their intermediate computations overlap; zoom them out one at a time")
    own_src, own_dst = hidden_by[gsrc], hidden_by[gdst]
    edge_hidden = (own_src >= 0) | (own_dst >= 0)
    records = dict(g.zoom)
    new_nodes, e_src, e_dst = [], [], []
    for k, m in enumerate(modules):
        mask = masks[m]
        touch = (own_src == k) | (own_dst == k)
        records[m] = ZoomRecord(m, g.take(np.flatnonzero(mask)), g.ids[gsrc[touch]], g.ids[gdst[touch]], geid[touch])
        inv = invocations[m]
        zid = np.array([zoom_id(x) for x in g.ids[inv].tolist()], dtype=np.int64)
        if len(zid) and (g.lookup(zid) >= 0).any():
            raise QueryError(f"cannot zoom out {m!r}: its zoom node ids are taken; is the graph already zoomed?")
        n = len(inv)  # a zoom node has its invocation's context, its own id, label, type and op
        new_nodes.append(NodeSet(zid, np.zeros(n, dtype=bool), np.full(n, int(Op.ZOOM), dtype=np.int8),
                                 np.full(n, NODE_TYPES.index("z"), dtype=np.int8),
                                 Overlay(g.take(inv).attrs, Columns(n, {"label": [m] * n}))))
        owner, ups = g.gather_parents(inv, owners=True)
        ins = g.type_code[ups] == _I
        outs = g.type_code[ups] == _O
        e_src += [g.ids[ups[ins]], zid[owner[outs]]]
        e_dst += [zid[owner[ins]], g.ids[ups[outs]]]
    add_nodes = NodeSet.concat(new_nodes) if new_nodes else None
    src = np.concatenate(e_src) if e_src else np.zeros(0, np.int64)
    dst = np.concatenate(e_dst) if e_dst else np.zeros(0, np.int64)
    return g.derive(~hidden_all, ~edge_hidden, add_nodes, (src, dst, np.full(len(src), -1, dtype=np.int64)), zoom=records)


def zoom_in(g: GraphIndex, modules: Iterable[str]) -> GraphIndex:
    """The exact inverse of :func:`zoom_out`: give back what zooming out ``modules`` hid."""
    modules = list(dict.fromkeys(modules))
    for m in modules:
        if m not in g.zoom:
            zoomed = ", ".join(g.zoom) or "none"
            raise QueryError(f"module {m!r} is not zoomed out in this view (zoomed out: {zoomed})")
    records = {k: v for k, v in g.zoom.items() if k not in modules}
    mod = g.where("module", modules)
    drop = (np.asarray(g.op) == Op.ZOOM) & mod
    keep_edges = ~(drop[g.src] | drop[g.dst])
    restored = [g.zoom[m] for m in modules]
    add_nodes = NodeSet.concat([r.nodes for r in restored])
    src = np.concatenate([r.src for r in restored])
    dst = np.concatenate([r.dst for r in restored])
    eid = np.concatenate([r.eid for r in restored])
    # an edge between nodes hidden by two modules is in both records: give it back once, and only
    # when both its ends are visible again
    present = np.union1d(g.ids[~drop], add_nodes.ids)
    ok = np.isin(src, present) & np.isin(dst, present) & ~np.isin(eid, g.eid)
    _, first = np.unique(eid[ok], return_index=True)
    idx = np.flatnonzero(ok)[first]
    return g.derive(~drop, keep_edges, add_nodes, (src[idx], dst[idx], eid[idx]), zoom=records)

