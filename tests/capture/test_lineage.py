"""Column lineage read from the analyzed plan (lipspark.capture.lineage): expected answers written
by hand for one small operation each, the same for plain frames (deferred capture) and annotated
ones (eager capture)."""
from __future__ import annotations

import pytest
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lipspark import Tracker, black_box, cogroup
from lipspark.capture.lineage import column_lineage

R_ROWS = ([(1, "a", 10), (2, "a", 20), (3, "b", 30)], "id int, k string, v int")
S_ROWS = ([("a", "x", 1), ("b", "y", 2)], "k string, w string, n int")


@pytest.fixture(scope="module")
def stored(spark, tmp_path_factory):
    """R and S written as Parquet: the relations a module reads."""
    root = tmp_path_factory.mktemp("lineage")
    paths = {}
    for name, (rows, ddl) in {"R": R_ROWS, "S": S_ROWS}.items():
        paths[name] = str(root / name)
        spark.createDataFrame(rows, ddl).coalesce(1).write.parquet(paths[name])
    return paths


def _frames(spark, stored, annotated):
    r, s = spark.read.parquet(stored["R"]), spark.read.parquet(stored["S"])
    if annotated:
        t = Tracker(spark)
        r, s = t.annotate(r, "R", key=["id"]), t.annotate(s, "S", key=["k"])
    return r, s


def _lineage(stored, df):
    plain = df.with_annotations() if hasattr(df, "with_annotations") else df
    cols, dataset, opaque = column_lineage(plain, {stored["R"]: "R", stored["S"]: "S"})
    return ({c: sorted((f.relation, f.column, f.subtype) for f in fs) for c, fs in cols.items()},
            sorted((f.relation, f.column, f.subtype) for f in dataset), opaque)


SCORE = black_box(lambda k, v: float(v) / 2 if k else None, returnType=T.DoubleType(), name="score")

#: (operation, expected columns, expected INDIRECT fields), each worked out by hand
CASES = {
    "select and rename": (lambda r, s: r.select(F.col("k").alias("key"), "v"),
                          {"key": [("R", "k", "IDENTITY")], "v": [("R", "v", "IDENTITY")]}, []),
    "withColumn": (lambda r, s: r.withColumn("v2", F.col("v") * 2).drop("id"),
                   {"k": [("R", "k", "IDENTITY")], "v": [("R", "v", "IDENTITY")], "v2": [("R", "v", "TRANSFORMATION")]}, []),
    "filter and aggregate": (lambda r, s: r.filter(F.col("id") > 1).groupBy("k").agg(F.sum("v").alias("total"), F.count(F.lit(1)).alias("n")),
                             {"k": [("R", "k", "IDENTITY")], "total": [("R", "v", "AGGREGATION")], "n": []},
                             [("R", "id", "FILTER"), ("R", "k", "GROUP_BY")]),
    "join on a name": (lambda r, s: r.join(s, "k").select("id", "k", "w"),
                       {"id": [("R", "id", "IDENTITY")], "k": [("R", "k", "IDENTITY")], "w": [("S", "w", "IDENTITY")]},
                       [("R", "k", "JOIN"), ("S", "k", "JOIN")]),
    "value-level black box": (lambda r, s: r.select("id", SCORE("k", "v").alias("score")),
                              {"id": [("R", "id", "IDENTITY")], "score": [("R", "k", "TRANSFORMATION"), ("R", "v", "TRANSFORMATION")]}, []),
    "union by position": (lambda r, s: r.select("k", "v").union(s.select("k", F.col("n").alias("v"))),
                          {"k": [("R", "k", "IDENTITY"), ("S", "k", "IDENTITY")], "v": [("R", "v", "IDENTITY"), ("S", "n", "IDENTITY")]}, []),
    "distinct": (lambda r, s: r.select("k").distinct(), {"k": [("R", "k", "IDENTITY")]}, [("R", "k", "GROUP_BY")]),
    "a constant": (lambda r, s: r.select(F.lit("bid").alias("kind"), "k"), {"kind": [], "k": [("R", "k", "IDENTITY")]}, []),
    "an aggregate of an expression after a join": (
        lambda r, s: r.join(s, "k").groupBy("w").agg(F.max(F.col("v") + F.col("n")).alias("m")),
        {"w": [("S", "w", "IDENTITY")], "m": [("R", "v", "AGGREGATION"), ("S", "n", "AGGREGATION")]},
        [("R", "k", "JOIN"), ("S", "k", "JOIN"), ("S", "w", "GROUP_BY")]),
    # a cogroup's bag is collect_list(struct(id, k, v)): a field taken out of it comes from that column alone;
    # the key is coalesce(R.k, S.k) of a full outer join of the two groupings
    "a field out of a cogroup's bag": (
        lambda r, s: cogroup("k", A=r, B=s).select(F.col("A")[0]["v"].alias("v0"), "k"),
        {"v0": [("R", "v", "AGGREGATION")], "k": [("R", "k", "TRANSFORMATION"), ("S", "k", "TRANSFORMATION")]},
        [("R", "k", "GROUP_BY"), ("R", "k", "JOIN"), ("S", "k", "GROUP_BY"), ("S", "k", "JOIN")]),
}


@pytest.mark.parametrize("annotated", [False, True], ids=["plain (deferred)", "annotated (eager)"])
@pytest.mark.parametrize("case", list(CASES))
def test_column_lineage_of_one_operation(spark, stored, case, annotated):
    op, columns, dataset = CASES[case]
    r, s = _frames(spark, stored, annotated)
    got_columns, got_dataset, opaque = _lineage(stored, op(r, s))
    assert got_columns == columns
    assert got_dataset == dataset
    assert opaque == ()


def test_a_description_names_the_black_box_and_the_aggregate(spark, stored):
    r, _ = _frames(spark, stored, False)
    cols, _, _ = column_lineage(r.groupBy("k").agg(F.min(SCORE("k", "v")).alias("m")), {stored["R"]: "R"})
    assert {(f.column, f.subtype, f.description) for f in cols["m"]} == {("k", "AGGREGATION", "min, score"), ("v", "AGGREGATION", "min, score")}


def test_a_relation_lineage_cannot_see_through_is_named_not_guessed(spark, stored):
    r, _ = _frames(spark, stored, False)
    local = spark.createDataFrame([("a", 5)], "k string, extra int")
    cols, _, opaque = column_lineage(r.join(local, "k").select("v", "extra"), {stored["R"]: "R"})
    assert cols == {"v": (cols["v"][0],), "extra": ()}
    assert cols["v"][0].relation == "R" and len(opaque) == 1 and "extra" in opaque[0]
