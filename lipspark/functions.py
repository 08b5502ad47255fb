"""Helpers module code imports so it runs unchanged with provenance on or off.

The aggregate functions are PySpark's own (the rewrite recognises them in the analyzed plan);
``cogroup`` and ``black_box`` dispatch on whether they get plain DataFrames or annotated
frames.

>>> from lipspark import functions as lf
>>> lf.count is not None and callable(lf.cogroup)
True
"""
from __future__ import annotations

from functools import reduce
from typing import Any, Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
import builtins

from pyspark.sql.functions import avg, col, collect_list, count, explode, explode_outer, lit, max, mean, min, sum

from lipspark.blackbox import black_box
from lipspark.columns import bag_col, factor, value_col
from lipspark.errors import AnnotationError
from lipspark.frame import AnnotatedFrame, _normalized
from lipspark.graph.builder import node_hash

__all__ = [
    "avg", "col", "collect_list", "count", "explode", "explode_outer", "lit", "max", "mean", "min", "sum",
    "black_box", "cogroup",
]


def _cogroup_frames(keys: list[str], relations: dict[str, DataFrame], member: dict[str, Any] | None = None) -> DataFrame:
    grouped = []
    for name, df in relations.items():
        data = F.struct(*[F.col(c) for c in df.columns if not c.startswith("__lp_")])
        item = F.struct(data.alias("d"), member[name].alias("p")) if member else data
        grouped.append(df.groupBy(*keys).agg(F.collect_list(item).alias(name)))
    joined = reduce(lambda a, b: a.join(b, keys, "full_outer"), grouped)
    out = []
    for name in relations:
        dtype = joined.schema[name].dataType
        filled = F.coalesce(F.col(name), F.array().cast(dtype))
        if member:
            out += [F.transform(filled, lambda s: s["d"]).alias(name), F.transform(filled, lambda s: s["p"]).alias(bag_col(name))]
        else:
            out.append(filled.alias(name))
    return joined.select(*keys, *out)


def cogroup(key: "str | Sequence[str]", **relations: Any) -> Any:
    """Pig's COGROUP: one row per key value with one nested bag per relation.

    Parameters
    ----------
    key
        Column name(s) present in every relation.
    **relations
        ``Name=frame``; the output has the key columns, then a column ``Name`` per relation
        holding the bag (array of row structs) of that relation's rows with the key value.

    With annotated frames, each output row's p-node is δ over every member of every bag, and
    the members keep their own provenance (they reappear when the bag is exploded).
    """
    keys = [key] if isinstance(key, str) else list(key)
    if not relations:
        raise AnnotationError("cogroup needs at least one relation: cogroup('Model', Requests=req, Cars=cars)")
    for name, df in relations.items():
        missing = [k for k in keys if k not in df.columns]
        if missing:
            raise AnnotationError(f"cogroup: relation {name!r} lacks key columns {missing}; it has {list(df.columns)}")
    frames = list(relations.values())
    if all(isinstance(f, DataFrame) for f in frames):
        return _cogroup_frames(keys, relations)
    if not all(isinstance(f, AnnotatedFrame) for f in frames):
        raise AnnotationError("cogroup got a mix of plain DataFrames and annotated frames; annotate every input or none")
    first = frames[0]
    for f in frames[1:]:
        first._same_tracker(f, "cogroup")
    tracker = first.tracker
    seg = tracker.builder.allocate()
    k = builtins.max(f._k for f in frames)
    key_types = [first._df.schema[kname].dataType for kname in keys]
    members, member_structs = [], {}
    for name, f in relations.items():
        tracker.share(f._df)
        pad = [F.lit(0).cast("long").alias(factor(i)) for i in range(f._k, k)] if k > 1 else []
        fcols = f._factor_cols() if k > 1 else []
        in_keys = [_normalized(F.col(kn), t) for kn, t in zip(keys, key_types)]
        members.append(f._df.select(node_hash(seg, *in_keys).alias("g"), f._member_id(seg).alias("m"), *fcols, *pad))
        member_structs[name] = F.struct(f._member_id(seg).alias("m"), *[F.col(value_col(v)).alias(v) for v in f._values])
    out = _cogroup_frames(keys, {n: f._df for n, f in relations.items()}, member_structs)
    out = out.withColumn(factor(0), node_hash(seg, *[_normalized(F.col(kn), t) for kn, t in zip(keys, key_types)]))
    tracker.builder.add(seg, "group", {"label": "δ", "k": k, "aggregates": []}, members=reduce(DataFrame.union, members))
    return AnnotatedFrame(tracker, out, 1, bags=list(relations))
