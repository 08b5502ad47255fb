"""Cold whole-process queries on large stores: what a user waits for (issue 12).

Method. The car dealership store ``make demo`` writes (``graphs/car_dealership-demo``, eager
capture) is indexed, then *tiled*: ``k`` disjoint copies of its query-ready index are written
as the blocks of a new store (tile ``t`` is the block of "execution" ``t``; positional ids move
to fresh segments, content ids are XORed with a per-tile constant, which keeps every id rule —
aggregate = group XOR salt, zoom = invocation | 1 — and execution numbers shift so that
``execution 1`` is tile 0's first execution). The tiled store's graph manifests are placeholders:
its index is current by construction, and these queries read only the index, as any query on a
store whose index is current does. Sizes: ≥1M and ≥10M nodes.

Each query runs as a whole process (``python -m lipspark.cli query STORE -e Q --format json``),
cold in the sense users see (a new process, nothing loaded; the OS page cache is warm after the
first run, as it is for a user who asks a second question), A/B interleaved across sizes, median
of ``--repeat`` runs; wall time and peak resident memory from ``/usr/bin/time -v``. Also
``lipspark --help``. Results: ``benchmarks/results/cold_queries.json``.

``--before TREE`` compares with an earlier version of lipspark (a source tree, e.g.
``git archive REV | tar -x -C TREE``): every case also runs with that tree's package, in the
same round (before, after, before, after…), and the two versions' answers must be identical.

    python benchmarks/cold_queries.py [--source graphs/car_dealership-demo] [--sizes 1e6,1e7] [--repeat 5] [--before TREE]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
from typing import Any

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from lipspark.graph import qindex  # noqa: E402
from lipspark.graph.attrs import SegmentTable  # noqa: E402
from lipspark.store import Store  # noqa: E402
from lipspark.vocabulary.ids import SEGMENT_SHIFT  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
QUERIES = {
    "trace": "ancestors output Bids1 of dealer1 execution 1",
    "subgraph": "subgraph output BestBid of agg execution 1",
    "zoomout_all": "zoomout {modules}",
    "delete_whatif": 'delete tuple Requests(BidId = "B1") execution 1',
}


def _blob_take(off: np.ndarray, data: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The strings of a blob reordered by ``order``: (ends, bytes)."""
    starts, lens = off[:-1][order], (off[1:] - off[:-1])[order]
    ends = np.cumsum(lens)
    idx = np.repeat(starts - (ends - lens), lens) + np.arange(int(ends[-1]) if len(ends) else 0, dtype=np.int64)
    return ends, data[idx]


def tile_store(source: str, out: str, copies: int) -> int:
    """Write a store at ``out`` whose index holds ``copies`` disjoint copies of ``source``'s graph."""
    m = qindex.open_mapped(source)
    n = len(m.ids)
    ids = np.asarray(m.ids, dtype=np.int64)
    seg = np.asarray(m.attrs.seg, dtype=np.int64)
    positional = (ids >> SEGMENT_SHIFT) == seg
    in_ptr = np.asarray(m.in_ptr, dtype=np.int64)
    in_src = np.asarray(m.in_src, dtype=np.int64)
    dst = np.repeat(np.arange(n, dtype=np.int64), np.diff(in_ptr))
    t = m.attrs.table
    seg_span = int(np.max(t.seg)) + 1
    ex = np.asarray(t.ints["execution"])
    n_exec = int(ex.max())
    inv = np.asarray(t.ints["invocation"])
    blobs = {name: (np.asarray(b.offsets, dtype=np.int64), np.asarray(b.data)) for name, b in m.attrs.blobs.items()}
    shutil.rmtree(out, ignore_errors=True)
    store = Store.create(out, "car_dealership-tiled", True, {"source": source, "copies": copies})
    ipath = os.path.join(out, qindex.INDEX_DIR)
    os.makedirs(ipath)
    files = {name: open(os.path.join(ipath, name), "wb") for name in qindex._ARRAYS}
    for name, (_, unit) in qindex._ARRAYS.items():
        if unit == "node+1":
            files[name].write(np.zeros(1, np.int64).tobytes())
    blocks, totals = [], {"nodes": 0, "edges": 0, "out": 0, "bytes": {b: 0 for b in blobs}}
    for k in range(copies):
        salt = np.int64((0x9E3779B97F4A7C15 * (k + 1)) & 0x7FFFFFFFFFFFFFFF) if k else np.int64(0)
        new_ids = np.where(positional, ids + (np.int64(k * seg_span) << np.int64(SEGMENT_SHIFT)), ids ^ salt)
        order = np.argsort(new_ids, kind="stable")
        rank = np.empty(n, dtype=np.int64)
        rank[order] = np.arange(n, dtype=np.int64)
        base = totals["nodes"]
        # children CSR in the new order
        counts = np.diff(in_ptr)[order]
        slots = np.repeat(in_ptr[:-1][order] - (np.cumsum(counts) - counts), counts) + np.arange(int(counts.sum()), dtype=np.int64)
        new_src = rank[in_src[slots]] + base
        e_dst = np.repeat(np.arange(n, dtype=np.int64), counts) + base
        by_src = np.argsort(new_src, kind="stable")
        write = {
            "ids": new_ids[order], "kind": np.asarray(m.is_v)[order].astype(np.int8), "op": np.asarray(m.op)[order],
            "type": np.asarray(m.type_code)[order], "seg": (seg + k * seg_span)[order].astype(np.int32),
            "in_ptr": totals["edges"] + np.cumsum(counts), "in_src": new_src.astype(np.int32),
            "out_ptr": totals["out"] + np.cumsum(np.bincount(new_src - base, minlength=n)), "out_dst": e_dst[by_src].astype(np.int32),
        }
        for name, (off, data) in blobs.items():
            ends, chunk = _blob_take(off, data, order)
            write[f"{name}.off"] = totals["bytes"][name] + ends
            write[f"{name}.dat"] = chunk
            totals["bytes"][name] += len(chunk)
        write["seg.seg"] = (np.asarray(t.seg, dtype=np.int64) + k * seg_span).astype(np.int32)
        for c in SegmentTable.STRINGS:
            write[f"seg.{c}"] = np.asarray(t.codes[c])
        write["seg.execution"] = np.where(ex >= 0, ex + k * n_exec, -1)
        write["seg.invocation"] = np.where(inv >= 0, inv + (np.int64(k * seg_span) << np.int64(SEGMENT_SHIFT)), -1)
        for name, arr in write.items():
            files[name].write(np.ascontiguousarray(arr, dtype=qindex._ARRAYS[name][0]).tobytes())
        totals["nodes"] += n
        totals["edges"] += len(in_src)
        totals["out"] += len(in_src)
        gdir = "initial/graph" if k == 0 else f"executions/{k:06d}/graph"
        os.makedirs(os.path.join(out, gdir), exist_ok=True)
        with open(os.path.join(out, gdir, "manifest.json"), "w") as fh:
            json.dump({"format": "lipspark-graph", "version": 1, "segments": []}, fh)
        blocks.append({"graph": gdir, "check": qindex._check(out, gdir), "nodes": totals["nodes"], "edges": totals["edges"],
                       "out": totals["out"], "cross": 0, "segments": (k + 1) * len(t), "bytes": dict(totals["bytes"])})
    for fh in files.values():
        fh.close()
    store.meta["initial"] = {"tiles": {}}  # placeholder: the graph dirs are what the index checks
    store.meta["executions"] = [{"n": k, "dir": f"executions/{k:06d}", "state": {}, "outputs": {}} for k in range(1, copies)]
    store.save()
    qindex._write_meta(ipath, {"format": qindex.INDEX_FORMAT, "version": qindex.INDEX_VERSION, "blocks": blocks, "strings": t.strings})
    return totals["nodes"]


def timed(cmd: list[str], tree: str = ROOT) -> tuple[float, int, str]:
    """Wall seconds and peak RSS (KB) of a whole process run with the lipspark of ``tree``, and its stdout."""
    env = dict(os.environ, PYTHONPATH=tree)
    t0 = time.perf_counter()
    p = subprocess.run(["/usr/bin/time", "-v", *cmd], capture_output=True, text=True, cwd=tree, env=env)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {p.stderr[-2000:]}")
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr).group(1))  # type: ignore[union-attr]
    return wall, rss, p.stdout


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", default=os.path.join(ROOT, "graphs", "car_dealership-demo"))
    ap.add_argument("--sizes", default="1e6,1e7")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--work", default=os.path.join(ROOT, "graphs"))
    ap.add_argument("--out", default=os.path.join(HERE, "results", "cold_queries.json"))
    ap.add_argument("--before", help="an earlier lipspark source tree to compare with, interleaved")
    args = ap.parse_args()
    if not os.path.exists(os.path.join(args.source, "store.json")):
        print(f"no store at {args.source}: run `make demo` first", file=sys.stderr)
        return 2
    src_nodes = len(qindex.open_mapped(args.source).ids)
    from lipspark.graph.index import GraphIndex

    modules = sorted(str(x) for x in GraphIndex.load(args.source).distinct("module"))
    stores = {}
    for size in [int(float(s)) for s in args.sizes.split(",")]:
        copies = -(-size // src_nodes)
        path = os.path.join(args.work, f"bench-tiled-{copies}")
        t0 = time.perf_counter()
        nodes = tile_store(args.source, path, copies)
        print(f"tiled {copies} copies: {nodes:,} nodes in {time.perf_counter() - t0:.1f}s -> {path}", flush=True)
        stores[path] = nodes
    py = sys.executable
    cases = [("help", None, [py, "-m", "lipspark.cli", "--help"])]
    for path in stores:
        for name, q in QUERIES.items():
            cases.append((name, path, [py, "-m", "lipspark.cli", "query", path, "-e", q.format(modules=", ".join(modules)), "--format", "json"]))
    versions = {"after": ROOT, **({"before": os.path.abspath(args.before)} if args.before else {})}
    samples: dict[tuple[str, str, str | None], list[tuple[float, int]]] = {(v, n, p): [] for v in versions for n, p, _ in cases}
    answers: dict[tuple[str, str, str | None], str] = {}
    for rnd in range(args.repeat):  # interleaved: every case once per round, each version after the other
        for name, path, cmd in cases:
            for version, tree in (reversed(versions.items()) if rnd % 2 else versions.items()):
                wall, rss, out = timed(cmd, tree)
                samples[version, name, path].append((wall, rss))
                if name != "help":
                    answers[version, name, path] = out
    for name in QUERIES:  # the answers do not depend on the size (tile 0 is the same graph)
        got = {p: json.loads(answers["after", name, p])[-1]["summary"] for p in stores}
        print(f"{name}: {got}")
    same = {f"{n} {stores[p]}": answers["before", n, p] == answers["after", n, p] for n in QUERIES for p in stores} if args.before else {}
    if same:
        print("identical answers before and after:", same)
    results: dict[str, Any] = {"source": args.source, "source_nodes": src_nodes, "repeat": args.repeat, "machine": platform.platform(),
                               "cpus": os.cpu_count(), "date": time.strftime("%Y-%m-%d"), "cases": []}
    if args.before:
        results["before"] = {"tree": versions["before"], "cases": [], "same_answers": same}
    for (version, name, path), vals in samples.items():
        walls, rsss = [v[0] for v in vals], [v[1] for v in vals]
        nodes = stores.get(path) if path else None
        row = {"query": name, "nodes": nodes, "wall_s": statistics.median(walls), "walls": walls,
               "peak_rss_kb": max(rsss), "bytes_per_node": (max(rsss) * 1024 / nodes) if nodes else None}
        (results["cases"] if version == "after" else results["before"]["cases"]).append(row)
        print(f"{version:6s} {name:14s} {nodes or '':>12} nodes  {row['wall_s']:.3f} s  {row['peak_rss_kb'] / 1024:.0f} MB"
              + (f"  {row['bytes_per_node']:.1f} B/node" if nodes else ""))
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(results, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
