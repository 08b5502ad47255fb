"""Cogroup rule: Pig's COGROUP, one row per key value with one nested bag per relation.

With annotated frames each output row's p-node is δ over every member of every bag (a group
segment keyed by the key values), and the bags keep their members' p-nodes (and the v-nodes of
their value columns) in the hidden bag columns, so they reappear when the bag is exploded.
"""
from __future__ import annotations

from functools import reduce
from typing import TYPE_CHECKING, Mapping, Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from lipspark.capture.layout import Layout
from lipspark.vocabulary.columns import bag_col, factor, is_hidden, value_col
from lipspark.capture.rules._common import normalized, same_tracker
from lipspark.vocabulary import GroupSegment, Op
from lipspark.vocabulary.ids import node_hash_col

if TYPE_CHECKING:  # pragma: no cover
    from lipspark.frame import AnnotatedFrame

__all__ = ["cogroup_plain", "cogroup_annotated"]


def cogroup_plain(keys: Sequence[str], relations: Mapping[str, DataFrame], member: Mapping[str, Column] | None = None) -> DataFrame:
    """The cogroup of plain DataFrames: key columns, then per relation the (possibly empty) bag
    of its rows' visible columns. With ``member``, each bag element also carries that column
    (the member's annotation), split off into the relation's hidden bag column."""
    grouped = []
    for name, df in relations.items():
        data = F.struct(*[F.col(c) for c in df.columns if not is_hidden(c)])
        item = F.struct(data.alias("d"), member[name].alias("p")) if member else data
        grouped.append(df.groupBy(*keys).agg(F.collect_list(item).alias(name)))
    joined = reduce(lambda a, b: a.join(b, list(keys), "full_outer"), grouped)
    out: list[Column] = []
    for name in relations:
        filled = F.coalesce(F.col(name), F.array().cast(joined.schema[name].dataType))
        if member:
            out += [F.transform(filled, lambda s: s["d"]).alias(name), F.transform(filled, lambda s: s["p"]).alias(bag_col(name))]
        else:
            out.append(filled.alias(name))
    return joined.select(*keys, *out)


def cogroup_annotated(keys: Sequence[str], relations: Mapping[str, AnnotatedFrame]) -> AnnotatedFrame:
    """The cogroup of annotated frames: δ over all members per key value, members kept in the bags."""
    frames = list(relations.values())
    first = frames[0]
    for f in frames[1:]:
        same_tracker(first, f, "cogroup")
    tracker = first.tracker
    seg = tracker.builder.allocate()
    k = max(f.layout.k for f in frames)
    key_types = [first.with_annotations().schema[name].dataType for name in keys]

    def group_id() -> Column:
        return node_hash_col(seg, *[normalized(F.col(kn), t) for kn, t in zip(keys, key_types)])

    members, structs = [], {}
    for name, f in relations.items():
        df = tracker.share(f.with_annotations())
        members.append(df.select(group_id().alias("g"), f.layout.member_col(seg).alias("m"), *f.layout.padded_factor_cols(k)))
        structs[name] = F.struct(f.layout.member_col(seg).alias("m"), *[F.col(value_col(v)).alias(v) for v in f.layout.values])
    out = cogroup_plain(keys, {n: f.with_annotations() for n, f in relations.items()}, structs)
    out = out.withColumn(factor(0), group_id())
    tracker.builder.record(GroupSegment(seg, tracker.context, op=Op.DELTA, label=Op.DELTA.label, k=k, aggregates=()),
                           members=reduce(DataFrame.union, members))
    return first.derive(out, Layout(1, bags=tuple(relations)))
