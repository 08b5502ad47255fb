"""INTERSECT rule: each distinct tuple of both sides, δ of its rows on the left · δ on the right.

``intersect(other)`` is SQL's (distinct) INTERSECT: the distinct tuples present on both sides,
compared by position in the types Spark widens the two sides to, nulls equal to nulls (as Spark
compares them). A tuple ``t`` of the result derives from some left row of ``t`` and some right
row of ``t``: its provenance is ``δ(Σ left rows of t) · δ(Σ right rows of t)``. Each side is
de-duplicated by the aggregate rule (a δ node per distinct tuple, with an edge from each of its
rows) and the two are joined null-safely on every column; the row's two factors are the δ nodes.
``intersectAll`` (min(m, n) copies of a tuple) has no form in a semiring and stays refused.
"""
from __future__ import annotations

from functools import reduce
from typing import TYPE_CHECKING, Any, Sequence

from pyspark.sql import functions as F
from pyspark.sql import types as T

from lipspark.capture.layout import Layout
from lipspark.capture.rules._common import same_tracker
from lipspark.capture.rules.aggregate import distinct
from lipspark.errors import UnsupportedOperation
from lipspark.vocabulary.columns import factor, is_hidden

if TYPE_CHECKING:  # pragma: no cover
    from lipspark.frame import AnnotatedFrame

__all__ = ["intersect", "INTERSECT_ALL_WHY", "INTERSECT_ALL_INSTEAD"]

#: Why ``intersectAll`` is refused, and what to use.
INTERSECT_ALL_WHY = "min(m, n) copies of a tuple: no semiring operation takes the smaller of two multiplicities"
INTERSECT_ALL_INSTEAD = ("intersect(other) for the distinct tuples of both sides (δ of each side's rows), or an inner join "
                         "on every column (m·n copies of a tuple, each the product of its two rows)")


def intersect(left: AnnotatedFrame, other: Any) -> AnnotatedFrame:
    """``left.intersect(other)``: each distinct tuple of both sides, ``δ(Σ left rows) · δ(Σ right rows)``."""
    right = same_tracker(left, other, "intersect")
    for side in (left, right):
        if side.layout.bags:
            raise UnsupportedOperation(f"intersect over nested bag column(s) {list(side.layout.bags)} whose members have provenance",
                                       "explode the bag first, or drop the column before intersecting")
    plain = left.to_plain().intersect(right.to_plain())  # Spark's own checks; the result's names and types
    types = [f.dataType for f in plain.schema.fields]
    ldf = distinct(_positional(left, "_l", types)).with_annotations()
    rdf = distinct(_positional(right, "_r", types)).with_annotations()
    rdf = rdf.select(*[F.col(f"_r{i}") for i in range(len(types))], F.col(factor(0)).alias(factor(1)))
    same = reduce(lambda a, b: a & b, [F.col(f"_l{i}").eqNullSafe(F.col(f"_r{i}")) for i in range(len(types))])
    out = ldf.join(rdf, same, "inner").select(*[F.col(f"_l{i}").alias(c) for i, c in enumerate(plain.columns)],
                                              F.col(factor(0)), F.col(factor(1)))
    return left.derive(out, Layout(2))


def _positional(frame: AnnotatedFrame, prefix: str, types: Sequence[T.DataType]) -> AnnotatedFrame:
    """``frame``'s columns named ``<prefix>0, <prefix>1, …`` by position (names may repeat after a
    join on a condition) and cast to ``types``, with its factors only."""
    df = frame.with_annotations()
    position = iter(range(len(types)))
    named = df.toDF(*[c if is_hidden(c) else f"{prefix}{next(position)}" for c in df.columns])
    cols = [F.col(f"{prefix}{i}").cast(t).alias(f"{prefix}{i}") for i, t in enumerate(types)]
    return frame.derive(named.select(*cols, *frame.layout.factor_cols()), Layout(frame.layout.k))
