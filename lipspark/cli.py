"""``lipspark`` command line: run workflows with provenance, query their graphs.

>>> from lipspark.cli import build_parser
>>> build_parser().parse_args(["run", "workflows/car_dealership.py", "--executions", "2"]).executions
2
>>> build_parser().parse_args(["query", "graphs/g", "-e", "zoomout agg"]).expression
'zoomout agg'
>>> build_parser().parse_args(["export", "graphs/g", "--format", "prov-n", "-o", "g.provn"]).format
'prov-n'
>>> build_parser().parse_args(["shell", "graphs/g", "--ids"]).ids
True
>>> a = build_parser().parse_args(["viz", "graphs/g", "-e", "zoomout agg", "-o", "viz/agg.html", "--max-nodes", "300"])
>>> a.output, a.max_nodes, a.file
('viz/agg.html', 300, None)
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from lipspark.errors import Interrupted, LipsparkError
from lipspark.shell import STATEMENTS

__all__ = ["main", "console", "build_parser"]


def _param(text: str) -> tuple[str, str]:
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    k, v = text.split("=", 1)
    return k.strip(), v.strip()


def _positive(text: str) -> int:
    """A whole number of at least 1 (``run --executions``, ``viz --max-nodes``; export checks its own)."""
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return n


_EXPORT_FORMATS = ("prov-json", "prov-n", "graphml", "openlineage")
_EXPORT_SUFFIXES = {".json": "prov-json", ".provn": "prov-n", ".graphml": "graphml", ".jsonl": "openlineage"}


class _HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, except that a paragraph with lines indented by two spaces (examples)
    is kept as written; other paragraphs are wrapped as usual."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        paragraphs = []
        for para in text.split("\n\n"):
            kept = "\n  " in para
            paragraphs.append(indent + para.replace("\n", "\n" + indent) if kept else super()._fill_text(para, width, indent))
        return "\n\n".join(paragraphs)


# The examples of each help text. They read the graph `make demo` writes, and run, in this order
# in one directory, in tests/test_examples.py (which also runs each statement of _STATEMENTS).
_DEMO = "graphs/car_dealership-demo"
_EXAMPLES = {
    "lipspark": [
        "lipspark run workflows/car_dealership.py --executions 1 --param numCars=200 --graph graphs/cars",
        f"lipspark query {_DEMO} queries/what_if_car_absent.lq",
        f"lipspark shell {_DEMO}",
        f'lipspark viz {_DEMO} -e "subgraph output Bids1 of dealer1 execution 1" -o viz/bid.html',
        f'lipspark export {_DEMO} -e "zoomout dealer1, dealer2, dealer3, dealer4" -o coarse.provn',
    ],
    "run": [
        "lipspark run workflows/car_dealership.py --executions 1 --param numCars=200 --graph graphs/cars  # makes or continues it",
        "lipspark run workflows/arctic_stations.py --executions 1 --param stations=2 --capture deferred --graph graphs/arctic",
    ],
    "materialize": ["lipspark materialize graphs/arctic  # run with --capture deferred (lipspark run --help)"],
    "reindex": [f"lipspark reindex {_DEMO}"],
    "partition": [f"lipspark partition {_DEMO}",
                  f'lipspark query {_DEMO} --engine spark -e "ancestors output BestBid of agg execution 1"'],
    "serve": [
        "lipspark run workflows/car_dealership.py --executions 2 --param numCars=200 --capture deferred --no-serve --graph graphs/cars-deferred",
        "lipspark serve graphs/cars-deferred --detach --idle 10  # returns once it listens; it warms up in the background",
        "lipspark serve graphs/cars-deferred --status",
        "lipspark query graphs/cars-deferred -e 'polynomial output BestBid of agg execution 2'  # its replays run in the service",
        "lipspark serve graphs/cars-deferred --stop",
    ],
    "check": [f"lipspark check {_DEMO}"],
    "query": [
        f"lipspark query {_DEMO} queries/what_if_car_absent.lq",
        f'lipspark query {_DEMO} -e "zoomout dealer2, dealer3, dealer4; ancestors output BestBid of agg execution 1"',
        f"lipspark query {_DEMO} -e 'show state Cars(Model = \"Audi A6\") in dealer1 execution 1' --format json",
    ],
    "shell": [
        f"lipspark shell {_DEMO}  # at a terminal: Tab completes, help lists the statements, quit leaves",
        f"lipspark shell {_DEMO} < queries/what_if_car_absent.lq  # from a file or a pipe: prints the answers only",
    ],
    "export": [
        f"lipspark export {_DEMO} -o car_dealership.json",
        f'lipspark export {_DEMO} -e "ancestors output BestBid of agg execution 1" -o best_bid.graphml',
        f"lipspark export {_DEMO} --format openlineage -o car_dealership.openlineage.jsonl",
    ],
    "viz": [
        f'lipspark viz {_DEMO} -e "zoomout dealer2, dealer3, dealer4; ancestors output BestBid of agg execution 1" -o viz/best_bid.html',
        f"lipspark viz {_DEMO} queries/winning_bid_cars.lq -o viz/winning_bid_cars.html",
    ],
}
#: One example of every statement of the query language (docs/query-language.md), on the demo graph;
#: ``help`` in ``lipspark shell`` shows them with their syntax.
_STATEMENTS = [s.example for s in STATEMENTS]


def _epilog(command: str) -> str:
    demo = any(_DEMO in e for e in _EXAMPLES[command])
    text = f"examples{f' (after make demo, which writes {_DEMO})' if demo else ''}:\n" + "\n".join("  " + e for e in _EXAMPLES[command])
    if command == "query":
        text += ("\n\nstatements, one example of each (for -e; several are separated by ;):\n"
                 + "\n".join("  " + e for e in _STATEMENTS) + "\n\nThe language: docs/query-language.md. lipspark shell keeps a graph "
                 "open for a session of queries (help shows each statement's syntax; Tab completes names).")
    return text


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="lipspark", description="Semiring provenance for workflows of PySpark modules.",
                                 epilog=_epilog("lipspark") + "\n\nEach command's --help shows its own examples.",
                                 formatter_class=_HelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)

    def command(name: str, **kwargs: Any) -> argparse.ArgumentParser:
        if name in _EXAMPLES:
            kwargs["epilog"] = _epilog(name)
        return sub.add_parser(name, formatter_class=_HelpFormatter, **kwargs)

    r = command("run", help="run (or continue) a workflow's executions, recording provenance")
    r.add_argument("workflow", help="workflow definition file, e.g. workflows/car_dealership.py")
    r.add_argument("--executions", type=_positive, default=None, help="executions to run now (default: the workflow's numExec)")
    r.add_argument("--graph", default=None, help="store directory (default graphs/<workflow>); an existing store is continued")
    r.add_argument("--no-provenance", action="store_true", help="run the same module code on plain DataFrames (no graph)")
    r.add_argument("--explain-failure", action="store_true",
                   help="run nothing: replay only the invocation that failed the store's last failed execution, with "
                        "provenance, and print its crash report with the culprit rows (docs/debugging.md)")
    r.add_argument("--master", default=None, help="Spark master URL (default: embedded local[2])")
    r.add_argument("--seed", type=int, default=None, help="the workflow's random seed")
    r.add_argument("--param", type=_param, action="append", default=[], metavar="NAME=VALUE", help="a workflow parameter")
    r.add_argument("--quiet", action="store_true", help="no progress bar")
    r.add_argument("--verbose", action="store_true", help="show Spark's own log lines (default: errors only)")
    r.add_argument("--capture", choices=("eager", "deferred"), default="eager",
                   help="eager (default): write the graph with each execution; deferred: run at the speed of provenance off "
                        "and make the graph when first queried, by replaying the executions")
    serving = r.add_mutually_exclusive_group()
    serving.add_argument("--serve", type=_positive, default=None, metavar="MINUTES",
                         help="with --capture deferred (the default there: 15): when the run ends, its Spark stays on as the "
                              "store's replay service, warm for the first queries, until it has been idle MINUTES; "
                              "while the run goes on, it prepares the store for them (lipspark serve --help; "
                              "LIPSPARK_SERVE=off turns the default off)")
    serving.add_argument("--no-serve", action="store_true", help="with --capture deferred: leave no replay service when the run ends, "
                                                                 "and prepare nothing while it runs (the run at plain speed)")
    m = command("materialize", help="make the graph of a store run with --capture deferred (replays its executions)")
    m.add_argument("graph", help="a workflow store run with --capture deferred")
    m.add_argument("--master", default=None, help="Spark master URL (default: embedded local[2])")
    m.add_argument("--quiet", action="store_true", help="no progress bar")
    m.add_argument("--verbose", action="store_true", help="show Spark's own log lines (default: errors only)")
    sv = command("serve", help="keep a warm Spark that replays a deferred store's invocations for its queries",
                 description="Keep one Spark session running for a store run with --capture deferred, so that a query "
                             "needing fine-grained provenance has its invocations replayed in a JVM that is already warm "
                             "instead of starting Spark itself: a first replay in a new process costs several times a warm "
                             "one (docs/benchmarks.md). It warms up first (replays execution 1's invocations into a scratch "
                             "directory it removes), then serves lipspark query, shell, viz, export and Python sessions on "
                             "the store until --idle minutes pass without a request. Queries work the same without it: they "
                             "replay in their own process. A deferred lipspark run leaves one by default, on the run's own "
                             "warm Spark (lipspark run --help: --serve, --no-serve). See docs/design.md, \"Deferred capture\".")
    sv.add_argument("graph", help="a workflow store run with --capture deferred")
    sv_do = sv.add_mutually_exclusive_group()
    sv_do.add_argument("--detach", action="store_true", help="start it in the background and return once it listens "
                                                             "(its log: <store>/replays/service.log)")
    sv_do.add_argument("--status", action="store_true", help="say whether a service runs for the store (exit 1 if none)")
    sv_do.add_argument("--stop", action="store_true", help="stop the store's service")
    sv.add_argument("--idle", type=_positive, default=15, help="stop after this many minutes without a request (default: 15)")
    sv.add_argument("--warm", type=int, default=300, metavar="SECONDS",
                    help="warm up for at most this many seconds before serving (default: 300; 0: none)")
    sv.add_argument("--master", default=None, help="Spark master URL (default: embedded local[2])")
    ri = command("reindex", help="rebuild a store's query-ready index from its graph (queries rebuild a stale one themselves)",
                 description="Rebuild the query-ready index (index/) of a store or graph directory from its graph "
                             "(manifests and Parquet tables). The index is derived: queries check it and append or "
                             "rebuild it when it is missing or stale; this forces a rebuild. See docs/store-format.md.")
    ri.add_argument("graph", help="a workflow store (graphs/<workflow>) or a graph directory")
    pt = command("partition", help="partition a store's graph into connected sets for the Spark query engine (query --engine spark)",
                 description="Write the store's graph as Parquet tables partitioned by connected set (partitions/, "
                             "beside index/), which lipspark query --engine spark reads a set at a time: a query reads "
                             "the files of the sets its answer can reach. Derived and incremental: executions run since "
                             "are appended, anything stale is made again (--rebuild forces it); the spark engine makes "
                             "them itself when they are missing. See docs/store-format.md.")
    pt.add_argument("graph", help="a workflow store (graphs/<workflow>) or a graph directory")
    pt.add_argument("--rebuild", action="store_true", help="make them again from scratch")
    ck = command("check", help="verify every file a store names (present, size, checksum); exit 1 if any is damaged",
                 description="Verify every file the records of a store or graph directory name — stored relations, "
                             "graph tables, a deferred store's replay — against the size and CRC-32 recorded when it "
                             "was written. Reads only. Prints one line per problem, naming the file and what repairs "
                             "it, then a summary; exits 1 if anything is damaged. See docs/reliability.md.")
    ck.add_argument("graph", help="a workflow store (graphs/<workflow>) or a graph directory")
    q = command("query", help="run provenance queries (zoom, delete, traces, polynomials) on a captured graph")
    q.add_argument("graph", help="a workflow store (graphs/<workflow>) or a graph directory")
    src = q.add_mutually_exclusive_group(required=True)
    src.add_argument("file", nargs="?", help="a query file (.lq), e.g. queries/bid_without_car.lq")
    src.add_argument("-e", "--expression", help="query text: statements separated by ; (examples below)")
    q.add_argument("--format", choices=("table", "json"), default="table", help="output format (default: table)")
    q.add_argument("--ids", action="store_true", help="tables show node ids too (JSON always has them)")
    q.add_argument("--all", action="store_true", help="tables show every row (default: the first 50)")
    q.add_argument("--engine", choices=("memory", "spark", "auto"), default="memory",
                   help="memory: the query-ready index in this process (default); spark: Spark jobs read the store's "
                        "tables a connected set at a time (lipspark partition --help); auto: spark for a graph of 50M edges or more")
    q.add_argument("--master", default=None, help="with --engine spark: Spark master URL (default: embedded local[2])")
    sh = command("shell", help="a session of queries on one graph: one statement a line, history, Tab completion, help",
                 description="Open a graph once and answer query statements line by line, as lipspark query prints "
                             "them, on one working view (a zoomout holds until reset). An error is one line and the "
                             "session goes on. At a terminal: history in ~/.lipspark_history (LIPSPARK_HISTORY names "
                             "another file; empty: none), Tab completes keywords and the graph's module, relation and "
                             "column names, help lists the statements, quit or Ctrl-D leaves. From a pipe or a file: "
                             "the answers only, exit status 2 if a statement failed. See docs/query-language.md.")
    sh.add_argument("graph", help="a workflow store (graphs/<workflow>) or a graph directory")
    sh.add_argument("--ids", action="store_true", help="tables show node ids too")
    sh.add_argument("--all", action="store_true", help="tables show every row (default: the first 50)")
    sh.add_argument("--engine", choices=("memory", "spark", "auto"), default="memory",
                    help="as for lipspark query: spark reads the store's tables a connected set at a time")
    sh.add_argument("--master", default=None, help="with --engine spark: Spark master URL (default: embedded local[2])")
    x = command("export", help="export a captured graph, or a query's final view or answer, as W3C PROV or GraphML; "
                               "a workflow store's runs and column lineage as OpenLineage events",
                description="Export a graph as W3C PROV (PROV-JSON, PROV-N) or GraphML. With a query, export the view "
                            "it leaves (after zoomout/delete), or only the nodes its last statement answers "
                            "(show, ancestors, descendants, subgraph). --format openlineage exports a workflow store's "
                            "executions and module invocations as OpenLineage run events with column lineage, to a "
                            "JSON-lines file and/or an OpenLineage endpoint (--url). See docs/export.md.")
    x.add_argument("graph", help="a workflow store (graphs/<workflow>) or a graph directory")
    x.add_argument("--format", choices=_EXPORT_FORMATS, default=None,
                   help="output format (default: from the output's suffix: .json, .provn, .graphml, .jsonl)")
    x.add_argument("-o", "--output", "--out", default=None,
                   help="the file to write (written atomically: nothing is written on error); optional with --url")
    x.add_argument("--url", default=None, help="openlineage only: also post the events to this OpenLineage endpoint "
                                               "(its /api/v1/lineage); off unless given")
    xsrc = x.add_mutually_exclusive_group()
    xsrc.add_argument("file", nargs="?", help="a query file (.lq) whose result to export")
    xsrc.add_argument("-e", "--expression", help="query text whose result to export (lipspark query --help shows the statements)")
    x.add_argument("--max-nodes", type=int, default=200_000,
                   help="refuse to export more nodes than this (default: 200000; 0: no limit)")
    v = command("viz", help="draw a captured graph, or the result of a query on it, as an interactive HTML page",
                description="Draw a graph in Lipstick's notation as a self-contained HTML page (vis.js). With a query, "
                            "draw its last result that has a graph (a view, a trace, a subgraph, a delete with the "
                            "removed nodes marked). See docs/viz.md.")
    v.add_argument("graph", help="a workflow store (graphs/<workflow>) or a graph directory")
    vsrc = v.add_mutually_exclusive_group()
    vsrc.add_argument("file", nargs="?", help="a query file (.lq) whose result to draw")
    vsrc.add_argument("-e", "--expression", help="query text whose last result with a graph to draw (lipspark query --help shows the statements)")
    v.add_argument("-o", "--output", default=None, help="the HTML file to write (default: viz/<graph name>.html; written atomically)")
    v.add_argument("--max-nodes", type=_positive, default=1500, help="refuse to draw more nodes than this (default: 1500)")
    b = command("bench", help="WorkflowGen benchmark: capture overhead and query latency, provenance on vs off",
                description="Run Car dealerships and Arctic stations with provenance on and off, interleaved, and "
                            "time executions and queries; writes JSON and PNG plots. See docs/benchmarks.md.")
    b.add_argument("--quick", action="store_true", help="tiny sizes: the smoke test (a few minutes)")
    b.add_argument("--only", nargs="+", default=None, metavar="NAME", help="run only these configurations")
    b.add_argument("--out", default=None, help="results directory (default benchmarks/results/workflowgen, or .../quick)")
    b.add_argument("--master", default=None, help="Spark master URL (default: embedded local[2])")
    return ap


def _bench(args: Any) -> int:
    from lipspark.bench import main as bench

    bench(quick=args.quick, out=args.out, only=args.only, master=args.master)
    return 0


def _run(args: Any) -> int:
    if args.explain_failure:
        return _explain_failure(args)
    if args.serve is not None and args.capture != "deferred":
        from lipspark.errors import WorkflowError

        raise WorkflowError("--serve keeps a replay service for a deferred store's queries: add --capture deferred "
                            "(an eager store's graph needs no replay)")
    minutes = _serve_minutes(args)
    if minutes is not None and hasattr(os, "fork"):
        from lipspark.workflow.service import run_then_serve

        return run_then_serve(lambda: _main_run(args), lambda: args.graph or _default_graph(args), idle=minutes * 60.0,
                              master=args.master)
    return _run_now(args)


def _serve_minutes(args: Any) -> int | None:
    """How long the run's Spark stays on as the store's replay service once idle (``None``: it does not)."""
    if args.capture != "deferred" or args.no_serve or args.no_provenance:
        return None
    from lipspark.workflow.service import DEFAULT_IDLE_MINUTES, serve_default

    if args.serve is not None:
        return int(args.serve)
    return DEFAULT_IDLE_MINUTES if serve_default() else None


def _main_run(args: Any) -> int:
    """The run in the child that serves after it: errors said in one line, as :func:`_main` says them."""
    args.no_serve = True
    return _main(args)


def _run_now(args: Any) -> int:
    from lipspark.errors import ExecutionFailed
    from lipspark.workflow import run

    params = dict(args.param)
    if args.seed is not None:
        params["seed"] = args.seed
    try:
        summary = run(
            args.workflow,
            graph_dir=args.graph,
            executions=args.executions,
            provenance=not args.no_provenance,
            master=args.master,
            params=params,
            progress=not args.quiet,
            capture=args.capture,
            verbose=args.verbose,
        )
    except ExecutionFailed as err:  # module code failed: its crash report, not a traceback
        print(err.report.text(store=args.graph or _default_graph(args)), file=sys.stderr)
        return 1
    print(summary)
    if args.serve is not None and not args.no_serve:  # no fork here: a service of its own, once the run has ended
        from lipspark.workflow.service import find_service, start_detached

        graph = args.graph or _default_graph(args)
        running = find_service(graph)
        if running is not None:  # it reads the store again when the store has grown
            print(f"replay service pid {running['pid']} already serves {graph}'s queries")
        else:
            info = start_detached(graph, idle=args.serve * 60.0, master=args.master)
            print(f"replay service pid {info['pid']} warming up for {graph}'s queries; it stops after {args.serve} idle minutes "
                  f"or: lipspark serve {graph} --stop")
    return 0


def _default_graph(args: Any) -> str:
    from lipspark.workflow.definition import load_definition

    name = load_definition(args.workflow).name
    return os.path.join("graphs", name + ("-plain" if args.no_provenance else ""))


def _explain_failure(args: Any) -> int:
    """``lipspark run WORKFLOW --explain-failure``: the culprits of the store's last failure."""
    from lipspark.session import get_spark
    from lipspark.workflow.culprits import explain_failure

    graph = args.graph or _default_graph(args)
    spark = get_spark(args.master, app_name="lipspark-explain", verbose=args.verbose)
    if not args.verbose:
        spark.sparkContext.setLogLevel("OFF")  # the replay makes the module fail again, on purpose
    report = explain_failure(graph, spark=spark)
    print(report.text(store=graph))
    return 0


def _materialize(args: Any) -> int:
    import time

    from lipspark.graph.index import GraphIndex
    from lipspark.session import get_spark
    from lipspark.workflow import Store, materialize

    store = Store.open(args.graph)
    t0 = time.perf_counter()
    deferred = store.capture == "deferred"
    if deferred:
        materialize(store, spark=get_spark(args.master, verbose=args.verbose), progress=not args.quiet)
    g = GraphIndex.load(args.graph)
    how = f"replayed with provenance in {time.perf_counter() - t0:.1f}s" if deferred else "eager capture: nothing to replay"
    print(f"{args.graph}: {len(store.executions)} executions, graph {len(g):,} nodes, {g.num_edges:,} edges ({how})")
    return 0


def _serve(args: Any) -> int:
    from lipspark.workflow import service

    if args.status:
        info = service.ping(args.graph)
        if info is None:
            print(f"{args.graph}: no replay service runs")
            return 1
        state = "warm" if info.get("warm") else "warming up"
        done = "busy replaying" if info.get("replays") is None else f"{info['replays']} invocation(s) replayed for queries"
        print(f"{args.graph}: replay service pid {info['pid']}, {state}, {done}; stops after {float(info.get('idle', 0)) / 60:g} "
              "idle minutes")
        return 0
    if args.stop:
        info = service.stop_service(args.graph)
        print(f"{args.graph}: {'stopped the replay service, pid ' + str(info['pid']) if info else 'no replay service ran'}")
        return 0
    if args.detach:
        info = service.start_detached(args.graph, idle=args.idle * 60.0, warm=float(args.warm), master=args.master)
        print(f"{args.graph}: replay service pid {info['pid']} listening (warming up; log: {args.graph}/replays/service.log); "
              f"stops after {args.idle} idle minutes or: lipspark serve {args.graph} --stop")
        return 0
    service.serve(args.graph, idle=args.idle * 60.0, warm=float(args.warm), master=args.master)
    return 0


def _reindex(args: Any) -> int:
    import time

    from lipspark.graph.qindex import reindex

    t0 = time.perf_counter()
    meta = reindex(args.graph)
    last = meta["blocks"][-1] if meta["blocks"] else {"nodes": 0, "edges": 0}
    print(f"{args.graph}: indexed {len(meta['blocks'])} graph(s), {last['nodes']:,} nodes, {last['edges']:,} edges "
          f"in {time.perf_counter() - t0:.1f}s")
    return 0


def _partition(args: Any) -> int:
    import time

    from lipspark.graph import partitions

    _materialized(args.graph)
    t0 = time.perf_counter()
    meta = partitions.rebuild(args.graph) if args.rebuild else partitions.update(args.graph)
    from lipspark.engines import zoom_deltas

    zoom_deltas(args.graph, partitions.Partitions.open(args.graph, make=False))  # what a zoomed view's size needs, made now
    blocks = meta["blocks"]
    nodes, edges = sum(b["nodes"] for b in blocks), sum(b["edges"] for b in blocks)
    sets = sum(b["sets"] for b in blocks) - (blocks[-1]["merges"][1] if blocks else 0)
    print(f"{args.graph}: {len(blocks)} graph(s), {nodes:,} nodes, {edges:,} edges in {sets:,} connected set(s), "
          f"in {time.perf_counter() - t0:.1f}s")
    return 0


def _check(args: Any) -> int:
    from lipspark.store.check import check_store

    report = check_store(args.graph)
    print(report)
    return 0 if report.ok else 1


def _materialized(path: str) -> None:
    """Replay what a deferred store has not replayed yet, so its graph can be read (an explicit
    step: loading a graph never runs Spark). Graph directories and eager stores need nothing."""
    import os

    if not os.path.exists(os.path.join(path, "store.json")):
        return
    from lipspark.store import Store

    store = Store.open(path)
    if store.capture == "deferred":
        from lipspark.workflow import materialize

        materialize(store, progress=sys.stderr.isatty())


def _rerunner(path: str) -> Any:
    """What re-runs the invocations of the store at ``path`` for ``delete … recompute`` and
    ``update`` (Spark starts when one runs); None for a graph directory, or a store it cannot
    serve (no execution, state rows kept as their writers' nodes, no definition file recorded)."""
    import os

    if not os.path.exists(os.path.join(path, "store.json")):
        return None
    from lipspark.store import Store
    from lipspark.workflow.rerun import Rerunner

    store = Store.open(path)
    if store.executions and store.state_scheme == "state" and store.meta.get("definition"):
        return Rerunner(store)
    return None


def _open_session(path: str, engine: str = "memory", master: str | None = None) -> Any:
    """A query session on the graph at ``path``. A deferred store not replayed whole answers
    from its coarse graph and replays the invocations each answer reaches into
    (:class:`~lipspark.workflow.ondemand.DeferredGraph`); one made before state rows had nodes
    of their own is replayed whole first (:func:`_materialized`). ``engine`` ``spark`` (or
    ``auto`` on a large graph) reads the store's partitioned tables with Spark instead."""
    import os

    from lipspark.query.engine import Session

    if engine != "memory":  # (lipspark.engines imports pandas: the memory engine's session maps the index only)
        from lipspark.engines import AUTO_EDGES, graph_edges, open_session

        if engine == "spark" or graph_edges(path) >= AUTO_EDGES:
            _materialized(path)
            return open_session(path, engine="spark", master=master)

    rerun = _rerunner(path)
    if os.path.exists(os.path.join(path, "store.json")):
        from lipspark.store import Store

        store = rerun.store if rerun is not None else Store.open(path)
        if store.capture == "deferred" and store.state_scheme == "state":
            from lipspark.workflow.materialize import _replayed_all

            if not _replayed_all(store, store.graph_store()):
                from lipspark.workflow.ondemand import DeferredGraph

                return Session(DeferredGraph(store, progress=sys.stderr.isatty()), rerun=rerun)
    _materialized(path)
    return Session(path, rerun=rerun)


def _query_text(args: Any) -> tuple[str, str]:
    from lipspark.errors import QueryError

    if args.file is not None:
        try:
            with open(args.file, encoding="utf-8") as fh:
                return fh.read(), args.file
        except OSError as err:
            raise QueryError(f"cannot read the query file {args.file}: {err.strerror}") from err
    return args.expression or "", "<-e>"


def _query(args: Any) -> int:
    import json
    import os

    from lipspark.errors import QueryError
    from lipspark.query.parser import parse

    text, source = _query_text(args)
    statements = parse(text, source)  # syntax errors before the (slower) graph load
    if not os.path.isdir(args.graph):
        raise QueryError(f"no graph at {args.graph}: expected a workflow store (lipspark run ... --graph DIR) or a graph directory")
    session = _open_session(args.graph, args.engine, args.master)
    results = []
    for stmt in statements:
        r = session.execute(stmt)
        results.append(r)
        if args.format == "table":
            print(r.to_text(ids=args.ids, all_rows=args.all), end="\n\n", flush=True)
    if args.format == "json":
        print(json.dumps([r.to_dict() for r in results], indent=2, default=str))
    return 0


def _shell(args: Any) -> int:
    import os

    from lipspark.shell import Shell, history_path

    if not os.path.isdir(args.graph):
        raise LipsparkError(f"no graph at {args.graph}: expected a workflow store (lipspark run ... --graph DIR) or a graph directory")
    interactive = sys.stdin.isatty()
    shell = Shell(_open_session(args.graph, args.engine, args.master), ids=args.ids, all_rows=args.all, source="<shell>" if interactive else "<stdin>")
    if not interactive:
        return shell.run(sys.stdin)
    g = shell.session.base
    part = shell.session._partial  # the spark engine: the graph's size is its tables', not what was read
    nodes, edges = (len(g), g.num_edges) if part is None else (part.parts.nodes, part.parts.edges)  # type: ignore[attr-defined]
    return shell.interact(history_path(), banner=f"{args.graph}: {nodes:,} nodes, {edges:,} edges. "
                                                "One statement a line (help lists them, Tab completes); quit or Ctrl-D leaves.")


def _session(args: Any) -> tuple[Any, list[Any]]:
    """Parse the optional query (syntax errors before the slower graph load), open the graph, run it."""
    import os

    from lipspark.query.engine import Session
    from lipspark.query.parser import parse

    statements = []
    if args.file is not None or args.expression is not None:
        text, source = _query_text(args)
        statements = parse(text, source)
    if not os.path.isdir(args.graph):
        raise LipsparkError(f"no graph at {args.graph}: expected a workflow store (lipspark run ... --graph DIR) or a graph directory")
    _materialized(args.graph)
    session = Session(args.graph, rerun=_rerunner(args.graph))
    return session, [session.execute(stmt) for stmt in statements]


def _export(args: Any) -> int:
    import os

    from lipspark.export import write_graphml, write_prov

    fmt = args.format
    if fmt is None and args.output is not None:
        fmt = _EXPORT_SUFFIXES.get(os.path.splitext(args.output)[1].lower())
    if fmt == "openlineage" or (fmt is None and args.output is None and args.url is not None):
        return _export_openlineage(args)
    if args.url is not None:
        raise LipsparkError(f"--url sends OpenLineage events; give --format openlineage (this export is {fmt or 'chosen by the output suffix'})")
    if args.output is None:
        raise LipsparkError("lipspark export needs -o FILE (--url alone is for --format openlineage)")
    if fmt is None:
        raise LipsparkError(f"cannot tell the export format from {args.output!r}; give --format {'|'.join(_EXPORT_FORMATS)} "
                            f"or an output ending in {', '.join(_EXPORT_SUFFIXES)}")
    if args.max_nodes < 0:
        raise LipsparkError(f"--max-nodes must be 0 (no limit) or positive, found {args.max_nodes}")
    max_nodes = args.max_nodes or None
    session, results = _session(args)
    graph, positions, what = session.view, None, "the view" if results else "the graph"
    if results and results[-1].nodes is not None and results[-1].graph is not None:
        graph, positions, what = results[-1].graph, results[-1].nodes, f"the answer to `{results[-1].statement}`"
    if fmt == "graphml":
        nodes, edges = write_graphml(graph, args.output, positions, max_nodes=max_nodes)
        print(f"wrote {args.output}: GraphML of {what}, {nodes} nodes, {edges} edges")
    else:
        records = write_prov(graph, args.output, "json" if fmt == "prov-json" else "provn", positions=positions, max_nodes=max_nodes)
        name = "PROV-JSON" if fmt == "prov-json" else "PROV-N"
        nodes = len(graph) if positions is None else len(positions)
        print(f"wrote {args.output}: {name} of {what}, {nodes} nodes, {records} PROV records")
    return 0


def _export_openlineage(args: Any) -> int:
    import os
    import time

    from lipspark.export.openlineage import write_openlineage

    if args.file is not None or args.expression is not None:
        raise LipsparkError("--format openlineage exports a whole store (every execution and invocation); it takes no query")
    if not os.path.exists(os.path.join(args.graph, "store.json")):
        raise LipsparkError(f"no workflow store at {args.graph}: OpenLineage events describe a workflow's runs (lipspark run WORKFLOW --graph DIR)")
    _materialized(args.graph)
    start = time.perf_counter()
    n = write_openlineage(args.graph, args.output, args.url)
    where = " and ".join(w for w in (args.output, args.url) if w)
    print(f"wrote {n} OpenLineage events to {where} in {time.perf_counter() - start:.1f} s")
    return 0


def _viz(args: Any) -> int:
    import os

    from lipspark.viz import render

    session, results = _session(args)
    name = os.path.basename(os.path.normpath(args.graph)) or "graph"
    out = args.output or os.path.join("viz", f"{name}.html")
    drawn = next((r for r in reversed(results) if r.graph is not None), None)
    if drawn is not None:
        obj, title = drawn, f"{name}: {drawn.statement}"
    else:
        obj, title = session.view, f"{name}: " + ("the view after the query" if results else "the captured graph")
    net = render(obj, out, max_nodes=args.max_nodes, title=title)
    info = net.lipspark
    extra = f" ({info.edge_multiset} with multiplicity)" if info.edge_multiset != info.edges else ""
    marked = f"; {info.marked} marked as removed" if info.marked else ""
    print(f"wrote {out}: {info.nodes} nodes, {info.edges} edges{extra}{marked} — {title}")
    return 0


def _quiet_py4j(record: Any) -> bool:
    """Drop py4j's own log records (it logs to the root logger and to ``py4j.*`` with a traceback
    when a command is interrupted or fails): the error that matters reaches :func:`main`, which
    says it in one line."""
    return "py4j" not in str(getattr(record, "pathname", ""))


def main(argv: list[str] | None = None) -> int:
    import logging

    args = build_parser().parse_args(argv)
    root, py4j = logging.getLogger(), logging.getLogger("py4j")
    level = py4j.level
    root.addFilter(_quiet_py4j)  # py4j logs some records to the root logger, others to its own
    py4j.setLevel(logging.CRITICAL + 1)
    try:
        return _main(args)
    finally:
        root.removeFilter(_quiet_py4j)
        py4j.setLevel(level)


def _main(args: Any) -> int:
    try:
        if args.command == "run":
            return _run(args)
        if args.command == "materialize":
            return _materialize(args)
        if args.command == "bench":
            return _bench(args)
        if args.command == "query":
            return _query(args)
        if args.command == "shell":
            return _shell(args)
        if args.command == "reindex":
            return _reindex(args)
        if args.command == "partition":
            return _partition(args)
        if args.command == "serve":
            return _serve(args)
        if args.command == "check":
            return _check(args)
        if args.command == "export":
            return _export(args)
        if args.command == "viz":
            return _viz(args)
    except Interrupted as err:
        _silence_spark()
        print(f"lipspark: {err}", file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        print("lipspark: interrupted", file=sys.stderr)
        return 130
    except LipsparkError as err:
        print(f"lipspark: error: {err}", file=sys.stderr)
        return 2
    return 1


def _silence_spark() -> None:
    """After Ctrl-C the command is ending: Spark's logs of the jobs it cancels are noise that
    would follow the one line saying what the command left."""
    if "pyspark" not in sys.modules:
        return
    try:
        from pyspark import SparkContext

        sc = SparkContext._active_spark_context
        if sc is not None:
            sc.setLogLevel("OFF")
    except Exception:  # noqa: BLE001 - the JVM may already be gone
        pass


def console() -> None:
    """The ``lipspark`` command. After Ctrl-C it leaves at once (``os._exit``): Spark's exit hooks
    would talk to a JVM connection the interrupt broke, and print its tracebacks after the one
    line that says what the interrupted command left."""
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:  # the reader went away (`lipspark query ... | head`): as a Unix filter does
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so the interpreter's final flush does not fail again
        sys.exit(141)
    if code == 130:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(130)
    sys.exit(code)


if __name__ == "__main__":
    console()
