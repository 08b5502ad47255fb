"""Bytes per edge of the WorkflowGen graphs: each configuration of ``lipspark bench`` run once,
eager capture only (no plain or deferred run, no query timings).

    python benchmarks/bytes_per_edge.py OUT.json [car_dealership arctic_serial arctic_parallel arctic_dense]

After the first and the last execution it loads the store's graph (edges as ``lipspark bench``
counts them: :meth:`GraphIndex.load`, boundary nodes included) and sums the bytes of the graph
directories (``initial/graph`` and every ``executions/*/graph``, Spark's ``_SUCCESS``/``.crc``
files excluded), as :func:`lipspark.bench.query_latencies` does; how many of those bytes are
the ``manifest.json`` files, and how many Parquet files there are. Results are merged into
``OUT.json`` (one entry per configuration) and printed.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from lipspark.bench import CONFIGS, WORKFLOWS  # noqa: E402
from lipspark.graph.index import GraphIndex  # noqa: E402
from lipspark.graph.stats import directory_bytes  # noqa: E402
from lipspark.session import get_spark  # noqa: E402
from lipspark.workflow import Executor, Store, load_definition  # noqa: E402


def measure(spark, config):
    """Run ``config`` with eager capture; graph size after the first and the last execution."""
    path = os.path.join(WORKFLOWS, config["workflow"])
    definition = load_definition(path)
    params = definition.with_params(dict(config["params"]))
    n_exec = int(params["numExec"])
    root = tempfile.mkdtemp(prefix=f"lipspark-bpe-{config['name']}-")
    t0 = time.perf_counter()
    rows = []
    try:
        store = Store.create(os.path.join(root, "tracked"), definition.name, True, params, capture="eager", definition=path)
        ex = Executor(spark, definition.build(params), store, provenance=True)
        ex.initialize(definition.initial_state(spark, params))
        for n in range(1, n_exec + 1):
            ex.execute(definition.inputs(spark, n, params))
            if n not in (1, n_exec):
                continue
            g = GraphIndex.load(store.root)
            s = Store.open(store.root)
            dirs = [os.path.join(s.root, d) for d in ["initial/graph"] + [f"{e['dir']}/graph" for e in s.executions]]
            graph_bytes = sum(directory_bytes(d) for d in dirs)
            files = sum(f.endswith(".parquet") for d in dirs for _, _, fs in os.walk(d) for f in fs)
            manifests = sum(os.path.getsize(os.path.join(d, "manifest.json")) for d in dirs if os.path.exists(os.path.join(d, "manifest.json")))
            rows.append({"execution": n, "nodes": len(g), "edges": g.num_edges, "graph_bytes": graph_bytes,
                         "bytes_per_edge": round(graph_bytes / max(g.num_edges, 1), 2), "parquet_files": files, "manifest_bytes": manifests,
                         "elapsed_s": round(time.perf_counter() - t0, 1)})
            print(config["name"], rows[-1], flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return rows


def main(argv):
    out, names = argv[0], argv[1:]
    results = {}
    if os.path.exists(out):
        with open(out) as fh:
            results = json.load(fh)
    spark = get_spark(app_name="lipspark-bytes-per-edge")
    for config in CONFIGS:
        if names and config["name"] not in names:
            continue
        results[config["name"]] = measure(spark, config)
        with open(out, "w") as fh:
            json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main(sys.argv[1:])
