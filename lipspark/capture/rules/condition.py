"""Conditions over values: a filter, a join or a grouping that reads a value with a v-node.

A selection keeps each row's annotation (Lipstick §3.2). When its condition reads a value an
aggregate or a black box computed — a HAVING-style ``filter(round(total) > 3)``, a join on an
aggregate's value, a group-by on a count — *which* rows pass depends on that value, and a
what-if that changes it may keep rows the re-run drops, or miss rows it adds. A filter that
compares arithmetic over values (``total > 300``, ``amount == best``) is decided per row
instead (:mod:`~lipspark.capture.rules.guard`); for the others this
rule records one CONDITION v-node per such operation, labelled with the condition, with an edge
from every v-node the condition read over all its input rows (kept or not). Deletion
propagation reports the node as unknown when one of those values changes, so a what-if says
that the rows the condition decided may differ instead of keeping them silently
(:mod:`lipspark.query.deletion`). Nothing is recorded when the condition reads no v-node.

>>> valued_columns(["Amount", "Dealer"], ("Amount", "Best"))
['Amount']
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lipspark.capture.plan import condition_sql, join_references
from lipspark.vocabulary import Op, RowNodeSegment
from lipspark.vocabulary.columns import value_col
from lipspark.vocabulary.ids import segment_node

if TYPE_CHECKING:  # pragma: no cover
    from lipspark.frame import AnnotatedFrame
    from lipspark.tracker import Tracker

__all__ = ["valued_columns", "record_condition", "record_join_condition"]


def valued_columns(read: Iterable[str], values: Sequence[str]) -> list[str]:
    """The columns among ``read`` that carry v-nodes (``values``: a layout's valued columns)."""
    have = set(values)
    return sorted({c for c in read if c in have})


def record_condition(tracker: "Tracker", inputs: Sequence[tuple[DataFrame, Sequence[str]]], label: str) -> int | None:
    """Record the CONDITION v-node of one operation: ``inputs`` are the annotated frames it
    read (one, or a join's two sides) with their valued columns the condition reads. Returns
    the node's id (``None``: the condition read no v-node, nothing recorded)."""
    parts = []
    for df, columns in inputs:
        if columns:
            ids = F.explode(F.array(*[F.col(value_col(c)) for c in columns])).alias("c")
            parts.append(df.select(ids))
    if not parts:
        return None
    read = parts[0]
    for p in parts[1:]:
        read = read.unionAll(p)
    seg = tracker.builder.allocate()
    children = read.where(F.col("c").isNotNull()).distinct().agg(F.collect_list("c").alias("children"))
    nodes = children.select(
        F.lit(segment_node(seg)).cast("bigint").alias("id"),
        F.coalesce(F.col("children"), F.array().cast("array<bigint>")).alias("children"),
        F.lit(None).cast("string").alias("value"),
    )
    tracker.builder.record(RowNodeSegment(seg, tracker.context, label=label, op=Op.CONDITION), nodes=nodes)
    return segment_node(seg)


def record_join_condition(left: "AnnotatedFrame", right: "AnnotatedFrame", joined: DataFrame,
                          names: Iterable[str] | None, kind: str = "join") -> None:
    """A join (inner or semi) whose condition reads values with v-nodes (``amount == best``, a
    join on an aggregate): a CONDITION node over the values of both sides it read. ``names``
    are the join's key columns, ``None`` for a condition (read from ``joined``'s plan — only
    when a side has values, so other joins pay no plan walk)."""
    if not left.layout.values and not right.layout.values:
        return
    read = set(names) if names else set(join_references(joined))
    sides = [(left.with_annotations(), valued_columns(read, left.layout.values)),
             (right.with_annotations(), valued_columns(read, right.layout.values))]
    if any(cols for _, cols in sides):
        record_condition(left.tracker, sides, f"{kind} on {condition_sql(joined) or ', '.join(sorted(read))}")
