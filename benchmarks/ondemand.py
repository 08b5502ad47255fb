"""Fine-grained provenance on demand (issue 12, item 3): what the first query costs on a deferred store.

A car dealership store is run with ``--capture deferred`` (the run's time per invocation is
recorded, provenance off in effect). Then, each as a whole cold process (``lipspark query``):

1. the first query *confined to one dealer invocation*: every module but ``dealer1`` zoomed out,
   then the descendants of one request of the last execution (the request reaches ``dealer1``'s
   bid in that execution; its purchase reads what the bid wrote);
2. the issue's example: the other dealers zoomed out, then the subgraph of ``dealer1``'s ``Bids1``
   output in the last execution (it reaches ``dealer1``'s earlier invocations through its state,
   and the request/and modules that are not zoomed out);
3. the first full backward trace of the last execution's ``BestBid``.

Each query runs on a fresh copy of the store (nothing replayed); reported: wall time, how many
invocations it replayed, their replay time against the same invocations' time in the deferred
run (the target: ≤ 3× for the query confined to one invocation, plus the query), and the same
query on the store once everything it needs is replayed (the second time a user asks).

With ``--ab-service`` each first query runs also with a warm replay service (``lipspark serve``,
started on the fresh copy and waited for until its warm-up ends), interleaved with the runs
without one (``--no-cold``: only with it); the invocations it replayed are then re-run plainly in
this process (:func:`lipspark.workflow.rerun.rerun_invocation`, a warm JVM) right after, the
plain time on the machine as it is at that moment. ``--eager`` times the same queries on an
eager store of the same run (made once with ``lipspark run``, medians of at least 5).

Each query's first and again figures are medians of ``--repeat`` runs (default 5), each on a
fresh copy; with ``--ab-archive`` each first query runs also with the JVM class archive turned
off (``LIPSPARK_CLASS_ARCHIVE=off``, :mod:`lipspark.class_archive`), interleaved. ``--keep DIR``
keeps the deferred store (and the run's times) at DIR and reuses it when it is there.

Usage: ``python benchmarks/ondemand.py [--numCars 20000] [--numExec 10] [--repeat 5] [--only NAME] [--eager] [--ab-service]
[--ab-archive] [--keep DIR] [--out FILE]``
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from lipspark import get_spark  # noqa: E402
from lipspark.workflow import Executor, Store, load_definition  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CAR = os.path.join(HERE, "..", "workflows", "car_dealership.py")
MODULES = ["request", "and", "agg", "choice", "xor", "car", "dealer1", "dealer2", "dealer3", "dealer4"]


def _deferred_run(root: str, params: dict[str, Any]) -> tuple[str, dict[tuple[int, str], float]]:
    """Run the deferred store; the seconds each invocation took (from one invocation's start to the next's)."""
    definition = load_definition(CAR)
    params = definition.with_params(params)
    spark = get_spark(app_name="lipspark-bench-ondemand")
    path = os.path.join(root, "deferred")
    store = Store.create(path, definition.name, True, params, capture="deferred", definition=os.path.abspath(CAR))
    ex = Executor(spark, definition.build(params), store, provenance=True)
    ex.initialize(definition.initial_state(spark, params))
    times: dict[tuple[int, str], float] = {}
    for n in range(1, int(params["numExec"]) + 1):
        marks: list[tuple[str, float]] = []
        inputs = definition.inputs(spark, n, params)
        ex.execute(inputs, on_invocation=lambda node: marks.append((node, time.perf_counter())))
        end = time.perf_counter()
        for (node, t0), (_, t1) in zip(marks, marks[1:] + [("", end)]):
            times[(n, node)] = t1 - t0
        print(f"deferred execution {n}: {sum(t for (e, _), t in times.items() if e == n):.1f}s", file=sys.stderr, flush=True)
    store.unlock()
    return path, times


def _query(store: str, text: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """One cold ``lipspark query`` process: wall seconds, peak memory, output."""
    cmd = ["/usr/bin/time", "-v", os.path.join(os.path.dirname(sys.executable), "lipspark"), "query", store, "-e", text, "--format", "json"]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})})
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"query failed ({p.returncode}): {text}\n{p.stderr[-3000:]}")
    rss = next((int(line.split()[-1]) for line in p.stderr.splitlines() if "Maximum resident set size" in line), 0)
    return {"wall_s": round(wall, 2), "peak_mb": round(rss / 1024, 1), "summary": [r.get("summary") for r in json.loads(p.stdout)]}


def _lipspark(*args: str) -> str:
    p = subprocess.run([os.path.join(os.path.dirname(sys.executable), "lipspark"), *args], capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"lipspark {' '.join(args)} failed ({p.returncode}): {p.stderr[-2000:]}")
    return p.stdout


_RERUN: dict[str, Any] = {}


def _plain_reruns(store: str, invocations: list[tuple[int, str]]) -> float:
    """Seconds to re-run ``invocations`` plainly (provenance off, stored inputs and state, their
    outputs compared with the stored ones: :func:`lipspark.workflow.rerun.rerun_invocation`) in
    this process's Spark, warmed by one such re-run first."""
    from lipspark.workflow.materialize import store_workflow
    from lipspark.workflow.rerun import rerun_invocation

    st = Store.open(store)
    if "workflow" not in _RERUN:
        _RERUN["spark"] = get_spark(app_name="lipspark-bench-ondemand")
        _RERUN["workflow"] = store_workflow(st)
        for n, node in invocations:
            rerun_invocation(st, n, node, spark=_RERUN["spark"], workflow=_RERUN["workflow"])
    t0 = time.perf_counter()
    for n, node in invocations:
        rerun_invocation(st, n, node, spark=_RERUN["spark"], workflow=_RERUN["workflow"])
    return time.perf_counter() - t0


def _eager_store(where: str, cars: int, executions: int) -> str:
    """The same run with eager capture, at ``where/eager`` (made once: reused when it is there),
    executed as the deferred one is (every execution, whatever the buyer decides)."""
    path = os.path.join(where, "eager")
    if not os.path.exists(os.path.join(path, "store.json")):
        shutil.rmtree(path, ignore_errors=True)
        definition = load_definition(CAR)
        params = definition.with_params({"numCars": cars, "numExec": executions})
        spark = get_spark(app_name="lipspark-bench-ondemand")
        t0 = time.perf_counter()
        store = Store.create(path, definition.name, True, params, definition=os.path.abspath(CAR))
        ex = Executor(spark, definition.build(params), store, provenance=True)
        ex.initialize(definition.initial_state(spark, params))
        for n in range(1, executions + 1):
            ex.execute(definition.inputs(spark, n, params))
        store.unlock()
        print(f"eager run: {time.perf_counter() - t0:.1f}s", file=sys.stderr, flush=True)
    return path


def _start_service(store: str, timeout: float = 900.0) -> float:
    """Start a replay service for ``store`` and wait until it has warmed up; the seconds that took."""
    t0 = time.perf_counter()
    _lipspark("serve", store, "--detach", "--idle", "30")
    while time.perf_counter() - t0 < timeout:
        try:
            with open(os.path.join(store, "replays", "service.json")) as fh:
                if json.load(fh).get("warm"):
                    return round(time.perf_counter() - t0, 1)
        except (OSError, ValueError):
            pass
        time.sleep(0.5)
    raise SystemExit(f"the replay service of {store} did not warm up within {timeout:g}s")


def _replayed(store: str) -> list[dict[str, Any]]:
    base = os.path.join(store, "replays", "invocations")
    out = []
    for d in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        try:
            with open(os.path.join(base, d, "done.json")) as fh:
                out.append(json.load(fh))
        except OSError:
            pass
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--numCars", type=int, default=20000)
    ap.add_argument("--numExec", type=int, default=10)
    ap.add_argument("--skip-full", action="store_true", help="skip the full backward trace (it replays most of the store)")
    ap.add_argument("--repeat", type=int, default=5, help="runs per figure (medians)")
    ap.add_argument("--only", action="append", help="run only these queries (one_invocation, issue_example, full_trace)")
    ap.add_argument("--ab-archive", action="store_true", help="also run each first query without the JVM class archive, interleaved")
    ap.add_argument("--ab-service", action="store_true",
                    help="also run each first query with a warm replay service (lipspark serve), interleaved")
    ap.add_argument("--no-cold", action="store_true", help="with --ab-service: skip the first queries without a service")
    ap.add_argument("--eager", action="store_true",
                    help="also time the same queries on an eager store of the same run (made with lipspark run, kept with --keep)")
    ap.add_argument("--keep", help="keep the deferred store here (reused if present)")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "ondemand.json"))
    args = ap.parse_args(argv)
    root = tempfile.mkdtemp(prefix="lipspark-ondemand-")
    try:
        kept = os.path.join(args.keep, "deferred") if args.keep else None
        if kept and os.path.exists(os.path.join(args.keep, "times.json")):
            store = kept
            with open(os.path.join(args.keep, "times.json")) as fh:
                times = {(int(e), node): t for e, node, t in json.load(fh)}
        else:
            store, times = _deferred_run(root, {"numCars": args.numCars, "numExec": args.numExec})
            if kept:
                shutil.rmtree(kept, ignore_errors=True)
                shutil.copytree(store, kept)
                store = kept
                with open(os.path.join(args.keep, "times.json"), "w") as fh:
                    json.dump([[e, node, t] for (e, node), t in times.items()], fh)
        last = args.numExec
        queries = {
            "one_invocation": ("zoomout " + ", ".join(m for m in MODULES if m != "dealer1")
                               + f'; descendants tuple Requests(BidId = "B{last}") execution {last}'),
            "issue_example": f"zoomout dealer2, dealer3, dealer4; subgraph output Bids1 of dealer1_bid execution {last}",
        }
        if not args.skip_full:
            queries["full_trace"] = f"ancestors output BestBid of agg execution {last}"
        # the layouts are probed once per store, by the first query that needs them (kept in
        # replays/layouts.json): probe them here, so each query's figure is its own
        _query(store, "zoomout " + ", ".join(MODULES))
        results: dict[str, Any] = {"numCars": args.numCars, "numExec": args.numExec,
                                   "deferred_run_s": round(sum(times.values()), 1), "queries": {}}
        if args.only:
            queries = {k: v for k, v in queries.items() if k in args.only}
        from statistics import median

        def med(runs: list[dict[str, Any]]) -> dict[str, Any]:
            return {"wall_s": round(median(r["wall_s"] for r in runs), 2), "peak_mb": round(median(r["peak_mb"] for r in runs), 1),
                    "runs_s": [r["wall_s"] for r in runs], "summary": runs[-1]["summary"]}

        for name, text in queries.items():
            firsts, agains, offs, replay_s, plain_s = [], [], [], [], []
            served, served_again, served_replay_s, served_plain_s, served_rerun_s = [], [], [], [], []
            replayed: list[dict[str, Any]] = []
            for i in range(args.repeat):
                if args.ab_service:
                    copy = os.path.join(root, f"q-{name}-{i}-service")
                    shutil.copytree(store, copy, ignore=shutil.ignore_patterns("invocations"))
                    warmed = _start_service(copy)
                    first = _query(copy, text)
                    done = _replayed(copy)
                    first["warm_up_s"] = warmed
                    # the same invocations re-run plainly in this process's warm JVM, right after:
                    # the plain time on the machine as it is now (the run's times saw its own load)
                    served_rerun_s.append(_plain_reruns(copy, [(r["execution"], r["node"]) for r in done]))
                    served.append(first)
                    served_replay_s.append(sum(r["seconds"] for r in done))
                    served_plain_s.append(sum(times[(r["execution"], r["node"])] for r in done))
                    _lipspark("serve", copy, "--stop")
                    served_again.append(_query(copy, text))
                    shutil.rmtree(copy, ignore_errors=True)
                for archive in ([] if args.no_cold else [True, False] if args.ab_archive else [True]):
                    copy = os.path.join(root, f"q-{name}-{i}-{int(archive)}")
                    shutil.copytree(store, copy, ignore=shutil.ignore_patterns("invocations"))
                    first = _query(copy, text, None if archive else {"LIPSPARK_CLASS_ARCHIVE": "off"})
                    replayed = _replayed(copy)
                    if archive:
                        firsts.append(first)
                        replay_s.append(sum(r["seconds"] for r in replayed))
                        plain_s.append(sum(times[(r["execution"], r["node"])] for r in replayed))
                        agains.append(_query(copy, text))
                    else:
                        offs.append(first)
                    shutil.rmtree(copy, ignore_errors=True)
            results["queries"][name] = {"query": text, "runs": args.repeat}
            if firsts:
                plain, replay, first_m, again_m = median(plain_s), median(replay_s), med(firsts), med(agains)
                results["queries"][name].update({
                    "first": first_m, "again": again_m,
                    "replayed": [(r["execution"], r["node"]) for r in replayed],
                    "replay_s": round(replay, 2), "plain_s": round(plain, 2),
                    "ratio_to_plain": round(replay / plain, 2) if plain else None,
                    "first_minus_again_over_plain": round((first_m["wall_s"] - again_m["wall_s"]) / plain, 2) if plain else None,
                })
            if served:
                sp, sr = median(served_plain_s), median(served_replay_s)
                sa = med(served_again)
                results["queries"][name]["first_with_warm_service"] = {
                    **med(served), "warm_up_s": [r["warm_up_s"] for r in served], "replayed": [(r["execution"], r["node"]) for r in done], "replay_s": round(sr, 2),
                    "plain_s": round(sp, 2), "ratio_to_plain": round(sr / sp, 2) if sp else None, "again": sa,
                    "plain_rerun_s": round(median(served_rerun_s), 2), "plain_rerun_runs_s": [round(x, 2) for x in served_rerun_s],
                    "ratio_to_plain_rerun": round(sr / median(served_rerun_s), 2),
                    "first_minus_again_over_plain": round((med(served)["wall_s"] - sa["wall_s"]) / sp, 2) if sp else None}
            if offs:
                results["queries"][name]["first_without_class_archive"] = med(offs)
                results["queries"][name]["archive_speedup"] = round(med(offs)["wall_s"] / first_m["wall_s"], 2)
            if args.eager:
                estore = _eager_store(args.keep or root, args.numCars, args.numExec)
                _query(estore, text)  # the first query of an eager store checks its index: not this figure
                results["queries"][name]["eager"] = med([_query(estore, text) for _ in range(max(5, args.repeat))])
            print(json.dumps({name: results["queries"][name]}, indent=1), file=sys.stderr, flush=True)
        os.makedirs(os.path.dirname(args.out), exist_ok=True)
        with open(args.out, "w") as fh:
            json.dump(results, fh, indent=1)
        return results
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
