"""Views: a captured graph seen through a mask and a small overlay, never copied.

ZoomOut, ZoomIn and deletion (:mod:`lipspark.query`) return a :class:`View` of the graph the
query session started from, its *base* (a store's memory-mapped index, or a graph in memory):

* a mask of the base nodes the view does not show (hidden by a ZoomOut, removed by a deletion);
* an *overlay*: the nodes the view adds (the p-node a ZoomOut puts in place of an invocation)
  and the edges that touch them.

A base edge is in the view iff both of its ends are, and no zoom of the view *cuts* it (a
ZoomOut cuts the edges from an invocation's input nodes straight to its output nodes: the zoom
node stands for all of the invocation's computation; an overlay edge between two base nodes is
cut the same way); so hiding a node hides its edges, showing
it again gives them back, and a view never lists base edges. What a view costs is what it changes:
the mask (one byte per base node, zero pages until written), the sorted positions of whichever
side of the mask is smaller, and the overlay.

The view numbers its nodes like any :class:`~lipspark.graph.index.GraphIndex` (``0 … n-1``): the
visible base nodes in base order, then the overlay by id. Traversals, lookups and attributes go
through the base's arrays and the overlay without copying either; the node arrays (``ids``,
``op``…) are :class:`ViewArray` s, read by position; whole edge arrays (``in_ptr``, ``src``…)
are built only when something asks for them (export, drawing, :meth:`GraphIndex.same_as`).

>>> import pandas as pd
>>> g = GraphIndex.build(pd.DataFrame({"id": [1, 2, 3], "kind": "p", "op": ["token", "token", "+"],
...                                    "label": ["R:a", "R:b", "+"]}), pd.DataFrame({"src": [1, 2], "dst": [3, 3]}))
>>> v = change(g, remove=np.array([0]))
>>> v.ids.tolist(), v.base is g, v.ids[v.ancestors(v.position(3))].tolist(), v.num_edges
([2, 3], True, [2], 1)
>>> change(v, restore=np.array([0])) is g  # nothing left to change: the base itself
True
"""
from __future__ import annotations

from typing import Any, Iterable, Iterator, Mapping, Sequence, cast

import numpy as np
from numpy.lib.mixins import NDArrayOperatorsMixin

from lipspark.errors import StoreError
from lipspark.graph.attrs import Attributes, Columns, Derived
from lipspark.graph.index import GraphIndex, NodeSet, _matching, _node_key, _out_csr, _pos_dtype, slots
from lipspark.vocabulary.ids import SEGMENT_SHIFT

__all__ = ["View", "ViewArray", "ViewAttributes", "change", "ext_positions", "EMPTY_NODES"]

#: A node set with no nodes.
EMPTY_NODES = NodeSet(np.zeros(0, np.int64), np.zeros(0, bool), np.zeros(0, np.int8), np.zeros(0, np.int8), Columns(0, {}))


def _ranges(lo: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """``lo[i] … lo[i] + lens[i] - 1`` for every ``i``, concatenated."""
    total = int(lens.sum())
    return np.repeat(lo - np.cumsum(lens) + lens, lens) + np.arange(total, dtype=np.int64)


def _subset(nodes: NodeSet, idx: np.ndarray) -> NodeSet:
    """The nodes ``idx`` of ``nodes``, in that order."""
    idx = np.asarray(idx, dtype=np.int64)
    return NodeSet(nodes.ids[idx], nodes.is_v[idx], nodes.op[idx], nodes.type_code[idx], Derived.flatten([(nodes.attrs, idx)]))


class ViewArray(NDArrayOperatorsMixin):
    """A node array of a :class:`View` (``ids``, ``is_v``, ``op``, ``type_code``): entry ``p``
    is the base's entry for the ``p``-th visible base node, then the overlay's.

    Indexing with positions (an int, a slice, an integer or boolean array) reads only those
    entries; anything else — ``np.asarray``, arithmetic and comparisons, other ndarray methods —
    works on the whole array, built once on first use.
    """

    def __init__(self, view: "View", base: np.ndarray, extra: np.ndarray) -> None:
        self._view = view
        self._base = base
        self._extra = extra
        self._whole: np.ndarray | None = None
        self.dtype = np.asarray(base[:0]).dtype

    def __len__(self) -> int:
        return len(self._view)

    @property
    def shape(self) -> tuple[int]:
        return (len(self),)

    ndim = 1

    @property
    def size(self) -> int:
        return len(self)

    def __getitem__(self, key: Any) -> Any:
        if self._whole is not None:
            return self._whole[key]
        n = len(self)
        if isinstance(key, (int, np.integer)):
            p = int(key) + (n if int(key) < 0 else 0)
            if not 0 <= p < n:
                raise IndexError(f"index {int(key)} is out of bounds for a view of {n} nodes")
            return self._view._one(self._base, self._extra, p)
        if isinstance(key, slice):
            pos = np.arange(*key.indices(n), dtype=np.int64)
        elif isinstance(key, (list, np.ndarray, ViewArray)):
            pos = np.asarray(key)
            if pos.dtype == bool:
                if pos.shape != (n,):
                    raise IndexError(f"a boolean index of {pos.shape} for a view of {n} nodes")
                pos = np.flatnonzero(pos)
            elif pos.size == 0:
                pos = pos.astype(np.int64)
            elif pos.dtype.kind not in "iu" or pos.ndim != 1:
                return np.asarray(self)[key]
            pos = pos.astype(np.int64, copy=False)
            if len(pos) and (int(pos.min()) < -n or int(pos.max()) >= n):
                raise IndexError(f"an index is out of bounds for a view of {n} nodes")
            pos = np.where(pos < 0, pos + n, pos)
        else:
            return np.asarray(self)[key]
        return self._view._gather(self._base, self._extra, pos)

    def __setitem__(self, key: Any, value: Any) -> None:
        raise TypeError("a view's node arrays are read-only")

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        if self._whole is None:
            self._whole = self._view._whole(self._base, self._extra)
        return self._whole if dtype is None else self._whole.astype(dtype)

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if any(isinstance(x, ViewArray) for x in kwargs.get("out", ())):
            raise TypeError("a view's node arrays are read-only")
        args = [np.asarray(x) if isinstance(x, ViewArray) else x for x in inputs]
        return getattr(ufunc, method)(*args, **kwargs)

    def __iter__(self) -> Iterator[Any]:
        return iter(np.asarray(self))

    def tolist(self) -> list[Any]:
        return cast(list, np.asarray(self).tolist())

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(np.asarray(self), name)  # astype, sum, any, min…: on the whole array

    def __repr__(self) -> str:
        return f"ViewArray({np.asarray(self)!r})"


class ViewAttributes(Attributes):
    """A view's node attributes: its base's for base nodes, the overlay's for the others."""

    def __init__(self, view: "View") -> None:
        self.view = view
        self.n = len(view)

    def get(self, name: str, pos: np.ndarray) -> np.ndarray:
        v = self.view
        pos = np.asarray(pos, dtype=np.int64)
        out = np.empty(len(pos), dtype=object)
        isb = pos < v._nb
        if isb.all():
            out[:] = v._base.attrs_source.get(name, v._select(pos))
        else:
            out[isb] = v._base.attrs_source.get(name, v._select(pos[isb]))
            out[~isb] = v._overlay.attrs.get(name, pos[~isb] - v._nb)
        if name == "value" and v.what_if and len(pos):  # a deletion's what-if values, in place of the captured ones
            ids = np.asarray(v.ids[pos], dtype=np.int64)
            for i in np.flatnonzero(np.isin(ids, v._what_if_ids)).tolist():
                out[i] = v.what_if[int(ids[i])]
        return out

    def where(self, name: str, values: Iterable[Any]) -> np.ndarray:
        wanted = list(values)
        v = self.view
        return np.concatenate([v._compress(v._base.attrs_source.where(name, wanted)), v._overlay.attrs.where(name, wanted)])

    def int_column(self, name: str) -> np.ndarray:
        v = self.view
        return np.concatenate([v._compress(v._base.attrs_source.int_column(name)), v._overlay.attrs.int_column(name)])

    def group_of(self, name: str, groups: Sequence[Iterable[Any]]) -> np.ndarray:
        v = self.view
        groups = [list(g) for g in groups]
        return np.concatenate([v._compress(v._base.attrs_source.group_of(name, groups)), v._overlay.attrs.group_of(name, groups)])

    def segment_rows(self, conditions: Mapping[str, Sequence[Any]]) -> tuple[np.ndarray, np.ndarray] | None:
        return self.view._base.attrs_source.segment_rows(conditions)


class View(GraphIndex):
    """A graph that is its base minus hidden nodes plus an overlay (see the module docstring).
    Made by :func:`change`; immutable like every :class:`~lipspark.graph.index.GraphIndex`.

    ``edges`` are the overlay's edges as (source, target, eid) in *base-extended* positions:
    ``b < len(base)`` is base node ``b``, ``len(base) + j`` the overlay's node ``j``.
    """

    def __init__(self, base: GraphIndex, hidden: np.ndarray | None, overlay: NodeSet,
                 edges: tuple[np.ndarray, np.ndarray, np.ndarray], zoom: dict[str, Any] | None = None,
                 what_if: Mapping[int, Any] | None = None) -> None:
        if isinstance(base, View):
            raise StoreError("a view's base is a captured graph, not another view")
        self._base = base
        self._N = n_base = len(base)
        self._hidden = hidden
        h = 0 if hidden is None else int(np.count_nonzero(hidden))
        # number the visible base nodes through the sorted positions of the smaller side
        self._kept: np.ndarray | None = None
        self._gone = np.zeros(0, dtype=np.int64)
        if hidden is not None and 2 * h > n_base:
            self._kept = np.flatnonzero(~hidden)
        elif hidden is not None and h:
            self._gone = np.flatnonzero(hidden)
        self._adj = self._gone - np.arange(len(self._gone), dtype=np.int64)
        self._nb = n_base - h
        self._overlay = overlay
        self._n = self._nb + len(overlay)
        src, dst, eid = (np.asarray(a, dtype=np.int64) for a in edges)
        self._es, self._ed, self._ee = src, dst, eid  # all of the overlay's edges (a derived view carries them on)
        self.ids = cast(np.ndarray, ViewArray(self, base.ids, overlay.ids))
        self.is_v = cast(np.ndarray, ViewArray(self, base.is_v, overlay.is_v))
        self.op = cast(np.ndarray, ViewArray(self, base.op, overlay.op))
        self.type_code = cast(np.ndarray, ViewArray(self, base.type_code, overlay.type_code))
        self.attrs_source = ViewAttributes(self)
        bounds = self._rank_bounds(np.asarray(base.blocks, dtype=np.int64))
        self.blocks = np.append(bounds, self._n) if len(overlay) else bounds
        self.cross = []
        self._out = None
        self._in_eid = None
        self.zoom = dict(zoom or {})
        # base edges the zooms cut, as sorted keys target · n + source (base positions)
        # (only those of zooms of this base: a plain copy of a zoomed view carries its records but
        # has the cut edges left out already, and its positions are not the records' base's)
        cuts = [np.asarray(getattr(z, "cut", ()), dtype=np.int64) for z in self.zoom.values() if getattr(z, "base", None) is base]
        self._cut = np.unique(np.concatenate(cuts)) if cuts else np.zeros(0, dtype=np.int64)
        # the overlay edges the view shows: a zoom cuts an overlay edge between two base nodes as
        # it cuts a base edge (a deferred store's replayed invocations are overlays of its coarse graph)
        live = np.ones(len(src), dtype=bool)
        if len(self._cut) and len(src):
            both = (src < n_base) & (dst < n_base)
            live[both] = ~np.isin(dst[both] * n_base + src[both], self._cut)
        self._ls, self._ld, self._le = (src, dst, eid) if live.all() else (src[live], dst[live], eid[live])
        self._by_dst = np.argsort(self._ld, kind="stable")
        self._dst_sorted = self._ld[self._by_dst]
        self._by_src = np.argsort(self._ls, kind="stable")
        self._src_sorted = self._ls[self._by_src]
        #: the what-if values of the deletions that made this view (node id → value)
        self.what_if = dict(what_if or {})
        self._what_if_ids = np.fromiter(self.what_if, dtype=np.int64, count=len(self.what_if))
        self._with = {}
        self._csr: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._edge_count: int | None = None

    # ------------------------------------------------------------------ numbering
    def __len__(self) -> int:
        return self._n

    @property
    def base(self) -> GraphIndex:
        """The captured graph this view is made from."""
        return self._base

    @property
    def hidden(self) -> np.ndarray | None:
        """Mask over the base's nodes: the ones this view does not show (None: none)."""
        return self._hidden

    @property
    def overlay(self) -> NodeSet:
        """The nodes this view adds to its base (sorted by id; positions ``len(self) - len(overlay) …``)."""
        return self._overlay

    def base_positions(self, positions: np.ndarray) -> np.ndarray:
        """The base positions of the view's base nodes at ``positions`` (all below the overlay's)."""
        return self._select(np.asarray(positions, dtype=np.int64))

    def _select(self, p: np.ndarray) -> np.ndarray:
        """Base position of each visible-base position ``p`` (< ``_nb``) of the view."""
        if self._kept is not None:
            return self._kept[p]
        if len(self._gone):
            return p + np.searchsorted(self._adj, p, side="right")
        return p

    def _rank(self, b: np.ndarray) -> np.ndarray:
        """View position of each *visible* base position ``b``."""
        if self._kept is not None:
            return np.searchsorted(self._kept, b)
        if len(self._gone):
            return b - np.searchsorted(self._gone, b)
        return b

    def _rank_bounds(self, bounds: np.ndarray) -> np.ndarray:
        """How many visible base nodes lie below each of ``bounds``."""
        if self._kept is not None:
            return np.searchsorted(self._kept, bounds)
        return bounds - np.searchsorted(self._gone, bounds)

    def _visible(self, b: np.ndarray) -> np.ndarray:
        """Mask over base positions ``b``: shown by the view."""
        if self._hidden is None:
            return np.ones(len(b), dtype=bool)
        return ~self._hidden[b]

    def _to_ext(self, p: np.ndarray) -> np.ndarray:
        """Base-extended position of each view position."""
        p = np.asarray(p, dtype=np.int64)
        out = p - self._nb + self._N
        isb = p < self._nb
        out[isb] = self._select(p[isb])
        return out

    def _from_ext(self, e: np.ndarray) -> np.ndarray:
        """View position of each base-extended position of a node the view shows."""
        e = np.asarray(e, dtype=np.int64)
        out = e - self._N + self._nb
        isb = e < self._N
        out[isb] = self._rank(e[isb])
        return out

    def _compress(self, over_base: np.ndarray) -> np.ndarray:
        """The entries of an array over the base's nodes that belong to visible nodes, in view order."""
        if self._kept is not None:
            return np.asarray(over_base[self._kept])
        if self._hidden is None:
            return np.asarray(over_base)
        return np.asarray(over_base)[~self._hidden]

    def _gather(self, base_arr: np.ndarray, extra: np.ndarray, pos: np.ndarray) -> np.ndarray:
        isb = pos < self._nb
        if isb.all():
            return np.asarray(base_arr[self._select(pos)])
        out = np.empty(len(pos), dtype=np.asarray(base_arr[:0]).dtype)
        out[isb] = base_arr[self._select(pos[isb])]
        out[~isb] = extra[pos[~isb] - self._nb]
        return out

    def _one(self, base_arr: np.ndarray, extra: np.ndarray, p: int) -> Any:
        if p >= self._nb:
            return extra[p - self._nb]
        return base_arr[int(self._select(np.array([p], dtype=np.int64))[0])]

    def _whole(self, base_arr: np.ndarray, extra: np.ndarray) -> np.ndarray:
        return np.concatenate([self._compress(base_arr), np.asarray(extra, dtype=np.asarray(base_arr[:0]).dtype)])

    # ------------------------------------------------------------------ edges
    def _uncut(self, dst: np.ndarray, src: np.ndarray) -> np.ndarray:
        """Mask over base edges (``dst``, ``src``: base positions): not cut by a zoom."""
        if not len(self._cut) or not len(dst):
            return np.ones(len(dst), dtype=bool)
        return ~np.isin(np.asarray(dst, dtype=np.int64) * self._N + np.asarray(src, dtype=np.int64), self._cut)

    def gather_children(self, frontier: np.ndarray, *, owners: bool = False) -> Any:
        f = np.asarray(frontier, dtype=np.int64)
        isb = f < self._nb
        at = np.flatnonzero(isb)
        sel = self._select(f[at])
        own, kids = self._base.gather_children(sel, owners=True)
        keep = self._visible(kids) & self._uncut(sel[own], kids)
        own, kids = at[own[keep]], self._rank(kids[keep])
        if len(self._ld) and len(f):
            ext = self._to_ext(f)
            lo = np.searchsorted(self._dst_sorted, ext, side="left")
            lens = np.searchsorted(self._dst_sorted, ext, side="right") - lo
            if lens.any():  # the overlay's edges into the frontier, after the base's (each node's children stay together)
                more = self._from_ext(self._ls[self._by_dst[_ranges(lo, lens)]])
                own = np.concatenate([own, np.repeat(np.arange(len(f), dtype=np.int64), lens)])
                order = np.argsort(own, kind="stable")
                own, kids = own[order], np.concatenate([kids, more])[order]
        return (own, kids) if owners else kids

    def gather_parents(self, frontier: np.ndarray, *, owners: bool = False) -> Any:
        f = np.asarray(frontier, dtype=np.int64)
        isb = f < self._nb
        at = np.flatnonzero(isb)
        sel = self._select(f[at])
        own, ups = self._base.gather_parents(sel, owners=True)
        keep = self._visible(ups) & self._uncut(ups, sel[own])
        own, ups = at[own[keep]], self._rank(ups[keep])
        if len(self._ls) and len(f):
            ext = self._to_ext(f)
            lo = np.searchsorted(self._src_sorted, ext, side="left")
            lens = np.searchsorted(self._src_sorted, ext, side="right") - lo
            if lens.any():
                ups = np.concatenate([ups, self._from_ext(self._ld[self._by_src[_ranges(lo, lens)]])])
                own = np.concatenate([own, np.repeat(np.arange(len(f), dtype=np.int64), lens)])
        return (own, ups) if owners else ups

    def children(self, pos: int) -> np.ndarray:
        return cast(np.ndarray, self.gather_children(np.array([pos], dtype=np.int64)))

    def degrees(self, positions: np.ndarray) -> np.ndarray:
        positions = np.asarray(positions, dtype=np.int64)
        own, _ = self.gather_children(positions, owners=True)
        return np.bincount(own, minlength=len(positions)).astype(np.int64)

    def in_degree(self) -> np.ndarray:
        return np.diff(self.in_ptr)

    @property
    def num_edges(self) -> int:
        """Number of edges (with multiplicity), counted from the smaller side of the mask."""
        if self._edge_count is None:
            base = self._base
            if self._kept is not None:
                kids = base.gather_children(self._kept)
                count = int(np.count_nonzero(self._visible(kids)))
            else:
                gone = self._gone
                ups = base.gather_parents(gone)
                count = base.num_edges - int(base.degrees(gone).sum()) - int(np.count_nonzero(self._visible(ups)))
            if len(self._cut):  # the cut edges whose ends the view shows
                dst, src = self._cut // self._N, self._cut % self._N
                shown = self._visible(dst) & self._visible(src)
                targets = np.unique(dst[shown])
                own, kids = base.gather_children(targets, owners=True)
                count -= int(np.isin(targets[own] * self._N + kids, self._cut[shown]).sum())
            self._edge_count = count + len(self._ls)
        return self._edge_count

    def _edges(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The view's edges as a children CSR (``in_ptr``, ``in_src``, ``in_eid``): built on first use."""
        if self._csr is None:
            base, n = self._base, self._n
            vis = self._select(np.arange(self._nb, dtype=np.int64))
            slot = slots(base.in_ptr, vis)
            owner = np.repeat(np.arange(self._nb, dtype=np.int64), base.degrees(vis))
            src = np.asarray(base.in_src[slot], dtype=np.int64)
            keep = self._visible(src) & self._uncut(vis[owner], src)
            dst = np.concatenate([owner[keep], self._from_ext(self._ld)])
            src = np.concatenate([self._rank(src[keep]), self._from_ext(self._ls)])
            eid = np.concatenate([base.edge_ids(slot[keep]), self._le])
            order = np.argsort(dst, kind="stable")
            ptr = np.zeros(n + 1, dtype=np.int64)
            np.cumsum(np.bincount(dst, minlength=n), out=ptr[1:])
            self._csr = (ptr, src[order].astype(_pos_dtype(n), copy=False), eid[order])
        return self._csr

    @property
    def in_ptr(self) -> np.ndarray:
        return self._edges()[0]

    @property
    def in_src(self) -> np.ndarray:
        return self._edges()[1]

    @property
    def eid(self) -> np.ndarray:
        return self._edges()[2]

    def edge_ids(self, edge_slots: np.ndarray) -> np.ndarray:
        return np.asarray(self.eid[np.asarray(edge_slots, dtype=np.int64)], dtype=np.int64)

    def _out_csr(self) -> tuple[np.ndarray, np.ndarray]:
        if self._out is None:
            self._out = _out_csr(self.src, self.dst, self._n)
        return self._out

    # ------------------------------------------------------------------ lookups
    def lookup(self, node_ids: np.ndarray, *, positional: bool = False) -> np.ndarray:
        ids = np.asarray(node_ids, dtype=np.int64)
        pos = self._base.lookup(ids, positional=positional)
        ok = pos >= 0
        ok[ok] = self._visible(pos[ok])
        out = np.full(len(ids), -1, dtype=np.int64)
        out[ok] = self._rank(pos[ok])
        k = len(self._overlay)
        if k:
            rest = np.flatnonzero(~ok)
            at = np.minimum(np.searchsorted(self._overlay.ids, ids[rest]), k - 1)
            hit = self._overlay.ids[at] == ids[rest]
            out[rest[hit]] = self._nb + at[hit]
        return out

    def segment_nodes(self, conditions: dict[str, list[Any]]) -> np.ndarray | None:
        found = self._base.segment_nodes(conditions)
        if found is None:
            return None
        parts = [self._rank(found[self._visible(found)])]
        ov = self._overlay
        rows = self._base.attrs_source.segment_rows(conditions) if len(ov) else None
        if rows is not None and len(rows[0]):  # overlay nodes with positional ids of those segments
            seg = np.array([-1 if s is None else int(s) for s in ov.attrs.get("seg", np.arange(len(ov))).tolist()], dtype=np.int64)
            hit = np.isin(seg, rows[0]) & ((ov.ids >> SEGMENT_SHIFT) == seg)
            parts.append(self._nb + np.flatnonzero(hit))
        return np.unique(np.concatenate(parts))

    def nodes_with(self, *, op: Any = None, type: str | None = None, kind: str | None = None) -> np.ndarray:
        key = _node_key(op, type, kind)
        found = self._with.get(key)
        if found is None:
            b = self._base.nodes_with(op=op, type=type, kind=kind)
            ov = self._overlay
            extra = np.flatnonzero(_matching(ov.op, ov.type_code, ov.is_v, key))
            found = self._with[key] = np.concatenate([self._rank(b[self._visible(b)]), self._nb + extra])
            found.flags.writeable = False
        return found

    def take(self, positions: np.ndarray) -> NodeSet:
        pos = np.asarray(positions, dtype=np.int64)
        isb = pos < self._nb
        d = Derived.flatten([(self._base.attrs_source, self._select(pos[isb])), (self._overlay.attrs, pos[~isb] - self._nb)])
        back = np.empty(len(pos), dtype=np.int64)
        back[np.concatenate([np.flatnonzero(isb), np.flatnonzero(~isb)])] = np.arange(len(pos), dtype=np.int64)
        return NodeSet(self.ids[pos], self.is_v[pos], self.op[pos], self.type_code[pos], Derived(d.parts, d.which[back], d.where_pos[back]))

    def __repr__(self) -> str:
        return f"<View of {self._N} base nodes: {self._N - self._nb} hidden, {len(self._overlay)} added; {self._n} nodes>"


def ext_positions(g: GraphIndex, positions: np.ndarray) -> np.ndarray:
    """The base-extended positions (see :class:`View`) of nodes of ``g`` (a view or a base)."""
    positions = np.asarray(positions, dtype=np.int64)
    return g._to_ext(positions) if isinstance(g, View) else positions


def change(g: GraphIndex, *, remove: np.ndarray | None = None, restore: np.ndarray | None = None, add: NodeSet | None = None,
           add_edges: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None, zoom: dict[str, Any] | None = None,
           what_if: Mapping[int, Any] | None = None) -> GraphIndex:
    """The view of ``g``'s base that is ``g`` without the nodes ``remove`` (a boolean mask over
    ``g``, or positions of ``g``) and their edges, with the hidden base nodes ``restore`` (base
    positions) shown again and the nodes ``add`` added, plus the edges ``add_edges`` =
    (sources, targets, eids) given in *base-extended* positions of ``g``: ``b < len(g.base)``
    is base node ``b``; ``len(g.base) + j`` is the ``j``-th node of ``g``'s overlay followed by
    ``add``. ``zoom``: the new view's zoom records (``g``'s when None). ``what_if``: values
    (node id → value) that a deletion gave v-nodes, added to ``g``'s; the view's ``value``
    attribute reads them in place of the captured ones.

    The ids of ``add`` must not be those of nodes the view shows (the caller checks: ZoomOut's
    nodes have zoom ids, free by the id layout; searching every block of a store for a missing
    id would cost more than the view).

    Nothing is copied but ``g``'s mask when it changes (a ``remove`` mask over a base graph
    becomes the view's mask as it is: do not change it afterwards): the cost is the change's,
    plus one pass over the mask's bytes. A view that hides and adds nothing is the base itself.
    """
    base = g.base
    n_base = len(base)
    v = g if isinstance(g, View) else None
    nb0 = v._nb if v is not None else n_base
    overlay0 = v._overlay if v is not None else EMPTY_NODES
    k0 = len(overlay0)
    hidden0 = v._hidden if v is not None else None
    # the base nodes the new view hides
    hidden = hidden0
    drop_overlay = np.zeros(0, dtype=np.int64)
    if remove is not None:
        remove = np.asarray(remove)
        if remove.dtype == bool:
            if len(remove) != len(g):
                raise StoreError(f"a mask of {len(remove)} nodes for a graph (view) of {len(g)}")
            gone_base, drop_overlay = remove[:nb0], np.flatnonzero(remove[nb0:])
            if gone_base.any():
                if hidden0 is None:
                    hidden = gone_base.copy() if v is not None else gone_base
                else:
                    hidden = hidden0.copy()
                    hidden[~hidden0] = gone_base  # view positions below nb0 are the visible base nodes, in order
        else:
            pos = np.unique(remove.astype(np.int64))
            gone = pos[pos < nb0]
            drop_overlay = pos[pos >= nb0] - nb0
            if len(gone):
                hidden = np.zeros(n_base, dtype=bool) if hidden0 is None else hidden0.copy()
                hidden[v._select(gone) if v is not None else gone] = True
    if restore is not None and len(restore):
        if hidden0 is None:
            raise StoreError("restore: the graph hides no node to show again")
        hidden = hidden0.copy() if hidden is hidden0 or hidden is None else hidden
        hidden[np.asarray(restore, dtype=np.int64)] = False
    if hidden is not None and not hidden.any():
        hidden = None
    # the overlay: g's nodes that stay, then the added ones, by id
    add = add if add is not None else EMPTY_NODES
    stay = np.ones(k0, dtype=bool)
    stay[drop_overlay] = False
    kept_idx = np.flatnonzero(stay)
    both = NodeSet.concat([_subset(overlay0, kept_idx), add]) if (len(add) or len(kept_idx) < k0) else overlay0
    order = np.argsort(both.ids, kind="stable")
    overlay = _subset(both, order) if len(both) and (both is not overlay0) else both
    if len(overlay) > 1 and (np.diff(overlay.ids) == 0).any():
        raise StoreError("a derived view would have two nodes with the same id")
    rank = np.empty(len(both), dtype=np.int64)
    rank[order] = np.arange(len(both), dtype=np.int64)
    ext_map = np.full(k0 + len(add), -1, dtype=np.int64)  # g's overlay, then add -> the new overlay (-1: gone)
    ext_map[kept_idx] = n_base + rank[: len(kept_idx)]
    ext_map[k0:] = n_base + rank[len(kept_idx):]

    def moved(e: np.ndarray) -> np.ndarray:
        """New base-extended position of each (-1: the node is gone)."""
        out = e.copy()
        isb = e < n_base
        if hidden is not None:
            b = np.flatnonzero(isb)
            out[b[hidden[e[b]]]] = -1
        out[~isb] = ext_map[e[~isb] - n_base]
        return out

    old = (v._es, v._ed, v._ee) if v is not None else (np.zeros(0, np.int64),) * 3
    s0, d0 = moved(old[0]), moved(old[1])
    live = (s0 >= 0) & (d0 >= 0)  # an edge goes with either of its ends
    src, dst, eid = [s0[live]], [d0[live]], [old[2][live]]
    if add_edges is not None and len(add_edges[0]):
        s1, d1 = moved(np.asarray(add_edges[0], dtype=np.int64)), moved(np.asarray(add_edges[1], dtype=np.int64))
        if (s1 < 0).any() or (d1 < 0).any():
            raise StoreError("derive: an added edge has an endpoint that does not exist in the view")
        src.append(s1)
        dst.append(d1)
        eid.append(np.asarray(add_edges[2], dtype=np.int64))
    edges = (np.concatenate(src), np.concatenate(dst), np.concatenate(eid))
    zoom = dict(g.zoom) if zoom is None else zoom
    values = {**g.what_if, **(what_if or {})}
    if hidden is None and not len(overlay) and not len(edges[0]) and not zoom and not values:
        return base
    return View(base, hidden, overlay, edges, zoom, values)
