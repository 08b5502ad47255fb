"""``make demo``: the car dealership workflow with provenance on embedded local Spark.

1. Runs the car dealership (Lipstick Figure 1) for a few executions with provenance on, into
   ``graphs/car_dealership-demo/``, prints the run's summary, and runs the paper's questions in
   ``queries/*.lq`` on its graph (what ``lipspark query graphs/car_dealership-demo FILE`` does),
   and draws two views of it into ``viz/`` (``lipspark viz``).
2. Runs it again with ``--capture deferred`` (at the speed of provenance off) into
   ``graphs/car_dealership-deferred/`` and asks one question of it: the query replays only the
   invocations its answer reaches into, and gives the eager run's polynomial.
3. Runs the paper's dealer module on Example 2.3 with provenance off and on, checks they compute
   the same bids, prints each bid's provenance polynomial and the aggregate values behind it,
   evaluates them in a few semirings, and writes that graph under ``graphs/dealer-example/``.
"""
from __future__ import annotations

import os
import shutil
import sys
import time
from typing import TYPE_CHECKING

from lipspark import Tracker, get_spark
from lipspark.examples.dealer import dealer_bid, example_inputs
from lipspark.graph.stats import graph_stats
from lipspark.semiring import BOOLEAN, COUNTING, LINEAGE, evaluate
from lipspark.vocabulary import Op

if TYPE_CHECKING:
    from lipspark.workflow.run import RunSummary


#: Where ``make demo`` writes the car dealership's store; the examples in README.md, docs/ and
#: ``lipspark --help`` read this graph (tests/test_examples.py runs them on it).
DEMO_GRAPH = os.path.join("graphs", "car_dealership-demo")
#: The demo's run of the car dealership: the buyer asks for an Audi A6 in every execution.
DEMO_PARAMS = {"numCars": 2000, "numExec": 3, "acceptance": 0.5, "seed": 1}
#: Where ``make demo`` writes the same run with deferred capture.
DEFERRED_GRAPH = os.path.join("graphs", "car_dealership-deferred")
#: The question the demo asks of both stores.
DEFERRED_QUESTION = "polynomial output Bids1 of dealer1 execution 1"


def run_car_dealership(spark, out_dir: str = DEMO_GRAPH, *, workflow: str = os.path.join("workflows", "car_dealership.py"),
                       progress: bool = False) -> RunSummary:
    """The demo's run of the car dealership (:data:`DEMO_PARAMS`) into ``out_dir``, replacing it."""
    from lipspark.workflow import run

    shutil.rmtree(out_dir, ignore_errors=True)
    return run(workflow, graph_dir=out_dir, params=dict(DEMO_PARAMS), spark=spark, progress=progress)


def car_dealership(spark, out_dir: str = DEMO_GRAPH) -> None:
    print(f"Car dealership workflow (4 dealers, {DEMO_PARAMS['numCars']:,} cars), provenance on")
    summary = run_car_dealership(spark, out_dir, progress=True)
    print(summary, "\n")
    queries(out_dir)


def deferred(spark, eager_dir: str = DEMO_GRAPH, out_dir: str = DEFERRED_GRAPH) -> None:
    """The deferred path: the same run, no provenance captured while it runs; the first query
    replays only the invocations its answer reaches into, and answers as the eager graph does."""
    from lipspark.query import Session
    from lipspark.workflow import run
    from lipspark.workflow.ondemand import DeferredGraph

    print(f"The same run with deferred capture (lipspark run ... --capture deferred) -> {out_dir}")
    shutil.rmtree(out_dir, ignore_errors=True)
    t = time.perf_counter()
    summary = run(os.path.join("workflows", "car_dealership.py"), graph_dir=out_dir, params=dict(DEMO_PARAMS), spark=spark,
                  capture="deferred")
    print(f"  ran {summary.executions_run} executions in {time.perf_counter() - t:.1f}s, no provenance captured yet")
    t = time.perf_counter()
    dg = DeferredGraph(out_dir, spark=spark)
    answer = Session(dg).run(DEFERRED_QUESTION)[-1].rows[0]["polynomial"]
    total = len(dg.pending()) + len(dg.replayed)
    print(f"  {DEFERRED_QUESTION}\n    replayed {len(dg.replayed)} of {total} invocations "
          f"({', '.join(f'{node} of execution {n}' for n, node, _ in dg.replayed)}) in {time.perf_counter() - t:.1f}s")
    same = Session(eager_dir).run(DEFERRED_QUESTION)[-1].rows[0]["polynomial"] == answer
    shown = answer if len(answer) <= 120 else f"{answer[:120]}… ({len(answer):,} characters)"
    print(f"    {shown}\n    the eager graph's answer: {'the same' if same else 'DIFFERENT'}\n")
    if not same:
        raise AssertionError(f"the deferred store answered {DEFERRED_QUESTION!r} differently from the eager one")


def queries(graph_dir: str, folder: str = "queries") -> None:
    """Run every saved query of ``folder`` on the graph, each from the captured graph."""
    from lipspark.query import Session

    t = time.perf_counter()
    session = Session(graph_dir)
    print(f"Graph loaded and indexed: {len(session.base):,} nodes, {session.base.num_edges:,} edges ({time.perf_counter() - t:.1f}s)\n")
    for name in sorted(f for f in os.listdir(folder) if f.endswith(".lq")):
        path = os.path.join(folder, name)
        print(f"== {path}")
        session.run("reset")
        with open(path, encoding="utf-8") as fh:
            for result in session.run(fh.read(), path):
                text = result.to_text()
                lines = text.splitlines()
                print("\n".join(lines[:25]) + (f"\n  … ({len(lines) - 25} more lines)" if len(lines) > 25 else ""), end="\n\n")
    from lipspark.viz import render

    session.run("reset")
    drawings = {
        os.path.join("viz", "car_dealership-coarse.html"): "zoomout request, choice, and, dealer1, dealer2, dealer3, dealer4, agg, xor, car",
        os.path.join("viz", "car_dealership-bid.html"): "subgraph output Bids1 of dealer1 execution 1",
    }
    for path, query in drawings.items():
        result = session.run(query)[-1]
        net = render(result, path, title=query)
        print(f"{query}\n  drawn: {len(net.nodes)} nodes, {len(net.edges)} edges -> {path}")
        session.run("reset")
    print()


def main(out_dir: str = os.path.join("graphs", "dealer-example")) -> int:
    t0 = time.perf_counter()
    spark = get_spark(app_name="lipspark-demo")
    print(f"Spark {spark.version} on {spark.sparkContext.master} (started in {time.perf_counter() - t0:.1f}s)\n")
    car_dealership(spark)
    deferred(spark)

    plain = dealer_bid(**example_inputs(spark)).collect()
    tracker = Tracker(spark)
    bids = dealer_bid(**example_inputs(spark, tracker))
    rows = bids.collect_annotated()
    assert sorted(map(tuple, plain)) == sorted(tuple(r.row) for r in rows), "provenance changed the data"
    graph = tracker.graph()

    print("Dealer module, Example 2.3 (Cars C1 Accord, C2 Civic, C3 Civic; request P1 B1 Civic)")
    for r in rows:
        poly = graph.polynomial(r.annotation)
        print(f"  bid {tuple(r.row)}")
        print(f"    provenance      {poly}")
        print(f"    Amount from     {graph.node(r.annotation.values['Amount'])['label']} over "
              f"{', '.join(graph.node(c)['label'] for c in graph.child_ids(r.annotation.values['Amount']))}")
        print(f"    lineage         {sorted(evaluate(poly, LINEAGE))}")
        print(f"    derivations     {evaluate(poly, COUNTING, default=1, without_delta=True)}")  # δ would make it 1
        without_c2 = evaluate(poly, BOOLEAN, lambda tok: tok != "Cars:C2")
        print(f"    without Cars:C2 the bid {'is still made' if without_c2 else 'disappears'}")
    for count in graph.find(op=Op.COUNT):
        value = graph.value(count)
        print(f"  {value}  = {graph.node(count)['value']}; without Cars:C2: "
              f"{evaluate(value, BOOLEAN, lambda tok: tok != 'Cars:C2')}")

    shutil.rmtree(out_dir, ignore_errors=True)
    tracker.write(out_dir)
    stats = graph_stats(out_dir)
    print(f"\nGraph: {stats.nodes} nodes, {stats.edges} edges, {stats.bytes:,} bytes -> {out_dir}/")
    print(f"Done in {time.perf_counter() - t0:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
