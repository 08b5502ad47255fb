"""Re-running one invocation without some of its rows, or with some of its values changed.

A what-if (``delete … recompute``, docs/query-language.md) propagates a deletion through the graph
and re-runs, plainly (provenance off), only the invocations where the graph cannot give the new
values: a black box, or a filter, join or grouping over a changed value. :func:`rerun_invocation`
does one such re-run: it reads what node ``node`` of execution ``n`` read — the stored inputs and
the state as its module left it before — drops the rows at the given stored positions, puts the
given values in (a value an earlier re-run changed upstream), calls the module's logic as the run
did, and compares each relation it writes with the one the run stored, row by row
(:class:`Written`): which stored rows' values changed and to what, which rows are gone, which
appear. Rows are told apart by their columns without value nodes (what the stored position's row
and the re-run's row share: a deletion never changes those); rows a relation repeats alike are
matched as a multiset, and rows the columns cannot tell apart whose new values differ are
reported *ambiguous*, never guessed.

Stored positions are ``file << ROW_BITS | row`` in a relation's files (the ordinal of the
boundary node ids a graph gives its rows: docs/store-format.md), so the query layer names rows by
the ordinals of its nodes.
"""
from __future__ import annotations

import math
import os
import time
from collections import defaultdict
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Collection, Mapping, Sequence

import numpy as np

from lipspark.errors import StoreError, WorkflowError
from lipspark.store import Store
from lipspark.vocabulary import RelationDescriptor
from lipspark.vocabulary.columns import is_hidden
from lipspark.vocabulary.ids import ROW_BITS

__all__ = ["Written", "Rerun", "Rerunner", "rerun_invocation", "compare", "read_dir"]

_POS = "__lp_rerun_pos"


@dataclass
class Written:
    """How a relation the re-run wrote differs from the one the run stored.

    ``values``: stored position → {column: value after}, for every value column of the rows asked
    about (``alive``) that the re-run writes again; ``changed``: the same for the values that
    differ; ``gone``: stored positions of those rows the re-run does not write;
    ``appeared``: rows the re-run writes that match no stored row asked about (as dicts);
    ``ambiguous``: stored positions whose new values cannot be told (rows alike in their
    columns without value nodes, with different new values)."""

    values: dict[int, dict[str, Any]] = field(default_factory=dict)
    changed: dict[int, dict[str, Any]] = field(default_factory=dict)
    gone: list[int] = field(default_factory=list)
    appeared: list[dict[str, Any]] = field(default_factory=list)
    ambiguous: list[int] = field(default_factory=list)


def _dir(d: Any) -> str:
    """The directory of a stored relation's descriptor (a record, or its JSON form)."""
    return str(d.dir if isinstance(d, RelationDescriptor) else RelationDescriptor.from_json(d).dir)


def read_dir(store: Store, n: int, node: str, rname: str, workflow: Any) -> str:
    """The store directory of relation ``rname`` as node ``node`` of execution ``n`` read it: a
    workflow input, an upstream node's output, or a state relation as the last node of its
    module to write it before left it (else the initial state)."""
    rec = store.executions[n - 1]
    module = workflow.modules[workflow.nodes[node].module]
    if rname in module.state:
        order = workflow.topological_order()
        for e in range(n, 0, -1):
            for w in reversed(order[: order.index(node)] if e == n else order):
                if workflow.nodes[w].module == module.name:
                    d = f"{store.final_dir(e)}/state/{w}/{rname}"
                    if os.path.isdir(store.resolve(d)):
                        return d
        return _dir(store.meta["initial"][module.name][rname])
    if workflow.nodes[node].input:
        return str(rec["inputs"][node][rname]["dir"])
    for e in workflow.inputs_of(node):
        if rname in e.relations:
            return _dir(rec["outputs"][e.src][rname])
    raise StoreError(f"execution {n}'s node {node!r} reads no relation {rname!r}")


def written_dir(store: Store, n: int, node: str, rname: str, state: bool) -> str:
    """The store directory of relation ``rname`` as node ``node`` of execution ``n`` wrote it."""
    if state:
        return f"{store.final_dir(n)}/state/{node}/{rname}"
    return _dir(store.executions[n - 1]["outputs"][node][rname])


def _frame(spark: Any, store: Store, rel_dir: str, drop: Collection[int], values: Mapping[int, Mapping[str, Any]],
           given: Mapping[int, Mapping[str, Any]] | None = None) -> Any:
    """The relation stored at ``rel_dir`` without the rows at positions ``drop``, with
    ``values`` (position → column → value) put in, and ``given`` (the same, values a user gave:
    each must be of its column's type); its visible columns, in order."""
    if given:
        merged = {p: dict(cols) for p, cols in values.items()}
        for p, cols in given.items():
            merged.setdefault(p, {}).update(cols)
        values = merged
    from pyspark.sql import functions as F

    from lipspark.workflow.relations import position_col, read_stored, stored_files

    files = stored_files(store, rel_dir)
    df = read_stored(spark, store.resolve(rel_dir), files)
    visible = [c for c in df.columns if not is_hidden(c)]
    if not drop and not values:
        return df.select(*visible)
    df = df.select(*visible, position_col(RelationDescriptor(rel_dir, files)).alias(_POS))
    if drop:
        df = df.filter(~F.col(_POS).isin([int(p) for p in drop]))
    by_col: dict[str, dict[int, Any]] = defaultdict(dict)
    for p, cols in values.items():
        for c, v in cols.items():
            by_col[c][int(p)] = v
    types = {f.name: f.dataType for f in df.schema.fields if f.name != _POS}
    for c, new in by_col.items():
        if c not in types:
            raise StoreError(f"relation {os.path.basename(rel_dir)} has no column {c!r}; its columns: {', '.join(types)}")
        for p, v in new.items():
            if given and c in given.get(p, {}):
                _check_value(os.path.basename(rel_dir), c, types[c], v)
        expr = F.col(c)
        for p, v in new.items():  # a what-if changes few values of a relation
            expr = F.when(F.col(_POS) == p, F.lit(v).cast(types[c])).otherwise(expr)
        df = df.withColumn(c, expr)
    return df.select(*visible)


def _check_value(relation: str, column: str, dtype: Any, v: Any) -> None:
    """A value given for a column must be of its kind (a number for a numeric column, a string
    for a string one, true or false for a boolean; null for any): Spark would cast it otherwise."""
    from pyspark.sql import types as T

    if v is None:
        return
    numeric = isinstance(dtype, T.NumericType) and isinstance(v, (int, float)) and not isinstance(v, bool)
    if isinstance(dtype, (T.IntegralType,)) and isinstance(v, float) and not v.is_integer():
        numeric = False
    ok = numeric or (isinstance(dtype, T.StringType) and isinstance(v, str)) or (isinstance(dtype, T.BooleanType) and isinstance(v, bool))
    if not ok:
        raise StoreError(f"column {column} of {relation} is {dtype.simpleString()}: {v!r} is not one; give a value of that type")


def stored_rows(store: Store, rel_dir: str) -> list[tuple[int, dict[str, Any]]]:
    """The rows of the relation stored at ``rel_dir`` (its visible columns) with their
    positions, read on the driver."""
    import pyarrow.parquet as pq

    from lipspark.workflow.relations import stored_files

    out: list[tuple[int, dict[str, Any]]] = []
    for i, f in enumerate(stored_files(store, rel_dir)):
        t = pq.read_table(store.resolve(f.path))
        t = t.select([c for c in t.column_names if not is_hidden(c)])
        out += [((i << ROW_BITS) | r, row) for r, row in enumerate(t.to_pylist())]
    return out


def _collect(df: Any) -> list[Any]:
    return list(df.collect())


def _key(v: Any) -> Any:
    """A hashable stand-in for a value (NaN equals NaN, lists and dicts by content)."""
    if isinstance(v, float) and math.isnan(v):
        return ("nan",)
    if isinstance(v, dict):
        return tuple(sorted((k, _key(x)) for k, x in v.items()))
    if isinstance(v, (list, tuple)):
        return tuple(_key(x) for x in v)
    if hasattr(v, "asDict"):
        return _key(v.asDict(recursive=True))
    return v


def _plain(v: Any) -> Any:
    if hasattr(v, "asDict"):
        return v.asDict(recursive=True)
    if isinstance(v, list):
        return [_plain(x) for x in v]
    return v


def compare(stored: list[tuple[int, dict[str, Any]]], new: list[dict[str, Any]], alive: set[int] | None,
            value_columns: Sequence[str]) -> Written:
    """Match the re-run's rows ``new`` with the ``stored`` rows at positions ``alive`` (all when
    None) by their columns other than ``value_columns`` (see :class:`Written`).

    >>> w = compare([(0, {"k": "a", "v": 1}), (1, {"k": "b", "v": 2})], [{"k": "a", "v": 5}, {"k": "c", "v": 0}], None, ["v"])
    >>> w.changed, w.gone, w.appeared
    ({0: {'v': 5}}, [1], [{'k': 'c', 'v': 0}])
    """
    vcols = list(value_columns)
    groups_old: dict[Any, list[tuple[int, dict[str, Any]]]] = defaultdict(list)
    for p, row in stored:
        if alive is None or p in alive:
            groups_old[tuple(_key(v) for c, v in row.items() if c not in vcols)].append((p, row))
    groups_new: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for row in new:
        groups_new[tuple(_key(v) for c, v in row.items() if c not in vcols)].append(row)
    out = Written()
    for k, olds in groups_old.items():
        news = groups_new.pop(k, [])
        if not news:
            out.gone += [p for p, _ in olds]
            continue
        one_new = len({tuple(_key(r[c]) for c in vcols) for r in news}) == 1
        alike_old = len({tuple(_key(r[c]) for c in vcols) for _, r in olds}) == 1
        # which stored row became which re-run row is known when the rows are alike on each side
        # (any pairing is the same), or when one row stands on each side
        if one_new and (len(olds) == len(news) or alike_old):
            for p, row in olds[: len(news)]:
                out.values[p] = {c: news[0][c] for c in vcols}
                upd = {c: news[0][c] for c in vcols if _key(news[0][c]) != _key(row[c])}
                if upd:
                    out.changed[p] = upd
            out.gone += [p for p, _ in olds[len(news):]]
            out.appeared += news[len(olds):]
        else:  # alike but for values that differ: which stored row became which is not known
            out.ambiguous += [p for p, _ in olds]
            out.appeared += news[len(olds):]
    for rest in groups_new.values():
        out.appeared += rest
    return out


def rerun_invocation(store: Store, n: int, node: str, *, spark: Any, workflow: Any,
                     drop: Mapping[str, Collection[int]] | None = None,
                     values: Mapping[str, Mapping[int, Mapping[str, Any]]] | None = None,
                     given: Mapping[str, Mapping[int, Mapping[str, Any]]] | None = None,
                     appended: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
                     gone: Mapping[str, Collection[int]] | None = None,
                     value_columns: Mapping[str, Sequence[str]] | None = None) -> dict[str, Written]:
    """Re-run node ``node`` of execution ``n`` of ``store`` plainly: what it reads without the
    rows at the stored positions ``drop[relation]``, with ``values[relation][position]`` put in
    (and ``given``'s, values a user gave, checked against their columns' types) and the rows
    ``appended[relation]`` added; compare what it writes with what the run stored
    (``gone[relation]``: stored positions no longer there, whose rows it is not asked about;
    ``value_columns[relation]``: the columns with value nodes, which rows are not matched by)."""
    from lipspark.workflow.relations import check_schema

    if not 1 <= n <= len(store.executions):
        raise StoreError(f"the store at {store.root} has executions 1..{len(store.executions)}, not {n}")
    if node not in workflow.nodes:
        raise StoreError(f"workflow {store.meta['workflow']!r} has no node {node!r}; its nodes: {', '.join(workflow.nodes)}")
    drop, values, given, appended = drop or {}, values or {}, given or {}, appended or {}
    gone, value_columns = gone or {}, value_columns or {}
    module = workflow.modules[workflow.nodes[node].module]
    frames: dict[str, Any] = {}
    missing = set(workflow.missing_inputs(node))
    for rname in [*module.inputs, *module.state]:
        if rname in missing:
            df = spark.createDataFrame([], module.relation(rname).ddl)
        else:
            df = _frame(spark, store, read_dir(store, n, node, rname, workflow), drop.get(rname, ()), values.get(rname, {}),
                        given.get(rname))
        if appended.get(rname):
            df = df.unionByName(spark.createDataFrame([tuple(r[c] for c in df.columns) for r in appended[rname]], df.schema))
        frames[rname] = df
    for rname, df in frames.items():
        check_schema(module, module.relation(rname), df)
    result = module.logic(**frames)
    if not isinstance(result, dict):
        raise WorkflowError(f"module {module.name!r} must return a dict of relations, returned {type(result).__name__}")
    from lipspark.session import run_concurrently

    names = list(result)  # what it wrote, collected at once (the jobs of one invocation overlap well)
    rows: list[Any] = run_concurrently([partial(_collect, result[r]) for r in names])
    written: dict[str, Written] = {}
    for rname, got in zip(names, rows):
        state = rname in module.state and rname not in module.outputs
        new = [{k: _plain(v) for k, v in r.asDict().items()} for r in got]
        old = stored_rows(store, written_dir(store, n, node, rname, state))
        absent = set(gone.get(rname, ()))
        written[rname] = compare(old, new, {p for p, _ in old if p not in absent}, value_columns.get(rname, ()))
    return written


@dataclass
class Rerun:
    """One invocation re-run (:meth:`Rerunner.rerun`), in node ids of the store's graph.

    ``known``: v-node id → its value after the re-run, for every value of the rows still there
    that it could tell; ``gone``: ids of the p-nodes of the rows it no longer writes;
    ``ambiguous``: ids of v-nodes whose new value could not be told; ``appeared``: relation →
    the rows it writes that the run did not; ``written``: relation → :class:`Written`;
    ``seconds``: how long it took."""

    execution: int
    node: str
    known: dict[int, Any]
    gone: list[int]
    ambiguous: list[int]
    appeared: dict[str, list[dict[str, Any]]]
    written: dict[str, Written]
    seconds: float


class Rerunner:
    """Re-runs invocations of a workflow store for what-ifs: the query layer's
    :class:`~lipspark.query.recompute.Rerunner`, which names rows by graph node ids. Spark is
    started, and the store's workflow definition loaded, on the first re-run.

    A store of the ``state`` scheme (every state row and value a node of its own, the default
    since 2026-11-25) is needed: its rows are named by position, so a re-run's rows can be
    matched with the graph's."""

    def __init__(self, store: "Store | str", *, spark: Any = None, workflow: Any = None) -> None:
        self.store = store if isinstance(store, Store) else Store.open(store)
        if not self.store.executions:
            raise StoreError(f"the store at {self.store.root} has no execution to re-run")
        if self.store.state_scheme != "state":
            raise StoreError(f"the store at {self.store.root} keeps state rows as their writers' nodes (state scheme "
                             f"{self.store.state_scheme!r}): a re-run's rows cannot be named in its graph; run the workflow "
                             "again into a new store to recompute what-ifs")
        self._spark, self._workflow = spark, workflow

    @property
    def workflow(self) -> Any:
        if self._workflow is None:
            from lipspark.workflow.materialize import store_workflow

            self._workflow = store_workflow(self.store)
        return self._workflow

    @property
    def spark(self) -> Any:
        if self._spark is None:
            from lipspark.session import get_spark

            self._spark = get_spark()
        return self._spark

    def rank(self, execution: int, node: str) -> tuple[int, int]:
        """Where the invocation runs: its execution, then its place in the workflow's order."""
        return execution, self.workflow.topological_order().index(node)

    def consumers(self, execution: int, node: str, relation: str) -> list[tuple[int, str]]:
        """The invocations that read relation ``relation`` as node ``node`` of execution
        ``execution`` wrote it: the nodes an edge brings an output to, or a state relation's
        readers up to and including the next node of its module that writes it again."""
        wf = self.workflow
        module = wf.modules[wf.nodes[node].module]
        if relation in module.outputs:
            return [(execution, e.dst) for e in wf.edges if e.src == node and relation in e.relations]
        order = wf.topological_order()
        out: list[tuple[int, str]] = []
        for e in range(execution, len(self.store.executions) + 1):
            for w in (order[order.index(node) + 1:] if e == execution else order):
                if wf.nodes[w].module != module.name:
                    continue
                out.append((e, w))
                if os.path.isdir(self.store.resolve(written_dir(self.store, e, w, relation, True))):
                    return out
        return out

    def _block(self, n: int, node: str) -> Any:
        from lipspark.vocabulary.ids import positional
        from lipspark.workflow.numbering import blocks

        blk = blocks(self.workflow, n, self.store.executions[n - 1]["segments"][0])[node]
        return blk, positional(blk.invocation, 0)

    def invocation_id(self, execution: int, node: str) -> int:
        """The id of the invocation node of node ``node`` in execution ``execution``."""
        return int(self._block(execution, node)[1])

    def rerun(self, execution: int, node: str, *, removed: Collection[int] = (),
              values: Mapping[str, Mapping[int, Mapping[str, Any]]] | None = None,
              given: Mapping[str, Mapping[int, Mapping[str, Any]]] | None = None,
              appended: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
              value_columns: Mapping[str, Sequence[str]] | None = None) -> Rerun:
        """Re-run node ``node`` of execution ``execution``: ``removed``, the ids of the graph's
        nodes of this invocation that a deletion removed (rows it read, rows it wrote);
        ``values``, relation → stored position → column → the value it reads there now;
        ``given``, the same for values a user gave (an update: checked against the column's type);
        ``appended``, relation → rows it reads besides the stored ones; ``value_columns``,
        relation → the columns of what it writes that have value nodes."""
        from lipspark.vocabulary.ids import LOW_MASK, positional, segment_of

        start = time.perf_counter()
        wf = self.workflow
        blk, _ = self._block(execution, node)
        module = wf.modules[wf.nodes[node].module]
        ids = np.asarray(sorted(int(i) for i in removed), dtype=np.int64)
        segs, ords = segment_of(ids), ids & LOW_MASK

        def at(seg: int) -> set[int]:
            return set(ords[segs == seg].tolist())

        reads = [*module.inputs, *module.state]
        writes = [*module.outputs, *[r for r in module.state if r not in module.outputs]]
        drop = {r: at(blk.read(r)) for r in reads}
        gone = {r: at(blk.write(r)) for r in writes}
        written = rerun_invocation(self.store, execution, node, spark=self.spark, workflow=wf, drop=drop, values=values,
                                   given=given, appended=appended, gone=gone, value_columns=value_columns)
        known: dict[int, Any] = {}
        gone_ids: list[int] = []
        ambiguous: list[int] = []
        for r, w in written.items():
            cols = list((value_columns or {}).get(r, ()))
            for p, vals in w.values.items():
                for c, v in vals.items():
                    known[int(positional(blk.write_value(r, c), p))] = v
            gone_ids += [int(positional(blk.write(r), p)) for p in w.gone]
            ambiguous += [int(positional(blk.write_value(r, c), p)) for p in w.ambiguous for c in cols]
        return Rerun(execution, node, known, gone_ids, ambiguous, {r: w.appeared for r, w in written.items() if w.appeared},
                     written, time.perf_counter() - start)
