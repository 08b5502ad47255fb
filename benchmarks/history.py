"""Cost follows data, not history: a store appended one `lipspark run --executions 1` at a time.

Every step is timed as a user waits for it, as whole processes: ``lipspark run
workflows/car_dealership.py --executions 1`` into the same store (a new JVM each time), then a
cold ``lipspark query`` tracing the newest execution's best bid. Every execution is the same size
(acceptance 0: the buyer never buys), so a run or a query that reads the whole graph, or every
stored execution, grows with the step number, and one that reads manifests and the new
execution stays flat.

Two cold queries follow each step, each timed as the median of five processes. The judged one, ``descendants tuple Requests execution N``,
has an answer of the same size at every step (the newest request's 100 descendants), so its
time shows what opening a store with a longer history costs. The other, the trace of the newest
best bid, is reported beside it with its answer's size: the dealers' state carries provenance
from every earlier execution, so that answer itself grows with history (410 nodes after 5
executions, 12,875 after 50) and its time follows the answer, as it should.

The store is built by ``--runs`` such steps (the per-step series is kept; with ``--batch``,
steps 6 onwards are one ``lipspark run`` process, which writes the same store sooner), with a
copy taken after step 5. Then the judged comparison, A/B interleaved so that a machine busier at one time
than another does not tilt it: five times, one more step on a fresh copy of the 5-execution store,
then one on a copy of the full store; the medians of the two (issue 17's target: the 50th ≤ 1.2×
the 5th, for the run and for the query). Writes ``benchmarks/results/history.json``.

Usage: ``python benchmarks/history.py [--runs 50] [--numCars 200] [--capture eager|deferred|off]
[--batch] [--reuse EARLY FULL]`` (``--reuse``: skip building; judge on copies of two stores built
earlier by this benchmark, the 5-execution one and the ``--runs``-execution one)
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


QUERIES = {"query": "descendants tuple Requests execution {n}",  # judged: the same answer size at every step
           "trace": "ancestors output BestBid of agg execution {n}"}  # reported: its answer grows with history


#: cold processes per query after each step (their median is the step's figure: one process
#: alone is at the mercy of whatever else the machine does in that half second)
QUERY_REPEATS = 5


def _query(store: str, text: str) -> tuple[float, int]:
    """Median wall time of cold ``lipspark query`` processes, and how many nodes it answered."""
    cmd = [LIPSPARK, "query", store, "-e", text, "--format", "json"]
    walls = []
    for _ in range(QUERY_REPEATS):
        t0 = time.perf_counter()
        done = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        walls.append(time.perf_counter() - t0)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stderr[-2000:]}")
    return statistics.median(walls), len(json.loads(done.stdout)[0]["rows"])


def _step(store: str, n: int, run_cmd: list[str], query: bool) -> tuple[float, dict[str, tuple[float, int]]]:
    """One more execution (execution ``n``) appended to ``store``, then the cold queries on it."""
    run_s = _timed([*run_cmd, "--graph", store])
    return run_s, {name: _query(store, q.format(n=n)) for name, q in QUERIES.items()} if query else {}


def _executions(store: str) -> int:
    with open(os.path.join(store, "store.json")) as fh:
        return len(json.load(fh)["executions"])


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=5, help="A/B repetitions of the judged comparison")
    ap.add_argument("--numCars", type=int, default=200)
    ap.add_argument("--capture", choices=["eager", "deferred", "off"], default="eager")
    ap.add_argument("--batch", action="store_true",
                    help="append executions 6..RUNS in one process instead of one process each (same store, less waiting)")
    ap.add_argument("--reuse", nargs=2, metavar=("EARLY", "FULL"),
                    help="judge on copies of these two stores (5 and RUNS executions) instead of building them")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "history.json"))
    args = ap.parse_args(argv)
    if args.runs < 10:
        raise SystemExit("--runs must be at least 10")
    tmp = tempfile.mkdtemp(prefix="lipspark-history-")
    store, early = os.path.join(tmp, "cars"), os.path.join(tmp, "cars-5")
    mode = {"eager": [], "deferred": ["--capture", "deferred"], "off": ["--no-provenance"]}[args.capture]
    run_cmd = [LIPSPARK, "run", "workflows/car_dealership.py", "--executions", "1",
               "--param", f"numCars={args.numCars}", "--param", "acceptance=0", *mode]
    query = args.capture == "eager"  # a deferred store's first query replays: not what this measures
    series: list[tuple[float, dict[str, tuple[float, int]]]] = []
    ab: dict[str, list[tuple[float, dict[str, tuple[float, int]]]]] = {"5": [], str(args.runs): []}
    steps = 0 if args.reuse else 5 if args.batch else args.runs
    if args.reuse:
        for src, dst, want in ((args.reuse[0], early, 5), (args.reuse[1], store, args.runs)):
            if _executions(src) != want:
                raise SystemExit(f"--reuse: {src} holds {_executions(src)} executions, expected {want}")
            shutil.copytree(src, dst)
    try:
        for n in range(1, steps + 1):
            series.append(_step(store, n, run_cmd, query))
            print(f"step {n}: run {series[-1][0]:.1f}s" + "".join(f", {k} {v[0]:.2f}s" for k, v in series[-1][1].items()), flush=True)
            if n == 5:
                shutil.copytree(store, early)
        if args.batch and not args.reuse:  # executions 6..runs in one process: the same store, built faster
            batch = [*run_cmd, "--graph", store]
            batch[batch.index("--executions") + 1] = str(args.runs - 5)
            print(f"executions 6-{args.runs} in one run: {_timed(batch):.1f}s", flush=True)
        for rep in range(args.repeats):
            for label, snapshot, n in (("5", early, 6), (str(args.runs), store, args.runs + 1)):
                work = os.path.join(tmp, "work")
                shutil.copytree(snapshot, work)
                ab[label].append(_step(work, n, run_cmd, query))
                shutil.rmtree(work)
                print(f"A/B {rep + 1}: after {label}: run {ab[label][-1][0]:.1f}s"
                      + "".join(f", {k} {v[0]:.2f}s ({v[1]} nodes)" for k, v in ab[label][-1][1].items()), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    result: dict = {"runs": args.runs, "numCars": args.numCars, "capture": args.capture,
                    "reused_stores": bool(args.reuse),
                    "series_run_s": [round(r, 2) for r, _ in series],
                    "series_query_s": [round(q["query"][0], 3) for _, q in series if q]}
    late = str(args.runs)
    a, b = statistics.median(r for r, _ in ab["5"]), statistics.median(r for r, _ in ab[late])
    result.update({"run_after_5_median_s": round(a, 3), f"run_after_{late}_median_s": round(b, 3), "run_ratio": round(b / a, 2)})
    for name in QUERIES if query else ():
        a = statistics.median(q[name][0] for _, q in ab["5"])
        b = statistics.median(q[name][0] for _, q in ab[late])
        result.update({f"{name}_after_5_median_s": round(a, 3), f"{name}_after_{late}_median_s": round(b, 3),
                       f"{name}_ratio": round(b / a, 2), f"{name}_nodes_after_5": ab["5"][0][1][name][1],
                       f"{name}_nodes_after_{late}": ab[late][0][1][name][1]})
    print(json.dumps({k: v for k, v in result.items() if not k.startswith("series")}, indent=1))
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(result, fh, indent=1)
    return result


if __name__ == "__main__":
    main()
