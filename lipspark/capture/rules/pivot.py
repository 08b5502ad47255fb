"""Pivot: ``groupBy(keys).pivot(col, values).agg(a₁, …)``.

Spark's analyzer rewrites a pivot as one ``groupBy(keys)`` with an aggregate per pivot value
``v`` and aggregate ``a``: ``a`` with each argument ``x`` replaced by ``if(col <=> v, x, null)``
(``first``/``last`` made to ignore nulls), named ``v`` (one aggregate) or ``v_a``. lipspark
reads that rewrite from Spark's own analysis of the pivot and records it with the aggregation
rule (:func:`~lipspark.capture.rules.aggregate.aggregate`): a δ per group over all its rows,
and per output column an aggregate whose ⊗ members are the group's rows whose ``col`` is ``v``
(the others' argument is null, which SQL skips) — so a what-if recomputes it as a re-run does.

When every aggregate's type is numeric or boolean Spark plans the pivot otherwise (two
aggregations: per ``keys`` and ``col``, then each value's result picked out, ``PivotFirst``),
which differs where a group has no row for ``v``: the value is null there, not the aggregate of
nothing, and a NaN value matches no row. The rewrite follows that plan's answers: a ``count``
is ``sum(if(col <=> v, 1 or 0 as x is null, null))`` (a Sum: null without rows, a count with
them), a ``first``/``last`` without ``ignorenulls`` is the first of the rows for ``v``
(``first(if(col <=> v, struct(x), null), true).x``), any other expression or a DISTINCT count
is null unless the group has a row for ``v`` (a black box, as an expression over aggregates),
and a NaN value is null. (Where several rows for ``v`` differ, which one ``first`` takes is this
aggregation's choice, not necessarily the two-step plan's: a tie is arbitrary in both.)

``pivot(col)`` without values computes the distinct values as Spark does (``distinct``,
``limit`` to ``spark.sql.pivotMaxValues`` + 1, sorted, collected to the driver: the output's
columns depend on them), then pivots on them.

>>> _is_nan(float("nan")), _is_nan(1.0), _is_nan("x")
(True, False, False)
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Sequence

from pyspark.sql import Column
from pyspark.sql import functions as F

from lipspark.capture.plan import AggregateItem, analyzed, node_name, read_aggregate
from lipspark.capture.rules import aggregate as _aggregate
from lipspark.errors import UnsupportedOperation

if TYPE_CHECKING:  # pragma: no cover
    from lipspark.frame import AnnotatedFrame

__all__ = ["pivot", "pivot_values"]

#: An aggregate of a string, which Spark's two-step pivot cannot hold: added to read the rewrite.
_FORCE = "__lp_pivot_force"


def _is_nan(v: Any) -> bool:
    return isinstance(v, float) and math.isnan(v)


def _pivot_column(pivot_col: Any) -> Column:
    return F.col(pivot_col) if isinstance(pivot_col, str) else pivot_col


def pivot_values(frame: AnnotatedFrame, pivot_col: Any) -> list[Any]:
    """The values ``pivot(col)`` without values pivots on, computed as Spark computes them: the
    column's distinct values (at most ``spark.sql.pivotMaxValues``), sorted, on the driver."""
    c = _pivot_column(pivot_col)
    df = frame.to_plain()
    most = int(df.sparkSession.conf.get("spark.sql.pivotMaxValues", "10000") or 10000)
    values = [r[0] for r in df.select(c).distinct().limit(most + 1).sort(c).collect()]
    if len(values) > most:
        df.groupBy().pivot(pivot_col)  # Spark's own error, naming the setting
        raise UnsupportedOperation(f"pivot over more than {most} distinct values", "give the values: pivot(col, values)")
    return values


def _java_column(frame: AnnotatedFrame, jexpr: Any) -> Column:
    """A resolved JVM expression of Spark's analysis as a PySpark column (no SQL text round trip:
    that would drop ``first``'s IGNORE NULLS)."""
    jvm = frame.tracker.spark._jvm
    assert jvm is not None
    return Column(jvm.org.apache.spark.sql.Column(jvm.org.apache.spark.sql.classic.ExpressionColumnNode.apply(jexpr)))


def pivot(frame: AnnotatedFrame, keys: Sequence[Any], pivot_col: Any, values: Sequence[Any], exprs: Sequence[Any]) -> AnnotatedFrame:
    """``groupBy(*keys).pivot(pivot_col, values).agg(*exprs)`` as one group-by with an aggregate
    per value and aggregate (see the module docstring), named as Spark names them."""
    df = frame.with_annotations()
    values = list(values)
    plain = df.groupBy(*keys).pivot(pivot_col, values).agg(*exprs)  # Spark's own analysis: errors, names, plan
    names = plain.columns
    nkeys = len(names) - len(values) * len(exprs)
    if not values:  # no column per value: the groups alone
        alone = "lp_pivot_groups"
        return _aggregate.aggregate(frame, keys, [F.count(F.lit(1)).alias(alone)]).drop(alone)
    two_step = "pivotfirst(" in str(analyzed(plain).toString()).lower()
    forced = df.groupBy(*keys).pivot(pivot_col, values).agg(*exprs, F.first(F.lit("")).alias(_FORCE))
    top = analyzed(forced)
    if node_name(top) != "Aggregate":
        raise UnsupportedOperation("this pivot (Spark planned it in a way lipspark does not read)",
                                   "one groupBy(...).agg(...) with F.when(col == value, x) per value")
    seq = top.aggregateExpressions()
    rewritten = [seq.apply(i) for i in range(nkeys, seq.size())]
    mine = read_aggregate(df.groupBy(*keys).agg(*exprs)) or []
    mine = mine[len(mine) - len(exprs):]
    pc = _pivot_column(pivot_col)
    ptype = df.select(pc).schema.fields[0].dataType
    columns: list[Column] = []
    per = len(exprs) + 1
    for vi, v in enumerate(values):
        eq = pc.eqNullSafe(F.lit(v).cast(ptype))
        for ai in range(len(exprs)):
            name = names[nkeys + vi * len(exprs) + ai]
            jexpr = rewritten[vi * per + ai]
            col = _java_column(frame, jexpr.child() if node_name(jexpr) == "Alias" else jexpr)
            if two_step:
                col = _as_two_step(col, mine[ai], eq, _is_nan(v), plain.schema[name].dataType)
            columns.append(col.alias(name))
    return _aggregate.aggregate(frame, keys, columns)


def _as_two_step(col: Column, item: AggregateItem, eq: Column, nan: bool, dtype: Any) -> Column:
    """The aggregate ``col`` (Spark's rewrite of ``item`` for one pivot value) as Spark's two-step
    pivot answers it: null for a group without a row for the value (a NaN value has none)."""
    if nan:
        return F.lit(None).cast(dtype)
    if item.function == "Count" and not item.distinct and not item.filtered:
        if item.literal or not item.arguments:
            return F.sum(F.when(eq, F.lit(1)))
        present = [F.expr(a).isNotNull() for a in item.arguments]
        every = present[0]
        for p in present[1:]:
            every = every & p
        return F.sum(F.when(eq, F.when(every, F.lit(1)).otherwise(F.lit(0))))
    if item.function in ("First", "Last") and not item.ignore_nulls and item.argument is not None:
        fn = F.first if item.function == "First" else F.last
        return fn(F.when(eq, F.struct(F.expr(item.argument).alias("v"))), True)["v"]
    if item.function == "Count" or item.is_expression:
        return F.when(F.count(F.when(eq, F.lit(1))) > 0, col)
    return col
