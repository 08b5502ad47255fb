"""The paper's dealer module, bid phase (Lipstick §2.2, Example 2.3), as ordinary PySpark.

The same function runs on plain DataFrames (no provenance) and on annotated frames.

>>> from lipspark import get_spark, Tracker
>>> spark = get_spark()
>>> t = Tracker(spark)
>>> bids = dealer_bid(**example_inputs(spark, t))
>>> [(r.BidId, r.Model, r.Amount) for r in bids.collect()]
[('B1', 'Civic', 19500.0)]
"""
from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lipspark.blackbox import black_box
from lipspark.functions import cogroup

__all__ = ["calc_bid", "CALC_BID", "dealer_bid", "example_inputs"]


def calc_bid(requests: list[Any], num_cars: list[Any], num_sold: list[Any]) -> float:
    """Bid $20K, $500 less per car available beyond the first, $300 more per car already sold."""
    avail = num_cars[0]["NumAvail"] if num_cars else 0
    sold = num_sold[0]["NumSold"] if num_sold else 0
    return 20000.0 - 500.0 * max(avail - 1, 0) + 300.0 * sold


CALC_BID = black_box(calc_bid, returnType=T.DoubleType(), name="calcBid")


def dealer_bid(Requests: Any, Cars: Any, SoldCars: Any) -> Any:
    """Q_state for bid requests, statement by statement as in §2.2."""
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


def example_inputs(spark: SparkSession, tracker: Any = None) -> dict[str, Any]:
    """Example 2.3: Cars C1 Accord, C2 Civic, C3 Civic; SoldCars empty; request P1 B1 Civic."""
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
