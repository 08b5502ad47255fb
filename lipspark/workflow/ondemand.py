"""Fine-grained provenance on demand: a deferred store's graph, replayed where a query needs it.

A store run with ``--capture deferred`` keeps every relation crossing a module boundary and no
provenance. :class:`DeferredGraph` is its graph as a query sees it, with no replay up front:

* every invocation not replayed yet is its *coarse* part — the nodes an eager run gives its
  boundary (invocation node, tokens of the workflow inputs it is given, an input or state node
  per row it reads, an output node per row it writes, the rows and values of the state it
  writes, with their v-nodes; :func:`~lipspark.workflow.coarse.invocation_segments`), with the
  same ids as the eager run's — and one *pending* p-node (:func:`~lipspark.vocabulary.ids.pending_id`,
  op ZOOM, no node type, labelled ``M (not replayed)``) standing for its computation: an edge
  from each node it reads, an edge to each node it writes. Zooming the module out hides the
  pending node as it hides a computation, so a zoomed-out module's invocations never need a
  replay. That coarse graph is a query-ready index of its own (``replays/coarse/``, one block per
  execution), made by the first query and memory-mapped after: opening imports no pyspark;
* an invocation :meth:`~DeferredGraph.replay` ed is its *fine* part, overlaid on the coarse graph
  (a :class:`~lipspark.graph.view.View` hiding its pending node): the graph
  :func:`~lipspark.workflow.replay.replay_invocation` records — node for node, edge for edge,
  what the eager run records for it (``tests/workflow/test_ondemand.py``).

A query session (:class:`lipspark.query.Session` given a :class:`DeferredGraph`) asks, before
each statement, which pending nodes the statement's answer reaches (a backward trace stops at
them, and so does a forward one), replays those invocations, and asks again, until the answer
reaches none: it replays only the invocations its answer reaches into. A replayed invocation is
kept under ``replays/invocations/`` (its relations with provenance columns, its graph and that
graph expanded once, ``fine.json``, then ``done.json``, written last: a directory without it is
an interrupted replay, removed and done again) under the store's ``replays`` writer lock, so two processes never replay it twice and a
crash leaves the store as it was.

It needs the ``state`` p-node scheme (docs/design.md, "Deferred capture"): under ``collapse``, a
state row read by an invocation may be a node inside the invocation that wrote it, which only
a replay of that one gives; such stores are replayed whole (``lipspark materialize``).

>>> from lipspark.workflow.ondemand import INVOCATIONS_DIR, replay_dir
>>> replay_dir(3, "dealer1")
'replays/invocations/e000003-dealer1'
"""
from __future__ import annotations

import json
import os
import shutil
import time
from typing import Any, Callable, Iterable

import numpy as np
import pandas as pd

from lipspark.errors import StoreError
from lipspark.graph.expand import RelationReads, concat_frames, expand_segments
from lipspark.graph.index import GraphIndex
from lipspark.graph.view import change
from lipspark.store import Store
from lipspark.store.lock import WriterLock
from lipspark.store.manifest import read_manifest, read_segments
from lipspark.vocabulary import BoundarySegment, InvocationSegment, Op, Segment
from lipspark.vocabulary.ids import pending_id, positional, segment_of
from lipspark.workflow.layouts import GRAPH_DIR, REPLAYS_DIR, store_layouts

# What opening needs (the coarse graph's index, the replays' graphs) imports no pyspark: making a
# coarse block (lipspark.workflow.coarse reads relations) and replaying are imported when done.

__all__ = ["DeferredGraph", "INVOCATIONS_DIR", "replay_dir"]

#: Where replayed invocations are kept, under the store's ``replays`` directory.
INVOCATIONS_DIR = "invocations"
#: The file that marks a replayed invocation complete (written last).
DONE_FILE = "done.json"
_FORMAT, _VERSION = "lipspark-replay", 1
#: A replayed invocation's fine part, expanded once and kept beside its graph (derived: made again
#: when missing, unreadable or of another version).
FINE_FILE = "fine.json"
_FINE_FORMAT, _FINE_VERSION = "lipspark-fine-part", 1
#: How many invocations a replay runs at once (each in a Spark session of its own): the
#: driver's planning and the small jobs of one replay leave the cores of ``local[2]`` idle.
CONCURRENT_REPLAYS = 2
#: How long a replay waits for another process replaying the same store (seconds).
REPLAY_WAIT = 3600.0
#: Where the coarse graph's query-ready index is kept, under the store's ``replays`` directory.
COARSE_DIR = "coarse"
#: The version of the coarse graph's blocks (a block of another version is made again).
_COARSE_VERSION = 1
_READS = ("i", "s")
_WRITES = ("o", "vo", "collapse", "vs")


def _digest(doc: Any) -> str:
    """A short fingerprint of a JSON document (what a coarse block is made from)."""
    import hashlib

    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()[:32]


def replay_dir(n: int, node: str) -> str:
    """Where the replay of node ``node`` of execution ``n`` is kept (relative to the store)."""
    return f"{REPLAYS_DIR}/{INVOCATIONS_DIR}/e{n:06d}-{node}"


def _reads_stored(s: Segment) -> bool:
    """Whether a replayed invocation's segment is expanded with its fine edges: all but its read
    boundaries, whose files are the deferred run's (no hidden columns)."""
    return not (isinstance(s, BoundarySegment) and s.role in _READS)


class _SparkNeeded(Exception):
    """A probe needs Spark (:meth:`DeferredGraph.layouts`)."""


def _no_spark() -> Any:
    raise _SparkNeeded()


class DeferredGraph:
    """The graph of the deferred store at ``store`` for queries: coarse where no query has
    needed more yet, replayed where one has (see the module's docstring).

    ``spark``: the session replays run on (default: started when a replay or a probe first
    needs it). ``progress``: print a line per replayed invocation to standard error.
    """

    def __init__(self, store: Store | str, *, spark: Any = None, progress: bool = False) -> None:
        self.store = Store.open(store) if isinstance(store, str) else store
        if self.store.capture != "deferred":
            raise StoreError(f"the store at {self.store.root} captured its provenance {self.store.capture or 'never'}; "
                             "only a deferred store's graph is replayed on demand: open its graph directly")
        if self.store.state_scheme != "state":
            raise StoreError(f"the store at {self.store.root} was made before state rows had nodes of their own, so one invocation "
                             f"cannot be replayed alone; replay it whole: lipspark materialize {self.store.root}")
        self.path = self.store.root
        self._workflow: Any = None
        self._spark = spark
        self.progress = progress
        self._layouts: list[Any] | None = None
        self._building = False  # this process is making the coarse index's blocks (holds its lock)
        self._parts: dict[tuple[int, str], tuple[pd.DataFrame, pd.DataFrame]] = {}  # replayed invocations' fine parts
        self._coarse: GraphIndex | None = None
        self._fine_keys: set[tuple[int, str]] = set()  # the invocations whose part is their replay
        self._graph: GraphIndex | None = None
        #: the invocations this object replayed, in order: (execution, node, seconds)
        self.replayed: list[tuple[int, str, float]] = []
        #: every invocation's pending node id → (execution, workflow node), and its module (read from the coarse graph)
        self._pending: dict[int, tuple[int, str]] = {}
        self._module_of: dict[tuple[int, str], str] = {}

    @property
    def workflow(self) -> Any:
        """The store's workflow, built from its definition (loaded when a replay or the coarse
        graph's first making needs it: a definition imports pyspark)."""
        if self._workflow is None:
            from lipspark.workflow.materialize import store_workflow

            self._workflow = store_workflow(self.store)
        return self._workflow

    # ------------------------------------------------------------------ what is there
    @property
    def spark(self) -> Any:
        if self._spark is None:
            from lipspark.session import get_spark

            self._spark = get_spark(app_name=f"lipspark-{self.store.meta['workflow']}")
        return self._spark

    def layouts(self) -> list[Any]:
        """The probed layouts of every execution (``replays/layouts.json``; probed once)."""
        upto = len(self.store.executions)
        if self._layouts is None and self._spark is None and not self._building:
            # probes this process would start Spark for: the service's, if one runs (not while
            # this process holds the coarse index's lock, which the service takes to prepare)
            try:
                self._layouts = store_layouts(self.store, self.workflow, _no_spark, upto)
            except _SparkNeeded:
                from lipspark.workflow.service_protocol import prepare_by_service

                prepare_by_service(self.store)
        if self._layouts is None:
            self._layouts = store_layouts(self.store, self.workflow, lambda: self.spark, upto)
        return self._layouts

    def is_replayed(self, n: int, node: str) -> bool:
        """Whether node ``node`` of execution ``n`` has a complete replay in the store."""
        try:
            with open(os.path.join(self.store.resolve(replay_dir(n, node)), DONE_FILE)) as fh:
                doc = json.load(fh)
            return bool(doc.get("format") == _FORMAT and doc.get("version") == _VERSION and doc.get("execution") == n and doc.get("node") == node)
        except (OSError, ValueError, AttributeError):
            return False

    def pending(self) -> dict[int, str]:
        """The pending nodes of :meth:`graph`: each invocation it holds as its coarse part, its
        pending node's id → its module. (Another process may have replayed some since: they
        join when :meth:`replay` is asked for them, without replaying them again.)"""
        self.graph()
        return {pid: self._module_of[key] for pid, key in self._pending.items() if key not in self._fine_keys}

    def graph(self) -> GraphIndex:
        """The graph: the coarse graph (every invocation's coarse part, memory-mapped), seen
        with the fine parts of the invocations replayed so far in place of their pending nodes."""
        if self._graph is None:
            base = self.coarse()
            done = self._replayed_keys()
            self._graph = base if not done else self._with_fine(base, done)
            self._fine_keys = set(done)
        return self._graph

    def coarse(self) -> GraphIndex:
        """The coarse graph: the initial state's part, then every invocation's coarse part with its
        pending node. It is kept as a query-ready index (``replays/coarse/``, one block per
        execution, :func:`~lipspark.graph.qindex.update_blocks`), made once — the first time any
        query opens the store, and for each execution run since — and memory-mapped after that."""
        if self._coarse is None:
            from lipspark.graph import qindex

            wanted = self._wanted_blocks()
            ipath = self.store.resolve(f"{REPLAYS_DIR}/{COARSE_DIR}")
            if self._spark is None and not qindex.holds_blocks(ipath, wanted):  # a run appended executions
                from lipspark.workflow.service_protocol import prepare_by_service

                prepare_by_service(self.store)  # a service running for the store makes them: nothing when none runs
            self._building = True
            try:
                meta = qindex.update_blocks(ipath, wanted, self._coarse_block)
            except OSError as err:
                if err.errno not in (13, 30):  # EACCES, EROFS: a store this process cannot write
                    raise
                parts = [self._coarse_block(name) for name, _ in wanted]  # made in memory instead: same graph
                self._coarse = GraphIndex.build(concat_frames([p[0] for p in parts]), concat_frames([p[1] for p in parts]))
            else:
                m = qindex.open_index(ipath, meta)
                self._coarse = GraphIndex(m.ids, m.is_v, m.op, m.type_code, m.in_ptr, m.in_src, m.attrs, out=m.out, cross=m.cross,
                                          blocks=m.blocks)
            finally:
                self._building = False
            g = self._coarse
            pos = g.by_id(g.nodes_with(op=Op.ZOOM))  # the pending nodes: the coarse graph's only zoom nodes
            ids = np.asarray(g.ids[pos], dtype=np.int64)
            for i, n, node, module in zip(ids.tolist(), g.column("execution", pos).tolist(), g.column("node", pos).tolist(),
                                          g.column("module", pos).tolist()):
                self._pending[int(i)] = (int(n), str(node))
                self._module_of[(int(n), str(node))] = str(module)
        return self._coarse

    def _wanted_blocks(self) -> list[tuple[str, dict[str, Any]]]:
        """The coarse index's blocks for the store as it is, each with what it is made from."""
        wanted = [("initial", {"coarse": _COARSE_VERSION, "initial": _digest(self.store.meta.get("initial"))})]
        return wanted + [(f"e{n:06d}", {"coarse": _COARSE_VERSION, "execution": _digest(rec)}) for n, rec in enumerate(self.store.executions, 1)]

    def _coarse_block(self, name: str) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The nodes and edges of one block of the coarse graph: ``initial`` or ``e<n>``."""
        from lipspark.workflow.coarse import initial_state_segments

        if name == "initial":
            return expand_segments(initial_state_segments(self.store, self.workflow), self.store.root, fine=False)
        n = int(name[1:])
        reads = RelationReads(self.store.root)  # a relation's writer and readers are in one execution (its state: the next)
        parts = [self._coarse_part(n, node, reads) for node in self.workflow.topological_order()]
        return concat_frames([p[0] for p in parts]), concat_frames([p[1] for p in parts])

    def _replayed_keys(self) -> list[tuple[int, str]]:
        """The invocations with a complete replay in the store, by execution and workflow node name."""
        base = self.store.resolve(f"{REPLAYS_DIR}/{INVOCATIONS_DIR}")
        try:
            names = set(os.listdir(base))
        except OSError:
            return []
        self.coarse()
        return sorted(key for key in self._module_of if replay_dir(*key).rsplit("/", 1)[1] in names and self.is_replayed(*key))

    def _with_fine(self, base: GraphIndex, keys: list[tuple[int, str]]) -> GraphIndex:
        """``base`` (the coarse graph) with the fine parts of the invocations ``keys``: a view
        (:func:`~lipspark.graph.view.change`) that hides their pending nodes and adds the nodes
        of their replays the coarse graph does not have, with the edges the coarse graph lacks."""
        parts = [self._fine_part(k) for k in keys]
        nodes = concat_frames([p[0] for p in parts])
        edges = concat_frames([p[1] for p in parts])
        ids = nodes["id"].to_numpy(dtype=np.int64)
        new = nodes[base.lookup(ids) < 0]
        if new["id"].duplicated().any():
            raise StoreError(f"the replays of {self.store.root} have two nodes with one id; remove replays/{INVOCATIONS_DIR} and query again")
        extra = GraphIndex.build(new.reset_index(drop=True), edges.iloc[:0])
        add = extra.take(np.arange(len(extra), dtype=np.int64))  # in id order, as the view numbers its overlay
        nb = len(base)

        def ext(node_ids: np.ndarray) -> np.ndarray:
            out = base.lookup(node_ids)
            miss = out < 0
            if miss.any():
                at = extra.lookup(node_ids[miss])
                if (at < 0).any():
                    bad = sorted(set(node_ids[miss][at < 0].tolist()))[:5]
                    raise StoreError(f"a replayed invocation of {self.store.root} has edges from or to nodes no part has (ids {bad}); "
                                     f"remove replays/{INVOCATIONS_DIR} and query again")
                out[miss] = nb + at
            return out

        src, dst = ext(edges["src"].to_numpy(dtype=np.int64)), ext(edges["dst"].to_numpy(dtype=np.int64))
        # an edge between two coarse nodes may be the coarse graph's own already (as often as it has it)
        both = np.flatnonzero((src < nb) & (dst < nb))
        if len(both):
            keys_f = dst[both] * nb + src[both]
            targets = np.unique(dst[both])
            own, kids = base.gather_children(targets, owners=True)
            have_k, have_c = np.unique(targets[own] * nb + np.asarray(kids, dtype=np.int64), return_counts=True)
            order = np.argsort(keys_f, kind="stable")
            sk = keys_f[order]
            first = np.searchsorted(sk, sk, side="left")
            rank = np.arange(len(sk)) - first  # the how-many-th copy of its edge each one is
            had = np.zeros(len(sk), dtype=np.int64)
            if len(have_k):
                at = np.minimum(np.searchsorted(have_k, sk), len(have_k) - 1)
                hit = have_k[at] == sk
                had[hit] = have_c[at[hit]]
            drop = np.zeros(len(src), dtype=bool)
            drop[both[order[rank < had]]] = True
            src, dst = src[~drop], dst[~drop]
        replayed = set(keys)
        pend = base.lookup(np.array([pid for pid, key in self._pending.items() if key in replayed], dtype=np.int64))
        eid = base.num_edges + np.arange(len(src), dtype=np.int64)
        return change(base, remove=pend[pend >= 0], add=add, add_edges=(src, dst, eid))

    def _fine_part(self, key: tuple[int, str]) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The nodes and edges of a replayed invocation's graph, as its ``fine.json`` keeps them
        (made from the graph, and kept if the store is writable, when it is missing or stale)."""
        if key not in self._parts:
            n, node = key
            where = self.store.resolve(replay_dir(n, node))
            part = _read_fine(os.path.join(where, FINE_FILE), n, node)
            if part is None:
                part = _decode_fine(self._write_fine(n, node))
            self._parts[key] = part
        return self._parts[key]

    def _write_fine(self, n: int, node: str) -> dict[str, Any]:
        """Expand the graph of the replay of node ``node`` of execution ``n`` and keep it as its
        ``fine.json`` (replaced whole; a store this process cannot write keeps none); the document."""
        where = self.store.resolve(replay_dir(n, node))
        gdir = os.path.join(where, GRAPH_DIR)
        nodes, edges = expand_segments(read_segments(gdir, read_manifest(gdir)), self.store.root, fine=_reads_stored)
        doc = _encode_fine(nodes, edges, n, node)
        tmp = os.path.join(where, f".{FINE_FILE}.{os.getpid()}.tmp")
        try:
            with open(tmp, "w") as fh:
                json.dump(doc, fh, separators=(",", ":"), ensure_ascii=False, default=str)
            os.replace(tmp, os.path.join(where, FINE_FILE))
        except OSError as err:
            if err.errno not in (13, 30):  # EACCES, EROFS: read-only store, the part stays in memory
                raise
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
        return doc

    def _coarse_part(self, n: int, node: str, reads: RelationReads | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
        from lipspark.workflow.coarse import invocation_segments

        segs = invocation_segments(self.store, self.workflow, self.layouts(), n, node)
        nodes, edges = expand_segments(segs, self.store.root, fine=False, reads=reads)
        inv = next(s for s, _ in segs if isinstance(s, InvocationSegment))
        pid = pending_id(int(positional(inv.seg, 0)))
        roles = {s.seg: s.role for s, _ in segs if isinstance(s, BoundarySegment)}
        role = np.array([roles.get(int(s), "") for s in segment_of(nodes["id"].to_numpy(dtype=np.int64)).tolist()], dtype=object)
        ids = nodes["id"].to_numpy(dtype=np.int64)
        ins, outs = ids[np.isin(role, _READS)], ids[np.isin(role, _WRITES)]
        ctx = inv.context
        me = pd.DataFrame({"id": [pid], "kind": "p", "op": np.array([int(Op.ZOOM)], dtype=np.int8), "label": [f"{ctx.module} (not replayed)"],
                           "seg": inv.seg, "value": None, "relation": None, "tuple": None, "type": None, "module": ctx.module,
                           "node": ctx.node, "execution": ctx.execution, "invocation": ctx.invocation, "column": None})
        more = pd.DataFrame({"src": np.concatenate([ins, np.full(len(outs), pid, dtype=np.int64)]),
                             "dst": np.concatenate([np.full(len(ins), pid, dtype=np.int64), outs])})
        return concat_frames([nodes, me.reindex(columns=nodes.columns)]), concat_frames([edges, more])

    # ------------------------------------------------------------------ replaying
    def replay(self, pending_ids: Iterable[int], *, on_replay: Callable[[int, str, float], None] | None = None) -> GraphIndex:
        """Replay the invocations whose pending nodes are ``pending_ids`` (those not replayed
        yet), keep them in the store, and return the graph with their fine parts.

        A replay service running for the store (``lipspark serve``, :mod:`lipspark.workflow.service`)
        replays them in its warm Spark when this object was given no Spark session of its own;
        otherwise (or if the service is gone) they are replayed in this process."""
        self.coarse()
        todo = sorted({self._pending[int(i)] for i in pending_ids if int(i) in self._pending} - self._fine_keys)
        todo = [(n, node) for n, node in todo if not self.is_replayed(n, node)]  # another process may have replayed some
        if todo:
            self._graph = None
            done = None
            if self._spark is None:
                from lipspark.workflow.service_protocol import replay_by_service

                done = replay_by_service(self.store, todo)
            if done is None:
                self.replay_here(todo, on_replay=on_replay)
            else:
                for n, node, seconds in done:
                    self._note(n, node, seconds, on_replay, where=" by the replay service")
        return self.graph()

    def replay_here(self, todo: list[tuple[int, str]], *, on_replay: Callable[[int, str, float], None] | None = None) -> None:
        """Replay the invocations ``todo`` (execution, workflow node) in this process's Spark, those
        not replayed yet, under the store's ``replays`` lock, and keep them in the store.

        A replay reads only what the deferred run stored, never another replay, so the
        invocations are replayed :data:`CONCURRENT_REPLAYS` at a time, each in a Spark session of
        its own (module code's temporary views are a session's); each is kept, or removed
        whole, on its own. They are noted in ``todo``'s order; the first failure is raised once
        every replay under way has ended."""
        layouts = self.layouts()
        self._graph = None
        lock = WriterLock(os.path.join(self.store.root, REPLAYS_DIR), "replay").acquire(wait=REPLAY_WAIT)
        try:
            todo = [(n, node) for n, node in todo if not self.is_replayed(n, node)]  # another process did some meanwhile
            if len(todo) <= 1:
                results = [self._replay_one(n, node, layouts, self.spark) for n, node in todo]
            else:
                from concurrent.futures import ThreadPoolExecutor, wait

                from lipspark.session import session_like

                sessions = [session_like(self.spark) for _ in range(min(CONCURRENT_REPLAYS, len(todo)))]
                free = list(sessions)

                def one(key: tuple[int, str]) -> float:
                    spark = free.pop()  # list.pop is atomic: each running replay has a session to itself
                    try:
                        return self._replay_one(*key, layouts, spark)
                    finally:
                        free.append(spark)

                pool = ThreadPoolExecutor(max_workers=len(sessions), thread_name_prefix="lipspark-replay")
                futures = [pool.submit(one, key) for key in todo]
                try:
                    wait(futures)
                except BaseException:  # Ctrl-C: the replays under way end (each kept or removed whole), none other starts
                    for f in futures:
                        f.cancel()
                    raise
                finally:
                    pool.shutdown(wait=True)
                failed = next((f.exception() for f in futures if f.exception() is not None), None)
                for (n, node), f in zip(todo, futures):  # those that succeeded are kept, and noted
                    if f.exception() is None:
                        self._note(n, node, f.result(), on_replay)
                if failed is not None:
                    raise failed
                return
            for (n, node), seconds in zip(todo, results):
                self._note(n, node, seconds, on_replay)
        finally:
            lock.release()

    def _replay_one(self, n: int, node: str, layouts: list[Any], spark: Any) -> float:
        """Replay node ``node`` of execution ``n`` on ``spark`` and keep it; its time in seconds."""
        from lipspark.workflow.replay import replay_invocation

        rel = replay_dir(n, node)
        where = self.store.resolve(rel)
        shutil.rmtree(where, ignore_errors=True)  # an interrupted replay's leftovers
        t0 = time.perf_counter()
        try:
            replay_invocation(self.store, n, node, rel, spark=spark, workflow=self.workflow, layouts=layouts, graph=True)
            self._parts[(n, node)] = _decode_fine(self._write_fine(n, node))
            seconds = time.perf_counter() - t0
            tmp = os.path.join(where, f".{DONE_FILE}.tmp")
            with open(tmp, "w") as fh:
                json.dump({"format": _FORMAT, "version": _VERSION, "execution": n, "node": node, "seconds": round(seconds, 3)}, fh)
            os.replace(tmp, os.path.join(where, DONE_FILE))
        except BaseException:
            shutil.rmtree(where, ignore_errors=True)
            raise
        return seconds

    def _note(self, n: int, node: str, seconds: float, on_replay: Callable[[int, str, float], None] | None, where: str = "") -> None:
        """Record that node ``node`` of execution ``n`` was replayed, in ``seconds``."""
        self.replayed.append((n, node, seconds))
        if on_replay is not None:
            on_replay(n, node, seconds)
        if self.progress:
            import sys

            print(f"replayed {node} of execution {n} with provenance in {seconds:.1f}s{where}", file=sys.stderr)


def _encode_fine(nodes: pd.DataFrame, edges: pd.DataFrame, n: int, node: str) -> dict[str, Any]:
    """A fine part as JSON: numeric columns with their dtype, the others as values, each cleaned
    and encoded as the query-ready index encodes attributes (missing cells, NaN included, as
    null; what JSON has no form for as its text), so a part read back answers as an index does."""
    from lipspark.graph.attrs import _clean

    def value(v: Any) -> Any:
        v = _clean(v)
        return v if v is None or isinstance(v, (str, int, float, bool)) else json.loads(json.dumps(v, default=str))

    def column(col: pd.Series) -> dict[str, Any]:
        if isinstance(col.dtype, np.dtype) and col.dtype.kind in "iufb":  # numpy numbers; the rest (nullable too) as values
            return {"dtype": str(col.dtype), "values": col.tolist()}
        return {"dtype": "object", "values": [value(v) for v in col.tolist()]}

    return {"format": _FINE_FORMAT, "version": _FINE_VERSION, "execution": n, "node": node,
            "nodes": {c: column(nodes[c]) for c in nodes.columns},
            "edges": {c: column(edges[c]) for c in edges.columns}}


def _decode_fine(doc: dict[str, Any]) -> tuple[pd.DataFrame, pd.DataFrame]:
    def frame(cols: dict[str, Any]) -> pd.DataFrame:
        out = {}
        for name, c in cols.items():
            if c["dtype"] == "object":
                arr = np.empty(len(c["values"]), dtype=object)
                arr[:] = c["values"]
                out[name] = arr
            else:
                out[name] = np.asarray(c["values"], dtype=c["dtype"])
        return pd.DataFrame(out)

    return frame(doc["nodes"]), frame(doc["edges"])


def _read_fine(path: str, n: int, node: str) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """The fine part kept at ``path``, or None when it is missing, unreadable or not of this
    version and invocation (then it is made again from the replay's graph, never trusted)."""
    try:
        with open(path) as fh:
            doc = json.load(fh)
        if (doc.get("format"), doc.get("version"), doc.get("execution"), doc.get("node")) != (_FINE_FORMAT, _FINE_VERSION, n, node):
            return None
        return _decode_fine(doc)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
