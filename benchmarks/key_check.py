"""What checking that a key identifies each row costs: ``annotate(key=...)`` and workflow inputs.

1. ``Tracker.annotate(fact, "Fact", key=["id"])`` on 2M Parquet rows, followed by the
   micro-benchmark's group-by (result and graph written), with the check (``unique=True``, the
   default) and without it (``unique=False``), interleaved A/B with the order alternating, median
   of ``--reps``; and the check alone (one Spark aggregation).
2. The car dealership (``numCars`` 200, 2 executions per store, eager capture): executions with
   the check of declared keys on workflow inputs and initial state, and with it switched off,
   interleaved store by store; and the time spent in the check itself (pyarrow on the driver,
   summed per execution).

Writes ``benchmarks/results/key_check.json``.

Usage: ``python benchmarks/key_check.py [--rows 2000000] [--reps 5] [--cars-reps 5] [--quick]``
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

from lipspark import Tracker, get_spark  # noqa: E402
from lipspark import tracker as tracker_module  # noqa: E402
from lipspark.workflow import Executor, Store, load_definition  # noqa: E402
from lipspark.workflow import execution as execution_module  # noqa: E402

from micro import groupby_job, make_inputs  # noqa: E402

CARS = os.path.join(os.path.dirname(__file__), "..", "workflows", "car_dealership.py")


def annotate_and_group(spark, fact_path: str, checked: bool, out: str) -> float:
    shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    t = Tracker(spark)
    fact = t.annotate(spark.read.parquet(fact_path), "Fact", key=["id"], unique=checked)
    groupby_job(fact).to_plain().write.parquet(os.path.join(out, "result"))
    t.write(os.path.join(out, "graph"))
    return time.perf_counter() - t0


def check_alone(spark, fact_path: str) -> float:
    t0 = time.perf_counter()
    tracker_module._check_key(spark.read.parquet(fact_path), "Fact", ["id"])
    return time.perf_counter() - t0


def tracker_part(spark, root: str, rows: int, reps: int) -> dict:
    fact = make_inputs(spark, root, rows, 10_000, 100)["fact"]
    for checked in (True, False):  # warm-up
        annotate_and_group(spark, fact, checked, os.path.join(root, "warm"))
    times: dict[str, list[float]] = {"checked": [], "unchecked": []}
    alone = []
    for i in range(reps):
        for checked in ((True, False) if i % 2 == 0 else (False, True)):
            times["checked" if checked else "unchecked"].append(annotate_and_group(spark, fact, checked, os.path.join(root, "run")))
        alone.append(check_alone(spark, fact))
    on, off = statistics.median(times["checked"]), statistics.median(times["unchecked"])
    res = {"rows": rows, "reps": reps, **{f"{k}_s": v for k, v in times.items()}, "checked_median_s": on,
           "unchecked_median_s": off, "added_s": on - off, "added_fraction": on / off - 1, "check_alone_s": alone,
           "check_alone_median_s": statistics.median(alone)}
    print(f"annotate(key=['id']) + group-by on {rows:,} rows: checked {on:.2f}s, unchecked {off:.2f}s "
          f"(+{on - off:.2f}s, {100 * (on / off - 1):+.0f}%); the check alone {res['check_alone_median_s']:.2f}s", flush=True)
    return res


def cars_part(spark, root: str, num_cars: int, reps: int, executions: int = 2) -> dict:
    definition = load_definition(CARS)
    params = definition.with_params({"numCars": num_cars, "numExec": executions, "seed": 0})
    spent: list[float] = []
    real = execution_module.key_repeat

    def timed(paths, key):
        t0 = time.perf_counter()
        try:
            return real(paths, key)
        finally:
            spent.append(time.perf_counter() - t0)
    execution_module.key_repeat = timed
    per_exec: dict[str, list[float]] = {"checked": [], "unchecked": []}
    check_per_exec: list[float] = []
    try:
        for i in range(reps + 1):  # the first round warms up
            for checked in ((True, False) if i % 2 == 0 else (False, True)):
                store = Store.create(os.path.join(root, f"cars-{i}-{checked}"), definition.name, True, params)
                ex = Executor(spark, definition.build(params), store)
                ex.tokens = checked  # the switch the check reads (tokens are made either way)
                ex.initialize(definition.initial_state(spark, params))
                for n in range(1, executions + 1):
                    spent.clear()
                    t0 = time.perf_counter()
                    ex.execute(definition.inputs(spark, n, params))
                    if i:
                        per_exec["checked" if checked else "unchecked"].append(time.perf_counter() - t0)
                        if checked:
                            check_per_exec.append(sum(spent))
                store.unlock()
    finally:
        execution_module.key_repeat = real
    on, off = statistics.median(per_exec["checked"]), statistics.median(per_exec["unchecked"])
    res = {"numCars": num_cars, "executions_per_store": executions, "reps": reps, **{f"{k}_s": v for k, v in per_exec.items()},
           "checked_median_s": on, "unchecked_median_s": off, "check_per_execution_s": check_per_exec,
           "check_per_execution_median_s": statistics.median(check_per_exec)}
    print(f"car dealership numCars={num_cars}: per execution checked {on:.2f}s, unchecked {off:.2f}s; "
          f"time in the check {1000 * res['check_per_execution_median_s']:.1f} ms per execution", flush=True)
    return res


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--numCars", type=int, default=200)
    ap.add_argument("--cars-reps", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="200k rows, 2 reps each (smoke test)")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "key_check.json"))
    args = ap.parse_args(argv)
    if args.quick:
        args.rows, args.reps, args.cars_reps = 200_000, 2, 2
    spark = get_spark(app_name="lipspark-bench-keys")
    root = tempfile.mkdtemp(prefix="lipspark-keys-")
    try:
        results = {"master": spark.sparkContext.master, "annotate": tracker_part(spark, root, args.rows, args.reps),
                   "car_dealership": cars_part(spark, root, args.numCars, args.cars_reps)}
    finally:
        shutil.rmtree(root, ignore_errors=True)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(results, fh, indent=1)
    return results


if __name__ == "__main__":
    main()
