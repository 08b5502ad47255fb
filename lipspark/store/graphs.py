"""The graph a store holds, as segments: what :meth:`GraphIndex.load <lipspark.graph.index.GraphIndex.load>` expands."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

from lipspark.errors import StoreError
from lipspark.store.manifest import read_manifest, read_segments
from lipspark.store.store import Store
from lipspark.vocabulary.segments import Segment

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

__all__ = ["graph_segments", "graph_root"]


def graph_segments(path: str) -> tuple[list[tuple[Segment, dict[str, pa.Table]]], str]:
    """The segments of the graph of a workflow store (``store.json``) or of a graph directory
    (``manifest.json``), and the directory their relative file paths start from.

    Reading only: a store captured with ``--capture deferred`` has no graph for an execution
    until it is replayed, and then this is a :class:`~lipspark.errors.StoreError` that says to
    run ``lipspark materialize <path>`` first.

    >>> graph_segments("/nonexistent")
    Traceback (most recent call last):
    ...
    lipspark.errors.StoreError: no graph at /nonexistent (manifest.json missing)
    """
    if not os.path.exists(os.path.join(path, "store.json")):
        return read_segments(path, read_manifest(path)), path
    store = _with_graph(path)
    segments: list[tuple[Segment, dict[str, pa.Table]]] = []
    for gdir, manifest in store.graph_manifests():
        read_manifest(gdir)
        segments += read_segments(gdir, manifest)
    return segments, store.root


def graph_root(path: str) -> tuple[str, list[str]]:
    """Where the graph of a workflow store or graph directory lives: the directory its paths
    start from and its graph directories relative to it, in order (initial state first). Reads
    only JSON; the same errors as :func:`graph_segments` (no graph, deferred and not replayed,
    no provenance).

    >>> graph_root("/nonexistent")
    Traceback (most recent call last):
    ...
    lipspark.errors.StoreError: no graph at /nonexistent (manifest.json missing)
    """
    if not os.path.exists(os.path.join(path, "store.json")):
        read_manifest(path)
        return os.path.abspath(path), ["."]
    store = _with_graph(path)
    return store.root, store.graph_dirs()


def _with_graph(path: str) -> Store:
    """The store whose graph answers for the workflow store at ``path``, or why there is none."""
    store = Store.open(path)
    if store.capture is None:
        raise StoreError(f"the store at {path} was run with --no-provenance: it has outputs and state but no graph")
    if store.meta.get("initial") is None:
        raise StoreError(f"the store at {path} has nothing committed yet (its first run is under way, or stopped before "
                         f"writing the initial state): run the workflow into it, `lipspark run WORKFLOW --graph {path}`")
    if store.capture == "deferred":
        store = _replayed(store)
    return store


def _replayed(store: Store) -> Store:
    """The eager store a deferred store's executions were replayed into, if all of them were."""
    sub = store.graph_store()
    if sub is None or sub.meta.get("initial") is None or len(sub.executions) != len(store.executions):
        done = 0 if sub is None else len(sub.executions)
        raise StoreError(f"the store at {store.root} deferred its provenance and {len(store.executions) - done} of its "
                         f"{len(store.executions)} execution(s) are not replayed yet: run `lipspark materialize {store.root}` first")
    return sub
