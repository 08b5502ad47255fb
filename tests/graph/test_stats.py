"""graph_stats counts, from the compact tables, exactly the nodes and edges of the loaded graph."""
from __future__ import annotations

import pytest
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lipspark import Tracker
from lipspark.blackbox import black_box
from lipspark.functions import cogroup
from lipspark.graph.index import GraphIndex
from lipspark.graph.stats import graph_stats
from lipspark.vocabulary import Op

R = ([(1, "a", 10.0, 1), (2, "a", None, 2), (3, "b", 30.0, 1), (4, "b", float("nan"), 2), (5, "c", 50.0, 1)],
     "id int, k string, v double, s int")
S = ([(1, "x"), (2, "y"), (1, "z")], "s int, w string")


def _rank(df):
    return df.select("k").distinct()


def _double(v):
    return None if v is None else 2.0 * v


def _first_id(ids):
    return float(min(ids)) if ids else None


FIXTURES = {
    "group-by with aggregates": lambda r, s: r.groupBy("k").agg(
        F.sum("v").alias("sum"), F.count("v").alias("n"), F.count(F.lit(1)).alias("all"),
        F.min("v").alias("lo"), F.max("v").alias("hi"), F.avg("v").alias("mean")),
    "distinct": lambda r, s: r.select("k").distinct(),
    "join then group (two factors per member)": lambda r, s: r.join(s, "s").groupBy("w").agg(F.sum("v").alias("t"), F.count(F.lit(1)).alias("n")),
    "value-level black box, then Sum over it": lambda r, s: r.select("k", black_box(_double, returnType=T.DoubleType(), name="Max")("v").alias("d"))
    .groupBy("k").agg(F.sum("d").alias("t"), F.count("d").alias("n"), F.max("d").alias("hi")),
    "relation-level black box": lambda r, s: black_box(_rank, r, name="Sum"),
    "cogroup": lambda r, s: cogroup("s", Rs=r, Ss=s),
    "explode of a bag": lambda r, s: r.groupBy("k").agg(F.collect_list("id").alias("ids")).select("k", F.explode("ids").alias("id")),
    "black box over a bag": lambda r, s: r.groupBy("k").agg(F.collect_list("id").alias("ids"))
    .select("k", black_box(_first_id, returnType=T.DoubleType(), name="δ")("ids").alias("f")),
    "keyless aggregate over empty input": lambda r, s: r.filter(F.col("id") > 99).agg(F.sum("v").alias("t"), F.count(F.lit(1)).alias("n")),
    "keyless aggregate": lambda r, s: r.agg(F.sum("v").alias("t"), F.avg("s").alias("m")),
    "grouped aggregate over no rows": lambda r, s: r.filter(F.col("id") > 99).groupBy("k").agg(F.count(F.lit(1)).alias("n")),
    "DISTINCT aggregates": lambda r, s: r.groupBy("s").agg(F.countDistinct("k").alias("d"), F.sum_distinct("v").alias("t"),
                                                           F.count_distinct("k", "v").alias("d2")),
    "DISTINCT aggregates over no rows": lambda r, s: r.filter(F.col("id") > 99).agg(F.countDistinct("k").alias("d")),
    "black-box aggregates": lambda r, s: r.groupBy("k").agg(F.stddev("v").alias("sd"), F.first("s").alias("f"), F.collect_set("s").alias("cs")),
    "black-box aggregate over no rows": lambda r, s: r.filter(F.col("id") > 99).agg(F.var_pop("v").alias("vp")),
    "expressions over aggregates": lambda r, s: r.groupBy("k").agg((F.sum("s") / F.count("*")).alias("q"), F.round(F.stddev("v"), 1).alias("sd")),
    "expression over aggregates over no rows": lambda r, s: r.filter(F.col("id") > 99).agg((F.count("*") + F.sum("s")).alias("q")),
    "anti join (a ⊖ per row with partners)": lambda r, s: r.join(s.filter(F.col("w") != "y"), "s", "left_anti"),
    "full outer join": lambda r, s: r.join(s.filter(F.col("w") != "y"), "s", "full"),
    "anti join of joined rows (two factors per member)": lambda r, s: r.join(s, "s").join(r.select("k", "v"), "k", "left_anti"),
    "subtract": lambda r, s: r.select("s").subtract(s.select("s").filter(F.col("w") == "x")),
    "aggregates of expressions over aggregates": lambda r, s: r.groupBy("k").agg(F.count("*").alias("n"), F.max("v").alias("hi"))
    .groupBy().agg(F.sum(F.col("n") * 2).alias("t"), F.countDistinct("n").alias("d"), F.stddev("n").alias("sd"),
                   F.sum(F.coalesce("hi", "n")).alias("c")),
}


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_stats_equal_the_loaded_graph(spark, tmp_path, name):
    t = Tracker(spark)
    r = t.annotate(spark.createDataFrame(*R), "R", key=["id"])
    s = t.annotate(spark.createDataFrame(*S), "S")
    out = FIXTURES[name](r, s)
    out.collect()
    path = str(tmp_path / "g")
    t.write(path)
    g = GraphIndex.load(path)
    stats = graph_stats(path)
    assert (stats.nodes, stats.edges) == (len(g), g.num_edges), name
    assert len(g) > 0 and stats.bytes > 0


def test_a_black_box_named_like_an_aggregate_over_a_sum(spark, tmp_path):
    """The value-level black box (a v-node of its own) is the member value of the Sum: no
    constant node for it, its own node feeds the ⊗ (21 nodes, not 24)."""
    t = Tracker(spark)
    r = t.annotate(spark.createDataFrame([(1, "a", 1.0), (2, "a", 2.0), (3, "b", 3.0)], "id int, k string, v double"), "R", key=["id"])
    mx = black_box(_double, returnType=T.DoubleType(), name="Max")
    out = r.select("k", mx("v").alias("d")).groupBy("k").agg(F.sum("d").alias("t"))
    rows = {x.row["k"]: x for x in out.collect_annotated()}
    path = str(tmp_path / "g")
    t.write(path)
    g = GraphIndex.load(path)
    assert (graph_stats(path).nodes, graph_stats(path).edges) == (len(g), g.num_edges)
    assert g.find(op=Op.CONSTANT) == []  # every member value is the black box's own v-node
    boxes = g.find(label="Max")
    assert len(boxes) == 3 and all(g.node(b)["op"] is Op.BLACK_BOX for b in boxes)
    assert str(g.value(rows["a"].annotation, "t")) == "Sum(R:1 ⊗ 2.0 + R:2 ⊗ 4.0)"
    assert str(g.value(boxes[0])).startswith("Max(")
