"""Latent rows (lipspark/capture/rules/latent.py): the rows a filter over values dropped, carried
through the operations after it that work row by row, so a what-if where one would pass predicts
it, exactly as a re-run gives it — and says *not exact* once an operation that does not work row
by row has come between."""
from __future__ import annotations

from collections import Counter

import pytest
from pyspark.sql import functions as F

from lipspark import Tracker
from lipspark.query.deletion import delete
from lipspark.query.prediction import predict, what_if
from tests import reference as ref
from tests.util import local_frame

SCHEMA = "id int, k string, q int"
ROWS = [(1, "a", 5), (2, "a", 1), (3, "b", 4), (4, "c", 2), (5, "c", 2)]


def _above_mean(df):
    """Each key's total against the mean of the totals (a threshold from a one-row aggregate)."""
    totals = df.groupBy("k").agg(F.sum("q").alias("tot"))
    return totals.crossJoin(totals.agg(F.avg("tot").alias("mean"))).filter(F.col("tot") > F.col("mean"))


def _bag(rows):
    return Counter(tuple(ref.norm_value(v) for v in r) for r in rows)


# what comes after the filter: works row by row (the dropped rows are carried) or not
ROW_BY_ROW = {
    "select": lambda d: d.select("k", "tot"),
    "rename, withColumn, drop, orderBy": lambda d: (d.withColumnRenamed("tot", "total").withColumn("tag", F.upper("k"))
                                                    .drop("mean").orderBy(F.col("total").desc())),
    "plain filter, alias, selectExpr": lambda d: d.filter(F.col("k") != "c").alias("x").selectExpr("k", "tot AS t1"),
}
NOT_ROW_BY_ROW = {
    "groupBy": lambda d: d.groupBy().agg(F.count("*").alias("n")),
    "distinct": lambda d: d.select("k").distinct(),
    "window": lambda d: d.select("k", F.count("*").over(_window()).alias("n")),
    "limit": lambda d: d.orderBy("k").limit(5),
    "another filter over values": lambda d: d.filter(F.col("tot") < 100),
}


def _window():
    from pyspark.sql import Window

    return Window.partitionBy(F.lit(1))


@pytest.mark.parametrize("after", sorted(ROW_BY_ROW))
def test_rows_a_filter_over_values_dropped_appear_as_a_rerun_gives_them(spark, after):
    t = Tracker(spark)
    out = ROW_BY_ROW[after](_above_mean(t.annotate(local_frame(spark, ROWS, SCHEMA), "R", key=["id"])))
    assert out.latent is not None
    rows, latent = out.collect_annotated(), out.collect_latent()
    g = t.graph()
    # totals a 6, b 4, c 4, mean 14/3: only a passes; deleting R:1 makes a 1, mean 3: b and c pass
    for deleted in (["R:1"], ["R:3"], ["R:4", "R:5"], ["R:2"]):
        p = predict(g, delete(g, [g.token_id(d) for d in deleted]), out.columns, rows, latent)
        kept = [r for r in ROWS if f"R:{r[0]}" not in deleted]
        rerun = ROW_BY_ROW[after](_above_mean(local_frame(spark, kept, SCHEMA))).collect()
        assert p.exact, (deleted, p.why)
        assert _bag(p.rows) == _bag(rerun), (after, deleted, p.rows, rerun)
        assert bool(p.appeared) == (deleted == ["R:1"])  # the case this is about happened


@pytest.mark.parametrize("after", sorted(NOT_ROW_BY_ROW))
def test_an_operation_that_does_not_work_row_by_row_ends_the_carrying(spark, after):
    t = Tracker(spark)
    out = NOT_ROW_BY_ROW[after](_above_mean(t.annotate(local_frame(spark, ROWS, SCHEMA), "R", key=["id"])))
    if after == "another filter over values":
        assert out.latent is not None  # its own dropped rows, not the first filter's
    else:
        assert out.latent is None and out.collect_latent() is None
    p = what_if(out, ["R:1"])  # b and c would pass the first filter now
    assert not p.exact and any("row by row" in w for w in p.why), p.why


def test_latent_rows_reach_a_sql_query_over_a_view(spark):
    t = Tracker(spark)
    _above_mean(t.annotate(local_frame(spark, ROWS, SCHEMA), "R", key=["id"])).createOrReplaceTempView("above")
    out = t.view("above").sparkSession.sql("SELECT k, tot FROM above ORDER BY tot")
    p = what_if(out, ["R:1"])
    assert p.exact and sorted(p.rows) == [("b", 4), ("c", 4)] and sorted(p.appeared) == [("b", 4), ("c", 4)]


def test_collecting_latent_rows_twice_records_their_nodes_once(spark):
    t = Tracker(spark)
    out = _above_mean(t.annotate(local_frame(spark, ROWS, SCHEMA), "R", key=["id"])).select("k")
    first = out.collect_latent()
    again = out.collect_latent()
    assert first is again and sorted(r.row.k for r in first.rows) == ["b", "c"]
    assert len(first.tests) == 2  # b's and c's tests: 4 > 14/3, one node each (their totals are two v-nodes)
    g = t.graph()  # the latent · nodes once: a segment recorded twice would fail here
    for r in first.rows:
        assert str(g.polynomial(r.annotation))  # each latent row's provenance is in the graph


def test_the_data_is_the_same_with_or_without_latent_rows(spark):
    """Fidelity: carrying dropped rows changes no result (they live beside the frame, never in it)."""
    t = Tracker(spark)
    out = ROW_BY_ROW["rename, withColumn, drop, orderBy"](_above_mean(t.annotate(local_frame(spark, ROWS, SCHEMA), "R", key=["id"])))
    plain = ROW_BY_ROW["rename, withColumn, drop, orderBy"](_above_mean(local_frame(spark, ROWS, SCHEMA)))
    assert out.collect() == plain.collect() == [("a", 6, "A")]
    assert sorted(tuple(r.row) for r in out.collect_latent().rows) == [("b", 4, "B"), ("c", 4, "C")]
