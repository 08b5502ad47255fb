"""Projections see what plain Spark sees: `*` means the visible columns, names match as Spark
matches them, and an expression that would read lipspark's hidden columns is refused."""
from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from lipspark import Tracker, UnsupportedOperation
from tests.test_frame import R, S, check, polys
from tests.util import local_frame


@pytest.mark.parametrize("op", [
    lambda R: R.select(F.col("*")),
    lambda R: R.select(F.expr("*")),
    lambda R: R.selectExpr("*", "v + 1 as w"),
    lambda R: R.select("*", (F.col("v") * 2).alias("v2")),
])
def test_a_bare_star_is_the_visible_columns(spark, op):
    t, ann = check(spark, op, R=R)
    _, p = polys(t, ann)
    assert sorted(str(v[0]) for v in p.values()) == ["R:1", "R:2", "R:3", "R:4", "R:5"]


def test_a_qualified_star_after_a_join(spark):
    t, ann = check(spark, lambda R, S: R.alias("r").join(S.alias("s"), F.col("r.k") == F.col("s.k")).select("r.*", "s.w"), R=R, S=S)
    _, p = polys(t, ann)
    assert sorted(str(v[0]) for v in p.values()) == ["R:1·S:10", "R:2·S:10", "R:3·S:11", "R:3·S:12", "R:4·S:11", "R:4·S:12"]


@pytest.mark.parametrize("op", [
    lambda R: R.select(F.to_json(F.struct("*")).alias("j")),
    lambda R: R.select(F.concat_ws("|", F.col("*")).alias("j")),
    lambda R: R.select(F.xxhash64("*").alias("h")),
    lambda R: R.withColumn("h", F.sha2(F.to_json(F.struct("*")), 256)),
])
def test_an_expression_over_star_is_refused_not_computed_over_the_annotations(spark, op):
    t = Tracker(spark)
    r = t.annotate(local_frame(spark, *R[:2]), "R", key=["id"])
    with pytest.raises(UnsupportedOperation, match=r"an expression over \*.*Instead: name the columns"):
        op(r)
    op(local_frame(spark, *R[:2])).collect()  # plain Spark runs it: the refusal is lipspark's


@pytest.mark.parametrize("op", [
    lambda R: R.withColumn("K", F.upper("k")),
    lambda R: R.withColumnRenamed("K", "kk"),
    lambda R: R.withColumnsRenamed({"ID": "ident"}),
    lambda R: R.drop("V"),
    lambda R: R.drop("K", "nothing"),
])
def test_column_names_match_as_spark_matches_them(spark, op):
    t, ann = check(spark, op, R=R)  # same columns (names and order) and rows as plain Spark
    _, p = polys(t, ann)
    assert sorted(str(v[0]) for v in p.values()) == ["R:1", "R:2", "R:3", "R:4", "R:5"]


@pytest.mark.parametrize("op", [
    lambda R, S: R.join(S, R["k"] == S["k"]).select("*"),
    lambda R, S: R.join(S, R["k"] == S["k"]).select(F.col("*")),
    lambda R, S: R.join(S, R["k"] == S["k"]).selectExpr("*", "id + sid as t"),
    lambda R, S: R.join(S, R["k"] == S["k"]).select("*").distinct(),
])
def test_a_star_over_both_sides_of_a_condition_join_with_a_shared_name(spark, op):
    t, ann = check(spark, op, R=R, S=S)  # plain Spark keeps both `k` columns, by position
    assert ann.columns[:6] == ["id", "k", "v", "sid", "k", "w"]
    _, p = polys(t, ann)
    assert sorted(str(v[0]).removeprefix("δ(").removesuffix(")") for v in p.values()) == [
        "R:1·S:10", "R:2·S:10", "R:3·S:11", "R:3·S:12", "R:4·S:11", "R:4·S:12"]
