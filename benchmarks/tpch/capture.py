"""Capture overhead on TPC-H (issue 13, item 3): each query plain against the same query with
provenance, interleaved, medians.

Data from ``tpchgen-cli`` at ``--scale`` (default 1), generated once into a cache directory.
Each run reads the relations the query uses from Parquet (no caching between runs) and writes
the query's result to Parquet; the tracked run annotates them (``Tracker.annotate`` with each
relation's key), writes the result with its annotation columns (what a workflow's eager
capture writes) and the provenance graph (``Tracker.write``). Plain and tracked runs alternate,
``--reps`` times each (default 5); the ratio is tracked median / plain median. Targets: ≤ 1.3×
on Q1, Q3, Q10 and Q12 (Smoke: ≤ 1.22× in-engine; Titian on Spark 4: 1.25–1.60×).

A key is checked by a Spark aggregation the first time a relation's files are annotated with it;
the verdict is kept for those files (``Tracker.annotate``), so the runs after the first skip it.
The benchmark starts from an empty key cache (a temporary ``XDG_CACHE_HOME``) and reports the
first tracked run of each query apart (``first_tracked_s``: the checks of the relations it
annotates for the first time, and a cold JVM for that query's plan).

Usage: ``python -m benchmarks.tpch.capture [--scale 1] [--queries 1,3,10,12] [--reps 5] [--out FILE]``
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
import warnings
from typing import Any

from benchmarks.tpch.data import KEYS, TABLES, Tables, generate
from benchmarks.tpch.queries import QUERIES

HERE = os.path.dirname(os.path.abspath(__file__))


class _Read:
    """The relations a query reads, read (and annotated, for a tracked run) when it first asks
    for them, as a job reads and annotates what it uses: plain and tracked runs alike."""

    def __init__(self, spark: Any, root: str, sf: float, tracker: Any) -> None:
        self.spark, self.root, self.sf, self.tracker = spark, root, sf, tracker

    def __getattr__(self, name: str) -> Any:
        if name not in TABLES:
            raise AttributeError(name)
        df = self.spark.read.parquet(os.path.join(self.root, f"{name}.parquet"))
        if self.tracker is not None:
            df = self.tracker.annotate(df, name, key=list(KEYS[name]))
        setattr(self, name, df)
        return df


def _tables(spark: Any, root: str, sf: float, tracker: Any = None) -> Tables:
    return _Read(spark, root, sf, tracker)  # type: ignore[return-value]  # a Tables read on demand


def _run(spark: Any, root: str, sf: float, n: int, tracked: bool, out: str) -> float:
    from lipspark import Tracker

    shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    if tracked:
        t = Tracker(spark)
        result = QUERIES[n](_tables(spark, root, sf, t))
        result.with_annotations().write.parquet(os.path.join(out, "result"))
        t.write(os.path.join(out, "graph"))
    else:
        QUERIES[n](_tables(spark, root, sf)).write.parquet(os.path.join(out, "result"))
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> dict[str, Any]:
    from lipspark import get_spark
    from lipspark.errors import ProvenanceWarning

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--queries", default="1,3,10,12")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--data", help="where the generated data is cached (default: the temporary directory)")
    ap.add_argument("--out", default=os.path.join(HERE, "..", "results", "tpch_capture.json"))
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore", ProvenanceWarning)
    keys = tempfile.mkdtemp(prefix="lipspark-tpch-keys-")
    cache_home = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = keys  # no key verdicts from earlier runs: the first tracked run checks them
    queries = [int(q) for q in args.queries.split(",")] if args.queries != "all" else sorted(QUERIES)
    t0 = time.perf_counter()
    root = generate(args.scale, args.data)
    gen_s = time.perf_counter() - t0
    spark = get_spark(app_name="lipspark-bench-tpch")
    results: dict[str, Any] = {"scale": args.scale, "reps": args.reps, "master": spark.sparkContext.master,
                               "generate_s": round(gen_s, 1), "queries": {}}
    work = tempfile.mkdtemp(prefix="lipspark-tpch-capture-")
    try:
        for n in queries:
            plain: list[float] = []
            tracked: list[float] = []
            _run(spark, root, args.scale, n, False, os.path.join(work, "warm"))  # the first run of a query warms the JVM
            first = _run(spark, root, args.scale, n, True, os.path.join(work, "warm"))  # and checks keys not yet checked
            for _ in range(args.reps):
                plain.append(_run(spark, root, args.scale, n, False, os.path.join(work, "plain")))
                tracked.append(_run(spark, root, args.scale, n, True, os.path.join(work, "tracked")))
            pm, tm = statistics.median(plain), statistics.median(tracked)
            results["queries"][f"Q{n}"] = {"first_tracked_s": round(first, 2), "plain_s": [round(x, 2) for x in plain], "tracked_s": [round(x, 2) for x in tracked],
                                           "plain_median_s": round(pm, 2), "tracked_median_s": round(tm, 2), "ratio": round(tm / pm, 2)}
            print(f"Q{n}: plain {pm:.2f}s, tracked {tm:.2f}s, {tm / pm:.2f}x", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(keys, ignore_errors=True)
        if cache_home is None:
            os.environ.pop("XDG_CACHE_HOME", None)
        else:
            os.environ["XDG_CACHE_HOME"] = cache_home
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(results, fh, indent=1)
    return results


if __name__ == "__main__":
    main()
