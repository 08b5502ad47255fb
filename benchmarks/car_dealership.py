"""Car dealership capture overhead: provenance on vs off, interleaved execution by execution.

Two stores are run side by side with the same parameters: execution n runs without provenance,
then with it, then execution n+1, ... (A/B interleaved). Reports the median time per execution
of each, their ratio, and the graph's nodes, edges and bytes. ``acceptance`` defaults to 0 here
so the buyer never buys and every run has numExec executions (the purchase phase still runs,
on no purchase). Writes ``benchmarks/results/car_dealership.json``.

Usage: ``python benchmarks/car_dealership.py [--numCars 20000] [--numExec 10]``
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from lipspark import get_spark  # noqa: E402
from lipspark.graph.index import GraphIndex  # noqa: E402
from lipspark.graph.stats import directory_bytes  # noqa: E402
from lipspark.workflow import Executor, Store, load_definition  # noqa: E402


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--numCars", type=int, default=20000)
    ap.add_argument("--numExec", type=int, default=10)
    ap.add_argument("--acceptance", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "car_dealership.json"))
    args = ap.parse_args(argv)
    definition = load_definition(os.path.join(os.path.dirname(__file__), "..", "workflows", "car_dealership.py"))
    params = definition.with_params({"numCars": args.numCars, "numExec": args.numExec, "acceptance": args.acceptance, "seed": args.seed})
    spark = get_spark(app_name="lipspark-bench-cars")
    root = tempfile.mkdtemp(prefix="lipspark-cars-")
    runs = {}
    try:
        for mode in ("plain", "tracked"):
            store = Store.create(os.path.join(root, mode), definition.name, mode == "tracked", params)
            ex = Executor(spark, definition.build(params), store, provenance=mode == "tracked")
            ex.initialize(definition.initial_state(spark, params))
            runs[mode] = ex
        times: dict[str, list[float]] = {"plain": [], "tracked": []}
        for n in range(1, args.numExec + 1):
            for mode in ("plain", "tracked"):
                t0 = time.perf_counter()
                runs[mode].execute(definition.inputs(spark, n, params))
                times[mode].append(time.perf_counter() - t0)
            print(f"execution {n}: plain {times['plain'][-1]:.1f}s tracked {times['tracked'][-1]:.1f}s", flush=True)
        t0 = time.perf_counter()
        g = GraphIndex.load(os.path.join(root, "tracked"))
        load_s = time.perf_counter() - t0
        tracked_store = Store.open(os.path.join(root, "tracked"))
        graph_bytes = sum(directory_bytes(os.path.join(tracked_store.root, d)) for d in ["initial/graph"] + [f"{e['dir']}/graph" for e in tracked_store.executions])
        res = {
            "params": params,
            "plain_s": times["plain"],
            "tracked_s": times["tracked"],
            "plain_median_s": statistics.median(times["plain"]),
            "tracked_median_s": statistics.median(times["tracked"]),
            "ratio": statistics.median(times["tracked"]) / statistics.median(times["plain"]),
            "graph_nodes": len(g),
            "graph_edges": g.num_edges,
            "graph_table_bytes": graph_bytes,
            "store_bytes_tracked": directory_bytes(os.path.join(root, "tracked")),
            "store_bytes_plain": directory_bytes(os.path.join(root, "plain")),
            "graph_load_s": load_s,
        }
        print(json.dumps({k: v for k, v in res.items() if not k.endswith("_s") or "median" in k or k == "graph_load_s"}, indent=1))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(res, fh, indent=1)
    return res


if __name__ == "__main__":
    main()
