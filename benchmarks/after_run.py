"""The first query right after a deferred run (issue 12): what a user waits for, as whole processes.

A deferred ``lipspark run`` stays on as its store's replay service (docs/design.md, "Deferred
capture"), so the first query replays in the run's own warm JVM. This benchmark does what a user
does: on a fresh copy of a deferred car dealership store (numCars 20,000, 10 executions, queried
before: its layouts and coarse index are there, no invocation replayed), it runs

1. ``lipspark run workflows/car_dealership.py --graph COPY --executions 1`` (execution 11), then
   at once
2. the first query confined to one dealer invocation, as one cold ``lipspark query`` process:
   every module but ``dealer1`` zoomed out, then the descendants of execution 11's request (it
   replays ``dealer1_bid`` and ``dealer1_buy`` of execution 11), then
3. the same query again (the query's own cost once nothing is left to replay).

Each round does this twice, interleaved: as ``lipspark run`` does by default (the run's Spark
serves the query) and with ``--no-serve`` (the query process replays on a JVM of its own).
Reported, medians of ``--repeat`` rounds: the run's and the queries' wall times, the replayed
invocations' time in the run (*plain*, from the run's own table of invocation times), and
``(first − again) / plain``, the target's measure (≤ 3×: the first query costs at most three
times the plain time of what it replays, plus the query).

With ``--store DIR`` each round appends ``--executions`` (default 1) to a fresh copy of the deferred
store ``DIR`` (of ``python benchmarks/ondemand.py --keep K``: ``K/deferred``), as above; without it,
each round runs a new store of ``--numExec`` executions (the issue's case: 10, numCars 20,000),
so that the invocations the query replays ran on the run's warm JVM as in any long run.

Usage: ``python benchmarks/after_run.py [--store DIR] [--executions K] [--modes serve,no-serve] [--repeat 5] [--out FILE]``
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from statistics import median
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
CAR = os.path.join(HERE, "..", "workflows", "car_dealership.py")
MODULES = ["request", "and", "agg", "choice", "xor", "car", "dealer1", "dealer2", "dealer3", "dealer4"]
LIPSPARK = os.path.join(os.path.dirname(sys.executable), "lipspark")
_ROW = re.compile(r"^(\S+)\s+\d+\s+\d+\s+\d+\s+(?:\d+\s+)?([0-9.]+)s$")


def _timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall seconds, peak MB and standard output of one whole process."""
    t0 = time.perf_counter()
    p = subprocess.run(["/usr/bin/time", "-v", *cmd], capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stderr[-3000:]}")
    rss = next((int(line.split()[-1]) for line in p.stderr.splitlines() if "Maximum resident set size" in line), 0)
    return wall, rss / 1024, p.stdout


def _invocation_seconds(summary: str) -> dict[str, float]:
    """The run's own time of each invocation of its last execution (its summary's table)."""
    return {m.group(1): float(m.group(2)) for line in summary.splitlines() if (m := _ROW.match(line.strip()))}


def _replayed(store: str) -> list[tuple[int, str, float]]:
    base = os.path.join(store, "replays", "invocations")
    out = []
    for d in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        try:
            with open(os.path.join(base, d, "done.json")) as fh:
                doc = json.load(fh)
            out.append((int(doc["execution"]), str(doc["node"]), float(doc["seconds"])))
        except (OSError, ValueError, KeyError):
            pass
    return out


def _service_replay_wall(store: str) -> float | None:
    """The wall time of the service's replay request (its log's ``replayed N in Xs``): the
    replays of one request run two at a time, so their own times add up to more."""
    try:
        with open(os.path.join(store, "replays", "service.log")) as fh:
            walls = [float(m.group(1)) for line in fh if (m := re.search(r"replayed \d+ in ([0-9.]+)s$", line.strip()))]
    except OSError:
        return None
    return sum(walls) if walls else None


def one(store: str | None, where: str, serve: bool, params: dict[str, Any], executions: int) -> dict[str, Any]:
    """One round of one mode: ``executions`` appended to a fresh copy of ``store`` (or run into a
    new store when it is ``None``), then the query on the last one."""
    env = {k: v for k, v in os.environ.items() if k != "LIPSPARK_SERVE"}
    copy = os.path.join(where, "serve" if serve else "no-serve")
    if store is not None:
        shutil.copytree(store, copy, ignore=shutil.ignore_patterns("invocations", "service.*"))
    try:
        run = [LIPSPARK, "run", CAR, "--graph", copy, "--executions", str(executions), "--capture", "deferred", "--quiet",
               *[a for k, v in params.items() for a in ("--param", f"{k}={v}")], *([] if serve else ["--no-serve"])]
        run_s, run_mb, summary = _timed(run, env)
        seconds = _invocation_seconds(summary)
        with open(os.path.join(copy, "store.json")) as fh:
            n = len(json.load(fh)["executions"])
        text = "zoomout " + ", ".join(m for m in MODULES if m != "dealer1") + f'; descendants tuple Requests(BidId = "B{n}") execution {n}'
        query = [LIPSPARK, "query", copy, "-e", text, "--format", "json"]
        first_s, first_mb, out = _timed(query, env)
        replayed = _replayed(copy)
        wall = _service_replay_wall(copy) if serve else None
        again_s, again_mb, again_out = _timed(query, env)
        if json.loads(out)[-1] != json.loads(again_out)[-1]:  # the zoomed view's summary counts what is not replayed yet
            raise SystemExit("the first query and the same query again answered differently")
        plain = sum(seconds[node] for e, node, _ in replayed if e == n)
        return {"run_s": round(run_s, 2), "first_s": round(first_s, 2), "first_mb": round(first_mb, 1), "again_s": round(again_s, 2),
                "replayed": [[e, node] for e, node, _ in replayed], "replay_s": round(sum(s for _, _, s in replayed), 2),
                "replay_wall_s": None if wall is None else round(wall, 2),
                "plain_s": round(plain, 2), "ratio": round((first_s - again_s) / plain, 2) if plain else None,
                "replay_over_plain": round((wall if wall is not None else sum(s for _, _, s in replayed)) / plain, 2) if plain else None}
    finally:
        if serve:
            subprocess.run([LIPSPARK, "serve", copy, "--stop"], capture_output=True, env=env)
        shutil.rmtree(copy, ignore_errors=True)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", help="append to a copy of this deferred car dealership store (python benchmarks/ondemand.py --keep K: "
                                    "K/deferred); default: a new store each round")
    ap.add_argument("--executions", type=int, default=None, help="executions each round runs (default: 1 appended, or numExec new)")
    ap.add_argument("--numCars", type=int, default=20000)
    ap.add_argument("--numExec", type=int, default=10)
    ap.add_argument("--modes", default="serve,no-serve", help="serve (lipspark run's default), no-serve, or both (interleaved)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", default=os.path.join(HERE, "results", "after_run.json"))
    args = ap.parse_args(argv)
    if args.store:
        params = json.load(open(os.path.join(args.store, "store.json")))["params"]
        params = {k: params[k] for k in ("numCars", "numExec") if k in params}
    else:  # the buyer never accepts, so that every execution runs (as in benchmarks/ondemand.py)
        params = {"numCars": args.numCars, "numExec": args.numExec, "acceptance": 0.0}
    executions = args.executions or (1 if args.store else int(params["numExec"]))
    modes = [m.strip() == "serve" for m in args.modes.split(",")]
    rounds: dict[str, list[dict[str, Any]]] = {"serve": [], "no_serve": []}
    with tempfile.TemporaryDirectory(prefix="lipspark-after-run-") as where:
        for i in range(args.repeat):
            for serve in (modes if i % 2 == 0 else modes[::-1]):
                r = one(args.store, where, serve, params, executions)
                rounds["serve" if serve else "no_serve"].append(r)
                print(json.dumps({"round": i, "serve": serve, **r}), file=sys.stderr, flush=True)
    results: dict[str, Any] = {"store": os.path.abspath(args.store) if args.store else None, "params": params,
                               "executions": executions, "repeat": args.repeat, "modes": {}}
    for mode, runs in [(m, r) for m, r in rounds.items() if r]:
        results["modes"][mode] = {
            **{k: round(median(r[k] for r in runs), 2) for k in ("run_s", "first_s", "first_mb", "again_s", "replay_s", "plain_s", "ratio",
                                                                 "replay_over_plain") if all(r[k] is not None for r in runs)},
            **({"replay_wall_s": round(median(r["replay_wall_s"] for r in runs), 2)} if all(r.get("replay_wall_s") is not None for r in runs) else {}),
            "replayed": runs[-1]["replayed"], "runs": runs}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(results, fh, indent=1)
    print(json.dumps({m: {k: v for k, v in d.items() if k != "runs"} for m, d in results["modes"].items()}, indent=1))
    return results


if __name__ == "__main__":
    main()
