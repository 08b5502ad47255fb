"""Query latency on large provenance graphs (issue: query layer; targets in DEVELOPERS.md).

Method: a captured car dealership store (default ``graphs/car_dealership-demo``, written by
``make demo``) is loaded once (load time reported), then tiled into k disjoint copies (ids
renumbered densely; invocation ids stay even so ZoomOut's ``id | 1`` is free) to reach each target
size. On each size, median of ``--repeat`` runs (≥5):

* backward trace (ancestors) and subgraph of one output tuple (agg's BestBid, execution 1, tile 0);
* polynomial of that output;
* ZoomOut of all modules, and ZoomIn back;
* deletion propagation (with what-if values) of a request tuple (Example 4.4) and of a car in a
  dealer's lot (Example 4.3), and separately the materialization of the view after it.

The trace and subgraph answers have the same size at every scale, so their growth factor shows
whether a query's cost follows its answer or the graph. Results: ``benchmarks/results/queries.json``.

    python benchmarks/queries.py [--source graphs/car_dealership-demo] [--sizes 1e6,1e7] [--repeat 5]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from lipspark.graph.index import GraphIndex  # noqa: E402
from lipspark.query import ancestors, delete, polynomial, subgraph, zoom_in, zoom_out  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def tile(g: GraphIndex, copies: int) -> GraphIndex:
    """``copies`` disjoint copies of ``g`` (ids renumbered; attributes kept)."""
    n = len(g)
    rank = np.arange(n, dtype=np.int64)
    nodes = g.nodes.astype({c: object for c in g.nodes.columns if isinstance(g.nodes[c].dtype, pd.CategoricalDtype)})
    inv = nodes["invocation"].to_numpy(dtype="float64", na_value=np.nan)
    inv_rank = np.full(n, -1, dtype=np.int64)
    ok = ~np.isnan(inv)
    inv_rank[ok] = g.lookup(g.nodes["invocation"].to_numpy(dtype="int64", na_value=0)[ok])  # ids are sorted per block only
    parts, srcs, dsts = [], [], []
    for k in range(copies):
        base = np.int64(k) * n
        part = nodes.copy()
        part["id"] = 2 * (base + rank)
        part["invocation"] = pd.array(np.where(inv_rank >= 0, 2 * (base + inv_rank), 0), dtype="Int64")
        part.loc[inv_rank < 0, "invocation"] = pd.NA
        parts.append(part)
        srcs.append(2 * (base + g.src))
        dsts.append(2 * (base + g.dst))
    return GraphIndex.build(pd.concat(parts, ignore_index=True), pd.DataFrame({"src": np.concatenate(srcs), "dst": np.concatenate(dsts)}))


def median_ms(fn, repeat: int) -> tuple[float, object]:
    out, times = None, []
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times), out


def pick(g: GraphIndex) -> dict[str, int]:
    """Node ids of tile 0 (the first, smallest ids) to query."""
    nodes = g.nodes
    typ = nodes["type"].astype(object)
    mod = nodes["module"].astype(object)
    rel = nodes["relation"].astype(object)
    ex = nodes["execution"].to_numpy(dtype="float64", na_value=np.nan)
    out = nodes[(typ == "o") & (nodes["kind"] == "p") & (mod == "agg") & (ex == 1)]["id"].min()
    req = nodes[(rel == "Requests") & (typ == "i") & (g.in_degree() == 0)]["id"].min()
    cars = np.sort(nodes[(rel == "Cars") & (g.in_degree() == 0)]["id"].to_numpy())[:60]
    # a car of the requested model: the one whose deletion reaches furthest (a Count changes)
    car = max(cars.tolist(), key=lambda c: (len(g.descendants(g.position(c))), -c))
    return {"output": int(out), "request": int(req), "car": int(car)}


def measure(g: GraphIndex, repeat: int) -> dict[str, float]:
    ids = pick(g)
    modules = sorted(set(g.nodes.loc[g.type_code == 4, "module"].astype(str)))
    r: dict[str, float] = {"nodes": len(g), "edges": g.num_edges}
    r["trace_ms"], anc = median_ms(lambda: ancestors(g, ids["output"]), repeat)
    r["trace_answer_nodes"] = len(anc)
    r["subgraph_ms"], sub = median_ms(lambda: subgraph(g, ids["output"]), repeat)
    r["subgraph_answer_nodes"] = len(sub)
    r["polynomial_ms"], _ = median_ms(lambda: str(polynomial(g, ids["output"])), repeat)
    r["zoomout_all_ms"], z = median_ms(lambda: zoom_out(g, modules), repeat)
    r["zoomout_nodes"] = len(z)
    r["zoomin_all_ms"], back = median_ms(lambda: zoom_in(z, modules), repeat)
    r["delete_request_ms"], d1 = median_ms(lambda: delete(g, [ids["request"]]), repeat)
    r["delete_request_removed"] = len(d1.removed_ids)
    r["delete_car_ms"], d2 = median_ms(lambda: delete(g, [ids["car"]]), repeat)
    r["delete_car_removed"] = len(d2.removed_ids)
    r["delete_car_values_changed"] = len(d2.values)
    r["delete_view_ms"], _ = median_ms(lambda: delete(g, [ids["car"]]).view, repeat)
    return r


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--source", default=os.path.join("graphs", "car_dealership-demo"))
    ap.add_argument("--sizes", default="1e5,1e6,1e7", help="target node counts, comma-separated")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", default=os.path.join(HERE, "results", "queries.json"))
    args = ap.parse_args()
    if not os.path.isdir(args.source):
        print(f"no graph at {args.source}: run `make demo` first (or pass --source STORE)", file=sys.stderr)
        return 2
    if os.path.exists(os.path.join(args.source, "store.json")):
        from lipspark.workflow import materialize

        materialize(args.source, progress=True)  # a deferred store: replay it first (an eager one: nothing to do)
    t = time.perf_counter()
    g = GraphIndex.load(args.source)
    load_s = time.perf_counter() - t
    print(f"loaded {args.source}: {len(g):,} nodes, {g.num_edges:,} edges in {load_s:.2f}s")
    results = {"source": args.source, "source_nodes": len(g), "source_edges": g.num_edges, "load_s": load_s,
               "machine": {"cpus": os.cpu_count(), "python": platform.python_version()}, "repeat": args.repeat, "sizes": []}
    for size in [int(float(s)) for s in args.sizes.split(",")]:
        copies = max(1, round(size / len(g)))
        t = time.perf_counter()
        big = tile(g, copies)
        build_s = time.perf_counter() - t
        r = {"copies": copies, "build_s": build_s, **measure(big, args.repeat)}
        results["sizes"].append(r)
        print(json.dumps(r))
        del big
    if len(results["sizes"]) > 1:  # the last tenfold step (e.g. 1M -> 10M nodes)
        first, last = results["sizes"][-2], results["sizes"][-1]
        results["growth"] = {"nodes": last["nodes"] / first["nodes"],
                             **{k: last[k] / first[k] for k in ("trace_ms", "subgraph_ms", "delete_car_ms", "zoomout_all_ms") if first[k] > 0}}
    print("growth", json.dumps(results.get("growth")))
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(results, fh, indent=2)
    print(f"-> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
