"""Running a workflow definition: a sequence of executions into a provenance store.

>>> from lipspark.workflow.run import RunSummary
>>> RunSummary("w", "graphs/w", 2, 2, False, {}, 10, 12, 1000, 1.0, [0.5, 0.5]).executions_total
2
"""
from __future__ import annotations

import os
import shutil
import signal
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from lipspark.errors import Interrupted, StoreError
from lipspark.workflow.definition import WorkflowDefinition, load_definition
from lipspark.vocabulary.checks import CheckResult
from lipspark.workflow.checks import CheckFailed
from lipspark.workflow.execution import Executor, relation_frame
from lipspark.workflow.report import InvocationReport, invocation_reports, module_table, relation_rows, why_empty
from lipspark.store import Store

__all__ = ["RunSummary", "run"]


@dataclass
class RunSummary:
    """What a run did: executions, outputs, graph size, where it is stored, how long it took."""

    workflow: str
    store: str
    executions_run: int
    executions_total: int
    stopped_early: bool
    outputs: dict[str, dict[str, int]]
    nodes: int | None
    edges: int | None
    bytes: int
    seconds: float
    execution_seconds: list[float] = field(default_factory=list)
    deferred: bool = False
    #: the last execution run now, invocation by invocation (:mod:`lipspark.workflow.report`)
    invocations: list[InvocationReport] = field(default_factory=list)
    #: why each empty workflow output ("node.relation") is empty
    empty: dict[str, str] = field(default_factory=dict)
    #: the integrity checks that failed in the executions run now: (execution, verdict)
    failed_checks: list[tuple[int, CheckResult]] = field(default_factory=list)

    def __str__(self) -> str:
        outputs = [f"{n}.{r}: {c} rows" + (f" ({self.empty[f'{n}.{r}']})" if f"{n}.{r}" in self.empty else "")
                   for n, rels in self.outputs.items() for r, c in rels.items()]
        lines = [
            f"workflow     {self.workflow}",
            f"executions   {self.executions_run} run now, {self.executions_total} in the store" + (" (stopped: condition met)" if self.stopped_early else ""),
            "outputs      " + ("; ".join(outputs) or "none"),
            f"graph        {self.nodes:,} nodes, {self.edges:,} edges" if self.nodes is not None
            else f"graph        {f'deferred: make it with lipspark materialize {self.store}' if self.deferred else 'none (provenance off)'}",
            f"store        {self.store} ({self.bytes:,} bytes)",
            f"time         {self.seconds:.1f}s" + (f" ({sum(self.execution_seconds) / len(self.execution_seconds):.2f}s per execution)" if self.execution_seconds else ""),
        ]
        for n, r in self.failed_checks:
            what = f"{r.violations} violating row(s)" if r.kind == "row" else "its table predicate is not true"
            lines.append(f"check        {r.name!r} on {r.relation} of {r.node} fails in execution {n}: {what} ({r.level}; "
                         f"lipspark query {self.store} -e 'violations \"{r.name}\" execution {n}')")
        if self.invocations:
            lines += ["", f"execution {self.executions_total}, module by module:", module_table(self.invocations)]
        return "\n".join(lines)


def _definition_file(definition: WorkflowDefinition) -> str | None:
    """The file a definition was loaded from (deferred capture replays it), if any."""
    import sys

    mod = sys.modules.get(getattr(definition.build, "__module__", ""), None)
    path = getattr(mod, "__file__", None)
    return os.path.abspath(path) if path and os.path.exists(path) else None


def _dir_bytes(path: str) -> int:
    total = 0
    for root, _, files in os.walk(path):
        total += sum(os.path.getsize(os.path.join(root, f)) for f in files if not f.endswith(".crc"))
    return total


def run(
    definition: "WorkflowDefinition | str",
    *,
    graph_dir: str | None = None,
    executions: int | None = None,
    provenance: bool = True,
    master: str | None = None,
    params: dict[str, Any] | None = None,
    progress: bool = False,
    spark: Any = None,
    count_graph: bool = True,
    capture: str = "eager",
    verbose: bool = False,
) -> RunSummary:
    """Run (or continue) a sequence of executions of a workflow definition.

    Parameters
    ----------
    definition
        A :class:`WorkflowDefinition` or the path of a file defining ``DEFINITION``.
    graph_dir
        Store directory (default ``graphs/<name>``, or ``graphs/<name>-plain`` without provenance).
        An existing store is continued from its last committed execution.
    executions
        How many executions to run now (default: the ``numExec`` parameter, else 1).
    provenance
        Record provenance (``False`` runs the same module code on plain DataFrames).
    master
        Spark master URL (default embedded ``local[2]``).
    params
        Parameter overrides (e.g. ``{"numCars": 2000, "seed": 7}``).
    count_graph
        Load an eager store's graph to report its size.
    capture
        ``"eager"`` writes the graph with every execution; ``"deferred"`` runs at the speed of
        provenance off; its graph is made later, explicitly, by replaying the executions
        (:func:`lipspark.workflow.materialize`, ``lipspark materialize``; the definition file
        must stay where it is).
    verbose
        Keep Spark's own logging when this call starts Spark (default: errors only).
    """
    from lipspark.session import get_spark

    t0 = time.perf_counter()
    if isinstance(definition, str):
        path: str | None = definition
        definition = load_definition(definition)
    else:
        path = _definition_file(definition)
    p = definition.with_params(params or {})
    graph_dir = graph_dir or os.path.join("graphs", definition.name + ("" if provenance else "-plain"))
    workflow = definition.build(p)  # invalid parameters or workflows fail here, before anything is written
    # the writer lock is taken before Spark starts: a second writer fails at once, naming the first
    store, created = _open_store(definition, path, graph_dir, provenance, capture, p)
    interrupted, previous, own_spark = threading.Event(), None, spark is None
    try:
        spark = spark or get_spark(master, app_name=f"lipspark-{definition.name}", verbose=verbose)
        if own_spark and not verbose:  # a failure is reported as lipspark's crash report, not Spark's task logs
            _set_log_level(spark, "OFF")
        previous = _on_interrupt(interrupted, spark, quiet=own_spark)
        executor = Executor(spark, workflow, store, provenance=provenance)
        executor.interrupted = interrupted
        try:
            executor.initialize(definition.initial_state(spark, p))
        except BaseException:
            if created:  # a store that never got its initial state is no store: leave nothing behind
                shutil.rmtree(graph_dir, ignore_errors=True)
            raise
        n_run = executions if executions is not None else int(p.get("numExec", 1))
        failed: list[tuple[int, CheckResult]] = []
        times, stopped, seconds = _run_executions(spark, definition, executor, p, n_run, progress, interrupted, failed)
    except BaseException as err:
        if not (interrupted.is_set() or isinstance(err, KeyboardInterrupt)):
            raise
        if own_spark and spark is not None:  # the logs of the cancelled jobs were silenced: back to lipspark's level
            _set_log_level(spark, "ERROR")
        # the store is at its last commit, whatever was under way: say so in one line
        if not os.path.exists(os.path.join(store.root, "store.json")):
            raise Interrupted(f"interrupted before the store's first commit: nothing was kept at {store.root}") from None
        done = len(Store.open(store.root).executions)
        raise Interrupted(f"interrupted: the store at {store.root} keeps its {done} committed execution(s), unchanged; "
                          "run the same command again to continue") from None
    finally:
        store.unlock()
        _restore_interrupt(previous)
    nodes, edges, per_node = _graph_size(store) if provenance and count_graph else (None, None, None)
    if provenance and store.capture == "eager":
        _partitions_after(store.root)
    counts, reports, empty = _output_counts(store, workflow), [], {}
    if times and store.executions:  # what the last execution run now did
        record = store.executions[-1]
        reports = invocation_reports(store, workflow, record, seconds, per_node)
        empty = {f"{n}.{r}": why_empty(store, workflow, record, n, r) for n, rels in counts.items() for r, c in rels.items() if c == 0}
    return RunSummary(definition.name, store.root, len(times), len(store.executions), stopped, counts,
                      nodes, edges, _dir_bytes(store.root), time.perf_counter() - t0, times, deferred=store.capture == "deferred",
                      invocations=reports, empty=empty, failed_checks=failed)


def _on_interrupt(flag: threading.Event, spark: Any, quiet: bool) -> Any:
    """Ctrl-C during a run stops it at the next safe point, not in the middle of a JVM call.

    The handler sets ``flag`` and cancels the run's Spark jobs from another thread (another JVM
    connection: PySpark's own handler cancels through the connection the interrupted call is
    using, which breaks it, and py4j and Spark then print pages of traces); the job under way
    fails, and the run checks ``flag`` between invocations. A second Ctrl-C raises at once.
    ``quiet``: the session is the run's own, so the logs of the jobs it cancels are silenced.
    Returns the handler it replaces (``None`` off the main thread, where signals cannot be handled).
    """
    if threading.current_thread() is not threading.main_thread():
        return None

    def handler(signum: int, frame: Any) -> None:
        if flag.is_set():
            raise KeyboardInterrupt()
        flag.set()
        threading.Thread(target=_cancel_jobs, args=(spark, quiet), daemon=True).start()

    return signal.signal(signal.SIGINT, handler)


def _checkpoint(flag: threading.Event) -> None:
    """A safe point: stop here if the run was interrupted."""
    if flag.is_set():
        raise KeyboardInterrupt()


def _cancel_jobs(spark: Any, quiet: bool) -> None:
    """Cancel the Spark jobs running for an interrupted run (best effort)."""
    if quiet:
        _set_log_level(spark, "OFF")
    try:
        spark.sparkContext.cancelAllJobs()
    except Exception:  # noqa: BLE001 - nothing more to do for a run that is stopping anyway
        pass


def _set_log_level(spark: Any, level: str) -> None:
    try:
        spark.sparkContext.setLogLevel(level)
    except Exception:  # noqa: BLE001 - best effort, for a run that is stopping
        pass


def _restore_interrupt(previous: Any) -> None:
    if previous is not None and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, previous)


def _open_store(definition: WorkflowDefinition, path: str | None, graph_dir: str, provenance: bool, capture: str,
                params: dict[str, Any]) -> tuple[Store, bool]:
    """The store to continue (checked to be run the same way) or a new one; and whether it is new."""
    if os.path.exists(os.path.join(graph_dir, "store.json")):
        store = Store.open(graph_dir).lock()
        try:
            _check_continues(store, definition, graph_dir, provenance, capture, params)
        except BaseException:
            store.unlock()
            raise
        return store, False
    if provenance and capture == "deferred" and path is None:
        raise StoreError(f"deferred capture replays the workflow's definition later, and {definition.name!r} was not loaded from a file; "
                         "load it with lipspark.workflow.load_definition(path), or use capture='eager'")
    return Store.create(graph_dir, definition.name, provenance, params, capture=capture, definition=path), True


def _check_continues(store: Store, definition: WorkflowDefinition, graph_dir: str, provenance: bool, capture: str,
                     params: dict[str, Any]) -> None:
    """That the existing store at ``graph_dir`` was run the way this run would continue it."""
    if store.meta["workflow"] != definition.name:
        raise StoreError(f"{graph_dir} holds workflow {store.meta['workflow']!r}, not {definition.name!r}")
    if store.meta["provenance"] != provenance:
        raise StoreError(f"{graph_dir} was run with provenance {'on' if store.meta['provenance'] else 'off'}; continue it the same way or use another --graph")
    if provenance and store.capture != capture:
        raise StoreError(f"{graph_dir} was run with --capture {store.capture}; continue it the same way or use another --graph")
    # a parameter the definition gained after the store was made counts as its default there
    stored = {**{k: v for k, v in definition.params.items() if k not in store.meta["params"]}, **store.meta["params"]}
    if stored != params:
        changed = sorted(k for k in params if stored.get(k) != params[k])
        raise StoreError(f"{graph_dir} was created with other parameters ({', '.join(changed)}); continue it with the same ones or use another --graph")


def _run_executions(spark: Any, definition: WorkflowDefinition, executor: Executor, params: dict[str, Any], n_run: int,
                    progress: bool, interrupted: threading.Event | None = None,
                    failed: list[tuple[int, CheckResult]] | None = None) -> tuple[list[float], bool, dict[str, float]]:
    """Run up to ``n_run`` executions (fewer if the definition's stop condition is met): the
    time each took, whether the run stopped early, and the last one's time per invocation.
    The checks that fail are added to ``failed``; one of level ``fail`` stops the run
    (:class:`~lipspark.workflow.checks.CheckFailed`) after its execution is committed."""
    stop = threading.Event() if interrupted is None else interrupted
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=n_run, desc=definition.name, unit="exec")
    times: list[float] = []
    seconds: dict[str, float] = {}
    mark = [0.0]

    def invoked(node: str) -> None:  # an invocation ended: its time, then a safe point
        now = time.perf_counter()
        seconds[node], mark[0] = now - mark[0], now
        _checkpoint(stop)

    try:
        for _ in range(n_run):
            e0 = time.perf_counter()
            _checkpoint(stop)
            inputs = definition.inputs(spark, executor.store.next_execution, params)
            seconds.clear()
            mark[0] = time.perf_counter()
            record = executor.execute(inputs, on_invocation=invoked)
            times.append(time.perf_counter() - e0)
            bad = [r for r in executor.check_results if not r.passed]
            if failed is not None:
                failed.extend((executor.store.executions[-1]["n"], r) for r in bad)
            if any(r.level == "fail" for r in bad):
                raise CheckFailed(executor.store.executions[-1]["n"], [r for r in bad if r.level == "fail"])
            if bar:
                bar.update(1)
            if definition.stop is not None:
                out_rows = {
                    node: {r: relation_frame(spark, executor.store, d).collect() for r, d in rels.items()}
                    for node, rels in record["outputs"].items()
                    if executor.workflow.nodes[node].output
                }
                if definition.stop(out_rows, params):
                    return times, True, seconds
    finally:
        if bar:
            bar.close()
    return times, False, seconds


def _output_counts(store: Store, workflow: Any) -> dict[str, dict[str, int]]:
    """Rows of each workflow output in the store's last execution (from the files' footers)."""

    if not store.executions:
        return {}
    last = store.executions[-1]["outputs"]
    return {node: {r: relation_rows(store, d) for r, d in rels.items()} for node, rels in last.items() if workflow.nodes[node].output}


def _partitions_after(root: str) -> None:
    """Append the executions just run to the store's partitioned tables, when it has them (a
    user made them with ``lipspark partition`` for ``lipspark query --engine spark``): after the
    commits, like the query-ready index, so they cost the run's commits nothing; a store without
    them is not partitioned (the spark engine makes them when it first opens the store)."""
    from lipspark.graph.partitions import PARTITIONS_DIR, update

    if os.path.exists(os.path.join(root, PARTITIONS_DIR, "partitions.json")):
        update(root)


def _graph_size(store: Store) -> tuple[int | None, int | None, dict[str, int] | None]:
    """Nodes and edges of the store's graph if it has one now (an eager store's), and the nodes
    each workflow node's invocation added in the last execution. A deferred store's graph is
    made only by an explicit :func:`~lipspark.workflow.materialize`, which replays every
    execution; a summary does not pay for that."""
    if store.capture != "eager":
        return None, None, None
    from collections import Counter

    import numpy as np

    from lipspark.graph.index import GraphIndex

    g = GraphIndex.load(store.root)
    last = np.arange(int(g.blocks[-2]), int(g.blocks[-1]), dtype=np.int64)  # the last execution's block
    per_node = Counter(str(n) for n in g.column("node", last).tolist() if n is not None)
    return len(g), g.num_edges, dict(per_node)
