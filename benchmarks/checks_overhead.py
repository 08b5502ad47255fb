"""What integrity checks add to an eager run: three checks per written relation against none, interleaved.

Two eager stores run side by side with the same parameters, execution by execution (A/B
interleaved): the car dealership without any check, and with three checks on every relation its
nodes write (two row checks and one table check each: 68 checks per execution). The median time
per execution of each is reported with their ratio (issue 18's target: ≤ 1.05), beside the median
of the per-execution ratios (each execution's pair ran back to back, so it is the steadier figure on
a shared machine). The first ``--warmup`` executions (JIT, caches: whichever store runs first pays
them) are run by both stores and not counted.

Usage: ``python benchmarks/checks_overhead.py [--numCars 20000] [--numExec 7] [--warmup 1]``
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from lipspark import get_spark  # noqa: E402
from lipspark.workflow import Check, Executor, Store, Workflow, load_definition  # noqa: E402


def variant(wf: Workflow, checks: bool) -> Workflow:
    """The workflow with no check at all, or with three on every relation each node writes."""
    from pyspark.sql import functions as F

    out = Workflow(wf.name, [dataclasses.replace(m, checks=()) for m in wf.modules.values()])
    for node in wf.nodes.values():
        out.node(node.id, node.module, input=node.input, output=node.output)
    for e in wf.edges:
        out.edge(e.src, e.dst, list(e.relations))
    if checks:
        for node in out.nodes.values():
            module = out.modules[node.module]
            for rname in [*module.outputs, *module.state]:
                first = module.relation(rname).column_names[0]
                out.check(node.id,
                          Check(rname, "first column known", F.col(first).isNotNull()),
                          Check(rname, "first column short", F.length(F.col(first).cast("string")) < 1000),
                          Check(rname, "not too many rows", F.count("*") < 10_000_000, on="table"))
    return out.validate()


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--numCars", type=int, default=20000)
    ap.add_argument("--numExec", type=int, default=7, help="timed executions")
    ap.add_argument("--warmup", type=int, default=1, help="executions run first by both stores, not timed")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "checks_overhead.json"))
    args = ap.parse_args(argv)
    definition = load_definition(os.path.join(os.path.dirname(__file__), "..", "workflows", "car_dealership.py"))
    total = args.warmup + args.numExec
    params = definition.with_params({"numCars": args.numCars, "numExec": total, "acceptance": 0.0, "seed": 0})
    spark = get_spark(app_name="lipspark-bench-checks")
    root = tempfile.mkdtemp(prefix="lipspark-checks-")
    modes = (False, True)
    try:
        runs = {}
        for checked in modes:
            store = Store.create(os.path.join(root, str(checked)), definition.name, True, params)
            ex = Executor(spark, variant(definition.build(params), checked), store, provenance=True)
            ex.initialize(definition.initial_state(spark, params))
            runs[checked] = ex
        times: dict[bool, list[float]] = {m: [] for m in modes}
        count = 0
        for n in range(1, total + 1):
            took = {}
            for m in (modes if n % 2 else modes[::-1]):  # alternate which runs first
                t0 = time.perf_counter()
                runs[m].execute(definition.inputs(spark, n, params))
                took[m] = time.perf_counter() - t0
                if m:
                    count = len(runs[m].check_results)
            warm = n <= args.warmup
            if not warm:
                for m in modes:
                    times[m].append(took[m])
            print(f"execution {n}{' (warm-up)' if warm else ''}: no checks {took[False]:.1f}s, {count} checks {took[True]:.1f}s", flush=True)
        med = {m: statistics.median(times[m]) for m in modes}
        pairs = [b / a for a, b in zip(times[False], times[True])]
        result = {"numCars": args.numCars, "numExec": args.numExec, "warmup": args.warmup, "checks_per_execution": count,
                  "median_seconds": {"none": med[False], "three_per_relation": med[True]},
                  "ratio": med[True] / med[False], "median_pair_ratio": statistics.median(pairs),
                  "times": {str(m): times[m] for m in modes}}
        print(json.dumps({k: v for k, v in result.items() if k != "times"}, indent=1))
        os.makedirs(os.path.dirname(args.out), exist_ok=True)
        with open(args.out, "w") as fh:
            json.dump(result, fh, indent=1)
        return result
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
