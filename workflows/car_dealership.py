"""Car dealerships (Lipstick Figure 1; WorkflowGen): buyers ask dealers for bids and may buy.

Each execution is one round for one buyer: ``request`` takes the buyer's bid request, ``and``
passes it to four dealers, each dealer bids (bid phase), ``agg`` picks the lowest bid, the
buyer's ``choice`` (an input module) accepts or declines it, ``xor`` forwards an accepted bid
as a purchase to every dealer, the winning dealer sells a car (purchase phase) and ``car``
outputs it. A run stops when the buyer buys or after ``numExec`` rounds.

Dealer state: ``Cars`` (its lot), ``SoldCars``, ``InventoryBids`` (bids it has made). The bid
is computed by the black box ``calcBid``: it depends on the model, the number of cars of that
model on the lot and sold, and never exceeds the buyer's previous bid for that model.

Integrity checks (docs/debugging.md): a dealer's bid is never over the list price, and one more
than 6% under it needs a manager's approval (both warn); ``agg`` picks one best bid per request
(fail).

Parameters (``lipspark run workflows/car_dealership.py --param numCars=2000``): ``numCars``
(cars over all dealers, each one of 12 German models), ``numExec``, ``seed`` (the buyer's
model, reserve price and decisions), ``acceptance`` (probability the buyer accepts a bid at or
under the reserve price), ``faultyCar`` (below).

A crash to debug (docs/debugging.md, "Crash culprits"): ``--param faultyCar=D1C000017`` makes the
dealer whose lot the car is on (dealer ``k`` for ``DkC…``) first pass every car of its lot through
a value-level black box, ``appraise``, which returns the car's model and raises on that car: the
run fails in that dealer's first invocation. A car id of that form that is on no lot (past the
last car: ``D1C999999``) makes the dealer appraise every car and none raise. Without it (the
default) the workflow is the one above, node for node.
"""
from __future__ import annotations

import random
import re
from typing import Any

from pyspark.sql import functions as F
from pyspark.sql import types as T

from lipspark import black_box, cogroup
from lipspark.errors import WorkflowError
from lipspark.workflow import Check, Module, Workflow, WorkflowDefinition

DEALERS = 4
#: The 12 German models and their list prices.
MODELS = {
    "VW Golf": 28000.0, "VW Polo": 21000.0, "VW Passat": 36000.0, "VW Tiguan": 38000.0,
    "Audi A3": 35000.0, "Audi A4": 45000.0, "Audi A6": 58000.0, "Audi Q5": 52000.0,
    "BMW 3 Series": 47000.0, "BMW 5 Series": 60000.0, "Mercedes C-Class": 49000.0, "Mercedes E-Class": 62000.0,
}

REQUEST = "UserId string, BidId string, Model string, Kind string, Dealer int, Amount double"
BID = "BidId string, UserId string, Dealer int, Model string, Amount double"
SOLD = "CarId string, BidId string, Dealer int, Model string, Amount double"
CHOICE = "UserId string, Reserve double, Accept boolean"


def calc_bid(requests: list[Any], num_cars: list[Any], num_sold: list[Any], prev_bids: list[Any], dealer: int) -> float | None:
    """A dealer's bid for the requested model.

    List price, minus up to 15% the more cars of the model are on the lot (unsold), plus 2% per
    car of the model already sold, plus a dealer margin of 0.5% per dealer number; never more
    than this buyer's previous bid at this dealer for the model.
    """
    if not requests:
        return None
    model, user = requests[0]["Model"], requests[0]["UserId"]
    avail = num_cars[0]["NumAvail"] if num_cars else 0
    sold = num_sold[0]["NumSold"] if num_sold else 0
    if avail - sold <= 0:
        return None
    price = MODELS[model] * (1.0 - 0.15 * min(avail - sold, 100) / 100.0 + 0.02 * sold + 0.005 * dealer)
    previous = [b["Amount"] for b in prev_bids if b["UserId"] == user and b["Amount"] is not None]
    if previous:
        price = min(price, min(previous))
    return round(price, 2)


CALC_BID = black_box(calc_bid, returnType=T.DoubleType(), name="calcBid")


def appraiser(faulty_car: str) -> Any:
    """The value-level black box ``appraise(CarId, Model)``: the car's model, raising on ``faulty_car``.

    >>> appraiser("D1C000017").fn("D1C000016", "VW Golf")
    'VW Golf'
    """
    def appraise(car: str, model: str) -> str:
        if car == faulty_car:
            raise ValueError(f"cannot appraise car {car}")
        return model

    return black_box(appraise, returnType=T.StringType(), name="appraise")


def faulty_dealer(faulty_car: str | None) -> int | None:
    """The dealer whose lot holds ``faulty_car`` (``D3C000042`` → 3); None without one.

    >>> faulty_dealer("D3C000042"), faulty_dealer(None), faulty_dealer("")
    (3, None, None)
    """
    if not faulty_car:
        return None
    m = re.fullmatch(r"D(\d+)C\d+", faulty_car)
    if m is None or not 1 <= int(m.group(1)) <= DEALERS:
        raise WorkflowError(f"parameter 'faultyCar' expects a car id D<dealer 1-{DEALERS}>C<number> (as D1C000017), "
                            f"found {faulty_car!r}; pass one of the cars on a dealer's lot")
    return int(m.group(1))


def request_logic(Requests):
    return {"BidRequests": Requests}


def and_logic(BidRequests):
    return {"Requests": BidRequests.select(
        "UserId", "BidId", "Model", F.lit("bid").alias("Kind"),
        F.lit(None).cast("int").alias("Dealer"), F.lit(None).cast("double").alias("Amount"))}


def list_price():
    """The list price of each row's model (a Column)."""
    return F.element_at(F.create_map(*[x for m, p in MODELS.items() for x in (F.lit(m), F.lit(p))]), F.col("Model"))


def make_dealer(k: int, faulty_car: str | None = None) -> Module:
    """Dealer ``k``; with ``faulty_car`` it appraises every car of its lot first (:func:`appraiser`)."""
    appraise = appraiser(faulty_car) if faulty_car else None

    def dealer_logic(Requests, Cars, SoldCars, InventoryBids):
        if appraise is not None:  # the crash variant (faultyCar): every car of the lot goes through appraise
            Cars = Cars.select("CarId", appraise("CarId", "Model").alias("Model"))
        # ---- bid phase (the paper's Q_state for bid requests)
        bid_req = Requests.filter(F.col("Kind") == "bid").select("UserId", "BidId", "Model")
        req_model = bid_req.select("Model")
        inventory = Cars.join(req_model, "Model")
        sold_inventory = inventory.join(SoldCars, "CarId")
        num_cars = inventory.groupBy("Model").agg(F.count(F.lit(1)).alias("NumAvail"))
        num_sold = sold_inventory.groupBy("Model").agg(F.count(F.lit(1)).alias("NumSold"))
        all_info = cogroup("Model", Requests=bid_req, NumCarsByModel=num_cars, NumSoldByModel=num_sold, PrevBids=InventoryBids)
        bids = (
            all_info.filter(F.size("Requests") > 0)
            .select(
                F.col("Requests")[0]["BidId"].alias("BidId"),
                F.col("Requests")[0]["UserId"].alias("UserId"),
                F.lit(k).alias("Dealer"),
                "Model",
                CALC_BID("Requests", "NumCarsByModel", "NumSoldByModel", "PrevBids", F.lit(k)).alias("Amount"),
            )
            .filter(F.col("Amount").isNotNull())
        )
        # ---- purchase phase: sell the accepted bid's car with the smallest CarId still on the lot
        buys = Requests.filter((F.col("Kind") == "buy") & (F.col("Dealer") == k)).select("BidId", "Model", "Amount")
        candidates = Cars.join(buys.select("Model"), "Model").select("CarId", "Model")  # cars of the bought model
        status = cogroup("CarId", Cars=candidates, Sold=SoldCars)
        available = status.filter((F.size("Sold") == 0) & (F.size("Cars") > 0)).select(
            "CarId", F.col("Cars")[0]["Model"].alias("Model"))
        chosen = available.join(buys, "Model").groupBy("BidId", "Model", "Amount").agg(F.min("CarId").alias("CarId"))
        sold = chosen.select("CarId", "BidId", F.lit(k).alias("Dealer"), "Model", "Amount")
        return {
            f"Bids{k}": bids,
            f"Sold{k}": sold,
            "SoldCars": SoldCars.union(sold.select("CarId", "BidId")),
            "InventoryBids": InventoryBids.union(bids.select("BidId", "UserId", "Model", "Amount")),
        }

    return Module(
        f"dealer{k}",
        inputs={"Requests": REQUEST},
        state={"Cars": "CarId string, Model string", "SoldCars": "CarId string, BidId string",
               "InventoryBids": "BidId string, UserId string, Model string, Amount double"},
        outputs={f"Bids{k}": BID, f"Sold{k}": SOLD},
        keys={"Cars": ["CarId"], "SoldCars": ["CarId"], "InventoryBids": ["BidId"]},
        logic=dealer_logic,
        checks=[Check(f"Bids{k}", "bid at most list price", lambda: F.col("Amount") <= list_price()),
                Check(f"Bids{k}", "discount at most 6%", lambda: F.col("Amount") >= 0.94 * list_price())],
    )


def agg_logic(**bids):
    allbids = None
    for k in range(1, DEALERS + 1):
        b = bids[f"Bids{k}"]
        allbids = b if allbids is None else allbids.union(b)
    best = allbids.groupBy("BidId").agg(F.min("Amount").alias("Best"))
    at_best = allbids.join(best, "BidId").filter(F.col("Amount") == F.col("Best"))
    first = at_best.groupBy("BidId").agg(F.min("Dealer").alias("Winner"))
    winner = at_best.join(first, "BidId").filter(F.col("Dealer") == F.col("Winner"))
    return {"BestBid": winner.select("BidId", "UserId", "Dealer", "Model", "Amount")}


def choice_logic(Choice):
    return {"Decision": Choice}


def xor_logic(BestBid, Decision):
    accepted = BestBid.join(Decision, "UserId").filter(F.col("Accept") & (F.col("Amount") <= F.col("Reserve")))
    return {"Requests": accepted.select("UserId", "BidId", "Model", F.lit("buy").alias("Kind"), "Dealer", "Amount")}


def car_logic(**sold):
    out = None
    for k in range(1, DEALERS + 1):
        s = sold[f"Sold{k}"]
        out = s if out is None else out.union(s)
    return {"Car": out}


def build(params: dict[str, Any]) -> Workflow:
    car = params.get("faultyCar")
    faulty = faulty_dealer(car)
    modules = [
        Module("request", inputs={"Requests": "UserId string, BidId string, Model string"},
               outputs={"BidRequests": "UserId string, BidId string, Model string"},
               keys={"Requests": ["BidId"]}, logic=request_logic),
        Module("and", inputs={"BidRequests": "UserId string, BidId string, Model string"},
               outputs={"Requests": REQUEST}, logic=and_logic),
        *[make_dealer(k, car if k == faulty else None) for k in range(1, DEALERS + 1)],
        Module("agg", inputs={f"Bids{k}": BID for k in range(1, DEALERS + 1)}, outputs={"BestBid": BID}, logic=agg_logic,
               checks=[Check("BestBid", "one best bid per request", "count(DISTINCT BidId) = count(*)", on="table", level="fail")]),
        Module("choice", inputs={"Choice": CHOICE}, outputs={"Decision": CHOICE}, keys={"Choice": ["UserId"]}, logic=choice_logic),
        Module("xor", inputs={"BestBid": BID, "Decision": CHOICE}, outputs={"Requests": REQUEST}, logic=xor_logic),
        Module("car", inputs={f"Sold{k}": SOLD for k in range(1, DEALERS + 1)}, outputs={"Car": SOLD}, logic=car_logic),
    ]
    wf = Workflow("car_dealership", modules)
    wf.node("request", "request", input=True).node("choice", "choice", input=True).node("and", "and")
    for k in range(1, DEALERS + 1):
        wf.node(f"dealer{k}_bid", f"dealer{k}")
    wf.node("agg", "agg").node("xor", "xor")
    for k in range(1, DEALERS + 1):
        wf.node(f"dealer{k}_buy", f"dealer{k}")
    wf.node("car", "car", output=True)
    wf.edge("request", "and", ["BidRequests"])
    for k in range(1, DEALERS + 1):
        wf.edge("and", f"dealer{k}_bid", ["Requests"]).edge(f"dealer{k}_bid", "agg", [f"Bids{k}"])
        wf.edge("xor", f"dealer{k}_buy", ["Requests"]).edge(f"dealer{k}_buy", "car", [f"Sold{k}"])
    wf.edge("agg", "xor", ["BestBid"]).edge("choice", "xor", ["Decision"])
    return wf


def _buyer(params: dict[str, Any]) -> tuple[str, float]:
    rng = random.Random(params["seed"])
    model = rng.choice(sorted(MODELS))
    return model, round(MODELS[model] * rng.uniform(0.85, 1.0), 2)


def initial_state(spark, params: dict[str, Any]) -> dict[str, dict[str, Any]]:
    rng = random.Random(params["seed"] + 1)
    names = sorted(MODELS)
    per_dealer = params["numCars"] // DEALERS
    state = {}
    for k in range(1, DEALERS + 1):
        cars = [(f"D{k}C{i:06d}", names[rng.randrange(len(names))]) for i in range(per_dealer)]
        state[f"dealer{k}"] = {"Cars": spark.createDataFrame(cars, "CarId string, Model string")}
    return state


def inputs(spark, execution: int, params: dict[str, Any]) -> dict[str, dict[str, Any]]:
    model, reserve = _buyer(params)
    accept = random.Random(params["seed"] * 1000 + execution).random() < params["acceptance"]
    return {
        "request": {"Requests": spark.createDataFrame([("P1", f"B{execution}", model)], "UserId string, BidId string, Model string")},
        "choice": {"Choice": spark.createDataFrame([("P1", reserve, accept)], CHOICE)},
    }


def bought(outputs: dict[str, Any], params: dict[str, Any]) -> bool:
    return bool(outputs["car"]["Car"])


DEFINITION = WorkflowDefinition(
    name="car_dealership",
    build=build,
    initial_state=initial_state,
    inputs=inputs,
    params={"numCars": 20000, "numExec": 10, "seed": 0, "acceptance": 0.5, "faultyCar": None},
    stop=bought,
)
