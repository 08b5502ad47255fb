"""The in-memory index of a provenance graph: compact arrays, both edge directions.

A :class:`GraphIndex` numbers the nodes ``0 … n-1`` in id order and keeps

* the node attributes as one pandas frame (categorical strings, nullable ints), and the hot
  ones as numpy arrays: ``ids``, ``is_v`` (p- or v-node), ``op`` (the node's
  :class:`~lipspark.vocabulary.Op` as an int8 code: what it computes), ``label_code`` (its
  display label), ``type_code``;
* the edges (a multiset: a node used twice has two edges) as two CSR arrays, children → node
  (``in_ptr``/``in_src``) and node → parents (``out_ptr``/``out_dst``), with ``eid`` naming each
  edge so that a zoomed-out view can give back exactly the edges it hid.

Traversals gather whole frontiers with numpy, so a query's cost grows with its answer and the
depth of the graph, not with the graph's size. Indexes are immutable: ZoomOut, ZoomIn and
deletion return new ones (see :mod:`lipspark.query`). A few conveniences work by node id:
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

from typing import Any, Callable, ClassVar, Iterable, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa

from lipspark.errors import LipsparkError, StoreError
from lipspark.graph import expression
from lipspark.graph.expand import concat_frames, expand_segments
from lipspark.store.graphs import graph_segments
from lipspark.vocabulary import Op, Segment

__all__ = ["GraphIndex", "gather", "unique_positions", "op_codes", "NODE_TYPES"]

#: Node types of the paper (input, state, output, module invocation) and ``z``, the p-node a
#: ZoomOut puts in place of an invocation's intermediate computation. Code 0 is "no type".
NODE_TYPES = ("", "i", "s", "o", "m", "z")
_ATTRS = ["kind", "op", "label", "seg", "value", "relation", "tuple", "type", "module", "node", "execution", "invocation", "column"]
_CATEGORICAL = ["kind", "label", "relation", "type", "module", "node", "column"]


def gather(ptr: np.ndarray, targets: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """Concatenated CSR rows ``targets[ptr[v]:ptr[v+1]]`` for every ``v`` in ``nodes``.

    >>> gather(np.array([0, 2, 3, 3]), np.array([7, 8, 9]), np.array([0, 2, 1])).tolist()
    [7, 8, 9]
    """
    if len(nodes) == 0:
        return np.empty(0, dtype=targets.dtype)
    starts = ptr[nodes]
    lens = ptr[nodes + 1] - starts
    total = int(lens.sum())
    if total == 0:
        return np.empty(0, dtype=targets.dtype)
    offs = np.repeat(starts - np.cumsum(lens) + lens, lens)
    return targets[offs + np.arange(total, dtype=np.int64)]


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


def op_codes(column: "pd.Series | Sequence[Any]") -> np.ndarray:
    """The int8 :class:`~lipspark.vocabulary.Op` codes of an ``op`` column of Op members, codes,
    names or symbols (:meth:`Op.parse`); anything else is a :class:`~lipspark.errors.StoreError`.

    >>> op_codes(["token", Op.TIMES, 5, "⊗"]).tolist()
    [1, 3, 5, 11]
    """
    col = pd.Series(column)
    if col.dtype.kind in "iu":
        codes = col.to_numpy(dtype=np.int64)
        bad = sorted(set(codes.tolist()) - {int(o) for o in Op})
        if bad:
            raise StoreError(f"unknown operator code(s) {bad[:5]} in the node column 'op'; expected 1..{len(Op)}")
        return codes.astype(np.int8)
    parsed: dict[Any, int] = {}
    out = np.empty(len(col), dtype=np.int8)
    for i, v in enumerate(col.tolist()):
        if v not in parsed:
            if v is None or (isinstance(v, float) and np.isnan(v)):
                raise StoreError("a node has no operator: the node column 'op' must name one for every node")
            try:
                parsed[v] = int(Op.parse(v.item() if hasattr(v, "item") else v))
            except LipsparkError as err:
                raise StoreError(f"node column 'op': {err}") from err
        out[i] = parsed[v]
    return out


def _scalar(v: Any) -> Any:
    """A plain Python value: numpy scalars unwrapped, None/NA/NaN as None."""
    if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)):
        return None
    return v.item() if hasattr(v, "item") else v


def _in_sorted(sorted_arr: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Mask: which of ``x`` occur in the sorted array ``sorted_arr``."""
    idx = np.minimum(np.searchsorted(sorted_arr, x), len(sorted_arr) - 1)
    return sorted_arr[idx] == x


def _csr(keys: np.ndarray, vals: np.ndarray, n: int, order: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CSR of ``vals`` grouped by ``keys`` (rows ``0..n-1``, edge order kept within a row);
    ``order`` is that grouping when the caller already has it. Also returns the order."""
    if order is None:
        order = np.argsort(keys, kind="stable")
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys, minlength=n), out=ptr[1:])
    return ptr, vals[order].astype(np.int32 if n < 2**31 else np.int64), order


class GraphIndex:
    """An immutable, indexed provenance graph (see the module docstring).

    Build one with :meth:`build` from node and edge frames, or :meth:`load` from a store.
    """

    def __init__(self, nodes: pd.DataFrame, src: np.ndarray, dst: np.ndarray, eid: np.ndarray, *, zoom: dict[str, Any] | None = None,
                 orders: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        # ``nodes`` sorted by id, positional index; src/dst are node positions
        self.nodes = nodes
        self.ids = nodes["id"].to_numpy(dtype=np.int64)
        n = len(self.ids)
        self.is_v = (nodes["kind"] == "v").to_numpy()
        #: what each node computes: :class:`~lipspark.vocabulary.Op` codes
        self.op = nodes["op"].to_numpy(dtype=np.int8)
        label = nodes["label"].astype("category")
        self.labels = label.cat.categories
        self.label_code = label.cat.codes.to_numpy()
        types = nodes["type"].astype("category")
        cats = [str(c) for c in types.cat.categories]
        bad = sorted(set(cats) - set(NODE_TYPES))
        if bad:
            raise StoreError(f"unknown node type(s) {bad}; expected one of {list(NODE_TYPES[1:])}")
        lut = np.array([NODE_TYPES.index(c) for c in cats] + [0], dtype=np.int8)  # code -1 (no type) -> 0
        self.type_code = lut[types.cat.codes.to_numpy()]
        self.src = src.astype(np.int64, copy=False)
        self.dst = dst.astype(np.int64, copy=False)
        self.eid = eid.astype(np.int64, copy=False)
        self.in_ptr, self.in_src, self.in_order = _csr(self.dst, self.src, n, orders[0] if orders else None)
        self.in_eid = self.eid[self.in_order]
        self.out_ptr, self.out_dst, self.out_order = _csr(self.src, self.dst, n, orders[1] if orders else None)
        #: what each zoomed-out module hid, so that ZoomIn can give it back (see lipspark.query.zoom)
        self.zoom: dict[str, Any] = dict(zoom or {})

    #: How Jupyter draws a graph (``_repr_html_``): set by :mod:`lipspark.viz` when it is imported,
    #: so the graph layer does not depend on the drawing layer. ``None``: the text repr.
    html_renderer: ClassVar[Callable[["GraphIndex"], str | None] | None] = None

    # ------------------------------------------------------------------ construction
    @classmethod
    def build(cls, nodes: pd.DataFrame, edges: pd.DataFrame) -> "GraphIndex":
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
        nodes = nodes.reindex(columns=["id", *_ATTRS]).sort_values("id", kind="stable").reset_index(drop=True)
        nodes["op"] = op_codes(nodes["op"])
        for c in _CATEGORICAL:
            nodes[c] = nodes[c].astype("category")
        for c in ("seg", "execution", "invocation"):
            nodes[c] = pd.array(nodes[c], dtype="Int64")
        ids = nodes["id"].to_numpy(dtype=np.int64)
        if len(ids) > 1 and (np.diff(ids) == 0).any():
            raise StoreError("the graph has two nodes with the same id; it is corrupt")
        src = cls._positions(ids, edges["src"].to_numpy(dtype=np.int64), "source")
        dst = cls._positions(ids, edges["dst"].to_numpy(dtype=np.int64), "target")
        return cls(nodes, src, dst, np.arange(len(src), dtype=np.int64))

    @staticmethod
    def _positions(ids: np.ndarray, refs: np.ndarray, what: str) -> np.ndarray:
        pos = np.searchsorted(ids, refs)
        pos = np.minimum(pos, max(len(ids) - 1, 0))
        if not len(ids):  # no nodes: every edge dangles (and ids[pos] would be out of bounds)
            bad = np.ones(len(refs), dtype=bool)
        else:
            bad = ids[pos] != refs
        if np.any(bad):
            missing = sorted(set(refs[bad].tolist()))[:5]
            raise StoreError(f"the graph is corrupt: {int(np.sum(bad))} edge(s) have a {what} node that does not exist (ids {missing})")
        return pos

    @classmethod
    def from_segments(cls, segments: Sequence[tuple[Segment, "dict[str, pa.Table]"]], root: str | None = None) -> "GraphIndex":
        """Expand typed segments and their tables (:func:`~lipspark.graph.expand.expand_segments`)
        and index the result; ``root`` resolves relative file paths."""
        nodes, edges = expand_segments(segments, root)
        return cls.build(nodes, edges)

    @classmethod
    def load(cls, path: str) -> "GraphIndex":
        """Index the graph of a workflow store or of a :meth:`Tracker.write` directory.

        Loading only reads (:func:`lipspark.store.graph_segments`): a store with deferred
        capture is materialized first (``lipspark materialize``), or this says so in one line.

        >>> GraphIndex.load("/nonexistent")
        Traceback (most recent call last):
        ...
        lipspark.errors.StoreError: no graph at /nonexistent (manifest.json missing)
        """
        segments, root = graph_segments(path)
        return cls.from_segments(segments, root=root)

    def derive(self, keep: np.ndarray, edge_keep: np.ndarray, add_nodes: pd.DataFrame | None = None,
               add_edges: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None, *, zoom: dict[str, Any] | None = None) -> "GraphIndex":
        """A new index with the nodes ``keep`` (bool mask) and edges ``edge_keep`` (bool mask, both
        endpoints kept), plus ``add_nodes`` and ``add_edges`` = (src ids, dst ids, eids).

        Positions are remapped with a prefix sum and the CSR orders filtered, not re-sorted, so a
        deletion's view costs a few passes over the arrays.
        """
        kept_pos = np.flatnonzero(keep)
        remap = np.full(len(self.ids), -1, dtype=np.int64)
        kept = self.nodes.iloc[kept_pos]
        if add_nodes is not None and len(add_nodes):
            all_ids = np.concatenate([self.ids[kept_pos], add_nodes["id"].to_numpy(dtype=np.int64)])
            order = np.argsort(all_ids, kind="stable")
            rank = np.empty(len(order), dtype=np.int64)
            rank[order] = np.arange(len(order), dtype=np.int64)
            remap[kept_pos] = rank[: len(kept_pos)]
            nodes = _concat([kept, add_nodes]).take(order).reset_index(drop=True)
            ids = all_ids[order]
            if len(ids) > 1 and (np.diff(ids) == 0).any():
                raise StoreError("a derived view would have two nodes with the same id")
        else:
            remap[kept_pos] = np.arange(len(kept_pos), dtype=np.int64)
            nodes = kept.reset_index(drop=True)
            ids = self.ids[kept_pos]
        src, dst, eid = remap[self.src[edge_keep]], remap[self.dst[edge_keep]], self.eid[edge_keep]
        if (src < 0).any() or (dst < 0).any():
            raise StoreError("derive: an edge kept in the view has an endpoint that does not exist in the view")
        orders = None
        if add_edges is not None and len(add_edges[0]):
            src = np.concatenate([src, self._positions(ids, add_edges[0], "source")])
            dst = np.concatenate([dst, self._positions(ids, add_edges[1], "target")])
            eid = np.concatenate([eid, add_edges[2]])
        else:  # kept nodes keep their relative order: filtering the groupings keeps them grouped
            new_edge = np.cumsum(edge_keep) - 1
            orders = (new_edge[self.in_order[edge_keep[self.in_order]]], new_edge[self.out_order[edge_keep[self.out_order]]])
        return GraphIndex(nodes, src, dst, eid, zoom=self.zoom if zoom is None else zoom, orders=orders)

    # ------------------------------------------------------------------ lookups
    def __len__(self) -> int:
        return len(self.ids)

    @property
    def num_edges(self) -> int:
        """Number of edges (with multiplicity)."""
        return len(self.src)

    def position(self, node_id: int) -> int:
        """The position of a node id; :class:`~lipspark.errors.LipsparkError` if it is absent."""
        i = int(np.searchsorted(self.ids, np.int64(node_id)))
        if i >= len(self.ids) or self.ids[i] != node_id:
            raise LipsparkError(f"no node with id {node_id} in this graph (view)")
        return i

    def positions(self, node_ids: Iterable[int]) -> np.ndarray:
        """Positions of node ids; ids not in the graph are dropped."""
        refs = np.asarray(list(node_ids), dtype=np.int64)
        pos = np.minimum(np.searchsorted(self.ids, refs), max(len(self.ids) - 1, 0))
        return np.unique(pos[self.ids[pos] == refs]) if len(self.ids) and len(refs) else np.zeros(0, dtype=np.int64)

    def contains(self, node_id: int) -> bool:
        """True iff the graph (view) has a node with this id."""
        i = int(np.searchsorted(self.ids, np.int64(node_id)))
        return i < len(self.ids) and int(self.ids[i]) == int(node_id)

    def label(self, pos: int) -> str:
        """The label of the node at ``pos``."""
        return str(self.labels[self.label_code[pos]])

    def type(self, pos: int) -> str:
        """The node type at ``pos``: ``i``, ``s``, ``o``, ``m``, ``z`` or ``""``."""
        return NODE_TYPES[self.type_code[pos]]

    def value_at(self, pos: int) -> Any:
        """The recorded value of the v-node at ``pos`` as a plain Python value (None when it has none)."""
        return _scalar(self.nodes["value"].iat[int(pos)])

    def attrs(self, pos: int) -> dict[str, Any]:
        """All attributes of the node at ``pos`` as plain Python values (``op`` as an :class:`Op`)."""
        row = self.nodes.iloc[int(pos)].to_dict()
        out = {k: _scalar(v) for k, v in row.items()}
        out["op"] = Op(int(self.op[int(pos)]))
        return out

    def op_of(self, pos: int) -> Op:
        """The operator of the node at ``pos``."""
        return Op(int(self.op[int(pos)]))

    def children(self, pos: int) -> np.ndarray:
        """Positions of the nodes with an edge into ``pos`` (with multiplicity)."""
        return self.in_src[self.in_ptr[pos]:self.in_ptr[pos + 1]]

    def parents(self, pos: int) -> np.ndarray:
        """Positions of the nodes ``pos`` has an edge into (with multiplicity)."""
        return self.out_dst[self.out_ptr[pos]:self.out_ptr[pos + 1]]

    @property
    def invocation_pos(self) -> np.ndarray:
        """For every node, the position of the invocation node that created it (-1: none)."""
        cached = getattr(self, "_invocation_pos", None)
        if cached is None:
            inv = self.nodes["invocation"].to_numpy(dtype=np.int64, na_value=-1)
            pos = np.minimum(np.searchsorted(self.ids, inv), max(len(self.ids) - 1, 0))
            cached = np.where((inv != -1) & (self.ids[pos] == inv) if len(self.ids) else inv != -1, pos, -1)
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
        mask = np.ones(len(self.ids), dtype=bool)
        if label is not None:
            mask &= (self.nodes["label"] == label).to_numpy(dtype=bool, na_value=False)
        if kind is not None:
            mask &= self.is_v if kind == "v" else ~self.is_v
        if op is not None:
            mask &= self.op == int(Op.parse(op))
        return [int(i) for i in self.ids[mask]]

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
        node = ref.values[column] if column is not None else ref
        return expression.polynomial(self, int(node))

    # ------------------------------------------------------------------ traversal
    def _closure(self, ptr: np.ndarray, targets: np.ndarray, seeds: Any, stop: np.ndarray | None = None) -> np.ndarray:
        """Positions reachable from ``seeds`` along ``ptr``/``targets`` (seeds only if reached).

        Small answers are tracked in a sorted array, so a query that reaches a few hundred nodes
        never touches an array of the graph's size; past n/256 nodes a dense mask takes over.
        """
        n = len(self.ids)
        frontier = unique_positions(np.atleast_1d(np.asarray(seeds, dtype=np.int64)), n)
        visited = np.zeros(0, dtype=np.int64)
        seen: np.ndarray | None = None
        while len(frontier):
            nxt = gather(ptr, targets, frontier)
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

    def ancestors(self, seeds: Any) -> np.ndarray:
        """Positions of every node with a path to a seed (the backward trace), seeds excluded
        unless they lie on a cycle-free path from another seed."""
        return self._closure(self.in_ptr, self.in_src, seeds)

    def descendants(self, seeds: Any, *, stop: np.ndarray | None = None) -> np.ndarray:
        """Positions of every node reachable from a seed (the forward trace).

        ``stop``: a boolean mask; nodes in it are reported but not expanded.
        """
        return self._closure(self.out_ptr, self.out_dst, seeds, stop)

    def topological(self, positions: np.ndarray) -> np.ndarray:
        """``positions`` ordered so that every node comes after its children (Kahn, vectorized)."""
        positions = np.unique(np.asarray(positions, dtype=np.int64))
        member = np.zeros(len(self.ids), dtype=bool)
        member[positions] = True
        kids = gather(self.in_ptr, self.in_src, positions)
        owner = np.repeat(positions, np.diff(self.in_ptr)[positions])
        inside = member[kids]
        pending = np.zeros(len(self.ids), dtype=np.int64)
        np.add.at(pending, owner[inside], 1)
        out: list[np.ndarray] = []
        frontier = positions[pending[positions] == 0]
        while len(frontier):
            out.append(frontier)
            ups = gather(self.out_ptr, self.out_dst, frontier)
            ups = ups[member[ups]]
            if not len(ups):
                break
            u, c = np.unique(ups, return_counts=True)
            pending[u] -= c
            frontier = u[pending[u] == 0]
        order = np.concatenate(out) if out else np.zeros(0, dtype=np.int64)
        if len(order) != len(positions):
            raise StoreError("the provenance graph has a cycle; it is corrupt")
        return order

    # ------------------------------------------------------------------ export
    def edge_frame(self) -> pd.DataFrame:
        """The edges as ids: ``src``, ``dst``, ``eid``."""
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
        em = mask[self.src] & mask[self.dst]
        out.add_edges_from(zip(self.ids[self.src[em]].tolist(), self.ids[self.dst[em]].tolist()))
        return out

    def _repr_html_(self) -> str | None:
        """Jupyter: the drawing :attr:`html_renderer` makes (``import lipspark.viz`` sets it to
        :func:`lipspark.viz.repr_html`), or None for the text repr."""
        renderer = type(self).html_renderer
        return renderer(self) if renderer is not None else None

    def same_as(self, other: "GraphIndex") -> bool:
        """True iff both have the same nodes (ids and attributes) and the same edge multiset."""
        if not np.array_equal(self.ids, other.ids):
            return False
        a = self.nodes.astype(object).where(self.nodes.notna(), None)
        b = other.nodes.astype(object).where(other.nodes.notna(), None)
        if not a.equals(b):
            return False
        ea = np.lexsort((self.ids[self.dst], self.ids[self.src]))
        eb = np.lexsort((other.ids[other.dst], other.ids[other.src]))
        return bool(np.array_equal(self.ids[self.src][ea], other.ids[other.src][eb]) and np.array_equal(self.ids[self.dst][ea], other.ids[other.dst][eb]))


def _concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """Concatenate node frames, keeping categoricals categorical (union of their categories)."""
    from pandas.api.types import union_categoricals

    frames = [f for f in frames if len(f)] or frames[:1]
    columns = list(frames[0].columns)
    cats = {c: union_categoricals([f[c].astype("category") for f in frames], ignore_order=True)
            for c in _CATEGORICAL if all(c in f.columns for f in frames)}
    out = concat_frames([f.drop(columns=list(cats)) for f in frames])
    for c, values in cats.items():
        out[c] = values
    for c in ("seg", "execution", "invocation"):
        if c in out.columns:
            out[c] = pd.array(out[c], dtype="Int64")
    if "op" in out.columns:
        out["op"] = op_codes(out["op"])
    return out[columns]
