"""Crash culprits: when module code fails during an execution, the rows and the operation that made it fail.

Inspector Gadget (VLDB 2011, §3.3) finds a crash's culprit records by running the dataflow again
over narrower and narrower parts of its input. lipspark knows more: which invocation failed, the
relations it read (every relation crossing a module boundary is stored), and how to carry
provenance through module code. So the search replays *only the failing invocation*, over the
relations it read — each annotated as a base relation (a token per stored row, labelled by the
module's declared key, else by its values) — and:

1. **guard** (value-level black boxes): the projection rule tells the replay which frame each
   black box is applied to (:attr:`Tracker.observer`); one Spark job per such projection calls the
   black box's function on every row of that *annotated* input inside ``try``. The rows that
   raise are the culprits, each with its annotation, hence its polynomial over the tuples the
   invocation read (``Cars:C17·Requests:B4``).
2. **narrowing** (anything else: an ANSI cast or arithmetic error, a plain UDF, a relation-level
   black box): per relation the invocation read, with the others whole, Inspector Gadget's passes
   — the rows split into at most ``K`` ranges, the ranges whose rows alone still make the
   invocation fail split again, down to single rows (``K`` = 100, then 10, then 1 row). A
   culprit is a row that makes the invocation fail on its own with the other relations whole.

With provenance on, each tuple the invocation read that the store has committed (the initial
state, an earlier execution's state, the workflow inputs of a committed execution) is also given
its polynomial over the workflow's base tuples, from the store's graph.

A raise in module code before any row is read (while the module builds its plan) has no
culprit rows: the report gives its ``file:line``.
"""
from __future__ import annotations

import os
import shutil
import time
import traceback
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from lipspark.blackbox import BlackBoxCall, KnownBlackBox, recording_calls
from lipspark.capture.builder import GraphBuilder
from lipspark.capture.layout import Layout
from lipspark.errors import LipsparkError, StoreError
from lipspark.frame import AnnotatedFrame
from lipspark.store import Store
from lipspark.store.failures import kept_dir, read_invocation, read_report, write_invocation, write_report
from lipspark.tracker import Tracker
from lipspark.vocabulary import BaseSegment, Context, FileRef, RelationDescriptor, Segment
from lipspark.vocabulary.columns import factor, is_hidden
from lipspark.vocabulary.culprits import CrashReport, Culprit
from lipspark.vocabulary.ids import ROW_BITS, ordinal_of, positional, positional_col, segment_of
from lipspark.workflow.module import Module
from lipspark.workflow.relations import descriptor, position_col, read_stored

if TYPE_CHECKING:  # pragma: no cover
    from lipspark.workflow.execution import Executor

__all__ = ["on_failure", "explain_failure", "find_culprits", "Read", "MAX_KEPT"]

#: at most this many culprits are kept in a report (the count says how many there were)
MAX_KEPT = 10_000
#: Inspector Gadget's passes: ranges of at most this many rows, then this many, then single rows
PASSES = (100, 10, 1)


@dataclass(frozen=True)
class Read:
    """A relation the failing invocation read: its name in the module, role (input or state)
    and where it is stored; ``committed``: whether the store's graph has its rows."""

    relation: str
    role: str
    desc: RelationDescriptor
    committed: bool

    def to_json(self) -> dict[str, Any]:
        return {"relation": self.relation, "role": self.role, "desc": self.desc.to_json(), "committed": self.committed}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Read":
        return cls(str(d["relation"]), str(d["role"]), descriptor(d["desc"]), bool(d["committed"]))


# ---------------------------------------------------------------------- the exception
def _is_spark_error(err: BaseException) -> bool:
    """Raised by Spark running module code on rows (not by Python building the plan)."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    return isinstance(err, (Py4JJavaError, PySparkException))


def exception_line(err: BaseException) -> str:
    """The exception in one line: a Python worker's own exception (``ValueError: bad car``), a
    Spark error's condition and first line, or the Python exception."""
    text = str(err)
    if "Traceback (most recent call last)" in text:
        lines = [ln.strip() for ln in text.split("Traceback (most recent call last)")[-1].splitlines()]
        body = [ln for ln in lines if ln and not ln.startswith(("File ", "^", "at ", "SQLSTATE", "JVM stacktrace")) and ":" in ln]
        if body:
            return body[-1][:300]
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    return f"{type(err).__name__}: {first}"[:300]


def _python_site(tb: Any) -> str:
    """``file:line (function)`` of the innermost frame outside lipspark and pyspark."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frames = [f for f in traceback.extract_tb(tb) if not os.path.abspath(f.filename).startswith(here + os.sep)
              and f"{os.sep}pyspark{os.sep}" not in f.filename and f"{os.sep}py4j{os.sep}" not in f.filename]
    if not frames:
        return "?"
    f = frames[-1]
    return f"{_short(f.filename)}:{f.lineno} ({f.name})"


def _short(path: str) -> str:
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def operation_of(err: BaseException) -> str:
    """Where module code asked for the failing operation: Spark's DataFrame query context
    (``"cast" was called from w.py:12``), a Python worker's traceback, or the raise itself."""
    ctx: list[Any] = getattr(err, "getQueryContext", lambda: [])()
    for c in ctx or []:
        try:
            site, fragment = c.callSite(), c.fragment()
        except Exception:  # noqa: BLE001 - an SQL context has no call site: try the next
            continue
        if site:
            file, _, line = site.rpartition(":")
            return f"{fragment} at {_short(file) if file else site}:{line}" if file else f"{fragment} at {site}"
    text = str(err)
    if "Traceback (most recent call last)" in text:
        sites = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("File ")]
        user = [s for s in sites if "/lipspark/" not in s and "/pyspark/" not in s]
        if user:  # File "/x/w.py", line 8, in price
            parts = user[-1].split('"')
            rest = parts[2].split(",") if len(parts) > 2 else []
            line = rest[1].strip().removeprefix("line ") if len(rest) > 1 else "?"
            fn = rest[2].strip().removeprefix("in ") if len(rest) > 2 else "?"
            return f"{fn} at {_short(parts[1])}:{line}"
    return _python_site(err.__traceback__)


# ---------------------------------------------------------------------- in the executor
def on_failure(executor: "Executor", n: int, err: BaseException, inv: Any, started: float) -> CrashReport | None:
    """Called by :meth:`Executor.execute` when execution ``n`` raised ``err`` in invocation
    ``inv`` (its pending directory still there): keep what the invocation read, find the
    culprits (provenance on) or say how to (off), keep the report. ``None``: not a failure of
    module code (an interrupt, a lipspark error, nothing invoked yet)."""
    if inv is None or not isinstance(err, Exception) or isinstance(err, LipsparkError):
        return None
    if executor.interrupted is not None and executor.interrupted.is_set():
        return None
    store = executor.store
    failed_at = time.perf_counter() - started
    reads = _keep_reads(store, n, inv)
    write_invocation(store.root, n, {"execution": n, "node": inv.node, "module": inv.module.name,
                                     "reads": [r.to_json() for r in reads], "exception": exception_line(err),
                                     "operation": operation_of(err), "plan": not _is_spark_error(err),
                                     "seconds": failed_at})
    base = dict(execution=n, node=inv.node, module=inv.module.name, committed=len(store.executions))
    if not _is_spark_error(err):
        report = CrashReport(**base, operation=operation_of(err), exception=exception_line(err), culprits=(), method="plan",
                             seconds={"execution": failed_at})
    elif not executor.provenance:
        report = CrashReport(**base, operation=operation_of(err), exception=exception_line(err), culprits=(), method="deferred",
                             seconds={"execution": failed_at})
    else:
        t0 = time.perf_counter()
        operation, exception, culprits, method = find_culprits(executor.spark, inv.module, reads, store.root, err,
                                                               graph=store.root if store.executions or store.meta.get("initial") else None)
        report = CrashReport(**base, operation=operation, exception=exception, culprits=culprits, method=method,
                             seconds={"execution": failed_at, "culprits": time.perf_counter() - t0})
    write_report(store.root, report)
    return report


def _keep_reads(store: Store, n: int, inv: Any) -> list[Read]:
    """The relations ``inv`` read; those the failed execution wrote are copied out of its
    pending directory (about to be discarded) into ``failures/`` first."""
    pending = store.final_dir(n)
    out = []
    for rname, (role, desc) in inv.descs.items():
        if desc.dir == pending or desc.dir.startswith(pending + "/"):
            new_dir = kept_dir(n) + desc.dir[len(pending):]
            target = os.path.join(store.root, new_dir)
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(store.resolve(desc.dir), target)
            files = tuple(FileRef.of(os.path.join(target, os.path.basename(f.path)), f"{new_dir}/{os.path.basename(f.path)}")
                          for f in desc.files)
            out.append(Read(rname, role, RelationDescriptor(new_dir, files, desc.values, desc.bags, desc.p, desc.every_row), False))
        else:
            out.append(Read(rname, role, desc, True))
    return out


# ---------------------------------------------------------------------- --explain-failure
def explain_failure(store: "Store | str", *, spark: SparkSession | None = None, execution: int | None = None) -> CrashReport:
    """Replay only the invocation that failed execution ``execution`` (default: the latest
    failure the store keeps), with provenance, over the relations it read; keep and return the
    report with its culprits. For stores run with provenance off or deferred capture, whose
    failures name the invocation only."""
    from lipspark.session import get_spark
    from lipspark.workflow.definition import load_definition

    store = Store.open(store) if isinstance(store, str) else store
    report = read_report(store.root, execution)
    record = read_invocation(store.root, report.execution)
    path = store.meta.get("definition")
    if not path or not os.path.exists(path):
        raise StoreError(f"the store at {store.root} does not name the workflow definition file it was run from (found {path!r}); "
                         "explain a failure from a store made by `lipspark run FILE`")
    definition = load_definition(path)
    workflow = definition.build(definition.with_params(store.meta["params"]))
    module = workflow.modules[record["module"]]
    reads = [Read.from_json(r) for r in record["reads"]]
    if record.get("plan"):
        return report
    spark = spark or get_spark(app_name="lipspark-explain")
    t0 = time.perf_counter()
    operation, exception, culprits, method = find_culprits(
        spark, module, reads, store.root, None, graph=store.root if store.capture == "eager" else None,
        operation=record["operation"], exception=record["exception"])
    seconds = {**report.seconds, "culprits": time.perf_counter() - t0}
    out = CrashReport(report.execution, report.node, report.module, operation, exception, culprits, method, report.committed, seconds)
    with store.lock(wait=5.0):  # the report is the store's: written under its writer lock
        write_report(store.root, out)
    return out


# ---------------------------------------------------------------------- the search
@dataclass
class _Observed:
    frame: AnnotatedFrame
    box: KnownBlackBox
    mark: int  # segments numbered below were recorded before this projection


def find_culprits(spark: SparkSession, module: Module, reads: list[Read], root: str, err: BaseException | None, *,
                  graph: str | None = None, operation: str | None = None,
                  exception: str | None = None) -> tuple[str, str, tuple[Culprit, ...], str]:
    """Replay ``module`` over ``reads`` (stored under ``root``) and find the culprit rows.

    Returns the operation, the exception (one line), the culprits and how they were found (a
    key of :data:`~lipspark.vocabulary.culprits.METHODS`). ``graph``: a store whose graph gives
    the committed tuples' polynomials over the workflow's base tuples.
    """
    operation = operation or (operation_of(err) if err is not None else "?")
    exception = exception or (exception_line(err) if err is not None else "?")
    builder = GraphBuilder(1)
    tracker = Tracker(spark, builder, context=Context(module=module.name))
    observed: list[_Observed] = []
    tracker.observer = lambda frame, box: observed.append(_Observed(frame, box, builder.next_segment))
    frames, bases = _annotated(spark, tracker, module, reads, root)
    with recording_calls() as calls:
        try:
            module.logic(**frames)  # type: ignore[misc]
        except Exception as replay_err:  # noqa: BLE001 - module code raising while it builds its plan
            if not _is_spark_error(replay_err):
                return _python_site(replay_err.__traceback__), exception_line(replay_err), (), "plan"
    tracker.observer = None
    for obs in observed:
        found = _guard(obs, calls)
        if found is not None:
            site, raised, rows = found
            culprits = _describe(spark, builder, bases, reads, root, graph, rows, obs.mark, obs.frame)
            return site, raised or exception, culprits, "guard"
    culprits = _narrow(spark, module, reads, root, builder, bases, graph)
    return operation, exception, culprits, "narrowing" if culprits else "none"


def _annotated(spark: SparkSession, tracker: Tracker, module: Module, reads: list[Read],
               root: str) -> tuple[dict[str, AnnotatedFrame], dict[int, Read]]:
    """The module's relations as annotated base relations (a token per stored row, labelled by
    the module's key for it), and which relation each token segment numbers."""
    frames, bases = {}, {}
    by_name = {r.relation: r for r in reads}
    for rname in [*module.inputs, *module.state]:
        rel = module.relation(rname)
        read = by_name.get(rname)
        if read is None:  # no edge brought it: empty, as the executor gives it
            empty = spark.createDataFrame([], rel.ddl)
            frames[rname] = AnnotatedFrame(tracker, empty.select("*", F.lit(0).cast("long").alias(factor(0))), Layout(1))
            continue
        df = read_stored(spark, os.path.join(root, read.desc.dir), read.desc.files)
        visible = [c for c in df.columns if not is_hidden(c)]
        seg = tracker.builder.allocate()
        columns = tuple(rel.key) if rel.key else tuple(visible)
        tracker.builder.record(BaseSegment(seg, tracker.context, relation=rname, key=tuple(rel.key), columns=columns,
                                           files=read.desc.files))
        bases[seg] = read
        frames[rname] = AnnotatedFrame(tracker, df.select(*[F.col(f"`{c}`") for c in visible],
                                                          positional_col(seg, position_col(read.desc)).alias(factor(0))), Layout(1))
    return frames, bases


def _as_col(c: Any) -> Any:
    return F.col(c) if isinstance(c, str) else c


def _guard(obs: _Observed, calls: list[BlackBoxCall]) -> tuple[str, str, list[dict[str, Any]]] | None:
    """Call the black box on every row of the observed projection's annotated input inside
    ``try`` (one Spark job): ``(operation, exception, rows that raised)``, or ``None``."""
    frame = obs.frame
    for call in calls:
        if call.box.name != obs.box.name or not call.box.jvm_function().equals(obs.box.function):
            continue
        names = [f"__lp_arg{i}" for i in range(len(call.cols))]
        try:
            probe = frame.with_annotations().select(*[F.col(f"`{c}`") for c in frame.with_annotations().columns],
                                    *[_as_col(c).alias(a) for c, a in zip(call.cols, names)])
        except Exception:  # noqa: BLE001 - these columns are not this frame's: another call of the box
            continue
        fn = call.box.fn
        data_cols = [c for c in frame.with_annotations().columns if not is_hidden(c) or c.startswith("__lp_f")]

        def guard(rows: Iterable[Any], fn: Any = fn, names: list[str] = names, keep: list[str] = data_cols) -> Iterator[Any]:
            import traceback as tb

            for row in rows:
                try:
                    fn(*[row[a] for a in names])
                except Exception as e:  # noqa: BLE001 - the point: which rows raise
                    last = tb.extract_tb(e.__traceback__)[-1]
                    yield ({c: row[c] for c in keep}, f"{type(e).__name__}: {e}".splitlines()[0][:300],
                           f"{last.filename}:{last.lineno} ({last.name})")

        failing = probe.rdd.mapPartitions(guard).take(MAX_KEPT)
        if failing:
            file, _, rest = failing[0][2].partition(":")
            raised_at = f"{_short(file)}:{rest}"
            return f"{obs.box.name} called at {call.site}, raised at {raised_at}", failing[0][1], [f[0] for f in failing]
    return None


def _plain(v: Any) -> Any:
    """A value as JSON keeps it (Rows as dicts, long text cut)."""
    if hasattr(v, "asDict"):
        return {k: _plain(x) for k, x in v.asDict().items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v[:20]] + (["…"] if len(v) > 20 else [])
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v[:200] if isinstance(v, str) else v
    return str(v)[:200]


def _describe(spark: SparkSession, builder: GraphBuilder, bases: dict[int, Read], reads: list[Read], root: str,
              graph: str | None, rows: list[dict[str, Any]], mark: int, frame: AnnotatedFrame) -> tuple[Culprit, ...]:
    """Culprit records for the rows that raised: values, polynomial over the tuples the
    invocation read (the graph the replay recorded before the failing projection) and, for
    committed tuples, their polynomials in the store."""
    from lipspark.graph.index import GraphIndex
    from lipspark.semiring.expr import tokens as expr_tokens

    factors = [[int(r[factor(i)]) for i in range(frame.layout.k) if r.get(factor(i))] for r in rows]
    needed = {f for fs in factors for f in fs}
    segments: list[tuple[Segment, dict[str, Any]]]
    if all(segment_of(f) in bases for f in needed):  # tokens only: no table to compute
        segments = [(s, {}) for s in builder.segments if isinstance(s, BaseSegment)]
    else:  # the recorded operations before the failing projection (their tables: Spark jobs)
        segments = [(s, {name: df.toArrow() for name, df in builder.tables(s.seg).items()}) for s in builder.segments if s.seg < mark]
    g = GraphIndex.from_segments(segments, root=root)
    glob = _StoreGraph(graph)
    out = []
    visible = [c for c in frame.with_annotations().columns if not is_hidden(c)]
    for r, fs in zip(rows, factors):
        expr = g.polynomial(_Factors(tuple(fs)))
        toks = tuple(sorted(expr_tokens(expr)))
        stored = {t: glob.polynomial(g, bases, t) for t in toks}
        out.append(Culprit(_relation_of(g, bases, fs), {c: _plain(r.get(c)) for c in visible}, str(expr), toks,
                           {t: p for t, p in stored.items() if p is not None}))
    return tuple(out)


@dataclass(frozen=True)
class _Factors:
    factors: tuple[int, ...]


def _relation_of(g: Any, bases: dict[int, Read], fs: list[int]) -> str:
    """The relation a culprit row is a row of: the one read relation when it is one token,
    else the operation's input."""
    if len(fs) == 1 and segment_of(fs[0]) in bases:
        return bases[segment_of(fs[0])].relation
    return "input of the operation"


class _StoreGraph:
    """The store's graph, loaded when a committed tuple's polynomial is first asked for."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self._g: Any = None

    def polynomial(self, local: Any, bases: dict[int, Read], token: str) -> str | None:
        if self.path is None:
            return None
        from lipspark.vocabulary import Op

        ids = local.find(label=token, op=Op.TOKEN)
        if len(ids) != 1:
            return None
        node = int(ids[0])
        read = bases.get(int(segment_of(node)))
        if read is None or not read.committed or read.desc.p is None:
            return None
        gid = _stored_node(self.path, read.desc, int(ordinal_of(node)))
        if gid is None:
            return None
        if self._g is None:
            from lipspark.graph.index import GraphIndex

            self._g = GraphIndex.load(self.path)
        if not self._g.contains(gid):
            return None
        return str(self._g.polynomial(gid))


def _stored_node(root: str, desc: RelationDescriptor, pos: int) -> int | None:
    """The node id the store's graph gives the row at ``pos`` of a stored relation (its token,
    its output or new state row's node, or under the older ``collapse`` scheme the member rule
    over its stored factors)."""
    p = desc.p
    assert p is not None
    if p.kind in ("token", "output", "state"):
        return int(positional(p.seg, pos))
    import pyarrow.parquet as pq

    file, row = pos >> ROW_BITS, pos & ((1 << ROW_BITS) - 1)
    path = os.path.join(root, desc.files[file].path)
    cols = [factor(i) for i in range(p.k)]
    t = pq.read_table(path, columns=cols)
    fs = [int(v) for v in (t.column(c)[row].as_py() for c in cols) if v]
    if not fs:
        return None
    return fs[0] if len(fs) == 1 else int(positional(p.seg, pos))


# ---------------------------------------------------------------------- narrowing passes
def _forces(result: Any) -> None:
    """Compute every relation a module returned, every column (``count`` could prune a failing one)."""
    for df in (result or {}).values():
        plain = df.to_plain() if isinstance(df, AnnotatedFrame) else df
        plain.write.format("noop").mode("overwrite").save()


def _narrow(spark: SparkSession, module: Module, reads: list[Read], root: str, builder: GraphBuilder,
            bases: dict[int, Read], graph: str | None) -> tuple[Culprit, ...]:
    """Inspector Gadget's passes over each relation the invocation read, the others whole."""
    plain = {r.relation: read_stored(spark, os.path.join(root, r.desc.dir), r.desc.files) for r in reads}
    empty = {n: spark.createDataFrame([], module.relation(n).ddl) for n in [*module.inputs, *module.state] if n not in plain}
    positions = {r.relation: _positions(root, r.desc) for r in reads}

    def fails(rname: str, ranges: list[tuple[int, int]] | None) -> bool:
        frames = dict(empty)
        for n, df in plain.items():
            visible = df.select(*[F.col(f"`{c}`") for c in df.columns if not is_hidden(c)])
            if n == rname:
                read = next(r for r in reads if r.relation == n)
                pos = position_col(read.desc)
                cond = F.lit(False)
                for lo, hi in ranges or []:
                    cond = cond | ((pos >= lo) & (pos < hi))
                visible = df.filter(cond).select(*[F.col(f"`{c}`") for c in df.columns if not is_hidden(c)])
            frames[n] = visible
        try:
            _forces(module.logic(**frames))  # type: ignore[misc]
        except Exception as e:  # noqa: BLE001 - a failing replay is the answer
            return _is_spark_error(e)
        return False

    found: list[tuple[Read, int]] = []
    for read in reads:
        pos = positions[read.relation]
        if not pos or fails(read.relation, []):  # empty, or the failure does not need its rows
            continue
        candidates = [pos]
        for size in PASSES:
            nxt = []
            for chunk in candidates:
                for i in range(0, len(chunk), size):
                    part = chunk[i:i + size]
                    if fails(read.relation, _ranges(part)):
                        nxt.append(part)
            candidates = nxt
        found += [(read, c[0]) for c in candidates if len(c) == 1]
    if not found:
        return ()
    return _token_culprits(root, builder, bases, found, graph)


def _positions(root: str, desc: RelationDescriptor) -> list[int]:
    """Every row position of a stored relation (from the files' footers: no Spark job)."""
    import pyarrow.parquet as pq

    out: list[int] = []
    for i, f in enumerate(desc.files):
        n = pq.read_metadata(os.path.join(root, f.path)).num_rows
        out += [(i << ROW_BITS) | r for r in range(n)]
    return out


def _ranges(positions: list[int]) -> list[tuple[int, int]]:
    """Contiguous half-open ranges covering sorted ``positions``."""
    out: list[tuple[int, int]] = []
    for p in positions:
        if out and out[-1][1] == p:
            out[-1] = (out[-1][0], p + 1)
        else:
            out.append((p, p + 1))
    return out


def _token_culprits(root: str, builder: GraphBuilder, bases: dict[int, Read], found: list[tuple[Read, int]],
                    graph: str | None) -> tuple[Culprit, ...]:
    """Culprits that are rows the invocation read: their values and token, and their
    polynomial in the store for committed relations."""
    import pyarrow.parquet as pq

    from lipspark.graph.index import GraphIndex

    seg_of = {id(r): s for s, r in bases.items()}
    g = GraphIndex.from_segments([(s, {}) for s in builder.segments if isinstance(s, BaseSegment)], root=root)
    glob = _StoreGraph(graph)
    out = []
    for read, pos in found:
        file, row = pos >> ROW_BITS, pos & ((1 << ROW_BITS) - 1)
        t = pq.read_table(os.path.join(root, read.desc.files[file].path))
        values = {c: _plain(t.column(c)[row].as_py()) for c in t.column_names if not is_hidden(c)}
        node = int(positional(seg_of[id(read)], pos))
        token = g.label(int(g.position(node)))
        stored = glob.polynomial(g, bases, token)
        out.append(Culprit(read.relation, values, token, (token,), {token: stored} if stored is not None else {}))
    return tuple(out)
