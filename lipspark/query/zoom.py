"""ZoomOut and ZoomIn (Lipstick section 4.1, Definition 4.1).

``zoom_out(g, modules)`` hides the intermediate computation of every invocation of the named
modules, in all executions, together with their state nodes and the base tuples adjacent to
those state nodes; each invocation is replaced by one p-node labelled with the module (type
``z``, operator ZOOM: a black box), with an edge from each of the invocation's inputs and an edge to each of its outputs.
The invocation node, the input and the output nodes stay. ``zoom_in`` is the exact inverse:
the hidden nodes and edges are kept in the zoomed view and given back node for node and edge for
edge.

Both return a :class:`~lipspark.graph.view.View` of the captured graph (a mask of the hidden
nodes and an overlay of the zoom nodes): nothing of the graph is copied, and what a zoom record
keeps is the positions of the nodes it hid (their edges are the base's, back when both ends are).

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

from functools import cached_property
from typing import Callable, Iterable

import numpy as np

from lipspark.errors import QueryError
from lipspark.graph.attrs import Columns, Overlay
from lipspark.graph.index import NODE_TYPES, GraphIndex, NodeSet, slots, unique_positions
from lipspark.graph.view import EMPTY_NODES, View, change, ext_positions
from lipspark.vocabulary import Op
from lipspark.vocabulary.ids import zoom_id

__all__ = ["zoom_out", "zoom_in", "intermediate", "ZoomRecord", "zoomed_modules"]

_I, _S, _O = (NODE_TYPES.index(t) for t in "iso")


class ZoomRecord:
    """What a ZoomOut of one module hid: the base nodes at ``positions`` (sorted base positions
    of the captured graph ``base``) with their base edges, and the overlay nodes ``extra`` (a
    zoom node of a module zoomed out earlier, say) with the overlay edges ``extra_edges`` (ids
    and eids) that touched what it hid.

    ``nodes``, ``src``, ``dst`` and ``eid`` list all of it (every node; every edge the zoom took
    out of its view, by ids and eid), built when first read."""

    def __init__(self, module: str, base: GraphIndex, positions: np.ndarray | Callable[[], np.ndarray], extra: NodeSet = EMPTY_NODES,
                 extra_edges: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None, before: np.ndarray | None = None,
                 cut: np.ndarray | None = None) -> None:
        self.module = module
        #: the base edges from an input node of an invocation straight to one of its output nodes
        #: (a row or value the module passes on unchanged), as keys target · len(base) + source:
        #: the view leaves them out, as a deferred store's coarse graph, which cannot know them,
        #: has none (docs/design.md, "Deferred capture")
        self.cut = np.zeros(0, dtype=np.int64) if cut is None else cut
        self.base = base
        self._positions = positions
        self.extra = extra
        empty = np.zeros(0, dtype=np.int64)
        self.extra_edges = extra_edges if extra_edges is not None else (empty, empty, empty)
        #: the base nodes the zoomed view already hid (None: none), for :attr:`src`/:attr:`dst`/:attr:`eid`
        self._before = before

    @cached_property
    def positions(self) -> np.ndarray:
        """The base positions (sorted) of the nodes it hid: listed when first asked for (by
        ZoomIn), not by the ZoomOut, which only marks them."""
        found = self._positions() if callable(self._positions) else self._positions
        del self._positions
        return np.asarray(found).astype(np.int32 if len(self.base) < 2**31 else np.int64)

    def __repr__(self) -> str:
        return f"ZoomRecord({self.module!r}: {len(self.positions)} base nodes, {len(self.extra)} added nodes)"

    def hides(self, node_ids: Iterable[int]) -> bool:
        """True iff the zoom hid a node with one of these ids."""
        ids = np.asarray(list(node_ids), dtype=np.int64)
        pos = self.base.lookup(ids)
        pos = pos[pos >= 0]
        return bool(np.isin(pos, self.positions).any() or np.isin(ids, self.extra.ids).any())

    @cached_property
    def nodes(self) -> NodeSet:
        """Every node the zoom hid."""
        return NodeSet.concat([self.base.take(self.positions), self.extra])

    @cached_property
    def _edges(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        b = self.base
        pos = np.asarray(self.positions, dtype=np.int64)
        mine = np.zeros(len(b), dtype=bool)
        mine[pos] = True
        shown = mine if self._before is None else (mine | ~self._before)
        # base edges into the hidden nodes, and out of them into the others
        into = slots(b.in_ptr, pos)
        ups = unique_positions(b.gather_parents(pos), len(b))
        ups = ups[~mine[ups]]
        out_of = slots(b.in_ptr, ups)
        out_of = out_of[mine[np.asarray(b.in_src[out_of], dtype=np.int64)]]
        slot = np.concatenate([into, out_of])
        src = np.asarray(b.in_src[slot], dtype=np.int64)
        dst = np.searchsorted(np.asarray(b.in_ptr), slot, side="right") - 1
        keep = shown[src] & shown[dst]
        slot, src, dst = slot[keep], src[keep], dst[keep]
        es, ed, ee = self.extra_edges
        return (np.concatenate([b.ids[src], es]), np.concatenate([b.ids[dst], ed]), np.concatenate([b.edge_ids(slot), ee]))

    @property
    def src(self) -> np.ndarray:
        """Source ids of the edges the zoom took out of its view."""
        return self._edges[0]

    @property
    def dst(self) -> np.ndarray:
        """Target ids of those edges."""
        return self._edges[1]

    @property
    def eid(self) -> np.ndarray:
        """Their eids (-1: an edge a view added)."""
        return self._edges[2]


def zoomed_modules(g: GraphIndex) -> list[str]:
    """The modules zoomed out in this view, in the order they were zoomed out."""
    return list(g.zoom)


def _invocations_of(g: GraphIndex, modules: list[str]) -> tuple[dict[str, np.ndarray], set[str]]:
    """Positions of the invocation nodes of each module, and every module invoked in ``g``."""
    inv = g.nodes_with(op=Op.INVOCATION)
    names = g.column("module", inv)
    return {m: inv[names == m] for m in modules}, {str(m) for m in names.tolist() if m is not None}


def _boundary(g: GraphIndex, inv: np.ndarray, code: int) -> np.ndarray:
    """Positions of the nodes of type ``code`` the invocations ``inv`` have an edge into."""
    ups = g.gather_parents(inv)
    return unique_positions(ups[g.type_code[ups] == code], len(g))


def intermediate(g: GraphIndex, module: str) -> np.ndarray:
    """Positions of the intermediate computation of all invocations of ``module`` (Def. 4.1)."""
    inv = _invocations_of(g, [module])[0][module]
    tc = np.asarray(g.type_code)
    created = (g.attrs_source.group_of("invocation", [g.ids[inv].tolist()]) > 0) & (tc == 0)
    return _intermediate(g, _boundary(g, inv, _I), _boundary(g, inv, _S), tc == _O, created)


def _intermediate(g: GraphIndex, inputs: np.ndarray, state: np.ndarray, is_out: np.ndarray, created: np.ndarray) -> np.ndarray:
    """What a path from ``inputs`` or ``state`` reaches with no output on it, and the nodes the
    invocations ``created`` (a mask: constants inside the module), outputs excepted."""
    reached = g.descendants(np.concatenate([inputs, state]), stop=is_out)
    mask = created.copy()
    mask[reached] = True
    mask &= ~is_out
    return np.flatnonzero(mask)


def zoom_out(g: GraphIndex, modules: Iterable[str]) -> GraphIndex:
    """The view of ``g`` with every invocation of ``modules`` zoomed out (section 4.1, steps 1–5)."""
    modules = list(dict.fromkeys(modules))
    invocations, known = _invocations_of(g, modules)
    for m in modules:
        if m in g.zoom:
            raise QueryError(f"module {m!r} is already zoomed out; zoomin {m} first")
        if m not in known:
            raise QueryError(f"no invocation of a module {m!r} in this graph; modules: {', '.join(sorted(known)) or 'none'}")
    n = len(g)
    tc = np.asarray(g.type_code)
    is_out = tc == _O
    # which of the modules' invocations created each node (one gather through the segments of a
    # store): the module-internal constants no input reaches are hidden with them
    owner = g.attrs_source.group_of("invocation", [g.ids[invocations[m]].tolist() for m in modules])
    owner[tc != 0] = 0
    # which module hides each node (steps 3 and 4): their hidden sets are disjoint, each is what its own invocations computed
    for k, m in enumerate(modules, 1):
        inv = invocations[m]
        ups = g.gather_parents(inv)
        codes = g.type_code[ups]
        state = unique_positions(ups[codes == _S], n)
        inputs = unique_positions(ups[codes == _I], n)
        reached = g.descendants(np.concatenate([inputs, state]), stop=is_out)
        kids = g.gather_children(state)
        hide = np.concatenate([reached[~is_out[reached]], state, kids[g.op[kids] == Op.TOKEN]])
        mine = owner[hide]
        if ((mine != 0) & (mine != k)).any():
            raise QueryError(f"cannot zoom out {', '.join(modules)} together: their intermediate computations overlap; zoom them out one at a time")
        owner[hide] = k
    zids = {m: np.array([zoom_id(x) for x in g.ids[invocations[m]].tolist()], dtype=np.int64) for m in modules}
    every = np.concatenate([np.zeros(0, np.int64), *zids.values()])
    taken = g.lookup(every, positional=True) >= 0  # zoom ids are positional: looked for in their segment's block
    if taken.any():
        m = next(m for m in modules if np.isin(zids[m], every[taken]).any())
        raise QueryError(f"cannot zoom out {m!r}: its zoom node ids are taken; is the graph already zoomed?")
    records = dict(g.zoom)
    new_nodes, e_src, e_dst = [], [], []
    first = len(g.base) + (len(g.overlay) if isinstance(g, View) else 0)  # base-extended position of the first zoom node
    for k, m in enumerate(modules, 1):
        records[m] = _record(g, m, owner, k)
        inv, zid = invocations[m], zids[m]
        c = len(inv)  # a zoom node has its invocation's context, its own id, label, type and op
        new_nodes.append(NodeSet(zid, np.zeros(c, dtype=bool), np.full(c, int(Op.ZOOM), dtype=np.int8),
                                 np.full(c, NODE_TYPES.index("z"), dtype=np.int8),
                                 Overlay(g.take(inv).attrs, Columns(c, {"label": [m] * c}))))
        zext = first + np.arange(c, dtype=np.int64)
        first += c
        owner_of, ups = g.gather_parents(inv, owners=True)
        ins = g.type_code[ups] == _I
        outs = g.type_code[ups] == _O
        e_src += [ext_positions(g, ups[ins]), zext[owner_of[outs]]]
        e_dst += [zext[owner_of[ins]], ext_positions(g, ups[outs])]
        records[m].cut = _passed_on(g, ups[ins], owner_of[ins], ups[outs], owner_of[outs])
    add_nodes = NodeSet.concat(new_nodes) if new_nodes else None
    src = np.concatenate(e_src) if e_src else np.zeros(0, np.int64)
    dst = np.concatenate(e_dst) if e_dst else np.zeros(0, np.int64)
    return change(g, remove=owner != 0, add=add_nodes, add_edges=(src, dst, np.full(len(src), -1, dtype=np.int64)), zoom=records)


def _passed_on(g: GraphIndex, ins: np.ndarray, in_inv: np.ndarray, outs: np.ndarray, out_inv: np.ndarray) -> np.ndarray:
    """The edges from an input node straight to an output node of the same invocation (``ins``
    and ``outs`` positions of ``g``, their invocations ``in_inv``, ``out_inv``), as the keys
    target · len(base) + source of their base positions (:attr:`ZoomRecord.cut`)."""
    n = len(g)
    own, kids = g.gather_children(outs, owners=True)
    hit = np.isin(out_inv[own] * n + kids, in_inv * n + ins)
    dst, src = ext_positions(g, outs[own[hit]]), ext_positions(g, kids[hit])
    nb = len(g.base)
    keep = (dst < nb) & (src < nb)
    return np.unique(dst[keep] * nb + src[keep])


def _record(g: GraphIndex, module: str, owner: np.ndarray, k: int) -> ZoomRecord:
    """The record of a ZoomOut that hides the nodes of ``g`` where ``owner`` is ``k``."""
    if not isinstance(g, View):
        return ZoomRecord(module, g, lambda: np.flatnonzero(owner == k))
    nb = len(g) - len(g.overlay)
    extra_pos = nb + np.flatnonzero(owner[nb:] == k)
    ext = np.concatenate([g.base_positions(np.flatnonzero(owner[:nb] == k)), ext_positions(g, extra_pos)])
    es, ed, ee = g._es, g._ed, g._ee
    touch = np.isin(es, ext) | np.isin(ed, ext)  # overlay edges it takes out (the base's follow their nodes)
    ids = lambda e: g.ids[g._from_ext(e)]  # noqa: E731
    return ZoomRecord(module, g.base, lambda: g.base_positions(np.flatnonzero(owner[:nb] == k)), g.take(extra_pos),
                      (ids(es[touch]), ids(ed[touch]), ee[touch]), g.hidden)


def zoom_in(g: GraphIndex, modules: Iterable[str]) -> GraphIndex:
    """The exact inverse of :func:`zoom_out`: give back what zooming out ``modules`` hid."""
    modules = list(dict.fromkeys(modules))
    for m in modules:
        if m not in g.zoom:
            zoomed = ", ".join(g.zoom) or "none"
            raise QueryError(f"module {m!r} is not zoomed out in this view (zoomed out: {zoomed})")
    restored = [g.zoom[m] for m in modules]
    if any(not isinstance(r, ZoomRecord) or r.base is not g.base for r in restored):
        raise QueryError(f"the zoom records of {', '.join(modules)} belong to another graph; zoom out again from this one")
    records = {k: v for k, v in g.zoom.items() if k not in modules}
    zs = g.nodes_with(op=Op.ZOOM)
    drop = zs[np.array([m in modules for m in g.column("module", zs).tolist()], dtype=bool)]
    restore = np.concatenate([np.asarray(r.positions, dtype=np.int64) for r in restored])
    add = NodeSet.concat([r.extra for r in restored])
    src, dst, eid = (np.concatenate([r.extra_edges[i] for r in restored]) for i in range(3))
    if len(src):  # overlay edges the zooms took out: back when both ends are
        src, dst, eid = _ext_of_ids(g, restore, add, src, dst, eid)
    return change(g, remove=drop, restore=restore, add=add, add_edges=(src, dst, eid), zoom=records)


def _ext_of_ids(g: GraphIndex, restore: np.ndarray, add: NodeSet, *edges: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Edges given by ids as base-extended positions of ``g`` (see :func:`change`), those with
    an end that will not be in the view (removed since) left out."""
    base = g.base
    first = len(base) + (len(g.overlay) if isinstance(g, View) else 0)
    shown = np.zeros(len(base), dtype=bool)
    shown[restore] = True

    def ext(ids: np.ndarray) -> np.ndarray:
        out = np.full(len(ids), -1, dtype=np.int64)
        pos = g.lookup(ids)
        out[pos >= 0] = ext_positions(g, pos[pos >= 0])
        b = base.lookup(ids)
        back = (pos < 0) & (b >= 0)
        back[back] = shown[b[back]]
        out[back] = b[back]
        order = np.argsort(add.ids, kind="stable")
        at = np.minimum(np.searchsorted(add.ids[order], ids), max(len(add) - 1, 0))
        new = (out < 0) & (len(add) > 0)
        if len(add):
            new &= add.ids[order][at] == ids
            out[new] = first + order[at[new]]
        return out

    src, dst, eid = edges
    s, d = ext(src), ext(dst)
    ok = (s >= 0) & (d >= 0)
    return s[ok], d[ok], eid[ok]
