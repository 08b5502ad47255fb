"""rollup, cube and groupingSets: the data plain Spark gives (levels with the rolled-up keys null,
beside null keys of the data; nothing over no rows), each row δ(Σ its group's rows) at its level
(the grand total's too) and its aggregates ⊗ aggregates (checked by hand and against the
reference evaluator), the deletion oracle, and grouping()/grouping_id() refused by name."""
from __future__ import annotations

from collections import Counter

import pytest
from pyspark.sql import functions as F

from lipspark import Tracker, UnsupportedOperation
from lipspark.semiring import normal_form
from tests import reference as ref
from tests.capture.oracle import predicted_and_rerun
from tests.test_frame import check
from tests.util import graph_of, local_frame, reference_form, value_form

NAN = float("nan")
G = ([(1, "a", "x", 10, 1.0), (2, "a", "y", None, NAN), (3, "b", "x", 5, 2.0), (4, None, "x", 7, None), (5, "b", None, 1, 0.0),
      (6, "a", "x", 10, -0.0)], "id int, k string, p string, v int, d double", ["id"])
NAMES = ["id", "k", "p", "v", "d"]

GROUPINGS = {
    "rollup": lambda R: R.rollup("k", "p").agg(F.sum("v").alias("s"), F.count(F.lit(1)).alias("n"), F.max("d").alias("m")),
    "cube": lambda R: R.cube("k", "p").count(),
    "cube_one_key_shortcut": lambda R: R.cube("p").avg("v"),
    "grouping_sets": lambda R: R.groupingSets([["k", "p"], ["p"], []], "k", "p").agg(F.min("v").alias("lo")),
    "rollup_of_an_expression": lambda R: R.rollup(F.upper("k").alias("K")).agg(F.sum("d").alias("s")),
    "rollup_black_boxes": lambda R: R.rollup("k").agg(F.stddev("v").alias("sd"), F.collect_set("p").alias("ps"),
                                                      F.countDistinct("p").alias("dp")),
    "rollup_list": lambda R: R.rollup("k").agg(F.collect_list("v").alias("vs")),
    "empty_input": lambda R: R.filter("id > 99").rollup("k").count(),
    "empty_input_cube": lambda R: R.filter("id > 99").cube("k", "p").agg(F.sum("v")),
}


@pytest.mark.parametrize("name", sorted(GROUPINGS))
def test_grouping_sets_give_the_data_plain_spark_gives(spark, name):
    check(spark, GROUPINGS[name], R=G)


AGGS = [("s", "sum", "v"), ("n", "count", None), ("a", "avg", "v"), ("cd", "count_distinct", "v")]


def _cols():  # columns need a session: built in the test
    return [F.sum("v").alias("s"), F.count(F.lit(1)).alias("n"), F.avg("v").alias("a"), F.countDistinct("v").alias("cd")]


@pytest.mark.parametrize("kind, sets", [("rollup", [["k", "p"], ["k"], []]),
                                        ("cube", [["k", "p"], ["k"], ["p"], []])])
def test_each_level_matches_the_reference(spark, kind, sets):
    t, ann = check(spark, lambda R: getattr(R, kind)("k", "p").agg(*_cols()), R=G)
    g = graph_of(t)
    rel = ref.base("R", [dict(zip(NAMES, r)) for r in G[0]], key=["id"])
    reference = ref.grouping_sets(rel, ["k", "p"], sets, AGGS)

    def form(data, poly, aggs):
        return (tuple(ref.norm_value(data[c]) for c in ("k", "p", "s", "n", "a", "cd")), str(ref.poly_normal_form(poly)),
                frozenset((c, a) for c, a in aggs.items()))

    want = Counter(form(r.data, r.ann, {c: reference_form(a) for c, a in r.aggs.items()}) for r in reference.rows)
    got = Counter(form(r.row.asDict(), normal_form(g.polynomial(r.annotation)),
                       {c: value_form(g.value(r.annotation, c)) for c in ("s", "n", "a", "cd")}) for r in ann.collect_annotated())
    assert got == want


def test_rollup_by_hand(spark):
    t, ann = check(spark, lambda R: R.rollup("k", "p").agg(F.sum("v").alias("s")), R=G)
    g = graph_of(t)
    got = sorted((str(r.row.k), str(r.row.p), str(g.polynomial(r.annotation)), str(g.value(r.annotation, "s")).replace(".0", ""))
                 for r in ann.collect_annotated())
    assert ("None", "None", "δ(R:1 + R:2 + R:3 + R:4 + R:5 + R:6)", "Sum(R:1 ⊗ 10 + R:3 ⊗ 5 + R:4 ⊗ 7 + R:5 ⊗ 1 + R:6 ⊗ 10)") in got
    assert ("None", "None", "δ(R:4)", "Sum(R:4 ⊗ 7)") in got  # key k null in the data: its own group at level k
    assert ("None", "x", "δ(R:4)", "Sum(R:4 ⊗ 7)") in got  # and at level (k, p)
    assert ("a", "None", "δ(R:1 + R:2 + R:6)", "Sum(R:1 ⊗ 10 + R:6 ⊗ 10)") in got
    assert ("b", "None", "δ(R:5)", "Sum(R:5 ⊗ 1)") in got  # p null in the data, at level (k, p)
    assert len(got) == 5 + 3 + 1  # (k, p) groups, k groups, the grand total


@pytest.mark.parametrize("deleted", [["R:1"], ["R:4"], ["R:1", "R:2", "R:6"], ["R:3", "R:5"], [f"R:{i}" for i in range(1, 7)]])
@pytest.mark.parametrize("kind", ["rollup", "cube"])
def test_the_deletion_oracle(spark, kind, deleted):
    def q(R):
        return getattr(R, kind)("k", "p").agg(F.sum("v").alias("s"), F.count("v").alias("n"), F.min("v").alias("lo"))

    rel = ([r[:4] for r in G[0]], "id int, k string, p string, v int", ["id"])
    predicted, rerun, what_if = predicted_and_rerun(spark, q, rel, deleted)
    assert predicted == rerun  # deleting every row removes the grand total too, as a re-run over no rows
    assert what_if.exact


@pytest.mark.parametrize("fn", [lambda: F.grouping("k"), lambda: F.grouping_id(), lambda: F.grouping_id("k") + 1])
def test_grouping_functions_are_refused_by_name(spark, fn):
    r = Tracker(spark).annotate(local_frame(spark, *G[:2]), "R", key=["id"])
    with pytest.raises(UnsupportedOperation) as err:
        r.rollup("k").agg(F.sum("v"), fn().alias("g"))
    msg = str(err.value)
    assert "grouping() or grouping_id()" in msg and "Instead:" in msg and "\n" not in msg
    r.rollup("k").agg(F.sum("v")).collect()  # without them it runs
