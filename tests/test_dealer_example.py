"""The paper's dealer module on Example 2.3 (Lipstick §2.2, §3.2, Figure 2(c))."""
from __future__ import annotations

from pyspark.sql import functions as F
from pyspark.sql import types as T

from lipspark import Tracker, black_box, cogroup
from tests.util import multiset


def calc_bid(requests, num_cars, num_sold):
    """Bid 20K, 500 less per car available beyond the first, 300 more per car already sold."""
    avail = num_cars[0]["NumAvail"] if num_cars else 0
    sold = num_sold[0]["NumSold"] if num_sold else 0
    return 20000.0 - 500.0 * max(avail - 1, 0) + 300.0 * sold


CALC_BID = black_box(calc_bid, returnType=T.DoubleType(), name="calcBid")


def dealer_bid(Requests, Cars, SoldCars):
    """Q_state for bid requests, as in §2.2 (module code: plain PySpark)."""
    req_model = Requests.select("Model")
    inventory = Cars.join(req_model, "Model")
    sold_inventory = inventory.join(SoldCars, "CarId")
    num_cars = inventory.groupBy("Model").agg(F.count(F.lit(1)).alias("NumAvail"))
    num_sold = sold_inventory.groupBy("Model").agg(F.count(F.lit(1)).alias("NumSold"))
    all_info = cogroup("Model", Requests=Requests, NumCarsByModel=num_cars, NumSoldByModel=num_sold)
    return all_info.select(
        F.col("Requests")[0]["BidId"].alias("BidId"),
        F.col("Requests")[0]["UserId"].alias("UserId"),
        "Model",
        CALC_BID("Requests", "NumCarsByModel", "NumSoldByModel").alias("Amount"),
    )


def inputs(spark, tracker=None):
    cars = spark.createDataFrame([("C1", "Accord"), ("C2", "Civic"), ("C3", "Civic")], "CarId string, Model string")
    sold = spark.createDataFrame([], "CarId string, BidId string")
    req = spark.createDataFrame([("P1", "B1", "Civic")], "UserId string, BidId string, Model string")
    if tracker is None:
        return dict(Requests=req, Cars=cars, SoldCars=sold)
    return dict(
        Requests=tracker.annotate(req, "Requests", key=["BidId"]),
        Cars=tracker.annotate(cars, "Cars", key=["CarId"]),
        SoldCars=tracker.annotate(sold, "SoldCars", key=["CarId"]),
    )


def test_dealer_fidelity(spark):
    plain = dealer_bid(**inputs(spark))
    t = Tracker(spark)
    tracked = dealer_bid(**inputs(spark, t))
    assert multiset(tracked.collect()) == multiset(plain.collect())
    assert [tuple(r) for r in tracked.collect()] == [("B1", "P1", "Civic", 20000.0 - 500.0)]


def test_dealer_graph_matches_figure_2c(spark):
    t = Tracker(spark)
    bids = dealer_bid(**inputs(spark, t))
    (row,) = bids.collect_annotated()
    g = t.graph()
    c2, c3, b1 = g.token_id("Cars:C2"), g.token_id("Cars:C3"), g.token_id("Requests:B1")
    assert g.find(label="Cars:C1") and not any(c == g.token_id("Cars:C1") for d in g.find(label="·") for c in g.children(d))
    # a · node per joined car (Cars ⋈ ReqModel)
    dots = g.find(label="·")
    assert sorted(sorted(g.children(d)) for d in dots) == sorted([sorted([c2, b1]), sorted([c3, b1])])
    # δ for CarsByModel over the two joined cars
    count = g.find(label="Count")
    assert len(count) == 1
    (delta_cbm,) = [d for d in g.find(label="δ") if sorted(g.children(d)) == sorted(dots)]
    # a Count v-node with two ⊗ children, value 2
    tensors = g.children(count[0])
    assert len(tensors) == 2 and all(g.node(x)["label"] == "⊗" for x in tensors)
    assert g.node(count[0])["value"] == 2
    assert sorted(c for x in tensors for c in g.children(x) if g.node(c)["kind"] == "p") == sorted(dots)
    # δ for the cogroup, over the request and the NumCarsByModel tuple
    (cog,) = row.annotation.factors
    assert g.node(cog)["label"] == "δ" and sorted(g.children(cog)) == sorted([b1, delta_cbm])
    # a calcBid black-box v-node feeding the bid's Amount, fed by the Count
    bb = row.annotation.values["Amount"]
    assert g.node(bb)["label"] == "calcBid" and g.node(bb)["kind"] == "v"
    assert count[0] in g.children(bb) and cog in g.children(bb)
    assert str(g.polynomial(row.annotation)) == "δ(Requests:B1 + δ(Cars:C2·Requests:B1 + Cars:C3·Requests:B1))"
