"""Aggregation rules: ``groupBy().agg()`` and ``distinct`` (Lipstick §3.2, δ and ⊗).

Each group's output row derives from one δ node over the p-nodes of its members (the member
rule makes a · node of a member with several factors; a keyless aggregate over no rows, whose
one row SQL returns anyway, is annotated 1); each supported aggregate (Count, Sum,
Min, Max, Avg) of the group is a v-node ``Σ mᵢ ⊗ vᵢ`` whose ⊗ children pair each member with
its argument's value (or its argument's own v-node). ``collect_list`` keeps each member's p-node
in the bag, so an ``explode`` later gets it back.

The rule has four steps: :func:`read_aggregation` (what Spark analyzed), :func:`members_table`
(one row per input row: group id, member id, aggregate arguments), :func:`group_output` (the
plain aggregation, with the bags rebuilt, plus the δ and aggregate v-node ids) and recording
the :class:`~lipspark.vocabulary.GroupSegment`. Distinct is a group-by on every column with
no aggregate.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lipspark.capture.layout import Layout, check_visible
from lipspark.vocabulary.columns import bag_col, factor, is_hidden, value_col
from lipspark.capture.plan import AggregateItem, read_aggregate
from lipspark.capture.plan import column_references
from lipspark.capture.rules._common import BLACK_BOX_HINT, normalized
from lipspark.capture.rules.condition import record_condition, valued_columns
from lipspark.errors import UnsupportedOperation
from lipspark.vocabulary import SPARK_AGGREGATES, AggregateSpec, GroupSegment, Op
from lipspark.vocabulary.ids import aggregate_id_col, node_hash_col, positional

if TYPE_CHECKING:  # pragma: no cover
    from lipspark.frame import AnnotatedFrame

__all__ = ["Aggregation", "aggregate", "distinct", "read_aggregation", "members_table", "group_output"]


@dataclass(frozen=True)
class Aggregation:
    """What Spark analyzed: the plain result, its key columns, and per output column after the
    keys the aggregate item; ``aggregates`` are (position, operator, item) of the aggregates
    with a provenance rule, ``bags`` the positions of ``collect_list`` columns."""

    plain: DataFrame
    keys: tuple[Column, ...]
    items: tuple[AggregateItem, ...]
    aggregates: tuple[tuple[int, Op, AggregateItem], ...]
    bags: tuple[int, ...]

    @property
    def key_names(self) -> list[str]:
        return self.plain.columns[: len(self.keys)]

    @property
    def key_types(self) -> list[T.DataType]:
        return [self.plain.schema[i].dataType for i in range(len(self.keys))]


def distinct(frame: AnnotatedFrame) -> AnnotatedFrame:
    """Duplicate elimination: each distinct tuple gets δ of the sum of its rows.

    Columns with the same name (both sides' ``k`` after a join on a condition) are compared by
    position, as plain Spark does: under unique names for the grouping, then renamed back."""
    visible = frame.columns
    if len(set(visible)) == len(visible):
        return aggregate(frame, list(visible), [], distinct=True)
    taken = set(visible)
    unique = iter([_fresh(f"{c}_{i}", taken) for i, c in enumerate(visible)])
    df = frame.with_annotations()
    renamed = frame.derive(df.toDF(*[c if is_hidden(c) else next(unique) for c in df.columns]))
    return distinct(renamed).toDF(*visible)


def _fresh(name: str, taken: set[str]) -> str:
    while name in taken:
        name += "_"
    taken.add(name)
    return name


def aggregate(frame: AnnotatedFrame, keys: Sequence[Any], exprs: Sequence[Any], *, distinct: bool = False) -> AnnotatedFrame:
    """``groupBy(*keys).agg(*exprs)`` (or ``distinct()``) with δ per group and ⊗ per member."""
    layout = frame.layout
    if layout.bags and (distinct or any(isinstance(k, str) and k in layout.bags for k in keys)):
        raise UnsupportedOperation(
            f"{'distinct' if distinct else 'groupBy'} over nested bag column(s) {list(layout.bags)} whose members have provenance",
            "explode the bag first, or drop the column before de-duplicating",
        )
    for k in keys:
        if isinstance(k, str):
            check_visible(k)
    agg = read_aggregation(frame, keys, exprs, distinct=distinct)
    tracker = frame.tracker
    _record_grouping(frame, keys, distinct)
    seg = tracker.builder.allocate()
    tracker.share(frame.with_annotations())
    group_id = _group_id(seg, keyless=not agg.keys)
    members, specs = members_table(frame, seg, agg, group_id)
    out = group_output(frame, seg, agg, exprs, group_id)
    segment = GroupSegment(seg, tracker.context, op=Op.DELTA, label=Op.DELTA.label, k=layout.k, aggregates=specs,
                           group=positional(seg, 0) if not agg.keys else None)
    tracker.builder.record(segment, members=members)
    value_names = tuple(it.name for _, _, it in agg.aggregates)
    return frame.derive(out, Layout(1, value_names, tuple(agg.items[j].name for j in agg.bags)))


def _record_grouping(frame: AnnotatedFrame, keys: Sequence[Any], distinct: bool) -> None:
    """Groups keyed by values with v-nodes (a group-by on a count, a distinct over an aggregate)
    depend on those values: a CONDITION node over them (:mod:`~lipspark.capture.rules.condition`)."""
    if not frame.layout.values:
        return
    df = frame.with_annotations()
    read: set[str] = set(frame.columns) if distinct else set()
    for k in keys:
        read.update([k] if isinstance(k, str) else column_references(df, k))
    valued = valued_columns(read, frame.layout.values)
    if valued:
        record_condition(frame.tracker, [(df, valued)], f"{'distinct' if distinct else 'groupBy'} on {', '.join(valued)}")


def read_aggregation(frame: AnnotatedFrame, keys: Sequence[Any], exprs: Sequence[Any], *, distinct: bool = False) -> Aggregation:
    """Let Spark analyze the plain aggregation and sort its columns into aggregates with a rule
    and ``collect_list`` bags; anything else is an :class:`UnsupportedOperation`."""
    df = frame.with_annotations()
    key_cols = tuple(F.col(k) if isinstance(k, str) else k for k in keys)
    items: list[AggregateItem] = []
    if distinct:
        plain = df.select(*frame.columns).distinct()
    else:
        plain = df.groupBy(*key_cols).agg(*exprs)
        items = read_aggregate(plain) or []
        if not items:
            raise UnsupportedOperation("this aggregation", "groupBy(...).agg(count/sum/min/max/avg/collect_list)")
        items = items[len(key_cols):]
    aggs: list[tuple[int, Op, AggregateItem]] = []
    bags: list[int] = []
    for j, it in enumerate(items):
        if it.opaque is not None:
            raise UnsupportedOperation(
                f"aggregate {it.sql_name}(...) whose argument calls {it.opaque} (column {it.name!r})",
                f"compute the argument in a column first, df.withColumn('x', <the argument>), then aggregate "
                f"that column: .agg(F.{it.sql_name}('x'))")
        if it.function in SPARK_AGGREGATES and not it.distinct and not it.filtered and it.n_args == 1:
            aggs.append((j, SPARK_AGGREGATES[it.function], it))
        elif it.function == "CollectList" and not it.distinct and not it.filtered:
            bags.append(j)
        else:
            raise UnsupportedOperation(
                _unsupported(it),
                "count/sum/min/max/avg/collect_list over rows (use distinct() first for DISTINCT; "
                "compute expressions over aggregates in a following select); or " + BLACK_BOX_HINT,
            )
    return Aggregation(plain, key_cols, tuple(items), tuple(aggs), tuple(bags))


def _unsupported(it: AggregateItem) -> str:
    if it.function and it.function.startswith("Expression:"):
        return f"aggregate expression {it.name!r} (an expression over aggregate results)"
    return (f"aggregate {it.sql_name or it.function}" + (" DISTINCT" if it.distinct else "")
            + (" with FILTER" if it.filtered else "") + f" (column {it.name!r})")


def _group_id(seg: int, *, keyless: bool) -> Callable[[list[Column]], Column]:
    """The δ id of a group from its (normalized) key values: a content id; a keyless aggregate
    has one group even over no rows, so its id is static (and recorded in the segment)."""
    if keyless:
        return lambda cols: F.lit(positional(seg, 0))
    return lambda cols: node_hash_col(seg, *cols)


def members_table(frame: AnnotatedFrame, seg: int, agg: Aggregation,
                  group_id: Callable[[list[Column]], Column]) -> tuple[DataFrame, tuple[AggregateSpec, ...]]:
    """One row per input row: group ``g``, member ``m`` (its factors when it may be a product),
    the distinct non-constant aggregate arguments ``x<i>`` and the arguments' own v-nodes
    ``v<j>``; and the segment's aggregate specs."""
    layout = frame.layout
    in_keys = [normalized(k, t) for k, t in zip(agg.keys, agg.key_types)]
    cols: list[Column] = [group_id(in_keys).alias("g"), layout.member_col(seg).alias("m")]
    if layout.k > 1:
        cols += layout.factor_cols()
    arguments: list[str] = []
    specs: list[AggregateSpec] = []
    for _, op, it in agg.aggregates:
        arg_index = None
        if not it.literal:
            assert it.argument is not None
            if it.argument not in arguments:
                arguments.append(it.argument)
                cols.append(F.expr(it.argument).alias(f"x{len(arguments) - 1}"))
            arg_index = arguments.index(it.argument)
        source = it.argument.strip("`") if not it.literal and it.argument is not None else None
        vnode = None
        if source in layout.values:  # the argument has its own v-node: ⊗ pairs the member with it
            vnode = f"v{len(specs)}"
            cols.append(F.col(value_col(source)).alias(vnode))
        specs.append(AggregateSpec(op, arg_index, it.name, vnode))
    return frame.with_annotations().select(*cols), tuple(specs)


def group_output(frame: AnnotatedFrame, seg: int, agg: Aggregation, exprs: Sequence[Any],
                 group_id: Callable[[list[Column]], Column]) -> DataFrame:
    """Exactly the plain aggregation (``collect_list`` rebuilt to keep member provenance), with
    each group's δ id as its factor and each aggregate's v-node id."""
    out = _with_bags(frame, seg, agg, exprs) if agg.bags else agg.plain
    gid = group_id([normalized(F.col(n), t) for n, t in zip(agg.key_names, agg.key_types)])
    names = [it.name for _, _, it in agg.aggregates]
    return out.select("*", gid.alias(factor(0)), *[aggregate_id_col(gid, n).alias(value_col(name)) for n, name in enumerate(names)])


def _with_bags(frame: AnnotatedFrame, seg: int, agg: Aggregation, exprs: Sequence[Any]) -> DataFrame:
    """The aggregation with every ``collect_list`` collecting (value, member p-node) pairs, split
    into the bag column and its hidden member column."""
    staged = frame.with_annotations().withColumn("__lp_m", frame.layout.member_col(seg))
    agg_exprs = list(exprs)
    for j in agg.bags:
        argument = agg.items[j].argument
        if argument is None:
            raise UnsupportedOperation("collect_list without an argument", "collect_list(column)")
        arg = F.expr(argument)
        agg_exprs[j] = F.collect_list(F.when(arg.isNotNull(), F.struct(arg.alias("v"), F.col("__lp_m").alias("m")))).alias(agg.items[j].name)
    grouped = staged.groupBy(*agg.keys).agg(*agg_exprs)
    nkeys = len(agg.keys)
    out: list[Column] = []
    for pos, c in enumerate(agg.plain.columns):
        if pos - nkeys in agg.bags:
            out += [F.transform(F.col(c), lambda s: s["v"]).alias(c), F.transform(F.col(c), lambda s: F.struct(s["m"].alias("m"))).alias(bag_col(c))]
        else:
            out.append(F.col(c))
    return grouped.select(*out)
