"""Executions (Lipstick Definition 2.3): run a workflow's modules in topological order, carry state.

Every relation that crosses a module boundary — workflow inputs, module outputs, state — is
written to the store as Parquet, with provenance on or off (so the two modes do the same I/O and
differ only by provenance). With provenance on, the coarse-grained nodes of §3.1 are derived
from those files rather than written separately: a row's node id is a positional id of its
file and row (:mod:`lipspark.vocabulary.ids`), and its children are read back from the file's
hidden columns when the graph is expanded:

* invocation node (type m): one per module invocation, labelled with the module's name;
* workflow input tuple (type i): a token ``Relation:key``;
* module input node (type i, ·): the input tuple's p-node and the invocation;
* state node (type s, ·): the state tuple's p-node and the invocation;
* module output node (type o, ·): the output tuple's factors and the invocation;
* value nodes (types i/o) for values that carry a v-node (an aggregate, a black box's result).

Within a module the rewrite rules of :mod:`lipspark.capture` record the fine-grained nodes, on
a :class:`~lipspark.tracker.Tracker` of the invocation's own (its :class:`Context`).
"""
from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lipspark.capture.builder import GraphBuilder, InvocationBuilder
from lipspark.capture.lineage import column_lineage, leaf_ids
from lipspark.capture.layout import Layout
from lipspark.vocabulary.columns import bag_col, factor, is_hidden, value_col
from lipspark.errors import ExecutionFailed, WorkflowError
from lipspark.frame import AnnotatedFrame
from lipspark.session import run_concurrently
from lipspark.store import Store
from lipspark.tracker import Tracker
from lipspark.vocabulary import BaseSegment, BoundarySegment, Context, InvocationSegment, PScheme, RelationDescriptor
from lipspark.vocabulary.segments import fingerprint_json
from lipspark.vocabulary.ids import positional, positional_col
from lipspark.vocabulary.lineage import LINEAGE_FILE, LINEAGE_FORMAT, LINEAGE_VERSION, RelationLineage
from lipspark.vocabulary.tokens import key_violation
from lipspark.workflow.checks import Check
from lipspark.workflow.verdicts import Target, Watch, evaluate, observe
from lipspark.workflow.module import Module, Relation
from lipspark.vocabulary.checks import CHECKS_FILE, CHECKS_FORMAT, CHECKS_VERSION, CheckResult
from lipspark.workflow.numbering import Block, blocks, initial_segments
from lipspark.workflow.relations import (
    StoredRelation,
    check_schema,
    descriptor,
    fingerprint_metrics,
    key_repeat,
    observed_fingerprint,
    position_col,
    read_stored,
    relation_frame,
    stored_files,
    write_base,
)
from lipspark.workflow.workflow import Workflow

__all__ = ["Executor", "StoredRelation", "relation_frame", "check_schema"]

_Relations = dict[str, dict[str, RelationDescriptor]]


@dataclass(frozen=True)
class _Invocation:
    """One module invocation of an execution: its tracker is ``None`` without provenance."""

    node: str
    module: Module
    execution: int
    inv_id: int
    tracker: Tracker | None
    #: its coarse segments (lipspark.workflow.numbering)
    block: Block
    #: what the invocation read: absolute directory → (store-relative directory, role i/s, relation)
    reads: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    #: the exprIds of the columns of those scans → store-relative directory (lipspark.capture.lineage)
    read_ids: dict[int, str] = field(default_factory=dict)
    #: relation name → (role i/s, descriptor) of what it read (a crash-culprit search replays them)
    descs: dict[str, tuple[str, RelationDescriptor]] = field(default_factory=dict)


class Executor:
    """Runs executions of one workflow against one store."""

    def __init__(self, spark: SparkSession, workflow: Workflow, store: Store, *, provenance: bool = True) -> None:
        self.spark = spark
        self.workflow = workflow.validate()
        self.store = store
        # a store with deferred capture runs its executions on plain DataFrames; the graph is made
        # later by replaying them (lipspark.workflow.materialize)
        self.provenance = provenance and store.capture != "deferred"
        # base relations get tokens, now or when a deferred store is replayed: their keys are checked
        self.tokens = provenance
        self.builder: GraphBuilder | None = None
        self._blocks: dict[str, Block] = {}
        self._trackers: list[Tracker] = []
        #: the column lineage of every relation the current execution wrote (lineage.json)
        self._lineage: list[RelationLineage] = []
        #: seconds spent computing it, for benchmarks (docs/benchmarks.md)
        self.lineage_seconds = 0.0
        #: the invocation under way (a failure is reported against it: lipspark.workflow.culprits)
        self._current: _Invocation | None = None
        #: set when the user interrupted the run: a failure then is the interrupt, not module code's
        self.interrupted: threading.Event | None = None
        #: the relations the current execution wrote that have integrity checks
        self._targets: list[Target] = []
        #: the verdicts of the last execution's checks (lipspark.workflow.checks)
        self.check_results: list[CheckResult] = []
        #: each check's observed metric, built once per executor (lipspark.workflow.verdicts.observe)
        self._metrics: dict[Any, Any] = {}
        #: each relation a deferred store's run or replay wrote (absolute directory) → the Observation of its fingerprint
        self._fingerprints: dict[str, Any] = {}
        #: the fingerprints of the state relations this execution of a deferred run wrote, by store-relative directory
        self._state_prints: dict[str, list[Any]] = {}

    # ------------------------------------------------------------------ relations on disk
    def _writer(self, df: Any, rel_dir: str, checks: tuple[Check, ...] = ()) -> tuple[Callable[[], Watch | None], Any]:
        """The job that writes ``df`` at ``rel_dir`` (planned now, run by the caller) and returns
        what it observed of ``checks`` (:func:`lipspark.workflow.verdicts.observe`, added when the
        job runs, so its planning overlaps the other writes), and the frame it writes before its
        layout (already analyzed: the column lineage reads its plan)."""
        written = df.with_annotations() if isinstance(df, AnnotatedFrame) else df
        data = written
        if isinstance(df, AnnotatedFrame) or self.store.capture == "deferred":
            # Boundary node ids are positions in these files, and after a shuffle neither the
            # partition a row lands in nor its order there is guaranteed to repeat (the crash test
            # saw both change). One file sorted by the visible columns, then the hidden ones, makes
            # positions a function of the data alone, and the same in a deferred run's files
            # (which have no hidden columns: rows tied on the visible ones are alike to a consumer)
            data = written.coalesce(1).sortWithinPartitions(*_sort_keys(written))
        path = self.store.resolve(rel_dir)

        def job() -> Watch | None:
            observed, watch = observe(data, checks, self._metrics) if checks else (data, None)
            if self.store.capture == "deferred":
                # what a replay of the invocation must write again, observed by this very job
                # (lipspark.workflow.replay checks it) rather than read back from the files later;
                # added after the checks: a check Spark cannot observe fails its plan, and a plan
                # holding a registered Observation would fail with it
                from pyspark.sql import Observation

                self._fingerprints[path] = fingerprint = Observation()
                observed = observed.observe(fingerprint, *fingerprint_metrics(written))
            observed.write.mode("errorifexists").parquet(path)
            return watch

        return job, written

    def _token_relation(self, builder: GraphBuilder, context: Context, rel: Relation, rel_dir: str,
                        node_type: str | None = "i", what: str = "", seg: int | None = None) -> RelationDescriptor:
        """Describe a base relation written at ``rel_dir``: a workflow input (tokens of type i)
        or a module's initial state (plain base tuples, tagged with the module). Its declared
        key must identify each row (checked on the written files; ``what`` names the relation)."""
        files = stored_files(self.store, rel_dir)
        if self.tokens and rel.key:
            repeat = key_repeat([self.store.resolve(f.path) for f in files], rel.key)
            if repeat is not None:
                raise WorkflowError(key_violation(
                    what or f"relation {rel.name!r}", rel.key, *repeat,
                    "fix the rows the workflow definition gives (deduplicate them, drop those with a null key), or change "
                    "the module's keys= to columns that identify each row (a relation without a key numbers repeated rows)"))
        if not self.provenance:
            return RelationDescriptor(rel_dir, files)
        seg = builder.allocate() if seg is None else seg
        builder.record(BaseSegment(seg, context, relation=rel.name, key=tuple(rel.key),
                                   columns=rel.token_columns, files=files, type=node_type))
        return RelationDescriptor(rel_dir, files, p=PScheme("token", seg))

    def _read(self, inv: _Invocation, rel: Relation, desc: RelationDescriptor, role: str) -> Any:
        """A stored relation as the input (role i) or state (role s) of an invocation."""
        df = read_stored(self.spark, self.store.resolve(desc.dir), desc.files)
        inv.reads[self.store.resolve(desc.dir)] = (desc.dir, "input" if role == "i" else "state", rel.name)
        inv.descs[rel.name] = ("input" if role == "i" else "state", desc)
        inv.read_ids.update(dict.fromkeys(leaf_ids(df), desc.dir))
        if inv.tracker is None:
            return df
        builder, context = inv.tracker.builder, inv.tracker.context
        pos = position_col(desc)
        seg = inv.block.read(rel.name)
        builder.record(BoundarySegment(seg, context, role=role, relation=rel.name, source=desc, invocation=inv.inv_id))
        cols: list[Any] = [F.col(c) for c in df.columns if not is_hidden(c)]
        cols.append(positional_col(seg, pos).alias(factor(0)))
        for c in desc.values:
            # a v-node per row, whether or not the producer made one: what the data alone says
            vseg = inv.block.read_value(rel.name, c)
            builder.record(BoundarySegment(vseg, context, role=role, relation=rel.name, source=desc, invocation=inv.inv_id,
                                           column=c, every_row=True))
            cols.append(positional_col(vseg, pos).alias(value_col(c)))
        cols += [F.col(bag_col(b)) for b in desc.bags]
        return AnnotatedFrame(inv.tracker, df.select(*cols), Layout(1, tuple(desc.values), desc.bags))

    def _describe_result(self, inv: _Invocation, rel: Relation, frame: Any, rel_dir: str, kind: str) -> RelationDescriptor:
        """Describe an output (kind ``output``) or new state (kind ``collapse``) relation just
        written at ``rel_dir``: its files and, with provenance, its boundary segments."""
        files = stored_files(self.store, rel_dir)
        if inv.tracker is None:
            obs = self._fingerprints.pop(self.store.resolve(rel_dir), None)
            fingerprint = None if obs is None else observed_fingerprint(obs)
            if kind == "collapse" and fingerprint is not None:  # a later invocation may replace the state pointer
                self._state_prints[rel_dir] = fingerprint_json(fingerprint)
            return RelationDescriptor(rel_dir, files, fingerprint=fingerprint)
        if not isinstance(frame, AnnotatedFrame):
            sql = ("; spark.sql on the SparkSession reads the module's views without their annotations: query them with "
                   "df.sparkSession.sql(...) on an annotated frame" if inv.tracker.views else "")
            raise WorkflowError(f"module {inv.module.name!r} returned a plain DataFrame for {rel.name!r}; with provenance on, build it from the module's inputs and state{sql}")
        builder, context, layout = inv.tracker.builder, inv.tracker.context, frame.layout
        seg = inv.block.write(rel.name)
        # rows and values get nodes of their own, numbered by position (docs/design.md, "Deferred
        # capture"): what reads them refers to nothing inside this invocation; a store made before
        # the state scheme keeps a state's rows and values as its writer's nodes
        scheme = kind if kind == "output" else self.store.state_scheme
        own_values = scheme != "collapse"
        value_segs = {c: inv.block.write_value(rel.name, c) if own_values else None for c in layout.values}
        desc = RelationDescriptor(rel_dir, files, value_segs, layout.bags, PScheme(scheme, seg, layout.k), every_row=True)
        builder.record(BoundarySegment(seg, context, role="o" if kind == "output" else "collapse", relation=rel.name,
                                       source=desc, invocation=inv.inv_id))
        for c, vseg in value_segs.items():
            if vseg is not None:
                builder.record(BoundarySegment(vseg, context, role="vo" if kind == "output" else "vs", relation=rel.name, source=desc,
                                               invocation=inv.inv_id, column=c, every_row=True))
        return desc

    # ------------------------------------------------------------------ initial state
    def initialize(self, initial_state: Mapping[str, Mapping[str, Any]]) -> None:
        """Write the initial state (execution 0) unless the store already has it."""
        if self.store.meta.get("initial") is not None:
            return
        builder = GraphBuilder(self.store.meta["next_segment"])
        segs = initial_segments(self.workflow.modules, builder.next_segment)
        state: _Relations = {}
        for mname, module in self.workflow.modules.items():
            given = initial_state.get(mname, {})
            unknown = set(given) - set(module.state)
            if unknown:
                raise WorkflowError(f"initial state for module {mname!r} names relations {sorted(unknown)} that are not in its state {list(module.state)}")
            state[mname] = {}
            for rname in module.state:
                rel = module.relation(rname)
                df = given[rname] if rname in given else self.spark.createDataFrame([], rel.ddl)
                check_schema(module, rel, df.frame(self.spark) if isinstance(df, StoredRelation) else df)
                rel_dir = f"initial/{mname}/{rname}"
                write_base(df, os.path.join(self.store.root, rel_dir))
                state[mname][rname] = self._token_relation(builder, Context(module=mname), rel, rel_dir, None,
                                                           f"module {mname!r}, initial state {rname!r}", seg=segs[(mname, rname)])
        builder.skip_to(builder.next_segment + len(segs))
        if self.provenance:
            builder.write(os.path.join(self.store.root, "initial", "graph"))
        self.store.meta["initial"] = _json(state)
        self.store.meta["next_segment"] = builder.next_segment
        self.store.save()

    # ------------------------------------------------------------------ executions
    def execute(self, inputs: Mapping[str, Mapping[str, Any]], *, on_invocation: Callable[[str], None] | None = None,
                verify: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
        """Run one execution with the given workflow inputs; commit it to the store atomically.

        Returns the execution's record as ``store.json`` keeps it (``state``, ``outputs``,
        ``segments``). ``verify`` sees it before the commit; if it raises, nothing is committed.
        """
        n = self.store.next_execution
        self._check_inputs(inputs)
        first = self.store.meta["next_segment"]
        self.builder = GraphBuilder(first)
        self._blocks = self._layout(n, first)
        self.store.begin(n)
        self._state_prints = {}
        started, self._current = time.perf_counter(), None
        try:
            stored_inputs, state, outputs = self._run(n, inputs, on_invocation)
            self.builder.skip_to(max([first, *(b.end for b in self._blocks.values())]))
            record = {"inputs": _json(stored_inputs), "state": _json(state), "outputs": _json(outputs),
                      "segments": [first, self.builder.next_segment]}
            if self._state_prints:  # every state relation the deferred run wrote, by directory
                record["state_fingerprints"] = dict(sorted(self._state_prints.items()))
            if verify is not None:
                verify(record)
            self.store.commit(n, record, self.builder.next_segment)
        except BaseException as err:
            from lipspark.workflow.culprits import on_failure

            # module code failed: keep what its invocation read and a crash report before the
            # pending execution is discarded; the store stays at its last commit either way
            report = on_failure(self, n, err, self._current, started)
            self.store.abort()
            if report is not None:
                raise ExecutionFailed(report, self.store.root) from err
            raise
        return record

    def _layout(self, n: int, first: int) -> dict[str, Block]:
        """The coarse segments of each invocation of execution ``n``, from ``first`` on, and the
        ordinals numbering their fine segments (:mod:`lipspark.workflow.numbering`)."""
        return blocks(self.workflow, n, first)

    def _run(self, n: int, inputs: Mapping[str, Mapping[str, Any]],
             on_invocation: Callable[[str], None] | None) -> tuple[_Relations, _Relations, _Relations]:
        """The invocations of execution ``n``, then its graph; the trackers' caches (the graph
        reads them) are freed either way."""
        try:
            self._lineage, self._targets, self.check_results = [], [], []
            relations = self._invocations(n, inputs, on_invocation)
            self._current = None
            # the checks' one job runs while the graph's are written
            done = run_concurrently([lambda: self._write_graph(n), lambda: evaluate(self.spark, self._targets)])
            self.check_results = list(done[1] or [])
            self._write_lineage(n)
            self._write_checks(n)
            return relations
        finally:
            self._release()

    def _write_graph(self, n: int) -> None:
        """Write the segments recorded during execution ``n`` into its (pending) directory."""
        if self.provenance:
            assert self.builder is not None
            self.builder.write(os.path.join(self.store.resolve(self.store.final_dir(n)), "graph"))

    def _write_lineage(self, n: int) -> None:
        """Write the column lineage of everything execution ``n`` wrote (docs/store-format.md)."""
        path = os.path.join(self.store.resolve(self.store.final_dir(n)), LINEAGE_FILE)
        with open(path, "w") as fh:
            json.dump({"format": LINEAGE_FORMAT, "version": LINEAGE_VERSION, "execution": n,
                       "relations": [r.to_json() for r in self._lineage]}, fh, indent=1, sort_keys=True)

    def _write_checks(self, n: int) -> None:
        """Write the verdicts of execution ``n``'s integrity checks (docs/store-format.md)."""
        if not self.check_results:
            return
        path = os.path.join(self.store.resolve(self.store.final_dir(n)), CHECKS_FILE)
        with open(path, "w") as fh:
            json.dump({"format": CHECKS_FORMAT, "version": CHECKS_VERSION, "execution": n,
                       "checks": [r.to_json() for r in self.check_results]}, fh, indent=1, sort_keys=True)

    def _lineage_of(self, inv: _Invocation, rname: str, df: Any, rel_dir: str, kind: str) -> Callable[[], tuple[RelationLineage, float]]:
        """The action computing the column lineage of one relation the invocation writes (one
        walk of its plan, on the driver), with the seconds it took; it runs beside the writes."""
        sources = {path: d for path, (d, _, _) in inv.reads.items()}
        known = dict(inv.read_ids)
        reads = {d: (role, name) for d, role, name in inv.reads.values()}

        def action() -> tuple[RelationLineage, float]:
            start = time.perf_counter()
            columns, dataset, opaque = column_lineage(df, sources, known)
            return (RelationLineage(rel_dir, inv.node, inv.module.name, rname, kind, reads, columns, dataset, opaque),
                    time.perf_counter() - start)
        return action

    def _invocations(self, n: int, inputs: Mapping[str, Mapping[str, Any]],
                     on_invocation: Callable[[str], None] | None) -> tuple[_Relations, _Relations, _Relations]:
        """Every invocation of execution ``n`` in topological order: the workflow inputs as
        stored, the state after them and every module's outputs."""
        state = {m: {r: descriptor(d) for r, d in rels.items()} for m, rels in self.store.current_state().items()}
        stored_inputs: _Relations = {}
        outputs: _Relations = {}
        for node_id in self.workflow.topological_order():
            inv = self._current = self._invocation(n, node_id)
            frames = self._module_inputs(inv, inputs, outputs, stored_inputs)
            frames.update(self._module_state(inv, state))
            result = self._call(inv, frames)
            outputs[node_id], new_state = self._store_results(inv, result)
            state[inv.module.name].update(new_state)
            if on_invocation:
                on_invocation(node_id)
        return stored_inputs, state, outputs

    def _invocation(self, n: int, node_id: str) -> _Invocation:
        """Start an invocation: its segment, its node and, with provenance, its own tracker."""
        assert self.builder is not None
        module = self.workflow.modules[self.workflow.nodes[node_id].module]
        block = self._blocks[node_id]
        inv_seg = block.invocation
        inv_id = positional(inv_seg, 0)
        if not self.provenance:
            return _Invocation(node_id, module, n, inv_id, None, block)
        context = Context(module.name, node_id, n, inv_id)
        tracker = Tracker(self.spark, InvocationBuilder(self.builder, block.ordinal), context=context, share_breaker_inputs=True)
        self._trackers.append(tracker)
        self.builder.record(InvocationSegment(inv_seg, context, label=module.name))
        return _Invocation(node_id, module, n, inv_id, tracker, block)

    def _module_inputs(self, inv: _Invocation, inputs: Mapping[str, Mapping[str, Any]], outputs: _Relations,
                       stored_inputs: _Relations) -> dict[str, Any]:
        """The invocation's inputs: workflow inputs (stored first, and described in
        ``stored_inputs``) for an input node, else the outputs of the modules feeding it."""
        module, frames = inv.module, {}
        if self.workflow.nodes[inv.node].input:
            edir = self.store.final_dir(inv.execution)
            for rname in module.inputs:
                rel = module.relation(rname)
                df = inputs[inv.node][rname]
                check_schema(module, rel, df.frame(self.spark) if isinstance(df, StoredRelation) else df)
                rel_dir = f"{edir}/inputs/{inv.node}/{rname}"
                write_base(df, self.store.resolve(rel_dir))
                context = inv.tracker.context if inv.tracker is not None else Context()
                assert self.builder is not None
                desc = self._token_relation(self.builder, context, rel, rel_dir, "i",
                                            f"execution {inv.execution}, module {module.name!r}"
                                            + (f" (node {inv.node!r})" if inv.node != module.name else "") + f", input {rname!r}",
                                            seg=inv.block.token(rname))
                stored_inputs.setdefault(inv.node, {})[rname] = desc
                frames[rname] = self._read(inv, rel, desc, "i")
        else:
            for e in self.workflow.inputs_of(inv.node):
                for rname in e.relations:
                    frames[rname] = self._read(inv, module.relation(rname), outputs[e.src][rname], "i")
            frames.update(self._missing_inputs(inv))
        return frames

    def _missing_inputs(self, inv: _Invocation) -> dict[str, Any]:
        """The inputs no edge brings to the invocation: empty, of their declared schema."""
        frames: dict[str, Any] = {}
        for rname in self.workflow.missing_inputs(inv.node):
            empty = self.spark.createDataFrame([], inv.module.relation(rname).ddl)
            frames[rname] = empty if inv.tracker is None else AnnotatedFrame(
                inv.tracker, empty.select("*", F.lit(0).cast("long").alias(factor(0))), Layout(1, (), ()))
        return frames

    def _module_state(self, inv: _Invocation, state: _Relations) -> dict[str, Any]:
        """The state relations of the invocation's module, as it left them."""
        return {r: self._read(inv, inv.module.relation(r), state[inv.module.name][r], "s") for r in inv.module.state}

    def _call(self, inv: _Invocation, frames: dict[str, Any]) -> dict[str, Any]:
        """Run the module's logic on its frames; check what it returns."""
        module = inv.module
        for rname, df in frames.items():
            check_schema(module, module.relation(rname), df)
        if module.logic is None:  # Module refuses this when built
            raise WorkflowError(f"module {module.name!r} needs a logic function")
        result = module.logic(**frames)
        if not isinstance(result, dict):
            raise WorkflowError(f"module {module.name!r} must return a dict of relations, returned {type(result).__name__}")
        missing = [r for r in module.outputs if r not in result]
        unknown = [r for r in result if r not in module.outputs and r not in module.state]
        if missing or unknown:
            raise WorkflowError(f"module {module.name!r} returned {sorted(result)}; expected every output {list(module.outputs)} and optionally state relations {list(module.state)}" + (f"; unknown: {unknown}" if unknown else ""))
        return result

    def _store_results(self, inv: _Invocation, result: dict[str, Any]) -> tuple[dict[str, RelationDescriptor], dict[str, RelationDescriptor]]:
        """Write the invocation's outputs and the state relations it returned, all at once
        (:func:`~lipspark.session.run_concurrently`), then describe them in a fixed order —
        outputs, then state, each in the module's declared order — so segment numbers do not
        depend on which write finished first."""
        edir, module = self._out_dir(inv.execution), inv.module
        planned = [(rname, kind, f"{edir}/{where}/{inv.node}/{rname}")
                   for names, kind, where in ((module.outputs, "output", "outputs"),
                                              ([r for r in module.state if r in result], "collapse", "state"))
                   for rname in names]
        for rname, _, _ in planned:
            check_schema(module, module.relation(rname), result[rname])
        checks = {rname: self.workflow.checks_of(inv.node, rname) for rname, _, _ in planned}
        writes = [self._writer(result[rname], rel_dir, checks[rname]) for rname, _, rel_dir in planned]
        writers = [job for job, _ in writes]
        # the column lineage is driver work (a plan as JSON), so it runs while the writes' jobs do
        lineage = [self._lineage_of(inv, rname, written, rel_dir, "output" if kind == "output" else "state")
                   for (rname, kind, rel_dir), (_, written) in zip(planned, writes)]
        actions: list[Callable[[], Any]] = [*writers, *lineage]
        done = run_concurrently(actions)
        watches: list[Watch | None] = done[:len(writers)]
        for record, seconds in done[len(writers):]:
            self._lineage.append(record)
            self.lineage_seconds += seconds
        described: tuple[dict[str, RelationDescriptor], dict[str, RelationDescriptor]] = ({}, {})
        for (rname, kind, rel_dir), watch in zip(planned, watches):
            desc = self._describe_result(inv, module.relation(rname), result[rname], rel_dir, kind)
            described[kind == "collapse"][rname] = desc
            if checks[rname]:
                self._targets.append(Target(inv.node, module.name, rname, desc, self.store.resolve(rel_dir), checks[rname], watch))
        return described

    def _out_dir(self, n: int) -> str:
        """Where execution ``n``'s outputs and state are written (store-relative)."""
        return self.store.final_dir(n)

    def _release(self) -> None:
        """Free what every invocation's tracker cached."""
        for t in self._trackers:
            t.release()
        self._trackers.clear()

    def _check_inputs(self, inputs: Mapping[str, Mapping[str, DataFrame]]) -> None:
        expected = self.workflow.workflow_inputs()
        for node_id, rels in expected.items():
            given = inputs.get(node_id)
            if given is None:
                raise WorkflowError(f"no workflow input for input node {node_id!r}; it needs relations {rels}")
            missing = [r for r in rels if r not in given]
            if missing:
                raise WorkflowError(f"workflow input for node {node_id!r} lacks relations {missing}")
        unknown = [n for n in inputs if n not in expected]
        if unknown:
            raise WorkflowError(f"workflow inputs given for {unknown}, which are not input nodes (input nodes: {sorted(expected)})")


def _sort_keys(df: Any) -> list[Any]:
    """The columns a stored relation's file is sorted by: the visible ones, then the hidden ones
    (a map, which Spark does not order, by its JSON)."""
    fields = sorted(df.schema.fields, key=lambda f: is_hidden(f.name))  # stable: visible first, each in order
    cols = [(F.col("`" + f.name.replace("`", "``") + "`"), f.dataType) for f in fields]
    return [F.to_json(c) if isinstance(t, T.MapType) else c for c, t in cols]


def _json(relations: _Relations) -> dict[str, dict[str, Any]]:
    """Descriptors as ``store.json`` keeps them."""
    return {m: {r: d.to_json() for r, d in rels.items()} for m, rels in relations.items()}
