"""Selectors: naming nodes by their data instead of their ids.

``in M`` (``of M``) names a module, or a workflow node running one (``dealer1_buy`` runs
``dealer1``: ``in dealer1`` selects both of its nodes, ``in dealer1_buy`` one).

* ``tuple REL(col = v, …) [in M] [execution N]`` — a base tuple (a token without incoming edges):
  a workflow input tuple or a tuple of a module's initial state (tokens show their key columns and those they keep);
* ``input | state | output REL(…) [of M] [execution N]`` — a module's input, state or output
  node (the INPUT, STATE or OUTPUT p-node of the paper's types i, s, o), matched on the whole tuple;
* ``invocation M [execution N]``; ``node ID``; ``token "Cars:C2"``;
* ``value COL of SEL`` — the v-node of column ``COL`` of the tuples ``SEL`` selects.

``resolve`` returns sorted node positions and raises :class:`~lipspark.errors.QueryError` saying
why when nothing matches (unknown relation or module, hidden by a ZoomOut, removed by a deletion).

>>> import pandas as pd
>>> from lipspark.graph.index import GraphIndex
>>> from lipspark.query.ast import TupleSel, Condition
>>> g = GraphIndex.build(pd.DataFrame({"id": [1, 2], "kind": "p", "op": "token", "label": ["Cars:C1", "Cars:C2"],
...                                    "relation": "Cars", "module": "dealer1",
...                                    "tuple": ['{"CarId": "C1"}', '{"CarId": "C2"}']}), pd.DataFrame({"src": [], "dst": []}))
>>> g.ids[resolve(g, TupleSel("tuple", "Cars", (Condition("CarId", "=", "C2"),), "dealer1"))].tolist()
[2]
"""
from __future__ import annotations

import json
import operator
from typing import Any, Callable

import numpy as np

from lipspark.errors import QueryError
from lipspark.graph.index import GraphIndex
from lipspark.query.ast import Condition, IdsSel, InvocationSel, NodeSel, Selector, TokenSel, TupleKind, TupleSel, ValueSel
from lipspark.vocabulary import Op
from lipspark.vocabulary.ids import ordinal_of

__all__ = ["resolve", "describe", "NoSuchColumn"]


class NoSuchColumn(QueryError):
    """A selector's condition names a column the relation's tuples do not show."""

    def __init__(self, message: str, relation: str, found: str) -> None:
        super().__init__(message)
        self.relation = relation
        #: the message without its hint (what was asked, what the tuples show)
        self.found = found

_BOUNDARY_OP = {"input": Op.INPUT, "state": Op.STATE, "output": Op.OUTPUT}
_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
}


def describe(sel: Selector) -> str:
    """The selector as query text (for messages)."""
    return str(sel)


def _where(sel: Selector) -> str:
    line = getattr(getattr(sel, "pos", None), "line", 0)
    return f" (line {sel.pos.line}, column {sel.pos.column})" if line else ""


def _fail(sel: Selector, why: str) -> QueryError:
    return QueryError(f"{describe(sel)}{_where(sel)}: {why}")


def _cmp(op: str, found: Any, wanted: Any) -> bool:
    if isinstance(found, bool) or isinstance(wanted, bool):
        return _OPS[op](found, wanted) if isinstance(found, bool) == isinstance(wanted, bool) else op == "!="
    if isinstance(found, (int, float)) and isinstance(wanted, (int, float)):
        return _OPS[op](float(found), float(wanted))
    if found is None or wanted is None:
        return _OPS[op](found, wanted) if op in ("=", "!=") else False
    if isinstance(found, (int, float)) != isinstance(wanted, (int, float)):
        return op == "!="
    return _OPS[op](found, wanted)


def _match(g: GraphIndex, cand: np.ndarray, conds: tuple[Condition, ...], sel: TupleSel) -> np.ndarray:
    if not conds or not len(cand):
        return cand
    tuples = g.column("tuple", cand)
    keep = np.zeros(len(cand), dtype=bool)
    columns: set[str] = set()
    for i, t in enumerate(tuples):
        row = json.loads(t) if isinstance(t, str) else {}
        columns.update(row)
        keep[i] = all(c.column in row and _cmp(c.op, row[c.column], c.value) for c in conds)
    unknown = [c.column for c in conds if c.column not in columns]
    if unknown and not keep.any():
        shows = ", ".join(sorted(columns)) or "no columns"
        hint = ("; base tuples show only their key columns and the columns they keep (Tracker.annotate(..., keep=[...]), "
                "Module(keep={...})), or select the module's state/input node instead") if sel.kind == "tuple" else ""
        found = f"{describe(sel)}{_where(sel)}: {sel.relation} has no column {', '.join(unknown)} (its tuples show: {shows})"
        raise NoSuchColumn(found + hint, sel.relation, found)
    return cand[keep]


def _tuples_fast(g: GraphIndex, sel: TupleSel) -> np.ndarray | None:
    """The tuple, input, state or output nodes ``sel`` names, found through the segment table
    (their ids are positional); None to take the general path (which also explains a miss)."""
    conds: dict[str, list[Any]] = {"relation": [sel.relation]}
    if sel.module is not None:
        conds[_module_or_node(g, sel.module)] = [sel.module]
    if sel.execution is not None:
        conds["execution"] = [sel.execution, None] if sel.kind == "tuple" else [sel.execution]
    cand = g.segment_nodes(conds)
    if cand is None or not len(cand):
        return None
    op = g.op[cand]
    cand = cand[op == Op.TOKEN] if sel.kind == "tuple" else cand[(op == _BOUNDARY_OP[sel.kind]) & ~g.is_v[cand]]
    out = _match(g, cand, sel.conditions, sel) if len(cand) else cand
    if len(out) and sel.kind == "tuple" and sel.execution is not None:
        out = _in_execution(g, out, sel)
    return out if len(out) else None


def _in_execution(g: GraphIndex, tokens: np.ndarray, sel: TupleSel) -> np.ndarray:
    """The base tuples of execution N among ``tokens`` — workflow inputs of that execution. A
    tuple of a module's initial state is read by every execution, so ``execution N`` cannot
    select it: refused, saying what to select instead (never silently ignored)."""
    ex = g.column("execution", tokens).tolist()
    hit = np.asarray([e == sel.execution for e in ex], dtype=bool)
    if hit.any() or not any(e is None for e in ex):
        return tokens[hit]
    state = TupleSel("state", sel.relation, sel.conditions, sel.module, sel.execution)
    raise _fail(sel, f"{sel.relation} is the initial state of module {', '.join(sorted({str(m) for m in g.column('module', tokens).tolist() if m}))}, "
                     f"read by every execution, so `execution {sel.execution}` cannot select its base tuples: drop it to select them "
                     f"(a deletion then applies to every execution), or select the state execution {sel.execution} read: `{state}`")


def _tuples(g: GraphIndex, sel: TupleSel) -> np.ndarray:
    fast = _tuples_fast(g, sel)
    if fast is not None:
        return fast
    mask = g.where("relation", [sel.relation])
    if not mask.any():
        known = sorted({str(r) for r in g.distinct("relation") if isinstance(r, str)})
        raise _fail(sel, f"no relation {sel.relation!r} in this graph (relations: {', '.join(known) or 'none'})")
    op = np.asarray(g.op)
    if sel.kind == "tuple":
        mask &= op == Op.TOKEN
    else:
        mask &= (op == _BOUNDARY_OP[sel.kind]) & ~np.asarray(g.is_v)
    if not mask.any():
        raise _fail(sel, f"no {sel.kind} node of relation {sel.relation} in this view" + _derived_hint(g, sel) + _hidden_hint(g))
    if sel.module is not None:
        by_module = mask & g.where(_module_or_node(g, sel.module), [sel.module])
        if not by_module.any():
            found = _places(g, np.flatnonzero(mask))
            raise _fail(sel, f"no {sel.kind} of {sel.relation} in module {sel.module!r} (found in: {found or 'no module'})" + _hidden_hint(g, sel.module))
        mask = by_module
    if sel.execution is not None:
        # base tuples of a module's initial state belong to every execution (refused below)
        in_exec = g.where("execution", [sel.execution])
        mask &= (in_exec | g.where("execution", [None])) if sel.kind == "tuple" else in_exec
        if not mask.any():
            raise _fail(sel, f"nothing in execution {sel.execution}")
    out = _match(g, np.flatnonzero(mask), sel.conditions, sel)
    if not len(out):
        raise _fail(sel, "no tuple has these values" + _hidden_hint(g))
    if sel.kind == "tuple" and sel.execution is not None:
        out = _in_execution(g, out, sel)
        if not len(out):
            raise _fail(sel, f"nothing in execution {sel.execution}")
    return out


def _derived_hint(g: GraphIndex, sel: TupleSel) -> str:
    """Why ``tuple REL`` finds no base tuple when REL is a module's output or state: its rows are
    derived, so they are selected as such, or through the base tuples they come from."""
    if sel.kind != "tuple":
        return ""
    cand = np.flatnonzero(g.where("relation", [sel.relation]) & ~np.asarray(g.is_v))
    kinds: tuple[tuple[TupleKind, Op], ...] = (("state", Op.STATE), ("output", Op.OUTPUT), ("input", Op.INPUT))
    ops = np.asarray(g.op[cand], dtype=np.int64)
    mods = g.column("module", cand)
    roles: list[TupleKind] = []
    where: list[str] = []
    for r, o in kinds:
        of = sorted({str(m) for m in mods[ops == int(o)].tolist() if isinstance(m, str)})
        if of:
            roles.append(r)
            where.append(f"{r} of {', '.join(of)}")
    if not roles:
        return ""
    alt = TupleSel(roles[0], sel.relation, sel.conditions, sel.module, sel.execution)
    return (f": {sel.relation} is not a base relation, its rows are derived ({'; '.join(where)}); "
            f"select them as `{alt}`, or the base tuples they come from (`ancestors {alt}` lists them)")


def _module_or_node(g: GraphIndex, name: str) -> str:
    """Which attribute ``in NAME`` matches: ``module``, or ``node`` when ``NAME`` is a workflow
    node (a DAG node running a module, e.g. ``dealer1_buy`` running ``dealer1``) and no module."""
    if g.where("module", [name]).any():
        return "module"
    return "node" if g.where("node", [name]).any() else "module"


def _places(g: GraphIndex, positions: np.ndarray) -> str:
    """The modules of the nodes at ``positions``, each with its workflow nodes when they are
    named otherwise: ``dealer1 (nodes dealer1_bid, dealer1_buy), agg``."""
    mods = g.column("module", positions).tolist()
    nodes = g.column("node", positions).tolist()
    by: dict[str, set[str]] = {}
    for m, n in zip(mods, nodes):
        if isinstance(m, str):
            by.setdefault(m, set()).update([n] if isinstance(n, str) and n != m else [])
    return ", ".join(m + (f" (node{'s' if len(ns) > 1 else ''} {', '.join(sorted(ns))})" if ns else "") for m, ns in sorted(by.items()))


def _hidden_hint(g: GraphIndex, module: str | None = None) -> str:
    if module is not None and module in g.zoom:
        return f"; module {module} is zoomed out in this view: zoomin {module} first"
    if g.zoom:
        return f" (zoomed out: {', '.join(g.zoom)})"
    return ""


def _values(g: GraphIndex, sel: ValueSel, base: np.ndarray) -> np.ndarray:
    cand = np.flatnonzero(g.where("column", [sel.column]) & np.asarray(g.is_v))
    if not len(cand):
        raise _fail(sel, f"no value nodes of a column {sel.column!r} in this view (columns with v-nodes carry an aggregate or a black-box result)")
    both = np.concatenate([cand, base])
    inv = dict(zip(both.tolist(), g.column("invocation", both).tolist()))
    rel = dict(zip(both.tolist(), g.column("relation", both).tolist()))

    def key(p: int) -> tuple[Any, ...]:
        return (-1 if inv[p] is None else int(inv[p]), rel[p], int(g.type_code[p]), int(ordinal_of(int(g.ids[p]))))

    by_key = {key(p): p for p in cand.tolist()}
    out = []
    for p in base.tolist():
        hit = by_key.get(key(p))
        if hit is not None:
            out.append(hit)
    if not out:
        raise _fail(sel, f"the selected tuples have no v-node for {sel.column!r}")
    return np.unique(np.asarray(out, dtype=np.int64))


def resolve(g: GraphIndex, sel: Selector) -> np.ndarray:
    """Positions of the nodes ``sel`` selects in the view ``g`` (at least one), in node-id order."""
    return g.by_id(_resolve(g, sel))


def _resolve(g: GraphIndex, sel: Selector) -> np.ndarray:
    if isinstance(sel, NodeSel):
        if not g.contains(sel.id):
            raise _fail(sel, f"no node {sel.id} in this view" + _hidden_hint(g))
        return np.array([g.position(sel.id)], dtype=np.int64)
    if isinstance(sel, TokenSel):
        hits = np.flatnonzero(g.where("label", [sel.label]) & (np.asarray(g.op) == Op.TOKEN))
        if not len(hits):
            raise _fail(sel, f"no token labelled {sel.label!r} in this view")
        return hits
    if isinstance(sel, InvocationSel):
        is_inv = np.asarray(g.op) == Op.INVOCATION
        mask = is_inv & g.where(_module_or_node(g, sel.module), [sel.module])
        if not mask.any():
            raise _fail(sel, f"no module {sel.module!r} (modules: {_places(g, np.flatnonzero(is_inv)) or 'none'})")
        if sel.execution is not None:
            mask &= g.where("execution", [sel.execution])
            if not mask.any():
                raise _fail(sel, f"module {sel.module} was not invoked in execution {sel.execution}")
        return np.flatnonzero(mask)
    if isinstance(sel, TupleSel):
        return _tuples(g, sel)
    if isinstance(sel, ValueSel):
        return _values(g, sel, resolve(g, sel.of))
    if isinstance(sel, IdsSel):
        at = g.lookup(np.asarray(sel.ids, dtype=np.int64))
        if not (at >= 0).any():
            raise _fail(sel, f"none of its {len(sel.ids)} node(s) is in this view" + _hidden_hint(g))
        return at[at >= 0]
    raise QueryError(f"unknown selector {type(sel).__name__}")
