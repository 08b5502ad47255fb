"""Deletion propagation (Lipstick section 4.2, Definition 4.2) and what-if values.

Deleting nodes removes them and their edges, then repeatedly every node that (1) lost all of its
incoming edges or (2) is conjunctive (:attr:`Op.conjunctive <lipspark.vocabulary.Op.conjunctive>`:
·, ⊗ and the module boundary nodes, products with their invocation) and lost one. An aggregate
v-node belongs to its group: it goes when its group's δ goes, not when it merely lost every ⊗
(the group survives through members whose argument is null, which have no ⊗; its value is then
the aggregate over no values, Count 0, as Spark computes). A keyless aggregate's group is 1 (SQL
returns its row over any input), so its aggregates never go: deleting every member recomputes
them over nothing (Count 0, Sum null). Propagation walks only the
descendants of the deleted nodes, a frontier at a time.

Then the aggregate v-nodes that survive but lost ⊗ children (Count, Sum, Min, Max, Avg) are
recomputed over their surviving ⊗ children with :func:`lipspark.vocabulary.aggregate` (Example
4.3), and the change flows on through the value nodes that carry a value across a module
boundary (INPUT/STATE/OUTPUT v-nodes), through formulas over aggregates (ADD, MULTIPLY, NEGATE,
INVERSE: :func:`lipspark.vocabulary.arithmetic`) and through aggregates over them; a black box whose input
value changed cannot be recomputed here and is reported as unknown, and so is a CONDITION (a
filter, join or grouping over values, :mod:`lipspark.capture.rules.condition`) when a value it
read changed: the rows it decided may differ, and :attr:`DeletionResult.exact` is then false.

A ⊖ node (a row an outer or anti join or a set difference keeps because another has no
partner, :class:`~lipspark.vocabulary.MonusSegment`) is there iff its minuend is there and its
subtrahend is not. Capture records one only for a row that *has* partners, absent now: the
deletion removes it with its minuend, and when its subtrahend goes (the last partner deleted)
and its minuend stays the row **appears** (:attr:`DeletionResult.appeared`, with the data it
has where the operation made it). What the operations after that one would do with it is not in
the graph (they never saw the row), so a what-if where a row appears is not exact.

>>> import pandas as pd
>>> from lipspark.graph.index import GraphIndex
>>> n = pd.DataFrame({"id": [1, 2, 3, 4, 5, 6, 7, 8], "kind": list("pppvvvvv"),
...                   "op": ["token", "token", "δ", "⊗", "⊗", "constant", "constant", "count"],
...                   "label": ["C:a", "C:b", "δ", "⊗", "⊗", "1", "1", "Count"],
...                   "value": pd.Series([None, None, None, None, None, 1, 1, 2], dtype=object)})
>>> e = pd.DataFrame({"src": [1, 2, 1, 6, 2, 7, 4, 5], "dst": [3, 3, 4, 4, 5, 5, 8, 8]})
>>> r = delete(GraphIndex.build(n, e), [1])
>>> sorted(r.removed_ids.tolist()), r.values
([1, 4], [ValueChange(node=8, label='Count', before=2, after=1)])
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np

from lipspark.graph.index import GraphIndex
from lipspark.graph.view import change
from lipspark.vocabulary import UNKNOWN, Op, aggregate, arithmetic
from lipspark.vocabulary.ops import BOOLEAN_OPS
from lipspark.vocabulary.ids import SUBTRAHEND, aggregate_ids, monus_part_ids

__all__ = ["delete", "DeletionResult", "ValueChange", "Appearance", "propagate", "appearing", "recompute", "UNKNOWN"]

#: per operator code: does the node need all of its children (Definition 4.2, rule 2)?
_CONJUNCTIVE = np.zeros(max(Op) + 1, dtype=bool)
_CONJUNCTIVE[[int(o) for o in Op if o.conjunctive]] = True
_AGGREGATE = np.zeros(max(Op) + 1, dtype=bool)
_AGGREGATE[[int(o) for o in Op if o.is_aggregate]] = True
#: v-nodes that carry their one v-child's value (module boundaries, a new state row's value)
_BOUNDARY = frozenset(int(o) for o in Op if o.carries_value)
_ARITHMETIC = frozenset(int(o) for o in Op if o.is_arithmetic)
_BOOLEAN = frozenset(int(o) for o in BOOLEAN_OPS)


@dataclass(frozen=True)
class ValueChange:
    """A v-node whose value differs after the deletion."""

    node: int
    label: str
    before: Any
    after: Any
    node_op: int = field(default=0, compare=False, repr=False)  # the node's operator code


@dataclass(frozen=True)
class Appearance:
    """A row absent from the captured run that the deletion makes appear (its ⊖ node's
    subtrahend is gone, its minuend is not): ``row`` is its data where the operation that kept
    it made it (an outer join's padded columns null), ``copies`` how many such rows."""

    node: int
    row: Any
    copies: int


@dataclass
class DeletionResult:
    """The outcome of a deletion: what was removed and what changed; ``view`` is the graph
    without the removed nodes (a :class:`~lipspark.graph.view.View`: the removed nodes masked
    out of the captured graph, made on first use)."""

    graph: GraphIndex
    removed: np.ndarray  # mask over ``graph``
    removed_ids: np.ndarray
    surviving_outputs: np.ndarray
    removed_outputs: np.ndarray
    values: list[ValueChange] = field(default_factory=list)
    _view: GraphIndex | None = field(default=None, repr=False)
    #: positions in ``graph`` of the surviving and of the removed outputs, in node-id order
    surviving_output_positions: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64), repr=False)
    removed_output_positions: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64), repr=False)
    #: rows that appear (see :class:`Appearance`), by node id
    appeared: list[Appearance] = field(default_factory=list)
    #: the conditions (by node id) of rows a filter over values dropped that the deletion makes pass
    passed: list[int] = field(default_factory=list)
    #: the IN_GROUP tests (by node id) of members of a group-by on a value whose key the deletion
    #: changes: they leave their group, and the group they join never saw them
    moved: list[int] = field(default_factory=list)

    @property
    def exact(self) -> bool:
        """Whether the what-if is what a re-run gives: no value became unknown (a black box
        or a condition over a changed value) and no row appeared (what the operations after an
        outer join, anti join or set difference do with a row it adds is not in the graph;
        nor after a filter over values, with a row it dropped and would now keep; nor the group a
        member of a group-by on a value moves to)."""
        return not self.appeared and not self.passed and not self.moved and not any(c.after is UNKNOWN for c in self.values)

    @property
    def conditions(self) -> list[ValueChange]:
        """The filters, joins and groupings over values whose outcome the what-if cannot decide,
        so the rows they kept or dropped may differ from a re-run's: CONDITION nodes that read a
        changed value, a filter's per-row tests that became unknown, and the tests of rows it
        dropped that now pass (:attr:`passed`), and the group memberships that no longer hold
        (:attr:`moved`)."""
        passed = set(self.passed) | set(self.moved)
        return [c for c in self.values if c.node_op == int(Op.CONDITION) or c.node in passed
                or (c.node_op in _BOOLEAN and c.after is UNKNOWN)]

    @property
    def view(self) -> GraphIndex:
        """The view without the removed nodes and their edges, its v-nodes valued as after the
        deletion (``value`` reads the what-if values; ``view.what_if`` lists them by node id)."""
        if self._view is None:
            self._view = change(self.graph, remove=np.flatnonzero(self.removed), what_if={c.node: c.after for c in self.values})
        return self._view


#: How many aggregates one ``agg(...)`` may compute for its group to be found from their ids.
_MAX_AGGREGATES = 1024


def _groups(g: GraphIndex, aggs: np.ndarray) -> np.ndarray:
    """Position of the δ node of each aggregate v-node at ``aggs`` (-1: not in this view): the
    aggregate's id is its group's XOR ``aggregate_salt(j)`` (:mod:`lipspark.vocabulary.ids`)."""
    out = np.full(len(aggs), -1, dtype=np.int64)
    if not len(g):
        return out
    ids = g.ids[aggs]
    for j in range(_MAX_AGGREGATES):
        todo = np.flatnonzero(out < 0)
        if not len(todo):
            break
        cand = aggregate_ids(ids[todo], j)  # XOR with the salt is its own inverse
        pos = g.lookup(cand)
        hit = pos >= 0
        # a group's δ, or the 1 of a keyless aggregate (its one row is there over any input)
        hit[hit] = np.isin(np.asarray(g.op[pos[hit]]), (int(Op.DELTA), int(Op.TIMES)))
        out[todo[hit]] = pos[hit]
    return out


def propagate(g: GraphIndex, seeds: Iterable[int]) -> np.ndarray:
    """Mask of the nodes removed when deleting the nodes at positions ``seeds`` (Def. 4.2).

    Only the nodes the deletion reaches are read: the mask and the counters are zeroed arrays
    the size of the graph, whose memory pages exist only where something was written."""
    n = len(g)
    removed = np.zeros(n, dtype=bool)
    frontier = np.unique(np.asarray(list(seeds), dtype=np.int64))
    removed[frontier] = True
    remaining = np.zeros(n, dtype=np.int64)  # in-degree left, of the nodes reached so far
    reached = np.zeros(n, dtype=bool)
    held = np.zeros(0, dtype=np.int64)  # aggregates that lost every ⊗: they follow their group
    while True:
        while len(frontier):
            ups = g.gather_parents(frontier)
            ups = ups[~removed[ups]]
            if not len(ups):
                break
            u, c = np.unique(ups, return_counts=True)
            first = u[~reached[u]]
            remaining[first] = g.degrees(first)
            reached[first] = True
            remaining[u] -= c
            op = np.asarray(g.op[u], dtype=np.int64)
            # aggregates, and black-box v-nodes (a black-box aggregate's follows its group)
            aggregate, empty = _AGGREGATE[op] | ((op == int(Op.BLACK_BOX)) & np.asarray(g.is_v[u], dtype=bool)), remaining[u] == 0
            held = np.union1d(held, u[empty & aggregate])
            gone = (empty & ~aggregate) | _CONJUNCTIVE[op]
            monus = np.flatnonzero((op == int(Op.MONUS)) & ~gone)
            if len(monus):  # a ⊖ node goes with its minuend, whatever becomes of its subtrahend
                gone[monus] = [_lost_minuend(g, int(p), removed) for p in u[monus]]
            frontier = u[gone]
            removed[frontier] = True
        group = _groups(g, held)
        orphaned = (group < 0) | removed[np.maximum(group, 0)]
        if not orphaned.any():
            return removed
        frontier = held[orphaned]
        held = held[~orphaned]
        removed[frontier] = True


def _lost_minuend(g: GraphIndex, pos: int, removed: np.ndarray) -> bool:
    sub = monus_part_ids(int(g.ids[pos]), SUBTRAHEND)
    return any(removed[k] for k in g.children(pos).tolist() if int(g.ids[k]) != sub)


def appearing(g: GraphIndex, removed: np.ndarray) -> np.ndarray:
    """Positions of the ⊖ nodes that appear when the nodes in the mask ``removed`` go: their
    subtrahend (a δ over their partners) is removed, they are not."""
    deltas = np.flatnonzero(removed)
    deltas = deltas[np.asarray(g.op[deltas]) == int(Op.DELTA)] if len(deltas) else deltas
    if not len(deltas):
        return np.zeros(0, dtype=np.int64)
    pos = g.lookup(monus_part_ids(np.asarray(g.ids[deltas], dtype=np.int64), SUBTRAHEND))
    pos = pos[pos >= 0]
    pos = pos[(np.asarray(g.op[pos]) == int(Op.MONUS)) & ~removed[pos]] if len(pos) else pos
    return np.unique(pos)


def recompute(op: Op, values: list[Any]) -> Any:
    """The what-if value of an aggregate over its surviving members' values: UNKNOWN if any of
    them is unknown (a black box downstream of the deletion), else :func:`~lipspark.vocabulary.aggregate`.

    >>> recompute(Op.COUNT, [None, 1, 2]), recompute(Op.SUM, [1, UNKNOWN])
    (2, unknown)
    """
    if any(v is UNKNOWN for v in values):
        return UNKNOWN
    return aggregate(op, values)


def _what_if(g: GraphIndex, removed: np.ndarray, known: dict[int, Any] | None = None) -> list[ValueChange]:
    """Recompute the surviving v-nodes downstream of removed nodes, in topological order; a
    v-node whose id is in ``known`` takes that value (what a re-run of its invocation gave,
    :mod:`lipspark.query.recompute`) and the change flows on from it."""
    known = known or {}
    pinned = g.lookup(np.fromiter(known, dtype=np.int64, count=len(known))) if known else np.zeros(0, dtype=np.int64)
    gone = np.union1d(np.flatnonzero(removed), pinned[pinned >= 0])
    if not len(gone):
        return []
    region = np.union1d(g.descendants(gone), pinned[pinned >= 0])
    region = region[~removed[region]]
    region = region[g.is_v[region]]
    changed: dict[int, Any] = {}
    out: list[ValueChange] = []
    for pos in g.topological(region).tolist():
        op = int(g.op[pos])
        kids = [int(k) for k in g.children(pos) if not removed[k]]
        if known and int(g.ids[pos]) in known:
            new = known[int(g.ids[pos])]
        elif _AGGREGATE[op]:
            vals = []
            for t in kids:  # ⊗ children: (p-node, value node)
                vk = [int(k) for k in g.children(t) if g.is_v[k] and not removed[k]]
                vals.append(changed.get(vk[0], g.value_at(vk[0])) if vk else None)
            new = recompute(Op(op), vals)
        elif op in _BOUNDARY:  # a value carried across a module boundary
            vk = [k for k in kids if g.is_v[k]]
            if not vk or vk[0] not in changed:
                continue
            new = changed[vk[0]]
        elif op in _ARITHMETIC:  # a formula over values: recomputed when one of its inputs changed
            vk = [k for k in kids if g.is_v[k]]
            if not any(k in changed for k in vk):
                continue
            new = arithmetic(Op(op), [changed.get(k, g.value_at(k)) for k in vk])
        elif op == int(Op.CONDITION):  # a filter/join/grouping over values: did one it read change?
            if not any(k in changed for k in kids):
                continue
            new = UNKNOWN
        elif op != int(Op.BLACK_BOX) or not len(g.children(pos)):  # ⊗, constants
            continue
        else:  # a black box downstream of the deletion: its function is not in the graph
            new = UNKNOWN
        before = g.value_at(pos)  # in a view after an earlier delete: its what-if value
        if (before is not UNKNOWN or new is not UNKNOWN) and (new is UNKNOWN or not _same(before, new)):
            changed[pos] = new
            out.append(ValueChange(int(g.ids[pos]), g.label(pos), before, new, op))
    return sorted(out, key=lambda c: c.node)  # listed by node id (the order of positions depends on the blocks)


def _filters(g: GraphIndex, seeds: np.ndarray, removed: np.ndarray, changes: list[ValueChange],
             known: dict[int, Any] | None) -> tuple[np.ndarray, list[ValueChange], list[int]]:
    """Filters over values (:mod:`lipspark.capture.rules.guard`): a kept row whose condition is no
    longer true goes — its · over the condition is deleted too, and the deletion propagates
    again (its aggregates recompute) until no more rows go. Returns the removed mask, the value
    changes, and the conditions of dropped rows that now pass (the rows would appear: not
    exact). A row removed on the way whose condition is true again in the end makes the
    what-if not exact as well (reported as its condition's value unknown)."""
    extra: set[int] = set()
    for _ in range(len(g) + 1):
        failed = [c for c in changes if c.node_op in _BOOLEAN and c.before is True and c.after is not True and c.after is not UNKNOWN]
        if not failed:
            break
        pos = g.positions([c.node for c in failed])
        ups = g.gather_parents(pos)
        ups = ups[~np.asarray(g.is_v[ups], dtype=bool)] if len(ups) else ups
        new = {int(u) for u in ups.tolist()} - extra
        if not new:
            break
        extra |= new
        removed = propagate(g, np.union1d(seeds, np.fromiter(extra, dtype=np.int64)))
        changes = _what_if(g, removed, known)
    if extra:  # a row removed for a condition that is true again in the end: not a prediction
        final = {c.node: c.after for c in changes}
        again = {}
        for u in extra:
            for k in g.children(u).tolist():
                nid = int(g.ids[k])
                if g.is_v[k] and final.get(nid, g.value_at(k)) is True:
                    again[nid] = k
        changes = [c for c in changes if c.node not in again] + [
            ValueChange(nid, g.label(k), g.value_at(k), UNKNOWN, int(g.op[k])) for nid, k in again.items()]
        changes.sort(key=lambda c: c.node)
    roots = [c for c in changes if c.node_op in _BOOLEAN and c.before is not True and c.after is True]
    passed = []
    if roots:
        pos = g.positions([c.node for c in roots])
        for c, p in zip(roots, pos.tolist()):
            ups = g.parents(p)
            if not np.asarray(g.is_v[ups], dtype=bool).any():  # a row's test, not a part of one (an inner test has its test)
                passed.append(c.node)
    return removed, changes, passed


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        try:
            return bool(abs(float(a) - float(b)) <= 1e-9 * max(1.0, abs(float(a))))
        except (TypeError, ValueError):
            return False
    return bool(a == b)


def delete(g: GraphIndex, nodes: Iterable[int], *, values: bool = True, known: dict[int, Any] | None = None) -> DeletionResult:
    """Delete the nodes with ids ``nodes`` from the view ``g`` and propagate (Definition 4.2).

    Returns the new view, the removed node ids, the output nodes that survive and those removed,
    and (``values=True``) the recomputed aggregate values; ``known``: v-node id → the value it
    takes after the deletion, where a re-run said it (:mod:`lipspark.query.recompute`).
    """
    seeds = g.positions(nodes)
    removed = propagate(g, seeds)
    changes = _what_if(g, removed, known) if values else []
    passed: list[int] = []
    if values and changes:
        removed, changes, passed = _filters(g, seeds, removed, changes, known)
    shown = appearing(g, removed)
    rows = g.column("tuple", shown).tolist() if len(shown) else []
    copies = g.column("value", shown).tolist() if len(shown) else []
    appeared = sorted((Appearance(int(g.ids[p]), json.loads(t) if isinstance(t, str) else t, int(c or 1))
                       for p, t, c in zip(shown.tolist(), rows, copies)), key=lambda a: a.node)
    outputs = g.nodes_with(type="o", kind="p")  # output tuples (their values are in `values`)
    out_gone = removed[outputs]
    survivors, lost = g.by_id(outputs[~out_gone]), g.by_id(outputs[out_gone])
    return DeletionResult(
        graph=g,
        removed=removed,
        removed_ids=np.sort(g.ids[np.flatnonzero(removed)]),
        surviving_outputs=np.asarray(g.ids[survivors], dtype=np.int64),
        removed_outputs=np.asarray(g.ids[lost], dtype=np.int64),
        values=changes,
        surviving_output_positions=survivors,
        removed_output_positions=lost,
        appeared=appeared,
        passed=passed,
        moved=[c.node for c in changes if c.node_op == int(Op.IN_GROUP) and c.before is True and c.after is False],
    )
