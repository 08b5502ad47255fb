"""WorkflowGen benchmark: capture overhead and query latency of workflows, with plots.

For each configuration (a workflow definition and its parameters) two stores run side by side,
execution by execution: provenance off and on, A/B interleaved (the order alternates every
execution, so neither mode always runs on a warm cache). Per execution the wall time of each
mode is recorded; at checkpoints the tracked store's graph is loaded and queried, so query
latency is measured as the graph grows: ZoomOut of all modules, ZoomIn back, deleting a state
tuple (a base tuple of a module's initial state), the subgraph and the polynomial of an output.

Results go to ``<out>/workflowgen.json``; plots in the shape of the paper's Figure 5 (time per
execution vs execution number, tracked vs plain) and query latency vs graph size go to
``<out>/*.png`` (matplotlib, headless).

``lipspark bench --quick`` is the CI smoke test (tiny sizes, one checkpoint); timings are
reported, never asserted.

>>> from lipspark.bench import CONFIGS, quick_configs
>>> [c["name"] for c in quick_configs()]
['car_dealership', 'arctic_parallel']
"""
from __future__ import annotations

import json
import os
import shutil
import statistics
import tempfile
import time
from typing import Any, Callable

import numpy as np

__all__ = ["CONFIGS", "quick_configs", "bench_config", "query_latencies", "plot", "main"]

HERE = os.path.dirname(os.path.abspath(__file__))
WORKFLOWS = os.path.join(HERE, "..", "workflows")

#: The full benchmark: the paper's settings (section 5.4) and the issue's targets.
CONFIGS: list[dict[str, Any]] = [
    {"name": "car_dealership", "workflow": "car_dealership.py", "params": {"numCars": 20000, "numExec": 10, "acceptance": 0.0, "seed": 0}},
    {"name": "arctic_serial", "workflow": "arctic_stations.py", "params": {"topology": "serial", "stations": 24, "selectivity": "month", "numExec": 5}},
    {"name": "arctic_parallel", "workflow": "arctic_stations.py", "params": {"topology": "parallel", "stations": 24, "selectivity": "month", "numExec": 5}},
    {"name": "arctic_dense", "workflow": "arctic_stations.py", "params": {"topology": "dense", "stations": 24, "fanout": 6, "selectivity": "month", "numExec": 5}},
]

#: The modes each configuration runs in, interleaved: provenance off, eager capture (the graph
#: written with each execution) and deferred capture (executions at plain speed; the graph made by
#: replaying them when first needed, whose cost is reported as ``replay_first_execution_s``).
MODES = ("plain", "tracked", "deferred")

#: Targets (ratio tracked / plain), for the report only.
TARGETS = {"car_dealership": 1.25, "arctic_serial": 1.15, "arctic_parallel": 1.15, "arctic_dense": 1.15}


def quick_configs() -> list[dict[str, Any]]:
    """Tiny versions of the configurations: the CI smoke test."""
    return [
        # (no replay timing here: it would take the smoke test past three minutes)
        {"name": "car_dealership", "workflow": "car_dealership.py", "params": {"numCars": 200, "numExec": 1, "acceptance": 0.0, "seed": 0}, "replay": False},
        {"name": "arctic_parallel", "workflow": "arctic_stations.py", "params": {"topology": "parallel", "stations": 2, "selectivity": "month", "numExec": 2, "years": 2}},
    ]


def _median_ms(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """Median wall time of ``fn`` in ms over ``repeat`` runs, and its (last) result."""
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times), out


def query_latencies(store: str, repeat: int = 5) -> dict[str, Any]:
    """Load a tracked (eager) store's graph and time the queries of the benchmark on it (a
    deferred store is materialized first: loading never replays)."""
    from lipspark.graph.index import NODE_TYPES, GraphIndex
    from lipspark.graph.stats import directory_bytes
    from lipspark.query import delete, polynomial, subgraph, zoom_in, zoom_out
    from lipspark.workflow import Store

    from lipspark.workflow import materialize

    store = materialize(store).root
    t = time.perf_counter()
    g = GraphIndex.load(store)
    load_s = time.perf_counter() - t
    s = Store.open(store)
    graph_bytes = sum(directory_bytes(os.path.join(s.root, d)) for d in ["initial/graph"] + [f"{e['dir']}/graph" for e in s.executions])
    typ = np.asarray(g.type_code)
    modules = sorted(str(m) for m in g.distinct("module", np.flatnonzero(typ == NODE_TYPES.index("m"))))
    has_module = g.int_column("seg") >= 0
    has_module &= ~g.where("module", [None])
    ex_int = g.int_column("execution")
    ex = np.where(ex_int >= 0, ex_int, np.nan).astype("float64")
    outs = np.flatnonzero((typ == NODE_TYPES.index("o")) & ~g.is_v)
    last = outs[ex[outs] == np.nanmax(ex[outs])] if len(outs) else outs
    # a state tuple: a base tuple of a module's initial state (no execution, a module, no edges in)
    state = np.flatnonzero((typ == 0) & ~np.asarray(g.is_v) & (np.diff(g.in_ptr) == 0) & np.isnan(ex) & has_module)
    r: dict[str, Any] = {"nodes": len(g), "edges": g.num_edges, "graph_bytes": graph_bytes,
                         "bytes_per_edge": graph_bytes / max(g.num_edges, 1), "load_s": load_s}
    r["zoomout_all_ms"], z = _median_ms(lambda: zoom_out(g, modules), repeat)
    r["zoomin_all_ms"], _ = _median_ms(lambda: zoom_in(z, modules), repeat)
    if len(state):
        victim = int(g.ids[state[len(state) // 2]])
        r["delete_state_tuple_ms"], d = _median_ms(lambda: delete(g, [victim]), repeat)
        r["delete_state_tuple_removed"] = len(d.removed_ids)
    if len(last):
        out = int(g.ids[last[-1]])
        r["subgraph_output_ms"], sub = _median_ms(lambda: subgraph(g, out), repeat)
        r["subgraph_output_nodes"] = len(sub)
        r["polynomial_output_ms"], _ = _median_ms(lambda: str(polynomial(g, out)), repeat)
    return r


def bench_config(spark: Any, config: dict[str, Any], *, checkpoints: list[int] | None = None, repeat: int = 5,
                 progress: bool = True) -> dict[str, Any]:
    """Run one configuration provenance off and on, interleaved; time executions and queries."""
    from tqdm import tqdm

    from lipspark.workflow import Executor, Store, load_definition, materialize

    path = os.path.join(WORKFLOWS, config["workflow"])
    definition = load_definition(path)
    params = definition.with_params({k: v for k, v in config["params"].items()})
    n_exec = int(params["numExec"])
    checkpoints = sorted(set(checkpoints or [n_exec]))
    root = tempfile.mkdtemp(prefix=f"lipspark-bench-{config['name']}-")
    times: dict[str, list[float]] = {m: [] for m in MODES}
    queries, replay = [], None
    try:
        runs = {}
        for mode in MODES:
            store = Store.create(os.path.join(root, mode), definition.name, mode != "plain", params,
                                 capture="deferred" if mode == "deferred" else "eager", definition=path)
            ex = Executor(spark, definition.build(params), store, provenance=mode != "plain")
            ex.initialize(definition.initial_state(spark, params))
            runs[mode] = ex
        bar = tqdm(range(1, n_exec + 1), desc=config["name"], unit="exec", disable=not progress)
        for n in bar:
            k = (n - 1) % len(MODES)  # rotate the order: no mode always runs first or last
            for mode in MODES[k:] + MODES[:k]:
                t0 = time.perf_counter()
                runs[mode].execute(definition.inputs(spark, n, params))
                times[mode].append(time.perf_counter() - t0)
            bar.set_postfix({m: f"{times[m][-1]:.1f}s" for m in MODES})
            if n == 1 and config.get("replay", True):
                # deferred capture's cost, paid when the graph is first needed: replaying an execution
                t0 = time.perf_counter()
                materialize(os.path.join(root, "deferred"), spark=spark)
                replay = time.perf_counter() - t0
            if n in checkpoints:
                queries.append({"execution": n, **query_latencies(os.path.join(root, "tracked"), repeat)})
        from lipspark.graph.stats import directory_bytes

        med = {m: statistics.median(v) for m, v in times.items()}
        return {
            "name": config["name"], "workflow": config["workflow"], "params": params,
            "plain_s": times["plain"], "tracked_s": times["tracked"], "deferred_s": times["deferred"],
            "plain_median_s": med["plain"], "tracked_median_s": med["tracked"], "deferred_median_s": med["deferred"],
            "ratio": med["tracked"] / med["plain"], "deferred_ratio": med["deferred"] / med["plain"],
            "replay_first_execution_s": replay,
            "target": TARGETS.get(config["name"]),
            "store_bytes_tracked": directory_bytes(os.path.join(root, "tracked")),
            "store_bytes_plain": directory_bytes(os.path.join(root, "plain")),
            "queries": queries,
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _save(fig: Any, title: str, out_dir: str, name: str) -> str:
    """Title, lay out, write and close a figure; returns its path."""
    import matplotlib.pyplot as plt

    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    path = os.path.join(out_dir, name)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot(results: list[dict[str, Any]], out_dir: str) -> list[str]:
    """PNG plots: time per execution (tracked vs plain) per configuration, and query latency vs
    graph size. Returns the paths written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    paths = []
    fig, axes = plt.subplots(1, len(results), figsize=(4.2 * len(results), 3.4), squeeze=False)
    for ax, r in zip(axes[0], results):
        xs = range(1, len(r["plain_s"]) + 1)
        ax.plot(xs, r["tracked_s"], "o-", label="provenance on (eager)")
        ax.plot(xs, r["plain_s"], "s--", label="provenance off")
        if r.get("deferred_s"):
            ax.plot(xs, r["deferred_s"], "^:", label=f"deferred capture ({r['deferred_ratio']:.2f}×)")
        ax.set_title(f"{r['name']} (eager {r['ratio']:.2f}×)", fontsize=9)
        ax.set_xlabel("execution")
        ax.set_ylabel("seconds")
        ax.set_ylim(bottom=0)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.legend(fontsize=7)
    paths.append(_save(fig, "Workflow execution time (cf. Lipstick Figure 5)", out_dir, "workflowgen_time.png"))
    keys = [("zoomout_all_ms", "ZoomOut all"), ("zoomin_all_ms", "ZoomIn all"), ("delete_state_tuple_ms", "delete a state tuple"),
            ("subgraph_output_ms", "subgraph of an output"), ("polynomial_output_ms", "polynomial of an output")]
    fig, axes = plt.subplots(1, len(results), figsize=(4.2 * len(results), 3.4), squeeze=False)
    for ax, r in zip(axes[0], results):
        qs = r["queries"]
        for key, label in keys:
            pts = [(q["nodes"], q[key]) for q in qs if key in q]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=label)
        ax.set_title(r["name"], fontsize=9)
        ax.set_xlabel("graph nodes")
        ax.set_ylabel("ms (median)")
        ax.set_yscale("log")
        ax.legend(fontsize=6)
    paths.append(_save(fig, "Query latency as the graph grows", out_dir, "workflowgen_queries.png"))
    return paths


def main(*, quick: bool = False, out: str | None = None, only: list[str] | None = None,
         master: str | None = None) -> list[dict[str, Any]]:
    """Run the benchmark (``quick``: the smoke test) and write JSON and plots into ``out``."""
    from lipspark.session import get_spark

    configs = quick_configs() if quick else [dict(c) for c in CONFIGS]
    if only:
        unknown = sorted(set(only) - {c["name"] for c in configs})
        if unknown:
            from lipspark.errors import LipsparkError

            raise LipsparkError(f"unknown benchmark configuration(s) {unknown}; expected some of {[c['name'] for c in configs]}")
        configs = [c for c in configs if c["name"] in only]
    out = out or os.path.join("benchmarks", "results", "quick" if quick else "workflowgen")
    os.makedirs(out, exist_ok=True)
    spark = get_spark(master, app_name="lipspark-bench")
    results = []
    for c in configs:
        n = int(c["params"]["numExec"])
        checkpoints = [n] if quick else sorted({1, max(1, n // 2), n})
        results.append(bench_config(spark, c, checkpoints=checkpoints, repeat=1 if quick else 5))
        r = results[-1]
        print(f"{r['name']}: plain {r['plain_median_s']:.2f}s, eager {r['tracked_median_s']:.2f}s ({r['ratio']:.2f}×), "
              f"deferred {r['deferred_median_s']:.2f}s ({r['deferred_ratio']:.2f}×) per execution"
              + (f" (target ≤ {r['target']}×)" if r["target"] else "")
              + (f"; deferred replay of execution 1: {r['replay_first_execution_s']:.1f}s" if r["replay_first_execution_s"] is not None else "")
              + f"; graph {r['queries'][-1]['nodes']:,} nodes, {r['queries'][-1]['edges']:,} edges, {r['queries'][-1]['graph_bytes']:,} bytes",
              flush=True)
        with open(os.path.join(out, "workflowgen.json"), "w") as fh:  # after each configuration: partial results survive
            json.dump({"quick": quick, "results": results}, fh, indent=1)
    for p in plot(results, out):
        print(f"-> {p}")
    print(f"-> {os.path.join(out, 'workflowgen.json')}")
    return results
