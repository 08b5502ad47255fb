"""Fine-grained provenance on demand: a deferred store's graph, replayed where a query needs it.

A store run with ``--capture deferred`` keeps every relation crossing a module boundary and no
provenance. :class:`DeferredGraph` is its graph as a query sees it, with no replay up front:

* every invocation not replayed yet is its *coarse* part — the nodes an eager run gives its
  boundary (invocation node, tokens of the workflow inputs it is given, an input or state node
  per row it reads, an output node per row it writes, the rows and values of the state it
  writes, with their v-nodes; :func:`~lipspark.workflow.coarse.invocation_segments`), with the
  same ids as the eager run's — and one *pending* p-node (:func:`~lipspark.vocabulary.ids.pending_id`,
  op ZOOM, labelled ``M (not replayed)``) standing for its computation: an edge from each node
  it reads, an edge to each node it writes. Zooming the module out hides the pending node as it
  hides a computation, so a zoomed-out module's invocations never need a replay;
* an invocation :meth:`~DeferredGraph.replay` ed is its *fine* part: the graph
  :func:`~lipspark.workflow.replay.replay_invocation` records — node for node, edge for edge,
  what the eager run records for it (``tests/workflow/test_ondemand.py``).

A query session (:class:`lipspark.query.Session` given a :class:`DeferredGraph`) asks, before
each statement, which pending nodes the statement's answer reaches (a backward trace stops at
them, and so does a forward one), replays those invocations, and asks again, until the answer
reaches none: it replays only the invocations its answer reaches into. A replayed invocation is
kept under ``replays/invocations/`` (its relations with provenance columns and its graph, then
``done.json``, written last: a directory without it is an interrupted replay, removed and done
again) under the store's ``replays`` writer lock, so two processes never replay it twice and a
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
from lipspark.graph.expand import concat_frames, expand_segments
from lipspark.graph.index import GraphIndex
from lipspark.store import Store
from lipspark.store.lock import WriterLock
from lipspark.store.manifest import read_manifest, read_segments
from lipspark.vocabulary import BoundarySegment, InvocationSegment, Op, Segment
from lipspark.vocabulary.ids import pending_id, positional, segment_of
from lipspark.workflow.coarse import initial_state_segments, invocation_segments
from lipspark.workflow.layouts import REPLAYS_DIR, store_layouts
from lipspark.workflow.numbering import blocks
from lipspark.workflow.replay import GRAPH_DIR, replay_invocation

__all__ = ["DeferredGraph", "INVOCATIONS_DIR", "replay_dir"]

#: Where replayed invocations are kept, under the store's ``replays`` directory.
INVOCATIONS_DIR = "invocations"
#: The file that marks a replayed invocation complete (written last).
DONE_FILE = "done.json"
_FORMAT, _VERSION = "lipspark-replay", 1
#: How long a replay waits for another process replaying the same store (seconds).
REPLAY_WAIT = 3600.0
_READS = ("i", "s")
_WRITES = ("o", "vo", "collapse", "vs")


def replay_dir(n: int, node: str) -> str:
    """Where the replay of node ``node`` of execution ``n`` is kept (relative to the store)."""
    return f"{REPLAYS_DIR}/{INVOCATIONS_DIR}/e{n:06d}-{node}"


def _reads_stored(s: Segment) -> bool:
    """Whether a replayed invocation's segment is expanded with its fine edges: all but its read
    boundaries, whose files are the deferred run's (no hidden columns)."""
    return not (isinstance(s, BoundarySegment) and s.role in _READS)


class DeferredGraph:
    """The graph of the deferred store at ``store`` for queries: coarse where no query has
    needed more yet, replayed where one has (see the module's docstring).

    ``spark``: the session replays run on (default: started when a replay or a probe first
    needs it). ``progress``: print a line per replayed invocation to standard error.
    """

    def __init__(self, store: Store | str, *, spark: Any = None, progress: bool = False) -> None:
        from lipspark.workflow.materialize import _replayable_definition

        self.store = Store.open(store) if isinstance(store, str) else store
        if self.store.capture != "deferred":
            raise StoreError(f"the store at {self.store.root} captured its provenance {self.store.capture or 'never'}; "
                             "only a deferred store's graph is replayed on demand: open its graph directly")
        if self.store.state_scheme != "state":
            raise StoreError(f"the store at {self.store.root} was made before state rows had nodes of their own, so one invocation "
                             f"cannot be replayed alone; replay it whole: lipspark materialize {self.store.root}")
        self.path = self.store.root
        self.workflow = _replayable_definition(self.store).build(self.store.meta["params"])
        self._spark = spark
        self.progress = progress
        self._layouts: list[Any] | None = None
        self._parts: dict[tuple[int, str], tuple[pd.DataFrame, pd.DataFrame]] = {}
        self._fine_keys: set[tuple[int, str]] = set()  # the invocations whose part is their replay
        self._graph: GraphIndex | None = None
        #: the invocations this object replayed, in order: (execution, node, seconds)
        self.replayed: list[tuple[int, str, float]] = []
        self._invocations = [(n, node) for n in range(1, len(self.store.executions) + 1) for node in self.workflow.topological_order()]
        self._pending: dict[int, tuple[int, str]] = {}
        for n, node in self._invocations:
            blk = blocks(self.workflow, n, self.store.executions[n - 1]["segments"][0])[node]
            self._pending[pending_id(positional(blk.invocation, 0))] = (n, node)

    # ------------------------------------------------------------------ what is there
    @property
    def spark(self) -> Any:
        if self._spark is None:
            from lipspark.session import get_spark

            self._spark = get_spark(app_name=f"lipspark-{self.store.meta['workflow']}")
        return self._spark

    def layouts(self) -> list[Any]:
        """The probed layouts of every execution (``replays/layouts.json``; probed once)."""
        if self._layouts is None:
            self._layouts = store_layouts(self.store, self.workflow, lambda: self.spark, len(self.store.executions))
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
        return {pid: self.workflow.nodes[key[1]].module for pid, key in self._pending.items() if key not in self._fine_keys}

    def graph(self) -> GraphIndex:
        """The graph: every invocation's fine part if replayed, else its coarse part."""
        if self._graph is None:
            parts = [expand_segments(initial_state_segments(self.store, self.workflow), self.store.root, fine=False)]
            parts += [self._part(n, node) for n, node in self._invocations]
            nodes = concat_frames([p[0] for p in parts])
            edges = concat_frames([p[1] for p in parts])
            self._graph = GraphIndex.build(nodes, edges)
        return self._graph

    def _part(self, n: int, node: str) -> tuple[pd.DataFrame, pd.DataFrame]:
        key = (n, node)
        if key not in self._parts:
            if self.is_replayed(n, node):
                self._parts[key] = self._fine(n, node)
                self._fine_keys.add(key)
            else:
                self._parts[key] = self._coarse(n, node)
        return self._parts[key]

    def _fine(self, n: int, node: str) -> tuple[pd.DataFrame, pd.DataFrame]:
        gdir = os.path.join(self.store.resolve(replay_dir(n, node)), GRAPH_DIR)
        return expand_segments(read_segments(gdir, read_manifest(gdir)), self.store.root, fine=_reads_stored)

    def _coarse(self, n: int, node: str) -> tuple[pd.DataFrame, pd.DataFrame]:
        segs = invocation_segments(self.store, self.workflow, self.layouts(), n, node)
        nodes, edges = expand_segments(segs, self.store.root, fine=False)
        inv = next(s for s, _ in segs if isinstance(s, InvocationSegment))
        pid = pending_id(int(positional(inv.seg, 0)))
        roles = {s.seg: s.role for s, _ in segs if isinstance(s, BoundarySegment)}
        role = np.array([roles.get(int(s), "") for s in segment_of(nodes["id"].to_numpy(dtype=np.int64)).tolist()], dtype=object)
        ids = nodes["id"].to_numpy(dtype=np.int64)
        ins, outs = ids[np.isin(role, _READS)], ids[np.isin(role, _WRITES)]
        ctx = inv.context
        me = pd.DataFrame({"id": [pid], "kind": "p", "op": np.array([int(Op.ZOOM)], dtype=np.int8), "label": [f"{ctx.module} (not replayed)"],
                           "seg": inv.seg, "value": None, "relation": None, "tuple": None, "type": "z", "module": ctx.module,
                           "node": ctx.node, "execution": ctx.execution, "invocation": ctx.invocation, "column": None})
        more = pd.DataFrame({"src": np.concatenate([ins, np.full(len(outs), pid, dtype=np.int64)]),
                             "dst": np.concatenate([np.full(len(ins), pid, dtype=np.int64), outs])})
        return concat_frames([nodes, me.reindex(columns=nodes.columns)]), concat_frames([edges, more])

    # ------------------------------------------------------------------ replaying
    def replay(self, pending_ids: Iterable[int], *, on_replay: Callable[[int, str, float], None] | None = None) -> GraphIndex:
        """Replay the invocations whose pending nodes are ``pending_ids`` (those not replayed
        yet), keep them in the store, and return the graph with their fine parts."""
        todo = sorted({self._pending[int(i)] for i in pending_ids if int(i) in self._pending} - self._fine_keys)
        if not todo:
            return self.graph()
        for key in todo:  # their parts are made again, from their replays
            self._parts.pop(key, None)
        self._graph = None
        todo = [(n, node) for n, node in todo if not self.is_replayed(n, node)]  # another process may have replayed some
        if not todo:
            return self.graph()
        layouts = self.layouts()
        lock = WriterLock(os.path.join(self.store.root, REPLAYS_DIR), "replay").acquire(wait=REPLAY_WAIT)
        try:
            for n, node in todo:
                if self.is_replayed(n, node):  # another process did it meanwhile
                    continue
                rel = replay_dir(n, node)
                where = self.store.resolve(rel)
                shutil.rmtree(where, ignore_errors=True)  # an interrupted replay's leftovers
                t0 = time.perf_counter()
                try:
                    replay_invocation(self.store, n, node, rel, spark=self.spark, workflow=self.workflow, layouts=layouts, graph=True)
                    seconds = time.perf_counter() - t0
                    tmp = os.path.join(where, f".{DONE_FILE}.tmp")
                    with open(tmp, "w") as fh:
                        json.dump({"format": _FORMAT, "version": _VERSION, "execution": n, "node": node, "seconds": round(seconds, 3)}, fh)
                    os.replace(tmp, os.path.join(where, DONE_FILE))
                except BaseException:
                    shutil.rmtree(where, ignore_errors=True)
                    raise
                self.replayed.append((n, node, seconds))
                if on_replay is not None:
                    on_replay(n, node, seconds)
                if self.progress:
                    import sys

                    print(f"replayed {node} of execution {n} with provenance in {seconds:.1f}s", file=sys.stderr)
        finally:
            lock.release()
        self._graph = None
        return self.graph()
