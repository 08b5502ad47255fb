"""Reading a graph back: from a ``Tracker.write`` directory or a whole workflow store.

Loading only reads: it never runs Spark. A store captured with ``--capture deferred`` has no
graph for an execution until it is replayed; loading such a store is a
:class:`~lipspark.errors.StoreError` that says to run ``lipspark materialize <path>`` first.

>>> load_graph("/nonexistent")
Traceback (most recent call last):
...
lipspark.errors.StoreError: no graph at /nonexistent (manifest.json missing)
"""
from __future__ import annotations

import os

from lipspark.errors import StoreError
from lipspark.graph.index import GraphIndex
from lipspark.store import Store
from lipspark.store.manifest import read_manifest, read_segments

__all__ = ["load_graph"]


def load_graph(path: str) -> GraphIndex:
    """The indexed graph of a workflow store (``store.json``) or of a graph directory (``manifest.json``)."""
    if os.path.exists(os.path.join(path, "store.json")):
        store = Store.open(path)
        if store.capture is None:
            raise StoreError(f"the store at {path} was run with --no-provenance: it has outputs and state but no graph")
        if store.capture == "deferred":
            store = _replayed(store)
        segments = []
        for gdir, manifest in store.graph_manifests():
            read_manifest(gdir)
            segments += read_segments(gdir, manifest)
        return GraphIndex.from_segments(segments, root=store.root)
    manifest = read_manifest(path)
    return GraphIndex.from_segments(read_segments(path, manifest), root=path)


def _replayed(store: Store) -> Store:
    """The eager store a deferred store's executions were replayed into, if all of them were."""
    sub = store.graph_store()
    if sub is None or sub.meta.get("initial") is None or len(sub.executions) != len(store.executions):
        done = 0 if sub is None else len(sub.executions)
        raise StoreError(f"the store at {store.root} deferred its provenance and {len(store.executions) - done} of its "
                         f"{len(store.executions)} execution(s) are not replayed yet: run `lipspark materialize {store.root}` first")
    return sub
