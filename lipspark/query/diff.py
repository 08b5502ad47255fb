"""The diff of two executions: which tuples of one relation of a module appeared, disappeared or
changed value from execution *i* to execution *j*, and the provenance that explains each.

**Matching.** The graph does not record an output relation's key, so tuples are matched on
their *plain* columns — those without a v-node in either execution — or on the columns
``on`` names. Values (columns with v-nodes: aggregates, black boxes) are what may change:

* a tuple (its data; duplicate rows are one tuple whose provenance is the sum of theirs) found
  in both executions is *unchanged*, or *rederived* when its provenance differs;
* a matching key with exactly one other tuple on each side is a *changed* tuple, its columns
  outside the key showing ``before → after``;
* the other tuples *disappeared* (only in *i*) or *appeared* (only in *j*) — also those of a
  key that matches several tuples on a side, which cannot be paired.

**Explanations.** Each tuple's provenance (its polynomial, and each value's ``Σ m ⊗ v``) is
expanded into terms (:func:`lipspark.semiring.expand`) with the invocation tokens of the
execution compared written ``M_<module>[e]`` on both sides, so that the same module's
invocation in either execution is not a difference (an earlier execution's, reached through
the state it wrote, keeps its number). A changed or rederived tuple lists the terms, tokens
(base tuples and invocations) and state tuples read that its lineage has on one side and not
the other; an appeared or disappeared tuple all its terms, and the tokens and state tuples of
its lineage that the relation's lineage on the other side lacks. The diff runs on any view:
after a ``zoomout`` the module is one black box in the terms; after a ``delete`` the tuples
that survive are compared, their values the what-if ones (``?`` where the delete cannot
recompute a value: two unknown values are never taken as equal).

>>> import pandas as pd
>>> from lipspark.graph.index import GraphIndex
>>> g = GraphIndex.build(pd.DataFrame({  # module m outputs R(K); A:a is initial state, A:b and A:c inputs
...     "id": [1, 2, 3, 4, 5, 6, 7, 8, 9], "module": "m", "execution": [1, 2, None, 1, 2, 1, 1, 2, 2],
...     "op": ["invocation", "invocation", "token", "token", "token", "output", "output", "output", "output"],
...     "label": ["m", "m", "A:a", "A:b", "A:c", "·", "·", "·", "·"], "relation": [None, None, "A", "A", "A", "R", "R", "R", "R"],
...     "type": ["m", "m", None, "i", "i", "o", "o", "o", "o"],
...     "tuple": [None, None, None, None, None, '{"K": "x"}', '{"K": "y"}', '{"K": "x"}', '{"K": "z"}']}),
...     pd.DataFrame({"src": [3, 1, 4, 1, 3, 5, 2, 5, 2], "dst": [6, 6, 7, 7, 8, 8, 8, 9, 9]}))
>>> d = diff(g, "R", 1, 2)
>>> d.counts()
{'appeared': 1, 'disappeared': 1, 'changed': 0, 'rederived': 1, 'unchanged': 0}
>>> for line in d.lines(): print(line)
(M_<module>[e]: the module's invocation in the execution compared; − only in execution 1, + only in execution 2)
appeared  output R(z)
  + only in execution 2: A:c
  + A:c·M_m[e]
disappeared  output R(y)
  − only in execution 1: A:b
  − A:b·M_m[e]
rederived  output R(x) → (x)
  + only in execution 2: A:c
  − A:a·M_m[e]
  + A:a·A:c·M_m[e]
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, Sequence

import numpy as np

from lipspark.errors import QueryError, SemiringError
from lipspark.graph.expression import expressions
from lipspark.graph.index import GraphIndex
from lipspark.query.ast import Condition, TupleSel, format_literal
from lipspark.query.selector import resolve
from lipspark.query.text import ROW_LIMIT, printable
from lipspark.semiring import AggValue, Expr, ExpandedAggregate, Monomial, expand
from lipspark.semiring.expr import rename_all, tokens
from lipspark.vocabulary import UNKNOWN, Op
from lipspark.vocabulary.ids import ordinal_of

__all__ = ["diff", "ExecutionDiff", "TupleDiff", "Lineage", "CHANGES", "executions"]

#: The kinds of difference, in the order an answer lists them.
CHANGES = ("appeared", "disappeared", "changed", "rederived")
Change = Literal["appeared", "disappeared", "changed", "rederived"]

_BOUNDARY = {"input": Op.INPUT, "state": Op.STATE, "output": Op.OUTPUT}
#: the longest term and the most tokens and terms a tuple shows as text (``--all``: every one, whole)
_TERM_TEXT, _TOKENS_SHOWN, _TERMS_SHOWN = 160, 12, 6


@dataclass(frozen=True)
class Lineage:
    """What one side of a difference has that the other lacks: tokens (base tuples and
    invocations, ``M_<module>[e]`` for the execution compared), state tuples read
    (``Seen(D1-1, C, 11) in ledger``) and terms of the expanded provenance (``Balance: m ⊗ v``
    for a value's)."""

    tokens: tuple[str, ...] = ()
    state: tuple[str, ...] = ()
    terms: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.tokens or self.state or self.terms)

    def to_dict(self) -> dict[str, list[str]]:
        return {"tokens": list(self.tokens), "state": list(self.state), "terms": list(self.terms)}


@dataclass(frozen=True)
class TupleDiff:
    """One difference: the tuple's data in execution *i* (``before``) and *j* (``after``), None
    on the side it is missing from; its node ids on each side; the columns whose values differ
    ``(column, before, after)``; and what only each side's provenance has."""

    change: Change
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    nodes_before: tuple[int, ...] = ()
    nodes_after: tuple[int, ...] = ()
    values: tuple[tuple[str, Any, Any], ...] = ()
    only_before: Lineage = field(default_factory=Lineage)
    only_after: Lineage = field(default_factory=Lineage)

    def to_dict(self) -> dict[str, Any]:
        return {"change": self.change, "before": self.before, "after": self.after,
                "nodes_before": list(self.nodes_before), "nodes_after": list(self.nodes_after),
                "values": [{"column": c, "before": b, "after": a} for c, b, a in self.values],
                "only_before": self.only_before.to_dict(), "only_after": self.only_after.to_dict()}


@dataclass(frozen=True)
class ExecutionDiff:
    """The diff of ``kind relation`` of ``module`` from execution ``before`` to ``after``:
    the tuples that differ (appeared, disappeared, changed, rederived, in that order) and how
    many are unchanged; ``matched_on`` the columns tuples were matched on (given with ``on``
    when ``by_columns``), ``value_columns`` those carrying v-nodes."""

    kind: str
    relation: str
    module: str
    before: int
    after: int
    matched_on: tuple[str, ...]
    value_columns: tuple[str, ...]
    by_columns: bool
    tuples: tuple[TupleDiff, ...]
    unchanged: int

    def counts(self) -> dict[str, int]:
        """How many tuples of each kind of difference, and unchanged."""
        c = Counter(str(t.change) for t in self.tuples)
        return {**{k: c[k] for k in CHANGES}, "unchanged": self.unchanged}

    def summary(self) -> str:
        """One line: what was compared, on which columns, and the counts."""
        if self.matched_on:
            how = f"matched on {', '.join(self.matched_on)}" + ("" if self.by_columns else " (the columns without values)")
        else:
            how = "no column to match on (every column carries values)"
        counts = ", ".join(f"{n} {k}" for k, n in self.counts().items())
        return f"{self.kind} {self.relation} of {self.module}, execution {self.before} → execution {self.after}, {how}: {counts}"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "relation": self.relation, "module": self.module, "before": self.before, "after": self.after,
                "matched_on": list(self.matched_on), "value_columns": list(self.value_columns), "counts": self.counts(),
                "tuples": [t.to_dict() for t in self.tuples]}

    def lines(self, *, ids: bool = False, limit: int | None = ROW_LIMIT) -> list[str]:
        """The differences for people: one block per tuple (at most ``limit``, None: all): the
        change and the tuple, then what only each side has — tokens, state read, terms (a few
        of each, cut when long, unless ``limit`` is None)."""
        out: list[str] = []
        if any("[e]" in x for t in self.tuples for side in (t.only_before, t.only_after) for x in side.tokens + side.terms):
            out.append(f"(M_<module>[e]: the module's invocation in the execution compared; − only in execution {self.before}, "
                       f"+ only in execution {self.after})")
        if not self.tuples:
            out.append("(no difference)")
        shown = self.tuples if limit is None else self.tuples[:limit]
        for t in shown:
            out.append(f"{t.change}  {self._name(t, ids)}")
            for sign, side, n in (("−", t.only_before, self.before), ("+", t.only_after, self.after)):
                if side.tokens or side.state:
                    parts = ([_some(side.tokens, limit is None)] if side.tokens else []) + (["state " + _some(side.state, limit is None)] if side.state else [])
                    out.append(f"  {sign} only in execution {n}: " + "; ".join(parts))
            terms = [("−", x) for x in t.only_before.terms] + [("+", x) for x in t.only_after.terms]
            for sign, x in terms if limit is None else terms[:_TERMS_SHOWN]:
                out.append(f"  {sign} {printable(x) if limit is None else _cut(printable(x))}")
            if limit is not None and len(terms) > _TERMS_SHOWN:
                out.append(f"  … and {len(terms) - _TERMS_SHOWN} more term(s) (--all shows every term, --format json lists all)")
        if len(self.tuples) > len(shown):
            out.append(f"… and {len(self.tuples) - len(shown)} more tuple(s) (--all shows every one, --format json lists all)")
        return out

    def _name(self, t: TupleDiff, ids: bool) -> str:
        data = t.before if t.after is None else t.after if t.before is None else None
        if data is not None:
            nodes = t.nodes_before or t.nodes_after
            return _ids(nodes, ids) + f"{self.kind} {self.relation}({_data(data)})"
        assert t.before is not None and t.after is not None
        name = _ids(t.nodes_before, ids) + f"{self.kind} {self.relation}({_data(t.before)}) → " + _ids(t.nodes_after, ids) + f"({_data(t.after)})"
        if t.values:
            name += ": " + ", ".join(f"{c} {_shown(b)} → {_shown(a)}" for c, b, a in t.values)
        return name


def executions(g: GraphIndex) -> list[int]:
    """The executions of the view: those its invocations (or zoomed-out invocations) ran in."""
    inv = np.union1d(g.nodes_with(op=Op.INVOCATION), g.nodes_with(op=Op.ZOOM))
    return sorted(int(e) for e in g.distinct("execution", inv) if e is not None)


def diff(g: GraphIndex, relation: str, before: int, after: int, *, kind: str = "output", module: str | None = None,
         conditions: Sequence[Condition] = (), on: Sequence[str] | None = None) -> ExecutionDiff:
    """The diff of the ``kind`` tuples (``input``, ``state`` or ``output``) of ``relation`` in
    ``module`` (which may be left out when one module has the relation) from execution
    ``before`` to ``after``, restricted to the tuples ``conditions`` select, matched on the
    columns ``on`` (default: those without v-nodes). See the module docstring for the rules.

    Raises :class:`~lipspark.errors.QueryError` naming what exists for an unknown relation,
    module, column or execution, and for the same execution twice.
    """
    if kind not in _BOUNDARY:
        raise QueryError(f"diff compares the input, state or output tuples of a module, found {kind!r}; "
                         f"base tuples (tuple) are their own provenance: diff the input or state of the module that reads them")
    if before == after:
        raise QueryError(f"diff needs two different executions, found execution {before} twice; "
                         f"name another, e.g. `execution {before}, execution {before + 1}`")
    known = executions(g)
    missing = [e for e in (before, after) if e not in known]
    if missing:
        raise QueryError(f"no execution {missing[0]} in this graph (executions: {', '.join(map(str, known)) or 'none'})")
    hits = resolve(g, TupleSel(kind, relation, tuple(conditions), module))  # type: ignore[arg-type]
    mods = sorted({str(m) for m in g.column("module", hits) if m is not None})
    if module is None and len(mods) > 1:
        raise QueryError(f"{kind} {relation} is a relation of several modules ({', '.join(mods)}); name one: "
                         f"`diff {kind} {relation} of {mods[0]} execution {before}, execution {after}`")
    module = module if module is not None else mods[0]
    ex = g.column("execution", hits)
    sides = [hits[np.array([e == n for e in ex], dtype=bool)] for n in (before, after)]
    return _Differ(g, kind, relation, module, before, after, sides, on).run()


# ---------------------------------------------------------------------------------- the work


@dataclass
class _Tuple:
    """One tuple (its data) on one side: its rows (p-node positions) and their v-nodes."""

    data: dict[str, Any]
    rows: list[int] = field(default_factory=list)
    values: dict[str, list[int]] = field(default_factory=dict)


@dataclass
class _Provenance:
    """A tuple's provenance on one side, normalized: terms (term text → coefficient), tokens,
    and the roots of its lineage (for the state tuples it read)."""

    terms: Counter[_Term]
    tokens: set[str]
    roots: list[int]


class _Differ:
    def __init__(self, g: GraphIndex, kind: str, relation: str, module: str, before: int, after: int,
                 sides: list[np.ndarray], on: Sequence[str] | None) -> None:
        self.g, self.kind, self.relation, self.module = g, kind, relation, module
        self.execs = (before, after)
        self.sides = sides
        self.on = tuple(on) if on is not None else None

    def run(self) -> ExecutionDiff:
        g = self.g
        tuples = [self._tuples(side, n) for side, n in zip(self.sides, self.execs)]
        columns = list(dict.fromkeys(c for side in tuples for t in side.values() for c in t.data))
        value_cols = tuple(c for c in columns if any(c in t.values for side in tuples for t in side.values()))
        if self.on is not None:
            unknown = [c for c in self.on if c not in columns]
            if unknown:
                raise QueryError(f"diff {self.kind} {self.relation} of {self.module}: no column {', '.join(unknown)} to match on "
                                 f"(its tuples show: {', '.join(columns) or 'no columns'})")
            match = self.on
        else:
            match = tuple(c for c in columns if c not in value_cols)
        pairs = self._pair(tuples, match)
        roots = np.array(sorted({p for side in tuples for t in side.values() for p in t.rows + [v for vs in t.values.values() for v in vs]}),
                         dtype=np.int64)
        memo = expressions(g, roots) if len(roots) else {}
        prov = [{k: self._provenance(t, memo, n) for k, t in side.items()} for side, n in zip(tuples, self.execs)]
        out: list[TupleDiff] = []
        unchanged = 0
        whole: list[tuple[set[str], set[str]] | None] = [None, None]  # per side: every tuple's tokens, state read

        def side_lineage(s: int) -> tuple[set[str], set[str]]:
            if whole[s] is None:
                toks = set().union(*(p.tokens for p in prov[s].values()))
                whole[s] = (toks, self._state([r for p in prov[s].values() for r in p.roots]))
            return whole[s]  # type: ignore[return-value]

        for change, a, b in pairs:
            if change in ("appeared", "disappeared"):
                s, k = (1, b) if change == "appeared" else (0, a)
                assert k is not None
                mine = prov[s][k]
                toks, state = side_lineage(1 - s)
                only = Lineage(_sorted_tokens(mine.tokens - toks), tuple(sorted(self._state(mine.roots) - state)),
                               _terms(mine.terms, Counter()))
                t = tuples[s][k]
                nodes = tuple(int(i) for i in g.ids[t.rows])
                out.append(TupleDiff("appeared" if s == 1 else "disappeared", t.data if s == 0 else None, t.data if s == 1 else None,
                                     nodes if s == 0 else (), nodes if s == 1 else (),
                                     only_before=only if s == 0 else Lineage(), only_after=only if s == 1 else Lineage()))
                continue
            assert a is not None and b is not None
            pa, pb = prov[0][a], prov[1][b]
            ta, tb = tuples[0][a], tuples[1][b]
            if change == "same" and pa.terms == pb.terms:
                unchanged += 1
                continue
            sa, sb = self._state(pa.roots), self._state(pb.roots)
            values = tuple((c, va, vb) for c in columns if c not in match
                           for va, vb in [(self._value(ta, c), self._value(tb, c))] if va is UNKNOWN or va != vb)
            out.append(TupleDiff("changed" if change == "changed" else "rederived", ta.data, tb.data,
                                 tuple(int(i) for i in g.ids[ta.rows]), tuple(int(i) for i in g.ids[tb.rows]), values,
                                 Lineage(_sorted_tokens(pa.tokens - pb.tokens), tuple(sorted(sa - sb)), _terms(pa.terms, pb.terms)),
                                 Lineage(_sorted_tokens(pb.tokens - pa.tokens), tuple(sorted(sb - sa)), _terms(pb.terms, pa.terms))))
        order = {c: i for i, c in enumerate(CHANGES)}
        out.sort(key=lambda t: (order[t.change], _key(t.before if t.before is not None else t.after or {}, match)))
        return ExecutionDiff(self.kind, self.relation, self.module, self.execs[0], self.execs[1], match, value_cols,
                             self.on is not None, tuple(out), unchanged)

    def _value(self, t: _Tuple, column: str) -> Any:
        """A tuple's value in ``column`` in this view: the what-if value a ``delete`` gave its
        v-node (:data:`~lipspark.vocabulary.UNKNOWN` where it cannot be recomputed), else the
        captured one."""
        what_if = self.g.what_if
        if what_if:
            for v in t.values.get(column, ()):
                node = int(self.g.ids[v])
                if node in what_if:
                    return what_if[node]
        return t.data.get(column)

    def _tuples(self, rows: np.ndarray, execution: int) -> dict[str, _Tuple]:
        """The side's tuples by their data (duplicate rows are one tuple), each with its rows'
        v-nodes by column (matched to a row by invocation and ordinal, as ``value COL of`` does)."""
        g = self.g
        out: dict[str, _Tuple] = {}
        if not len(rows):
            return out
        vals = self._value_nodes(execution)
        inv = g.column("invocation", rows).tolist()
        for p, i, text in zip(rows.tolist(), inv, g.column("tuple", rows).tolist()):
            data = json.loads(text) if isinstance(text, str) else {}
            t = out.setdefault(_key(data, None), _Tuple(data))
            t.rows.append(p)
            for col, v in vals.get((i, int(ordinal_of(int(g.ids[p])))), {}).items():
                t.values.setdefault(col, []).append(v)
        return out

    def _value_nodes(self, execution: int) -> dict[tuple[Any, int], dict[str, int]]:
        g = self.g
        cond: dict[str, list[Any]] = {"relation": [self.relation], "module": [self.module], "execution": [execution]}
        cand = g.segment_nodes(cond)
        if cand is None:
            cand = np.flatnonzero(g.where("relation", cond["relation"]) & g.where("module", cond["module"]) & g.where("execution", cond["execution"]))
        cand = cand[np.asarray(g.is_v[cand], dtype=bool) & (np.asarray(g.op[cand]) == _BOUNDARY[self.kind])]
        out: dict[tuple[Any, int], dict[str, int]] = {}
        for p, i, col in zip(cand.tolist(), g.column("invocation", cand).tolist(), g.column("column", cand).tolist()):
            if col is not None:
                out.setdefault((i, int(ordinal_of(int(g.ids[p])))), {})[str(col)] = p
        return out

    def _pair(self, tuples: list[dict[str, _Tuple]], match: tuple[str, ...]) -> list[tuple[str, str | None, str | None]]:
        """(change, data key in *i*, data key in *j*): ``same`` for a tuple on both sides,
        ``changed`` for the one other tuple of a key on each side, else appeared/disappeared."""
        by_key: list[dict[str, list[str]]] = [{}, {}]
        for s in (0, 1):
            for k, t in tuples[s].items():
                by_key[s].setdefault(_key(t.data, match), []).append(k)
        pairs: list[tuple[str, str | None, str | None]] = []
        for key in sorted(set(by_key[0]) | set(by_key[1])):
            a, b = by_key[0].get(key, []), by_key[1].get(key, [])
            same = [k for k in a if k in tuples[1]]
            pairs += [("same", k, k) for k in same]
            left_a, left_b = [k for k in a if k not in tuples[1]], [k for k in b if k not in tuples[0]]
            if len(left_a) == 1 and len(left_b) == 1:
                pairs.append(("changed", left_a[0], left_b[0]))
            else:
                pairs += [("disappeared", k, None) for k in left_a] + [("appeared", None, k) for k in left_b]
        return pairs

    def _provenance(self, t: _Tuple, memo: dict[int, Any], execution: int) -> _Provenance:
        """The tuple's terms and tokens with this execution's invocations written ``M_<module>[e]``."""
        exprs: list[tuple[str | None, Any]] = [(None, memo[p]) for p in t.rows]
        exprs += [(col, memo[v]) for col, vs in t.values.items() for v in vs]
        renames = self._renames(execution, memo)
        once = set(renames.values()) | self._names
        terms: Counter[_Term] = Counter()
        found: set[str] = set()
        for col, e in exprs:
            if isinstance(e, AggValue):
                kids = rename_all([p for p, _ in e.terms], renames)
                e = AggValue(e.op, tuple((k, v) for k, (_, v) in zip(kids, e.terms)))
            elif isinstance(e, Expr):
                e = rename_all([e], renames)[0]
            else:
                continue  # a constant: its value is the tuple's data
            found |= tokens(e)
            try:
                x = expand(e, once=once)
            except SemiringError:  # too many monomials: the expression itself is the one term
                terms[_Term(col, (str(e),))] += 1
                continue
            if isinstance(x, ExpandedAggregate):
                for m, v in x.terms:
                    terms[_Term(col, m.factors, repr(v))] += m.coefficient
            else:
                for m in x.monomials:
                    terms[_Term(col, m.factors)] += m.coefficient
        return _Provenance(terms, found, t.rows + [v for vs in t.values.values() for v in vs])

    def _renames(self, execution: int, memo: dict[int, Any]) -> dict[str, str]:
        """``M_<module>[<execution>]`` → ``M_<module>[e]`` for the invocations of ``execution``
        among the nodes ``memo`` has expressions for (made once per execution)."""
        if not hasattr(self, "_by_execution"):
            g = self.g
            pos = np.array(sorted(memo), dtype=np.int64)
            pos = pos[np.asarray(g.op[pos]) == Op.INVOCATION] if len(pos) else pos
            self._names = {memo[p].name for p in pos.tolist()}
            self._by_execution: dict[int, dict[str, str]] = {}
            for p, ex in zip(pos.tolist(), g.column("execution", pos).tolist()):
                n = memo[p].name
                if ex is not None and "[" in n:
                    self._by_execution.setdefault(int(ex), {})[n] = n[: n.rindex("[")] + "[e]"
        return self._by_execution.get(execution, {})

    def _state(self, roots: list[int]) -> set[str]:
        """The state tuples the lineage of ``roots`` read: ``Rel(values) in module``."""
        g = self.g
        if not roots:
            return set()
        up = g.ancestors(np.array(roots, dtype=np.int64))
        st = up[(np.asarray(g.op[up]) == Op.STATE) & ~np.asarray(g.is_v[up], dtype=bool)]
        out = set()
        for rel, mod, text in zip(g.column("relation", st).tolist(), g.column("module", st).tolist(), g.column("tuple", st).tolist()):
            data = json.loads(text) if isinstance(text, str) else {}
            out.add(f"{rel}({_data(data)})" + (f" in {mod}" if mod else ""))
        return out


def _key(data: dict[str, Any], columns: Sequence[str] | None) -> str:
    chosen = data if columns is None else {c: data.get(c) for c in columns}
    return json.dumps(chosen, sort_keys=columns is None, default=str)


class _Term(NamedTuple):
    """A term of a tuple's expanded provenance: a monomial's factors, of the tuple itself
    (``column`` None) or of a value (``Balance``, with the member's value for an aggregate's)."""

    column: str | None
    factors: tuple[str, ...]
    value: str | None = None

    def text(self, coefficient: int) -> str:
        term = str(Monomial(coefficient, self.factors)) + ("" if self.value is None else f" ⊗ {self.value}")
        return term if self.column is None else f"{self.column}: {term}"


def _terms(mine: Counter[_Term], other: Counter[_Term]) -> tuple[str, ...]:
    """The terms ``mine`` has more often than ``other`` (the surplus as coefficient), the
    tuple's own first, then by value column."""
    out = []
    for term, n in sorted(mine.items(), key=lambda kv: (kv[0].column is not None, kv[0].column or "", kv[0].factors, kv[0].value or "")):
        extra = n - other.get(term, 0)
        if extra > 0:
            out.append(term.text(extra))
    return tuple(out)


def _sorted_tokens(found: set[str]) -> tuple[str, ...]:
    """Base tuples by relation, then invocations (``M_…``)."""
    return tuple(sorted(found, key=lambda t: (t.startswith("M_") and "[" in t, t.split(":", 1)[0], t)))


def _data(data: dict[str, Any]) -> str:
    return ", ".join("null" if v is None else str(v) for v in data.values())


def _shown(v: Any) -> str:
    if v is UNKNOWN:
        return "?"
    return "null" if v is None else format_literal(v) if isinstance(v, str) else str(v)


def _ids(nodes: tuple[int, ...], ids: bool) -> str:
    return f"[{', '.join(map(str, nodes))}] " if ids and nodes else ""


def _some(items: tuple[str, ...], everything: bool) -> str:
    shown = items if everything else items[:_TOKENS_SHOWN]
    text = ", ".join(printable(x) for x in shown)
    if len(items) > len(shown):
        text += f" … and {len(items) - len(shown)} more (--all)"
    return text


def _cut(text: str) -> str:
    return text if len(text) <= _TERM_TEXT else text[: _TERM_TEXT - 1] + f"… ({len(text)} characters; --all shows it)"
