"""Semi join rule: each left row that has a partner, times δ of the sum of its partners.

``join(other, on, how="semi" | "leftsemi" | "left_semi")`` keeps each left row with at least one
partner on the right, as often as the left has it (as Spark does), and no column of the right.
Such a row needs itself and *some* partner, so its provenance is ``r · δ(Σ partners)`` (δ,
duplicate elimination: Amsterdamer, Deutch and Tannen 2011; Lipstick §2.3). The row keeps its
factors, value and bag columns and gains one factor, a δ node:

* on column names, one δ node per distinct key of the right side with an edge from each right
  row of that key (:func:`~lipspark.capture.rules.aggregate.distinct` of the right's key
  columns), then an inner join of the left with those keys. Keys are compared as Spark compares
  them: in the type Spark casts both sides to when their types differ; a null key never matches;
* on a condition, one δ node per distinct left row (data and annotation) with an edge from each
  right row the condition pairs it with: an inner join of the distinct left rows with the right
  side, recorded as a group segment.

A semi join without ``on`` is refused: name the keys or give a condition.
"""
from __future__ import annotations

from functools import reduce
from typing import TYPE_CHECKING, Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lipspark.capture.layout import Layout
from lipspark.capture.plan import read_join_key_types
from lipspark.capture.rules._common import unique_columns
from lipspark.capture.rules.aggregate import distinct
from lipspark.capture.rules.condition import record_join_condition
from lipspark.errors import AnnotationError, UnsupportedOperation
from lipspark.vocabulary import GroupSegment, Op
from lipspark.vocabulary.columns import factor
from lipspark.vocabulary.ids import node_hash_col

if TYPE_CHECKING:  # pragma: no cover
    from lipspark.frame import AnnotatedFrame

__all__ = ["SEMI", "semi_join"]

#: The ``how`` of a semi join, lower-cased without underscores (``left_semi`` is ``leftsemi``).
SEMI = ("semi", "leftsemi")

# temporary columns of the rule (never in an annotated frame's columns)
_ROW, _MEMBER, _RIGHT_FACTOR = "__lp_row", "__lp_member", "__lp_rf"


def semi_join(left: AnnotatedFrame, right: AnnotatedFrame, on: Any, how: str) -> AnnotatedFrame:
    """``left.join(right, on, how)`` for a semi ``how``: the left rows with a partner, each
    ``r · δ(Σ partners)``; ``on`` is column names or a condition (a Column or a list of them)."""
    if on is None or (isinstance(on, (list, tuple)) and not on):
        raise UnsupportedOperation(f"join(how={how!r}) without a condition",
                                   "name the key columns (on=['k']) or give a condition (on=F.col('x') < F.col('y'))")
    names = [on] if isinstance(on, str) else list(on) if isinstance(on, (list, tuple)) and all(isinstance(c, str) for c in on) else None
    probe = left.to_plain().join(right.to_plain(), on, "left_semi")  # Spark's own checks, its key types, the condition
    record_join_condition(left, right, probe, names, "semi join")
    if names:
        return _on_names(left, right, names, probe)
    condition = reduce(lambda a, b: a & b, on) if isinstance(on, (list, tuple)) else on
    return _on_condition(left, right, condition)


def _on_names(left: AnnotatedFrame, right: AnnotatedFrame, names: list[str], probe: DataFrame) -> AnnotatedFrame:
    """One δ per distinct key of the right side (its rows as members), joined to the left;
    ``probe`` is the plain semi join (its plan holds the types Spark compares the keys in)."""
    types = read_join_key_types(probe)
    if types is None or len(types) != len(names):
        raise AnnotationError(f"internal: cannot read the key types of a semi join on {names}")
    rdf = right.with_annotations()
    keys = rdf.select(*[rdf[n].cast(t).alias(n) for n, t in zip(names, types)], *right.layout.factor_cols())
    keys = keys.filter(reduce(lambda a, b: a & b, [F.col(n).isNotNull() for n in names]))  # a null key has no partner
    groups = distinct(right.derive(keys, Layout(right.layout.k)))
    k = left.layout.k
    gdf = groups.with_annotations().select(*names, F.col(factor(0)).alias(factor(k)))
    # each left row meets at most one group: groups are distinct keys, compared as the join compares them
    out = left.with_annotations().join(gdf, names, "inner")
    return left.derive(out, left.layout.with_(k=k + 1))


def _on_condition(left: AnnotatedFrame, right: AnnotatedFrame, condition: Column) -> AnnotatedFrame:
    """One δ per distinct left row over the right rows the condition pairs it with."""
    unique_columns(left, "a semi join on a condition")
    tracker = left.tracker
    seg = tracker.builder.allocate()
    ldf, rdf = tracker.share(left.with_annotations()), tracker.share(right.with_annotations())
    rows = ldf.withColumn(_ROW, _row_id(seg, ldf))
    rk = right.layout.k
    # the right's member and factors under names of their own (a self join renames the right's columns)
    rx = rdf.withColumns({_MEMBER: right.layout.member_col(seg),
                          **({f"{_RIGHT_FACTOR}{i}": F.col(factor(i)) for i in range(rk)} if rk > 1 else {})})
    pairs = rows.dropDuplicates([_ROW]).join(rx, condition, "inner")
    members = pairs.select(F.col(_ROW).alias("g"), F.col(_MEMBER).alias("m"),
                           *([F.col(f"{_RIGHT_FACTOR}{i}").alias(factor(i)) for i in range(rk)] if rk > 1 else []))
    tracker.builder.record(GroupSegment(seg, tracker.context, op=Op.DELTA, label=Op.DELTA.label, k=rk), members=members)
    out = rows.join(rdf, condition, "left_semi").withColumnRenamed(_ROW, factor(left.layout.k))
    return left.derive(out, left.layout.with_(k=left.layout.k + 1))


def _row_id(seg: int, df: DataFrame) -> Column:
    """A content id of a row, data and annotation: equal rows (which the condition cannot tell
    apart) share it. Spark's hash does not tell -0.0 from 0.0, which a condition might, so
    floating-point values are hashed as text as well."""
    exact: list[Column] = []
    for f in df.schema.fields:
        if isinstance(f.dataType, (T.FloatType, T.DoubleType)):
            exact.append(df[f.name].cast("string"))
        elif _has_float(f.dataType):
            exact.append(F.to_json(F.struct(df[f.name])))
    return node_hash_col(seg, F.lit("semi join row"), *[df[c] for c in df.columns], *exact)


def _has_float(dtype: T.DataType) -> bool:
    if isinstance(dtype, (T.FloatType, T.DoubleType)):
        return True
    if isinstance(dtype, T.ArrayType):
        return _has_float(dtype.elementType)
    if isinstance(dtype, T.MapType):
        return _has_float(dtype.keyType) or _has_float(dtype.valueType)
    if isinstance(dtype, T.StructType):
        return any(_has_float(f.dataType) for f in dtype.fields)
    return False
