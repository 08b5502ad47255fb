"""Fixed cost per execution: lipspark (provenance off, eager, deferred) against a plain PySpark script.

A small car dealership (numCars 200 by default) where the work per execution is tiny, so what
is measured is what lipspark adds around the module code: the store's files and checks, the
boundary reads, the graph. The plain script is ``benchmarks/plain_cars.py`` (the same module
functions, the same Parquet written). All runs share one warm SparkSession and are interleaved
execution by execution (script, off, eager, deferred, then the next execution); the first
``--warmup`` executions are left out; compared are the medians of the rest and the median of
the per-execution ratios (each execution's times side by side). Every
execution's best bid is checked equal between the script and lipspark. Writes
``benchmarks/results/fixed_cost.json``.

Issue 17's targets: provenance off ≤ 1.5× the script, provenance on ≤ 2×.

Usage: ``python benchmarks/fixed_cost.py [--numCars 200] [--numExec 7] [--warmup 2]``
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
from lipspark.workflow import Executor, Store, load_definition  # noqa: E402
from lipspark.workflow.relations import relation_frame  # noqa: E402

from plain_cars import WORKFLOW, PlainCars  # noqa: E402

MODES = ("script", "off", "eager", "deferred")


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--numCars", type=int, default=200)
    ap.add_argument("--numExec", type=int, default=7)
    ap.add_argument("--warmup", type=int, default=2, help="first executions left out of the medians")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "fixed_cost.json"))
    args = ap.parse_args(argv)
    definition = load_definition(WORKFLOW)
    params = definition.with_params({"numCars": args.numCars, "numExec": args.numExec, "acceptance": 0.0, "seed": 0})
    spark = get_spark(app_name="lipspark-bench-fixed-cost")
    root = tempfile.mkdtemp(prefix="lipspark-fixed-")
    try:
        script = PlainCars(spark, os.path.join(root, "script"), params)
        executors = {}
        for mode in MODES[1:]:
            store = Store.create(os.path.join(root, mode), definition.name, mode != "off", params,
                                 capture="deferred" if mode == "deferred" else "eager", definition=WORKFLOW)
            ex = Executor(spark, definition.build(params), store, provenance=mode != "off")
            ex.initialize(definition.initial_state(spark, params))
            executors[mode] = ex
        times: dict[str, list[float]] = {m: [] for m in MODES}
        for n in range(1, args.numExec + 1):
            t0 = time.perf_counter()
            script.execute(n)
            times["script"].append(time.perf_counter() - t0)
            for mode, ex in executors.items():
                t0 = time.perf_counter()
                ex.execute(definition.inputs(spark, n, params))
                times[mode].append(time.perf_counter() - t0)
            best = sorted(spark.read.parquet(os.path.join(root, "script", f"{n:06d}", "outputs", "agg", "BestBid")).collect())
            off = executors["off"].store
            ours = sorted(relation_frame(spark, off, off.executions[-1]["outputs"]["agg"]["BestBid"]).collect())
            if best != ours:
                raise SystemExit(f"execution {n}: the script's best bid {best} differs from lipspark's {ours}")
            print(f"execution {n}: " + "  ".join(f"{m} {times[m][-1]:.2f}s" for m in MODES), flush=True)
        for ex in executors.values():
            ex.store.unlock()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    kept = {m: t[args.warmup:] for m, t in times.items()}
    med = {m: statistics.median(t) for m, t in kept.items()}
    result = {
        "numCars": args.numCars, "executions": args.numExec, "warmup": args.warmup,
        "seconds": {m: [round(x, 3) for x in t] for m, t in times.items()},
        "median_s": {m: round(v, 3) for m, v in med.items()},
        "ratio_to_script": {m: round(med[m] / med["script"], 2) for m in MODES[1:]},
        # the same execution's times side by side, so a machine busier at one moment tilts neither
        "paired_ratio_median": {m: round(statistics.median(a / b for a, b in zip(kept[m], kept["script"])), 2) for m in MODES[1:]},
        "targets": {"off": 1.5, "eager": 2.0, "deferred": 2.0},
    }
    print(json.dumps({k: result[k] for k in ("median_s", "ratio_to_script", "paired_ratio_median")}, indent=1))
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(result, fh, indent=1)
    return result


if __name__ == "__main__":
    main()
