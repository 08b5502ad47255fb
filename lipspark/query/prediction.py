"""What an annotated frame would hold after a deletion: its rows, as a re-run would give them.

:func:`~lipspark.query.deletion.delete` says which nodes of the graph go and which values change
(Lipstick §4.2). A frame's rows follow from that: a row stays when none of its factors goes, each
of its valued columns takes its v-node's new value, and a **latent row** — one a filter over
values dropped, carried to the frame by operations that work row by row
(:mod:`lipspark.capture.rules.latent`) — appears when none of its factors goes and every test
under its factors is now true. :func:`predict` computes that from rows collected with their
annotations; :func:`what_if` collects them from an annotated frame and deletes.

The prediction is **exact** — what re-running the frame's code without the deleted tuples gives,
the oracle the tests and the TPC-H scoreboard check — unless it says why not (``why``): a value
the graph cannot recompute (a black box, or a condition over a changed value), a row an outer or
anti join or a set difference would add (``DeletionResult.appeared``: the operations after it
never saw it), or a row a filter over values dropped that would pass now but whose fate after
the filter the frame does not know (an operation since that does not work row by row). The
checks are over the whole graph, so a what-if about one frame may say *not exact* for a reason
in another: it never claims exact wrongly.

>>> import pandas as pd
>>> from types import SimpleNamespace as Row
>>> from lipspark.graph.index import GraphIndex
>>> from lipspark.query.deletion import delete
>>> g = GraphIndex.build(pd.DataFrame({"id": [1, 2], "kind": "p", "op": "token", "label": ["R:a", "R:b"]}),
...                      pd.DataFrame({"src": [], "dst": []}))
>>> rows = [Row(row=("a",), annotation=Row(factors=(1,), values={})), Row(row=("b",), annotation=Row(factors=(2,), values={}))]
>>> p = predict(g, delete(g, [1]), ["k"], rows)
>>> p.rows, p.exact
([('b',)], True)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Protocol, Sequence

import numpy as np

from lipspark.graph.index import GraphIndex
from lipspark.query.deletion import UNKNOWN, DeletionResult, delete, recompute
from lipspark.vocabulary import Op
from lipspark.vocabulary.ops import AGGREGATE_OPS, BOOLEAN_OPS

__all__ = ["Prediction", "predict", "what_if"]

_BOOLEAN = frozenset(int(o) for o in BOOLEAN_OPS)
_AGGREGATES = frozenset(int(o) for o in AGGREGATE_OPS)


class _Annotation(Protocol):
    factors: tuple[int, ...]
    values: dict[str, int]


class _Row(Protocol):
    row: Any
    annotation: _Annotation


@dataclass(frozen=True)
class Prediction:
    """A frame's rows after a deletion (``rows``, in its ``columns``: the rows that stay, with
    recomputed values, then ``appeared``, the latent rows that appear and the new groups of a
    group-by on a value); ``gone``: how many of its rows go; ``exact`` when a re-run gives
    exactly these rows, else ``why`` says what it cannot tell."""

    columns: tuple[str, ...]
    rows: list[tuple[Any, ...]]
    appeared: list[tuple[Any, ...]]
    gone: int
    exact: bool
    why: tuple[str, ...] = ()
    deletion: DeletionResult | None = field(default=None, repr=False, compare=False)


def _tests_hold(g: GraphIndex, pos: np.ndarray, changed: dict[int, Any]) -> bool | None:
    """Whether every test under the factors at ``pos`` (a · over one boolean v-node) is true
    after the deletion: ``None`` when one is unknown."""
    out: bool | None = True
    for p in pos.tolist():
        if g.is_v[p] or int(g.op[p]) != int(Op.TIMES):
            continue
        for k in g.children(p).tolist():
            if g.is_v[k] and int(g.op[k]) in _BOOLEAN:
                after = changed.get(int(g.ids[k]), g.value_at(k))
                if after is UNKNOWN:
                    out = None
                elif after is not True:
                    return False
    return out


def _after(g: GraphIndex, row: _Row, columns: Sequence[str], changed: dict[int, Any]) -> tuple[tuple[Any, ...], bool]:
    """The row's data with its valued columns' new values; whether one is unknown."""
    data = list(row.row)
    unknown = False
    for col, vid in row.annotation.values.items():
        if vid in changed:
            unknown |= changed[vid] is UNKNOWN
            data[list(columns).index(col)] = changed[vid]
    return tuple(data), unknown


@dataclass
class _Regrouped:
    """What moving members does to a frame's groups: new data for rows (by index; a row whose
    group had gone comes back with its newcomers), new rows, and why it is not exact."""

    data: dict[int, tuple[Any, ...]] = field(default_factory=dict)
    new: list[tuple[Any, ...]] = field(default_factory=list)
    why: list[str] = field(default_factory=list)


def _value(g: GraphIndex, pos: int, changed: dict[int, Any]) -> Any:
    return changed.get(int(g.ids[pos]), g.value_at(pos))


def _tensor_values(g: GraphIndex, tensors: Iterable[int], changed: dict[int, Any]) -> list[Any]:
    """The values ⊗ nodes pair their members with (None where a ⊗ has no value node)."""
    out = []
    for t in tensors:
        vk = [int(k) for k in g.children(t) if g.is_v[k]]
        out.append(_value(g, vk[0], changed) if vk else None)
    return out


def _regroup(g: GraphIndex, deletion: DeletionResult, columns: Sequence[str], rows: Sequence[_Row], keys: Any,
             changed: dict[int, Any]) -> _Regrouped:
    """Put each member of the frame's groups that the deletion moved (its IN_GROUP false:
    :mod:`lipspark.capture.rules.regroup`) in the group of its new key: that group's aggregates
    recomputed over its surviving members and the newcomers, or a new row."""
    out = _Regrouped()
    moved_tests = set(deletion.moved)
    if not moved_tests:
        return out
    removed = deletion.removed
    cols = list(columns)
    aggs = [c for c in cols if c not in keys.keys]
    where = {k: cols.index(k) for k in keys.keys}
    by_key: dict[tuple[Any, ...], int] = {}
    for i, row in enumerate(rows):
        by_key[_grouped(row.row[where[k]] for k in keys.keys)] = i
    # newcomers per new key: (the row they left, {column: [values]})
    arriving: dict[tuple[Any, ...], list[tuple[int, dict[str, list[Any]], tuple[Any, ...]]]] = {}
    handled: set[int] = set()
    for i, row in enumerate(rows):
        values = row.annotation.values
        if any(c not in values or int(g.op[g.position(values[c])]) not in _AGGREGATES for c in aggs):
            out.why.append("a group-by on a value moves a member, and a column of its rows is no Count, Sum, Min, Max or Avg "
                           "the graph recomputes")
            return out
        deltas = [p for p in g.positions(row.annotation.factors).tolist() if int(g.op[p]) == int(Op.DELTA)]
        if len(deltas) != 1:
            out.why.append("a group-by on a value moves a member, and a row of the frame is no one group's")
            return out
        column_of = {g.position(values[c]): c for c in aggs}
        if any(_distinct(g, a) for a in column_of):
            out.why.append("a group-by on a value moves a member, and an aggregate of its rows is a DISTINCT one")
            return out
        for m in g.children(deltas[0]).tolist():
            if not removed[m]:
                continue
            kids = [m] if _membership_test(g, m) is not None else g.children(m).tolist()
            tests = [(k, _membership_test(g, k)) for k in kids]
            mine = [(k, t) for k, t in tests if t is not None]
            if len(mine) != 1 or int(g.ids[mine[0][1]]) not in moved_tests:
                continue  # not a member of this grouping, or removed for another reason than its key
            handled.add(int(g.ids[mine[0][1]]))
            if any(removed[k] for k in kids if k != mine[0][0]):
                continue  # deleted for real
            test = mine[0][1]
            key_nodes = [k for k in g.children(test).tolist() if int(g.op[k]) != int(Op.CONSTANT)]
            if len(key_nodes) != 1:
                out.why.append("a member of a group-by on a value moves, and its new key is not in the graph")
                return out
            new = _value(g, key_nodes[0], changed)
            if new is UNKNOWN:
                out.why.append("a member of a group-by on a value moves to a group the graph cannot compute")
                return out
            key = tuple(new if k == keys.valued else row.row[where[k]] for k in keys.keys)
            brought: dict[str, list[Any]] = {c: [] for c in aggs}
            for t in g.parents(m).tolist():
                if int(g.op[t]) != int(Op.TENSOR):
                    continue
                for a in g.parents(t).tolist():
                    if a in column_of:
                        brought[column_of[a]].extend(_tensor_values(g, [t], changed))
            arriving.setdefault(_grouped(key), []).append((i, brought, key))
    if moved_tests - handled:
        out.why.append(f"{len(moved_tests - handled)} member(s) of another group-by on a value change group")
        return out
    for grouped, comers in arriving.items():
        target = by_key.get(grouped)
        key = tuple(rows[target].row[where[k]] for k in keys.keys) if target is not None else comers[0][2]
        template = rows[target if target is not None else comers[0][0]]
        data = list(template.row)
        for k in keys.keys:
            data[where[k]] = key[list(keys.keys).index(k)]
        for c in aggs:
            a = g.position(template.annotation.values[c])
            if target is not None and len(g.parents(a)):
                out.why.append(f"members move into a group whose {c} feeds later operations the graph does not recompute")
                return out
            here = [int(t) for t in g.children(a) if not removed[t]] if target is not None else []
            vals = _tensor_values(g, here, changed) + [v for _, b, _ in comers for v in b[c]]
            data[cols.index(c)] = recompute(Op(int(g.op[a])), vals)
        if target is not None:
            out.data[target] = tuple(data)
        else:
            out.new.append(tuple(data))
    return out


def _grouped(values: Iterable[Any]) -> tuple[Any, ...]:
    """A key as Spark groups it: NaN with NaN, −0.0 with 0.0 (Python's ``==`` does the rest:
    null with null, 2 with 2.0)."""
    out: list[Any] = []
    for v in values:
        if isinstance(v, float) and v != v:
            out.append(("NaN",))
        else:
            out.append(0.0 if isinstance(v, float) and v == 0 else v)
    return tuple(out)


def _distinct(g: GraphIndex, aggregate: int) -> bool:
    """Whether an aggregate v-node is a DISTINCT one (its ⊗ pair a δ per value, not members)."""
    for t in g.children(aggregate).tolist():
        if int(g.op[t]) == int(Op.TENSOR):
            return any(not g.is_v[k] and int(g.op[k]) == int(Op.DELTA) for k in g.children(t).tolist())
    return False


def _membership_test(g: GraphIndex, pos: int) -> int | None:
    """The IN_GROUP child of a · p-node (a member's group membership), if it has one."""
    if g.is_v[pos] or int(g.op[pos]) != int(Op.TIMES):
        return None
    found = [k for k in g.children(pos).tolist() if g.is_v[k] and int(g.op[k]) == int(Op.IN_GROUP)]
    return found[0] if found else None


def predict(g: GraphIndex, deletion: DeletionResult, columns: Sequence[str], rows: Sequence[_Row],
            latent: Any = None) -> Prediction:
    """The rows of a frame after ``deletion`` (made on ``g``): ``rows`` are the frame's rows with
    their annotations (:meth:`~lipspark.AnnotatedFrame.collect_annotated`), ``latent`` its
    latent rows (:meth:`~lipspark.AnnotatedFrame.collect_latent`, with ``rows`` and ``tests``),
    ``None`` when it carries none."""
    changed = {c.node: c.after for c in deletion.values}
    removed = deletion.removed
    why: list[str] = []
    unknown = False
    kept, gone = [], 0
    groups = getattr(latent, "groups", None) if latent is not None else None
    regrouped = _regroup(g, deletion, columns, rows, groups, changed) if groups is not None else _Regrouped()
    why.extend(regrouped.why)
    for i, row in enumerate(rows):
        pos = g.positions(row.annotation.factors)
        if i in regrouped.data:  # members moved into its group (which may have gone without them)
            kept.append(regrouped.data[i])
            continue
        if len(pos) and removed[pos].any():
            gone += 1
            continue
        data, u = _after(g, row, columns, changed)
        unknown |= u
        kept.append(data)
    appeared = list(regrouped.new)
    for row in (latent.rows if latent is not None else ()):
        ids = row.annotation.factors
        pos = g.positions(ids)
        if len(pos) != len(set(ids)):
            raise ValueError("a latent row's factors are not in this graph: collect_latent() records them; "
                             "take the graph (tracker.graph()) after collecting them")
        if removed[pos].any():
            continue
        holds = _tests_hold(g, pos, changed)
        if holds is None:
            unknown = True
            continue
        if holds:
            data, u = _after(g, row, columns, changed)
            unknown |= u
            appeared.append(data)
    if unknown or any(c.after is UNKNOWN for c in deletion.values):
        why.append("a value the graph cannot recompute changed (a black box, or a filter, join or grouping over a value): "
                   "see the deletion's conditions")
    if deletion.appeared:
        why.append(f"{len(deletion.appeared)} row(s) an outer or anti join or a set difference kept for want of a partner "
                   "appear, and what the operations after it do with them is not in the graph")
    if deletion.moved and groups is None:
        why.append(f"{len(deletion.moved)} member(s) of a group-by on a value change group, and the frame does not carry "
                   "that grouping (an operation since changes its rows)")
    covered = latent.tests if latent is not None else frozenset()
    uncovered = [t for t in deletion.passed if t not in covered]
    if uncovered:
        why.append(f"{len(uncovered)} row(s) a filter over values dropped would pass now, and an operation after the filter "
                   "that does not work row by row (a join, an aggregation, a union, …) never saw them")
    return Prediction(tuple(columns), kept + appeared, appeared, gone, not why, tuple(why), deletion)


def what_if(frame: Any, deleted: Iterable[str | int]) -> Prediction:
    """The rows the annotated ``frame`` would hold without the base tuples ``deleted`` (token
    labels such as ``"R:3"``, or node ids): its rows and latent rows collected, its tracker's
    graph taken, the tuples deleted (:func:`~lipspark.query.deletion.delete`), and
    :func:`predict`.

    >>> from lipspark import Tracker, get_spark
    >>> from pyspark.sql import functions as F
    >>> spark = get_spark()
    >>> t = Tracker(spark)
    >>> r = t.annotate(spark.createDataFrame([(1, "a", 5), (2, "a", 1), (3, "b", 4)], "id int, k string, q int"),
    ...                "R", key=["id"])
    >>> totals = r.groupBy("k").agg(F.sum("q").alias("tot"))
    >>> above = totals.crossJoin(totals.agg(F.avg("tot").alias("mean"))).filter(F.col("tot") > F.col("mean"))
    >>> p = what_if(above.select("k", "tot"), ["R:1"])
    >>> p.rows, p.appeared, p.exact
    ([('b', 4)], [('b', 4)], True)
    """
    rows = frame.collect_annotated()
    latent = frame.collect_latent()
    g = frame.tracker.graph()
    ids = [g.token_id(d) if isinstance(d, str) else int(d) for d in deleted]
    return predict(g, delete(g, ids), frame.columns, rows, latent)
