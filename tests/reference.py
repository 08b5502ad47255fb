"""An independent reference evaluator of K-relations over N[X] with δ and ⊗.

Pure Python + sympy; shares no code with lipspark (do not import lipspark here). It follows the
semantics of Green, Karvounarakis and Tannen (PODS 2007) for the positive operators and of
Amsterdamer, Deutch and Tannen (PODS 2011) / Lipstick (VLDB 2012, §2.3) for δ and aggregation,
under *bag* semantics as PySpark evaluates queries:

* a K-relation is a list of rows ``(tuple-as-dict, annotation)``; a duplicate is a separate row and
  the annotation of a distinct tuple is the *sum* of the annotations of its rows;
* base relations annotate each row with the token ``Symbol(f"{name}:{key}")``;
* select / filter keep every row's annotation; union concatenates;
* join annotates each output row with the product of its two input rows' annotations (on
  equal columns or on any condition);
* a semi join keeps each left row that has at least one partner, annotated ``row · δ(Σ partners)``;
* intersect gives each distinct tuple of both sides ``δ(Σ its left rows) · δ(Σ its right rows)``;
* distinct gives each distinct tuple ``δ(Σ rows)``, ``dropDuplicates(subset)`` each distinct value
  of the subset ``δ(Σ its rows)`` with a black box ``first`` of them for every other column;
  group-by gives each group ``δ(Σ members)``
  (an aggregation without keys its one row 1: SQL returns it over any input, so no deletion
  removes it);
* the m-semiring difference ``a ⊖ b`` (Geerts and Poggi 2010), ``⊖`` a ``sympy.Function``: an
  anti join keeps each left row annotated ``r ⊖ δ(Σ partners)``; an outer join its matched rows
  as a join and, per row of a padded side, ``r ⊖ δ(Σ partners)`` padded with nulls; a set
  difference (``subtract``) each distinct left tuple ``δ(Σ its left rows) ⊖ δ(Σ its right rows)``.
  A row whose ⊖ has a non-zero right side (``r ⊖ 0 = r``) is *absent* in this world: the
  relation lists it apart, in :attr:`KRelation.absent` (the rows a deletion of their partners
  makes appear), and later operations do not see it (they compute over the rows present);
* an aggregate column of a group is the formal sum ``Σ member ⊗ value`` over the members whose
  argument is not null (``value`` is 1 for count), kept as a list of ``(polynomial, value)``
  pairs in :class:`AggVal`; the plain aggregate value is computed too (SQL semantics). The
  argument may be a column or any function of the row (``sum(v * 2)``);
* a DISTINCT aggregate (``count_distinct``, ``sum_distinct``, ``avg_distinct``) is
  ``Σ_v δ(Σ members with value v) ⊗ v`` (``⊗ 1`` for count) over the distinct non-null values;
* aggregates without a semimodule form (``first``, ``last``, ``collect_set``, ``stddev`` and the
  variances) are a black box of the group's members, :class:`BlackBoxVal`; an expression over
  aggregates (:class:`Expression`) is a black box, named by its column, of the group's annotation;
* grouping sets (``rollup``, ``cube``) are the union of a group-by per set, the keys a set leaves
  out null, each group ``δ(Σ members)`` (the empty set's too); a pivot is a group-by whose
  aggregates for a value ``v`` are over the group's rows whose pivot column is ``v``;
* a window function adds a column and keeps every row and its annotation: an aggregate window
  is the semimodule aggregate ``Σ member ⊗ value`` over the row's frame (the rows of its
  partition, or with an order those whose order value is not after the row's: SQL's default
  frame, peers included, nulls first); ``row_number`` is a black box of ``δ(Σ the partition's
  rows)`` (its value depends on every row of the partition and their order).

Polynomials are sympy expressions: tokens are ``sympy.Symbol`` s, δ is ``sympy.Function("δ")``.
"""
from __future__ import annotations

import math
import operator
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable, Iterable, Sequence

import sympy

__all__ = [
    "DELTA",
    "AggVal",
    "BlackBoxVal",
    "Expression",
    "KRow",
    "KRelation",
    "token",
    "base",
    "select",
    "project",
    "filter_rows",
    "join",
    "cross_join",
    "theta_join",
    "semi_join",
    "semi_join_where",
    "MONUS",
    "monus",
    "anti_join",
    "anti_join_where",
    "outer_join",
    "subtract",
    "compare_columns",
    "union",
    "union_by_name",
    "intersect",
    "distinct",
    "drop_duplicates",
    "group_by",
    "grouping_sets",
    "pivot",
    "window",
    "agg_normal_form",
    "poly_normal_form",
    "norm_value",
    "tuple_polynomials",
    "tuple_multiset",
    "COMPARATORS",
]

DELTA = sympy.Function("δ")
MONUS = sympy.Function("⊖")

#: Comparison operators usable in :func:`filter_rows` predicates built by tests.
COMPARATORS: dict[str, Callable[[Any, Any], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    "==": operator.eq,
    "!=": operator.ne,
    ">": operator.gt,
    ">=": operator.ge,
}

#: Aggregate functions: name -> label of the aggregate v-node (Lipstick's operation name).
AGG_LABELS = {"count": "Count", "sum": "Sum", "min": "Min", "max": "Max", "avg": "Avg"}
#: DISTINCT aggregates: name -> the operation over the distinct values.
DISTINCT_AGGREGATES = {"count_distinct": "count", "sum_distinct": "sum", "avg_distinct": "avg"}
#: Aggregates without a semimodule form: name -> the name a black box of the members shows.
BLACK_BOX_AGGREGATES = {
    "first": "first", "first_ignorenulls": "first", "last": "last", "last_ignorenulls": "last", "collect_set": "collect_set",
    "stddev": "stddev", "stddev_samp": "stddev_samp", "stddev_pop": "stddev_pop",
    "variance": "variance", "var_samp": "var_samp", "var_pop": "var_pop",
}


@dataclass(frozen=True)
class AggVal:
    """An aggregate value ``Σ poly ⊗ value`` (op is Count/Sum/Min/Max/Avg) and its plain result."""

    op: str
    pairs: tuple[tuple[sympy.Expr, Any], ...]
    result: Any = None

    def normal_form(self) -> tuple[str, frozenset]:
        return agg_normal_form(self.op, self.pairs)


@dataclass(frozen=True)
class BlackBoxVal:
    """A value without a semimodule form: black box ``name`` of the polynomials ``args`` (a
    group's members, or its annotation) and its plain result."""

    name: str
    args: tuple[sympy.Expr, ...]
    result: Any = None

    def normal_form(self) -> tuple[str, str, tuple[str, ...]]:
        """``("black box", name, the args' expanded forms, sorted)``: the args are a bag."""
        return ("black box", self.name, tuple(sorted(str(poly_normal_form(a)) for a in self.args)))


@dataclass(frozen=True)
class Expression:
    """An expression over a group's aggregates, like ``sum(a) / count(b)``: ``fn`` of the plain
    results of ``aggregates`` (``(fn, column)`` pairs, as :func:`group_by` takes them)."""

    fn: Callable[..., Any]
    aggregates: tuple[tuple[str, Any], ...]


@dataclass
class KRow:
    """One row: data, annotation (a sympy polynomial) and the aggregate values of its columns."""

    data: dict[str, Any]
    ann: sympy.Expr
    aggs: dict[str, "AggVal | BlackBoxVal"] = field(default_factory=dict)

    def values(self, columns: Sequence[str]) -> tuple:
        return tuple(self.data[c] for c in columns)


@dataclass
class KRelation:
    """A K-relation under bag semantics: ordered columns and a list of annotated rows."""

    columns: list[str]
    rows: list[KRow]
    #: rows absent in this world (their annotation is ``r ⊖ b`` with ``b`` non-zero), as the
    #: operation that made them would output them; not seen by later operations
    absent: list[KRow] = field(default_factory=list)

    def __iter__(self):
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def as_pairs(self) -> list[tuple[dict[str, Any], sympy.Expr]]:
        """The relation as a list of ``(tuple-as-dict, annotation)`` pairs."""
        return [(dict(r.data), r.ann) for r in self.rows]


# ---------------------------------------------------------------------- normal forms
def norm_value(v: Any, digits: int = 9) -> Any:
    """A hashable, comparable form of a data value: floats rounded, 1 and 1.0 alike, -0.0 = 0.0."""
    if v is None:
        return None
    if isinstance(v, bool):
        return v
    if isinstance(v, (list, tuple)):  # a set or bag (collect_set's order is Spark's business)
        return ("bag", tuple(sorted((norm_value(x, digits) for x in v), key=repr)))
    if isinstance(v, Fraction):
        v = float(v)
    if isinstance(v, float) or type(v).__name__.startswith("float"):
        f = float(v)
        if math.isnan(f):
            return "NaN"
        r = round(f, digits)
        if r == 0:
            r = 0.0
        if r.is_integer():
            return int(r)
        return r
    if type(v).__name__.startswith("int"):  # numpy ints
        return int(v)
    return v


def poly_normal_form(p: Any) -> sympy.Expr:
    """Expanded form (δ arguments expanded too), with the laws δ(0) = 0 and δ(1) = 1 applied (to a
    fixpoint)."""
    e = sympy.expand(sympy.sympify(p))
    while True:
        nxt = e.subs(DELTA(0), 0).subs(DELTA(1), 1)
        if nxt == e:
            return e
        e = nxt


def agg_normal_form(op: str, pairs: Iterable[tuple[Any, Any]]) -> tuple[str, frozenset]:
    """Canonical ``(op, {(value, poly)})``: group pairs by value, sum, expand, drop zeros."""
    groups: dict[Any, sympy.Expr] = {}
    for poly, value in pairs:
        key = norm_value(value)
        groups[key] = groups.get(key, sympy.Integer(0)) + sympy.sympify(poly)
    out = set()
    for value, poly in groups.items():
        e = sympy.expand(poly)
        if e != 0:
            out.add((value, e))
    return (op, frozenset(out))


def tuple_polynomials(rel: KRelation) -> dict[tuple, sympy.Expr]:
    """Distinct (normalized) tuple -> expanded sum of the annotations of its rows."""
    out: dict[tuple, sympy.Expr] = {}
    for r in rel.rows:
        k = tuple(norm_value(v) for v in r.values(rel.columns))
        out[k] = out.get(k, sympy.Integer(0)) + r.ann
    return {k: sympy.expand(v) for k, v in out.items()}


def tuple_multiset(rel: KRelation) -> dict[tuple, int]:
    """Distinct (normalized) tuple -> number of rows (bag multiplicity)."""
    out: dict[tuple, int] = {}
    for r in rel.rows:
        k = tuple(norm_value(v) for v in r.values(rel.columns))
        out[k] = out.get(k, 0) + 1
    return out


# ---------------------------------------------------------------------- operators
def token(name: str, key_values: Sequence[Any]) -> sympy.Symbol:
    """The token of a base tuple, ``name:k1,k2``."""
    return sympy.Symbol(f"{name}:{','.join(str(v) for v in key_values)}")


def base(name: str, rows: Sequence[dict[str, Any]], key: Sequence[str], columns: Sequence[str] | None = None) -> KRelation:
    """A base relation whose every row is annotated with its own token."""
    cols = list(columns) if columns is not None else (list(rows[0].keys()) if rows else list(key))
    out = [KRow({c: r[c] for c in cols}, token(name, [r[k] for k in key])) for r in rows]
    return KRelation(cols, out)


def select(rel: KRelation, columns: Sequence[str] | dict[str, Callable[[dict], Any] | str]) -> KRelation:
    """Projection without duplicate elimination (bag): every row keeps its annotation.

    ``columns`` is a list of column names, or a dict ``new name -> old name | fn(row)``. An
    aggregate value travels with a column that is selected (renamed) unchanged.
    """
    spec = {c: c for c in columns} if not isinstance(columns, dict) else dict(columns)
    rows = []
    for r in rel.rows:
        data, aggs = {}, {}
        for new, src in spec.items():
            if isinstance(src, str):
                data[new] = r.data[src]
                if src in r.aggs:
                    aggs[new] = r.aggs[src]
            else:
                data[new] = src(r.data)
        rows.append(KRow(data, r.ann, aggs))
    return KRelation(list(spec), rows)


project = select


def filter_rows(rel: KRelation, predicate: Callable[[dict[str, Any]], bool]) -> KRelation:
    """Selection: the rows satisfying ``predicate`` keep their annotations."""
    return KRelation(list(rel.columns), [KRow(dict(r.data), r.ann, dict(r.aggs)) for r in rel.rows if predicate(r.data)])


def compare(column: str, op: str, const: Any) -> Callable[[dict[str, Any]], bool]:
    """SQL comparison ``column op const``: null compares to nothing (the row is dropped)."""
    fn = COMPARATORS[op]
    return lambda d: d[column] is not None and bool(fn(d[column], const))


def join(left: KRelation, right: KRelation, on: Sequence[str]) -> KRelation:
    """Inner equi-join on the listed columns, like ``df.join(other, on=[...])``.

    Output columns: the ``on`` columns once, then left's others, then right's others. Null keys
    never match. Annotation: left · right. Aggregate values of non-key columns are kept.
    """
    on = list(on)
    lo = [c for c in left.columns if c not in on]
    ro = [c for c in right.columns if c not in on]
    clash = set(lo) & set(ro)
    if clash:
        raise ValueError(f"join: columns {sorted(clash)} on both sides but not in on={on}")
    cols = on + lo + ro
    rows = []
    for lr in left.rows:
        lk = [lr.data[c] for c in on]
        if any(v is None for v in lk):
            continue
        for rr in right.rows:
            if [rr.data[c] for c in on] != lk:
                continue
            data = {c: lr.data[c] for c in on}
            data.update({c: lr.data[c] for c in lo})
            data.update({c: rr.data[c] for c in ro})
            aggs = {c: a for c, a in lr.aggs.items() if c in lo}
            aggs.update({c: a for c, a in rr.aggs.items() if c in ro})
            rows.append(KRow(data, lr.ann * rr.ann, aggs))
    return KRelation(cols, rows)


def cross_join(left: KRelation, right: KRelation) -> KRelation:
    """Cartesian product; annotations multiply. Column names must be disjoint."""
    clash = set(left.columns) & set(right.columns)
    if clash:
        raise ValueError(f"cross_join: columns {sorted(clash)} on both sides")
    rows = [
        KRow({**lr.data, **rr.data}, lr.ann * rr.ann, {**lr.aggs, **rr.aggs})
        for lr in left.rows
        for rr in right.rows
    ]
    return KRelation(left.columns + right.columns, rows)


def compare_columns(left_column: str, op: str, right_column: str) -> Callable[[dict[str, Any], dict[str, Any]], bool]:
    """SQL comparison of a left row's column with a right row's: null compares to nothing."""
    fn = COMPARATORS[op]

    def predicate(ld: dict[str, Any], rd: dict[str, Any]) -> bool:
        a, b = ld[left_column], rd[right_column]
        return a is not None and b is not None and bool(fn(a, b))

    return predicate


def theta_join(left: KRelation, right: KRelation, predicate: Callable[[dict[str, Any], dict[str, Any]], bool]) -> KRelation:
    """Inner join on a condition ``predicate(left data, right data)``: left's columns, then the
    right's (names must be disjoint); annotations multiply."""
    clash = set(left.columns) & set(right.columns)
    if clash:
        raise ValueError(f"theta_join: columns {sorted(clash)} on both sides")
    rows = [
        KRow({**lr.data, **rr.data}, lr.ann * rr.ann, {**lr.aggs, **rr.aggs})
        for lr in left.rows
        for rr in right.rows
        if predicate(lr.data, rr.data)
    ]
    return KRelation(left.columns + right.columns, rows)


def _semi(left: KRelation, right: KRelation, columns: list[str],
          partner: Callable[[dict[str, Any], dict[str, Any]], bool]) -> KRelation:
    rows = []
    for lr in left.rows:
        partners = [rr.ann for rr in right.rows if partner(lr.data, rr.data)]
        if partners:
            rows.append(KRow({c: lr.data[c] for c in columns}, lr.ann * DELTA(sympy.Add(*partners)), dict(lr.aggs)))
    return KRelation(columns, rows)


def semi_join(left: KRelation, right: KRelation, on: Sequence[str]) -> KRelation:
    """Left semi join on the listed columns, like ``df.join(other, on=[...], how="left_semi")``.

    Each left row with at least one partner (equal keys, none null) is kept, as many times as the
    left has it, annotated ``row · δ(Σ partners)``: the row and *some* partner. Output columns:
    the ``on`` columns, then left's others (the order Spark gives a join on names). Aggregate
    values of the left are kept.
    """
    on = list(on)

    def partner(ld: dict[str, Any], rd: dict[str, Any]) -> bool:
        return all(ld[c] is not None for c in on) and [ld[c] for c in on] == [rd[c] for c in on]

    return _semi(left, right, on + [c for c in left.columns if c not in on], partner)


def semi_join_where(left: KRelation, right: KRelation, predicate: Callable[[dict[str, Any], dict[str, Any]], bool]) -> KRelation:
    """Left semi join on a condition ``predicate(left data, right data)``: the left's columns,
    each left row with a partner annotated ``row · δ(Σ partners)``."""
    return _semi(left, right, list(left.columns), predicate)


def monus(a: Any, b: Any) -> sympy.Expr:
    """``a ⊖ b`` with ``a ⊖ 0 = a`` and ``0 ⊖ b = 0``."""
    a, b = sympy.sympify(a), sympy.sympify(b)
    return a if b == 0 or a == 0 else MONUS(a, b)


def _differences(rows: list[tuple[dict[str, Any], Any, list[Any], dict]], columns: list[str]) -> KRelation:
    """Rows ``(data, annotation, partners' annotations, aggregate values)`` as ``ann ⊖ δ(Σ partners)``:
    present without partners, absent with."""
    present, absent = [], []
    for data, ann, partners, aggs in rows:
        if partners:
            absent.append(KRow(data, monus(ann, DELTA(sympy.Add(*partners))), {}))
        else:
            present.append(KRow(data, ann, aggs))
    return KRelation(columns, present, absent)


def anti_join(left: KRelation, right: KRelation, on: Sequence[str]) -> KRelation:
    """Left anti join on the listed columns (``how="left_anti"``): each left row, as often as the
    left has it, ``row ⊖ δ(Σ partners)`` — present (``row``) without partners (null keys have
    none), absent with. Output columns: the ``on`` columns, then the left's others (as Spark
    orders a join on names)."""
    on = list(on)

    def partner(ld: dict[str, Any], rd: dict[str, Any]) -> bool:
        return all(ld[c] is not None for c in on) and [ld[c] for c in on] == [rd[c] for c in on]

    out = anti_join_where(left, right, partner)
    out.columns = on + [c for c in left.columns if c not in on]
    return out


def anti_join_where(left: KRelation, right: KRelation, predicate: Callable[[dict[str, Any], dict[str, Any]], bool]) -> KRelation:
    """Left anti join on a condition ``predicate(left data, right data)``."""
    rows = [(dict(lr.data), lr.ann, [rr.ann for rr in right.rows if predicate(lr.data, rr.data)], dict(lr.aggs)) for lr in left.rows]
    return _differences(rows, list(left.columns))


def outer_join(left: KRelation, right: KRelation, on: Sequence[str], how: str) -> KRelation:
    """Outer equi-join on the listed columns, ``how`` ``"left"``, ``"right"`` or ``"full"``: the
    matched rows as :func:`join`; each row of a padded side (the left for left and full, the
    right for right and full) ``row ⊖ δ(Σ partners)``, its other side's columns null (in a full
    join the keys are the row's own, as Spark coalesces them)."""
    on = list(on)
    matched = join(left, right, on)
    cols = matched.columns
    lo = [c for c in left.columns if c not in on]
    ro = [c for c in right.columns if c not in on]

    def partner(ld: dict[str, Any], rd: dict[str, Any]) -> bool:
        return all(ld[c] is not None for c in on) and [ld[c] for c in on] == [rd[c] for c in on]

    padded: list[tuple[dict[str, Any], Any, list[Any], dict]] = []
    if how in ("left", "full"):
        for lr in left.rows:
            data = {c: lr.data[c] for c in on} | {c: lr.data[c] for c in lo} | dict.fromkeys(ro)
            padded.append((data, lr.ann, [rr.ann for rr in right.rows if partner(lr.data, rr.data)],
                           {c: a for c, a in lr.aggs.items() if c in lo}))
    if how in ("right", "full"):
        for rr in right.rows:
            data = {c: rr.data[c] for c in on} | dict.fromkeys(lo) | {c: rr.data[c] for c in ro}
            padded.append((data, rr.ann, [lr.ann for lr in left.rows if partner(lr.data, rr.data)],
                           {c: a for c, a in rr.aggs.items() if c in ro}))
    diff = _differences(padded, cols)
    return KRelation(cols, matched.rows + diff.rows, diff.absent)


def subtract(left: KRelation, right: KRelation) -> KRelation:
    """Distinct EXCEPT by position (left's column names): each distinct left tuple
    ``δ(Σ its left rows) ⊖ δ(Σ its right rows)`` (nulls equal to nulls); aggregate values dropped."""
    if len(left.columns) != len(right.columns):
        raise ValueError("subtract: different numbers of columns")
    rgroups: dict[tuple, list[KRow]] = {}
    for r in right.rows:
        rgroups.setdefault(_group_key(r.values(right.columns)), []).append(r)
    rows = [(dict(d.data), d.ann, [r.ann for r in rgroups.get(_group_key(d.values(left.columns)), [])], {})
            for d in distinct(left).rows]
    return _differences(rows, list(left.columns))


def union(left: KRelation, right: KRelation) -> KRelation:
    """Bag union by position (column names of the left): rows keep their annotations."""
    if len(left.columns) != len(right.columns):
        raise ValueError("union: different numbers of columns")
    mapping = dict(zip(right.columns, left.columns))
    rows = [KRow(dict(r.data), r.ann, dict(r.aggs)) for r in left.rows]
    for r in right.rows:
        rows.append(KRow({mapping[c]: v for c, v in r.data.items()}, r.ann, {mapping[c]: a for c, a in r.aggs.items()}))
    return KRelation(list(left.columns), rows)


def union_by_name(left: KRelation, right: KRelation, *, allow_missing: bool = False) -> KRelation:
    """Bag union by column name, like ``unionByName``: left's columns, then (``allow_missing``)
    the right's that the left lacks; a column a side lacks is null on its rows (with no aggregate
    value). Rows keep their annotations."""
    extra = [c for c in right.columns if c not in left.columns]
    missing = [c for c in left.columns if c not in right.columns]
    if (extra or missing) and not allow_missing:
        raise ValueError(f"union_by_name: columns differ ({missing} only on the left, {extra} only on the right)")
    cols = list(left.columns) + extra
    rows = [KRow({c: r.data.get(c) for c in cols}, r.ann, dict(r.aggs)) for r in left.rows + right.rows]
    return KRelation(cols, rows)


def intersect(left: KRelation, right: KRelation) -> KRelation:
    """Distinct INTERSECT by position (left's column names): each distinct tuple present on both
    sides (nulls equal to nulls, as Spark compares them), annotated ``δ(Σ its left rows) · δ(Σ its
    right rows)``; aggregate values dropped (as by distinct)."""
    if len(left.columns) != len(right.columns):
        raise ValueError("intersect: different numbers of columns")
    lgroups: dict[tuple, list[KRow]] = {}
    for r in left.rows:
        lgroups.setdefault(_group_key(r.values(left.columns)), []).append(r)
    rgroups: dict[tuple, list[KRow]] = {}
    for r in right.rows:
        rgroups.setdefault(_group_key(r.values(right.columns)), []).append(r)
    rows = [
        KRow(dict(rs[0].data), DELTA(sympy.Add(*[r.ann for r in rs])) * DELTA(sympy.Add(*[r.ann for r in rgroups[k]])), {})
        for k, rs in lgroups.items()
        if k in rgroups
    ]
    return KRelation(list(left.columns), rows)


def _group_key(values: Iterable[Any]) -> tuple:
    # SQL groups nulls together and 0.0 with -0.0; keep ints and floats apart only by value
    return tuple(("null",) if v is None else (0.0 if isinstance(v, float) and v == 0 else v) for v in values)


def distinct(rel: KRelation) -> KRelation:
    """Duplicate elimination: each distinct tuple annotated δ(Σ its rows); aggregate values dropped."""
    groups: dict[tuple, list[KRow]] = {}
    for r in rel.rows:
        groups.setdefault(_group_key(r.values(rel.columns)), []).append(r)
    rows = [KRow(dict(rs[0].data), DELTA(sympy.Add(*[r.ann for r in rs])), {}) for rs in groups.values()]
    return KRelation(list(rel.columns), rows)


def drop_duplicates(rel: KRelation, subset: Sequence[str]) -> KRelation:
    """``dropDuplicates(subset)``: one row per distinct value of ``subset`` (nulls equal), annotated
    δ(Σ its rows); every other column is the value of one of its rows — here the first in row
    order (Spark keeps an arbitrary one: tests compare where every row of a key agrees) — a
    :class:`BlackBoxVal` ``first`` of the rows' annotations. An empty subset is one group, absent
    over no rows."""
    groups: dict[tuple, list[KRow]] = {}
    for r in rel.rows:
        groups.setdefault(_group_key(r.values(subset)), []).append(r)
    others = [c for c in rel.columns if c not in subset]
    rows = []
    for members in groups.values():
        anns = tuple(m.ann for m in members)
        aggs: dict[str, AggVal | BlackBoxVal] = {c: BlackBoxVal("first", anns, members[0].data[c]) for c in others}
        rows.append(KRow(dict(members[0].data), DELTA(sympy.Add(*anns)), aggs))
    return KRelation(list(rel.columns), rows)


def _plain_aggregate(fn: str, values: list[Any], n_members: int, star: bool) -> Any:
    if fn == "count":
        return n_members if star else len(values)
    if not values:
        return None
    if fn == "sum":
        if any(isinstance(v, float) for v in values):
            return math.fsum(values)
        return sum(values)
    if fn == "min":
        return min(values)
    if fn == "max":
        return max(values)
    if fn == "avg":
        return float(sum(Fraction(v) for v in values) / len(values))
    raise ValueError(f"unknown aggregate {fn!r}")


def _variance(values: list[Any], ddof: int) -> Fraction | None:
    """Σ(x - mean)² / (n - ddof), exactly; None when n - ddof < 1 (Spark 3.1+ returns null)."""
    n = len(values)
    if n - ddof < 1:
        return None
    xs = [Fraction(v) for v in values]
    mean = sum(xs) / n
    return sum((x - mean) ** 2 for x in xs) / (n - ddof)


def _sqrt(x: Fraction | None) -> float | None:
    return None if x is None else math.sqrt(x)


def _black_box_result(fn: str, values: list[Any]) -> Any:
    """The plain result of a black-box aggregate over the members' values (nulls included, in
    row order: ``first``/``last`` depend on it, as in Spark, where it is the order rows arrive)."""
    present = [v for v in values if v is not None]
    if fn in ("first", "last"):
        return (values[0] if fn == "first" else values[-1]) if values else None
    if fn in ("first_ignorenulls", "last_ignorenulls"):
        return (present[0] if fn.startswith("first") else present[-1]) if present else None
    if fn == "collect_set":
        out: list[Any] = []
        for v in present:
            if v not in out:
                out.append(v)
        return out
    if fn in ("stddev", "stddev_samp"):
        return _sqrt(_variance(present, 1))
    if fn == "stddev_pop":
        return _sqrt(_variance(present, 0))
    var = _variance(present, 1 if fn in ("variance", "var_samp") else 0)
    return None if var is None else float(var)


def _argument(row: KRow, column: Any) -> Any:
    """An aggregate's argument for one member: a column's value, a function of the row, or for a
    tuple of columns their values (None when any is null, as ``count(DISTINCT a, b)`` skips it)."""
    if callable(column):
        return column(row.data)
    if isinstance(column, tuple):
        vals = tuple(row.data[c] for c in column)
        return None if any(v is None for v in vals) else vals
    return row.data[column]


def _aggregate(fn: str, column: Any, members: list[KRow]) -> AggVal | BlackBoxVal:
    """One aggregate of one group (see :func:`group_by`)."""
    if fn in BLACK_BOX_AGGREGATES:
        values = [_argument(m, column) for m in members]
        return BlackBoxVal(BLACK_BOX_AGGREGATES[fn], tuple(m.ann for m in members), _black_box_result(fn, values))
    if fn in DISTINCT_AGGREGATES:
        base = DISTINCT_AGGREGATES[fn]
        runs: dict[Any, list[sympy.Expr]] = {}
        for m in members:
            v = _argument(m, column)
            if v is not None:
                runs.setdefault(v, []).append(m.ann)
        pairs = tuple((DELTA(sympy.Add(*anns)), 1 if base == "count" else v) for v, anns in runs.items())
        return AggVal(AGG_LABELS[base], pairs, _plain_aggregate(base, list(runs), len(runs), False))
    star = column is None
    present = [(m, _argument(m, column)) for m in members] if not star else [(m, 1) for m in members]
    present = [(m, v) for m, v in present if v is not None]
    pairs = tuple((m.ann, 1 if fn == "count" else v) for m, v in present)
    result = _plain_aggregate(fn, [v for _, v in present], len(members), star)
    return AggVal(AGG_LABELS[fn], pairs, result)


def group_by(
    rel: KRelation,
    keys: Sequence[str],
    aggregates: Sequence[tuple[str, str, Any]],
    *,
    global_on_empty: bool = True,
) -> KRelation:
    """Group-by with aggregates.

    ``aggregates`` are ``(alias, fn, argument)``: fn is count/sum/min/max/avg, a DISTINCT one
    (:data:`DISTINCT_AGGREGATES`), a black-box one (:data:`BLACK_BOX_AGGREGATES`) or ``"expr"``;
    the argument is a column, ``None`` for ``count(*)``, a function of the row (``lambda d:
    d["v"] * 2``), a tuple of columns (``count_distinct`` of several), or for ``"expr"`` an
    :class:`Expression`. Each group row is annotated ``δ(Σ members)``; each aggregate column gets
    an :class:`AggVal` with pairs ``(member annotation, value)`` over members whose argument is
    not null (value 1 for count) and the plain SQL result, or a :class:`BlackBoxVal`. With no keys
    and an empty input, SQL (and PySpark) return one row (count 0, other aggregates null) when
    ``global_on_empty``; no tuple derives it and none can delete it, so it is annotated 1 (not
    ``δ(0)`` = 0) — and so is it over rows: deleting every member leaves it (count 0, sum null).
    """
    keys = list(keys)
    groups: dict[tuple, list[KRow]] = {}
    for r in rel.rows:
        groups.setdefault(_group_key(r.values(keys)), []).append(r)
    if not keys and not rel.rows and global_on_empty:
        groups[()] = []
    rows = []
    for members in groups.values():
        data = {k: members[0].data[k] for k in keys} if members else {}
        ann = DELTA(sympy.Add(*[m.ann for m in members])) if members and keys else sympy.Integer(1)
        aggs: dict[str, AggVal | BlackBoxVal] = {}
        for alias, fn, column in aggregates:
            if fn == "expr":
                results = [_aggregate(f, c, members).result for f, c in column.aggregates]
                value: AggVal | BlackBoxVal = BlackBoxVal(alias, (ann,), column.fn(*results))
            else:
                value = _aggregate(fn, column, members)
            data[alias] = value.result
            aggs[alias] = value
        rows.append(KRow(data, ann, aggs))
    return KRelation(keys + [a for a, _, _ in aggregates], rows)


def grouping_sets(rel: KRelation, keys: Sequence[str], sets: Sequence[Sequence[str]],
                  aggregates: Sequence[tuple[str, str, Any]]) -> KRelation:
    """``GROUPING SETS`` (``rollup``, ``cube``): the union over ``sets`` of a group-by each, the
    keys a set leaves out null. Every set's group is ``δ(Σ members)`` — the empty set's too: it
    groups every row (no row over no rows, unlike a keyless aggregation)."""
    rows: list[KRow] = []
    for s in sets:
        if s:
            part = group_by(rel, list(s), aggregates)
            rows += [KRow({**{k: r.data.get(k) if k in s else None for k in keys},
                           **{a: r.data[a] for a, _, _ in aggregates}}, r.ann, dict(r.aggs)) for r in part.rows]
        elif rel.rows:
            members = list(rel.rows)
            aggs = {alias: _aggregate(fn, column, members) for alias, fn, column in aggregates}
            data = {**{k: None for k in keys}, **{a: v.result for a, v in aggs.items()}}
            rows.append(KRow(data, DELTA(sympy.Add(*[m.ann for m in members])), aggs))
    return KRelation(list(keys) + [a for a, _, _ in aggregates], rows)


def pivot(rel: KRelation, keys: Sequence[str], column: str, values: Sequence[Any],
          aggregates: Sequence[tuple[str, str, Any]], *, null_without_rows: bool = False) -> KRelation:
    """``groupBy(keys).pivot(column, values).agg(...)``: per group, per value ``v`` and aggregate
    ``(name, fn, argument)``, the aggregate over the group's rows whose ``column`` is ``v``
    (null-safe: a null ``v`` matches the null rows), in a column ``f"{v}_{name}"`` (``f"{v}"``
    for one aggregate; a null ``v`` printed ``null`` as Spark prints it). With ``null_without_rows``
    (Spark's two-step plan, when every aggregate is numeric) a group without rows for ``v`` has
    null there, and a count is the sum over the value's rows of 1 if the argument is present,
    else 0 (a Sum: null without rows)."""
    def matches(d: dict, v: Any) -> bool:
        x = d[column]
        return (x is None and v is None) or (x is not None and v is not None and x == v)

    if any(fn in BLACK_BOX_AGGREGATES for _, fn, _ in aggregates):
        raise ValueError("the reference pivots count/sum/min/max/avg and their DISTINCT forms")
    groups: dict[tuple, list[KRow]] = {}
    for r in rel.rows:
        groups.setdefault(_group_key(r.values(keys)), []).append(r)
    if not keys and not rel.rows:
        groups[()] = []
    def printed(v: Any) -> str:
        return "null" if v is None else f"{v}"

    names = [printed(v) if len(aggregates) == 1 else f"{printed(v)}_{name}" for v in values for name, _, _ in aggregates]
    rows = []
    for members in groups.values():
        data = {k: members[0].data[k] for k in keys} if members else {}
        ann = DELTA(sympy.Add(*[m.ann for m in members])) if members and keys else sympy.Integer(1)
        aggs: dict[str, AggVal | BlackBoxVal] = {}
        for v in values:
            for name, fn, argument in aggregates:
                alias = printed(v) if len(aggregates) == 1 else f"{printed(v)}_{name}"
                rows_for_v = [m for m in members if matches(m.data, v)]
                if null_without_rows and fn == "count":
                    pairs = tuple((m.ann, 0 if argument is not None and _argument(m, argument) is None else 1) for m in rows_for_v)
                    value: AggVal | BlackBoxVal = AggVal("Sum", pairs, sum(p[1] for p in pairs) if pairs else None)
                else:
                    masked = [KRow({**m.data, "__v": _argument(m, argument) if argument is not None else 1}, m.ann)
                              for m in rows_for_v]
                    value = _aggregate(fn, "__v", masked)
                    if null_without_rows and not rows_for_v:
                        value = AggVal(value.op, value.pairs, None) if isinstance(value, AggVal) else value
                data[alias] = value.result
                aggs[alias] = value
        rows.append(KRow(data, ann, aggs))
    return KRelation(list(keys) + names, rows)


def _order_key(v: Any) -> tuple:
    """SQL's ascending order, nulls first."""
    return (v is not None, v if v is not None else 0)


def window(rel: KRelation, alias: str, fn: str, column: Any, partition: Sequence[str], order: str | None = None) -> KRelation:
    """A window function as a new column ``alias``: every row keeps its annotation.

    ``fn`` is count/sum/min/max/avg (``column`` as for :func:`group_by`, ``None`` for
    ``count(*)``) over the row's frame — its partition (the rows with equal ``partition``
    values, nulls equal), or with ``order`` the partition's rows whose ``order`` value is at
    most the row's (ascending, nulls first: SQL's default frame ``RANGE BETWEEN UNBOUNDED
    PRECEDING AND CURRENT ROW``, peers included) — an :class:`AggVal`; or ``row_number``, the
    row's position in its partition ordered by every column (rows equal on every column are
    interchangeable), a :class:`BlackBoxVal` of ``δ(Σ the partition's rows)``."""
    parts: dict[tuple, list[int]] = {}
    for i, r in enumerate(rel.rows):
        parts.setdefault(_group_key(r.values(partition)), []).append(i)
    values: dict[int, AggVal | BlackBoxVal] = {}
    for idx in parts.values():
        members = [rel.rows[i] for i in idx]
        if fn == "row_number":
            ann = DELTA(sympy.Add(*[m.ann for m in members]))
            ranked = sorted(idx, key=lambda i: tuple(_order_key(v) for v in rel.rows[i].values(rel.columns)))
            for n, i in enumerate(ranked):
                values[i] = BlackBoxVal("row_number", (ann,), n + 1)
            continue
        for i in idx:
            frame = members
            if order is not None:
                here = _order_key(rel.rows[i].data[order])
                frame = [m for m in members if _order_key(m.data[order]) <= here]
            values[i] = _aggregate(fn, column, frame)
    rows = [KRow({**r.data, alias: values[i].result}, r.ann, {**r.aggs, alias: values[i]}) for i, r in enumerate(rel.rows)]
    return KRelation(list(rel.columns) + [alias], rows)
