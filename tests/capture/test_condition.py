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
from lipspark.vocabulary import Op
from tests.util import local_frame

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
    g = t.graph()
    if name != "ratio_in_a_select":
        assert len(g.nodes_with(op=Op.CONDITION)) >= 1, "the plan reads values: a condition must be recorded"
    inexact = 0
    for rid, _, _ in ROWS:
        r = delete(g, [g.token_id(f"R:{rid}")])
        if not r.exact:
            inexact += 1
            assert r.conditions or any(c.after is not None for c in r.values)
            continue
        changed = {c.node: c.after for c in r.values}
        predicted = []
        for row in rows:
            if r.removed[g.positions(row.annotation.factors)].any():
                continue
            values = list(row.row)
            for col, vid in row.annotation.values.items():
                if vid in changed:
                    values[row.row.__fields__.index(col)] = changed[vid]
            predicted.append(values)
        rerun = plan(local_frame(spark, [x for x in ROWS if x[0] != rid], SCHEMA)).collect()
        assert _bag(predicted) == _bag(rerun), f"deleting R:{rid}: the what-if said exact"
    assert inexact, "some deletion changes a value the condition read"


def test_having_lists_the_condition_it_could_not_decide(spark):
    t = Tracker(spark)
    result = _having(t.annotate(spark.createDataFrame(ROWS, SCHEMA), "R", key=["id"]))
    assert sorted(r.k for r in result.collect()) == ["a", "c", "d"]
    g = t.graph()
    [cond] = g.nodes_with(op=Op.CONDITION).tolist()
    assert g.label(cond) == "filter (tot > 300)"
    assert len(g.children(cond)) == 4  # every group's Sum, kept or not
    r = delete(g, [g.token_id("R:1")])  # a's total 350 → 150: the filter would now drop it
    assert not r.exact and [c.label for c in r.conditions] == ["filter (tot > 300)"]
    assert delete(g, [g.token_id("R:5"), g.token_id("R:6")]).exact  # group c gone: no value changed


def test_conditions_over_plain_columns_record_nothing(spark):
    t = Tracker(spark)
    df = t.annotate(spark.createDataFrame(ROWS, SCHEMA), "R", key=["id"])
    df.filter(F.col("q") > 100).join(df.select("k").distinct(), "k").groupBy("k").count().collect()
    assert not len(t.graph().nodes_with(op=Op.CONDITION))
