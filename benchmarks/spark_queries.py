"""The Spark query engine on graphs of 10M to 100M+ edges (issue 15): tiled car dealership graphs.

A source store's partitioned tables (``lipspark partition``) are copied ``copies`` times into
one graph of disjoint *tiles* (pyarrow, block by block; nothing of it is committed): node ids,
set ids, segment numbers and executions are renumbered per tile (execution ``e`` of tile ``t``
is ``e + t·E``), so a query can name one tile's output. Then, on local[2], each query is run
``--reps`` times in a fresh :class:`~lipspark.query.Session` on a warm Spark (in-process), and
as whole cold ``lipspark query --engine spark`` processes:

* one output's backward trace (``ancestors output BestBid of agg execution N``), target ≤ 5 s
  at ≥ 100M edges (CSProv: 0.9–2.2 s on 96 cores; Titian ~1 s per one-row trace);
* a deletion's impact (``delete node TOKEN``: the what-if of a car of the middle tile), target
  ≤ 30 s.

Every rep's answer must equal the first's; on the source store the answers must equal the
in-memory engine's.

Usage: ``.venv/bin/python -m benchmarks.spark_queries --source /work/bench-ondemand2/eager --edges 10e6,100e6``
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
#: per tile, node ids move by a multiple of this (int64 arithmetic wraps: a bijection per tile);
#: its low 12 bits are zero, so ids derived from an invocation's by their low bits (its zoom
#: node's, ``id | 1``) stay beside it
_STEP = (0x9E3779B97F4A7C15 << 12) & (2**64 - 1)
_ID_STEP = np.int64(_STEP - 2**64 if _STEP >= 2**63 else _STEP)
_ROW_GROUP = 1 << 16


def _remap_sets(sets: np.ndarray, block_offset: int) -> np.ndarray:
    old_block = (sets >> 32) - 1
    return ((old_block + block_offset + 1) << 32) | (sets & 0xFFFFFFFF)


def tile(source: str, out: str, copies: int) -> dict[str, Any]:
    """Write ``out/partitions/``: ``copies`` renumbered copies of ``source``'s partitioned tables."""
    from lipspark.engines import zoom_deltas
    from lipspark.graph.partitions import Partitions

    src = Partitions.open(source)
    zoom = zoom_deltas(source, src) or {}
    B = len(src.blocks)
    segs = pa.concat_tables([pq.read_table(f) for f in src.files("segments")])
    seg_values = np.unique(np.asarray(segs.column("seg").to_numpy(), dtype=np.int64))
    nseg = len(seg_values)
    E = int(np.nanmax(segs.column("execution").to_numpy(zero_copy_only=False).astype("float64")))
    if (copies * nseg) >= 2**31:
        raise SystemExit(f"{copies} tiles of {nseg} segments do not fit int32 segment numbers")
    pdir = os.path.join(out, "partitions")
    shutil.rmtree(out, ignore_errors=True)
    for kind in ("nodes", "edges", "segments", "hubs", "invocations"):
        os.makedirs(os.path.join(pdir, kind))
    sets_all = np.fromfile(os.path.join(src.root, "set.i8"), dtype="<i8")
    merges = np.fromfile(os.path.join(src.root, "merges.i8"), dtype="<i8").reshape(-1, 2)
    blocks: list[dict[str, Any]] = []
    node_end, pairs = 0, 0
    ids_seen: list[np.ndarray] = []
    with open(os.path.join(pdir, "set.i8"), "wb") as fs, open(os.path.join(pdir, "merges.i8"), "wb") as fm:
        for t in range(copies):
            with np.errstate(over="ignore"):
                shift = np.int64(t) * _ID_STEP if t else np.int64(0)

            def ids(a: Any) -> np.ndarray:
                with np.errstate(over="ignore"):
                    return np.asarray(a, dtype=np.int64) + shift

            def seg(a: Any) -> np.ndarray:
                return (np.searchsorted(seg_values, np.asarray(a, dtype=np.int64)) + t * nseg).astype(np.int32)

            off = t * B
            for b in range(B):
                nb = off + b
                for kind in ("nodes", "invocations"):
                    n = pq.read_table(src.files(kind, [b])[0])
                    nid = ids(n.column("id").to_numpy())
                    if kind == "nodes":
                        ids_seen.append(nid)
                    n = n.set_column(0, "id", pa.array(nid)).set_column(1, "set", pa.array(_remap_sets(n.column("set").to_numpy(), off)))
                    n = n.set_column(n.schema.get_field_index("seg"), "seg", pa.array(seg(n.column("seg").to_numpy())))
                    pq.write_table(n, os.path.join(pdir, f"{kind}/b{nb:06d}.parquet"), row_group_size=_ROW_GROUP, compression="zstd")
                e = pq.read_table(src.files("edges", [b])[0])
                e = pa.table({"src": ids(e.column("src").to_numpy()), "dst": ids(e.column("dst").to_numpy()),
                              "set": _remap_sets(e.column("set").to_numpy(), off)})
                pq.write_table(e, os.path.join(pdir, f"edges/b{nb:06d}.parquet"), row_group_size=_ROW_GROUP, compression="zstd")
                h = pq.read_table(src.files("hubs", [b])[0])
                h = pa.table({"hub": ids(h.column("hub").to_numpy()), "set": _remap_sets(h.column("set").to_numpy(), off)})
                pq.write_table(h, os.path.join(pdir, f"hubs/b{nb:06d}.parquet"))
                s = pq.read_table(src.files("segments", [b])[0]).to_pandas()
                s["seg"] = seg(s["seg"].to_numpy())
                s["execution"] = (s["execution"].astype("Int64") + t * E).astype("Int64")
                inv = s["invocation"].astype("Int64")
                known = inv.notna().to_numpy()
                moved = inv.copy()
                moved[known] = ids(inv[known].to_numpy(dtype=np.int64))
                s["invocation"] = moved
                pq.write_table(pa.Table.from_pandas(s, preserve_index=False), os.path.join(pdir, f"segments/b{nb:06d}.parquet"))
                blk = src.blocks[b]
                lo = int(blk["node_end"]) - int(blk["nodes"])
                fs.write(_remap_sets(sets_all[lo:int(blk["node_end"])], off).astype("<i8").tobytes())
                m0, m1 = blk["merges"]
                mg = merges[m0:m1]
                fm.write(np.stack([_remap_sets(mg[:, 0], off), _remap_sets(mg[:, 1], off)], axis=1).astype("<i8").tobytes()
                         if len(mg) else b"")
                node_end += int(blk["nodes"])
                names = dict(blk.get("names", {}))
                if "execution" in names:
                    names["execution"] = [None if e is None else int(e) + t * E for e in names["execution"]]
                blocks.append({**blk, "graph": f"tile{t:04d}/{blk['graph']}", "node_end": node_end,
                               "merges": [pairs, pairs + len(mg)], **({"names": names} if names else {})})
                pairs += len(mg)
    keys, root = src.representatives()  # the merges resolved: each tile's are the source's, renumbered
    with open(os.path.join(pdir, "roots.i8"), "wb") as fr:
        fr.write(np.concatenate([_remap_sets(keys, t * B) for t in range(copies)]).astype("<i8").tobytes())
        fr.write(np.concatenate([_remap_sets(root, t * B) for t in range(copies)]).astype("<i8").tobytes())
    every = np.sort(np.concatenate(ids_seen))
    if (every[1:] == every[:-1]).any():
        raise SystemExit("two tiles' node ids collide: choose another id step")
    with open(os.path.join(pdir, "partitions.json"), "w") as fh:
        json.dump({"format": "lipspark-partitions", "version": 1, "blocks": blocks}, fh)
    with open(os.path.join(pdir, "zoom.json"), "w") as fh:  # tiles are disjoint: a ZoomOut changes each alike
        json.dump({"blocks": [[b["graph"], b["check"]] for b in blocks],
                   "zoom": {m: None if d is None else [d[0] * copies, d[1] * copies] for m, d in zoom.items()}}, fh)
    return {"copies": copies, "nodes": int(node_end), "edges": sum(int(b["edges"]) for b in blocks), "executions_per_tile": E}


def _bytes(path: str) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def _token_of(path: str, tile_blocks: list[int]) -> int:
    """A car of the middle tile with descendants: a Cars token (op 1) some edge leaves."""
    from lipspark.graph.partitions import Partitions

    p = Partitions.open(path)
    for b in tile_blocks:
        n = pq.read_table(p.files("nodes", [b])[0], columns=["id", "op", "label"]).to_pandas()
        cars = n[(n["op"] == 1) & n["label"].str.startswith("Cars:")]
        if not len(cars):
            continue
        e = pq.read_table(p.files("edges", [b + 1])[0], columns=["src"]).column("src").to_numpy()
        used = cars[cars["id"].isin(e)]
        if len(used):
            return int(used["id"].iloc[len(used) // 2])
    raise SystemExit("no used Cars token in the middle tile")


def _answer(results: list[Any]) -> str:
    return json.dumps([r.to_dict() for r in results], default=str, sort_keys=True)


def measure(path: str, spark: Any, queries: dict[str, str], reps: int) -> dict[str, Any]:
    from lipspark.engines import SparkGraph
    from lipspark.query import Session

    out: dict[str, Any] = {}
    for name, q in queries.items():
        times, first, stats = [], None, {}
        for _ in range(reps):
            t0 = time.perf_counter()
            g = SparkGraph(path, spark=spark)
            res = Session(g).run(q)
            times.append(time.perf_counter() - t0)
            ans = _answer(res)
            if first is None:
                first = ans
            assert ans == first, f"{name}: a rep answered differently"
            stats = dict(g.stats)
        summary = res[-1].summary.splitlines()[0]
        out[name] = {"query": q, "seconds": [round(x, 3) for x in times], "median": round(statistics.median(times), 3),
                     "read": stats, "answer": summary}
        print(f"  {name}: median {statistics.median(times):.2f}s  read {stats}  — {summary}", flush=True)
    return out


def cold(path: str, queries: dict[str, str], reps: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    exe = os.path.join(os.path.dirname(sys.executable), "lipspark")
    for name, q in queries.items():
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            proc = subprocess.run([exe, "query", path, "--engine", "spark", "-e", q], capture_output=True, text=True, cwd=ROOT)
            times.append(time.perf_counter() - t0)
            if proc.returncode != 0:
                raise SystemExit(f"{q}: {proc.stderr[-2000:]}")
        out[name] = {"seconds": [round(x, 2) for x in times], "median": round(statistics.median(times), 2)}
        print(f"  {name} (cold process): median {statistics.median(times):.2f}s", flush=True)
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    from lipspark import get_spark
    from lipspark.engines import SparkGraph
    from lipspark.graph.partitions import update
    from lipspark.query import Session

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", required=True, help="an eager store (its partitioned tables are made if missing)")
    ap.add_argument("--edges", default="10e6,100e6", help="sizes to tile to, in edges (comma-separated)")
    ap.add_argument("--work", default=None, help="where the tiled graphs go (default: a temporary directory, removed)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--cold-reps", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(HERE, "results", "spark_queries.json"))
    args = ap.parse_args(argv)
    update(args.source)
    spark = get_spark(app_name="lipspark-bench-spark-queries")
    src_meta = json.load(open(os.path.join(args.source, "partitions", "partitions.json")))
    src_edges = sum(int(b["edges"]) for b in src_meta["blocks"])
    B = len(src_meta["blocks"])
    work = args.work or tempfile.mkdtemp(prefix="lipspark-tiles-")
    results: dict[str, Any] = {"source": args.source, "source_edges": src_edges, "master": spark.sparkContext.master,
                               "reps": args.reps, "sizes": []}
    # the source itself: both engines, the same answers
    E = B - 1
    tok = _token_of(args.source, list(range(B)))
    q_src = {"trace": f"ancestors output BestBid of agg execution {E}", "deletion": f"delete node {tok}"}
    src_out: dict[str, Any] = {}
    for name, q in q_src.items():
        mem = []
        for _ in range(args.reps):
            t0 = time.perf_counter()
            a = _answer(Session(args.source).run(q))
            mem.append(time.perf_counter() - t0)
        b = _answer(Session(SparkGraph(args.source, spark=spark)).run(q))
        assert a == b, f"{name}: the engines disagree on the source"
        src_out[name] = {"memory_median": round(statistics.median(mem), 3)}
        print(f"source {name}: memory engine median {statistics.median(mem):.3f}s, same answer on spark", flush=True)
    results["source_queries"] = measure(args.source, spark, q_src, args.reps)
    for k, v in src_out.items():
        results["source_queries"][k].update(v)
    try:
        for target in [float(x) for x in args.edges.split(",")]:
            copies = max(1, math.ceil(target / src_edges))
            path = os.path.join(work, f"tiles-{copies}")
            t0 = time.perf_counter()
            info = tile(args.source, path, copies)
            info["tile_seconds"] = round(time.perf_counter() - t0, 1)
            info["bytes"] = _bytes(path)
            print(f"{info['edges']:,} edges, {info['nodes']:,} nodes in {copies} tiles ({info['bytes'] / 1e9:.2f} GB) "
                  f"in {info['tile_seconds']}s", flush=True)
            mid = copies // 2
            n_exec = info["executions_per_tile"]
            tok = _token_of(path, list(range(mid * B, (mid + 1) * B)))
            queries = {"trace": f"ancestors output BestBid of agg execution {mid * n_exec + n_exec}",
                       "deletion": f"delete node {tok}"}
            info["queries"] = measure(path, spark, queries, args.reps)
            info["cold"] = cold(path, {"trace": queries["trace"]}, args.cold_reps)
            results["sizes"].append(info)
            with open(args.out, "w") as fh:
                json.dump(results, fh, indent=1)
            if args.work is None:
                shutil.rmtree(path, ignore_errors=True)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    with open(args.out, "w") as fh:
        json.dump(results, fh, indent=1)
    return results


if __name__ == "__main__":
    main()
