"""A workflow store as OpenLineage run events: column lineage for data catalogs (Marquez, DataHub…).

:func:`openlineage_events` reads a store (``store.json``, each execution's ``lineage.json`` and
the Parquet footers of its relations) and the query-ready index of its graph, and gives, per
execution, a START/COMPLETE pair for the execution (the parent run, job ``WORKFLOW``) and,
inside it, one pair per module invocation (a child run with a ``parent`` facet, job
``WORKFLOW.NODE``) with:

* ``inputs``: the relations the invocation read, ``outputs``: those it wrote (its outputs and
  the state relations it returned), each a dataset in namespace ``file`` named by its directory,
  with a ``schema`` facet (the columns and their Arrow types, from the Parquet footer);
* on each output, a ``columnLineage`` facet (1-2-0) from the lineage the executor recorded
  (:mod:`lipspark.vocabulary.lineage`): per column its DIRECT input fields (IDENTITY,
  TRANSFORMATION, AGGREGATION, a black box named in ``description``), and the INDIRECT ones
  (FILTER, JOIN, GROUP_BY, SORT) in ``dataset``;
* a ``lipspark`` run facet pointing into the row-level provenance graph: the store, the
  execution, the workflow node and module, and the invocation's node id and token
  (``lipspark query STORE -e 'show node ID'``, ``polynomial`` over its outputs…).

Everything is deterministic, so exporting twice gives the same events: run ids are UUID5 of the
store's path and the execution (and node), event times the modification times of the files
the execution (or invocation) wrote — the first for START, the last for COMPLETE.

The ``openlineage-python`` package builds and sends the events (``pip install
'lipspark[openlineage]'``); :func:`write_openlineage` writes them as JSON lines and, when given a
URL, posts them to an OpenLineage endpoint with the package's HTTP transport (off by default).
"""
from __future__ import annotations

import datetime
import os
import uuid
from typing import Any

from lipspark.errors import LipsparkError
from lipspark.export._files import atomic_open
from lipspark.store.lineage import read_lineage, relations_by_dir
from lipspark.store.store import Store
from lipspark.vocabulary.lineage import RelationLineage, SourceField

__all__ = ["FACET_SCHEMA_FILE", "FACET_SCHEMA_URL", "NAMESPACE", "PRODUCER", "openlineage_events", "to_dicts", "write_openlineage"]

#: The ``producer`` of every event and facet.
PRODUCER = "https://lipspark.invalid/lipspark"
#: The schema URL of the ``lipspark`` run facet (fields: store, execution, node, module, invocation, token);
#: the schema itself ships with lipspark: :data:`FACET_SCHEMA_FILE`.
FACET_SCHEMA_URL = "https://lipspark.invalid/spec/facets/1-0-0/LipsparkGraphRunFacet.json#/$defs/LipsparkGraphRunFacet"
#: The JSON schema of the ``lipspark`` run facet (a RunFacet of OpenLineage 2-0-2).
FACET_SCHEMA_FILE = os.path.join(os.path.dirname(__file__), "LipsparkGraphRunFacet.json")
#: The namespace of the jobs (datasets are in ``file``, named by their path).
NAMESPACE = "lipspark"
_INSTALL = "the OpenLineage export needs the openlineage-python package: pip install 'lipspark[openlineage]'"


def _client() -> Any:
    try:
        import openlineage.client  # noqa: F401
    except ImportError:
        raise LipsparkError(_INSTALL) from None
    return openlineage.client


_FACET_CLASS: Any = None


def _graph_facet_class() -> Any:
    """The ``lipspark`` run facet, a RunFacet of the client (made once, on first use)."""
    global _FACET_CLASS
    if _FACET_CLASS is None:
        import attr
        from openlineage.client.generated.base import RunFacet

        @attr.define
        class LipsparkGraphRunFacet(RunFacet):
            """Where this run is in lipspark's row-level provenance graph."""

            store: str
            execution: int
            node: str | None = attr.field(default=None)
            module: str | None = attr.field(default=None)
            invocation: int | None = attr.field(default=None)
            token: str | None = attr.field(default=None)

            @staticmethod
            def _get_schema() -> str:
                return FACET_SCHEMA_URL

        _FACET_CLASS = LipsparkGraphRunFacet
    return _FACET_CLASS


def _time(ns: int) -> str:
    return datetime.datetime.fromtimestamp(ns / 1e9, tz=datetime.timezone.utc).isoformat()


def _run_id(store: Store, *parts: Any) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "lipspark:" + store.root + ":" + ":".join(str(p) for p in parts)))


def _parquet_files(store: Store, d: str) -> list[str]:
    """The Parquet files of the relation stored at ``d`` (a state relation that a later invocation
    of the same execution replaced is not in ``store.json``, but its files are kept)."""
    full = os.path.join(store.root, d)
    names = sorted(n for n in os.listdir(full) if n.endswith(".parquet")) if os.path.isdir(full) else []
    return [os.path.join(full, n) for n in names]


def _dir_mtimes(store: Store, d: str) -> list[int]:
    return [os.stat(f).st_mtime_ns for f in _parquet_files(store, d)]


def _invocations(path: str) -> dict[tuple[int, str], tuple[int, str]]:
    """(execution, node) → (invocation node id, its token) from the store's graph, if it has one."""
    from lipspark.graph.expression import token_name
    from lipspark.graph.index import GraphIndex
    from lipspark.vocabulary import Op

    store = Store.open(path)
    if store.graph_store() is None:
        return {}
    g = GraphIndex.load(path)
    pos = g.nodes_with(op=Op.INVOCATION)
    nodes, execs = g.column("node", pos).tolist(), g.column("execution", pos).tolist()
    return {(int(e), str(n)): (int(g.ids[p]), token_name(g, int(p))) for p, n, e in zip(pos.tolist(), nodes, execs) if e is not None}


def openlineage_events(path: str) -> list[Any]:
    """The OpenLineage ``RunEvent``\\ s (``openlineage.client.event_v2``) of the workflow store
    at ``path``, in order: per execution its START, each invocation's START and COMPLETE, its
    COMPLETE (docs/export.md, "OpenLineage")."""
    _client()
    from openlineage.client.event_v2 import InputDataset, Job, OutputDataset, Run, RunEvent, RunState
    from openlineage.client.generated import column_lineage_dataset as cl
    from openlineage.client.generated import parent_run, schema_dataset

    store = Store.open(path)
    lineage = read_lineage(store)
    infos = relations_by_dir(store)
    graph = _invocations(path)
    workflow = str(store.meta["workflow"])
    facet = _graph_facet_class()
    schemas: dict[str, Any] = {}

    def dataset_name(d: str) -> str:
        return os.path.join(store.root, d)

    def schema(d: str) -> Any:
        if d not in schemas:
            import pyarrow.parquet as pq

            from lipspark.vocabulary.columns import is_hidden

            files = _parquet_files(store, d)
            fields = []
            if files:
                arrow = pq.read_schema(files[0])
                fields = [schema_dataset.SchemaDatasetFacetFields(name=f.name, type=str(f.type), ordinal_position=i + 1)
                          for i, f in enumerate(f for f in arrow if not is_hidden(f.name))]
            schemas[d] = schema_dataset.SchemaDatasetFacet(fields=fields, producer=PRODUCER)
        return schemas[d]

    def input_field(f: SourceField) -> Any:
        t = cl.Transformation(type=f.type, subtype=f.subtype, description=f.description or None, masking=False)
        return cl.InputField(namespace="file", name=dataset_name(f.relation), field=f.column, transformations=[t])

    def column_facet(r: RelationLineage) -> Any:
        fields = {c: cl.Fields(inputFields=[input_field(f) for f in fs]) for c, fs in r.columns.items()}
        return cl.ColumnLineageDatasetFacet(fields=fields, dataset=[input_field(f) for f in r.dataset], producer=PRODUCER)

    events: list[Any] = []
    for e in store.executions:
        n = int(e["n"])
        mine = [r for r in lineage.values() if r.dir.startswith(e["dir"] + "/")]
        written = [infos[d] for d in infos if d.startswith(e["dir"] + "/")]
        times = [t for d in {*(i.dir for i in written), *(r.dir for r in mine)} for t in _dir_mtimes(store, d)] or [0]
        parent_id = _run_id(store, n)
        parent_job = Job(namespace=NAMESPACE, name=workflow)
        parent_facets = {"lipspark": facet(store=store.root, execution=n, producer=PRODUCER)}
        inputs = [InputDataset(namespace="file", name=dataset_name(i.dir), facets={"schema": schema(i.dir)})
                  for i in written if i.role == "input"]
        events.append(RunEvent(eventType=RunState.START, eventTime=_time(min(times)), run=Run(runId=parent_id, facets=parent_facets),
                               job=parent_job, producer=PRODUCER, inputs=inputs))
        by_node: dict[str, list[RelationLineage]] = {}
        for r in mine:  # in the order the invocations ran (lineage.json's)
            by_node.setdefault(r.node, []).append(r)
        for node, rels in by_node.items():
            run_id = _run_id(store, n, node)
            inv = graph.get((n, node))
            facets = {"lipspark": facet(store=store.root, execution=n, node=node, module=rels[0].module,
                                        invocation=inv[0] if inv else None, token=inv[1] if inv else None, producer=PRODUCER),
                      "parent": parent_run.ParentRunFacet(run=parent_run.Run(runId=parent_id),
                                                          job=parent_run.Job(namespace=NAMESPACE, name=workflow), producer=PRODUCER)}
            job = Job(namespace=NAMESPACE, name=f"{workflow}.{node}")
            reads = rels[0].reads
            ins = [InputDataset(namespace="file", name=dataset_name(d), facets={"schema": schema(d)}) for d in sorted(reads)]
            outs = [OutputDataset(namespace="file", name=dataset_name(r.dir), facets={"schema": schema(r.dir), "columnLineage": column_facet(r)})
                    for r in rels]
            own = [t for r in rels for t in _dir_mtimes(store, r.dir)] or [0]
            events.append(RunEvent(eventType=RunState.START, eventTime=_time(min(own)), run=Run(runId=run_id, facets=facets),
                                   job=job, producer=PRODUCER, inputs=ins))
            events.append(RunEvent(eventType=RunState.COMPLETE, eventTime=_time(max(own)), run=Run(runId=run_id, facets=facets),
                                   job=job, producer=PRODUCER, inputs=ins, outputs=outs))
        events.append(RunEvent(eventType=RunState.COMPLETE, eventTime=_time(max(times)), run=Run(runId=parent_id, facets=parent_facets),
                               job=parent_job, producer=PRODUCER, inputs=inputs))
    return events


def to_dicts(events: list[Any]) -> list[dict[str, Any]]:
    """The events as JSON-ready dicts (the client's serialization)."""
    from openlineage.client.serde import Serde

    return [Serde.to_dict(e) for e in events]


def write_openlineage(path: str, out: str | None = None, url: str | None = None, *, timeout: float = 10.0) -> int:
    """Export the store at ``path`` as OpenLineage events: to ``out`` as JSON lines (written
    atomically), and to the OpenLineage endpoint at ``url`` (its ``/api/v1/lineage``) when one
    is given. At least one of them; returns the number of events."""
    if out is None and url is None:
        raise LipsparkError("the OpenLineage export needs somewhere to send the events: --output FILE (JSON lines), --url URL (an OpenLineage endpoint), or both")
    events = openlineage_events(path)
    if out is not None:
        import json

        with atomic_open(out) as fh:
            for d in to_dicts(events):
                fh.write(json.dumps(d, sort_keys=True) + "\n")
    if url is not None:
        from openlineage.client import OpenLineageClient
        from openlineage.client.transport.http import HttpConfig, HttpTransport

        client = OpenLineageClient(transport=HttpTransport(HttpConfig(url=url, timeout=timeout, retry={"total": 0})))
        for i, event in enumerate(events):
            try:
                client.emit(event)
            except Exception as err:
                raise LipsparkError(f"the OpenLineage endpoint at {url} refused event {i + 1} of {len(events)} ({type(err).__name__}: {err}); "
                                    "check the URL and that the server accepts POST /api/v1/lineage") from None
    return len(events)
