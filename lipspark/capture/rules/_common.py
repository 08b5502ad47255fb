"""What the rewrite rules share: argument normalization, key normalization, tracker checks."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

from lipspark.errors import AnnotationError

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, DataFrame
    from pyspark.sql import types as T

    from lipspark.capture.layout import Layout

    from lipspark.frame import AnnotatedFrame

__all__ = ["BLACK_BOX_HINT", "NO_VALUE", "align_left", "align_right", "as_list", "normalized", "same_tracker", "value_json"]

#: The advice every unsupported operation ends with.
BLACK_BOX_HINT = "wrap the computation in lipspark.black_box(fn, frame, ...) to keep coarse provenance"


class _NoValue:
    def __repr__(self) -> str:
        return "<no value>"


#: An argument left out (``replace(to_replace)`` with a dict, where ``None`` is a value).
NO_VALUE: Any = _NoValue()


def as_list(cols: Iterable[Any]) -> list[Any]:
    """PySpark's argument convention: ``f(a, b)`` and ``f([a, b])`` mean the same.

    >>> as_list(["a", ["b", "c"], ("d",)])
    ['a', 'b', 'c', 'd']
    """
    out: list[Any] = []
    for c in cols:
        if isinstance(c, (list, tuple)):
            out.extend(c)
        else:
            out.append(c)
    return out


def normalized(col: "Column", dtype: "T.DataType") -> "Column":
    """A key value as Spark groups it: -0.0 and 0.0 are one group (content ids must agree)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    if isinstance(dtype, (T.FloatType, T.DoubleType)):
        return F.when(col == 0, F.lit(0.0).cast(dtype)).otherwise(col)
    return col


def unique_columns(frame: "AnnotatedFrame", what: str) -> None:
    """Refuse ``what`` when ``frame`` has two visible columns of one name (as Spark compares names):
    its rows are recorded by name."""
    from lipspark.errors import UnsupportedOperation

    visible = frame.columns if frame.tracker.case_sensitive else [c.lower() for c in frame.columns]
    twice = sorted({c for c in visible if visible.count(c) > 1})
    if twice:
        raise UnsupportedOperation(f"{what} whose left side has two columns named {twice[0]!r}",
                                   "rename one of them first (withColumnRenamed or toDF)")


def same_tracker(frame: "AnnotatedFrame", other: Any, op: str) -> "AnnotatedFrame":
    """``other`` if it is an annotated frame of ``frame``'s tracker, else a clear error: frames of
    different trackers belong to different graphs (another invocation, another run)."""
    from pyspark.sql import DataFrame

    if isinstance(other, DataFrame):
        raise AnnotationError(
            f"{op}: the other relation is a plain DataFrame; annotate it first "
            "(tracker.annotate(df, 'Name', key=[...])) so its rows have provenance"
            + ("; a query of the SparkSession's spark.sql reads the views without their annotations: "
               "query them with annotated_df.sparkSession.sql(...)" if frame.tracker.views else "")
        )
    if not isinstance(other, type(frame)):  # the rules never import the frame that calls them
        raise TypeError(f"{op}: expected an annotated frame, got {type(other).__name__}")
    if other.tracker is not frame.tracker:
        raise AnnotationError(f"{op}: the two frames belong to different trackers (different provenance graphs)")
    return other


def align_right(left: "AnnotatedFrame", right: "AnnotatedFrame", keys: set[str]) -> "tuple[DataFrame, Layout]":
    """The right side with its factors renumbered after the left's, and the joined layout.

    The annotations of a column name both sides have (other than a join key) are dropped: the
    name becomes ambiguous."""
    from pyspark.sql import functions as F

    from lipspark.capture.layout import Layout
    from lipspark.vocabulary.columns import bag_col, factor, value_col

    ll, rl = left.layout, right.layout
    clash = (set(left.columns) & set(right.columns)) - keys
    rdf = right.with_annotations()
    cols: "list[Column]" = [rdf[c] for c in right.columns]
    cols += [F.col(factor(i)).alias(factor(ll.k + i)) for i in range(rl.k)]
    values = [v for v in ll.values if v not in clash]
    bags = [b for b in ll.bags if b not in clash]
    for v in rl.values:
        if v not in clash and v not in keys:
            cols.append(F.col(value_col(v)).alias(value_col(v)))
            values.append(v)
    for b in rl.bags:
        if b not in clash and b not in keys:
            cols.append(F.col(bag_col(b)).alias(bag_col(b)))
            bags.append(b)
    return rdf.select(*cols), Layout(ll.k + rl.k, tuple(values), tuple(bags))


def align_left(left: "AnnotatedFrame", right: "AnnotatedFrame", keys: set[str]) -> "DataFrame":
    """The left side of a join with ``right``, without the v-nodes and bags of a column name both
    sides have (other than a join key): :func:`align_right` leaves them out of the joined layout."""
    from lipspark.vocabulary.columns import bag_col, value_col

    clash = (set(left.columns) & set(right.columns)) - keys
    hidden = [value_col(c) for c in left.layout.values if c in clash] + [bag_col(b) for b in left.layout.bags if b in clash]
    df = left.with_annotations()
    return df.drop(*hidden) if hidden else df


def value_json(col: "Column", dtype: "T.DataType") -> "Column":
    """A value as the JSON a graph stores (:func:`lipspark.graph.expand.json_value` reads it):
    ``{"v": value}``, or for a floating-point one its text, ``{"d": "NaN"}``, which keeps NaN
    and the infinities (JSON has no spelling for them)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    if isinstance(dtype, (T.FloatType, T.DoubleType)):
        return F.to_json(F.struct(col.cast("string").alias("d")))
    return F.to_json(F.struct(col.alias("v")))
