"""The operations of the version-1 graph fixture (tests/fixtures/graph-v1), kept apart from the
tests so that the lipspark of version 1 can import them.

The fixture was written on 2026-11-23 by lipspark at commit 91eda0e (the last writer of graph
format version 1) in a ``get_spark()`` session (local[2])::

    t = Tracker(spark); record(spark, t); t.write("tests/fixtures/graph-v1")

then Spark's ``_SUCCESS`` and ``.crc`` files were deleted and a ``.keep`` file put into the
directories of the two segments without rows (git keeps no empty directory).
"""
from __future__ import annotations

R = ([(1, "a", 10.0, 1), (2, "a", None, 2), (3, "b", 30.0, 1), (4, "b", float("nan"), 2), (5, "c", 50.0, 1)],
     "id int, k string, v double, s int")
S = ([(1, "x"), (2, "y"), (1, "z")], "s int, w string")


def _double(v):
    return None if v is None else 2.0 * v


def record(spark, t):
    """The operations of the fixture: typed arguments of several types (double, int, string),
    two factors per member, a value-level black box whose v-node is a member value, a group-by
    and a keyless aggregate over no rows."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from lipspark.blackbox import black_box

    r = t.annotate(spark.createDataFrame(*R), "R", key=["id"])
    s = t.annotate(spark.createDataFrame(*S), "S")
    outs = [
        r.groupBy("k").agg(F.sum("v").alias("sum"), F.count("v").alias("n"), F.min("s").alias("lo"), F.max("k").alias("hi")),
        r.select("k").distinct(),
        r.join(s, "s").groupBy("w").agg(F.sum("v").alias("t"), F.count(F.lit(1)).alias("n")),
        r.select("k", black_box(_double, returnType=T.DoubleType(), name="Max")("v").alias("d")).groupBy("k").agg(F.sum("d").alias("t")),
        r.filter(F.col("id") > 99).groupBy("k").agg(F.count(F.lit(1)).alias("n")),
        r.filter(F.col("id") > 99).agg(F.sum("v").alias("t")),
    ]
    for out in outs:
        out.collect()
