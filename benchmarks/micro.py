"""Micro-benchmark: 2M-row group-by aggregate and join + aggregate, provenance on vs off.

Each job reads its input from Parquet and writes its result to Parquet; the tracked job also
writes the provenance graph. Plain and tracked runs are interleaved (A/B) and the ratio of the
medians is reported, with graph nodes, edges and bytes per edge. Writes JSON to
``benchmarks/results/micro.json``.

Usage: ``python benchmarks/micro.py [--rows 2000000] [--reps 5] [--quick]``
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

from pyspark.sql import functions as F

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from lipspark import Tracker, get_spark  # noqa: E402
from lipspark.graph.stats import graph_stats  # noqa: E402


def make_inputs(spark, root: str, rows: int, keys: int, groups: int) -> dict[str, str]:
    fact = os.path.join(root, "fact")
    dim = os.path.join(root, "dim")
    (
        spark.range(rows, numPartitions=2)
        .select(
            F.col("id"),
            (F.xxhash64("id") % keys).cast("int").alias("k").__abs__() if False else F.abs(F.xxhash64("id") % keys).cast("int").alias("k"),
            (F.abs(F.xxhash64(F.col("id") + 7)) % 1000).cast("double").alias("v"),
        )
        .write.parquet(fact)
    )
    spark.range(keys, numPartitions=1).select(F.col("id").cast("int").alias("k"), (F.col("id") % groups).cast("int").alias("grp")).write.parquet(dim)
    return {"fact": fact, "dim": dim}


def groupby_job(fact, dim=None):
    return fact.groupBy("k").agg(F.sum("v").alias("total"), F.count(F.lit(1)).alias("n"), F.max("v").alias("top"))


def join_agg_job(fact, dim):
    return fact.join(dim, "k").groupBy("grp").agg(F.sum("v").alias("total"), F.count(F.lit(1)).alias("n"))


JOBS = {"groupby": groupby_job, "join_agg": join_agg_job}


def run(spark, inputs, job, tracked: bool, out: str) -> float:
    shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    fact = spark.read.parquet(inputs["fact"])
    dim = spark.read.parquet(inputs["dim"])
    if tracked:
        t = Tracker(spark)
        fact = t.annotate(fact, "Fact", key=["id"])
        dim = t.annotate(dim, "Dim", key=["k"])
        JOBS[job](fact, dim).to_plain().write.parquet(os.path.join(out, "result"))
        t.write(os.path.join(out, "graph"))
    else:
        JOBS[job](fact, dim).write.parquet(os.path.join(out, "result"))
    return time.perf_counter() - t0


def one_row_trace(graph_dir: str, reps: int = 5) -> dict:
    """Load the tracked run's graph into the index and time the backward trace (all ancestors) of
    one output row: the result row in the middle of the output, median of ``reps``."""
    import numpy as np

    from lipspark.graph.index import GraphIndex
    from lipspark.query.trace import ancestors

    t0 = time.perf_counter()
    g = GraphIndex.load(graph_dir)
    load_s = time.perf_counter() - t0
    # output rows: derived p-nodes (edges in) that nothing derives from (no edges out); unused base
    # tuples (the group-by job annotates dim without using it) have neither
    sinks = np.flatnonzero((np.diff(g.out_ptr) == 0) & (np.diff(g.in_ptr) > 0) & ~g.is_v)
    out = int(g.ids[sinks[len(sinks) // 2]])
    times, answer = [], None
    for _ in range(reps):
        t0 = time.perf_counter()
        answer = ancestors(g, out)
        times.append((time.perf_counter() - t0) * 1000)
    return {"graph_load_s": load_s, "trace_one_row_ms": statistics.median(times), "trace_one_row_nodes": len(answer),
            "output_rows": len(sinks)}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--keys", type=int, default=10_000)
    ap.add_argument("--groups", type=int, default=100)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--jobs", default="groupby,join_agg")
    ap.add_argument("--quick", action="store_true", help="200k rows, 3 reps (smoke test)")
    ap.add_argument("--no-trace", dest="trace", action="store_false", help="skip loading the graph for the one-row trace")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "micro.json"))
    args = ap.parse_args(argv)
    if args.quick:
        args.rows, args.reps = 200_000, 3
    spark = get_spark(app_name="lipspark-bench")
    root = tempfile.mkdtemp(prefix="lipspark-bench-")
    results = {"rows": args.rows, "keys": args.keys, "groups": args.groups, "reps": args.reps, "master": spark.sparkContext.master, "jobs": {}}
    try:
        inputs = make_inputs(spark, root, args.rows, args.keys, args.groups)
        for job in args.jobs.split(","):
            for tracked in (False, True):  # warm-up
                run(spark, inputs, job, tracked, os.path.join(root, "warm"))
            plain, tracked_t = [], []
            for _ in range(args.reps):
                plain.append(run(spark, inputs, job, False, os.path.join(root, "plain")))
                tracked_t.append(run(spark, inputs, job, True, os.path.join(root, "tracked")))
            stats = graph_stats(os.path.join(root, "tracked", "graph"))
            trace = one_row_trace(os.path.join(root, "tracked", "graph")) if args.trace else {}
            res = {
                "plain_s": plain,
                "tracked_s": tracked_t,
                "plain_median_s": statistics.median(plain),
                "tracked_median_s": statistics.median(tracked_t),
                "ratio": statistics.median(tracked_t) / statistics.median(plain),
                "graph_nodes": stats.nodes,
                "graph_edges": stats.edges,
                "graph_bytes": stats.bytes,
                "bytes_per_edge": stats.bytes_per_edge,
                **trace,
            }
            results["jobs"][job] = res
            print(f"{job:9s} plain {res['plain_median_s']:.2f}s tracked {res['tracked_median_s']:.2f}s "
                  f"ratio {res['ratio']:.2f}x  graph {stats.nodes:,} nodes {stats.edges:,} edges "
                  f"{stats.bytes:,} B ({stats.bytes_per_edge:.2f} B/edge)"
                  + (f"; one-row backward trace {trace['trace_one_row_ms']:.2f} ms ({trace['trace_one_row_nodes']:,} nodes; "
                     f"graph load {trace['graph_load_s']:.1f}s)" if trace else ""), flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(results, fh, indent=1)
    return results


if __name__ == "__main__":
    main()
