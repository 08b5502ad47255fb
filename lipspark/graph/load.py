"""Reading a graph back: from a ``Tracker.write`` directory or a whole workflow store."""
from __future__ import annotations

import os
from typing import Any

from lipspark.errors import StoreError
from lipspark.store.manifest import read_manifest, read_segments

__all__ = ["load_graph"]


def load_graph(path: str) -> Any:
    """Load the graph of a workflow store (``store.json``) or of a graph directory (``manifest.json``).

    A store with deferred capture must be materialized first (:func:`lipspark.workflow.materialize`,
    ``lipspark materialize PATH``); loading never replays executions."""
    from lipspark.graph.model import ProvenanceGraph

    if os.path.exists(os.path.join(path, "store.json")):
        from lipspark.store import Store

        store = Store.open(path)
        if not store.meta["provenance"]:
            raise StoreError(f"the store at {path} was run with --no-provenance: it has outputs and state but no graph")
        replayed = store.graph_store()  # deferred capture: the replay's store, if materialized
        if replayed is None or len(replayed.executions) < len(store.executions):
            raise StoreError(f"the store at {path} defers its provenance and has executions not replayed yet; run: lipspark materialize {path}")
        store = replayed
        segments = []
        for gdir, manifest in store.graph_manifests():
            read_manifest(gdir)
            segments += read_segments(gdir, manifest)
        return ProvenanceGraph.from_segments(segments, root=store.root)
    manifest = read_manifest(path)
    return ProvenanceGraph.from_segments(read_segments(path, manifest), root=path)
