"""Cost follows data, not history: a store appended one `lipspark run --executions 1` at a time.

Each step is two whole processes, timed from outside as a user waits for them: ``lipspark run
workflows/car_dealership.py --executions 1`` into the same store (a new JVM each time), then a
cold ``lipspark query`` tracing the newest execution's best bid. With every execution the same
size (acceptance 0: the buyer never buys), a run or a query that reads the whole graph, or every
stored execution, grows with the step number; one that reads manifests and the new execution
stays flat. Compared: the median of steps 3–7 ("the 5th") against the median of the last five
("the 50th" for 50 steps); issue 17's target is a ratio ≤ 1.2 for both. Writes
``benchmarks/results/history.json``.

Usage: ``python benchmarks/history.py [--runs 50] [--numCars 200] [--capture eager|deferred|off]``
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
LIPSPARK = os.path.join(os.path.dirname(sys.executable), "lipspark")


def _timed(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stderr[-2000:]}")
    return wall


def _window(xs: list[float], start: int, size: int = 5) -> float:
    return statistics.median(xs[start:start + size])


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--numCars", type=int, default=200)
    ap.add_argument("--capture", choices=["eager", "deferred", "off"], default="eager")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "history.json"))
    args = ap.parse_args(argv)
    if args.runs < 10:
        raise SystemExit("--runs must be at least 10 (two windows of five)")
    store = os.path.join(tempfile.mkdtemp(prefix="lipspark-history-"), "cars")
    mode = {"eager": [], "deferred": ["--capture", "deferred"], "off": ["--no-provenance"]}[args.capture]
    run_cmd = [LIPSPARK, "run", "workflows/car_dealership.py", "--executions", "1", "--graph", store,
               "--param", f"numCars={args.numCars}", "--param", "acceptance=0", *mode]
    runs: list[float] = []
    queries: list[float] = []
    try:
        for n in range(1, args.runs + 1):
            runs.append(_timed(run_cmd))
            if args.capture != "off":
                queries.append(_timed([LIPSPARK, "query", store, "-e", f"ancestors output BestBid of agg execution {n}", "--format", "json"]))
            print(f"step {n}: run {runs[-1]:.1f}s" + (f", query {queries[-1]:.2f}s" if queries else ""), flush=True)
    finally:
        shutil.rmtree(os.path.dirname(store), ignore_errors=True)
    result: dict = {"runs": args.runs, "numCars": args.numCars, "capture": args.capture,
                    "run_s": [round(x, 2) for x in runs], "query_s": [round(x, 3) for x in queries]}
    for name, xs in (("run", runs), ("query", queries)):
        if xs:
            early, late = _window(xs, 2), _window(xs, len(xs) - 5)
            result[f"{name}_early_median_s"] = round(early, 3)
            result[f"{name}_late_median_s"] = round(late, 3)
            result[f"{name}_late_over_early"] = round(late / early, 2)
    print(json.dumps({k: v for k, v in result.items() if not k.endswith("_s") or "median" in k}, indent=1))
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(result, fh, indent=1)
    return result


if __name__ == "__main__":
    main()
