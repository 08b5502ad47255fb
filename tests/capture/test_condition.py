"""Conditions over values (lipspark/capture/rules/condition.py): a filter, join or grouping that
reads a value with a v-node records a CONDITION node, and a what-if that changes such a value
says it is not exact — whenever it claims to be exact, it equals a re-run without the deleted
tuples."""
from __future__ import annotations

from collections import Counter

import pytest
from pyspark.sql import functions as F

from lipspark import Tracker
from lipspark.query.deletion import delete
from lipspark.query.prediction import predict
from lipspark.vocabulary import Op
from tests.util import local_frame, predicted_rows

ROWS = [(1, "a", 200), (2, "a", 150), (3, "b", 100), (4, "b", 90), (5, "c", 400), (6, "c", 5), (7, "d", 301)]
SCHEMA = "id int, k string, q int"


def _having(df):
    return df.groupBy("k").agg(F.sum("q").alias("tot")).filter(F.col("tot") > 300)


def _join_best(df):
    best = df.groupBy("k").agg(F.max("q").alias("best"))
    return df.join(best, "k").filter(F.col("q") == F.col("best")).select("k", "id", "q")


def _join_on_value(df):
    counts = df.groupBy("k").agg(F.count("*").alias("n"))
    sizes = df.select(F.col("id").alias("n"), F.col("k").alias("k2"))
    return counts.join(sizes, "n")


def _group_by_count(df):
    return df.groupBy("k").agg(F.count("*").alias("n")).groupBy("n").agg(F.count("*").alias("groups"))


def _distinct_over_value(df):
    return df.groupBy("k").agg(F.min("q").alias("lo")).select("lo").distinct()


def _ratio_in_a_select(df):
    """Not a condition: a value computed from aggregates in a later select has a v-node too."""
    per_k = df.groupBy("k").agg(F.sum("q").alias("s"), F.count("*").alias("n"))
    return per_k.withColumn("mean", F.col("s") / F.col("n")).select("k", "mean")


PLANS = {"ratio_in_a_select": _ratio_in_a_select, "having": _having, "join_best": _join_best, "join_on_value": _join_on_value,
         "group_by_count": _group_by_count, "distinct_over_value": _distinct_over_value}


def _bag(rows):
    return Counter(tuple(r) for r in rows)


@pytest.mark.parametrize("name", sorted(PLANS))
def test_a_what_if_that_claims_exact_equals_the_rerun(spark, name):
    plan = PLANS[name]
    df = local_frame(spark, ROWS, SCHEMA)
    t = Tracker(spark)
    result = plan(t.annotate(df, "R", key=["id"]))
    rows = result.collect_annotated()
    assert _bag(r.row for r in rows) == _bag(plan(df).collect())  # fidelity
    latent = result.collect_latent()
    g = t.graph()
    if name != "ratio_in_a_select":  # the plan reads values: a condition must be recorded (per row where it can)
        assert sum(len(g.nodes_with(op=o)) for o in (Op.CONDITION, Op.POSITIVE, Op.ZERO, Op.IN_GROUP)) >= 1
    inexact = 0
    decided = 0  # exact what-ifs where a per-row test changed: the test decided the row again
    for rid, _, _ in ROWS:
        r = delete(g, [g.token_id(f"R:{rid}")])
        rerun = plan(local_frame(spark, [x for x in ROWS if x[0] != rid], SCHEMA)).collect()
        p = predict(g, r, result.columns, rows, latent)  # the frame's prediction: exact more often, never another answer
        if p.exact:
            assert _bag(p.rows) == _bag(rerun), f"deleting R:{rid}: the frame's prediction said exact"
        if name in ("group_by_count", "having"):  # members move to their new group; rows the filter dropped appear
            assert p.exact, (rid, p.why)
        if not r.exact:
            inexact += 1
            assert r.conditions or any(c.after is not None for c in r.values)
            continue
        assert p.exact
        predicted = predicted_rows(g, rows, r)
        assert _bag(predicted) == _bag(rerun), f"deleting R:{rid}: the what-if said exact"
        decided += any(c.node_op in (int(Op.POSITIVE), int(Op.ZERO)) for c in r.values)
    if name == "having":  # a comparison over values: decided per row, exactly where no dropped row passes
        assert decided, "some deletion changes a value the filter read, and the what-if decides it"
    elif name == "join_best":  # deleting a key's best makes another row the best: it appears, not exact
        assert inexact
    else:
        assert inexact, "some deletion changes a value the condition read"


def test_having_decides_each_group_again(spark):
    t = Tracker(spark)
    result = _having(t.annotate(spark.createDataFrame(ROWS, SCHEMA), "R", key=["id"]))
    assert sorted(r.k for r in result.collect()) == ["a", "c", "d"]
    g = t.graph()
    assert not len(g.nodes_with(op=Op.CONDITION))  # a comparison over a value: decided per row instead
    tests = g.nodes_with(op=Op.POSITIVE).tolist()
    assert len(tests) == 4 and {g.label(p) for p in tests} == {"filter (tot > 300)"}  # every group's, kept or not
    assert sorted(g.node(int(g.ids[p]))["value"] for p in tests) == [False, True, True, True]
    r = delete(g, [g.token_id("R:1")])  # a's total 350 → 150: the filter drops it now, as a re-run does
    assert r.exact and not r.conditions
    assert [x.row.k for x in result.collect_annotated() if r.removed[g.positions(x.annotation.factors)].any()] == ["a"]
    assert delete(g, [g.token_id("R:5"), g.token_id("R:6")]).exact  # group c gone: no value changed


def test_a_dropped_row_whose_test_now_passes_makes_the_what_if_not_exact(spark):
    t = Tracker(spark)
    df = t.annotate(spark.createDataFrame(ROWS, SCHEMA), "R", key=["id"])
    totals = df.groupBy("k").agg(F.sum("q").alias("tot"))
    result = totals.crossJoin(df.agg(F.max("q").alias("top"))).filter(F.col("tot") >= F.col("top"))
    rows = result.collect_annotated()
    g = t.graph()
    top = max(q for _, _, q in ROWS)
    biggest = [f"R:{i}" for i, _, q in ROWS if q == top]
    r = delete(g, [g.token_id(x) for x in biggest])  # the maximum falls: groups dropped before pass now
    plain = local_frame(spark, [x for x in ROWS if f"R:{x[0]}" not in biggest], SCHEMA)
    rerun = plain.groupBy("k").agg(F.sum("q").alias("tot")).crossJoin(plain.agg(F.max("q").alias("top"))).filter(F.col("tot") >= F.col("top"))
    kept = [x for x in rows if not r.removed[g.positions(x.annotation.factors)].any()]
    if len(rerun.collect()) > len(kept):  # rows appear that the graph never saw after the filter: it says so
        assert r.passed and not r.exact and {c.label for c in r.conditions} == {"filter (tot >= CAST(top AS BIGINT))"}  # as Spark writes it
    else:
        assert r.exact


def test_conditions_over_plain_columns_record_nothing(spark):
    t = Tracker(spark)
    df = t.annotate(spark.createDataFrame(ROWS, SCHEMA), "R", key=["id"])
    df.filter(F.col("q") > 100).join(df.select("k").distinct(), "k").groupBy("k").count().collect()
    assert not len(t.graph().nodes_with(op=Op.CONDITION))
