"""Executions (Lipstick Definition 2.3): run a workflow's modules in topological order, carry state.

Every relation that crosses a module boundary — workflow inputs, module outputs, state — is
written to the store as Parquet, with provenance on or off (so the two modes do the same I/O and
differ only by provenance). With provenance on, the coarse-grained nodes of §3.1 are derived
from those files rather than written separately: a row's node id is
``segment << 40 | file << 28 | row`` in its file, and its children are read back from the
file's hidden columns when the graph is expanded:

* invocation node (type m): one per module invocation, labelled with the module's name;
* workflow input tuple (type i): a token ``Relation:key``;
* module input node (type i, ·): the input tuple's p-node and the invocation;
* state node (type s, ·): the state tuple's p-node and the invocation;
* module output node (type o, ·): the output tuple's factors and the invocation;
* value nodes (types i/o) for values that carry a v-node (an aggregate, a black box's result).

Within a module the rewrite of :mod:`lipspark.frame` records the fine-grained nodes.
"""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from typing import Any, Callable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lipspark.columns import bag_col, factor, is_hidden, value_col
from lipspark.errors import StoreError, WorkflowError
from lipspark.frame import AnnotatedFrame
from lipspark.graph.builder import ROW_BITS, SEGMENT_SHIFT, GraphBuilder
from lipspark.tracker import Tracker
from lipspark.workflow.module import Module, Relation
from lipspark.store import Store
from lipspark.workflow.workflow import Workflow

__all__ = ["Executor", "StoredRelation", "relation_frame"]

_TYPE_ALIASES = {"long": "bigint", "integer": "int", "short": "smallint", "byte": "tinyint", "real": "float", "dec": "decimal"}


def _norm_type(t: str) -> str:
    t = t.lower().replace(" ", "")
    return _TYPE_ALIASES.get(t, t)


def _visible_schema(df: Any) -> list[tuple[str, str]]:
    plain = df.to_plain() if isinstance(df, AnnotatedFrame) else df
    return [(f.name, _norm_type(f.dataType.simpleString())) for f in plain.schema.fields if not is_hidden(f.name)]


def check_schema(module: Module, rel: Relation, df: Any) -> None:
    """Schema check at an invocation boundary (names and types, in order)."""
    expected = Relation(rel.name, tuple((n, _norm_type(t)) for n, t in rel.columns))
    expected.check(module.name, _visible_schema(df))


def _files(store: Store, rel_dir: str) -> list[dict[str, Any]]:
    absdir = store.resolve(rel_dir)
    names = sorted(n for n in os.listdir(absdir) if n.endswith(".parquet"))
    out = []
    for n in names:
        st = os.stat(os.path.join(absdir, n))
        out.append({"path": f"{rel_dir}/{n}", "size": st.st_size, "mtime_ns": st.st_mtime_ns})
    if len(out) >= 1 << (SEGMENT_SHIFT - ROW_BITS):
        raise StoreError(f"{rel_dir} has {len(out)} files; lipspark numbers at most {1 << (SEGMENT_SHIFT - ROW_BITS)} per relation")
    return out


def _position(store: Store, desc: dict[str, Any]) -> Any:
    """Spark column: file ordinal << ROW_BITS | row index, for rows read from ``desc``'s files."""
    ordinals = F.create_map(*[x for i, f in enumerate(desc["files"]) for x in (F.lit(os.path.basename(f["path"])), F.lit(i))])
    name = F.element_at(F.split(F.col("_metadata.file_path"), "/"), -1)
    return F.shiftleft(F.element_at(ordinals, name).cast("long"), ROW_BITS).bitwiseOR(F.col("_metadata.row_index"))


def _pnode(desc: dict[str, Any], pos: Any) -> Any:
    """Spark column: the p-node of a stored tuple, by how its file was produced."""
    scheme = desc["p"]
    base = F.lit(scheme["seg"] << SEGMENT_SHIFT)
    if scheme["kind"] in ("token", "output"):
        return base.bitwiseOR(pos)
    k = scheme["k"]
    fs = [F.col(factor(i)) for i in range(k)]
    if k == 1:
        return fs[0]
    nz = sum((F.when(f != 0, 1).otherwise(0) for f in fs[1:]), F.when(fs[0] != 0, 1).otherwise(0))
    total = sum(fs[1:], fs[0])
    return F.when(nz == 1, total).otherwise(base.bitwiseOR(pos))


def _vnode(desc: dict[str, Any], col: str, pos: Any) -> Any:
    seg = desc["values"][col]
    return F.col(value_col(col)) if seg is None else F.when(F.col(value_col(col)).isNotNull(), F.lit(seg << SEGMENT_SHIFT).bitwiseOR(pos))


def _visible_parquet(spark: SparkSession, path: str) -> DataFrame:
    df = spark.read.parquet(path)
    return df.select(*[c for c in df.columns if not is_hidden(c)])


def relation_frame(spark: SparkSession, store: Store, desc: dict[str, Any]) -> DataFrame:
    """The data of a stored relation (hidden columns dropped)."""
    return _visible_parquet(spark, store.resolve(desc["dir"]))


@dataclass(frozen=True)
class StoredRelation:
    """A relation already written as Parquet files (a directory): given as a workflow input or
    initial state, its files are copied verbatim, so the rows keep their file and position, and
    so their token ids (deferred capture replays executions this way)."""

    path: str

    def frame(self, spark: SparkSession) -> DataFrame:
        return _visible_parquet(spark, self.path)


def _write_base(df: Any, path: str) -> None:
    """Write a workflow input or initial state relation (a :class:`StoredRelation` is copied)."""
    if isinstance(df, StoredRelation):
        if os.path.exists(path):
            raise StoreError(f"{path} already exists")
        shutil.copytree(df.path, path, ignore=shutil.ignore_patterns(".*.crc"))
    else:
        df.write.mode("errorifexists").parquet(path)


@dataclass
class _Invocation:
    node: str
    module: Module
    execution: int
    inv_id: int


class Executor:
    """Runs executions of one workflow against one store."""

    def __init__(self, spark: SparkSession, workflow: Workflow, store: Store, *, provenance: bool = True) -> None:
        self.spark = spark
        self.workflow = workflow.validate()
        self.store = store
        # a store with deferred capture runs its executions on plain DataFrames; the graph is made
        # later by replaying them (lipspark.workflow.materialize)
        self.provenance = provenance and store.capture != "deferred"
        self.builder: GraphBuilder | None = None
        self.tracker: Tracker | None = None

    # ------------------------------------------------------------------ relations on disk
    def _write(self, df: Any, rel_dir: str) -> None:
        if isinstance(df, AnnotatedFrame):
            # Boundary node ids are positions in these files, and after a shuffle neither the
            # partition a row lands in nor its order there is guaranteed to repeat (the crash test
            # saw both change). One sorted file makes positions a function of the data alone.
            data = df.with_annotations()
            keys = [f.name for f in data.schema.fields if not isinstance(f.dataType, T.MapType)]
            data = data.coalesce(1).sortWithinPartitions(*keys)
        else:
            data = df
        data.write.mode("errorifexists").parquet(self.store.resolve(rel_dir))

    def _token_relation(self, rel: Relation, rel_dir: str, node_type: str | None = "i") -> dict[str, Any]:
        """Describe a base relation written at ``rel_dir``: a workflow input (tokens of type i)
        or a module's initial state (plain base tuples, tagged with the module)."""
        desc: dict[str, Any] = {"dir": rel_dir, "files": _files(self.store, rel_dir), "values": {}, "bags": []}
        if self.provenance:
            assert self.builder is not None
            seg = self.builder.allocate()
            desc["p"] = {"kind": "token", "seg": seg}
            self.builder.add(seg, "base", {"relation": rel.name, "key": list(rel.key), "columns": list(rel.key or rel.column_names), "files": desc["files"], "type": node_type})
        return desc

    def _read(self, inv: _Invocation, rel: Relation, desc: dict[str, Any], node_type: str) -> Any:
        """A stored relation as the input (type i) or state (type s) of an invocation."""
        df = self.spark.read.parquet(self.store.resolve(desc["dir"]))
        if not self.provenance:
            return df
        assert self.builder is not None and self.tracker is not None
        pos = _position(self.store, desc)
        seg = self.builder.allocate()
        meta = {"type": node_type, "label": "·", "relation": rel.name, "source": desc, "invocation": inv.inv_id}
        self.builder.add(seg, "boundary", meta)
        cols: list[Any] = [F.col(c) for c in df.columns if not is_hidden(c)]
        cols.append(F.lit(seg << SEGMENT_SHIFT).bitwiseOR(pos).alias(factor(0)))
        values = []
        for c in desc["values"]:
            vseg = self.builder.allocate()
            self.builder.add(vseg, "boundary", {"type": node_type, "label": "·", "relation": rel.name, "column": c, "source": desc, "invocation": inv.inv_id})
            cols.append(F.when(_vnode(desc, c, pos).isNotNull(), F.lit(vseg << SEGMENT_SHIFT).bitwiseOR(pos)).alias(value_col(c)))
            values.append(c)
        cols += [F.col(bag_col(b)) for b in desc["bags"]]
        return AnnotatedFrame(self.tracker, df.select(*cols), 1, values=values, bags=desc["bags"])

    def _store_result(self, inv: _Invocation, rel: Relation, frame: Any, rel_dir: str, kind: str) -> dict[str, Any]:
        """Write an output (kind ``output``) or new state (kind ``collapse``) relation."""
        self._write(frame, rel_dir)
        desc: dict[str, Any] = {"dir": rel_dir, "files": _files(self.store, rel_dir), "values": {}, "bags": []}
        if not self.provenance:
            return desc
        assert self.builder is not None
        if not isinstance(frame, AnnotatedFrame):
            raise WorkflowError(f"module {inv.module.name!r} returned a plain DataFrame for {rel.name!r}; with provenance on, build it from the module's inputs and state")
        seg = self.builder.allocate()
        desc["p"] = {"kind": kind, "seg": seg, "k": frame._k}
        desc["bags"] = list(frame._bags)
        node_type = "o" if kind == "output" else None
        self.builder.add(seg, "boundary", {"type": node_type or "collapse", "label": "·", "relation": rel.name, "source": dict(desc), "invocation": inv.inv_id})
        for c in frame._values:
            if kind == "output":
                vseg = self.builder.allocate()
                self.builder.add(vseg, "boundary", {"type": "vo", "label": "·", "relation": rel.name, "column": c, "source": dict(desc), "invocation": inv.inv_id})
                desc["values"][c] = vseg
            else:
                desc["values"][c] = None
        return desc

    # ------------------------------------------------------------------ executions
    def initialize(self, initial_state: dict[str, dict[str, DataFrame]]) -> None:
        """Write the initial state (execution 0) unless the store already has it."""
        if self.store.meta.get("initial") is not None:
            return
        self.builder = GraphBuilder(self.store.meta["next_segment"])
        self.tracker = Tracker(self.spark, self.builder)
        state: dict[str, dict[str, Any]] = {}
        for mname, module in self.workflow.modules.items():
            given = initial_state.get(mname, {})
            unknown = set(given) - set(module.state)
            if unknown:
                raise WorkflowError(f"initial state for module {mname!r} names relations {sorted(unknown)} that are not in its state {list(module.state)}")
            state[mname] = {}
            for rname in module.state:
                rel = module.relation(rname)
                df = given.get(rname) if rname in given else self.spark.createDataFrame([], rel.ddl)
                check_schema(module, rel, df.frame(self.spark) if isinstance(df, StoredRelation) else df)
                rel_dir = f"initial/{mname}/{rname}"
                _write_base(df, os.path.join(self.store.root, rel_dir))
                self.builder.context = {"module": mname}
                state[mname][rname] = self._token_relation(rel, rel_dir, None)
        self.builder.context = {}
        if self.provenance:
            self.builder.write(os.path.join(self.store.root, "initial", "graph"))
        self.store.meta["initial"] = state
        self.store.meta["next_segment"] = self.builder.next_segment
        self.store.save()

    def execute(self, inputs: dict[str, dict[str, DataFrame]], *, on_invocation: Callable[[str], None] | None = None,
                verify: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
        """Run one execution with the given workflow inputs; commit it to the store atomically.

        ``verify`` sees the execution's record before the commit; if it raises, nothing is committed.
        """
        n = self.store.next_execution
        self._check_inputs(inputs)
        self.builder = GraphBuilder(self.store.meta["next_segment"])
        self.tracker = Tracker(self.spark, self.builder, share_breaker_inputs=True)
        self.store.begin(n)
        edir = self.store.final_dir(n)
        try:
            state = {m: dict(rels) for m, rels in self.store.current_state().items()}
            outputs: dict[str, dict[str, Any]] = {}
            for node_id in self.workflow.topological_order():
                node = self.workflow.nodes[node_id]
                module = self.workflow.modules[node.module]
                inv_seg = self.builder.allocate()
                inv = _Invocation(node_id, module, n, inv_seg << SEGMENT_SHIFT)
                self.builder.context = {"module": module.name, "node": node_id, "execution": n, "invocation": inv.inv_id}
                if self.provenance:
                    self.builder.add(inv_seg, "invocation", {"type": "m", "label": module.name})
                frames: dict[str, Any] = {}
                if node.input:
                    for rname in module.inputs:
                        rel = module.relation(rname)
                        df = inputs[node_id][rname]
                        check_schema(module, rel, df.frame(self.spark) if isinstance(df, StoredRelation) else df)
                        rel_dir = f"{edir}/inputs/{node_id}/{rname}"
                        _write_base(df, self.store.resolve(rel_dir))
                        frames[rname] = self._read(inv, rel, self._token_relation(rel, rel_dir), "i")
                else:
                    for e in self.workflow.inputs_of(node_id):
                        for rname in e.relations:
                            frames[rname] = self._read(inv, module.relation(rname), outputs[e.src][rname], "i")
                for rname in module.state:
                    frames[rname] = self._read(inv, module.relation(rname), state[module.name][rname], "s")
                for rname, df in frames.items():
                    check_schema(module, module.relation(rname), df)
                result = module.logic(**frames)
                if not isinstance(result, dict):
                    raise WorkflowError(f"module {module.name!r} must return a dict of relations, returned {type(result).__name__}")
                missing = [r for r in module.outputs if r not in result]
                unknown = [r for r in result if r not in module.outputs and r not in module.state]
                if missing or unknown:
                    raise WorkflowError(f"module {module.name!r} returned {sorted(result)}; expected every output {list(module.outputs)} and optionally state relations {list(module.state)}" + (f"; unknown: {unknown}" if unknown else ""))
                outputs[node_id] = {}
                for rname in module.outputs:
                    rel = module.relation(rname)
                    check_schema(module, rel, result[rname])
                    outputs[node_id][rname] = self._store_result(inv, rel, result[rname], f"{edir}/outputs/{node_id}/{rname}", "output")
                for rname in module.state:
                    if rname in result:
                        rel = module.relation(rname)
                        check_schema(module, rel, result[rname])
                        state[module.name][rname] = self._store_result(inv, rel, result[rname], f"{edir}/state/{node_id}/{rname}", "collapse")
                if on_invocation:
                    on_invocation(node_id)
            self.builder.context = {}
            if self.provenance:
                self.builder.write(os.path.join(self.store.resolve(edir), "graph"))
            self.tracker.release()
            record = {"state": state, "outputs": outputs, "segments": [self.store.meta["next_segment"], self.builder.next_segment]}
            if verify is not None:
                verify(record)
            self.store.commit(n, record, self.builder.next_segment)
            return record
        except BaseException:
            self.tracker.release()
            self.store.abort()
            raise

    def _check_inputs(self, inputs: dict[str, dict[str, DataFrame]]) -> None:
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
