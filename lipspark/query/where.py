"""Where-provenance: the base tuples and columns a value of an output tuple was copied or computed from.

Two things answer it together (Buneman, Khanna and Tan's *where*-provenance, here at the
granularity of a tuple's column):

* the **column lineage** the store recorded for each relation an invocation wrote
  (:mod:`lipspark.vocabulary.lineage`), followed back through the workflow by
  :func:`trace_column` — an input of an invocation is the stored output of another, its state the
  relation its module last wrote — to columns of base relations (workflow inputs, initial
  state), with how the value was obtained (IDENTITY, TRANSFORMATION, AGGREGATION);
* the tuple's **lineage** in the provenance graph: the base tuples (tokens) its polynomial
  mentions or, for a value with a v-node of its own (an aggregate, a black box's result), the
  tokens under that v-node — an aggregate's ⊗ members, a black box's arguments.

The answer is one row per (base relation, column, base tuple): the tuple's token, the column's
value in it (read from the relation's Parquet file, by the token's file and row), and how.
DIRECT lineage only: a column read by a filter or a join condition decided *which* rows exist
and is not where a value comes from (the OpenLineage export lists those as INDIRECT).

>>> from lipspark.vocabulary.lineage import RelationLineage, SourceField
>>> lin = {"executions/000001/outputs/a/Out": RelationLineage(
...     "executions/000001/outputs/a/Out", "a", "a", "Out", "output",
...     columns={"Total": (SourceField("executions/000001/outputs/src/Mid", "Amount", "DIRECT", "AGGREGATION", "sum"),)}),
...        "executions/000001/outputs/src/Mid": RelationLineage(
...     "executions/000001/outputs/src/Mid", "src", "src", "Mid", "output",
...     columns={"Amount": (SourceField("executions/000001/inputs/src/Sales", "Price", "DIRECT", "IDENTITY"),
...                         SourceField("initial/src/Rates", "Rate", "DIRECT", "TRANSFORMATION"))})}
>>> [(f.relation, f.column, f.subtype, f.description) for f in trace_column(lin, "executions/000001/outputs/a/Out", "Total")]
[('executions/000001/inputs/src/Sales', 'Price', 'AGGREGATION', 'sum'), ('initial/src/Rates', 'Rate', 'AGGREGATION', 'sum')]
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from lipspark.errors import QueryError, StoreError
from lipspark.graph.index import GraphIndex
from lipspark.store.lineage import StoredRelationInfo, read_lineage, relations_by_dir
from lipspark.store.store import Store
from lipspark.vocabulary import Op
from lipspark.vocabulary.ids import LOW_MASK, ROW_BITS, SEGMENT_SHIFT, positional
from lipspark.vocabulary.lineage import RelationLineage, SourceField, compose, is_base_dir

__all__ = ["WhereRow", "trace_column", "where_provenance"]


def trace_column(lineage: Mapping[str, RelationLineage], directory: str, column: str) -> tuple[SourceField, ...]:
    """The columns of base relations that ``column`` of the relation stored at ``directory`` is
    copied or computed from (DIRECT lineage followed back through every module), each with the
    strongest subtype along its path and the descriptions met on the way (example: the module
    docstring). A base relation's column is its own source (IDENTITY)."""
    memo: dict[tuple[str, str], dict[tuple[str, str], tuple[str, frozenset[str]]]] = {}

    def walk(d: str, c: str, seen: frozenset[tuple[str, str]]) -> dict[tuple[str, str], tuple[str, frozenset[str]]]:
        if is_base_dir(d):
            return {(d, c): ("IDENTITY", frozenset())}
        if (d, c) in memo:
            return memo[(d, c)]
        rel = lineage.get(d)
        if rel is None:
            raise StoreError(f"no column lineage for the relation stored at {d}; it was not written by an invocation of this "
                             "store's executions (or the store predates column lineage: run the workflow into a new store)")
        if c not in rel.columns:
            raise QueryError(f"relation {rel.relation} of {rel.node} has no column {c!r}; its columns: {', '.join(rel.columns)}")
        out: dict[tuple[str, str], tuple[str, frozenset[str]]] = {}
        for f in rel.columns[c]:
            if (f.relation, f.column) in seen:  # a state relation reading itself: its earlier version is another directory
                continue
            for key, (st, desc) in walk(f.relation, f.column, seen | {(d, c)}).items():
                mine = frozenset(x for x in f.description.split(", ") if x)
                st2, d2 = compose(f.subtype, st), desc | mine
                if key in out:
                    st2, d2 = compose(out[key][0], st2), out[key][1] | d2
                out[key] = (st2, d2)
        memo[(d, c)] = out
        return out

    found = walk(directory, column, frozenset())
    return tuple(SourceField(rel, col, "DIRECT", st, ", ".join(sorted(desc))) for (rel, col), (st, desc) in sorted(found.items()))


@dataclass(frozen=True)
class WhereRow:
    """One base tuple's column that a value comes from."""

    relation: str
    module: str
    execution: int | None
    tuple: str
    column: str
    value: Any
    how: str
    description: str
    node: int

    def to_dict(self) -> dict[str, Any]:
        return {"relation": self.relation, "module": self.module, "execution": self.execution, "tuple": self.tuple,
                "column": self.column, "value": self.value, "how": self.how, "description": self.description, "node": self.node}


def _graph_store(path: str) -> Store:
    """The store whose graph (and so whose relations and lineage) answers for ``path``."""
    if not os.path.exists(os.path.join(path, "store.json")):
        raise QueryError(f"where-provenance needs a workflow store (lipspark run WORKFLOW --graph DIR); {path} is a graph "
                         "directory, which records no column lineage")
    store = Store.open(path)
    sub = store.graph_store()
    if sub is None:
        raise StoreError(f"the store at {path} has no graph to trace tuples in: run with provenance on, "
                         f"or `lipspark materialize {path}` first")
    return sub


def _relation_of(g: GraphIndex, pos: int, by_seg: Mapping[int, StoredRelationInfo]) -> tuple[int, StoredRelationInfo]:
    """The stored tuple a node stands for: an output or base tuple itself, a module input or
    state node through its child (the tuple it reads)."""
    for p in [pos, *g.children(pos).tolist()]:
        nid = int(g.ids[p])
        if nid >= 0 and (nid >> SEGMENT_SHIFT) in by_seg and not g.is_v[p]:
            return p, by_seg[nid >> SEGMENT_SHIFT]
    raise QueryError(f"where-provenance is asked of a stored tuple (an output, a module input or state node, or a base "
                     f"tuple); node {int(g.ids[pos])} ({g.label(pos)}) is none")


def _values(store: Store, info: StoredRelationInfo, column: str, ids: np.ndarray) -> list[Any]:
    """The value of ``column`` in the stored rows of a base relation that tokens ``ids`` name
    (their file and row: :mod:`lipspark.vocabulary.ids`)."""
    import pyarrow.parquet as pq

    files = info.descriptor.get("files") or []
    ordinal = ids & LOW_MASK
    part, row = ordinal >> ROW_BITS, ordinal & ((1 << ROW_BITS) - 1)
    out: list[Any] = [None] * len(ids)
    for f in np.unique(part).tolist():
        path = os.path.join(store.root, files[f]["path"])
        col = pq.read_table(path, columns=[column]).column(0)
        for i in np.flatnonzero(part == f).tolist():
            v = col[int(row[i])].as_py()
            out[i] = v.isoformat() if hasattr(v, "isoformat") else v
    return out


def where_provenance(g: GraphIndex, path: str, node: int, column: str) -> list[WhereRow]:
    """Where the value of ``column`` in the stored tuple ``node`` (a node id of ``g``, the graph
    of the workflow store at ``path`` or a view of it) comes from: one :class:`WhereRow` per base
    tuple and column, in relation, then token order.

    ``lipspark query`` runs it as ``where column COLUMN of SELECTOR`` (docs/query-language.md).
    The ledger workflow of the tests (tests/fixtures/ledger.py), one execution: deposits D1-0
    (account B, 10) and D1-1 (C, 11) join the initial D0-0 (A, 10), and the ledger sums each
    account's amounts:

    >>> import tempfile
    >>> from lipspark.workflow import run
    >>> store = run("tests/fixtures/ledger.py", graph_dir=tempfile.mkdtemp() + "/ledger", executions=1).store
    >>> from lipspark.query import Session
    >>> s = Session(store)
    >>> (shown,) = s.run('show output Changed(Account = "C") of ledger execution 1')
    >>> node = shown.rows[0]["id"]
    >>> [(r.relation, r.tuple, r.column, r.value, r.how) for r in where_provenance(s.view, store, node, "Balance")]
    [('Deposits', 'Deposits:D1-1', 'Amount', 11, 'AGGREGATION')]
    >>> [(r["tuple"], r["value"]) for r in s.run('where column Account of output Changed of ledger execution 1')[0].rows]
    [('Deposits:D1-0', 'B'), ('Deposits:D1-1', 'C')]
    """
    store = _graph_store(path)
    infos = relations_by_dir(store)
    by_seg = {int(i.descriptor["p"]["seg"]): i for i in infos.values() if i.descriptor.get("p")}
    pos = g.position(node)
    pos, info = _relation_of(g, pos, by_seg)
    nid = int(g.ids[pos])
    if info.token_segment is not None:  # a base tuple: the value is its own
        cols = _relation_columns(store, info)
        if column not in cols:
            raise QueryError(f"relation {info.relation} has no column {column!r}; its columns: {', '.join(cols)}")
        fields: tuple[SourceField, ...] = (SourceField(info.dir, column, "DIRECT", "IDENTITY"),)
    else:
        fields = trace_column(read_lineage(store), info.dir, column)
    values = info.descriptor.get("values") or {}
    seed = pos
    if isinstance(values.get(column), int):  # the value has a v-node: trace under it
        vid = positional(int(values[column]), nid & LOW_MASK)
        if g.contains(vid):
            seed = g.position(vid)
    up = g.ancestors(np.array([seed], dtype=np.int64))
    up = np.union1d(up, [seed])
    tokens = up[np.asarray(g.op)[up] == Op.TOKEN]
    token_ids = np.asarray(g.ids[tokens], dtype=np.int64)
    rows: list[WhereRow] = []
    for f in fields:
        base = infos.get(f.relation)
        if base is None or base.token_segment is None:
            continue
        mine = token_ids[(token_ids >> SEGMENT_SHIFT) == base.token_segment]
        mine = np.sort(mine)
        vals = _values(store, base, f.column, mine)
        for t, v in zip(mine.tolist(), vals):
            p = g.position(t)
            rows.append(WhereRow(base.relation, base.node if base.role == "initial" else _module_of(g, p), base.execution or None,
                                 g.label(p), f.column, v, f.subtype, f.description, t))
    rows.sort(key=lambda r: (r.relation, r.execution or 0, r.tuple, r.column))
    return rows


def _module_of(g: GraphIndex, pos: int) -> str:
    m = g.column("module", np.array([pos], dtype=np.int64))[0]
    return str(m) if m is not None else ""


def _relation_columns(store: Store, info: StoredRelationInfo) -> list[str]:
    """The visible columns of a stored relation (from its first file's schema)."""
    import pyarrow.parquet as pq

    from lipspark.vocabulary.columns import is_hidden

    files = info.descriptor.get("files") or []
    if not files:
        return []
    return [n for n in pq.read_schema(os.path.join(store.root, files[0]["path"])).names if not is_hidden(n)]
