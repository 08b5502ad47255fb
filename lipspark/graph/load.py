"""Reading a graph back: from a ``Tracker.write`` directory or a whole workflow store."""
from __future__ import annotations

import os
import sys
from typing import Any

from lipspark.errors import StoreError
from lipspark.store.manifest import read_manifest, read_segments

__all__ = ["load_graph"]


def load_graph(path: str) -> Any:
    """Load the graph of a workflow store (``store.json``) or of a graph directory (``manifest.json``).

    A store with deferred capture is materialized first (its executions replayed with provenance
    on: this needs Spark and takes about as long as running them eagerly; see
    :mod:`lipspark.workflow.materialize`)."""
    from lipspark.graph.model import ProvenanceGraph

    if os.path.exists(os.path.join(path, "store.json")):
        from lipspark.store import Store

        from lipspark.workflow.materialize import materialize

        store = Store.open(path)
        if not store.meta["provenance"]:
            raise StoreError(f"the store at {path} was run with --no-provenance: it has outputs and state but no graph")
        store = materialize(store, progress=sys.stderr.isatty())  # deferred capture: replay what has no graph yet
        segments = []
        for gdir, manifest in store.graph_manifests():
            read_manifest(gdir)
            segments += read_segments(gdir, manifest)
        return ProvenanceGraph.from_segments(segments, root=store.root)
    manifest = read_manifest(path)
    return ProvenanceGraph.from_segments(read_segments(path, manifest), root=path)
