"""The index of a provenance graph: compact arrays, both edge directions.

A :class:`GraphIndex` numbers the nodes ``0 … n-1`` (in id order within each *block*: a
graph built in memory is one block, a store's memory-mapped index one block per execution) and
keeps

* what traversals need as numpy arrays (memory-mapped for a store): ``ids``, ``is_v`` (p- or
  v-node), ``op`` (the node's :class:`~lipspark.vocabulary.Op` as an int8 code: what it
  computes), ``type_code``;
* every other attribute (label, value, tuple, relation, module, execution…) in an
  :class:`~lipspark.graph.attrs.Attributes` source read by position, only for the nodes a query
  shows or filters (:meth:`GraphIndex.column`, :meth:`GraphIndex.where`);
* the edges (a multiset: a node used twice has two edges) as CSR arrays, children → node
  (``in_ptr``/``in_src``; edge *slots* in this order, :attr:`src`/:attr:`dst`) and node →
  parents (:meth:`GraphIndex.gather_parents`), with ``eid`` naming each edge so that a
  zoomed-out view can give back exactly the edges it hid.

Traversals gather whole frontiers with numpy, so a query's cost grows with its answer and the
depth of the graph, not with the graph's size. Indexes are immutable: ZoomOut, ZoomIn and
deletion return views of them (:class:`~lipspark.graph.view.View`, a mask and an overlay over
this graph; see :mod:`lipspark.query`). A few conveniences work by node id:
:meth:`GraphIndex.polynomial`, :meth:`GraphIndex.value`, :meth:`GraphIndex.find`,
:meth:`GraphIndex.token_id`, :meth:`GraphIndex.node`, :meth:`GraphIndex.child_ids`.

>>> import pandas as pd
>>> nodes = pd.DataFrame({"id": [10, 11, 12], "kind": ["p", "p", "p"], "op": ["token", "token", "+"],
...                       "label": ["R:a", "R:b", "+"], "relation": ["R", "R", None]})
>>> edges = pd.DataFrame({"src": [10, 11], "dst": [12, 12]})
>>> g = GraphIndex.build(nodes, edges)
>>> g.ids[g.ancestors(g.position(12))].tolist()
[10, 11]
>>> g.ids[g.descendants(g.position(10))].tolist()
[12]
>>> str(g.polynomial(12)), g.find(op="token"), g.token_id("R:b")
('R:a + R:b', [10, 11], 11)
"""
from __future__ import annotations

import types
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Iterable, Mapping, Sequence

import numpy as np

from lipspark.errors import LipsparkError, StoreError
from lipspark.graph.attrs import ATTRIBUTES, NODE_TYPES, Attributes, Columns, Derived, lookup_in_blocks, op_codes, type_codes
from lipspark.vocabulary import Op, Segment
from lipspark.vocabulary.ids import SEGMENT_SHIFT, is_fine, positional

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    import pyarrow as pa

__all__ = ["GraphIndex", "NodeSet", "gather", "slots", "unique_positions", "op_codes", "type_codes", "NODE_TYPES", "NODE_COLUMNS"]


#: The columns of a node table (:meth:`GraphIndex.frame`), in order.
NODE_COLUMNS = ["id", "kind", "op", "label", "seg", "value", "relation", "tuple", "type", "module", "node", "execution", "invocation", "column"]


def gather(ptr: np.ndarray, targets: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """Concatenated CSR rows ``targets[ptr[v]:ptr[v+1]]`` for every ``v`` in ``nodes``.

    >>> gather(np.array([0, 2, 3, 3]), np.array([7, 8, 9]), np.array([0, 2, 1])).tolist()
    [7, 8, 9]
    """
    if len(nodes) == 0:
        return np.empty(0, dtype=targets.dtype)
    return targets[slots(ptr, nodes)]


def slots(ptr: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """The CSR slots ``ptr[v]:ptr[v+1]`` of every ``v`` in ``nodes``, concatenated (int64).

    >>> slots(np.array([0, 2, 3, 3]), np.array([0, 2, 1])).tolist()
    [0, 1, 2]
    """
    nodes = np.asarray(nodes, dtype=np.int64)
    if len(nodes) == 0:
        return np.zeros(0, dtype=np.int64)
    starts = np.asarray(ptr[nodes], dtype=np.int64)
    lens = np.asarray(ptr[nodes + 1], dtype=np.int64) - starts
    total = int(lens.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    return np.repeat(starts - np.cumsum(lens) + lens, lens) + np.arange(total, dtype=np.int64)


def unique_positions(a: np.ndarray, n: int) -> np.ndarray:
    """Sorted distinct values of ``a`` (positions below ``n``): a sort for small arrays, a mask
    over ``n`` for large ones (hashing a million positions costs more than marking them).

    >>> unique_positions(np.array([3, 1, 3]), 5).tolist()
    [1, 3]
    """
    if len(a) < max(64, n >> 6):
        return np.unique(a)
    mask = np.zeros(n, dtype=bool)
    mask[a] = True
    return np.flatnonzero(mask)


def _in_sorted(sorted_arr: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Mask: which of ``x`` occur in the sorted array ``sorted_arr``."""
    idx = np.minimum(np.searchsorted(sorted_arr, x), len(sorted_arr) - 1)
    return sorted_arr[idx] == x


@dataclass(frozen=True)
class NodeSet:
    """Nodes detached from a graph (what a view adds or a ZoomOut hides): ids, kinds,
    operators, types and their attributes."""

    ids: np.ndarray
    is_v: np.ndarray
    op: np.ndarray
    type_code: np.ndarray
    attrs: Attributes

    def __len__(self) -> int:
        return len(self.ids)

    @staticmethod
    def from_frame(nodes: "pd.DataFrame") -> "NodeSet":
        """Nodes given as a frame with ``id``, ``op`` and any attributes (as :meth:`GraphIndex.build` reads them)."""
        n = len(nodes)
        kind = nodes["kind"].astype(object).to_numpy() if "kind" in nodes.columns else np.full(n, "p", dtype=object)
        return NodeSet(nodes["id"].to_numpy(dtype=np.int64), kind == "v", op_codes(nodes["op"]),
                       type_codes(nodes["type"] if "type" in nodes.columns else [None] * n),
                       Columns(n, {c: nodes[c].astype(object).to_numpy() for c in ATTRIBUTES if c in nodes.columns}))

    @staticmethod
    def concat(sets: Sequence["NodeSet"]) -> "NodeSet":
        sets = [s for s in sets if len(s)]
        if not sets:
            return NodeSet(np.zeros(0, np.int64), np.zeros(0, bool), np.zeros(0, np.int8), np.zeros(0, np.int8), Columns(0, {}))
        return NodeSet(np.concatenate([s.ids for s in sets]), np.concatenate([s.is_v for s in sets]),
                       np.concatenate([s.op for s in sets]), np.concatenate([s.type_code for s in sets]),
                       Derived.flatten([(s.attrs, np.arange(len(s), dtype=np.int64)) for s in sets]))


def _node_key(op: "Op | str | int | None", type: str | None, kind: str | None) -> tuple[int, int, int]:
    """(operator code, node type code, 1 for v-nodes / 0 for p-nodes), -1 for "any"."""
    return (-1 if op is None else int(Op.parse(op)), -1 if type is None else NODE_TYPES.index(type or ""),
            -1 if kind is None else int(kind == "v"))


def _matching(op: np.ndarray, type_code: np.ndarray, is_v: np.ndarray, key: tuple[int, int, int]) -> np.ndarray:
    """Mask: the nodes whose arrays match ``key`` (:func:`_node_key`)."""
    mask = np.ones(len(op), dtype=bool)
    if key[0] >= 0:
        mask &= np.asarray(op) == key[0]
    if key[1] >= 0:
        mask &= np.asarray(type_code) == key[1]
    if key[2] >= 0:
        mask &= np.asarray(is_v) == bool(key[2])
    return mask


def _out_csr(src: np.ndarray, dst: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(src, kind="stable")
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=ptr[1:])
    return ptr, dst[order].astype(_pos_dtype(n), copy=False)


def _pos_dtype(n: int) -> Any:
    return np.int32 if n < 2**31 else np.int64


class GraphIndex:
    """An immutable, indexed provenance graph (see the module docstring).

    Build one with :meth:`build` from node and edge frames, or :meth:`load` from a store (whose
    query-ready index is memory-mapped: nothing is read until a query touches it).
    """

    def __init__(self, ids: np.ndarray, is_v: np.ndarray, op: np.ndarray, type_code: np.ndarray,
                 in_ptr: np.ndarray, in_src: np.ndarray, attrs: Attributes, *, in_eid: np.ndarray | None = None,
                 out: tuple[np.ndarray, np.ndarray] | None = None, cross: Sequence[tuple[np.ndarray, np.ndarray]] = (),
                 blocks: np.ndarray | None = None, zoom: dict[str, Any] | None = None) -> None:
        #: node ids; sorted within each block (one block unless the graph is a mapped store)
        self.ids = ids
        n = len(ids)
        self.is_v = is_v
        #: what each node computes: :class:`~lipspark.vocabulary.Op` codes
        self.op = op
        #: the node type (:data:`NODE_TYPES` code)
        self.type_code = type_code
        self._in_ptr = in_ptr
        self._in_src = in_src
        self._in_eid = in_eid
        self.attrs_source = attrs
        #: node offsets of the blocks (each sorted by id)
        self.blocks = np.array([0, n], dtype=np.int64) if blocks is None else blocks
        self._out = out
        #: per block, the edges whose source lies in an earlier block (sorted by source): (src, dst)
        self.cross = list(cross)
        #: what each zoomed-out module hid, so that ZoomIn can give it back (see lipspark.query.zoom)
        self.zoom: dict[str, Any] = dict(zoom or {})
        self._with: dict[tuple[int, int, int], np.ndarray] = {}

    #: How Jupyter draws a graph (``_repr_html_``): set by :mod:`lipspark.viz` when it is imported,
    #: so the graph layer does not depend on the drawing layer. ``None``: the text repr.
    html_renderer: ClassVar[Callable[["GraphIndex"], str | None] | None] = None

    #: What-if values (node id → value) a deletion gave this view's v-nodes, read in place of the
    #: captured ones (``value`` attribute); empty for a captured graph (see lipspark.graph.view).
    what_if: Mapping[int, Any] = types.MappingProxyType({})

    # ------------------------------------------------------------------ construction
    @classmethod
    def build(cls, nodes: "pd.DataFrame", edges: "pd.DataFrame") -> "GraphIndex":
        """Index a node frame (``id``, ``op`` plus attributes) and an edge frame (``src``, ``dst`` ids).

        ``op`` holds each node's operator (:class:`~lipspark.vocabulary.Op` members, codes, or
        names and symbols as :meth:`Op.parse` reads them). Edges are numbered in the order given
        (their ``eid``); a missing ``op`` column or an edge naming a node that is not in
        ``nodes`` is a :class:`~lipspark.errors.StoreError`.
        """
        if "op" not in nodes.columns:
            raise StoreError("the node frame has no 'op' column: every node needs its operator (lipspark.vocabulary.Op: "
                             "token, invocation, times, plus, delta, black_box, input, state, output, zoom, tensor, "
                             "count, sum, min, max, avg, constant)")
        order = np.argsort(nodes["id"].to_numpy(dtype=np.int64), kind="stable")
        nodes = nodes.iloc[order].reset_index(drop=True)
        ids = nodes["id"].to_numpy(dtype=np.int64)
        if len(ids) > 1 and (np.diff(ids) == 0).any():
            raise StoreError("the graph has two nodes with the same id; it is corrupt")
        kind = nodes["kind"].astype(object).to_numpy() if "kind" in nodes.columns else np.full(len(ids), "p", dtype=object)
        attrs = Columns(len(ids), {c: nodes[c].astype(object).to_numpy() for c in ATTRIBUTES if c in nodes.columns})
        src = cls._lookup_all(ids, edges["src"].to_numpy(dtype=np.int64), "source")
        dst = cls._lookup_all(ids, edges["dst"].to_numpy(dtype=np.int64), "target")
        return cls.from_arrays(ids, kind == "v", op_codes(nodes["op"]), type_codes(nodes["type"] if "type" in nodes.columns else [None] * len(ids)),
                               attrs, src, dst, np.arange(len(src), dtype=np.int64))

    @classmethod
    def from_arrays(cls, ids: np.ndarray, is_v: np.ndarray, op: np.ndarray, type_code: np.ndarray, attrs: Attributes,
                    src: np.ndarray, dst: np.ndarray, eid: np.ndarray, *, zoom: dict[str, Any] | None = None) -> "GraphIndex":
        """Index nodes sorted by id and edges given as positions (with their ``eid``)."""
        n = len(ids)
        order = np.argsort(dst, kind="stable")
        in_ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(dst, minlength=n), out=in_ptr[1:])
        return cls(ids, np.asarray(is_v, dtype=bool), np.asarray(op, dtype=np.int8), np.asarray(type_code, dtype=np.int8),
                   in_ptr, src[order].astype(_pos_dtype(n), copy=False), attrs, in_eid=np.asarray(eid, dtype=np.int64)[order], zoom=zoom)

    @staticmethod
    def _lookup_all(ids: np.ndarray, refs: np.ndarray, what: str) -> np.ndarray:
        pos = np.searchsorted(ids, refs)
        pos = np.minimum(pos, max(len(ids) - 1, 0))
        bad = np.ones(len(refs), dtype=bool) if not len(ids) else ids[pos] != refs
        if np.any(bad):
            missing = sorted(set(refs[bad].tolist()))[:5]
            raise StoreError(f"the graph is corrupt: {int(np.sum(bad))} edge(s) have a {what} node that does not exist (ids {missing})")
        return pos

    @classmethod
    def from_segments(cls, segments: Sequence[tuple[Segment, "dict[str, pa.Table]"]], root: str | None = None) -> "GraphIndex":
        """Expand typed segments and their tables (:func:`~lipspark.graph.expand.expand_segments`)
        and index the result in memory; ``root`` resolves relative file paths."""
        from lipspark.graph.expand import expand_segments

        nodes, edges = expand_segments(segments, root)
        return cls.build(nodes, edges)

    @classmethod
    def load(cls, path: str) -> "GraphIndex":
        """The graph of a workflow store or of a :meth:`Tracker.write` directory, through its
        query-ready index (:mod:`lipspark.graph.qindex`): memory-mapped, built first if it is
        missing or stale.

        Loading never replays: a store with deferred capture is materialized first
        (``lipspark materialize``), or this says so in one line.

        >>> GraphIndex.load("/nonexistent")
        Traceback (most recent call last):
        ...
        lipspark.errors.StoreError: no graph at /nonexistent (manifest.json missing)
        """
        from lipspark.graph import qindex

        try:
            mapped = qindex.open_mapped(path)
        except OSError as err:
            if err.errno not in (13, 30):  # EACCES, EROFS: a store this process cannot write
                raise
            from lipspark.store.graphs import graph_segments

            segments, root = graph_segments(path)  # indexed in memory instead: same answers, slower
            return cls.from_segments(segments, root=root)
        return cls(mapped.ids, mapped.is_v, mapped.op, mapped.type_code, mapped.in_ptr, mapped.in_src, mapped.attrs,
                   out=mapped.out, cross=mapped.cross, blocks=mapped.blocks)

    def derive(self, keep: np.ndarray, edge_keep: np.ndarray, add: NodeSet | None = None,
               add_edges: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None, *, zoom: dict[str, Any] | None = None) -> "GraphIndex":
        """A new in-memory index with the nodes ``keep`` (bool mask) and edges ``edge_keep`` (bool
        mask over :attr:`src`/:attr:`dst`, both endpoints kept), plus the nodes ``add`` and the
        edges ``add_edges`` = (src ids, dst ids, eids). The node and edge arrays are copied, a
        pass over the graph (ZoomOut, ZoomIn and deletion make a :class:`~lipspark.graph.view.View`
        instead); attributes are not: it reads them from this graph's source (and ``add``'s) by
        position."""
        kept_pos = np.flatnonzero(keep)
        ids_kept = self.ids[kept_pos]
        parts: list[tuple[Attributes, np.ndarray]] = [(self.attrs_source, kept_pos)]
        ids, is_v, op, tc = ids_kept, self.is_v[kept_pos], self.op[kept_pos], self.type_code[kept_pos]
        if add is not None and len(add):
            ids = np.concatenate([ids, add.ids])
            is_v, op, tc = np.concatenate([is_v, add.is_v]), np.concatenate([op, add.op]), np.concatenate([tc, add.type_code])
            parts.append((add.attrs, np.arange(len(add), dtype=np.int64)))
        attrs = Derived.flatten(parts)
        order = np.argsort(ids, kind="stable")
        ids, is_v, op, tc = ids[order], is_v[order], op[order], tc[order]
        attrs = Derived(attrs.parts, attrs.which[order], attrs.where_pos[order])
        if len(ids) > 1 and (np.diff(ids) == 0).any():
            raise StoreError("a derived view would have two nodes with the same id")
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.arange(len(order), dtype=np.int64)
        remap = np.full(len(self.ids), -1, dtype=np.int64)
        remap[kept_pos] = rank[: len(kept_pos)]
        src, dst, eid = remap[self.src[edge_keep]], remap[self.dst[edge_keep]], self.eid[edge_keep]
        if (src < 0).any() or (dst < 0).any():
            raise StoreError("derive: an edge kept in the view has an endpoint that does not exist in the view")
        if add_edges is not None and len(add_edges[0]):
            src = np.concatenate([src, self._lookup_all(ids, np.asarray(add_edges[0], dtype=np.int64), "source")])
            dst = np.concatenate([dst, self._lookup_all(ids, np.asarray(add_edges[1], dtype=np.int64), "target")])
            eid = np.concatenate([eid, np.asarray(add_edges[2], dtype=np.int64)])
        return GraphIndex.from_arrays(ids, is_v, op, tc, attrs, src, dst, eid, zoom=self.zoom if zoom is None else zoom)

    def take(self, positions: np.ndarray) -> NodeSet:
        """The nodes at ``positions``, detached (ids, kinds, operators, types, attributes)."""
        positions = np.asarray(positions, dtype=np.int64)
        return NodeSet(self.ids[positions], self.is_v[positions], self.op[positions], self.type_code[positions],
                       Derived.flatten([(self.attrs_source, positions)]))

    # ------------------------------------------------------------------ edges
    @property
    def in_ptr(self) -> np.ndarray:
        """Edges grouped by target (the children of each node): slots ``in_ptr[v]:in_ptr[v+1]`` of :attr:`in_src`."""
        return self._in_ptr

    @property
    def in_src(self) -> np.ndarray:
        """The source position of the edge in each slot (see :attr:`in_ptr`)."""
        return self._in_src

    @property
    def base(self) -> "GraphIndex":
        """The captured graph this one is a view of (:class:`~lipspark.graph.view.View`); itself here."""
        return self

    @property
    def num_edges(self) -> int:
        """Number of edges (with multiplicity)."""
        return int(self.in_ptr[-1]) if len(self.in_ptr) else 0

    @property
    def src(self) -> np.ndarray:
        """Source position of every edge, in edge-slot order (edges grouped by target)."""
        cached = getattr(self, "_src", None)
        if cached is None:
            cached = np.asarray(self.in_src, dtype=np.int64)
            self._src = cached
        return cached

    @property
    def dst(self) -> np.ndarray:
        """Target position of every edge, in edge-slot order."""
        cached = getattr(self, "_dst", None)
        if cached is None:
            cached = np.repeat(np.arange(len(self.ids), dtype=np.int64), np.diff(self.in_ptr))
            self._dst = cached
        return cached

    @property
    def eid(self) -> np.ndarray:
        """The id of every edge, in edge-slot order (stable across views; -1 for edges a view added)."""
        if self._in_eid is None:
            return np.arange(self.num_edges, dtype=np.int64)
        return self._in_eid

    @property
    def in_eid(self) -> np.ndarray:
        """The id of the edge in each slot of :attr:`in_src` (same as :attr:`eid`)."""
        return self.eid

    @property
    def out_ptr(self) -> np.ndarray:
        """Parents CSR pointers (edges to nodes of the same block; see :meth:`gather_parents`)."""
        return self._out_csr()[0]

    @property
    def out_dst(self) -> np.ndarray:
        """Parents CSR targets (see :attr:`out_ptr`)."""
        return self._out_csr()[1]

    def _out_csr(self) -> tuple[np.ndarray, np.ndarray]:
        if self._out is None:
            self._out = _out_csr(self.src, self.dst, len(self.ids))
        return self._out

    def edge_ids(self, edge_slots: np.ndarray) -> np.ndarray:
        """The :attr:`eid` of the edges in ``edge_slots`` (no array of all edges is made)."""
        edge_slots = np.asarray(edge_slots, dtype=np.int64)
        return edge_slots if self._in_eid is None else np.asarray(self._in_eid[edge_slots], dtype=np.int64)

    def gather_children(self, frontier: np.ndarray, *, owners: bool = False) -> Any:
        """Positions of the children of the nodes at ``frontier`` (concatenated in frontier
        order, with multiplicity); with ``owners``, also which frontier entry each belongs to."""
        frontier = np.asarray(frontier, dtype=np.int64)
        kids = gather(self.in_ptr, self.in_src, frontier).astype(np.int64, copy=False)
        if not owners:
            return kids
        return np.repeat(np.arange(len(frontier), dtype=np.int64), self.degrees(frontier)), kids

    def degrees(self, positions: np.ndarray) -> np.ndarray:
        """The number of incoming edges (children, with multiplicity) of the nodes at ``positions``."""
        positions = np.asarray(positions, dtype=np.int64)
        ptr = self.in_ptr
        return np.asarray(ptr[positions + 1], dtype=np.int64) - np.asarray(ptr[positions], dtype=np.int64)

    def gather_parents(self, frontier: np.ndarray, *, owners: bool = False) -> Any:
        """Positions of the parents of the nodes at ``frontier`` (with multiplicity); with
        ``owners``, also which frontier entry (index into ``frontier``) each one belongs to."""
        frontier = np.asarray(frontier, dtype=np.int64)
        ptr, dst = self._out_csr()
        found = [gather(ptr, dst, frontier).astype(np.int64, copy=False)]
        own = [np.repeat(np.arange(len(frontier), dtype=np.int64), ptr[frontier + 1] - ptr[frontier])] if owners else []
        fmin, fmax = (int(frontier.min()), int(frontier.max())) if len(frontier) else (0, -1)
        for xsrc, xdst in self.cross:
            if not len(xsrc) or not len(frontier) or fmax < int(xsrc[0]) or fmin > int(xsrc[-1]):
                continue  # no source in range: a frontier in recent blocks skips every older one at once
            lo, hi = np.searchsorted(xsrc, frontier, side="left"), np.searchsorted(xsrc, frontier, side="right")
            lens = hi - lo
            if not lens.any():
                continue
            idx = np.repeat(lo - np.cumsum(lens) + lens, lens) + np.arange(int(lens.sum()), dtype=np.int64)
            found.append(np.asarray(xdst[idx], dtype=np.int64))
            if owners:
                own.append(np.repeat(np.arange(len(frontier), dtype=np.int64), lens))
        parents = np.concatenate(found) if len(found) > 1 else found[0]
        if owners:
            return (np.concatenate(own) if len(own) > 1 else own[0]), parents
        return parents

    # ------------------------------------------------------------------ lookups
    def __len__(self) -> int:
        return len(self.ids)

    def lookup(self, node_ids: np.ndarray, *, positional: bool = False) -> np.ndarray:
        """Position of each id (-1 where the graph has no such node).

        A graph of several blocks (a store) looks for an id in the block of the segment its
        bits name first, then, if it is not there, in every block (a content id may have any
        bits). ``positional``: the ids are positional (``segment << 40 | ordinal``, such as
        zoom ids), so one missing from its segment's block is absent — no search of every block.
        """
        refs = np.asarray(node_ids, dtype=np.int64)
        hint = self.attrs_source.segment_blocks(refs >> SEGMENT_SHIFT) if len(self.blocks) > 2 and len(refs) else None
        return lookup_in_blocks(self.ids, self.blocks, refs, hint, positional)

    def by_id(self, positions: Any) -> np.ndarray:
        """``positions`` ordered by node id (how answers are listed, whatever the blocks)."""
        positions = np.asarray(positions, dtype=np.int64)
        return positions[np.argsort(np.asarray(self.ids[positions]), kind="stable")]

    def edges_among(self, positions: Any) -> tuple[np.ndarray, np.ndarray]:
        """Edges (source and target positions, with multiplicity) whose both ends are among
        ``positions``, ordered by (source id, target id): read from the children of those nodes
        only, never a pass over all edges."""
        pos = np.unique(np.asarray(positions, dtype=np.int64))
        at, kids = self.gather_children(pos, owners=True)
        owner = pos[at]
        if len(pos) and len(kids):
            at = np.minimum(np.searchsorted(pos, kids), len(pos) - 1)
            inside = pos[at] == kids
        else:
            inside = np.zeros(len(kids), dtype=bool)
        src, dst = kids[inside], owner[inside]
        order = np.lexsort((np.asarray(self.ids[dst]), np.asarray(self.ids[src])))
        return src[order], dst[order]

    def segment_nodes(self, conditions: dict[str, list[Any]]) -> np.ndarray | None:
        """Positions (sorted) of the nodes with *positional* ids (tokens, invocation and boundary
        nodes: ``segment << SEGMENT_SHIFT | ordinal``) of the segments whose attributes match
        ``conditions`` (relation, module, node, execution, invocation, column -> allowed values).
        Read from id ranges in the segments' blocks, so its cost is the answer's, not the
        graph's; None when the attribute source has no segment table (filter with :meth:`where`)."""
        found = self.attrs_source.segment_rows(conditions)
        if found is None:
            return None
        segs, blocks = found
        seg_of = getattr(self.attrs_source, "seg", None)
        parts = []
        for seg, b in zip(segs.tolist(), blocks.tolist()):
            lo, hi = int(self.blocks[b]), int(self.blocks[b + 1])
            if is_fine(seg):  # an operation of module code: its ids are hashed, not a range
                if seg_of is None:
                    return None
                parts.append(lo + np.flatnonzero(np.asarray(seg_of[lo:hi]) == seg))
                continue
            part = self.ids[lo:hi]
            i, j = np.searchsorted(part, [positional(seg, 0), positional(seg + 1, 0)])
            cand = np.arange(lo + int(i), lo + int(j), dtype=np.int64)
            if seg_of is not None:
                cand = cand[np.asarray(seg_of[cand]) == seg]  # a content id may fall in the range
            parts.append(cand)
        return np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)

    def position(self, node_id: int) -> int:
        """The position of a node id; :class:`~lipspark.errors.LipsparkError` if it is absent."""
        pos = int(self.lookup(np.array([node_id], dtype=np.int64))[0])
        if pos < 0:
            raise LipsparkError(f"no node with id {node_id} in this graph (view)")
        return pos

    def positions(self, node_ids: Iterable[int]) -> np.ndarray:
        """Positions (sorted) of node ids; ids not in the graph are dropped."""
        pos = self.lookup(np.asarray(list(node_ids), dtype=np.int64))
        return np.unique(pos[pos >= 0])

    def contains(self, node_id: int) -> bool:
        """True iff the graph (view) has a node with this id."""
        return bool(self.lookup(np.array([node_id], dtype=np.int64))[0] >= 0)

    def column(self, name: str, positions: Any = None) -> np.ndarray:
        """Attribute ``name`` of the nodes at ``positions`` (all nodes if None) as an object
        array of plain Python values (None where missing). ``id``, ``kind``, ``op`` (an
        :class:`Op` code) and ``type`` come from the index's arrays, the rest from its source."""
        pos = np.arange(len(self.ids), dtype=np.int64) if positions is None else np.asarray(positions, dtype=np.int64)
        out = np.empty(len(pos), dtype=object)
        if name == "id":
            out[:] = np.asarray(self.ids[pos], dtype=np.int64).tolist()
        elif name == "kind":
            out[:] = np.where(self.is_v[pos], "v", "p").tolist()
        elif name == "op":
            out[:] = np.asarray(self.op[pos], dtype=np.int64).tolist()
        elif name == "type":
            out[:] = [NODE_TYPES[c] or None for c in self.type_code[pos].tolist()]
        else:
            return self.attrs_source.get(name, pos)
        return out

    def where(self, name: str, values: Iterable[Any]) -> np.ndarray:
        """Boolean mask over all nodes: attribute ``name`` is one of ``values`` (a segment-level
        attribute of a mapped graph is one gather, not a pass over strings)."""
        return self.attrs_source.where(name, values)

    def int_column(self, name: str) -> np.ndarray:
        """An integer attribute (``seg``, ``execution``, ``invocation``) of every node, -1 where missing."""
        return self.attrs_source.int_column(name)

    def distinct(self, name: str, positions: np.ndarray | None = None) -> set[Any]:
        """Distinct non-missing values of attribute ``name`` (at ``positions``, or everywhere)."""
        return self.attrs_source.distinct(name, positions)

    def label(self, pos: int) -> str:
        """The label of the node at ``pos``."""
        v = self.attrs_source.get("label", np.array([pos], dtype=np.int64))[0]
        return "" if v is None else str(v)

    def type(self, pos: int) -> str:
        """The node type at ``pos``: ``i``, ``s``, ``o``, ``m``, ``z`` or ``""``."""
        return NODE_TYPES[self.type_code[pos]]

    def value_at(self, pos: int) -> Any:
        """The recorded value of the v-node at ``pos`` as a plain Python value (None when it has none)."""
        return self.attrs_source.get("value", np.array([pos], dtype=np.int64))[0]

    def attrs(self, pos: int) -> dict[str, Any]:
        """All attributes of the node at ``pos`` as plain Python values (``op`` as an :class:`Op`)."""
        p = np.array([pos], dtype=np.int64)
        out: dict[str, Any] = {"id": int(self.ids[pos]), "kind": "v" if self.is_v[pos] else "p", "op": Op(int(self.op[pos]))}
        for name in ATTRIBUTES:
            out[name] = self.attrs_source.get(name, p)[0]
        out["type"] = NODE_TYPES[self.type_code[pos]] or None
        return {k: out[k] for k in NODE_COLUMNS}

    def frame(self, positions: Any = None) -> "pd.DataFrame":
        """The attributes of the nodes at ``positions`` (all by default) as a pandas frame with
        the columns of :data:`~lipspark.graph.expand.NODE_COLUMNS` (``op`` as int8 codes)."""
        import pandas as pd

        pos = np.arange(len(self.ids), dtype=np.int64) if positions is None else np.asarray(positions, dtype=np.int64)
        data = {name: self.column(name, pos) for name in NODE_COLUMNS}
        df = pd.DataFrame(data)
        df["id"] = df["id"].astype(np.int64)
        df["op"] = df["op"].astype(np.int8)
        for c in ("seg", "execution", "invocation"):
            df[c] = pd.array(df[c], dtype="Int64")
        return df

    @property
    def nodes(self) -> "pd.DataFrame":
        """All nodes' attributes as a pandas frame (:meth:`frame`); prefer :meth:`column` and
        :meth:`frame` of the positions you need on large graphs."""
        return self.frame()

    def op_of(self, pos: int) -> Op:
        """The operator of the node at ``pos``."""
        return Op(int(self.op[int(pos)]))

    def children(self, pos: int) -> np.ndarray:
        """Positions of the nodes with an edge into ``pos`` (with multiplicity)."""
        return np.asarray(self.in_src[self.in_ptr[pos]:self.in_ptr[pos + 1]], dtype=np.int64)

    def parents(self, pos: int) -> np.ndarray:
        """Positions of the nodes ``pos`` has an edge into (with multiplicity)."""
        return self.gather_parents(np.array([pos], dtype=np.int64))

    @property
    def invocation_pos(self) -> np.ndarray:
        """For every node, the position of the invocation node that created it (-1: none)."""
        cached = getattr(self, "_invocation_pos", None)
        if cached is None:
            inv = self.int_column("invocation")
            cached = np.full(len(inv), -1, dtype=np.int64)
            has = np.flatnonzero(inv != -1)
            if len(has):
                uniq, back = np.unique(inv[has], return_inverse=True)
                cached[has] = self.lookup(uniq)[back]
            self._invocation_pos = cached
        return cached

    def in_degree(self) -> np.ndarray:
        """Number of incoming edges of every node."""
        return np.diff(self.in_ptr)

    # ------------------------------------------------------------------ by node id
    def node(self, node_id: int) -> dict[str, Any]:
        """The attributes of the node with id ``node_id`` (see :meth:`attrs`)."""
        return self.attrs(self.position(node_id))

    def child_ids(self, node_id: int) -> list[int]:
        """Ids of the nodes with an edge into ``node_id``, with multiplicity, sorted."""
        return sorted(int(i) for i in self.ids[self.children(self.position(node_id))])

    def find(self, label: str | None = None, kind: str | None = None, op: "Op | str | int | None" = None) -> list[int]:
        """Ids (sorted) of the nodes with the given display label, kind (``p``/``v``) and/or operator."""
        cand = self.nodes_with(op=op, kind=kind)
        if label is not None:
            cand = cand[self.attrs_source.get("label", cand) == label]
        return sorted(int(i) for i in self.ids[cand])

    def nodes_with(self, *, op: "Op | str | int | None" = None, type: str | None = None, kind: str | None = None) -> np.ndarray:
        """Positions (sorted) of the nodes with operator ``op``, node type ``type`` (``i``, ``s``,
        ``o``, ``m``, ``z``) and kind ``kind`` (``p``/``v``), each ignored when None.

        One pass over the graph's small arrays the first time, kept for the next query (the
        invocation nodes, the outputs…); a view filters its base's answer."""
        key = _node_key(op, type, kind)
        found = self._with.get(key)
        if found is None:
            found = self._with[key] = np.flatnonzero(_matching(self.op, self.type_code, self.is_v, key))
            found.flags.writeable = False  # shared by every caller
        return found

    def token_id(self, label: str) -> int:
        """Id of the base tuple whose token is ``label`` (e.g. ``"Cars:C2"``)."""
        ids = self.find(label=label, op=Op.TOKEN)
        if len(ids) != 1:
            raise LipsparkError(f"expected one token {label!r}, found {len(ids)}")
        return ids[0]

    def polynomial(self, ref: Any) -> Any:
        """The provenance expression of a node id, or of a row's annotation (anything with
        ``factors``: the · of its factors' expressions; factor 0 stands for 1).

        See :func:`lipspark.graph.expression.polynomial`.
        """
        from lipspark.graph import expression

        factors = getattr(ref, "factors", None)
        if factors is None:
            return expression.polynomial(self, int(ref))
        return expression.product(self, [int(f) for f in factors if int(f) != 0])

    def value(self, ref: Any, column: str | None = None) -> Any:
        """The expression of a v-node (an :class:`~lipspark.semiring.AggValue` for aggregates,
        the value itself for constants): ``ref`` is its id, or a row's annotation together with
        the column name (``ref.values[column]``).

        The recorded value of the node at a *position* is :meth:`value_at`.
        """
        from lipspark.graph import expression

        node = ref.values[column] if column is not None else ref
        return expression.polynomial(self, int(node))

    # ------------------------------------------------------------------ traversal
    def _closure(self, step: Callable[[np.ndarray], np.ndarray], seeds: Any, stop: np.ndarray | None = None) -> np.ndarray:
        """Positions reachable from ``seeds`` by ``step`` (seeds only if reached).

        Small answers are tracked in a sorted array, so a query that reaches a few hundred nodes
        never touches an array of the graph's size; past n/256 nodes a dense mask takes over.
        """
        n = len(self)
        frontier = unique_positions(np.atleast_1d(np.asarray(seeds, dtype=np.int64)), n)
        visited = np.zeros(0, dtype=np.int64)
        seen: np.ndarray | None = None
        while len(frontier):
            nxt = step(frontier)
            if seen is None and len(visited) + len(nxt) > (n >> 8):  # a large step: no sorting it
                seen = np.zeros(n, dtype=bool)
                seen[visited] = True
            if seen is None:
                nxt = np.unique(nxt)
                if len(visited) and len(nxt):
                    nxt = nxt[~_in_sorted(visited, nxt)]
                if not len(nxt):
                    break
                visited = np.union1d(visited, nxt)
                if len(visited) > (n >> 8):
                    seen = np.zeros(n, dtype=bool)
                    seen[visited] = True
            else:
                nxt = nxt[~seen[nxt]]
                if not len(nxt):
                    break
                nxt = unique_positions(nxt, n)
                seen[nxt] = True
            frontier = nxt if stop is None else nxt[~stop[nxt]]
        return visited if seen is None else np.flatnonzero(seen)

    def ancestors(self, seeds: Any, *, stop: np.ndarray | None = None) -> np.ndarray:
        """Positions of every node with a path to a seed (the backward trace), seeds excluded
        unless they lie on a cycle-free path from another seed.

        ``stop``: a boolean mask; nodes in it are reported but not expanded."""
        return self._closure(self.gather_children, seeds, stop)

    def descendants(self, seeds: Any, *, stop: np.ndarray | None = None) -> np.ndarray:
        """Positions of every node reachable from a seed (the forward trace).

        ``stop``: a boolean mask; nodes in it are reported but not expanded.
        """
        return self._closure(self.gather_parents, seeds, stop)

    def topological(self, positions: np.ndarray) -> np.ndarray:
        """``positions`` ordered so that every node comes after its children (Kahn, vectorized;
        arrays the size of ``positions``, not of the graph)."""
        positions = np.unique(np.asarray(positions, dtype=np.int64))
        k = len(positions)
        if not k:
            return positions

        def local(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            at = np.minimum(np.searchsorted(positions, p), k - 1)
            return at, positions[at] == p

        owner, kids = self.gather_children(positions, owners=True)
        _, inside = local(kids)
        pending = np.bincount(owner[inside], minlength=k)
        out: list[np.ndarray] = []
        frontier = np.flatnonzero(pending == 0)
        done = 0
        while len(frontier):
            out.append(positions[frontier])
            done += len(frontier)
            at, ok = local(self.gather_parents(positions[frontier]))
            at = at[ok]
            if not len(at):
                break
            u, c = np.unique(at, return_counts=True)
            pending[u] -= c
            frontier = u[pending[u] == 0]
        if done != k:
            raise StoreError("the provenance graph has a cycle; it is corrupt")
        return np.concatenate(out)

    # ------------------------------------------------------------------ export
    def edge_frame(self) -> "pd.DataFrame":
        """The edges as ids: ``src``, ``dst``, ``eid``."""
        import pandas as pd

        return pd.DataFrame({"src": self.ids[self.src], "dst": self.ids[self.dst], "eid": self.eid})

    def to_networkx(self, positions: Any = None) -> Any:
        """A :class:`networkx.MultiDiGraph` of the graph (or of the nodes at ``positions``),
        with node attributes and one edge per edge of the multiset.

        >>> import pandas as pd
        >>> g = GraphIndex.build(pd.DataFrame({"id": [1, 2], "kind": "p", "op": ["token", "δ"], "label": ["R:a", "δ"]}),
        ...                      pd.DataFrame({"src": [1, 1], "dst": [2, 2]}))
        >>> nx_g = g.to_networkx()
        >>> nx_g.number_of_nodes(), nx_g.number_of_edges(), nx_g.nodes[2]["label"]
        (2, 2, 'δ')
        """
        import networkx as nx

        sel = np.arange(len(self.ids)) if positions is None else np.unique(np.asarray(positions, dtype=np.int64))
        mask = np.zeros(len(self.ids), dtype=bool)
        mask[sel] = True
        out = nx.MultiDiGraph()
        for pos in sel.tolist():
            out.add_node(int(self.ids[pos]), **{k: v for k, v in self.attrs(pos).items() if k != "id" and v is not None})
        src, dst = self.src, self.dst
        em = mask[src] & mask[dst]
        out.add_edges_from(zip(self.ids[src[em]].tolist(), self.ids[dst[em]].tolist()))
        return out

    def _repr_html_(self) -> str | None:
        """Jupyter: the drawing :attr:`html_renderer` makes (``import lipspark.viz`` sets it to
        :func:`lipspark.viz.repr_html`), or None for the text repr."""
        renderer = type(self).html_renderer
        return renderer(self) if renderer is not None else None

    def same_as(self, other: "GraphIndex") -> bool:
        """True iff both have the same nodes (ids and attributes) and the same edge multiset."""
        a_order, b_order = np.argsort(self.ids, kind="stable"), np.argsort(other.ids, kind="stable")
        if not np.array_equal(np.asarray(self.ids)[a_order], np.asarray(other.ids)[b_order]):
            return False
        for name in NODE_COLUMNS:
            if self.column(name, a_order).tolist() != other.column(name, b_order).tolist():
                return False
        ea = np.lexsort((self.ids[self.dst], self.ids[self.src]))
        eb = np.lexsort((other.ids[other.dst], other.ids[other.src]))
        return bool(np.array_equal(self.ids[self.src][ea], other.ids[other.src][eb]) and np.array_equal(self.ids[self.dst][ea], other.ids[other.dst][eb]))


