"""How long a crash report takes: the car dealership with a black box that raises on one car.

The car dealership's crash variant (``--param faultyCar=D1C000017``, workflows/car_dealership.py)
gives ``dealer1`` a value-level black box, ``appraise``, that every car of its lot goes through (it
returns the car's model) and that raises on that car; a car id past the lot's last car makes
every car pass (:func:`passing`). Each
round runs execution 1 of two fresh eager stores, interleaved: with ``appraise`` passing every
car (the execution's own time), and raising on the chosen car (the time until ``run`` raises
:class:`~lipspark.errors.ExecutionFailed` with its report, culprit search included). Reported:
the medians and their ratio; the report's own account of the failing run — how long the
execution ran until it failed, how long the culprit search took — and their ratio (issue 18's
target: the report within ≤ 2× the failing execution's own time); and whether every report
names the failing invocation and the car's token.

Usage: ``python benchmarks/culprits.py [--numCars 20000] [--rounds 5]``
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
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from lipspark import get_spark  # noqa: E402
from lipspark.errors import ExecutionFailed  # noqa: E402
from lipspark.workflow import load_definition, run  # noqa: E402

DEALERS = 4  # workflows/car_dealership.py: the cars of a lot are D<k>C000000 … up to numCars // DEALERS

BAD = "D1C000017"


def passing(num_cars: int) -> str:
    """A car id of dealer1 past the last car of its lot: ``appraise`` sees every car and none raises."""
    return f"D1C{num_cars // DEALERS:06d}"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--numCars", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "culprits.json"))
    args = ap.parse_args(argv)
    cars = load_definition(os.path.join(os.path.dirname(__file__), "..", "workflows", "car_dealership.py"))
    params = {"numCars": args.numCars, "numExec": 1, "acceptance": 0.0, "seed": 0}
    spark = get_spark(app_name="lipspark-bench-culprits")
    spark.sparkContext.setLogLevel("OFF")  # the failing runs fail on purpose
    root = tempfile.mkdtemp(prefix="lipspark-culprits-")
    times: dict[str, list[float]] = {"ok": [], "failing": []}
    split: dict[str, list[float]] = {"execution": [], "culprits": []}  # the report's own account of the failing run
    named: list[bool] = []
    try:
        for i in range(args.rounds):
            for mode in (("ok", "failing") if i % 2 == 0 else ("failing", "ok")):
                d = os.path.join(root, f"{mode}-{i}")
                t0 = time.perf_counter()
                try:
                    run(cars, graph_dir=d, spark=spark, count_graph=False,
                        params={**params, "faultyCar": passing(args.numCars) if mode == "ok" else BAD})
                    assert mode == "ok", "the failing variant did not fail"
                except ExecutionFailed as err:
                    assert mode == "failing", f"the passing variant failed: {err}"
                    r = err.report
                    for k in split:
                        split[k].append(float(r.seconds.get(k, 0.0)))
                    named.append(r.node == "dealer1_bid" and any(f"Cars:{BAD}" in c.tokens or f"Cars:{BAD}" in c.polynomial
                                                                 for c in r.culprits))
                times[mode].append(time.perf_counter() - t0)
                shutil.rmtree(d, ignore_errors=True)
            print(f"round {i + 1}: execution {times['ok'][-1]:.1f}s, failing execution with its report {times['failing'][-1]:.1f}s", flush=True)
        med = {m: statistics.median(v) for m, v in times.items()}
        ran, search = statistics.median(split["execution"]), statistics.median(split["culprits"])
        result = {"numCars": args.numCars, "rounds": args.rounds, "median_seconds": med, "ratio": med["failing"] / med["ok"],
                  "failing_execution_ran": ran, "culprit_search": search, "ratio_to_the_failing_execution": (ran + search) / ran,
                  "report_names_car_and_invocation": all(named) and len(named) == args.rounds, "times": times}
        print(json.dumps({k: v for k, v in result.items() if k != "times"}, indent=1))
        os.makedirs(os.path.dirname(args.out), exist_ok=True)
        with open(args.out, "w") as fh:
            json.dump(result, fh, indent=1)
        return result
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
