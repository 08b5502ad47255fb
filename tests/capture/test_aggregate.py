"""Aggregations: a keyless aggregate's row over no input is annotated 1; refusals name the user's
function and say what to write instead; duplicate column names de-duplicate as in plain Spark."""
from __future__ import annotations

import pytest
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lipspark import Tracker, UnsupportedOperation
from lipspark.semiring import COUNTING, ONE, evaluate
from tests import reference as ref
from tests.test_frame import R, S, check, polys


def test_a_keyless_aggregate_over_no_rows_is_one_row_annotated_1(spark):
    t, ann = check(spark, lambda R: R.filter(F.lit(False)).agg(F.count("*"), F.sum("v")), R=R)
    (row,) = ann.collect_annotated()
    assert tuple(row.row) == (0, None)  # what PySpark returns
    g = t.graph()
    assert g.polynomial(row.annotation) == ONE  # SQL returns the row whatever the input: 1, not δ(0) = 0
    count, total = (g.value(row.annotation, c) for c in row.row.asDict())
    assert evaluate(count, COUNTING) == 0 and g.node(row.annotation.values["count(1)"])["value"] == 0
    assert evaluate(total, COUNTING) is None
    # the reference evaluator agrees: one row, annotation 1, Count of nothing
    empty = ref.group_by(ref.filter_rows(ref.base("R", [{"id": 1, "v": 2}], ["id"]), lambda d: False), [],
                         [("n", "count", None), ("s", "sum", "v")])
    assert [(r.data, r.ann) for r in empty] == [({"n": 0, "s": None}, 1)]


def test_a_keyless_aggregate_over_no_rows_downstream(spark):
    # joined, unioned and de-duplicated like any row: a factor 1, a member 1 of the δ's sum
    fn = lambda R: R.crossJoin(R.filter(F.lit(False)).agg(F.count("*").alias("n"))).filter("id = 1").distinct()  # noqa: E731
    t, ann = check(spark, fn, R=R)
    _, p = polys(t, ann)
    assert [str(v[0]) for v in p.values()] == ["δ(R:1)"]
    t, ann = check(spark, lambda R: R.filter(F.lit(False)).agg(F.max("v").alias("m")).distinct(), R=R)
    (row,) = ann.collect_annotated()
    assert evaluate(t.graph().polynomial(row.annotation), COUNTING) == 1


@pytest.mark.parametrize("op, name", [
    (lambda R: R.groupBy("k").agg(F.stddev("v")), "aggregate stddev"),
    (lambda R: R.groupBy("k").agg(F.stddev("v").alias("sd")), "aggregate stddev"),
    (lambda R: R.groupBy("k").agg(F.variance("v")), "aggregate variance"),
    (lambda R: R.groupBy("k").agg(F.countDistinct("v")), "aggregate count DISTINCT"),
    (lambda R: R.agg(F.percentile_approx("v", 0.5)), "aggregate percentile_approx"),
])
def test_a_refused_aggregate_names_the_users_function(spark, op, name):
    r = Tracker(spark).annotate(spark.createDataFrame(*R[:2]), "R", key=["id"])
    with pytest.raises(UnsupportedOperation) as err:
        op(r)
    assert name in str(err.value) and "Instead:" in str(err.value)
    assert "Stddev" not in str(err.value) and "VarianceSamp" not in str(err.value)


def _my_udf(x):
    return str(x)


def _udf_and_lambda_cases():
    my_udf = F.udf(_my_udf, T.StringType())
    return [
        (lambda R: R.agg(F.sum(F.length(my_udf("id")))), "sum", "_my_udf"),
        (lambda R: R.groupBy("k").agg(F.max(my_udf("v")).alias("m")), "max", "_my_udf"),
        (lambda R: R.groupBy("k").agg(F.collect_list(my_udf("v"))), "collect_list", "_my_udf"),
        (lambda R: R.agg(F.sum(F.size(F.filter(F.array("id", "v"), lambda x: x > 1)))), "sum", "lambda"),
    ]


@pytest.mark.parametrize("op, fn, inner", _udf_and_lambda_cases())
def test_an_aggregate_over_a_udf_or_a_lambda_is_refused_in_one_line(spark, op, fn, inner):
    r = Tracker(spark).annotate(spark.createDataFrame(*R[:2]), "R", key=["id"])
    with pytest.raises(UnsupportedOperation) as err:
        op(r)
    msg = str(err.value)
    assert "\n" not in msg and fn in msg and inner in msg
    assert "withColumn" in msg  # the alternative: compute the argument as a column, then aggregate it
    op(spark.createDataFrame(*R[:2])).collect()  # plain Spark runs it: the refusal is lipspark's


def test_the_alternative_to_a_udf_in_an_aggregate_works(spark):
    my_udf = F.udf(_my_udf, T.StringType())
    t, ann = check(spark, lambda R: R.withColumn("len", F.length(my_udf("id"))).groupBy("k").agg(F.sum("len").alias("s")), R=R)
    _, p = polys(t, ann)
    assert str(p[("a", 2)][0]) == "δ(R:1 + R:2)"


def test_distinct_after_a_condition_join_with_a_shared_column_name(spark):
    t, ann = check(spark, lambda R, S: R.select("id", "k").join(S.select("k", "w"), R["k"] == S["k"]).distinct(), R=R, S=S)
    assert ann.columns == ["id", "k", "k", "w"]
    _, p = polys(t, ann)
    assert str(p[(1, "a", "a", "x")][0]) == "δ(R:1·S:10)"

