"""Property tests: random small plans run on plain PySpark, on lipspark and in the reference.

For two random relations R(rid, a, b, v) and S(sid, a, b, v) (≤ 6 rows, tiny domains so joins,
groups and duplicates happen; v sometimes null) and a random plan of depth ≤ 3 over
filter / select / join (on names, on a condition, semi, anti, left/right/full outer) / union (by
position, by name with missing columns) / intersect / subtract / distinct / groupBy-agg / a window
(count/sum/min/max/avg over a partition or its default ordered frame, row_number) / rollup or cube /
a pivot (count/sum/min/max/avg: Spark's two-step plan), we check:

1. fidelity: the data lipspark returns equals plain PySpark's (as multisets), and so does the
   reference's (which validates the reference itself);
2. per distinct output tuple, the sum of its rows' polynomials equals the reference's (sympy
   normal form);
3. aggregate values (Σ member ⊗ value, δ(Σ members with a value) ⊗ value for DISTINCT, black
   boxes of the members or of the group for ``stddev``/``var_pop`` and expressions over
   aggregates) equal the reference's, per output row; aggregates take columns or expressions
   over a column (``sum(v * 2)``, ``count(when(v > 1, 1))``);
2b. the rows an anti join, outer join or subtract keeps out because they have partners (absent
   now, ``r ⊖ δ(Σ partners)``) are the graph's ⊖ nodes: the same data, copies and polynomials
   as the reference's;
4. for plans without δ (no distinct, group-by, semi join, intersect or subtract), the polynomial
   evaluated in COUNTING with every token 1 is the tuple's multiplicity;
5. deletion propagation in BOOLEAN: with some base tuples deleted, the tuples whose polynomial
   stays true are exactly those of a re-run without the deleted rows (plans without group-by:
   a semi join's row survives with itself and one partner, an intersected tuple with one row
   on each side),
   and for a top-level group-by (nothing aggregated below) the surviving groups and the Boolean
   evaluation of each aggregate value equal the re-run's, and so do the graph's what-if values
   (:func:`lipspark.query.deletion.delete`), but for the aggregates without a ⊗ form, whose
   what-if is unknown as soon as a member of the group is deleted (never a stale value). With a
   ⊖ in the plan, the deletion's surviving rows plus the rows it reports as appearing equal the
   re-run when the ⊖ is the plan's last operation; below another operation a row that appears
   makes the what-if say it is not exact (what that operation does with the row is not in the
   graph), and when no row appears the surviving rows equal the re-run. For a window at the
   top of a plan (nothing aggregated or windowed below) the surviving rows with their what-if
   window values are the re-run's; a ``row_number`` is unknown when a row of its partition went.
   For a rollup, cube or pivot at the top (nothing aggregated below) the surviving rows with
   their what-if values are the re-run's, as multisets.
"""
from __future__ import annotations

import json
import math
import os
from collections import Counter
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from itertools import combinations
from typing import Any, Union

import numpy as np
import pytest
import sympy
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from pyspark.sql import Window
from pyspark.sql import functions as F

from lipspark import Tracker
from lipspark.query.deletion import UNKNOWN, delete
from lipspark.semiring import BOOLEAN, COUNTING, AggValue, evaluate, normal_form, plus, tokens
from lipspark.vocabulary import Op
from tests import reference as ref
from tests.util import local_frame, reference_form, value_form

SETTINGS = settings(
    # LIPSPARK_PROPERTY_EXAMPLES=300 for a longer hunt; 12 keeps `make test` quick, and the slow
    # suite (CI) hunts with SLOW_EXAMPLES more (test_random_plans_match_pyspark_and_reference_longer)
    max_examples=int(os.environ.get("LIPSPARK_PROPERTY_EXAMPLES", "12")),
    deadline=None,
    # shrinking re-runs Spark jobs for minutes; the generated cases are already small
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large],
)

BASE_COLUMNS = {"R": ["rid", "a", "b", "v"], "S": ["sid", "a", "b", "v"]}
KEYS = {"R": "rid", "S": "sid"}
SCHEMAS = {n: ", ".join(f"{c} int" for c in cols) for n, cols in BASE_COLUMNS.items()}
SPARK_CMP = ref.COMPARATORS  # operator functions work on Spark Columns as on Python values


# ---------------------------------------------------------------------- plan AST
@dataclass(frozen=True)
class Base:
    name: str


@dataclass(frozen=True)
class Filter:
    child: "Plan"
    column: str
    op: str
    const: int


@dataclass(frozen=True)
class Select:
    child: "Plan"
    columns: tuple[str, ...]


@dataclass(frozen=True)
class Join:
    left: "Plan"
    right: "Plan"
    on: tuple[str, ...]  # empty: crossJoin
    right_keep: tuple[str, ...]  # right's columns kept (shared columns not in `on` are dropped)


@dataclass(frozen=True)
class Union_:
    left: "Plan"
    right: "Plan"


@dataclass(frozen=True)
class Distinct:
    child: "Plan"


@dataclass(frozen=True)
class Arg:
    """An aggregate's argument that is an expression over one column (:data:`ARGUMENTS`), or
    for ``fn == "expr"`` an expression over aggregates of a column (:data:`EXPRESSIONS`)."""

    template: str
    column: str


@dataclass(frozen=True)
class Agg:
    child: "Plan"
    keys: tuple[str, ...]
    # (alias, fn, argument): a column, None for count(*), an Arg, or columns for count_distinct
    aggs: tuple[tuple[str, str, Any], ...]


@dataclass(frozen=True)
class SemiJoin:
    left: "Plan"
    right: "Plan"
    on: tuple[str, ...]
    how: str  # "semi", "leftsemi" or "left_semi"


@dataclass(frozen=True)
class Rename:
    child: "Plan"
    suffix: str  # every column c becomes c + suffix


@dataclass(frozen=True)
class CondJoin:
    left: "Plan"
    right: "Plan"  # its columns differ from the left's (a Rename)
    left_column: str
    op: str
    right_column: str
    semi: bool  # a left semi join on the condition, else an inner join


@dataclass(frozen=True)
class Intersect:
    left: "Plan"
    right: "Plan"  # as many columns as the left


@dataclass(frozen=True)
class UnionByName:
    left: "Plan"
    right: "Plan"  # allowMissingColumns=True


@dataclass(frozen=True)
class AntiJoin:
    left: "Plan"
    right: "Plan"
    on: tuple[str, ...]
    how: str  # "anti", "leftanti" or "left_anti"


@dataclass(frozen=True)
class AntiCond:
    left: "Plan"
    right: "Plan"  # its columns differ from the left's (a Rename)
    left_column: str
    op: str
    right_column: str


@dataclass(frozen=True)
class OuterJoin:
    left: "Plan"
    right: "Plan"
    on: tuple[str, ...]
    right_keep: tuple[str, ...]  # as for Join
    how: str  # "left", "right" or "full"


@dataclass(frozen=True)
class Subtract:
    left: "Plan"
    right: "Plan"  # as many columns as the left


@dataclass(frozen=True)
class Win:
    """``withColumn(alias, fn(column).over(Window.partitionBy(*partition)[.orderBy(order)]))``;
    ``row_number`` is ordered by every column of the child."""

    child: "Plan"
    alias: str
    fn: str  # count, sum, min, max, avg or row_number
    column: str | None  # None: count(*)
    partition: tuple[str, ...]
    order: str | None  # an order column: the default frame (RANGE up to the row's peers)


@dataclass(frozen=True)
class Rollup:
    """``rollup(*keys).agg(...)``, or ``cube`` when ``cube``: count/sum/min/max/avg of columns."""

    child: "Plan"
    keys: tuple[str, ...]
    aggs: tuple[tuple[str, str, Any], ...]
    cube: bool


@dataclass(frozen=True)
class Pivot:
    """``groupBy(*keys).pivot(column, values).agg(...)``: count/sum/min/max/avg of columns, all
    numeric, so Spark's two-step plan (a group without rows for a value shows null)."""

    child: "Plan"
    keys: tuple[str, ...]
    column: str
    values: tuple[Any, ...]
    aggs: tuple[tuple[str, str, Any], ...]

    def names(self) -> list[str]:
        printed = ["null" if v is None else str(v) for v in self.values]
        return [p if len(self.aggs) == 1 else f"{p}_{a}" for p in printed for a, _, _ in self.aggs]


Plan = Union[Base, Filter, Select, Join, Union_, Distinct, Agg, SemiJoin, Rename, CondJoin, Intersect, UnionByName,
             AntiJoin, AntiCond, OuterJoin, Subtract, Win, Rollup, Pivot]
#: The operations that aggregate (their rows' values are v-nodes a deletion recomputes)
AGGREGATIONS = (Agg, Rollup, Pivot)
#: The operations whose rows may be ⊖ nodes
MONUS_OPS = (AntiJoin, AntiCond, OuterJoin, Subtract)


def columns(p: Plan) -> list[str]:
    if isinstance(p, Base):
        return list(BASE_COLUMNS[p.name])
    if isinstance(p, (Filter, Distinct)):
        return columns(p.child)
    if isinstance(p, (Intersect, Subtract, AntiCond)):
        return columns(p.left)
    if isinstance(p, AntiJoin):  # as Spark gives a join on names: the keys first
        return list(p.on) + [c for c in columns(p.left) if c not in p.on]
    if isinstance(p, OuterJoin):
        lc = columns(p.left)
        return list(p.on) + [c for c in lc if c not in p.on] + [c for c in p.right_keep if c not in p.on]
    if isinstance(p, SemiJoin):
        return list(p.on) + [c for c in columns(p.left) if c not in p.on]
    if isinstance(p, Rename):
        return [c + p.suffix for c in columns(p.child)]
    if isinstance(p, CondJoin):
        return columns(p.left) + ([] if p.semi else columns(p.right))
    if isinstance(p, UnionByName):
        lc = columns(p.left)
        return lc + [c for c in columns(p.right) if c not in lc]
    if isinstance(p, Select):
        return list(p.columns)
    if isinstance(p, Join):
        lc = columns(p.left)
        if not p.on:
            return lc + list(p.right_keep)
        return list(p.on) + [c for c in lc if c not in p.on] + [c for c in p.right_keep if c not in p.on]
    if isinstance(p, Union_):
        return columns(p.left)
    if isinstance(p, (Agg, Rollup)):
        return list(p.keys) + [a for a, _, _ in p.aggs]
    if isinstance(p, Pivot):
        return list(p.keys) + p.names()
    if isinstance(p, Win):
        return columns(p.child) + [p.alias]
    raise TypeError(p)


def nodes(p: Plan):
    yield p
    for attr in ("child", "left", "right"):
        if hasattr(p, attr):
            yield from nodes(getattr(p, attr))


def has(p: Plan, kinds: tuple[type, ...]) -> bool:
    return any(isinstance(n, kinds) for n in nodes(p))


def n_products(p: Plan) -> int:
    return sum(isinstance(n, (Join, OuterJoin)) or (isinstance(n, CondJoin) and not n.semi) for n in nodes(p))


def has_delta(p: Plan) -> bool:
    return has(p, (Distinct, Agg, SemiJoin, Intersect, Subtract, Rollup, Pivot)) or any(isinstance(n, CondJoin) and n.semi for n in nodes(p))


# ---------------------------------------------------------------------- strategies
def _subset(draw, items: list[str], min_size: int, max_size: int | None = None) -> list[str]:
    if not items:
        return []
    chosen = draw(st.lists(st.sampled_from(items), unique=True, min_size=min_size, max_size=max_size or len(items)))
    return chosen


@st.composite
def plans(draw, depth: int = 3) -> Plan:
    if depth == 0 or draw(st.integers(0, 5)) == 0:
        return Base(draw(st.sampled_from(["R", "S"])))
    kind = draw(st.sampled_from(["filter", "select", "join", "union", "distinct", "agg", "agg",
                                 "semi", "condition", "intersect", "by_name", "anti", "outer", "subtract", "window",
                                 "rollup", "pivot"]))
    child = draw(plans(depth - 1))
    cols = columns(child)
    if kind == "window":
        fn = draw(st.sampled_from(["count", "sum", "min", "max", "avg", "row_number"]))
        if fn == "row_number" and has(child, AGGREGATIONS):
            fn = "sum"  # a black box over values with v-nodes also depends on a condition node the reference lacks
        alias = next(a for a in (f"w{i}" for i in range(9)) if a not in cols)
        column = None if fn == "count" and draw(st.booleans()) else draw(st.sampled_from(cols))
        order = None if fn == "row_number" or draw(st.booleans()) else draw(st.sampled_from(cols))
        return Win(child, alias, fn, None if fn == "row_number" else column, tuple(_subset(draw, cols, 0, 2)), order)
    if kind == "pivot" and (has(child, AGGREGATIONS + (Win,)) or len(cols) < 2):
        kind = "rollup"  # a pivot's arguments are expressions (if(col <=> v, x)): over plain columns only
    if kind in ("rollup", "pivot"):
        keys = _subset(draw, cols, 1 if kind == "rollup" else 0, 2)
        column = draw(st.sampled_from([c for c in cols if c not in keys] or cols))
        simple: list[tuple[str, str, Any]] = [("cnt", "count", None)]
        simple += [(f"{'cnt' if fn == 'count' else fn}_{c}", fn, c) for c in cols for fn in ("count", "sum", "min", "max", "avg")]
        simple = [a for a in simple if a[0] not in keys]
        aggs = tuple(draw(st.lists(st.sampled_from(simple), unique_by=lambda a: a[0], min_size=1, max_size=2)))
        if kind == "rollup" or column in keys:
            return Rollup(child, tuple(keys), aggs, draw(st.booleans()))
        values = tuple(draw(st.lists(st.sampled_from([0, 1, 2, None]), unique=True, min_size=1, max_size=3)))
        return Pivot(child, tuple(keys), column, values, aggs)
    if kind == "filter":
        return Filter(child, draw(st.sampled_from(cols)), draw(st.sampled_from(sorted(SPARK_CMP))), draw(st.integers(-1, 3)))
    if kind == "select":
        perm = draw(st.permutations(cols))
        return Select(child, tuple(perm[: draw(st.integers(1, len(cols)))]))
    if kind == "distinct":
        return Distinct(child)
    if kind == "agg":
        keys = _subset(draw, cols, 0 if draw(st.integers(0, 9)) == 0 else 1, 2)
        cands: list[tuple[str, str, Any]] = [("cnt", "count", None)]
        for c in cols:
            for fn in ("count", "sum", "min", "max", "avg"):
                cands.append((f"{'cnt' if fn == 'count' else fn}_{c}", fn, c))
            # newer: expressions as arguments, DISTINCT, black boxes, expressions over aggregates
            tmpl = draw(st.sampled_from(sorted(ARGUMENTS)))
            fn = draw(st.sampled_from(["count", "sum", "min", "max", "avg"]))
            cands.append((f"{tmpl}{fn}_{c}", fn, Arg(tmpl, c)))
            cands += [(f"cd_{c}", "count_distinct", c), (f"sd_{c}", "sum_distinct", c), (f"std_{c}", "stddev", c),
                      (f"vp_{c}", "var_pop", c)]
            tmpl = draw(st.sampled_from(sorted(EXPRESSIONS)))
            cands.append((f"{tmpl}_{c}", "expr", Arg(tmpl, c)))
        if len(cols) > 1:
            pair = tuple(draw(st.permutations(cols))[:2])
            cands.append(("cd2", "count_distinct", pair))
        cands = [a for a in cands if a[0] not in keys]
        aggs = draw(st.lists(st.sampled_from(cands), unique_by=lambda a: a[0], min_size=1, max_size=3))
        return Agg(child, tuple(keys), tuple(aggs))
    other = draw(plans(depth - 1))
    ocols = columns(other)
    if kind == "join":
        if n_products(child) + n_products(other) >= 2:
            return Distinct(child)
        shared = [c for c in cols if c in ocols]
        if not shared:
            return Join(child, other, (), tuple(ocols))
        on = _subset(draw, shared, 1, 2)
        on = [c for c in cols if c in on]
        keep = [c for c in ocols if c not in shared or c in on]
        return Join(child, other, tuple(on), tuple(keep))
    if kind == "outer":
        shared = [c for c in cols if c in ocols]
        if not shared or n_products(child) + n_products(other) >= 2:
            return Distinct(child)
        chosen = _subset(draw, shared, 1, 2)
        on = [c for c in cols if c in chosen]
        keep = [c for c in ocols if c not in shared or c in on]
        return OuterJoin(child, other, tuple(on), tuple(keep), draw(st.sampled_from(["left", "right", "full"])))
    if kind == "anti":
        shared = [c for c in cols if c in ocols]
        if shared and draw(st.booleans()):
            return AntiJoin(child, other, tuple(_subset(draw, shared, 1, 2)), draw(st.sampled_from(["anti", "leftanti", "left_anti"])))
        suffix = next(s for s in (f"_{i}" for i in range(2, 9)) if not {c + s for c in ocols} & set(cols))
        return AntiCond(child, Rename(other, suffix), draw(st.sampled_from(cols)), draw(st.sampled_from(sorted(SPARK_CMP))),
                        draw(st.sampled_from(ocols)) + suffix)
    if kind == "semi":
        shared = [c for c in cols if c in ocols]
        if shared:
            return SemiJoin(child, other, tuple(_subset(draw, shared, 1, 2)), draw(st.sampled_from(["semi", "leftsemi", "left_semi"])))
        kind = "condition"
    if kind == "condition":
        semi = draw(st.booleans())
        if not semi and n_products(child) + n_products(other) >= 2:
            return Distinct(child)
        suffix = next(s for s in (f"_{i}" for i in range(2, 9)) if not {c + s for c in ocols} & set(cols))
        return CondJoin(child, Rename(other, suffix), draw(st.sampled_from(cols)), draw(st.sampled_from(sorted(SPARK_CMP))),
                        draw(st.sampled_from(ocols)) + suffix, semi)
    if kind == "by_name":
        perm = tuple(draw(st.permutations(ocols)))
        return UnionByName(child, other if list(perm) == ocols else Select(other, perm))
    # union (or intersect) of two compatible sub-plans: project both onto their common columns
    common = [c for c in cols if c in ocols]
    setop = {"union": Union_, "intersect": Intersect, "subtract": Subtract}[kind]
    if not common:
        return setop(child, child)
    left = child if cols == common else Select(child, tuple(common))
    right = other if ocols == common else Select(other, tuple(common))
    return setop(left, right)


@st.composite
def relations(draw) -> dict[str, list[tuple]]:
    out = {}
    for name in ("R", "S"):
        n = draw(st.integers(0 if name == "S" else 1, 6))
        rows = []
        for i in range(n):
            a = draw(st.integers(0, 2))
            b = draw(st.integers(0, 1))
            v = draw(st.one_of(st.none(), st.integers(0, 3)))
            rows.append((i + (10 if name == "S" else 0), a, b, v))
        out[name] = rows
    return out


# ---------------------------------------------------------------------- running a plan
_AGG_FNS = {"count": F.count, "sum": F.sum, "min": F.min, "max": F.max, "avg": F.avg, "sum_distinct": F.sum_distinct,
            "stddev": F.stddev, "var_pop": F.var_pop}
#: Aggregates without a ⊗ form (a black box per group): their what-if is unknown.
BLACK_BOXES = ("stddev", "var_pop", "expr")
#: The expressions over aggregates that are arithmetic (:data:`EXPRESSIONS`): a what-if recomputes them.
FORMULAS = ("spread", "plusn")


def _round(x: Any, digits: int) -> Any:
    """Spark's round: half up, on the decimal text of the double."""
    return None if x is None else float(Decimal(repr(float(x))).quantize(Decimal(1).scaleb(-digits), ROUND_HALF_UP))


#: Argument expressions over a column: (PySpark column, the same on a Python value).
ARGUMENTS: dict[str, tuple[Any, Any]] = {
    "x2": (lambda c: F.col(c) * 2, lambda v: None if v is None else v * 2),
    "pos": (lambda c: F.when(F.col(c) > 1, F.col(c)).otherwise(0), lambda v: v if v is not None and v > 1 else 0),
    "coal": (lambda c: F.coalesce(F.col(c), F.lit(0)), lambda v: 0 if v is None else v),
    "flag": (lambda c: F.when(F.col(c) > 1, 1), lambda v: 1 if v is not None and v > 1 else None),
}
#: Expressions over aggregates of a column: (PySpark column, the reference's Expression).
EXPRESSIONS: dict[str, tuple[Any, Any]] = {
    "spread": (lambda c: F.max(c) - F.min(c),
               lambda c: ref.Expression(lambda hi, lo: None if hi is None else hi - lo, (("max", c), ("min", c)))),
    "plusn": (lambda c: F.sum(c) + F.count(F.lit(1)),
              lambda c: ref.Expression(lambda s, n: None if s is None else s + n, (("sum", c), ("count", None)))),
    "rnd": (lambda c: F.round(F.avg(c), 1), lambda c: ref.Expression(lambda a: _round(a, 1), (("avg", c),))),
}


def agg_column(alias: str, fn: str, arg: Any) -> Any:
    """One aggregate of an :class:`Agg` as a PySpark column."""
    if fn == "expr":
        return EXPRESSIONS[arg.template][0](arg.column).alias(alias)
    if fn == "count_distinct":
        return F.count_distinct(*[F.col(c) for c in (arg if isinstance(arg, tuple) else (arg,))]).alias(alias)
    col = F.lit(1) if arg is None else ARGUMENTS[arg.template][0](arg.column) if isinstance(arg, Arg) else F.col(arg)
    return _AGG_FNS[fn](col).alias(alias)


def reference_aggregate(alias: str, fn: str, arg: Any) -> tuple[str, str, Any]:
    """One aggregate of an :class:`Agg` as :func:`tests.reference.group_by` takes it."""
    if fn == "expr":
        return alias, fn, EXPRESSIONS[arg.template][1](arg.column)
    if isinstance(arg, Arg):
        python, column = ARGUMENTS[arg.template][1], arg.column
        return alias, fn, lambda d: python(d[column])
    return alias, fn, arg


def run_plan(plan: Plan, frames: dict[str, Any]) -> Any:
    """Run ``plan`` with PySpark's method names: works on DataFrames and on AnnotatedFrames."""
    if isinstance(plan, Base):
        return frames[plan.name]
    if isinstance(plan, Filter):
        child = run_plan(plan.child, frames)
        return child.filter(SPARK_CMP[plan.op](F.col(plan.column), F.lit(plan.const)))
    if isinstance(plan, Select):
        return run_plan(plan.child, frames).select(*plan.columns)
    if isinstance(plan, Join):
        left = run_plan(plan.left, frames)
        right = run_plan(plan.right, frames)
        if not plan.on:
            return left.crossJoin(right)
        if list(plan.right_keep) != columns(plan.right):
            right = right.select(*plan.right_keep)
        return left.join(right, on=list(plan.on), how="inner")
    if isinstance(plan, Union_):
        return run_plan(plan.left, frames).union(run_plan(plan.right, frames))
    if isinstance(plan, SemiJoin):
        return run_plan(plan.left, frames).join(run_plan(plan.right, frames), on=list(plan.on), how=plan.how)
    if isinstance(plan, Rename):
        child = run_plan(plan.child, frames)
        return child.toDF(*[c + plan.suffix for c in child.columns])
    if isinstance(plan, CondJoin):
        condition = SPARK_CMP[plan.op](F.col(plan.left_column), F.col(plan.right_column))
        return run_plan(plan.left, frames).join(run_plan(plan.right, frames), condition, "left_semi" if plan.semi else "inner")
    if isinstance(plan, Intersect):
        return run_plan(plan.left, frames).intersect(run_plan(plan.right, frames))
    if isinstance(plan, Subtract):
        return run_plan(plan.left, frames).subtract(run_plan(plan.right, frames))
    if isinstance(plan, AntiJoin):
        return run_plan(plan.left, frames).join(run_plan(plan.right, frames), on=list(plan.on), how=plan.how)
    if isinstance(plan, AntiCond):
        condition = SPARK_CMP[plan.op](F.col(plan.left_column), F.col(plan.right_column))
        return run_plan(plan.left, frames).join(run_plan(plan.right, frames), condition, "left_anti")
    if isinstance(plan, OuterJoin):
        left, right = run_plan(plan.left, frames), run_plan(plan.right, frames)
        if list(plan.right_keep) != columns(plan.right):
            right = right.select(*plan.right_keep)
        return left.join(right, on=list(plan.on), how=plan.how)
    if isinstance(plan, UnionByName):
        return run_plan(plan.left, frames).unionByName(run_plan(plan.right, frames), allowMissingColumns=True)
    if isinstance(plan, Distinct):
        return run_plan(plan.child, frames).distinct()
    if isinstance(plan, Agg):
        exprs = [agg_column(*a) for a in plan.aggs]
        return run_plan(plan.child, frames).groupBy(*plan.keys).agg(*exprs)
    if isinstance(plan, Rollup):
        grouped = getattr(run_plan(plan.child, frames), "cube" if plan.cube else "rollup")(*plan.keys)
        return grouped.agg(*[agg_column(*a) for a in plan.aggs])
    if isinstance(plan, Pivot):
        grouped = run_plan(plan.child, frames).groupBy(*plan.keys).pivot(plan.column, list(plan.values))
        return grouped.agg(*[agg_column(*a) for a in plan.aggs])
    if isinstance(plan, Win):
        child = run_plan(plan.child, frames)
        w = Window.partitionBy(*plan.partition)
        if plan.fn == "row_number":
            return child.withColumn(plan.alias, F.row_number().over(w.orderBy(*[F.col(c).asc_nulls_first() for c in columns(plan.child)])))
        if plan.order is not None:
            w = w.orderBy(F.col(plan.order).asc_nulls_first())
        return child.withColumn(plan.alias, _AGG_FNS[plan.fn](F.lit(1) if plan.column is None else F.col(plan.column)).over(w))
    raise TypeError(plan)


def run_reference(plan: Plan, rels: dict[str, ref.KRelation], absent: list[ref.KRow] | None = None) -> ref.KRelation:
    """The plan in the reference; the absent rows of every ⊖ operation are appended to ``absent``."""
    out = _reference(plan, rels, absent)
    if absent is not None:
        absent.extend(out.absent)
    return out


def _reference(plan: Plan, rels: dict[str, ref.KRelation], absent: list[ref.KRow] | None) -> ref.KRelation:
    def run_reference(p: Plan, r: dict[str, ref.KRelation]) -> ref.KRelation:  # noqa: F811 - the log goes down
        return globals()["run_reference"](p, r, absent)

    if isinstance(plan, AntiJoin):
        return ref.anti_join(run_reference(plan.left, rels), run_reference(plan.right, rels), list(plan.on))
    if isinstance(plan, AntiCond):
        condition = ref.compare_columns(plan.left_column, plan.op, plan.right_column)
        return ref.anti_join_where(run_reference(plan.left, rels), run_reference(plan.right, rels), condition)
    if isinstance(plan, OuterJoin):
        left, right = run_reference(plan.left, rels), run_reference(plan.right, rels)
        return ref.outer_join(left, ref.select(right, list(plan.right_keep)), list(plan.on), plan.how)
    if isinstance(plan, Subtract):
        return ref.subtract(run_reference(plan.left, rels), run_reference(plan.right, rels))
    if isinstance(plan, Base):
        return rels[plan.name]
    if isinstance(plan, Filter):
        return ref.filter_rows(run_reference(plan.child, rels), ref.compare(plan.column, plan.op, plan.const))
    if isinstance(plan, Select):
        return ref.select(run_reference(plan.child, rels), list(plan.columns))
    if isinstance(plan, Join):
        left, right = run_reference(plan.left, rels), run_reference(plan.right, rels)
        right = ref.select(right, list(plan.right_keep))
        return ref.join(left, right, list(plan.on)) if plan.on else ref.cross_join(left, right)
    if isinstance(plan, Union_):
        return ref.union(run_reference(plan.left, rels), run_reference(plan.right, rels))
    if isinstance(plan, SemiJoin):
        return ref.semi_join(run_reference(plan.left, rels), run_reference(plan.right, rels), list(plan.on))
    if isinstance(plan, Rename):
        child = run_reference(plan.child, rels)
        return ref.select(child, {c + plan.suffix: c for c in child.columns})
    if isinstance(plan, CondJoin):
        left, right = run_reference(plan.left, rels), run_reference(plan.right, rels)
        condition = ref.compare_columns(plan.left_column, plan.op, plan.right_column)
        return ref.semi_join_where(left, right, condition) if plan.semi else ref.theta_join(left, right, condition)
    if isinstance(plan, Intersect):
        return ref.intersect(run_reference(plan.left, rels), run_reference(plan.right, rels))
    if isinstance(plan, UnionByName):
        return ref.union_by_name(run_reference(plan.left, rels), run_reference(plan.right, rels), allow_missing=True)
    if isinstance(plan, Distinct):
        return ref.distinct(run_reference(plan.child, rels))
    if isinstance(plan, Agg):
        return ref.group_by(run_reference(plan.child, rels), list(plan.keys), [reference_aggregate(*a) for a in plan.aggs])
    if isinstance(plan, Rollup):
        n = len(plan.keys)
        positions = [c for size in range(n, -1, -1) for c in combinations(range(n), size)] if plan.cube else \
            [tuple(range(i)) for i in range(n, -1, -1)]
        sets = [[plan.keys[i] for i in s] for s in positions]
        return ref.grouping_sets(run_reference(plan.child, rels), list(plan.keys), sets, [reference_aggregate(*a) for a in plan.aggs])
    if isinstance(plan, Pivot):
        return ref.pivot(run_reference(plan.child, rels), list(plan.keys), plan.column, list(plan.values),
                         [reference_aggregate(*a) for a in plan.aggs], null_without_rows=True)
    if isinstance(plan, Win):
        return ref.window(run_reference(plan.child, rels), plan.alias, plan.fn, plan.column, list(plan.partition), plan.order)
    raise TypeError(plan)


def reference_relations(data: dict[str, list[tuple]]) -> dict[str, ref.KRelation]:
    return {
        n: ref.base(n, [dict(zip(BASE_COLUMNS[n], r)) for r in rows], key=[KEYS[n]], columns=BASE_COLUMNS[n])
        for n, rows in data.items()
    }


def plain_frames(spark, data: dict[str, list[tuple]]) -> dict[str, Any]:
    return {n: local_frame(spark, rows, SCHEMAS[n]) for n, rows in data.items()}


def key_of(row: Any) -> tuple:
    return tuple(ref.norm_value(v) for v in row)


def close(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-9)
    return a == b


def renormalize(nf: tuple[str, frozenset]) -> tuple[str, frozenset]:
    """Re-group a lipspark AggValue normal form with the reference's value normalization."""
    op, terms = nf
    return ref.agg_normal_form(op, [(poly, value) for value, poly in terms])


def describe(plan: Plan, data: dict[str, list[tuple]]) -> str:
    return f"plan={plan!r}\ndata={data!r}"


@pytest.fixture(scope="module", autouse=True)
def _one_shuffle_partition(spark):
    """Tiny data: one shuffle partition saves a task per stage (restored afterwards)."""
    before = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "1")
    yield
    spark.conf.set("spark.sql.shuffle.partitions", before)


# ---------------------------------------------------------------------- the property
def check_plan(spark, data: dict[str, list[tuple]], plan: Plan, deleted: set[str]) -> None:
    why = describe(plan, data)
    plain = plain_frames(spark, data)
    plain_rows = run_plan(plan, plain).collect()

    t = Tracker(spark)
    used = {n.name for n in nodes(plan) if isinstance(n, Base)}  # annotate only what the plan reads
    annotated = {n: t.annotate(df, n, key=[KEYS[n]]) for n, df in plain.items() if n in used}
    out = run_plan(plan, annotated)
    assert out.columns == columns(plan), why
    arows = out.collect_annotated()
    g = t.graph()

    absent: list[ref.KRow] = []
    reference = run_reference(plan, reference_relations(data), absent)
    assert reference.columns == columns(plan), why

    # (1) fidelity: lipspark's data = plain PySpark's = the reference's, as multisets
    plain_bag = Counter(key_of(r) for r in plain_rows)
    assert Counter(key_of(r.row) for r in arows) == plain_bag, why
    assert Counter(ref.tuple_multiset(reference)) == plain_bag, "reference disagrees with PySpark\n" + why

    # (2) per distinct tuple, Σ rows' polynomials = the reference's
    exprs: dict[tuple, list[Any]] = {}
    for r in arows:
        exprs.setdefault(key_of(r.row), []).append(g.polynomial(r.annotation))
    summed = {k: plus(*v) for k, v in exprs.items()}
    got = {k: normal_form(e) for k, e in summed.items()}
    want = ref.tuple_polynomials(reference)
    assert set(got) == set(want), why
    for k in want:
        assert ref.poly_normal_form(got[k] - want[k]) == 0, f"tuple {k}: lipspark {got[k]} != reference {want[k]}\n{why}"

    # (2b) the rows kept out because they have partners are the graph's ⊖ nodes
    got_absent: Counter = Counter()
    monus = np.flatnonzero(np.asarray(g.op) == int(Op.MONUS))
    for pos in monus.tolist():
        row = json.loads(g.column("tuple", np.array([pos]))[0])
        form = str(sympy.expand(normal_form(g.polynomial(int(g.ids[pos])))))
        got_absent[(frozenset((c, ref.norm_value(v)) for c, v in row.items()), form)] += int(g.value_at(pos))
    want_absent = Counter((frozenset((c, ref.norm_value(v)) for c, v in r.data.items()), str(ref.poly_normal_form(r.ann)))
                          for r in absent)
    assert got_absent == want_absent, why

    # (3) aggregate values, per output row
    agg_cols = sorted({c for r in reference.rows for c in r.aggs})
    if agg_cols:
        ref_aggs = Counter(
            (tuple(ref.norm_value(r.data[c]) for c in reference.columns), frozenset((c, reference_form(a)) for c, a in r.aggs.items()))
            for r in reference.rows
        )
        lip_aggs = Counter(
            (key_of(r.row), frozenset((c, value_form(g.value(r.annotation, c))) for c in agg_cols if c in r.annotation.values))
            for r in arows
        )
        assert lip_aggs == ref_aggs, why
        for r in reference.rows:  # the reference's plain aggregate = the data column
            for c, a in r.aggs.items():
                assert close(a.result, r.data[c]), why
        # every row annotation evaluates to 1 in COUNTING (tokens 1, δ of a non-zero 1), so each
        # aggregate value Σ kᵢ ⊗ vᵢ evaluates to the plain aggregate in the row's data; a black
        # box's recorded value is the data
        for r in arows:
            for c in agg_cols:
                if c in r.annotation.values:
                    value = g.value(r.annotation, c)
                    v = evaluate(value, COUNTING, default=1) if isinstance(value, AggValue) else g.node(r.annotation.values[c])["value"]
                    assert close(v, r.row[c]), f"{c}: COUNTING {v} != data {r.row[c]}\n{why}"

    # (4) no δ: COUNTING with every token 1 is the bag multiplicity
    if not has_delta(plan):
        for k, e in summed.items():
            assert evaluate(e, COUNTING, default=1) == plain_bag[k], why

    # (5) deletion propagation in BOOLEAN
    deleted = {tok for tok in deleted if tok.split(":")[0] in used}
    if not deleted:
        return
    kept = {n: [r for r in rows if f"{n}:{r[0]}" not in deleted] for n, rows in data.items()}
    valuation = {tok: False for tok in deleted}
    why += f"\ndeleted={sorted(deleted)}"
    what_if = delete(g, [g.token_id(tok) for tok in deleted]) if has(plan, MONUS_OPS) else None
    if what_if is not None and what_if.appeared:
        assert not what_if.exact, why
        if not isinstance(plan, MONUS_OPS) or has(plan.left, MONUS_OPS) or has(plan.right, MONUS_OPS):
            return  # below another operation: what it does with the row is not in the graph
    if isinstance(plan, Win) and not has(plan.child, AGGREGATIONS + (Win,)):
        check_window_deletion(spark, plan, kept, g, arows, deleted, why)
        return
    if has(plan, (Win,)):
        return  # a window below: the values it adds change with the deletion, and what comes after is not recomputed
    if isinstance(plan, (Rollup, Pivot)) and not has(plan.child, AGGREGATIONS):
        check_grouping_deletion(spark, plan, kept, g, arows, deleted, why)
        return
    if has(plan, (Rollup, Pivot)):
        return  # below another operation: its recomputed values are not carried on
    if not has(plan, (Agg,)):
        rerun = Counter(key_of(r) for r in run_plan(plan, plain_frames(spark, kept)).collect())
        alive = {k for k, e in summed.items() if evaluate(e, BOOLEAN, valuation, default=True)}
        if what_if is None or not what_if.appeared:  # the rows present now that survive are all
            assert alive == set(rerun), why
        if what_if is not None:  # the rows that survive, and those that appear, are the re-run's, copies included
            survived = Counter(key_of(r.row) for r in arows if not what_if.removed[g.positions(r.annotation.factors)].any())
            for a in what_if.appeared:
                survived[tuple(ref.norm_value(a.row.get(c)) for c in columns(plan))] += a.copies
            assert survived == rerun, why
    elif isinstance(plan, Agg) and not has(plan.child, (Agg,)):
        nk = len(plan.keys)
        rerun = {key_of(r)[:nk]: r for r in run_plan(plan, plain_frames(spark, kept)).collect()}
        changed = {c.node: c.after for c in delete(g, [g.token_id(tok) for tok in deleted]).values}
        for r in arows:
            k = key_of(r.row)[:nk]
            polynomial = g.polynomial(r.annotation)
            alive = evaluate(polynomial, BOOLEAN, valuation, default=True)
            if nk:
                assert alive == (k in rerun), why
            if not alive:
                continue
            touched = bool(tokens(polynomial) & deleted)  # a member of the group was deleted
            if not nk:  # a keyless group is 1: its members are the rows below it
                below = run_reference(plan.child, reference_relations(data))
                touched = bool({str(x) for r in below.rows for x in sympy.sympify(r.ann).free_symbols} & deleted)
            for alias, fn, arg in plan.aggs:
                node = r.annotation.values[alias]
                what_if = changed.get(node, g.node(node)["value"])
                if fn == "expr" and arg.template in FORMULAS:  # arithmetic over aggregates: recomputed
                    assert close(what_if, rerun[k][alias]), f"{alias}: what-if {what_if} != re-run {rerun[k][alias]}\n{why}"
                    continue
                if fn in BLACK_BOXES:  # no ⊗ form: unknown as soon as a member goes, else unchanged
                    assert what_if is UNKNOWN if touched else node not in changed, f"{alias}: what-if {what_if}\n{why}"
                    continue
                v = evaluate(g.value(r.annotation, alias), BOOLEAN, valuation, default=True)
                assert close(v, rerun[k][alias]), f"{alias}: boolean {v} != re-run {rerun[k][alias]}\n{why}"
                assert close(what_if, rerun[k][alias]), f"{alias}: what-if {what_if} != re-run {rerun[k][alias]}\n{why}"


def check_grouping_deletion(spark, plan: Plan, kept: dict[str, list[tuple]], g: Any, arows: list[Any], deleted: set[str], why: str) -> None:
    """The deletion oracle for a rollup, cube or pivot at the top of a plan (nothing aggregated
    below): the rows that survive, with their aggregates recomputed by the what-if (⊗ aggregates
    only: never unknown), are the re-run's, as multisets."""
    what_if = delete(g, [g.token_id(tok) for tok in deleted])
    changed = {c.node: c.after for c in what_if.values}
    names = columns(plan)
    predicted: Counter = Counter()
    for r in arows:
        if what_if.removed[g.positions(r.annotation.factors)].any():
            continue
        data = []
        for c, v in zip(names, r.row):
            node = r.annotation.values.get(c)
            after = changed.get(node, v) if node is not None else v
            assert after is not UNKNOWN, f"{c}: unknown\n{why}"
            data.append(ref.norm_value(after))
        predicted[tuple(data)] += 1
    rerun = Counter(key_of(r) for r in run_plan(plan, plain_frames(spark, kept)).collect())
    assert predicted == rerun, f"what-if {predicted} != re-run {rerun}\n{why}"


def check_window_deletion(spark, plan: Win, kept: dict[str, list[tuple]], g: Any, arows: list[Any], deleted: set[str], why: str) -> None:
    """The deletion oracle for a window at the top of a plan: the rows that survive, their
    window values recomputed by the what-if (an aggregate window), are the re-run's; a black box
    (``row_number``) is unknown when a row of its partition went, else unchanged."""
    what_if = delete(g, [g.token_id(tok) for tok in deleted])
    changed = {c.node: c.after for c in what_if.values}
    at = columns(plan).index(plan.alias)
    black_box = plan.fn == "row_number"
    rerun = Counter(tuple(v for i, v in enumerate(key_of(r)) if not (black_box and i == at))
                    for r in run_plan(plan, plain_frames(spark, kept)).collect())
    predicted: Counter = Counter()
    for r in arows:
        if what_if.removed[g.positions(r.annotation.factors)].any():
            continue
        node = r.annotation.values[plan.alias]
        if black_box:  # a row of its partition went: its value is unknown, else unchanged
            touched = bool(tokens(g.value(r.annotation, plan.alias)) & deleted)
            assert (changed.get(node) is UNKNOWN) if touched else node not in changed, f"{plan.alias}: {changed.get(node)}\n{why}"
            predicted[tuple(v for i, v in enumerate(key_of(r.row)) if i != at)] += 1
            continue
        data = list(key_of(r.row))
        data[at] = ref.norm_value(changed.get(node, g.node(node)["value"]))
        predicted[tuple(data)] += 1
    assert predicted == rerun, f"what-if {predicted} != re-run {rerun}\n{why}"


def _random_plan(spark: Any, data: Any, plan: Any, pick: Any) -> None:
    tokens = [f"{n}:{r[0]}" for n, rows in data.items() for r in rows]
    deleted = set(pick.draw(st.lists(st.sampled_from(tokens), unique=True, max_size=3))) if tokens else set()
    check_plan(spark, data, plan, deleted)


@SETTINGS
@given(data=relations(), plan=plans(), pick=st.data())
def test_random_plans_match_pyspark_and_reference(spark, data, plan, pick):
    _random_plan(spark, data, plan, pick)


#: random plans the slow suite (CI) checks besides the quick hunt's
SLOW_EXAMPLES = 60


@pytest.mark.slow
@settings(SETTINGS, max_examples=SLOW_EXAMPLES)
@given(data=relations(), plan=plans(), pick=st.data())
def test_random_plans_match_pyspark_and_reference_longer(spark, data, plan, pick):
    _random_plan(spark, data, plan, pick)


# ---------------------------------------------------------------------- fixed plans (always run)
DATA = {
    "R": [(0, 1, 0, 2), (1, 1, 1, None), (2, 2, 0, 3), (3, 1, 0, 2)],
    "S": [(10, 1, 0, 1), (11, 2, 1, None), (12, 1, 1, 3)],
}
_ALL_AGGS = (("cnt", "count", None), ("cnt_v", "count", "v"), ("sum_v", "sum", "v"), ("min_v", "min", "v"), ("max_v", "max", "v"), ("avg_v", "avg", "v"))
_NEW_AGGS = (("x2sum_v", "sum", Arg("x2", "v")), ("flagcount_v", "count", Arg("flag", "v")), ("posavg_b", "avg", Arg("pos", "b")),
             ("cd_a", "count_distinct", "a"), ("cd_v", "count_distinct", "v"), ("cd2", "count_distinct", ("a", "v")),
             ("sd_v", "sum_distinct", "v"), ("std_v", "stddev", "v"), ("vp_v", "var_pop", "v"),
             ("spread_v", "expr", Arg("spread", "v")), ("plusn_v", "expr", Arg("plusn", "v")), ("rnd_v", "expr", Arg("rnd", "v")))

FIXED = {
    "join_group_all_aggs": Agg(Join(Base("R"), Select(Base("S"), ("a", "sid")), ("a",), ("a", "sid")), ("a",), _ALL_AGGS),
    "agg_of_agg_union": Agg(
        Union_(Agg(Base("R"), ("a",), (("cnt", "count", None),)), Agg(Base("S"), ("a",), (("cnt", "count", None),))),
        ("cnt",),
        (("sum_cnt", "sum", "cnt"), ("avg_cnt", "avg", "cnt")),
    ),
    "self_join": Select(Join(Base("R"), Select(Base("R"), ("a",)), ("a",), ("a",)), ("a", "b")),
    "join_group_new_aggs": Agg(Join(Base("R"), Select(Base("S"), ("a", "sid")), ("a",), ("a", "sid")), ("a",), _NEW_AGGS),
    "new_aggs_of_aggs": Agg(Agg(Base("R"), ("a",), (("cnt", "count", None), ("std_v", "stddev", "v"), ("spread_v", "expr", Arg("spread", "v")))),
                            ("cnt",), (("x2sum_cnt", "sum", Arg("x2", "cnt")), ("cd_cnt", "count_distinct", "cnt"),
                                       ("sum_std_v", "sum", "std_v"), ("max_spread_v", "max", "spread_v"))),
    # semi joins on names over a union by name with missing columns (null keys), then a value column kept
    "semi_join_union_by_name": SemiJoin(UnionByName(Select(Base("R"), ("b", "a")), Select(Base("S"), ("v", "b"))), Base("S"), ("b",), "left_semi"),
    "semi_join_of_aggregate": SemiJoin(Agg(Base("R"), ("a",), (("sum_v", "sum", "v"),)), Base("S"), ("a",), "semi"),
    # a self join on a condition, then a semi join on a condition, then intersect with nulls on both sides
    "conditions_and_intersect": Intersect(
        Select(CondJoin(CondJoin(Base("R"), Rename(Base("R"), "_2"), "a", "<", "a_2", False), Rename(Base("S"), "_3"), "v", "<=", "v_3", True),
               ("b", "v")),
        Select(UnionByName(Select(Base("S"), ("b",)), Select(Base("R"), ("v", "b"))), ("b", "v")),
    ),
}


#: window functions over partitions with nulls, ties and null keys
WINDOW_FIXED = {
    "sum_over_partition": Win(Base("R"), "w", "sum", "v", ("a",), None),
    "count_star_over_everything": Win(Base("R"), "w", "count", None, (), None),
    "avg_over_ordered_partition": Win(Base("R"), "w", "avg", "v", ("a",), "v"),
    "min_ordered_by_a_nullable_column": Win(Base("S"), "w", "min", "a", ("b",), "v"),
    "row_number_per_key": Win(Select(Base("R"), ("a", "v")), "w", "row_number", None, ("a",), None),
    "max_over_a_join": Win(Join(Base("R"), Select(Base("S"), ("a", "sid")), ("a",), ("a", "sid")), "w", "max", "v", ("sid",), "rid"),
    "window_over_an_aggregate": Win(Agg(Base("R"), ("a",), (("cnt", "count", None),)), "w", "sum", "cnt", (), "a"),
}


@pytest.mark.parametrize("name", sorted(WINDOW_FIXED))
def test_window_plans(spark, name):
    check_plan(spark, DATA, WINDOW_FIXED[name], {"R:3", "S:10"})


#: rollup, cube and pivot over null keys, null pivot values, duplicates; over a join and an aggregate
GROUPING_FIXED = {
    "rollup_two_keys": Rollup(Base("R"), ("a", "b"), (("cnt", "count", None), ("sum_v", "sum", "v")), False),
    "cube_over_a_join": Rollup(Join(Base("R"), Select(Base("S"), ("a", "sid")), ("a",), ("a", "sid")), ("a", "sid"),
                               (("max_v", "max", "v"),), True),
    "rollup_of_an_aggregate": Rollup(Agg(Base("R"), ("a", "b"), (("cnt", "count", None),)), ("a",), (("sum_cnt", "sum", "cnt"),), False),
    "pivot_with_a_null_value": Pivot(Base("R"), ("a",), "v", (2, None, 0), (("cnt", "count", None), ("avg_b", "avg", "b"))),
    "keyless_pivot": Pivot(Base("S"), (), "b", (0, 1), (("sum_v", "sum", "v"),)),
    "distinct_of_a_pivot": Distinct(Select(Pivot(Base("R"), ("b",), "a", (1, 2), (("cnt_v", "count", "v"),)), ("1", "2"))),
}


@pytest.mark.parametrize("name", sorted(GROUPING_FIXED))
def test_grouping_plans(spark, name):
    check_plan(spark, DATA, GROUPING_FIXED[name], {"R:3", "S:10"})


@pytest.mark.parametrize("name", sorted(FIXED))
def test_fixed_plans(spark, name):
    deleted = {"R:3", "S:10"}
    check_plan(spark, DATA, FIXED[name], deleted)


#: plans with ⊖ (anti, outer joins, subtract), over keys with nulls (v) and duplicates, and
#: deletions that make rows appear (S:12 is the last partner of R:2's v = 3 and of the tuple (1, 1))
MONUS_FIXED = {
    "anti_join_on_nullable_key": AntiJoin(Base("R"), Select(Base("S"), ("v",)), ("v",), "left_anti"),
    "anti_join_on_a_condition": AntiCond(Base("R"), Rename(Base("S"), "_2"), "v", ">=", "v_2"),
    "left_outer_join": OuterJoin(Base("R"), Select(Base("S"), ("v", "sid")), ("v",), ("v", "sid"), "left"),
    "right_outer_join": OuterJoin(Select(Base("R"), ("v", "rid")), Base("S"), ("v",), ("v", "sid", "a", "b"), "right"),
    "full_outer_join_of_duplicates": OuterJoin(Select(Base("R"), ("a", "b")), Select(Base("S"), ("b", "sid")), ("b",), ("b", "sid"), "full"),
    "subtract_with_duplicates": Subtract(Select(Base("R"), ("a", "b")), Select(Base("S"), ("a", "b"))),
    "subtract_of_an_empty_side": Subtract(Select(Base("R"), ("a", "b")), Select(Filter(Base("S"), "a", ">", 5), ("a", "b"))),
    "anti_join_of_an_empty_side": AntiJoin(Base("R"), Filter(Select(Base("S"), ("a",)), "a", ">", 5), ("a",), "anti"),
    "outer_join_then_group": Agg(OuterJoin(Base("R"), Select(Base("S"), ("v", "sid")), ("v",), ("v", "sid"), "left"), ("rid",),
                                 (("cnt_sid", "count", "sid"),)),
    "anti_join_then_distinct": Distinct(Select(AntiJoin(Base("R"), Select(Base("S"), ("v",)), ("v",), "leftanti"), ("a",))),
}


@pytest.mark.parametrize("name", sorted(MONUS_FIXED))
@pytest.mark.parametrize("deleted", [{"S:10", "S:11", "S:12"},  # every partner deleted: rows appear (the fast suite)
                                     pytest.param({"S:12"}, marks=pytest.mark.slow), pytest.param({"R:3", "S:10"}, marks=pytest.mark.slow)],
                         ids=["all-S", "S12", "R3-S10"])
def test_monus_plans(spark, name, deleted):
    check_plan(spark, DATA, MONUS_FIXED[name], deleted)


# ---------------------------------------------------------------------- edge cases
def test_global_aggregate_nonempty(spark):
    plan = Agg(Base("R"), (), _ALL_AGGS)
    check_plan(spark, DATA, plan, {"R:0", "R:1", "R:2", "R:3"})
    check_plan(spark, DATA, Agg(Base("R"), (), _NEW_AGGS), {"R:0", "R:3"})


def test_new_aggregates_over_empty_input(spark):
    check_plan(spark, DATA, Agg(Filter(Base("R"), "a", ">", 5), (), _NEW_AGGS), set())


def test_global_aggregate_over_empty_input(spark):
    """groupBy() without keys over no rows: PySpark returns one row, which no tuple derives and
    none can delete (annotation 1); its aggregates have no members."""
    t = Tracker(spark)
    r = t.annotate(spark.createDataFrame([(0, 1)], "rid int, a int"), "R", key=["rid"])
    out = r.filter(F.col("a") > 5).groupBy().agg(F.count(F.lit(1)).alias("cnt"), F.sum("a").alias("s"))
    (row,) = out.collect_annotated()
    assert row.row.asDict() == {"cnt": 0, "s": None}  # what PySpark returns
    g = t.graph()
    # no base tuple derives this row, and none can delete it: its annotation is 1 (not δ(0) = 0)
    assert evaluate(g.polynomial(row.annotation), COUNTING) == 1
    assert evaluate(g.value(row.annotation, "cnt"), COUNTING) == 0
    assert g.value(row.annotation, "s").normal_form() == ("Sum", frozenset())


def test_paper_example_2_3_matches_reference(spark):
    """Lipstick Example 2.3: available Civics for request B1 — δ(C2·B1 + C3·B1), Count {(C2·B1 + C3·B1) ⊗ 1}."""
    cars_rows = [("C1", "Accord"), ("C2", "Civic"), ("C3", "Civic")]
    req_rows = [("P1", "B1", "Civic")]
    t = Tracker(spark)
    cars = t.annotate(spark.createDataFrame(cars_rows, "CarId string, Model string"), "Cars", key=["CarId"])
    reqs = t.annotate(spark.createDataFrame(req_rows, "UserId string, BidId string, Model string"), "Requests", key=["BidId"])
    inventory = cars.join(reqs.select("Model"), on=["Model"], how="inner")
    counted = inventory.groupBy("Model").agg(F.count(F.lit(1)).alias("NumAvail"))
    (row,) = counted.collect_annotated()
    g = t.graph()

    rc = ref.base("Cars", [dict(zip(["CarId", "Model"], r)) for r in cars_rows], key=["CarId"])
    rr = ref.base("Requests", [dict(zip(["UserId", "BidId", "Model"], r)) for r in req_rows], key=["BidId"])
    (want,) = ref.group_by(ref.join(rc, ref.select(rr, ["Model"]), on=["Model"]), ["Model"], [("NumAvail", "count", None)]).rows

    assert row.row.asDict() == want.data == {"Model": "Civic", "NumAvail": 2}
    assert sympy.expand(normal_form(g.polynomial(row.annotation)) - ref.poly_normal_form(want.ann)) == 0
    assert renormalize(g.value(row.annotation, "NumAvail").normal_form()) == want.aggs["NumAvail"].normal_form()
    c2, c3, b1 = sympy.Symbol("Cars:C2"), sympy.Symbol("Cars:C3"), sympy.Symbol("Requests:B1")
    assert want.aggs["NumAvail"].normal_form() == ("Count", frozenset({(1, c2 * b1 + c3 * b1)}))
    # deleting C2 leaves one Civic; deleting B1 removes the group
    assert evaluate(g.value(row.annotation, "NumAvail"), BOOLEAN, {"Cars:C2": False}, default=True) == 1
    assert evaluate(g.polynomial(row.annotation), BOOLEAN, {"Requests:B1": False}, default=True) is False


def test_a_window_over_a_windows_value_gives_its_values_expression(spark):
    """Found by the random plans: a ranking window ordered over another window's value is a black
    box with an edge from the CONDITION node over the values it read; the value's expression
    reached that node and refused it as corrupt."""
    data = {"R": [(0, 1, 0, None), (1, 0, 0, None), (2, 2, 0, None), (3, 0, 1, 3), (4, 2, 0, None), (5, 2, 1, 0)],
            "S": [(10, 2, 0, 3)]}
    inner = Win(child=Filter(child=Base(name="R"), column="v", op="<=", const=2), alias="w0", fn="count", column=None,
                partition=("v", "rid"), order="rid")
    check_plan(spark, data, Win(child=inner, alias="w1", fn="row_number", column=None, partition=("rid",), order=None),
               ["R:1", "R:0", "R:4"])
