"""The car dealership as a plain PySpark script: the baseline of lipspark's fixed cost per execution.

What a data engineer would write without lipspark: one loop over executions; each execution
reads the buyer's inputs, runs the modules in the order of the paper's Figure 1 (request, and,
four dealers bidding, agg, choice, xor, four dealers selling, car) and writes every module's
outputs and every changed state relation as Parquet, one directory per execution, reading each
written relation back for the modules that consume it (a pipeline materialized stage by stage,
the same I/O lipspark does). The module logic is the very functions of
``workflows/car_dealership.py`` called on plain DataFrames, so the two compute the same data;
only the orchestration differs. ``benchmarks/fixed_cost.py`` runs it interleaved with
``lipspark run``'s executor (provenance off and on).

Usage: ``python benchmarks/plain_cars.py [--numCars 200] [--numExec 5] [--out DIR]``
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

WORKFLOW = os.path.join(os.path.dirname(__file__), "..", "workflows", "car_dealership.py")


def _load_workflow() -> Any:
    spec = importlib.util.spec_from_file_location("car_dealership_plain", WORKFLOW)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class PlainCars:
    """The plain script's state between executions: where each dealer's state was last written."""

    def __init__(self, spark: Any, root: str, params: dict[str, Any]) -> None:
        self.spark, self.root, self.params = spark, root, params
        self.wf = _load_workflow()
        self.dealers = {k: self.wf.make_dealer(k).logic for k in range(1, self.wf.DEALERS + 1)}
        self.state: dict[tuple[int, str], str] = {}
        for k, rels in self._initial().items():
            for name, df in rels.items():
                self.state[(k, name)] = self._save(df, f"initial/dealer{k}/{name}")

    def _initial(self) -> dict[int, dict[str, Any]]:
        given = self.wf.initial_state(self.spark, self.params)
        empty = {"SoldCars": "CarId string, BidId string", "InventoryBids": "BidId string, UserId string, Model string, Amount double"}
        return {k: {"Cars": given[f"dealer{k}"]["Cars"], **{r: self.spark.createDataFrame([], ddl) for r, ddl in empty.items()}}
                for k in self.dealers}

    def _save(self, df: Any, rel: str) -> str:
        path = os.path.join(self.root, rel)
        df.write.mode("errorifexists").parquet(path)
        return path

    def _stage(self, df: Any, rel: str) -> Any:
        """Write a relation, and read it back for the modules that consume it."""
        return self.spark.read.parquet(self._save(df, rel))

    def _dealer(self, n: int, node: str, k: int, requests: Any) -> dict[str, Any]:
        state = {name: self.spark.read.parquet(self.state[(k, name)]) for name in ("Cars", "SoldCars", "InventoryBids")}
        result = self.dealers[k](Requests=requests, **state)
        out = {}
        for name, df in result.items():
            if name in ("SoldCars", "InventoryBids"):
                self.state[(k, name)] = self._save(df, f"{n:06d}/state/{node}/{name}")
            else:
                out[name] = self._stage(df, f"{n:06d}/outputs/{node}/{name}")
        return out

    def execute(self, n: int) -> int:
        """Run execution ``n``; the number of cars sold."""
        wf, e = self.wf, f"{n:06d}"
        given = wf.inputs(self.spark, n, self.params)
        requests = self._stage(given["request"]["Requests"], f"{e}/inputs/request/Requests")
        choice = self._stage(given["choice"]["Choice"], f"{e}/inputs/choice/Choice")
        bid_requests = self._stage(wf.request_logic(requests)["BidRequests"], f"{e}/outputs/request/BidRequests")
        dealer_requests = self._stage(wf.and_logic(bid_requests)["Requests"], f"{e}/outputs/and/Requests")
        bids = {}
        for k in self.dealers:
            bids.update(self._dealer(n, f"dealer{k}_bid", k, dealer_requests))
        best = self._stage(wf.agg_logic(**{f"Bids{k}": bids[f"Bids{k}"] for k in self.dealers})["BestBid"], f"{e}/outputs/agg/BestBid")
        decision = self._stage(wf.choice_logic(choice)["Decision"], f"{e}/outputs/choice/Decision")
        buys = self._stage(wf.xor_logic(best, decision)["Requests"], f"{e}/outputs/xor/Requests")
        sold = {}
        for k in self.dealers:
            sold.update(self._dealer(n, f"dealer{k}_buy", k, buys))
        car = self._stage(wf.car_logic(**{f"Sold{k}": sold[f"Sold{k}"] for k in self.dealers})["Car"], f"{e}/outputs/car/Car")
        return car.count()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--numCars", type=int, default=200)
    ap.add_argument("--numExec", type=int, default=5)
    ap.add_argument("--out", default=None, help="directory to write into (default: a new temporary one)")
    args = ap.parse_args(argv)
    from lipspark.session import get_spark

    spark = get_spark(app_name="plain-cars")
    params = {"numCars": args.numCars, "numExec": args.numExec, "seed": 0, "acceptance": 0.0}
    script = PlainCars(spark, args.out or tempfile.mkdtemp(prefix="plain-cars-"), params)
    for n in range(1, args.numExec + 1):
        t0 = time.perf_counter()
        sold = script.execute(n)
        print(f"execution {n}: {time.perf_counter() - t0:.2f}s, {sold} car(s) sold", flush=True)


if __name__ == "__main__":
    main()
