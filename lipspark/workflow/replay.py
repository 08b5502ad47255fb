"""Replaying one invocation of a deferred store alone, with provenance (issue 12, item 3).

An invocation's node ids depend only on its place in the workflow
(:mod:`lipspark.workflow.numbering`), its input v-nodes only on which columns of what it reads
carry them — probed by running module code on empty frames (:mod:`lipspark.workflow.layouts`) — and
its rows' positions only on the data (a deferred run writes each relation sorted as an eager
run does). So the invocation can be re-run with provenance from the files the deferred run
stored, without replaying any other invocation, and records the segments an eager run of the
same inputs recorded for it: same ids, same nodes, same edges.

:func:`replay_invocation` does that, writes what the invocation writes (with its provenance
columns) under a directory of the caller's, and checks it before returning: each relation it
wrote must equal, as a multiset, the one the deferred run stored, and have the probed layout;
otherwise it raises :class:`~lipspark.errors.StoreError` naming the module and relation. It is the building block of replay on demand; which invocations a query needs,
and where their graphs are kept, are the query layer's (docs/design.md, "Deferred capture").
"""
from __future__ import annotations

import dataclasses
import os
import shutil
from dataclasses import dataclass
from typing import Any

from lipspark.capture.builder import GraphBuilder
from lipspark.errors import StoreError
from lipspark.session import without_call_sites
from lipspark.store import Store
from lipspark.vocabulary import RelationDescriptor, Segment
from lipspark.vocabulary.segments import fingerprint_of
from lipspark.workflow.execution import Executor
from lipspark.workflow.layouts import GRAPH_DIR, Probed, store_layouts
from lipspark.workflow.coarse import output_descriptor, state_read, written_state
from lipspark.workflow.numbering import blocks
from lipspark.workflow.relations import StoredRelation, descriptor, observed_fingerprint, relation_frame, stored_files

__all__ = ["replay_invocation", "Replayed", "GRAPH_DIR"]



@dataclass(frozen=True)
class Replayed:
    """What a replay of one invocation recorded: its segments with their tables, and the
    descriptors of the relations it wrote (under the caller's directory)."""

    execution: int
    node: str
    segments: list[tuple[Segment, dict[str, Any]]]
    outputs: dict[str, RelationDescriptor]
    state: dict[str, RelationDescriptor]


def replay_invocation(store: Store, n: int, node: str, target: str, *, spark: Any, workflow: Any = None,
                      layouts: Any = None, graph: bool = False) -> Replayed:
    """Re-run node ``node`` of execution ``n`` of the deferred ``store`` with provenance.

    ``target``: an absent directory (absolute, or relative to the store's root) the invocation's
    relations are written under (removed again if the replay fails). Module code runs
    without PySpark's call-site capture (:func:`~lipspark.session.without_call_sites`). ``workflow``: the store's
    workflow (default: built again from the definition file the store records). ``layouts``:
    the store's probed layouts of executions 1..n at least (default: probed or read from
    ``replays/layouts.json``). ``graph``: also write the recorded segments as a graph directory,
    ``target/graph`` (:meth:`~lipspark.capture.builder.GraphBuilder.write`), and return them as
    read back from it.
    """
    from lipspark.workflow.materialize import store_workflow

    if store.capture != "deferred":
        raise StoreError(f"the store at {store.root} captured its provenance {store.capture or 'never'}; only a deferred store's invocations are replayed")
    if not 1 <= n <= len(store.executions):
        raise StoreError(f"the store at {store.root} has executions 1..{len(store.executions)}, not {n}")
    if workflow is None:
        workflow = store_workflow(store)
    rec = store.executions[n - 1]
    if node not in workflow.nodes:
        raise StoreError(f"workflow {store.meta['workflow']!r} has no node {node!r}; its nodes: {', '.join(workflow.nodes)}")
    where = store.resolve(target)
    if os.path.exists(where):
        raise StoreError(f"{where} exists; a replay writes the invocation's relations into a new directory")
    ex = _Replayer(spark, workflow, store, target)
    try:
        if layouts is None or len(layouts) < n:
            layouts = store_layouts(store, workflow, spark, n)
        gdir = os.path.join(where, GRAPH_DIR) if graph else None
        with without_call_sites():  # module code that ran before: its errors need no Python call sites
            replayed = _replay(ex, store, workflow, layouts, n, node, spark, collect=not graph, graph_dir=gdir)
        if gdir is not None:
            from lipspark.store.manifest import read_segments

            assert ex.builder is not None
            manifest = ex.builder.write_manifest(gdir)
            replayed = Replayed(n, node, read_segments(gdir, manifest), replayed.outputs, replayed.state)
        return replayed
    except BaseException:
        shutil.rmtree(where, ignore_errors=True)
        raise
    finally:
        ex._release()


def _replay(ex: "_Replayer", store: Store, workflow: Any, every: list[dict[str, dict[str, dict[str, Probed]]]], n: int, node: str,
            spark: Any, *, collect: bool = True, graph_dir: str | None = None) -> Replayed:
    """The replay itself (:func:`replay_invocation` checked its arguments); ``every``: the
    layouts of executions 1..n. ``graph_dir``: where the graph's tables are written, by jobs
    run beside the relations' writes (they read the same cached frames; the output boundaries,
    recorded once the relations are written, have no tables of their own)."""
    from lipspark.workflow.materialize import _fingerprints

    rec = store.executions[n - 1]

    ex.builder = GraphBuilder(rec["segments"][0])
    ex._blocks = blocks(workflow, n, rec["segments"][0])
    inv = ex._invocation(n, node)
    assert inv.tracker is not None
    module = inv.module
    frames: dict[str, Any] = {}
    layouts = every[n - 1]
    if workflow.nodes[node].input:
        for rname in module.inputs:
            rel_dir = rec["inputs"][node][rname]["dir"]
            desc = ex._token_relation(ex.builder, inv.tracker.context, module.relation(rname), rel_dir, "i",
                                      f"execution {n}, module {module.name!r}, input {rname!r}", seg=inv.block.token(rname))
            frames[rname] = ex._read(inv, module.relation(rname), desc, "i")
    else:
        for e in workflow.inputs_of(node):
            blk = ex._blocks[e.src]
            for rname in e.relations:
                desc = output_descriptor(descriptor(rec["outputs"][e.src][rname]), blk, rname, layouts[e.src]["writes"][rname])
                frames[rname] = ex._read(inv, module.relation(rname), desc, "i")
        frames.update(ex._missing_inputs(inv))
    for rname in module.state:
        frames[rname] = ex._read(inv, module.relation(rname), state_read(store, workflow, every, n, node, rname), "s")
    result = ex._call(inv, frames)
    if graph_dir is None:
        outputs, state = ex._store_results(inv, result)
    else:
        from lipspark.session import run_concurrently

        builder = ex.builder
        assert builder is not None
        done: list[Any] = run_concurrently([lambda: ex._store_results(inv, result), lambda: builder.write_tables(graph_dir)])
        outputs, state = done[0]
    # what it wrote must be what the deferred run stored, with the probed layouts: compared by
    # the fingerprints the writing jobs observed (the run's, kept in store.json, and this
    # replay's), or, where either is missing (a store written before), by reading both back
    written = [(f"output {r} of {node}", descriptor(rec["outputs"][node][r]), d) for r, d in outputs.items()]
    written += [(f"state {r} of module {module.name}", _stored_state(store, rec, n, node, r), d) for r, d in state.items()]
    observed = [ex._fingerprints.pop(store.resolve(b.dir), None) for _, _, b in written]
    pairs: list[tuple[Any, Any]] = [(a.fingerprint, None if o is None else observed_fingerprint(o)) for (_, a, _), o in zip(written, observed)]
    unread = [i for i, (stored, replayed) in enumerate(pairs) if stored is None or replayed is None]
    if unread:
        both = [f for i in unread for f in (relation_frame(spark, store, written[i][1]), StoredRelation(store.resolve(written[i][2].dir)).frame(spark))]
        prints = _fingerprints(spark, both)
        for j, i in enumerate(unread):
            pairs[i] = (prints[2 * j], prints[2 * j + 1])
    for (what, _, _), (stored, replayed) in zip(written, pairs):
        if stored != replayed:
            raise StoreError(f"replaying execution {n}'s invocation of {node} gave another {what} than the run stored "
                             f"({replayed[0]} rows vs {stored[0]} stored): the module is not deterministic, so its "
                             "provenance cannot be deferred; run the workflow with --capture eager")
    probed = layouts[node]["writes"]
    for r in [*outputs, *state]:
        got = Probed.of(result[r].layout)
        if got != probed[r]:
            raise StoreError(f"replaying execution {n}'s invocation of {node}: relation {r!r} has provenance layout {got.to_json()}, "
                             f"its probe on empty frames gave {probed[r].to_json()}: module {module.name!r} decides its layout from its data, so its "
                             "provenance cannot be deferred; run the workflow with --capture eager")
    assert ex.builder is not None
    return Replayed(n, node, ex.builder.collect() if collect else [], outputs, state)


def _stored_state(store: Store, rec: dict[str, Any], n: int, node: str, rname: str) -> RelationDescriptor:
    """State ``rname`` as node ``node`` wrote it in execution ``n`` of the deferred store, with the
    fingerprint the run recorded for it (``state_fingerprints``), if any."""
    d = written_state(store, n, node, rname)
    fp = rec.get("state_fingerprints", {}).get(d.dir)
    return d if fp is None else dataclasses.replace(d, fingerprint=fingerprint_of(fp))


class _Replayer(Executor):
    """An executor that records with provenance while reading a deferred store, and writes the
    invocation's relations under ``target``."""

    def __init__(self, spark: Any, workflow: Any, store: Store, target: str) -> None:
        super().__init__(spark, workflow, store, provenance=True)
        self.provenance = True  # the store is deferred: the executor would record nothing
        self.target = target  # absolute, or relative to the store's root as the store's own paths are

    def _out_dir(self, n: int) -> str:
        return self.target
