"""The paper's vocabulary, shared by every layer: operators, node ids, segment records and
aggregate semantics. Pure Python (numpy only): it imports nothing else of lipspark but
:mod:`lipspark.errors`, and never pyspark (the Spark forms of the id layout import it when
called).

>>> from lipspark.vocabulary import Op, aggregate
>>> Op.parse("⊗").name, aggregate(Op.COUNT, [None, 1, 2])
('TENSOR', 2)
"""
from __future__ import annotations

from lipspark.vocabulary.aggregates import SPARK_AGGREGATES, UNKNOWN, aggregate, aggregate_op, arithmetic, is_null
from lipspark.vocabulary.ops import AGGREGATE_OPS, ARITHMETIC_OPS, BOUNDARY_OPS, Op
from lipspark.vocabulary.segments import (
    BASE_ID,
    BOUNDARY_ROLES,
    AGGREGATES_VERSION,
    FORMAT_VERSION,
    AggregateSpec,
    BaseSegment,
    BoundarySegment,
    Context,
    FileRef,
    GroupSegment,
    InvocationSegment,
    MonusSegment,
    PScheme,
    RelationDescriptor,
    RowNodeSegment,
    Segment,
)

__all__ = [
    "Op", "AGGREGATE_OPS", "ARITHMETIC_OPS", "BOUNDARY_OPS", "aggregate", "aggregate_op", "arithmetic", "is_null", "SPARK_AGGREGATES", "UNKNOWN",
    "FORMAT_VERSION", "AGGREGATES_VERSION", "BOUNDARY_ROLES", "BASE_ID", "FileRef", "PScheme", "RelationDescriptor", "Context", "AggregateSpec",
    "Segment", "BaseSegment", "GroupSegment", "RowNodeSegment", "InvocationSegment", "BoundarySegment",
    "MonusSegment",
]
