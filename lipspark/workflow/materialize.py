"""Deferred capture: a store's graph made when it is first needed, by replaying its executions.

With ``capture="deferred"`` (``lipspark run --capture deferred``) a workflow runs at the speed of
provenance off: modules run on plain DataFrames and only what any run keeps is written (workflow
inputs, module outputs, state). That is enough to rebuild the provenance exactly, because module
code is deterministic (fidelity requires it) and every relation crossing a module boundary is in
the store: :func:`materialize` re-runs each execution not yet replayed with provenance on, from
the stored inputs and initial state, into an eager store at ``<store>/provenance/``, so queries
see the same graph, with the same node ids, as an eager run of the same inputs.

Materialization is an explicit step: reading a graph never runs Spark. ``lipspark
materialize``, and the ``query``, ``viz`` and ``export`` commands, call :func:`materialize`
before loading the graph of a deferred store; code that loads one itself calls it first.

Each replayed execution is checked before it is committed: every output and state relation must
equal (as a multiset) the one the deferred run stored, else the replay stops with a
:class:`~lipspark.errors.StoreError` naming the module and relation (a module that is not
deterministic cannot have its provenance deferred: run it with eager capture). Replays are
committed one execution at a time, like executions, so an interrupted materialization resumes
where it stopped.

>>> from lipspark.workflow.materialize import PROVENANCE_DIR
>>> PROVENANCE_DIR
'provenance'
"""
from __future__ import annotations

import os
from typing import Any, Callable

from lipspark.errors import StoreError
from lipspark.store import Store
from lipspark.store.lock import WriterLock
from lipspark.store.store import PROVENANCE_DIR

__all__ = ["materialize", "graph_store", "PROVENANCE_DIR"]


def graph_store(store: Store) -> Store | None:
    """The store whose graph answers queries about ``store``: itself when capture is eager, its
    replay when deferred (``None`` if not materialized yet or provenance is off)."""
    return store.graph_store()


def _fingerprints(spark: Any, frames: list[Any]) -> list[tuple[int, int]]:
    """(row count, sum of row hashes) of each frame, in one Spark job: equal multisets of rows have
    equal fingerprints (and unequal ones almost surely not). The same fingerprint a deferred run's
    write observes (:func:`~lipspark.workflow.relations.fingerprint_metrics`)."""
    from functools import reduce

    from pyspark.sql import functions as F

    from lipspark.workflow.relations import row_hash

    parts = [df.select(F.lit(i).alias("r"), row_hash(df).alias("h")) for i, df in enumerate(frames)]
    rows = reduce(lambda a, b: a.unionAll(b), parts).groupBy("r").agg(F.count("*").alias("n"), F.sum("h").alias("s")).collect()
    got = {int(r["r"]): (int(r["n"]), int(r["s"])) for r in rows}
    return [got.get(i, (0, 0)) for i in range(len(frames))]


def materialize(store: "Store | str", *, spark: Any = None, progress: bool = False,
                on_execution: Callable[[int, float], None] | None = None) -> Store:
    """Replay a deferred store's executions that have no graph yet; return the store holding the graph.

    For an eager store this returns it unchanged. Raises :class:`~lipspark.errors.StoreError` if
    the store has provenance off, its workflow definition file is gone or changed name, or a
    replay does not reproduce what the deferred run stored.
    """
    from lipspark.session import get_spark
    from lipspark.workflow.execution import Executor

    if isinstance(store, str):
        store = Store.open(store)
    if store.capture is None:
        raise StoreError(f"the store at {store.root} was run with --no-provenance: it has outputs and state but no graph")
    if store.capture == "eager":
        return store
    sub = graph_store(store)
    if _replayed_all(store, sub):
        return sub  # type: ignore[return-value]
    # the replay writes provenance/ under that store's writer lock (the deferred store itself is
    # only read, as a snapshot: a run may append to it meanwhile); another process replaying the
    # same store is waited for, and what it replayed is not replayed again
    definition = _replayable_definition(store)  # checked before anything is written
    workflow = definition.build(store.meta["params"])
    sub_root = os.path.join(store.root, PROVENANCE_DIR)
    lock = WriterLock(sub_root, "replay").acquire(wait=REPLAY_WAIT)
    try:
        if os.path.exists(os.path.join(sub_root, "store.json")):
            sub = Store.open(sub_root).lock(held=lock)
        else:
            sub = None
        if _replayed_all(store, sub):
            return sub  # type: ignore[return-value]
        spark = spark or get_spark(app_name=f"lipspark-{definition.name}")
        if sub is None:
            # the deferred store's own scheme (an older store's collapse): ids as its replays give them
            sub = Store.create(sub_root, definition.name, True, store.meta["params"], lock=lock, state_scheme=store.state_scheme)
        executor = Executor(spark, workflow, sub, provenance=True)
        # inputs and initial state are copied file for file: same files, same rows, same token ids
        executor.initialize(_stored_initial_state(store))
        _replay(spark, store, executor, store.executions[len(sub.executions):], progress=progress, on_execution=on_execution)
        return sub
    finally:
        if sub is not None:
            sub.unlock()
        lock.release()


#: How long a replay waits for another process replaying the same store (seconds).
REPLAY_WAIT = 3600.0


def _replayed_all(store: Store, sub: Store | None) -> bool:
    """Whether ``sub`` holds the replay of every execution of the deferred ``store``."""
    done = len(sub.executions) if sub is not None else 0
    if done > len(store.executions):
        raise StoreError(f"the store at {store.root} is corrupt: {PROVENANCE_DIR}/ has {done} executions, the store {len(store.executions)}")
    return sub is not None and sub.meta.get("initial") is not None and done == len(store.executions)


def _replayable_definition(store: Store) -> Any:
    """The workflow definition a deferred store was run with, loaded again from its file."""
    from lipspark.workflow.definition import load_definition

    path = store.meta.get("definition")
    if not path or not os.path.exists(path):
        raise StoreError(f"the store at {store.root} defers its provenance to a replay of workflow definition {path}, which does not exist; "
                         "put the definition back at that path, or re-run the workflow with --capture eager")
    definition = load_definition(path)
    if definition.name != store.meta["workflow"]:
        raise StoreError(f"{path} now defines workflow {definition.name!r}, but the store at {store.root} ran {store.meta['workflow']!r}")
    return definition


def store_workflow(store: Store) -> Any:
    """The workflow a store ran, built again from its definition file and parameters."""
    return _replayable_definition(store).build(store.meta["params"])


def _stored_initial_state(store: Store) -> dict[str, dict[str, Any]]:
    from lipspark.workflow.relations import StoredRelation, descriptor

    return {m: {r: StoredRelation(store.resolve(descriptor(d).dir)) for r, d in rels.items()}
            for m, rels in (store.meta["initial"] or {}).items()}


def _stored_inputs(store: Store, workflow: Any, execution: dict[str, Any]) -> dict[str, dict[str, Any]]:
    from lipspark.workflow.relations import StoredRelation

    return {node: {r: StoredRelation(store.resolve(f"{execution['dir']}/inputs/{node}/{r}")) for r in rels}
            for node, rels in workflow.workflow_inputs().items()}


def _replay(spark: Any, store: Store, executor: Any, pending: list[dict[str, Any]], *, progress: bool,
            on_execution: Callable[[int, float], None] | None) -> None:
    """Re-run ``pending`` executions of ``store`` with provenance, each checked against what
    the deferred run stored before it is committed."""
    import time

    bar = None
    if progress and pending:
        from tqdm import tqdm

        bar = tqdm(total=len(pending), desc=f"replaying {store.meta['workflow']} with provenance", unit="exec")
    try:
        for e in pending:
            t0 = time.perf_counter()
            executor.execute(_stored_inputs(store, executor.workflow, e), verify=_verifier(spark, store, executor.store, e))
            if on_execution:
                on_execution(e["n"], time.perf_counter() - t0)
            if bar:
                bar.update(1)
    finally:
        if bar:
            bar.close()


def _verifier(spark: Any, store: Store, sub: Store, execution: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
    """A check that a replay's record stored the same outputs and state (as multisets) as the
    deferred run's ``execution``."""
    from lipspark.workflow.relations import descriptor, relation_frame

    def verify(record: dict[str, Any]) -> None:
        e = execution
        pairs = [(f"output {r} of {node}", e["outputs"][node][r], d) for node, rels in record["outputs"].items() for r, d in rels.items()]
        pairs += [(f"state {r} of module {m}", e["state"][m][r], d) for m, rels in record["state"].items() for r, d in rels.items()]
        frames = [relation_frame(spark, s, d) for _, a, b in pairs for s, d in ((store, a), (sub, b))]
        prints = _fingerprints(spark, frames)
        for i, (what, a, _) in enumerate(pairs):
            stored, replayed = prints[2 * i], prints[2 * i + 1]
            if stored != replayed:
                raise StoreError(
                    f"replaying execution {e['n']} to capture its provenance gave another {what} than the run stored "
                    f"({replayed[0]} rows vs {stored[0]} stored, in {descriptor(a).dir}): the module is not deterministic, so its "
                    "provenance cannot be deferred; run the workflow with --capture eager")

    return verify
