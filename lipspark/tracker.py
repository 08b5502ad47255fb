"""The tracker: where annotated frames come from and where their provenance graph is built.

>>> from lipspark import Tracker, get_spark
>>> spark = get_spark()
>>> t = Tracker(spark)
>>> cars = t.annotate(spark.createDataFrame([("C1", "Accord")], ["CarId", "Model"]), "Cars", key=["CarId"])
>>> cars.columns
['CarId', 'Model']
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lipspark.columns import factor, is_hidden
from lipspark.errors import AnnotationError
from lipspark.frame import AnnotatedFrame
from lipspark.graph.builder import SEGMENT_SHIFT, GraphBuilder

if TYPE_CHECKING:  # pragma: no cover
    from lipspark.graph.model import ProvenanceGraph

__all__ = ["Tracker"]

_ROW_BITS = 28  # rows per partition < 2**28; partitions < 2**(SEGMENT_SHIFT - 28)


class Tracker:
    """Owns one provenance graph under construction.

    Parameters
    ----------
    spark
        The SparkSession module code runs on.
    builder
        Graph builder to record into (a fresh one by default; the workflow layer passes its own
        so that all invocations of an execution share one graph).
    """

    def __init__(self, spark: SparkSession, builder: GraphBuilder | None = None) -> None:
        self.spark = spark
        self.builder = builder or GraphBuilder()
        self._relations: set[str] = set()

    def annotate(self, df: DataFrame, relation: str, key: Sequence[str] | None = None) -> AnnotatedFrame:
        """Annotate a base relation: every row gets a token p-node.

        Tokens read ``Relation:key`` (e.g. ``Cars:C2``) when ``key`` is given, otherwise
        ``Relation:values`` with ``#n`` for the n-th duplicate. Token ids number the rows in
        the order of ``df``'s partitions, so ``df`` must have a deterministic order (local
        data, files; not the unordered result of a shuffle — write such a result first).
        """
        if not relation or not relation.replace("_", "").isalnum():
            raise AnnotationError(f"relation name must be alphanumeric (underscores allowed), got {relation!r}")
        hidden = [c for c in df.columns if is_hidden(c)]
        if hidden:
            raise AnnotationError(f"relation {relation!r} has reserved column names {hidden}; rename them")
        key = list(key or [])
        missing = [k for k in key if k not in df.columns]
        if missing:
            raise AnnotationError(f"relation {relation!r}: key columns {missing} not among its columns {df.columns}")
        seg = self.builder.allocate()
        mid = F.monotonically_increasing_id()
        ordinal = F.shiftleft(F.shiftright(mid, 33), _ROW_BITS).bitwiseOR(mid.bitwiseAND((1 << 33) - 1))
        token = F.lit(seg << SEGMENT_SHIFT).bitwiseOR(ordinal)
        annotated = df.withColumn(factor(0), token)
        stored = key or list(df.columns)
        self.builder.add(
            seg,
            "base",
            {"relation": relation, "key": key, "columns": stored},
            tuples=annotated.select(F.col(factor(0)).alias("id"), *stored),
        )
        self._relations.add(relation)
        return AnnotatedFrame(self, annotated, 1)

    def graph(self) -> "ProvenanceGraph":
        """Compute the recorded graph into memory (small graphs: tests, notebooks)."""
        from lipspark.graph.model import ProvenanceGraph

        return ProvenanceGraph.from_segments(self.builder.collect())

    def write(self, path: str) -> dict:
        """Write the recorded graph as Parquet under ``path``; returns the manifest."""
        return self.builder.write(path)
