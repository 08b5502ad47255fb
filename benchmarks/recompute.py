"""What-if with numbers: how long ``delete … recompute`` and ``update`` take against re-running
the one invocation whose value they need (issue 19, item 3).

On the demo graph (``make demo``: the car dealership, 2,000 cars, 3 executions), in one process
with Spark started and warmed by one round, each round times, interleaved:

* **plain**: re-running dealer 1's bid invocation of execution 1 as it ran (its stored inputs and
  state, the module's logic, what it writes collected) — "re-running that one invocation";
* **recompute 1**: ``delete tuple Cars(CarId = "D1C000004") in dealer1 recompute execution 1`` —
  the graph's deletion plus the re-runs that give dealer 1's true bid of execution 1;
* **recompute**: the same without the bound (every execution's values);
* **update**: ``update tuple Cars(CarId = "D1C000004") set Model = "VW Golf" in dealer1``.

Reported: medians of ``--rounds`` (≥ 5) and their ratios to **plain**, with how many
invocations each re-ran; then the same statements as whole processes (``lipspark query -e``,
cold: Spark's start included), one run each, beside ``lipspark query`` of the plain ``delete`` and
a process that only re-runs that one invocation (Spark's start included).
Target (issue 19): the true bid within ≤ 2× the time of re-running that one invocation.

Usage: ``python benchmarks/recompute.py [--graph graphs/car_dealership-demo] [--rounds 5]``
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from lipspark import get_spark  # noqa: E402
from lipspark.query import Session  # noqa: E402
from lipspark.workflow.rerun import Rerunner, rerun_invocation  # noqa: E402

CAR = "D1C000004"
STATEMENTS = {
    "recompute 1": f'delete tuple Cars(CarId = "{CAR}") in dealer1 recompute execution 1',
    "recompute": f'delete tuple Cars(CarId = "{CAR}") in dealer1 recompute',
    "update": f'update tuple Cars(CarId = "{CAR}") set Model = "VW Golf" in dealer1',
}


COLD_PLAIN = """
import sys
from lipspark import get_spark
from lipspark.workflow.rerun import Rerunner, rerun_invocation
r = Rerunner(sys.argv[1], spark=get_spark())
rerun_invocation(r.store, 1, "dealer1_bid", spark=r.spark, workflow=r.workflow)
"""


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graph", default="graphs/car_dealership-demo")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "recompute.json"))
    args = ap.parse_args(argv)
    if not os.path.exists(os.path.join(args.graph, "store.json")):
        sys.exit(f"no store at {args.graph}: run make demo first")
    spark = get_spark(app_name="lipspark-bench-recompute")
    rerunner = Rerunner(args.graph, spark=spark)
    session = Session(args.graph, rerun=rerunner)
    times: dict[str, list[float]] = {"plain": [], **{k: [] for k in STATEMENTS}}
    reruns: dict[str, int] = {}
    bid: dict[str, Any] = {}

    def plain() -> None:
        rerun_invocation(rerunner.store, 1, "dealer1_bid", spark=spark, workflow=rerunner.workflow)

    def statement(name: str) -> None:
        session.run("reset")
        (r,) = session.run(STATEMENTS[name])
        reruns[name] = len(r.extra["reruns"])
        bid[name] = next((v["after"] for v in r.extra["_tables"]["changed values"][0]
                          if v["op"] == "output" and v["relation"] == "Bids1" and v["execution"] == 1 and v["column"] == "Amount"), None)

    for i in range(args.rounds + 1):  # round 0 warms the JVM and the Python workers up
        for name, fn in [("plain", plain), *[(k, lambda k=k: statement(k)) for k in STATEMENTS]]:
            t = time.perf_counter()
            fn()
            if i:
                times[name].append(time.perf_counter() - t)
    med = {k: statistics.median(v) for k, v in times.items()}
    cold = {}
    env = {**os.environ}
    t = time.perf_counter()  # the plain re-run as a process of its own: Spark's start and a cold JVM, as a query has
    subprocess.run([sys.executable, "-c", COLD_PLAIN, args.graph], check=True, capture_output=True, env=env)
    cold["plain"] = round(time.perf_counter() - t, 2)
    for name, text in [("delete", f'delete tuple Cars(CarId = "{CAR}") in dealer1'), *STATEMENTS.items()]:
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "lipspark.cli", "query", args.graph, "-e", text], check=True, capture_output=True, env=env)
        cold[name] = round(time.perf_counter() - t, 2)
    result = {
        "graph": args.graph, "rounds": args.rounds,
        "median_s": {k: round(v, 3) for k, v in med.items()},
        "ratio_to_plain": {k: round(v / med["plain"], 2) for k, v in med.items() if k != "plain"},
        "invocations_rerun": reruns,
        "dealer1_bid_execution_1": bid,
        "cold_process_s": cold,
        "all_s": {k: [round(x, 3) for x in v] for k, v in times.items()},
    }
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as fh:
        json.dump(result, fh, indent=2)
    print(json.dumps({k: result[k] for k in ("median_s", "ratio_to_plain", "invocations_rerun", "dealer1_bid_execution_1", "cold_process_s")}, indent=2))
    return result


if __name__ == "__main__":
    main()
