"""Pivot: the data plain Spark gives in both of its plans (an aggregate per value and aggregate
over ``if(col <=> v, x, null)``, or the two-step plan when every aggregate is numeric, where a
group without rows for a value shows null), names as Spark's, each value's aggregate a ⊗
aggregate over the group's rows for that value (checked by hand and against the reference
evaluator), and the deletion oracle: a what-if recomputes the pivoted values as a re-run does."""
from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from lipspark import Tracker
from lipspark.semiring import normal_form
from tests import reference as ref
from tests.capture.oracle import predicted_and_rerun
from tests.test_frame import check
from tests.util import graph_of, local_frame, reference_form, value_form

NAN = float("nan")
# null keys, a null pivot value, duplicates, a null v, NaN and -0.0 in x
P = ([(1, "a", "x", 10, 1.0), (2, "a", "y", None, NAN), (3, "b", "x", 5, 2.0), (4, None, "x", 7, None), (5, "b", None, 1, 0.0),
      (6, "a", "x", 10, -0.0), (7, "c", "z", 3, 1.0), (8, "a", "y", 4, 1.0)], "id int, k string, p string, v int, x double", ["id"])
NAMES = ["id", "k", "p", "v", "x"]

PIVOTS = {
    # two-step plan (every aggregate numeric): a group without rows for a value shows null
    "count": lambda R: R.groupBy("k").pivot("p", ["x", "y", None, "w"]).agg(F.count("v")),
    "count_star_sum_avg": lambda R: R.groupBy("k").pivot("p", ["x", "y"]).agg(F.count(F.lit(1)).alias("n"), F.sum("v").alias("s"),
                                                                               F.avg("x").alias("a")),
    "shortcuts": lambda R: R.groupBy("k").pivot("p", ["x", "y"]).sum("v"),
    "values_computed": lambda R: R.groupBy("k").pivot("p").count(),
    "min_max_of_doubles": lambda R: R.groupBy("k").pivot("p", ["x"]).agg(F.min("x").alias("lo"), F.max("x").alias("hi")),
    "nan_and_zero_as_pivot_values": lambda R: R.groupBy("k").pivot("x").agg(F.sum("v")),
    "expressions_and_distinct": lambda R: R.groupBy("k").pivot("p", ["x", "y"]).agg(
        (F.sum("v") + 1).alias("e"), F.countDistinct("v").alias("d"), F.coalesce(F.sum("v"), F.lit(0)).alias("c")),
    "first_without_ignorenulls": lambda R: R.filter("id != 8").groupBy("k").pivot("p", ["x", "y"]).agg(F.first("v").alias("f"),
                                                                                                       F.last("x").alias("l")),
    "keyless": lambda R: R.groupBy().pivot("p", ["x", "y"]).agg(F.sum("v")),
    "two_keys": lambda R: R.groupBy("k", "p").pivot("v", [10, 4]).count(),
    "no_values": lambda R: R.groupBy("k").pivot("p", []).agg(F.sum("v")),
    "empty_input": lambda R: R.filter("id > 99").groupBy("k").pivot("p", ["x"]).count(),
    "empty_input_keyless": lambda R: R.filter("id > 99").groupBy().pivot("p", ["x"]).agg(F.count("v"), F.sum("v")),
    # one aggregate per value over if(col <=> v, x, null) (a string or array aggregate): 0 counts
    "count_with_a_list": lambda R: R.groupBy("k").pivot("p", ["x", "y", None]).agg(F.count("v").alias("n"), F.collect_list("v").alias("l")),
    "nan_as_pivot_value_one_step": lambda R: R.groupBy("k").pivot("x", [NAN, 1.0]).agg(F.sum("v").alias("s"), F.max("p").alias("m")),
    "first_ignorenulls_one_step": lambda R: R.groupBy("k").pivot("p", ["x", "y"]).agg(F.first("v", True).alias("f"),
                                                                                      F.first("p").alias("fp")),
}


@pytest.mark.parametrize("name", sorted(PIVOTS))
def test_pivot_gives_the_data_plain_spark_gives(spark, name):
    t, ann = check(spark, PIVOTS[name], R=P)  # columns (Spark's names) and rows, as multisets
    g = graph_of(t)
    for row in ann.collect_annotated():
        for c, node in row.annotation.values.items():
            if isinstance(row.row[c], float) and row.row[c] != row.row[c]:
                continue  # a node's NaN value reads None (graph/attrs.py)
            recorded = g.node(node)["value"]
            assert ref.norm_value(recorded) == ref.norm_value(row.row[c]), (c, recorded, row.row)


def _reference(rows, keys, column, values, aggs, two_step):
    rel = ref.base("R", [dict(zip(NAMES, r)) for r in rows], key=["id"])
    return ref.pivot(rel, keys, column, values, aggs, null_without_rows=two_step)


@pytest.mark.parametrize("two_step", [True, False], ids=["two-step", "one-step"])
def test_pivoted_aggregates_match_the_reference(spark, two_step):
    aggs = [("n", "count", "v"), ("s", "sum", "v"), ("a", "avg", "x"), ("m", "max", "v"), ("d", "count_distinct", "v")]
    cols = [F.count("v").alias("n"), F.sum("v").alias("s"), F.avg("x").alias("a"), F.max("v").alias("m"), F.countDistinct("v").alias("d")]
    extra = [] if two_step else [F.collect_list("v").alias("l")]  # a list: Spark's one-step plan
    values = ["x", "y", None]
    t, ann = check(spark, lambda R: R.filter("id != 2").groupBy("k").pivot("p", values).agg(*cols, *extra), R=P)
    g = graph_of(t)
    rows = [r for r in P[0] if r[0] != 2]  # no NaN among the averaged values (the reference's avg is exact)
    want = {r.data["k"]: r for r in _reference(rows, ["k"], "p", values, aggs, two_step).rows}
    got = ann.collect_annotated()
    assert {r.row.k for r in got} == set(want)
    for row in got:
        w = want[row.row.k]
        assert ref.poly_normal_form(normal_form(g.polynomial(row.annotation)) - w.ann) == 0
        for c, value in w.aggs.items():
            if c.endswith("_d"):  # a DISTINCT count: a black box in the two-step plan (null without rows)
                assert ref.norm_value(row.row[c]) == ref.norm_value(value.result), c
                continue
            assert value_form(g.value(row.annotation, c)) == reference_form(value), (row.row.k, c)
            assert ref.norm_value(row.row[c]) == ref.norm_value(value.result), (row.row.k, c)


def test_pivot_by_hand(spark):
    t, ann = check(spark, lambda R: R.groupBy("k").pivot("p", ["x", "y"]).agg(F.sum("v").alias("s"), F.count("v").alias("n")), R=P)
    g = graph_of(t)
    a = {r.row.k: r for r in ann.collect_annotated()}["a"]
    assert str(g.polynomial(a.annotation)) == "δ(R:1 + R:2 + R:6 + R:8)"  # the group: all its rows
    assert str(g.value(a.annotation, "x_s")).replace(".0", "") == "Sum(R:1 ⊗ 10 + R:6 ⊗ 10)"  # its rows for x
    assert str(g.value(a.annotation, "y_s")).replace(".0", "") == "Sum(R:8 ⊗ 4)"
    # the two-step plan's count: a Sum of 1 per row for y whose v is there, 0 per row without
    assert g.value(a.annotation, "y_n").normal_form()[0] == "Sum" and a.row.y_n == 1
    b = {r.row.k: r for r in ann.collect_annotated()}["b"]
    assert b.row.y_n is None and b.row.y_s is None  # b has no row for y: null, as Spark's two-step plan says


ORACLE = {
    "two_step": lambda R: R.groupBy("k").pivot("p", ["x", "y", None]).agg(F.count("v").alias("n"), F.sum("v").alias("s"),
                                                                          F.min("v").alias("lo"), F.avg("v").alias("a")),
    "one_step": lambda R: R.groupBy("k").pivot("p", ["x", "y"]).agg(F.count(F.lit(1)).alias("n"), F.max("v").alias("m"),
                                                                    F.collect_list(F.lit("s")).alias("l")),
    "keyless": lambda R: R.groupBy().pivot("p", ["x", "y"]).agg(F.count("v")),
}


@pytest.mark.parametrize("deleted", [["R:8"], ["R:1", "R:6"], ["R:3"], ["R:5"], ["R:2", "R:8"], ["R:4", "R:7"]])
@pytest.mark.parametrize("name", sorted(ORACLE))
def test_the_deletion_oracle(spark, name, deleted):
    def q(R):
        out = ORACLE[name](R)
        return out.drop("x_l", "y_l") if name == "one_step" else out  # a list's order is Spark's: not compared

    rel = ([r[:4] for r in P[0]], "id int, k string, p string, v int", ["id"])
    predicted, rerun, what_if = predicted_and_rerun(spark, q, rel, deleted)
    assert predicted == rerun
    assert what_if.exact


def test_a_pivot_after_rollup_fails_as_in_spark(spark):
    r = Tracker(spark).annotate(local_frame(spark, *P[:2]), "R", key=["id"])
    with pytest.raises(Exception) as err:
        r.rollup("k").pivot("p", ["x"])
    assert "pivot" in str(err.value).lower()
