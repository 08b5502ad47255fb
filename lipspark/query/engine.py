"""Running provenance queries: a session holds a working view and runs statements on it in order.

``zoomout``/``zoomin``/``delete`` change the view, ``reset`` returns to the captured graph, the
other statements read it. Every statement gives a :class:`Result` that renders as a text table
(``to_text``) or JSON-ready data (``to_dict``).

>>> import pandas as pd
>>> from lipspark.graph.index import GraphIndex
>>> g = GraphIndex.build(
...     pd.DataFrame({"id": [1, 2, 3], "kind": "p", "op": ["token", "token", "δ"], "label": ["Cars:C2", "Cars:C3", "δ"],
...                   "relation": ["Cars", "Cars", None], "tuple": ['{"CarId": "C2"}', '{"CarId": "C3"}', None]}),
...     pd.DataFrame({"src": [1, 2], "dst": [3, 3]}))
>>> s = Session(g)
>>> print(s.run('polynomial node 3; evaluate counting node 3 given tuple Cars(CarId = "C2") = 0, default = 1')[0].to_text())
polynomial node 3
node                polynomial
------------------  --------------------
δ (distinct/group)  δ(Cars:C2 + Cars:C3)
>>> [(r["name"], r["depends"]) for r in s.run('depends node 3 on tuple Cars(CarId = "C2")')[0].rows]
[('δ (distinct/group)', False)]
"""
from __future__ import annotations

import html
import json
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Iterable, Protocol, runtime_checkable

import numpy as np

from lipspark.errors import MissingValueError, QueryError, SemiringError
from lipspark.graph.expression import evaluate, expanded, invocation_tokens, polynomial, provenance_mapping, token_name
from lipspark.graph.index import GraphIndex
from lipspark.query import ast
from lipspark.query.deletion import UNKNOWN, delete, propagate
from lipspark.query.diff import diff
from lipspark.query.edgedata import SAMPLE_ROWS, EdgeData, EdgeReader, edge_lines
from lipspark.query.parser import parse
from lipspark.query.recompute import Recomputed, Rerunner, check_rerunner, readers, recompute
from lipspark.query.selector import NoSuchColumn, resolve
from lipspark.query.text import ROW_LIMIT, changed_by_tuple, shown_value, id_prefix, located, node_name, node_table, reading_order, printable, table, token_lines
from lipspark.query.trace import subgraph_positions
from lipspark.query.zoom import zoom_in, zoom_out
from lipspark.semiring import Expr
from lipspark.semiring.evaluate import describe_tokens, missing_tokens
from lipspark.semiring.semirings import Semiring
from lipspark.vocabulary import Op
from lipspark.vocabulary.ids import ordinal_of

__all__ = ["Session", "Result", "node_rows", "OnDemand", "Partial"]

def _plain(v: Any) -> Any:
    if v is UNKNOWN:
        return "unknown"
    if hasattr(v, "item"):
        return v.item()
    if isinstance(v, (frozenset, set)):
        return sorted((_plain(x) for x in v), key=str)
    return v


def node_rows(g: GraphIndex, positions: np.ndarray) -> list[dict[str, Any]]:
    """One dict per node: id, name (what it is, for people: :func:`~lipspark.query.text.node_name`),
    kind, op, type, label, module, invoked_as (the workflow node running the module, when its
    name differs), execution, relation, column, tuple, value; in a view after a deletion,
    what_if (what the deletion changed on the node)."""
    pos = np.asarray(positions, dtype=np.int64)
    cols = {c: g.column(c, pos).tolist() for c in ("id", "kind", "op", "type", "label", "module", "node", "execution", "relation", "column", "tuple", "value")}
    rows = []
    for i in range(len(pos)):
        t = cols["tuple"][i]
        row = {"id": int(cols["id"][i]), "name": "", "kind": cols["kind"][i], "op": Op(int(cols["op"][i])).name.lower(),
               "type": cols["type"][i] or "", "label": cols["label"][i], "module": cols["module"][i],
               # the workflow node that ran the module, when it is named otherwise (dealer1_buy runs dealer1)
               "invoked_as": cols["node"][i] if cols["node"][i] != cols["module"][i] else None, "execution": cols["execution"][i],
               "relation": cols["relation"][i], "column": cols["column"][i], "tuple": json.loads(t) if isinstance(t, str) else None,
               "value": _plain(cols["value"][i]) if cols["kind"][i] == "v" else None}
        row["name"] = node_name(row)
        rows.append(row)
    if g.what_if:
        _what_if_column(g, pos, rows)
    return rows


def _what_if_column(g: GraphIndex, pos: np.ndarray, rows: list[dict[str, Any]]) -> None:
    """In a view after a deletion, say on each row what the deletion changed: a v-node's
    ``captured → what-if`` value, a module boundary tuple's changed columns (``Amount 54723.0 → ?``);
    ``value`` already reads the what-if value."""
    changed = np.asarray(list(g.what_if), dtype=np.int64)
    at = g.lookup(changed)
    changed, at = changed[at >= 0], at[at >= 0]
    base = g.base
    before = {int(i): base.value_at(int(b)) for i, b in zip(changed.tolist(), base.lookup(changed).tolist()) if b >= 0}

    # a boundary value belongs to the row with its invocation, relation, type and ordinal (as
    # ``value COL of`` matches them: lipspark.query.selector)
    def row_keys(positions: np.ndarray) -> list[tuple[Any, ...]]:
        invs, rels = g.column("invocation", positions).tolist(), g.column("relation", positions).tolist()
        return [(-1 if inv is None else int(inv), rel, int(g.type_code[p]), int(ordinal_of(int(g.ids[p]))))
                for inv, rel, p in zip(invs, rels, positions.tolist())]

    by_row: dict[tuple[Any, ...], list[str]] = {}
    if len(at):
        cols = {c: g.column(c, at).tolist() for c in ("op", "column")}
        for i, (node, k) in enumerate(zip(changed.tolist(), row_keys(at))):
            if cols["column"][i] and Op(int(cols["op"][i])).name.lower() in _CARRIED:
                by_row.setdefault(k, []).append(
                    f"{cols['column'][i]} {shown_value(_plain(before.get(node)))} → {shown_value(_plain(g.what_if[node]))}")
    keys = row_keys(np.asarray(pos, dtype=np.int64)) if by_row else [()] * len(rows)
    for row, k in zip(rows, keys):
        node = row["id"]
        if node in g.what_if:
            row["what_if"] = f"{shown_value(_plain(before.get(node)))} → {shown_value(row['value'])}"
        elif by_row and row["kind"] == "p" and row["op"] in _CARRIED:
            found = by_row.get(k)
            if found:
                row["what_if"] = "; ".join(sorted(set(found)))


#: ops of the nodes that carry a value across a module boundary (named by their own tuple)
_CARRIED = frozenset({"input", "state", "output"})
#: the operations of a session's view that delete (its `_ops`)
_DELETIONS = frozenset({"delete", "recompute"})
#: how far :func:`_feeds` looks downstream for the output or state value a value reaches
_FEEDS_DEPTH = 64


def _nearest_boundary(g: GraphIndex, p: int, downstream: bool) -> np.ndarray:
    """The boundary v-nodes (input, state, output) nearest to the v-node at ``p``, going down-
    (its parents) or upstream (its children) through v-nodes, at most :data:`_FEEDS_DEPTH` steps."""
    seen, frontier = {p}, np.array([p], dtype=np.int64)
    boundary = [int(Op.OUTPUT), int(Op.STATE), int(Op.INPUT)]
    for _ in range(_FEEDS_DEPTH):
        step = g.gather_parents(frontier) if downstream else g.gather_children(frontier)
        ups = np.unique(np.asarray(step, dtype=np.int64))
        ups = ups[np.asarray(g.is_v[ups], dtype=bool)] if len(ups) else ups
        ups = np.asarray([u for u in ups.tolist() if u not in seen], dtype=np.int64)
        if not len(ups):
            break
        seen.update(ups.tolist())
        found = ups[np.isin(np.asarray(g.op[ups], dtype=np.int64), boundary)]
        if len(found):
            return found
        frontier = ups
    return np.zeros(0, dtype=np.int64)


def _feeds(g: GraphIndex, positions: np.ndarray) -> dict[int, dict[str, Any]]:
    """For each v-node at ``positions`` inside a module (an aggregate, a black box), the output
    (else state, else input) value it reaches first going downstream — its relation, column,
    tuple and name (``feeds``) — or, for a value no module boundary carries on (a Min read only
    by a filter), the relation and column of the values it is computed from (``reads``: how
    many). So every changed value of a what-if names a relation and a column."""
    out: dict[int, dict[str, Any]] = {}
    rank = {"output": 0, "state": 1, "input": 2}
    for p in np.asarray(positions, dtype=np.int64).tolist():
        found = _nearest_boundary(g, p, downstream=True)
        if len(found):
            best = min(node_rows(g, found), key=lambda r: (rank[r["op"]], r["id"]))
            out[p] = {"relation": best["relation"], "column": best["column"], "tuple": best["tuple"], "feeds": best["name"]}
            continue
        found = _nearest_boundary(g, p, downstream=False)
        if len(found):
            rows = node_rows(g, found)
            best = min(rows, key=lambda r: (rank[r["op"]], r["id"]))
            same = [r for r in rows if (r["op"], r["relation"], r["column"]) == (best["op"], best["relation"], best["column"])]
            out[p] = {"relation": best["relation"], "column": best["column"], "tuple": None,
                      "reads": f"{best['column']} of {len(same)} {best['op']} {best['relation']} tuple(s)"}
    return out


#: the columns of a node list as text (``name`` is headed ``node``; ``id`` only when asked for)
_NODE_COLS = ["name", "module", "invoked_as", "execution", "value", "what_if"]


@dataclass
class Result:
    """The answer to one statement."""

    statement: str
    kind: str
    rows: list[dict[str, Any]] = field(default_factory=list)
    summary: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    columns: list[str] = field(default_factory=list)
    #: the view the statement ran on (for drawing: :mod:`lipspark.viz`); ``nodes``: the positions
    #: in it that answer the statement (None: the whole view); ``removed``: positions a delete removed
    graph: GraphIndex | None = field(default=None, repr=False)
    nodes: np.ndarray | None = field(default=None, repr=False)
    removed: np.ndarray | None = field(default=None, repr=False)
    #: the data on the dataflow edges of the store the view is of (row counts, changes, samples:
    #: :mod:`lipspark.query.edgedata`), for a drawing of zoomed-out modules; None without a store
    edge_reader: EdgeReader | None = field(default=None, repr=False)
    #: How Jupyter draws a result: set by :mod:`lipspark.viz` when it is imported (the query
    #: layer does not import the drawing layer); None shows the text alone.
    html_renderer: ClassVar[Callable[["Result"], "str | None"] | None] = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready data: the statement, its kind, a summary, rows and extra sections."""
        d: dict[str, Any] = {"statement": self.statement, "kind": self.kind, "summary": self.summary, "rows": self.rows}
        for k, v in self.extra.items():
            if k == "_tables":
                for name, (rows, _) in v.items():
                    d[name.replace(" ", "_")] = rows
            elif not k.startswith("_"):  # "_"-keys hold how the text groups what JSON lists
                d[k] = v
        return d

    def to_text(self, *, ids: bool = False, all_rows: bool = False) -> str:
        """The answer for people: nodes named by what they are (``ids``: their numeric ids too),
        requested nodes first, empty columns left out, at most 50 rows a table (``all_rows``: all)."""
        limit = None if all_rows else ROW_LIMIT
        parts = [printable(self.statement)]
        if self.summary:
            parts.append(self.summary)
        if "_lines" in self.extra:  # an answer that lays itself out (a diff)
            parts += self.extra["_lines"](ids=ids, limit=limit)
        elif "_lineage" in self.extra:
            for row in self.rows:
                tokens = row["value"] if isinstance(row["value"], list) else []
                parts.append(f"{id_prefix(row, ids)}{row['name']}: {len(tokens)} token(s)")
                parts += ["  " + line for line in token_lines([str(t) for t in tokens], self.extra["_lineage"], limit=limit)]
        elif self.columns:
            if self.extra.get("_of"):
                parts.append("of " + "; ".join(id_prefix(r, ids) + located(r) for r in self.extra["_of"]))
            first = set(self.extra.get("_first", ()))
            rows = self.rows if self.extra.get("_ranked") else sorted(self.rows, key=lambda r: reading_order(r, first))
            parts.append(node_table(rows, self.columns, ids, limit))
        if "_more" in self.extra:  # a section after the answer's table (the data on the edges of a `show`)
            parts += self.extra["_more"](ids=ids, limit=limit)
        for name, (rows, cols) in self.extra.get("_tables", {}).items():
            if name == "changed values" and "_changed" in self.extra and not ids:  # with ids: every value, as JSON has them
                groups, also = self.extra["_changed"]
                parts.append("changed values:")
                parts.append(table(groups, ["tuple", "module", "execution", "change"], limit=limit))
                if also:
                    parts.append(also)
                continue
            if name == "conditions" and "_changed" in self.extra and not ids:  # named on the "not exact" line
                continue
            if name == "surviving outputs" and not all_rows:  # counted in the summary; what changed is the news
                parts.append(f"surviving outputs: {len(rows)} (--all lists them)")
                continue
            parts.append(f"{name}:")
            parts.append(node_table(rows, cols, ids, limit))
        return "\n".join(parts)

    def __str__(self) -> str:
        return self.to_text()

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        """IPython and the plain-text form of a notebook output (a forge's view without HTML):
        the answer's text, not the dataclass with every row."""
        p.text(self.to_text())

    def _repr_html_(self) -> str:
        """Jupyter: the text of the result, and a drawing of it when it has a graph and a
        renderer is set (:attr:`html_renderer`; ``import lipspark.viz`` sets it)."""
        text = f"<pre>{html.escape(self.to_text())}</pre>"
        renderer = type(self).html_renderer
        drawable = self.graph is not None and self.kind in ("view", "subgraph", "delete", "nodes")
        drawing = renderer(self) if renderer is not None and drawable else None
        return text + (drawing or "")


@runtime_checkable
class OnDemand(Protocol):
    """A graph whose fine-grained parts are made when a query needs them: a deferred store's
    (:class:`lipspark.workflow.ondemand.DeferredGraph`). Each part not made yet is one *pending*
    p-node standing for a computation; :meth:`replay` makes the parts of the given pending
    nodes and gives the graph with them."""

    path: str

    def graph(self) -> GraphIndex: ...

    def pending(self) -> dict[int, str]:
        """The pending nodes' ids, each with the module whose invocation it stands for."""
        ...

    def replay(self, pending_ids: Iterable[int]) -> GraphIndex: ...


@runtime_checkable
class Partial(Protocol):
    """A graph a session reads a part at a time, before each statement the part its answer can
    reach (:class:`lipspark.engines.SparkGraph`: Spark jobs over the store's connected sets)."""

    path: str
    stats: dict[str, int]

    def graph(self) -> GraphIndex: ...

    def extend(self, stmt: ast.Statement, zoomed: Iterable[str]) -> GraphIndex | None: ...

    def view_size(self, view: GraphIndex, base: GraphIndex) -> tuple[int, int] | None: ...


class Session:
    """A working view over a provenance graph, changed and read by query statements.

    Parameters
    ----------
    graph
        The captured graph's index (:meth:`GraphIndex.load`), a path to a store or graph, or
        a graph made on demand (:class:`OnDemand`: a deferred store's
        :class:`~lipspark.workflow.ondemand.DeferredGraph`), whose statements first replay the
        invocations their answers reach into, or a graph read a part at a time (:class:`Partial`:
        :class:`lipspark.engines.SparkGraph`, the Spark query engine).
    rerun
        What re-runs invocations of the graph's store for ``delete … recompute`` and ``update``
        (:class:`lipspark.workflow.Rerunner`; ``lipspark query`` and ``lipspark shell`` give one
        when the graph is a workflow store). Without it those statements say how to get one.
    """

    def __init__(self, graph: GraphIndex | str | OnDemand | Partial, *, rerun: Rerunner | None = None) -> None:
        self.rerunner = rerun
        self._demand: OnDemand | None = None
        self._partial: Partial | None = None  # a graph read a part at a time (the spark engine)
        self.path: str | None = None
        if isinstance(graph, str):
            self.path = graph
            self.base = GraphIndex.load(graph)
        elif isinstance(graph, GraphIndex):
            self.base = graph
        elif isinstance(graph, Partial):  # read where the answers need it (lipspark.engines.SparkGraph)
            self._partial = graph
            self.path, self.base = graph.path, graph.graph()
        else:  # a graph replayed where the answers need it (a deferred store)
            self._demand = graph
            self.path, self.base = graph.path, graph.graph()
        self._view: GraphIndex = self.base
        self._pending: Callable[[], GraphIndex] | None = None
        self._ops: list[tuple[str, Any]] = []
        #: the first execution whose rows the deletions since the last reset may have got wrong (a
        #: condition there read a changed value; 0: all of them), None while none did
        self._inexact_from: int | None = None
        self._edge_reader: EdgeReader | None = None

    @property
    def view(self) -> GraphIndex:
        """The working view: the captured graph (:attr:`base`, mapped once for the whole
        session), or a :class:`~lipspark.graph.view.View` of it. After a ``delete`` it is made
        when first needed."""
        if self._pending is not None:
            self._view, self._pending = self._pending(), None
        return self._view

    @view.setter
    def view(self, g: GraphIndex) -> None:
        self._view, self._pending = g, None

    def refresh(self) -> int:
        """Read the store again: executions a writer committed since the session opened it (or
        last refreshed) join the graph, and the session's zooms and deletions are applied again
        to the new graph. Until then the session answers from the snapshot it has, whatever a
        writer does meanwhile. Returns how many nodes the graph gained.

        >>> import os, shutil, tempfile
        >>> path = shutil.copytree(os.path.join("tests", "fixtures", "graph-v1"), os.path.join(tempfile.mkdtemp(), "g"))
        >>> Session(path).refresh()
        0
        """
        if self.path is None:
            raise QueryError("this session was given a graph, not a path: there is nothing to read again")
        if self._demand is not None:
            raise QueryError("this session replays a deferred store on demand from the executions it opened with; "
                             "open a new Session to see executions run since")
        if self._partial is not None:
            raise QueryError("this session reads the store's partitioned tables as they were when it opened; "
                             "open a new Session to see executions run since")
        before = len(self.base)
        self.base = GraphIndex.load(self.path)
        self._edge_reader = None
        self._replay(list(self._ops))
        return len(self.base) - before

    # ------------------------------------------------------------------ running
    def run(self, text: str, source: str = "<query>") -> list[Result]:
        """Parse ``text`` and run its statements in order; the view carries over between calls."""
        return [self.execute(stmt) for stmt in parse(text, source)]

    def execute(self, stmt: ast.Statement) -> Result:
        """Run one parsed statement."""
        handler = _HANDLERS.get(type(stmt))
        if handler is None:
            raise QueryError(f"statement {type(stmt).__name__} is not supported")
        if self._demand is not None:
            self._refine(stmt)
        if self._partial is not None:
            self._extend(stmt)
        result = handler(self, stmt)
        if result.graph is not None and result.edge_reader is None:
            result.edge_reader = self._edges_of_store()
        return result

    # ------------------------------------------------------------------ the spark engine
    def _extend(self, stmt: ast.Statement) -> None:
        """Read the connected sets ``stmt``'s answer can reach that the session has not read
        (:mod:`lipspark.engines`), and apply the session's zooms and deletions again
        to the graph they make."""
        assert self._partial is not None
        grown = self._partial.extend(stmt, self.view.zoom)
        if grown is not None:
            self.base = grown
            self._edge_reader = None
            self._replay(list(self._ops))

    # ------------------------------------------------------------------ fine-grained on demand
    def _refine(self, stmt: ast.Statement | None) -> None:
        """Replay the invocations ``stmt``'s answer reaches into, until it reaches none that is
        pending (:class:`OnDemand`); the session's zooms and deletions are applied again to the
        graph each replay gives."""
        assert self._demand is not None
        asked: set[int] = set()
        while True:
            ids = self._reached_pending(stmt)
            if not ids:
                return
            if asked.issuperset(ids):  # a replay that did not replace its pending node would loop
                raise QueryError(f"{stmt}: replaying the invocations of pending node(s) {sorted(ids)[:5]} left them pending; please report this store")
            asked.update(ids)
            self.base = self._demand.replay(ids)
            self._edge_reader = None
            self._replay(list(self._ops))

    def _reached_pending(self, stmt: ast.Statement | None) -> list[int]:
        """Ids of the pending nodes of the view that ``stmt``'s answer reaches: a trace in the
        statement's direction from its selected nodes, stopping at pending nodes (what is past
        them is known only once they are replayed); every pending node for the statements that
        read the whole view."""
        assert self._demand is not None
        pending = self._demand.pending()
        if not pending:
            return []
        how = "all" if stmt is None else _DEMAND.get(type(stmt), "all")
        if how == "none" or (how == "view" and not self.view.zoom):
            return []
        if how == "zoomin":
            mods = set(getattr(stmt, "modules", ()))
            return [i for i, m in pending.items() if m in mods]
        # a recompute or update works on the captured graph, zoomed-out modules included (_recompute_base)
        rebased = isinstance(stmt, ast.Update) or (isinstance(stmt, ast.Delete) and stmt.recompute)
        g = self.base if rebased else self.view
        ids = np.fromiter(pending, dtype=np.int64, count=len(pending))
        at = g.lookup(ids)
        ids, at = ids[at >= 0], at[at >= 0]
        if not len(at):
            return []
        if how in ("all", "view"):
            return [int(i) for i in ids]
        stop = np.zeros(len(g), dtype=bool)
        stop[at] = True
        try:
            if how == "on":
                seeds = np.concatenate([self._resolve(s) for s in getattr(stmt, "on")])
            elif how in ("targets", "forward_targets"):
                seeds = np.concatenate([self._resolve(s) for s in getattr(stmt, "targets")])
            else:
                seeds = self._resolve(getattr(stmt, "target"))
        except QueryError:
            return []  # the statement says what is wrong with its selector
        if rebased:
            seeds = g.positions(self.view.ids[seeds])
        parts = [seeds]
        if how in ("backward", "both"):
            parts.append(g.ancestors(seeds, stop=stop))
        if how != "backward":
            parts.append(g.descendants(seeds, stop=stop))
        reached = np.unique(np.concatenate(parts))
        return [int(i) for i in g.ids[reached[stop[reached]]]]

    # ------------------------------------------------------------------ the data on the edges
    def _edges_of_store(self) -> EdgeReader | None:
        """The reader of the stored relations behind this session's graph (None: a graph in memory)."""
        if self.path is None:
            return None
        if self._edge_reader is None:
            self._edge_reader = EdgeReader(self.path, self.base)
        return self._edge_reader

    def edges(self, module: str | None = None, execution: int | None = None, *, samples: int = SAMPLE_ROWS) -> list[EdgeData]:
        """The data on the dataflow edges of the working view's invocations (of ``module``, a
        module or a workflow node running one, and ``execution`` when given): each relation an
        invocation read (workflow inputs, inputs, state) or wrote (outputs), with its row count
        (from Parquet footers), its change since the previous execution and its first
        ``samples`` rows with their polynomials in the view (:mod:`lipspark.query.edgedata`).
        Needs a session opened on a store's path.

        >>> import pandas as pd
        >>> g = GraphIndex.build(pd.DataFrame({"id": [1], "kind": "p", "op": "token", "label": ["R:a"]}), pd.DataFrame({"src": [], "dst": []}))
        >>> Session(g).edges()
        Traceback (most recent call last):
        ...
        lipspark.errors.QueryError: the data on the edges is read from a workflow store's files; this session was given a graph in memory: open it on the store's path, Session("graphs/NAME")
        """
        if self._demand is not None:  # the samples' polynomials reach anywhere upstream
            self._refine(None)
        reader = self._edges_of_store()
        if reader is None:
            raise QueryError("the data on the edges is read from a workflow store's files; this session was given a graph in memory: "
                             "open it on the store's path, Session(\"graphs/NAME\")")
        g = self.view
        inv = g.by_id(g.nodes_with(op=Op.INVOCATION))
        if module is not None:
            names = g.column("module", inv).tolist()
            nodes = g.column("node", inv).tolist()
            inv = inv[np.array([module in (m, n) for m, n in zip(names, nodes)], dtype=bool)] if len(inv) else inv
            if not len(inv):
                known = sorted({str(m) for m in names if m is not None})
                raise QueryError(f"no invocation of a module {module!r} in this view; modules: {', '.join(known) or 'none'}")
        if execution is not None:
            inv = inv[np.asarray(g.column("execution", inv).tolist(), dtype=object) == execution] if len(inv) else inv
            if not len(inv):
                raise QueryError(f"no invocation{'' if module is None else ' of ' + repr(module)} in execution {execution} of this view")
        return reader.edges(g, g.ids[inv], samples=samples)

    def _edge_data(self, r: Result) -> Result:
        """``r`` (a node list) with the data on the edges of the invocations it lists whose module
        is zoomed out in the view (their zoom nodes too): JSON ``edge_data``, text after the table."""
        g, reader = self.view, self._edges_of_store()
        if reader is None or not g.zoom or r.nodes is None or not len(r.nodes):
            return r
        pos = np.asarray(r.nodes, dtype=np.int64)
        ops = np.asarray(g.op)[pos]
        pos = pos[(ops == Op.INVOCATION) | (ops == Op.ZOOM)]
        pos = pos[np.array([m in g.zoom for m in g.column("module", pos).tolist()], dtype=bool)] if len(pos) else pos
        if not len(pos):
            return r
        inv = [int(i) for i in g.column("invocation", g.by_id(pos)).tolist()]
        data = reader.edges(g, list(dict.fromkeys(inv)))
        r.extra["edge_data"] = [e.to_dict() for e in data]
        r.extra["_more"] = lambda ids=False, limit=None: edge_lines(data, limit=limit, ids=ids)
        return r

    def _bind(self, sel: ast.Selector) -> ast.Selector:
        """``sel`` with the selectors that read the store (``violations``) replaced by the ids they name."""
        if isinstance(sel, ast.ViolationsSel):
            from lipspark.query.checks import select, violation_ids

            store = self._store(str(sel))
            found = select(store, sel.check, sel.module, sel.execution, what=str(sel))
            rows = [r for _, r in found if r.kind == "row"]
            if not rows:
                raise QueryError(f"{sel}: {sel.check!r} is a table check: it has no violating rows, only a verdict (`checks {ast.format_literal(sel.check)}`)")
            ids = np.unique(np.concatenate([violation_ids(store, r) for r in rows]))
            if not len(ids):
                runs = ", ".join(str(n) for n, _ in found)
                raise QueryError(f"{sel}: no row violates it (it holds in execution(s) {runs})")
            return ast.IdsSel(tuple(int(i) for i in ids), str(sel), pos=sel.pos)
        if isinstance(sel, ast.ValueSel):
            return ast.ValueSel(sel.column, self._bind(sel.of), pos=sel.pos)
        return sel

    def _store(self, what: str) -> Any:
        """The store whose graph this session reads (a deferred store's replay)."""
        from lipspark.store.store import Store

        if self.path is None:
            raise QueryError(f"{what}: integrity checks are kept by a workflow store; this session was given a graph in memory: "
                             "open it on the store's path, Session(\"graphs/NAME\")")
        store = Store.open(self.path)
        return store.graph_store() or store

    def _resolve(self, sel: ast.Selector) -> np.ndarray:
        """Positions ``sel`` selects in the view; when nothing does, say whether the view hides it."""
        sel = self._bind(sel)
        try:
            return resolve(self.view, sel)
        except QueryError as err:
            if self.view is self.base:
                raise
            try:
                found = resolve(self.base, sel)
            except QueryError:
                raise err from None
            why = []
            for m, rec in self.view.zoom.items():
                if rec.hides(self.base.ids[found]):
                    why.append(f"hidden by zoomout {m} (zoomin {m} to see it)")
            if any(op in _DELETIONS for op, _ in self._ops):
                why.append(("or " if why else "") + "removed by an earlier delete (reset to start over)")
            raise QueryError(f"{sel}: the captured graph has {len(found)} matching node(s) but this view does not: " + "; ".join(why or ["not in this view"])) from None

    def _one(self, sel: ast.Selector, what: str) -> int:
        hits = self._resolve(sel)
        if len(hits) > 1:
            sample = ", ".join(str(int(i)) for i in self.view.ids[hits[:5]])
            at = f" (line {sel.pos.line}, column {sel.pos.column})" if sel.pos.line else ""
            raise QueryError(f"{sel}{at} is ambiguous for {what}: it matches {len(hits)} nodes (ids {sample}…); "
                             "add conditions or `execution N`, or name one with `node ID`")
        return int(hits[0])

    def _view_result(self, stmt: ast.Statement, what: str) -> Result:
        zoomed = list(self.view.zoom)
        extra: dict[str, Any] = {"nodes": len(self.view), "edges": self.view.num_edges, "zoomed_out": zoomed}
        pending = ""
        if self._demand is not None:  # the view's size counts the invocations not replayed yet as one node each
            ids = np.fromiter(self._demand.pending(), dtype=np.int64)
            extra["not_replayed"] = k = int((self.view.lookup(ids) >= 0).sum()) if len(ids) else 0
            pending = f", {k} invocation(s) not replayed yet (each one node until an answer reaches into it)" if k else ""
        size = (len(self.view), self.view.num_edges)
        if self._partial is not None:  # the spark engine: the part read, and the rest of the graph as the zooms change it
            whole = self._partial.view_size(self.view, self.base)
            if whole is None:
                extra["scope"] = "read"
                pending = f" (the {self._partial.stats['sets']} connected set(s) read so far, not the whole view)"
            else:
                size = whole
                extra["nodes"], extra["edges"] = whole
        return Result(str(stmt), "view", graph=self.view, summary=f"{what}; view: {size[0]} nodes, {size[1]} edges"
                      + (f", zoomed out: {', '.join(zoomed)}" if zoomed else "") + pending, extra=extra)

    # ------------------------------------------------------------------ view-changing statements
    def _zoomout(self, stmt: ast.ZoomOut) -> Result:
        self.view = zoom_out(self.view, stmt.modules)
        self._ops.append(("zoomout", tuple(stmt.modules)))
        return self._view_result(stmt, f"zoomed out {', '.join(stmt.modules)}")

    def _zoomin(self, stmt: ast.ZoomIn) -> Result:
        mods = set(stmt.modules)
        for m in stmt.modules:
            if m not in self.view.zoom:
                raise QueryError(f"{stmt} (line {stmt.pos.line}): module {m!r} is not zoomed out in this view (zoomed out: {', '.join(self.view.zoom) or 'none'})")
        first = min(i for i, (op, arg) in enumerate(self._ops) if op == "zoomout" and mods & set(arg))
        if not any(op in _DELETIONS for op, _ in self._ops[first:]):
            self.view = zoom_in(self.view, stmt.modules)
            self._ops.append(("zoomin", tuple(stmt.modules)))
        else:  # a deletion ran on the zoomed view: redo it on the finer view
            ops = []
            for op, arg in self._ops:
                if op in ("zoomout", "zoomin"):
                    arg = tuple(m for m in arg if m not in mods)
                    if not arg:
                        continue
                ops.append((op, arg))
            self._replay(ops)
        return self._view_result(stmt, f"zoomed in {', '.join(stmt.modules)}")

    def _replay(self, ops: list[tuple[str, Any]]) -> None:
        view, inexact = self.base, None
        for op, arg in ops:
            if op == "zoomout":
                view = zoom_out(view, arg)
            elif op == "zoomin":
                view = zoom_in(view, arg)
            elif op == "recompute":  # a deletion with what its re-runs told (the ids they deleted, the values)
                seeds, known = arg
                r = delete(view, [i for i in seeds if view.contains(i)], known=dict(known))
                view = r.view
            else:
                missing = [i for i in arg if not view.contains(i)]
                if missing:
                    raise QueryError(f"cannot zoom in: an earlier delete removed zoomed-out node(s) {missing}; use reset and zoom first")
                r = delete(view, arg)
                at = view.lookup(np.array([c.node for c in r.conditions], dtype=np.int64))
                conditions = at[at >= 0]
                appeared = view.lookup(np.array([a.node for a in r.appeared], dtype=np.int64))
                inexact = _first_inexact(inexact, view.column("execution", conditions).tolist()
                                         + view.column("execution", appeared[appeared >= 0]).tolist() + [None] * int((appeared < 0).sum()))
                view = r.view  # with its what-if values
        self.view, self._ops, self._inexact_from = view, ops, inexact

    def _reset(self, stmt: ast.Reset) -> Result:
        self.view, self._ops, self._inexact_from = self.base, [], None
        return self._view_result(stmt, "back to the captured graph")

    def _delete(self, stmt: ast.Delete) -> Result:
        pos = self.view.by_id(np.unique(np.concatenate([self._resolve(s) for s in stmt.targets])))
        ids = self.view.ids[pos]
        before = self.view
        if stmt.recompute:
            rerunner = check_rerunner(self.rerunner, "delete … recompute")
            rc = recompute(self._recompute_base(stmt), ids, rerunner, until=stmt.until)
            return self._recomputed(stmt, before, [int(i) for i in ids], rc)
        r = delete(before, ids)
        self._pending = lambda: r.view
        self._ops.append(("delete", tuple(int(i) for i in ids)))
        return self._deletion_result(stmt, before, [int(i) for i in ids], r)

    def _update(self, stmt: ast.Update) -> Result:
        before = self.view
        target = stmt.target
        if not isinstance(target, ast.TupleSel) or target.kind != "tuple":
            raise QueryError(f"{stmt} (line {stmt.pos.line}): update changes base tuples: select them with tuple R(…) [in MODULE], not {target}")
        tokens = before.ids[before.by_id(self._resolve(target))]
        rerunner = check_rerunner(self.rerunner, "update")
        base = self._recompute_base(stmt)
        updates: dict[tuple[int, str], dict[str, dict[int, dict[str, Any]]]] = {}
        for t in tokens.tolist():
            for n, node, rel, p in readers(base, int(t)):
                updates.setdefault((n, node), {}).setdefault(rel, {})[p] = dict(stmt.assignments)
        if not updates:
            raise QueryError(f"{stmt} (line {stmt.pos.line}): no invocation read the selected tuple(s), so no value changes")
        rc = recompute(base, [], rerunner, updates=updates)
        return self._recomputed(stmt, before, [], rc, updated=[int(t) for t in tokens.tolist()])

    def _recompute_base(self, stmt: ast.Statement) -> GraphIndex:
        """The graph a recompute or update works on: the captured one, whatever is zoomed out (a
        zoomed-out invocation ran all the same, and may need to run again), after no deletion."""
        if any(op in _DELETIONS for op, _ in self._ops):
            raise QueryError(f"{stmt} (line {stmt.pos.line}): re-runs start from the captured graph, and this view holds an "
                             "earlier delete or update; reset first, or name every tuple in one delete … recompute")
        return self.base

    def _recomputed(self, stmt: ast.Statement, before: GraphIndex, ids: list[int], rc: Recomputed, *,
                    updated: list[int] | None = None) -> Result:
        """The answer of a what-if whose unknown values were found by re-running (:func:`recompute`,
        on the captured graph), shown on the view ``before`` (zooms included)."""
        seeds = tuple(ids) + tuple(rc.deleted)
        known = dict(rc.known)
        r = rc.result if before is rc.result.graph else delete(before, [i for i in seeds if before.contains(i)], known=known)
        self._pending = lambda: r.view
        self._ops.append(("recompute", (seeds, tuple(known.items()))))
        # the graph's own answer beside the recomputed one (an update has none: the graph holds no new value)
        graph = rc.graph if before is rc.graph.graph else delete(before, ids)
        graph_values = {c.node: c.after for c in graph.values} if updated is None else None
        res = self._deletion_result(stmt, before, ids, r, graph_values=graph_values, rerun={(x.execution, x.node) for x in rc.reruns},
                                    updated=updated)
        reruns = [{"execution": x.execution, "node": x.node, "seconds": round(x.seconds, 3)} for x in rc.reruns]
        appeared = [{"execution": n, "invoked_as": node, "relation": rel, "tuple": json.dumps(row, default=str)} for n, node, rel, row in rc.appeared]
        unresolved = [{"execution": n, "invoked_as": node, "why": why} for n, node, why in rc.unresolved]
        later = [{"execution": n, "invoked_as": node, "why": f"after execution {getattr(stmt, 'until', None)}, not asked to recompute"}
                 for n, node in rc.later]
        lines = [f"re-ran {len(reruns)} invocation(s) (--format json gives each one's seconds): "
                 + (", ".join(f"{x['node']} (execution {x['execution']})" for x in reruns[:6]) + (f" and {len(reruns) - 6} more" if len(reruns) > 6 else "")
                    if reruns else "none needed")]
        if appeared:
            lines.append(f"{len(appeared)} row(s) a re-run wrote that the run did not (listed under 'rows that appear'); what reads them was re-run with them")
        if later:
            lines.append(f"not re-run: {len(later)} invocation(s) after execution {getattr(stmt, 'until', None)} "
                         f"({', '.join(sorted({str(u['invoked_as']) for u in later}))}); their values are the graph's")
        if unresolved:
            lines.append("not exact: " + "; ".join(f"{u['invoked_as']} (execution {u['execution']}) not re-run: {u['why']}" for u in unresolved))
        if rc.ambiguous:
            lines.append(f"not exact: {len(rc.ambiguous)} value(s) a re-run wrote on rows alike in every other column, so which is which is not known")
        res.summary += "\n" + "\n".join(lines)
        res.extra.update({"exact": rc.exact, "reruns": reruns, "unresolved": unresolved + later, "appeared_rows": appeared})
        tables = res.extra["_tables"]
        if appeared:
            tables["rows that appear"] = (appeared, ["invoked_as", "relation", "execution", "tuple"])
        self._inexact_from = _first_inexact(None, [u["execution"] for u in unresolved + later] + ([None] if rc.ambiguous else []))
        return res

    def _deletion_result(self, stmt: ast.Statement, before: GraphIndex, ids: list[int], r: Any, *,
                         graph_values: dict[int, Any] | None = None, rerun: set[tuple[int, str]] | None = None,
                         updated: list[int] | None = None) -> Result:
        survivors, gone = r.surviving_output_positions, r.removed_output_positions
        out_cols = ["name", "module", "invoked_as", "execution"]
        values, conditions = [], []
        at = before.lookup(np.array([c.node for c in r.values], dtype=np.int64))
        described = node_rows(before, at) if len(at) else []
        feeds = _feeds(before, at[[d["op"] not in _CARRIED for d in described]]) if len(at) else {}
        undecided = {c.node for c in r.conditions}  # CONDITION nodes and a filter's per-row tests it cannot decide
        for c, d, p in zip(r.values, described, at.tolist()):
            row = {"node": c.node, "name": d["name"], "label": c.label, "op": d["op"], "module": d["module"], "execution": d["execution"],
                   "relation": d["relation"], "column": d["column"], "tuple": d["tuple"], "before": _plain(c.before), "after": _plain(c.after)}
            ran = (d["execution"], d.get("invoked_as") or d["module"])
            if graph_values is not None:
                row["graph"] = _plain(graph_values.get(c.node, c.before))
            if c.node in undecided:
                if rerun is not None and ran in rerun:
                    continue  # its invocation ran again: the rows it kept are the re-run's
                conditions.append({**row, "condition": True})
                continue
            if rerun is not None and row["after"] == "unknown" and ran in rerun and d["op"] not in _CARRIED:
                continue  # a value inside an invocation that ran again: what it wrote is known
            if p in feeds:  # a value inside a module: named by the output or state value it feeds
                row.update(feeds[p])
            values.append(row)
        unknown = any(v["after"] == "unknown" for v in values)
        # rows that appear (their partners in an anti/outer join or subtract deleted) were never
        # seen by the operations after them: like a condition over a changed value, from their execution on
        at_appeared = before.lookup(np.array([a.node for a in r.appeared], dtype=np.int64))
        self._inexact_from = _first_inexact(self._inexact_from, [c["execution"] for c in conditions]
                                            + before.column("execution", at_appeared[at_appeared >= 0]).tolist()
                                            + [None] * int((at_appeared < 0).sum()))
        appeared = [{"node": a.node, "tuple": json.dumps(a.row, default=str), "copies": a.copies} for a in r.appeared]
        what = f"deleted {len(ids)} node(s); " if updated is None else f"updated {len(updated)} tuple(s); "
        return Result(
            str(stmt), "delete", graph=before, removed=np.flatnonzero(r.removed),
            summary=what + f"{len(r.removed_ids)} removed in all; {len(gone)} output(s) removed, {len(survivors)} survive; {len(values)} value(s) changed"
            + ("\n(? : a value the graph cannot recompute — it passes through a black box)" if unknown else "")
            + (f"\nnot exact: {len(appeared)} row(s) an anti join, outer join or subtract kept out appear (their partners are deleted); "
               "the operations after it never saw them" if appeared else ""),
            extra={"deleted": ids, "removed": [int(i) for i in r.removed_ids], "exact": r.exact and not conditions,
                   **({"updated": updated} if updated is not None else {}),
                   "_tables": {"removed outputs": (node_rows(before, gone), out_cols),
                               "changed values": (values, ["name", "module", "execution", "before", "after"] + (["graph"] if graph_values is not None else [])),
                               "conditions": (conditions, ["name", "module", "execution"]),
                               "surviving outputs": (node_rows(before, survivors), out_cols),
                               **({"appeared rows": (appeared, ["node", "tuple", "copies"])} if appeared else {})},
                   "_changed": changed_by_tuple(values + conditions),
                   "_deletion": r},  # what a drawing of this answer shows (a recompute's values included)
        )

    # ------------------------------------------------------------------ reading statements
    def _nodes(self, stmt: ast.Statement, positions: np.ndarray, kind: str, what: str, focus: np.ndarray | None = None) -> Result:
        rows = node_rows(self.view, self.view.by_id(positions))
        shown = positions if focus is None else np.union1d(positions, focus)
        extra: dict[str, Any] = {}
        if focus is not None:  # what the answer is about: named first
            extra = {"_first": [int(i) for i in self.view.ids[focus]], "_of": node_rows(self.view, self.view.by_id(focus))[:ROW_LIMIT]}
        return Result(str(stmt), kind, rows=rows, summary=f"{len(rows)} {what}", columns=_NODE_COLS, graph=self.view, nodes=shown, extra=extra)

    def _show(self, stmt: ast.Show) -> Result:
        return self._edge_data(self._nodes(stmt, self._resolve(stmt.target), "nodes", "node(s)"))

    def _ancestors(self, stmt: ast.Ancestors) -> Result:
        seeds = self._resolve(stmt.target)
        return self._nodes(stmt, self.view.ancestors(seeds), "nodes", "ancestor(s)", seeds)

    def _descendants(self, stmt: ast.Descendants) -> Result:
        seeds = self._resolve(stmt.target)
        return self._nodes(stmt, self.view.descendants(seeds), "nodes", "descendant(s)", seeds)

    def _subgraph(self, stmt: ast.Subgraph) -> Result:
        target = self._one(stmt.target, "subgraph")
        pos = subgraph_positions(self.view, [target])
        es, ed = self.view.edges_among(pos)
        edges = [{"src": int(s), "dst": int(d)} for s, d in zip(self.view.ids[es].tolist(), self.view.ids[ed].tolist())]
        r = self._nodes(stmt, pos, "subgraph", "node(s)", np.array([target], dtype=np.int64))
        r.summary += f", {len(edges)} edge(s)"
        r.extra["edges"] = edges
        return r

    def _depends(self, stmt: ast.Depends) -> Result:
        targets = self._resolve(stmt.target)
        on = np.unique(np.concatenate([self._resolve(s) for s in stmt.on]))
        removed = propagate(self.view, on)
        rows = [{"node": int(self.view.ids[p]), "name": d["name"], "label": self.view.label(p), "module": d["module"], "execution": d["execution"],
                 "depends": bool(removed[p])} for p, d in zip(targets.tolist(), node_rows(self.view, targets))]
        n = int(removed[targets].sum())
        return Result(str(stmt), "depends", rows=rows, summary=f"{n} of {len(rows)} node(s) depend on it", columns=["name", "module", "execution", "depends"])

    def _polynomial(self, stmt: ast.Polynomial) -> Result:
        rows = []
        targets = self._resolve(stmt.target)
        for p, d in zip(targets.tolist(), node_rows(self.view, targets)):
            node = int(self.view.ids[p])
            try:
                expr = expanded(self.view, node) if stmt.expand else polynomial(self.view, node)
                text = str(expr)
            except SemiringError as err:  # an expansion or a text too large to write
                raise QueryError(f"{stmt} (line {stmt.pos.line}): {err}") from None
            rows.append({"node": node, "name": d["name"], "label": self.view.label(p), "module": d["module"], "execution": d["execution"],
                         "value": d["value"], "what_if": d.get("what_if"), "polynomial": text})
        return Result(str(stmt), "polynomial", rows=rows, columns=["name", "module", "execution", "value", "what_if", "polynomial"])

    def _checks(self, stmt: ast.Checks) -> Result:
        from lipspark.query.checks import select, what_if

        store = self._store(str(stmt))
        found = select(store, stmt.check, stmt.module, stmt.execution, what=str(stmt))
        deleted = any(op in _DELETIONS for op, _ in self._ops)
        rows: list[dict[str, Any]] = []
        for n, r in found:
            row: dict[str, Any] = {"execution": n, "node": r.node, "relation": r.relation, "check": r.name, "on": r.kind, "level": r.level,
                   "predicate": r.predicate, "verdict": r.verdict, "violations": r.violations}
            if deleted:
                row["what_if"] = what_if(self.view, store, r, self._inexact_from is None or n < self._inexact_from)
            rows.append(row)
        failing = [row for row in rows if row["verdict"] == "fails"]
        since = ""
        if stmt.check is not None and failing:  # since when does it fail (the last unbroken run of failures)
            runs = sorted({int(row["execution"]) for row in rows})
            bad = {int(row["execution"]) for row in failing}
            start = runs[-1]
            while start in bad and runs.index(start) > 0 and runs[runs.index(start) - 1] in bad:
                start = runs[runs.index(start) - 1]
            since = f"; fails since execution {start}" if runs[-1] in bad else f"; last failed in execution {max(bad)}"
        columns = ["execution", "node", "relation", "check", "on", "level", "verdict", "violations"] + (["what_if"] if deleted else [])
        return Result(str(stmt), "checks", rows=rows, columns=columns,
                      summary=f"{len(rows)} verdict(s), {len(failing)} failing{since}")

    def _blame(self, stmt: ast.Blame) -> Result:
        from lipspark.query.checks import blame

        targets = self._resolve(stmt.target)
        rows, per = blame(self.view, targets.tolist())
        summary = (f"{len(rows)} base tuple(s) behind {len(targets)} tuple(s): "
                   + (", ".join(f"{k} {v}" for k, v in sorted(per.items(), key=lambda kv: (-kv[1], kv[0]))) or "none"))
        return Result(str(stmt), "blame", rows=rows, columns=["token", "relation", "execution", "behind"], summary=summary,
                      extra={"relations": per})

    def _where(self, stmt: ast.Where) -> Result:
        from lipspark.errors import StoreError
        from lipspark.query.where import where_provenance

        where = f"{stmt} (line {stmt.pos.line})"
        if self.path is None:
            raise QueryError(f"{where}: where-provenance reads the column lineage a workflow store records; this session "
                             "was given a graph in memory: open it on the store's path, Session(\"graphs/NAME\")")
        targets = self._resolve(stmt.target)
        rows: list[dict[str, Any]] = []
        for p, d in zip(targets.tolist(), node_rows(self.view, targets)):
            try:
                found = where_provenance(self.view, self.path, int(self.view.ids[p]), stmt.column)
            except (QueryError, StoreError) as err:
                raise QueryError(f"{where}: {err}") from None
            rows += [{**r.to_dict(), "of": d["name"], "of_node": d["id"]} for r in found]
        rows.sort(key=lambda r: (r["of_node"], -1 if r["execution"] is None else r["execution"], r["relation"], r["tuple"], r["column"]))
        columns = (["of"] if len(targets) > 1 else []) + ["relation", "module", "execution", "tuple", "column", "value", "how", "description"]
        relations = sorted({r["relation"] for r in rows})
        summary = (f"{len(rows)} base value(s) from {len(relations)} relation(s)" + (f": {', '.join(relations)}" if relations else
                   f"; {stmt.column} is computed from no base column (a constant)") + (" (on a zoomed view: tuples a zoomout hides are not listed)" if self.view.zoom else ""))
        return Result(str(stmt), "where", rows=rows, summary=summary, columns=columns)

    def _semiring(self, stmt: ast.Evaluate) -> Semiring[Any] | None:
        """The semiring a statement names (None: probability); minmax/maxmin over its levels."""
        from lipspark.semiring import MaxMinSemiring, MinMaxSemiring, get_semiring, semiring_names

        name, where = stmt.semiring, f"{stmt} (line {stmt.pos.line})"
        if name in _LEVELLED:
            if not stmt.levels:
                raise QueryError(f"{where}: {name} needs its levels, lowest first: {name}(LEVEL < LEVEL < …), e.g. {name}(public < secret)")
            try:
                return (MinMaxSemiring if name == "minmax" else MaxMinSemiring)(stmt.levels)
            except SemiringError as err:
                raise QueryError(f"{where}: {err}") from None
        if stmt.levels:
            raise QueryError(f"{where}: only minmax and maxmin take levels; {name} does not (write `evaluate {name} …`)")
        if name == "probability":
            return None
        try:
            return get_semiring(name)
        except SemiringError as err:
            choices = ", ".join([*semiring_names(), "minmax(…)", "maxmin(…)", "probability"])
            raise QueryError(f"{where}: unknown semiring {name!r}; expected one of {choices}") from err

    def _evaluate(self, stmt: ast.Evaluate) -> Result:
        semiring = self._semiring(stmt)
        if semiring is None:
            return self._probability(stmt)
        mapping, default = self._valuation(stmt, lambda v, what=None: _coerce(semiring, v, stmt, what))
        rows = []
        targets = self._resolve(stmt.target)
        for p, d in zip(targets.tolist(), node_rows(self.view, targets)):
            node = int(self.view.ids[p])
            try:
                if default is _UNSET:
                    value = evaluate(self.view, node, semiring, mapping, without_delta=stmt.without_delta)
                else:
                    value = evaluate(self.view, node, semiring, mapping, default=default, without_delta=stmt.without_delta)
            except MissingValueError as err:
                raise _missing(stmt, "level" if stmt.semiring in (*_LEVELLED, "security") else "value", err.tokens) from None
            rows.append({"node": node, "name": d["name"], "label": self.view.label(p), "module": d["module"], "execution": d["execution"],
                         "value": _plain(value)})
        extra = {"_lineage": sorted(mapping)} if stmt.semiring == "lineage" else {}
        summary = f"in the {semiring} semiring" + (", δ as the identity" if stmt.without_delta else "")
        if stmt.without_delta and stmt.semiring == "counting":
            summary += " (the number of derivations)"
        return Result(str(stmt), "evaluate", rows=rows, summary=summary, columns=["name", "module", "execution", "value"], extra=extra)

    def _probability(self, stmt: ast.Evaluate) -> Result:
        from lipspark.semiring import probability

        mapping, default = self._valuation(stmt, lambda v, what=None: _coerce(None, v, stmt, what))
        rows = []
        targets = self._resolve(stmt.target)
        for p, d in zip(targets.tolist(), node_rows(self.view, targets)):
            expr = polynomial(self.view, int(self.view.ids[p]))
            given = {**dict.fromkeys(invocation_tokens(self.view, int(self.view.ids[p])), 1.0), **mapping}
            if default is _UNSET and isinstance(expr, Expr):
                missing = missing_tokens(expr, given)
                if missing:
                    raise _missing(stmt, "probability", missing)
            try:
                r = probability(expr, given, default=None if default is _UNSET else default,
                                samples=100_000 if stmt.samples is None else stmt.samples,  # `samples 0` is an error
                                seed=0 if stmt.seed is None else stmt.seed)
            except SemiringError as err:
                raise QueryError(f"{stmt} (line {stmt.pos.line}): {err}") from err
            rows.append({"node": int(self.view.ids[p]), "name": d["name"], "label": self.view.label(p), "module": d["module"], "execution": d["execution"],
                         "value": r.value, "method": r.method, "samples": r.samples, "stderr": r.stderr})
        return Result(str(stmt), "evaluate", rows=rows, summary="probability (independent tokens)",
                      columns=["name", "module", "execution", "value", "method", "samples", "stderr"])

    def _responsibility(self, stmt: ast.Responsibility) -> Result:
        """Shapley or Banzhaf values of the players for each target tuple's existence: its base
        tuples or invocations (or both); the other tokens present as captured (exogenous), unless
        `given` fixes them present or absent."""
        from lipspark.semiring import BOOLEAN, banzhaf, shapley, tokens

        where = f"{stmt} (line {stmt.pos.line})"
        fixed, default = self._valuation(stmt, lambda v, what=None: _coerce(BOOLEAN, v, stmt, what))
        if default is not _UNSET:
            raise QueryError(f"{where}: `given default = …` would fix every token, leaving no players; fix tokens by name "
                             f"(`given tuple REL(…) = true`, `given relation REL = false`, `given invocation M = true`)")
        g, measure = self.view, shapley if stmt.measure == "shapley" else banzhaf
        targets = self._resolve(stmt.target)
        described = node_rows(g, targets)
        rows: list[dict[str, Any]] = []
        zeros: list[dict[str, Any]] = []
        summaries = []
        for p, d in zip(targets.tolist(), described):
            node = int(g.ids[p])
            expr = polynomial(g, node)
            if g.is_v[p] or not isinstance(expr, Expr):
                raise QueryError(f"{where}: {d['name']} is a value, not a tuple; {stmt.measure} values say who is responsible for "
                                 f"a tuple's existence: select the tuple that carries it (e.g. `output REL …`, not `value COL of …`)")
            invocations = invocation_tokens(g, node)
            kinds = {"tuples": tokens(expr) - invocations, "invocations": invocations}
            players = sorted(t for k in stmt.players for t in kinds[k] if t not in fixed)
            exogenous = {t: True for t in tokens(expr) if t not in fixed and t not in players}
            try:
                r = measure(expr, players, {**exogenous, **fixed}, samples=10_000 if stmt.samples is None else stmt.samples,
                              seed=0 if stmt.seed is None else stmt.seed)  # `samples 0` is an error, not the default
            except SemiringError as err:
                raise QueryError(f"{where}: {err}") from err
            leaves = np.append(g.ancestors(p), p)
            leaves = leaves[np.isin(np.asarray(g.op)[leaves], (int(Op.TOKEN), int(Op.INVOCATION)))]
            who = {token_name(g, q): row for q, row in zip(leaves.tolist(), node_rows(g, leaves))}
            zero, ranked = 0, []
            for token, value in r.values.items():
                w = who.get(token, {})
                row = {"for": located(d), "node": int(g.ids[p]), "token": token, "name": w.get("name", token),
                       "kind": "invocation" if token in invocations else "tuple", "module": w.get("module"), "execution": w.get("execution"),
                       "value": float(f"{value:.12g}") if r.stderr is None else value,  # exact up to rounding
                       "stderr": None if r.stderr is None else r.stderr[token]}
                if row["value"] == 0:  # a null player (sampled: never decisive), listed in JSON, counted in text
                    zeros.append(row)
                    zero += 1
                else:
                    ranked.append(row)
            rows += sorted(ranked, key=lambda row: (-row["value"], row["token"]))  # ties as written, after rounding
            what = (" and ".join({"tuples": "base tuples", "invocations": "invocations"}[k] for k in stmt.players) if r.players != 1
                    else " or ".join({"tuples": "base tuple", "invocations": "invocation"}[k] for k in stmt.players))
            how = "exact" if r.samples is None else f"sampled, {r.samples} {'orders' if stmt.measure == 'shapley' else 'worlds'} (value ± stderr)"
            summaries.append(f"{stmt.measure} values of {r.players} {what} for {located(d)}: {how}"
                             + (f"; {zero} of them 0, not listed (--format json lists them)" if zero else ""))
        others = [k for k in ("tuples", "invocations") if k not in stmt.players]
        if others:
            summaries.append(f"({' and '.join('base tuples' if k == 'tuples' else 'invocations' for k in others)} present as captured: exogenous)")
        columns = (["for"] if len(targets) > 1 else []) + ["name", "module", "execution", "value", "stderr"]
        return Result(str(stmt), "responsibility", rows=rows, summary="\n".join(summaries), columns=columns,
                      extra={"_ranked": True, "zero": zeros})

    def _valuation(self, stmt: ast.Evaluate | ast.Responsibility, coerce: Any) -> tuple[dict[str, Any], Any]:
        """Token → value from the statement's ``given`` items, in order (a later one wins), and
        the ``default`` (``_UNSET`` when none is given)."""
        mapping: dict[str, Any] = {}
        default: Any = _UNSET
        g = self.view
        for a in stmt.given:
            if isinstance(a, ast.TupleColumn):
                try:
                    values = provenance_mapping(g, a.relation, a.column)
                except QueryError as err:
                    raise QueryError(f"{a} (line {a.pos.line}): {err}") from None
                for token, v in values.items():
                    mapping[token] = coerce(v, f"token {token!r} has {a.column} = {v!r}")
                continue
            value = coerce(a.value)
            if isinstance(a.target, ast.DefaultRef):
                default = value
            elif isinstance(a.target, ast.RelationRef):
                hits = np.flatnonzero(g.where("relation", [a.target.name]) & (np.asarray(g.op) == Op.TOKEN))
                if not len(hits):
                    raise QueryError(f"{a} (line {a.pos.line}): no base tuples of relation {a.target.name!r} in this view")
                for p in hits.tolist():
                    mapping[token_name(g, p)] = value
            else:
                try:
                    hits = resolve(g, a.target)
                except NoSuchColumn as err:
                    raise QueryError(f"{err.found}; to give each base tuple the value of one of its columns, write "
                                     f"`given tuple {err.relation}.COLUMN` (the column must be one the tuples keep)") from None
                for p in hits.tolist():
                    if len(g.children(p)):
                        raise QueryError(f"{a} (line {a.pos.line}): `given` values base tuples and invocations; node {int(g.ids[p])} "
                                         f"({g.label(p)}) is derived; to give each base tuple the value of one of its columns, "
                                         f"write `given tuple REL.COLUMN`")
                    mapping[token_name(g, p)] = value
        return mapping, default

    def _culprits(self, stmt: ast.Culprits) -> Result:
        """The crash report the store keeps of a failed execution (lipspark.store.failures)."""
        import os

        from lipspark.errors import StoreError
        from lipspark.store.failures import failed_executions, read_report

        if self.path is None:
            raise QueryError(f"{stmt} (line {stmt.pos.line}): crash reports are kept in a workflow store; open the session on its directory")
        root = self.path
        if os.path.basename(os.path.normpath(root)) == "provenance" and not os.path.isdir(os.path.join(root, "failures")):
            root = os.path.dirname(os.path.normpath(root))  # a deferred store's graph: its reports are the store's
        if stmt.execution is None and not failed_executions(root):  # nothing failed: an empty answer, not an error
            return Result(str(stmt), "culprits", summary="no execution has failed in this store: it keeps no crash report")
        try:
            report = read_report(root, stmt.execution)
        except StoreError as err:
            raise QueryError(f"{stmt} (line {stmt.pos.line}): {err}") from None
        rows = [{"relation": c.relation, "values": dict(c.values), "polynomial": c.polynomial, "tokens": list(c.tokens),
                 "stored": dict(c.stored)} for c in report.culprits]
        data = report.to_json()
        data.pop("culprits")
        n = len(report.culprits)
        return Result(str(stmt), "culprits", rows=rows, summary=f"{n} culprit row(s) of execution {report.execution}",
                      extra={"report": data, "_lines": lambda ids=False, limit=None: report.text(limit=limit, store=root).splitlines()})

    def _sample(self, stmt: ast.Sample) -> Result:
        """The first k tuples by stored position (node id) of a module's relation in one execution."""
        g = self.view
        found = [np.asarray(resolve(g, ast.TupleSel(kind, stmt.relation, (), stmt.module, stmt.execution)))
                 for kind in ("input", "state", "output") if _matches(g, kind, stmt)]
        if not found:
            raise QueryError(f"{stmt} (line {stmt.pos.line}): module {stmt.module!r} has no input, state or output relation "
                             f"{stmt.relation!r} in execution {stmt.execution}; `show invocation {stmt.module} execution "
                             f"{stmt.execution}` lists what it read and wrote")
        positions = np.unique(np.concatenate(found))
        total = len(positions)
        chosen = g.by_id(positions)[: stmt.k]
        rows = node_rows(g, chosen)
        for p, row in zip(chosen.tolist(), rows):
            row["polynomial"] = str(polynomial(g, int(g.ids[p])))
        return Result(str(stmt), "nodes", rows=rows, summary=f"{len(rows)} of {total} tuple(s)", graph=g, nodes=chosen,
                      columns=["name", "module", "execution", "polynomial"], extra={"_ranked": True, "total": total})

    def _diff(self, stmt: ast.Diff) -> Result:
        try:
            d = diff(self.view, stmt.relation, stmt.before, stmt.after, kind=stmt.kind, module=stmt.module,
                     conditions=stmt.conditions, on=stmt.on or None)
        except QueryError as err:
            raise QueryError(f"{stmt} (line {stmt.pos.line}): {err}") from None
        data = d.to_dict()
        rows = data.pop("tuples")
        data["relation"] = {"kind": data.pop("kind"), "name": data["relation"], "module": data.pop("module")}
        data["executions"] = [data.pop("before"), data.pop("after")]
        return Result(str(stmt), "diff", rows=rows, summary=d.summary(), extra={**data, "_lines": d.lines})


#: The handler of each statement type (every statement of :mod:`lipspark.query.ast`).
def _first_inexact(before: int | None, condition_executions: list[Any]) -> int | None:
    """The first execution whose rows a deletion may have got wrong, with ``before`` from earlier
    ones: a condition that read a changed value may keep or drop other rows than a re-run, from its
    own execution on (rows of earlier executions cannot depend on it; one of no execution: all).
    Values a deletion made unknown are another matter: the rows holding them say so themselves."""
    if not condition_executions:
        return before
    found = [int(e) for e in condition_executions if e is not None]
    now = min(found) if len(found) == len(condition_executions) else 0
    return now if before is None else min(before, now)


#: Which way a statement's answer reaches into the graph (:meth:`Session._refine`): a backward
#: trace from its ``target``, a forward one from its ``target``, ``targets`` or ``on``, both
#: (a subgraph: its nodes' children are reached from above or below, never through a pending
#: node, whose writes are reached only through it); the
#: pending nodes of the modules it zooms in; none; the whole view (``view``: when something is
#: zoomed out, whose data on the edges it shows); statements not listed read the whole view.
_DEMAND: dict[type, str] = {
    ast.ZoomOut: "none", ast.Reset: "none", ast.Checks: "none", ast.Culprits: "none", ast.ZoomIn: "zoomin",
    ast.Show: "view", ast.Ancestors: "backward", ast.Subgraph: "both", ast.Polynomial: "backward",
    ast.Evaluate: "backward", ast.Responsibility: "backward", ast.Blame: "backward", ast.Where: "backward",
    ast.Descendants: "forward", ast.Delete: "forward_targets", ast.Update: "forward", ast.Depends: "on",
}

_HANDLERS: dict[type, Callable[[Session, Any], Result]] = {
    ast.ZoomOut: Session._zoomout,
    ast.ZoomIn: Session._zoomin,
    ast.Reset: Session._reset,
    ast.Delete: Session._delete,
    ast.Update: Session._update,
    ast.Show: Session._show,
    ast.Ancestors: Session._ancestors,
    ast.Descendants: Session._descendants,
    ast.Subgraph: Session._subgraph,
    ast.Depends: Session._depends,
    ast.Polynomial: Session._polynomial,
    ast.Evaluate: Session._evaluate,
    ast.Diff: Session._diff,
    ast.Responsibility: Session._responsibility,
    ast.Where: Session._where,
    ast.Culprits: lambda s, stmt: s._culprits(stmt),
    ast.Sample: lambda s, stmt: s._sample(stmt),
    ast.Checks: Session._checks,
    ast.Blame: Session._blame,
}


#: ``default`` when a statement gives none (None is a value: the zero of a level semiring)
_UNSET: Any = object()


#: the semirings written with their levels, ``minmax(a < b < c)``
_LEVELLED = ("minmax", "maxmin")


def _coerce(semiring: Semiring[Any] | None, v: Any, stmt: ast.Evaluate | ast.Responsibility, what: str | None = None) -> Any:
    """A value the statement gives a token (``what``: where it comes from, for a column's
    value), as the semiring's element (``semiring`` None: a probability)."""
    where = f"{stmt} (line {stmt.pos.line})" + (f": {what}" if what else "")
    if semiring is None:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
            raise QueryError(f"{where}: a probability is a number between 0 and 1, found {v!r}")
        return float(v)
    try:
        return semiring.coerce(v)
    except SemiringError as err:
        raise QueryError(f"{where}: {err}") from None


def _missing(stmt: ast.Evaluate, what: str, names: tuple[str, ...]) -> QueryError:
    """The tokens a statement gives no value: an error naming them and the ways to give one."""
    return QueryError(f"{stmt} (line {stmt.pos.line}): no {what} for {len(names)} token(s): {describe_tokens(names)}; "
                      f"give them one with `given tuple REL.COLUMN`, `given relation REL = V` or `given token \"{names[0]}\" = V`, "
                      f"or give every token not named `default = V` (a {what} is never guessed)")


def _matches(g: GraphIndex, kind: str, stmt: ast.Sample) -> bool:
    """Whether ``kind relation of module execution`` selects anything in ``g``."""
    try:
        return len(resolve(g, ast.TupleSel(kind, stmt.relation, (), stmt.module, stmt.execution))) > 0  # type: ignore[arg-type]
    except QueryError:
        return False
