"""What-if with numbers: deletion propagation (and base-value updates) with the values the graph
cannot recompute found by re-running only the invocations that hold them.

A deletion recomputes aggregates over their surviving ⊗ members (:mod:`lipspark.query.deletion`)
but stops at a black box (its function is not in the graph) and at a filter, join or grouping
that read a changed value (the rows it would keep are not in the graph): their values are
*unknown*. :func:`recompute` then re-runs, plainly, each invocation holding such a value, in the
order the workflow ran them: it reads what the invocation read without the rows the deletion
removed and with the values the deletion changed, runs the module's logic, and compares what it
writes with what the run stored (a :class:`Rerunner` does this: the store's, in
:mod:`lipspark.workflow.rerun`). The values it wrote are put into the graph (``known`` of
:func:`~lipspark.query.deletion.delete`) and the propagation runs again from them, so
aggregates downstream are recomputed by the graph; rows it no longer writes are deleted in the
graph too; rows it writes that the run did not are not in the graph, so the invocations that read
them are re-run with them. Invocations the change never reaches, or whose values the graph
recomputes, are never re-run.

An *update* (``update tuple R(k = …) set c = v``) changes a base tuple's values: every invocation
that read the tuple is re-run with the new values, and the rest follows as above.

Everything is said in the result: which invocations ran again and how long each took, the
graph's own answer beside the recomputed one, rows that appear, and values that stay unknown
(an invocation whose module is zoomed out is re-run as well: zooming changes the view, not what
ran).
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Protocol, Sequence, runtime_checkable

import numpy as np

from lipspark.errors import QueryError
from lipspark.graph.index import GraphIndex
from lipspark.query.deletion import DeletionResult, delete
from lipspark.vocabulary import UNKNOWN
from lipspark.vocabulary.ids import LOW_MASK

__all__ = ["Rerunner", "Recomputed", "recompute", "readers"]


@runtime_checkable
class Rerunner(Protocol):
    """Re-runs invocations of the store a graph was captured from
    (:class:`lipspark.workflow.rerun.Rerunner`)."""

    def rank(self, execution: int, node: str) -> tuple[int, int]:
        """A sort key: the order the workflow ran its invocations in."""
        ...

    def consumers(self, execution: int, node: str, relation: str) -> list[tuple[int, str]]:
        """The invocations that read ``relation`` as the invocation wrote it."""
        ...

    def invocation_id(self, execution: int, node: str) -> int:
        """The id of the invocation's node in the graph."""
        ...

    def rerun(self, execution: int, node: str, *, removed: Sequence[int] = (),
              values: Mapping[str, Mapping[int, Mapping[str, Any]]] | None = None,
              given: Mapping[str, Mapping[int, Mapping[str, Any]]] | None = None,
              appended: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
              value_columns: Mapping[str, Sequence[str]] | None = None) -> Any:
        """Re-run one invocation; the result has ``known``, ``gone``, ``ambiguous``,
        ``appeared``, ``written`` and ``seconds`` (:class:`lipspark.workflow.rerun.Rerun`)."""
        ...


@dataclass
class Recomputed:
    """A what-if with re-runs: ``result`` the deletion with every value the re-runs told
    (its view carries them), ``graph`` the graph's own answer (no re-run), ``reruns`` what ran
    again, in order; ``appeared`` (execution, node, relation, row) for each row a re-run wrote
    that the run did not; ``unresolved`` (execution, node, why) for each invocation holding an
    unknown value that could not be re-run; ``later`` those not re-run as they come after the
    execution asked for; ``ambiguous`` ids of v-nodes whose new values a
    re-run could not tell apart."""

    result: DeletionResult
    graph: DeletionResult
    reruns: list[Any] = field(default_factory=list)
    appeared: list[tuple[int, str, str, dict[str, Any]]] = field(default_factory=list)
    unresolved: list[tuple[int, str, str]] = field(default_factory=list)
    ambiguous: list[int] = field(default_factory=list)
    #: (execution, node) of the invocations not re-run because they come after ``until``
    later: list[tuple[int, str]] = field(default_factory=list)
    deleted: list[int] = field(default_factory=list)
    known: dict[int, Any] = field(default_factory=dict)

    @property
    def exact(self) -> bool:
        """Whether every value is what a re-run of the whole workflow gives: each invocation
        holding an unknown value was re-run and told its values apart."""
        return not self.unresolved and not self.later and not self.ambiguous

    @property
    def seconds(self) -> float:
        return float(sum(r.seconds for r in self.reruns))


def _invocation_of(g: GraphIndex, positions: np.ndarray) -> list[tuple[int, str] | None]:
    ex, nodes = g.column("execution", positions), g.column("node", positions)
    return [(int(e), str(n)) if e is not None and n is not None else None for e, n in zip(ex.tolist(), nodes.tolist())]


def readers(g: GraphIndex, token: int) -> list[tuple[int, str, str, int]]:
    """The invocations that read base tuple ``token`` (its id): (execution, node, relation,
    stored position) of each read node (type i or s) over it."""
    pos = g.position(token)
    ups = g.parents(pos)
    ups = ups[np.isin([g.type(int(p)) for p in ups.tolist()], ["i", "s"]) & ~np.asarray(g.is_v[ups], dtype=bool)] if len(ups) else ups
    out = []
    for p, inv in zip(ups.tolist(), _invocation_of(g, ups)):
        if inv is not None:
            out.append((inv[0], inv[1], str(g.column("relation", [p])[0]), int(g.ids[p]) & LOW_MASK))
    return sorted(set(out))


def recompute(g: GraphIndex, nodes: Iterable[int], rerunner: Rerunner, *,
              updates: Mapping[tuple[int, str], Mapping[str, Mapping[int, Mapping[str, Any]]]] | None = None,
              until: int | None = None) -> Recomputed:
    """Delete the nodes with ids ``nodes`` from ``g`` (it may be empty, for an update alone) and
    find every value the graph cannot recompute by re-running the invocations that hold them
    (see the module's text). ``updates``: (execution, node) → relation → stored position →
    column → value, the base values an update changes where each invocation reads them (those
    invocations are re-run whatever the graph says). ``until``: re-run only invocations of
    executions up to this one (the values of later ones stay as the graph gives them)."""
    seeds = [int(i) for i in nodes]
    first = delete(g, seeds)
    must: set[tuple[int, str]] = set(updates or {})
    values_in: dict[tuple[int, str], dict[str, dict[int, dict[str, Any]]]] = defaultdict(lambda: defaultdict(dict))
    for key, rels in (updates or {}).items():
        for rname, rows in rels.items():
            for p, cols in rows.items():
                values_in[key][rname].setdefault(int(p), {}).update(cols)
    appended: dict[tuple[int, str], dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    out = Recomputed(first, first)
    done: set[tuple[int, str]] = set()
    inv_col = g.int_column("invocation")
    r = first
    while True:
        unknown = [c.node for c in r.values if c.after is UNKNOWN]
        at = g.lookup(np.asarray(unknown, dtype=np.int64)) if unknown else np.zeros(0, dtype=np.int64)
        cands = {k for k in _invocation_of(g, at[at >= 0]) if k is not None} | must
        cands -= done
        if not cands:
            break
        n, node = key = min(cands, key=lambda k: rerunner.rank(*k))
        done.add(key)
        if until is not None and n > until:
            out.later += sorted(cands, key=lambda k: rerunner.rank(*k))
            done |= cands
            continue
        inv_id = rerunner.invocation_id(n, node)
        mine = np.flatnonzero(inv_col == inv_id)
        if not len(mine):
            out.unresolved.append((n, node, "its nodes are not in this graph"))
            continue
        kinds = np.asarray([g.type(int(p)) for p in mine.tolist()])
        is_v = np.asarray(g.is_v[mine], dtype=bool)
        rel, col = g.column("relation", mine), g.column("column", mine)
        reads = np.isin(kinds, ["i", "s"]) & is_v  # the values it reads (input and state v-nodes)
        writes = np.isin(kinds, ["o", ""]) & is_v & np.asarray([x is not None for x in rel.tolist()])  # the values it writes
        changes = {c.node: c.after for c in r.values}
        vals: dict[str, dict[int, dict[str, Any]]] = {}
        blocked = 0
        for i, rn, cn in zip(g.ids[mine[reads]].tolist(), rel[reads].tolist(), col[reads].tolist()):
            if int(i) in changes:
                blocked += changes[int(i)] is UNKNOWN
                vals.setdefault(str(rn), {}).setdefault(int(i) & LOW_MASK, {})[str(cn)] = changes[int(i)]
        if blocked:
            out.unresolved.append((n, node, f"{blocked} value(s) it reads are unknown"))
            continue
        value_columns: dict[str, list[str]] = defaultdict(list)
        for rn, cn in sorted(set(zip(rel[writes].tolist(), col[writes].tolist()))):
            value_columns[str(rn)].append(str(cn))
        res = rerunner.rerun(n, node, removed=[int(i) for i in g.ids[mine[r.removed[mine]]].tolist()], values=vals,
                             given={rn: dict(rows) for rn, rows in values_in.get(key, {}).items()},
                             appended={k: list(v) for k, v in appended.get(key, {}).items()}, value_columns=dict(value_columns))
        out.reruns.append(res)
        out.known.update(res.known)
        out.deleted += [i for i in res.gone if g.contains(i)]
        out.ambiguous += [i for i in res.ambiguous if g.contains(i)]
        for rname, rows in res.appeared.items():
            out.appeared += [(n, node, rname, row) for row in rows]
            for c in rerunner.consumers(n, node, rname):
                appended[c][rname] += rows
                must.add(c)
        unclear = set(out.ambiguous)
        r = delete(g, seeds + out.deleted, known={i: v for i, v in out.known.items() if i not in unclear})
    out.result = r
    return out


def check_rerunner(rerunner: Rerunner | None, what: str) -> Rerunner:
    """The session's re-runner, or a one-line error saying how to get one."""
    if rerunner is None:
        raise QueryError(f"{what} re-runs module code, which needs the workflow store the graph was captured in: "
                         "open the session on the store (lipspark query STORE, or Session(path, rerun=Rerunner(path)) "
                         "with Rerunner from lipspark.workflow)")
    return rerunner
