"""The query engines: a store's graph in this process, or read by Spark a connected set at a time.

:func:`open_session` opens a query :class:`~lipspark.query.Session` on a store with one of
:data:`ENGINES`: ``memory`` (the store's query-ready index, memory-mapped), ``spark`` or ``auto``
(``spark`` for a graph of :data:`AUTO_EDGES` edges or more). ``lipspark query --engine`` is this.

The Spark engine (:class:`SparkGraph`) answers the query language without loading the graph:
the store's partitioned tables (:mod:`lipspark.graph.partitions`, Parquet partitioned by
connected set) are read by Spark, and a statement reads the sets its answer can reach —

1. its selectors are resolved by Spark jobs over the node tables (a filter on the segments the
   selector can name: a relation in an execution and a module, a column, the invocations; a node
   id or a token label anywhere), giving the seed nodes and their sets;
2. the seeds' sets are closed: merged sets (union–find), the sets an invocation node has edges
   into when the seed is one, and, while modules are zoomed out, the sets a zoomed invocation
   joins (its inputs' and outputs');
3. the nodes and edges of those sets (and the invocation nodes with edges into them) are read by
   a Spark job filtering the Parquet files on ``set`` — the files of the blocks holding them, the
   row groups holding them — and indexed in memory;
4. the statement runs on that graph (the query layer's own statements), with the session's zooms
   and deletions applied again whenever it grew.

Because every answer — a trace either way, a polynomial or semiring evaluation, a deletion and
the values it changes — lies inside the sets of its seeds (an edge never joins two sets but
through an invocation node, and those are leaves), answers are the in-memory engine's, node for
node (``tests/test_engines.py``). What a statement reads is its sets, not the graph.

The size of the view a ``zoomout``, ``zoomin`` or ``reset`` reports is the whole view's: the
part read, plus the rest of the graph as the view's zooms change it (:func:`zoom_deltas`).
Statements that read stored relations and records rather than the graph (``diff``,
``culprits``, ``sample``, ``checks``, ``where``) and those that re-run invocations (``update``,
``delete … recompute``) are refused in one line naming ``--engine memory``.

It sits beside the query layer, not in it: the query layer never imports Spark, and this module
hands a :class:`SparkGraph` to a :class:`~lipspark.query.Session` as a deferred store's
:class:`~lipspark.workflow.ondemand.DeferredGraph` is handed to one.
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Iterable, Sequence

import numpy as np
import pandas as pd

from lipspark.errors import QueryError
from lipspark.graph.attrs import NODE_TYPES
from lipspark.graph.index import GraphIndex
from lipspark.graph.partitions import Partitions, set_block
from lipspark.query import ast
from lipspark.query.engine import Session
from lipspark.vocabulary import Op

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["SparkGraph", "UNSUPPORTED", "selectors_of", "open_session", "ENGINES", "AUTO_EDGES", "graph_edges", "zoom_deltas"]

#: the query engines :func:`open_session` opens a store with
ENGINES = ("memory", "spark", "auto")
#: ``auto`` reads a graph of at least this many edges with Spark
AUTO_EDGES = 50_000_000


def graph_edges(path: str) -> int:
    """The number of edges the store at ``path`` records in its query-ready index or its
    partitioned tables (0 when it has neither yet): what ``auto`` decides by, read from their
    JSON records without mapping anything."""
    import os

    for where in ("index", "partitions", os.path.join("provenance", "index"), os.path.join("provenance", "partitions")):
        name = "partitions.json" if where.endswith("partitions") else "index.json"
        try:
            with open(os.path.join(path, where, name)) as fh:
                blocks = json.load(fh).get("blocks", [])
        except (OSError, ValueError):
            continue
        if name == "partitions.json":
            return sum(int(b["edges"]) for b in blocks)
        return int(blocks[-1]["edges"]) if blocks else 0
    return 0


def open_session(path: str, *, engine: str = "memory", spark: "SparkSession | None" = None, master: str | None = None,
                 rerun: Any = None) -> Session:
    """A query session on the store at ``path`` answered by ``engine`` (see :data:`ENGINES`);
    ``spark``: the session the spark engine reads with (default: :func:`lipspark.get_spark` on
    ``master``); ``rerun`` as for :class:`~lipspark.query.Session` (the memory engine only).

    >>> open_session("graphs/x", engine="gpu")
    Traceback (most recent call last):
    ...
    lipspark.errors.QueryError: unknown query engine 'gpu': expected one of memory, spark, auto
    """
    if engine not in ENGINES:
        raise QueryError(f"unknown query engine {engine!r}: expected one of {', '.join(ENGINES)}")
    if engine == "spark" or (engine == "auto" and graph_edges(path) >= AUTO_EDGES):
        return Session(SparkGraph(path, spark=spark, master=master))
    return Session(path, rerun=rerun)

#: statements the Spark engine refuses, with why
UNSUPPORTED: dict[type, str] = {
    ast.Diff: "it compares stored relations", ast.Culprits: "it reads a crash report", ast.Sample: "it reads a stored relation",
    ast.Checks: "it reads the checks' verdicts", ast.Where: "it reads the store's column lineage",
    ast.Update: "it re-runs invocations",
}
_SEG_COLUMNS = ("execution", "invocation", "relation", "module", "node", "column")
_NO_NODES = pd.DataFrame({c: [] for c in ("id", "set", "is_v", "op", "type", "seg", "label", "value", "tuple")})
_TYPES = np.array([None if t == "" else t for t in NODE_TYPES], dtype=object)


def selectors_of(stmt: ast.Statement) -> list[ast.Selector]:
    """The selectors a statement starts from."""
    out: list[ast.Selector] = []
    for name in ("target", "targets", "on"):
        v = getattr(stmt, name, None)
        if v is None:
            continue
        out.extend(v if isinstance(v, tuple) else [v])
    return out


def _in(col: str, values: Iterable[Any]) -> str:
    """``col IN (…)`` as SQL text: one call into the JVM, where ``Column.isin`` makes one per
    value (1.4 s for 1,844 sets)."""
    ints = sorted({int(v) for v in values})
    return f"`{col}` IN ({', '.join(map(str, ints))})" if ints else "false"


class SparkGraph:
    """The graph of the store at ``path``, read by Spark a connected set at a time.

    ``spark``: the session to read with (default: :func:`lipspark.get_spark`, local unless
    ``master`` names a cluster). The partitioned tables are made (or brought up to date) first if
    this process can write the store.
    """

    def __init__(self, path: str, *, spark: SparkSession | None = None, master: str | None = None) -> None:
        self.path = path
        self.parts = Partitions.open(path)
        self._spark = spark
        self._master = master
        #: the segment and invocation tables of the blocks read so far (small files, read with
        #: pyarrow when a block is first needed: a statement names a relation, a module, an
        #: execution its record lists, or reads sets the block holds)
        self._seg_tables: dict[int, pd.DataFrame] = {}
        self._inv_tables: dict[int, pd.DataFrame] = {}
        self._segments: pd.DataFrame | None = None
        self._nodes: list[pd.DataFrame] = []
        self._edges: list[pd.DataFrame] = []
        self._sets = np.zeros(0, dtype=np.int64)  # the sets read so far (sorted)
        self._graph: GraphIndex | None = None
        self._outputs: pd.DataFrame | None = None  # every output p-node (a deletion lists those that survive)
        #: Spark jobs run, sets and rows read (what a benchmark reports)
        self.stats: dict[str, int] = {"jobs": 0, "sets": 0, "nodes": 0, "edges": 0}

    # ------------------------------------------------------------------ the small tables, a block at a time
    def _blocks(self, blocks: Iterable[int], kind: str, into: dict[int, pd.DataFrame]) -> pd.DataFrame:
        import pyarrow.parquet as pq

        want = sorted(set(int(b) for b in blocks))
        for b in want:
            if b not in into:
                into[b] = pq.read_table(self.parts.files(kind, [b])[0]).to_pandas()
                if kind == "segments":
                    self._segments = None
        frames = [into[b] for b in want]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    @property
    def segments(self) -> pd.DataFrame:
        """The segment table of the blocks read so far, by segment number (every block's after
        :meth:`all_segments`)."""
        if self._segments is None:
            frames = [self._seg_tables[b] for b in sorted(self._seg_tables)]
            seg = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame({c: [] for c in ["seg", *_SEG_COLUMNS]})
            self._segments = seg.set_index("seg", drop=False)
        return self._segments

    def all_segments(self) -> pd.DataFrame:
        """Every block's segment table (what an error names: every relation, every module)."""
        self._blocks(range(len(self.parts.blocks)), "segments", self._seg_tables)
        return self.segments

    def _blocks_naming(self, **conds: Any) -> list[int]:
        """The blocks whose record names what ``conds`` ask for (a relation, a column, an
        execution, a module or workflow node); every block for a record without names."""
        out = []
        for b, blk in enumerate(self.parts.blocks):
            names = blk.get("names")
            if names is None:
                out.append(b)
                continue
            ok = True
            for c, v in conds.items():
                values = list(v) if isinstance(v, (list, tuple, set)) else [v]
                if c == "module_or_node":
                    ok &= bool(set(values) & (set(names["module"]) | set(names["node"])))
                else:
                    ok &= bool(set(values) & set(names[c]))
            if ok:
                out.append(b)
        return out

    # ------------------------------------------------------------------ Spark
    @property
    def spark(self) -> SparkSession:
        if self._spark is None:
            from lipspark.session import get_spark

            self._spark = get_spark(app_name="lipspark-query", master=self._master) if self._master else get_spark(app_name="lipspark-query")
        return self._spark

    def _read(self, kind: str, blocks: Sequence[int] | None, where: Any, columns: Sequence[str] | None = None) -> pd.DataFrame:
        files = self.parts.files(kind, blocks)
        if not files:
            return pd.DataFrame(columns=list(columns or []))
        df: DataFrame = self.spark.read.parquet(*files).where(where)
        if columns is not None:
            df = df.select(*columns)
        self.stats["jobs"] += 1
        return df.toArrow().to_pandas()

    # ------------------------------------------------------------------ the graph read so far
    def graph(self) -> GraphIndex:
        """The nodes and edges of the sets read so far, indexed."""
        if self._graph is None:
            extra = []
            if self._outputs is not None:  # outputs of sets not read: nodes without edges (no deletion reaches them)
                extra = [self._outputs[~self._outputs["set"].isin(self._sets)]]
            self._graph = _index([*self._nodes, *extra], self._edges, self.segments)
        return self._graph

    def extend(self, stmt: ast.Statement, zoomed: Iterable[str]) -> GraphIndex | None:
        """Read the sets ``stmt``'s answer can reach that are not read yet, given the modules
        ``zoomed`` out in the view; the graph if it grew, else None."""
        _ = self.spark  # started before any column expression is built (pyspark needs an active context)
        if type(stmt) in UNSUPPORTED or (isinstance(stmt, ast.Delete) and stmt.recompute):
            why = UNSUPPORTED.get(type(stmt), "it re-runs invocations")
            raise QueryError(f"{stmt}: the spark engine does not answer this statement ({why}); run it with --engine memory")
        zoomed = set(zoomed)
        seeds: list[np.ndarray] = []
        if isinstance(stmt, ast.ZoomOut):  # every invocation node (their own sets), and what the zoomed ones join
            zoomed |= set(stmt.modules)
            seeds.append(self._invocations()["set"].to_numpy(dtype=np.int64))
        if zoomed:
            seeds.append(self._sets)
        for sel in selectors_of(stmt):
            seeds.append(self.seed_sets(sel))
        grew = False
        if isinstance(stmt, ast.Delete) and self._outputs is None:
            self._outputs = self._read("nodes", None, f"`type` = {NODE_TYPES.index('o')} AND NOT `is_v`")
            self.all_segments()  # the surviving outputs are listed with their modules and executions
            self._graph, grew = None, True
        sets = self._closure(np.unique(np.concatenate(seeds)), zoomed) if seeds else np.zeros(0, dtype=np.int64)
        new = np.setdiff1d(sets, self._sets)
        if len(new):
            self._load(new)
            grew = True
        return self.graph() if grew else None

    def _invocations(self) -> pd.DataFrame:
        """Every invocation node: a ZoomOut names its modules' invocations, and says which
        modules there are when one has none (a few per execution, read with pyarrow)."""
        every = range(len(self.parts.blocks))
        self._blocks(every, "segments", self._seg_tables)
        return self._blocks(every, "invocations", self._inv_tables)

    def view_size(self, view: GraphIndex, base: GraphIndex) -> tuple[int, int] | None:
        """The size (nodes, edges) of the whole graph's view that ``view`` (of the sets read,
        ``base``) is the part of: the rest of the graph, as the view's zooms change it, added
        (see :func:`zoom_deltas`); None when the zooms' changes are not known."""
        from lipspark.query.zoom import zoom_out

        nodes, edges = len(view) + self.parts.nodes - len(base), view.num_edges + self.parts.edges - base.num_edges
        if not view.zoom:
            return nodes, edges
        full = zoom_deltas(self.path, self.parts)
        if full is None:
            return None
        for m in view.zoom:
            if full.get(m) is None:
                return None
            z = zoom_out(base, [m])
            nodes += int(full[m][0]) - (len(z) - len(base))
            edges += int(full[m][1]) - (z.num_edges - base.num_edges)
        return nodes, edges

    # ------------------------------------------------------------------ selectors
    def seed_sets(self, sel: ast.Selector) -> np.ndarray:
        """The sets of the nodes ``sel`` may select (a superset: the statement resolves it again
        on the graph read, in its view), with those of the invocation nodes' targets."""
        from lipspark.query.selector import resolve

        _ = self.spark
        cand = self._candidates(sel)
        g = _index([cand, self._witnesses(names_only=True)], [], self.segments)
        try:
            pos = resolve(g, sel)
        except QueryError:
            # narrowed to the selector's execution and module, the candidates may lack what an
            # error names (where else the relation is, which relations there are): resolved again
            # on all of the relation's nodes and a witness per segment, it fails as on the whole
            # graph, or finds what the narrowing missed
            cand = self._candidates(sel, narrow=False)
            g = _index([cand, self._witnesses()], [], self.segments)
            pos = resolve(g, sel)
        ids = np.asarray(g.ids[pos], dtype=np.int64)
        ids = ids[np.isin(ids, cand["id"].to_numpy(dtype=np.int64))]
        hit = cand[cand["id"].isin(ids)]
        sets = hit["set"].to_numpy(dtype=np.int64)
        hubs = hit.loc[hit["op"] == int(Op.INVOCATION), "id"].to_numpy(dtype=np.int64)
        if len(hubs):
            sets = np.concatenate([sets, self._hub_targets(hubs)])
        return np.unique(sets)

    def _segs(self, **conds: Any) -> np.ndarray:
        s = self._blocks(self._blocks_naming(**conds), "segments", self._seg_tables)
        if not len(s):
            return np.zeros(0, dtype=np.int64)
        mask = np.ones(len(s), dtype=bool)
        for c, v in conds.items():
            if c == "module_or_node":  # `in M`: a module, or a workflow node running one
                mask &= (s["module"] == v).to_numpy() | (s["node"] == v).to_numpy()
                continue
            values = list(v) if isinstance(v, (list, tuple, set)) else [v]
            hit = s[c].isin([x for x in values if x is not None]).to_numpy()
            if None in values:
                hit |= s[c].isna().to_numpy()
            mask &= hit
        return s["seg"].to_numpy(dtype=np.int64)[mask]

    def _blocks_of_segs(self, segs: np.ndarray) -> list[int]:
        """The blocks whose files hold nodes of segments ``segs`` (segments are numbered per block)."""
        return [b for b, t in sorted(self._seg_tables.items()) if np.isin(t["seg"].to_numpy(dtype=np.int64), segs).any()]

    def _candidates(self, sel: ast.Selector, *, narrow: bool = True) -> pd.DataFrame:
        """Nodes ``sel`` may select: read by a Spark job filtering on what the selector names
        (``narrow``: on its execution and module too)."""
        from pyspark.sql import functions as F

        if isinstance(sel, ast.NodeSel):
            return self._read("nodes", None, f"`id` = {int(sel.id)}")
        if isinstance(sel, ast.IdsSel):
            return self._read("nodes", None, _in("id", sel.ids))
        if isinstance(sel, ast.TokenSel):
            rel = sel.label.split(":", 1)[0]
            segs = self._segs(relation=rel)
            where = (F.col("label") == sel.label) & (F.col("op") == int(Op.TOKEN))  # a Column: the label is not SQL text
            if len(segs):
                where = where & F.expr(_in("seg", segs))
            return self._read("nodes", self._blocks_of_segs(segs) if len(segs) else None, where)
        if isinstance(sel, ast.InvocationSel):
            return self._invocations()
        if isinstance(sel, ast.TupleSel):
            segs = self._segs(**self._narrowing(sel)) if narrow else self._segs(relation=sel.relation)
            if not len(segs):
                return _NO_NODES
            return self._read("nodes", self._blocks_of_segs(segs), _in("seg", segs))
        if isinstance(sel, ast.ValueSel):
            base = self._candidates(sel.of, narrow=narrow)
            by = self._narrowing(sel.of) if narrow and isinstance(sel.of, ast.TupleSel) else {}
            segs = self._segs(column=sel.column, **{k: v for k, v in by.items() if k == "execution"})
            vals = self._read("nodes", self._blocks_of_segs(segs), _in("seg", segs)) if len(segs) else _NO_NODES
            return pd.concat([base, vals], ignore_index=True).drop_duplicates("id") if len(vals) else base
        raise QueryError(f"{sel}: the spark engine cannot resolve a {type(sel).__name__}")

    def _narrowing(self, sel: ast.TupleSel) -> dict[str, Any]:
        """What the segments of the nodes ``sel`` can select share: its relation, its execution
        (and none, for base tuples: a module's initial state), its module or workflow node."""
        out: dict[str, Any] = {"relation": sel.relation}
        if sel.execution is not None:
            out["execution"] = [sel.execution, None] if sel.kind == "tuple" else [sel.execution]
        if sel.module is not None:
            out["module_or_node"] = sel.module
        return out

    def _witnesses(self, *, names_only: bool = False) -> pd.DataFrame:
        """One node per segment, selected by no selector (op ·, a p-node, no type), so that what a
        selector asks of the whole graph — which relations and modules there are, whether a name
        is a module or a workflow node — is answered as on the whole graph. ``names_only``: one
        per distinct module and workflow node (what a selector that matches asks: ``in M``)."""
        if names_only:  # from the blocks' records: no segment table read
            mods = sorted({m for b in self.parts.blocks for m in b.get("names", {}).get("module", [])})
            wnodes = sorted({m for b in self.parts.blocks for m in b.get("names", {}).get("node", [])})
            if not any("names" in b for b in self.parts.blocks):
                self.all_segments()
                mods = sorted({str(m) for m in self.segments["module"].dropna().tolist()})
                wnodes = sorted({str(m) for m in self.segments["node"].dropna().tolist()})
            attrs = pd.DataFrame({"module": [*mods, *[None] * len(wnodes)], "node": [*[None] * len(mods), *wnodes]})
        else:
            attrs = self.all_segments()[list(_SEG_COLUMNS)].reset_index(drop=True)
        n = len(attrs)
        out = pd.DataFrame({"id": np.iinfo(np.int64).min + np.arange(n, dtype=np.int64), "set": -1, "is_v": False,
                            "op": np.int8(int(Op.TIMES)), "type": np.int8(0), "seg": -1 - np.arange(n, dtype=np.int64),
                            "label": None, "value": None, "tuple": None})
        for c in _SEG_COLUMNS:  # their attributes, by the negative segment numbers _index reads them with
            out["_" + c] = attrs[c].to_numpy(dtype=object) if c in attrs else None
        return out

    # ------------------------------------------------------------------ sets
    def _hub_targets(self, hubs: np.ndarray) -> np.ndarray:
        if not len(hubs):
            return np.zeros(0, dtype=np.int64)
        t = self._read("hubs", None, _in("hub", hubs), ["set"])
        return t["set"].to_numpy(dtype=np.int64)

    def _closure(self, sets: np.ndarray, zoomed: set[str]) -> np.ndarray:
        sets = self.parts.members(sets) if len(sets) else sets
        if not zoomed or not len(sets):
            return sets
        segs = self._blocks(self._blocks_naming(module_or_node=sorted(zoomed)), "segments", self._seg_tables)
        inv = segs.loc[segs["module"].isin(zoomed) | segs["node"].isin(zoomed), "invocation"].dropna().astype("int64").unique() \
            if len(segs) else []
        if not len(inv):
            return sets
        pairs = self._read("hubs", None, _in("hub", inv), ["hub", "set"])
        hub = pairs["hub"].to_numpy(dtype=np.int64)
        tgt = pairs["set"].to_numpy(dtype=np.int64)
        rep_t = self.parts.representative(tgt)
        while True:  # a zoomed invocation touching the sets joins all the sets it touches
            have = self.parts.representative(sets)
            touching = np.unique(hub[np.isin(rep_t, have)])
            more = np.setdiff1d(self.parts.members(tgt[np.isin(hub, touching)]), sets)
            if not len(more):
                return sets
            sets = np.union1d(sets, more)

    def _load(self, sets: np.ndarray) -> None:
        from concurrent.futures import ThreadPoolExecutor

        blocks = np.unique(set_block(sets)).tolist()
        with ThreadPoolExecutor(2) as pool:  # two Spark jobs at once: the nodes and the edges of the sets
            fn = pool.submit(self._read, "nodes", blocks, _in("set", sets))
            fe = pool.submit(self._read, "edges", blocks, _in("set", sets), ["src", "dst"])
            nodes, edges = fn.result(), fe.result()
        self._sets = np.union1d(self._sets, sets)
        self._blocks(blocks, "segments", self._seg_tables)
        # the invocation nodes with edges into these sets (each a set of its own, in the block of the nodes they point at)
        srcs = np.unique(edges["src"].to_numpy(dtype=np.int64))
        known = np.concatenate([nodes["id"].to_numpy(dtype=np.int64), *[p["id"].to_numpy(dtype=np.int64) for p in self._nodes]])
        missing = np.setdiff1d(srcs, known)
        if len(missing):
            inv = self._blocks(blocks, "invocations", self._inv_tables)
            hubs = inv[inv["id"].isin(missing)]
            if len(hubs) != len(missing):
                raise QueryError(f"the partitioned tables of {self.path} are inconsistent (an edge crosses two sets); "
                                 f"make them again: lipspark partition --rebuild {self.path}")
            self._sets = np.union1d(self._sets, hubs["set"].to_numpy(dtype=np.int64))
            nodes = pd.concat([nodes, hubs], ignore_index=True)
        self._nodes.append(nodes)
        self._edges.append(edges)
        self._graph = None
        self.stats["sets"] = len(self._sets)
        self.stats["nodes"] += len(nodes)
        self.stats["edges"] += len(edges)


#: beside the partitioned tables: what a ZoomOut of each module changes in the whole graph's size
ZOOM_FILE = "zoom.json"


def zoom_deltas(path: str, parts: Partitions) -> dict[str, Any] | None:
    """Per module, what a ZoomOut of it alone changes in the size of the whole graph at ``path``:
    ``[nodes, edges]`` (None where it cannot be zoomed out); None when there is no graph in
    memory to compute them from and no ``zoom.json`` (tables made elsewhere). Kept in
    ``partitions/zoom.json`` for the blocks it was made with, made again when they change
    (~0.5 s for 487K nodes: a ZoomOut of each module over the memory-mapped index).

    The Spark engine reads part of a graph, and reports a zoomed view's size as the part's plus
    what the rest of the graph gives: these, less what the same ZoomOut gives the part. It holds
    because a ZoomOut's change in size is the sum of its changes in the connected sets it
    touches (a zoomed invocation joins its sets, read all or none) and of the modules zoomed
    (``tests/test_engines.py`` checks the sizes against the in-memory engine's)."""
    import os

    from lipspark.errors import StoreError
    from lipspark.query.zoom import zoom_out

    where = os.path.join(parts.root, ZOOM_FILE)
    key = [[b["graph"], b["check"]] for b in parts.blocks]
    try:
        with open(where) as fh:
            doc = json.load(fh)
        if doc.get("blocks") == json.loads(json.dumps(key)):
            return dict(doc["zoom"])
    except (OSError, ValueError, AttributeError, KeyError):
        pass
    try:
        g = GraphIndex.load(path)
    except StoreError:  # tables without a store: the index beside them, if there is one
        from lipspark.graph import qindex

        try:
            mg = qindex.open_index(os.path.join(os.path.dirname(parts.root), qindex.INDEX_DIR))
        except StoreError:
            return None
        g = GraphIndex(mg.ids, mg.is_v, mg.op, mg.type_code, mg.in_ptr, mg.in_src, mg.attrs, out=mg.out, cross=mg.cross, blocks=mg.blocks)
    inv = g.nodes_with(op=Op.INVOCATION)
    out: dict[str, Any] = {}
    for m in sorted({str(x) for x in g.column("module", inv).tolist() if x is not None}):
        try:
            z = zoom_out(g, [m])
        except QueryError:
            out[m] = None
            continue
        out[m] = [len(z) - len(g), z.num_edges - g.num_edges]
    tmp = f"{where}.tmp-{os.getpid()}"
    try:
        with open(tmp, "w") as fh:
            json.dump({"blocks": key, "zoom": out}, fh)
        os.replace(tmp, where)
    except OSError:
        pass  # a store this process cannot write: computed again next time
    return out


def _index(nodes: Sequence[pd.DataFrame], edges: Sequence[pd.DataFrame], segments: pd.DataFrame) -> GraphIndex:
    """An in-memory index of node rows as the partitioned tables keep them (with their segments' attributes)."""
    frames = [n for n in nodes if len(n)]
    n = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["id", "is_v", "op", "type", "seg", "label", "value", "tuple"])
    e = pd.concat([x for x in edges if len(x)], ignore_index=True) if any(len(x) for x in edges) else pd.DataFrame({"src": [], "dst": []})
    seg = n["seg"].to_numpy(dtype=np.int64)
    at = segments.index.get_indexer(seg)
    out = pd.DataFrame({"id": n["id"].to_numpy(dtype=np.int64), "kind": np.where(n["is_v"].to_numpy(dtype=bool), "v", "p"),
                        "op": n["op"].to_numpy(dtype=np.int8), "label": n["label"].to_numpy(dtype=object), "seg": seg,
                        "value": pd.Series([None if v is None else json.loads(v) for v in n["value"].tolist()], dtype=object),
                        "tuple": n["tuple"].to_numpy(dtype=object), "type": _TYPES[n["type"].to_numpy(dtype=np.int64)]})
    for c in _SEG_COLUMNS:
        col = segments[c].to_numpy(dtype=object)
        vals = np.empty(len(seg), dtype=object)
        ok = at >= 0
        vals[ok] = col[at[ok]]
        vals[~ok] = None
        if "_" + c in n.columns:  # witnesses carry their attributes themselves
            own = n["_" + c].to_numpy(dtype=object)
            mine = seg < 0
            vals[mine] = own[mine]
        if c in ("execution", "invocation"):
            vals = np.array([None if v is None or pd.isna(v) else int(v) for v in vals.tolist()], dtype=object)
        out[c] = vals
    return GraphIndex.build(out, e)
