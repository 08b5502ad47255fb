"""Loading only reads: a deferred store that is not replayed yet is an error naming the fix."""
from __future__ import annotations

import os

import pytest

from lipspark.errors import StoreError
from lipspark.graph.index import GraphIndex
from lipspark.store import PROVENANCE_DIR, Store
from lipspark.vocabulary.ids import positional


def _deferred(tmp_path, executions=1):
    root = str(tmp_path / "store")
    s = Store.create(root, "wf", True, {}, capture="deferred", definition=__file__)
    s.meta["initial"] = {}
    s.meta["executions"] = [{"n": n, "dir": f"executions/{n:06d}", "outputs": {}, "state": {}} for n in range(1, executions + 1)]
    for n in range(1, executions + 1):
        os.makedirs(os.path.join(root, "executions", f"{n:06d}"))
    s.save()
    return root


def test_a_deferred_store_not_replayed_names_lipspark_materialize(tmp_path):
    root = _deferred(tmp_path, executions=2)
    with pytest.raises(StoreError, match=r"2 of its 2 execution\(s\) are not replayed yet: run `lipspark materialize .*store` first"):
        GraphIndex.load(root)
    with pytest.raises(StoreError, match="lipspark materialize"):
        GraphIndex.load(root)
    assert not os.path.exists(os.path.join(root, PROVENANCE_DIR))  # nothing was replayed


def test_a_partly_replayed_store_is_an_error_too(tmp_path):
    root = _deferred(tmp_path, executions=2)
    sub = Store.create(os.path.join(root, PROVENANCE_DIR), "wf", True, {})
    sub.meta["initial"] = {}
    sub.meta["executions"] = [{"n": 1, "dir": "executions/000001", "outputs": {}, "state": {}}]
    os.makedirs(os.path.join(sub.root, "executions", "000001", "graph"))
    with open(os.path.join(sub.root, "executions", "000001", "graph", "manifest.json"), "w") as fh:
        fh.write('{"format": "lipspark-graph", "version": 1, "segments": []}')
    sub.save()
    with pytest.raises(StoreError, match=r"1 of its 2 execution\(s\) are not replayed yet"):
        GraphIndex.load(root)
    # once every execution is replayed, the graph is read from the replay
    sub.meta["executions"].append({"n": 2, "dir": "executions/000002", "outputs": {}, "state": {}})
    os.makedirs(os.path.join(sub.root, "executions", "000002", "graph"))
    with open(os.path.join(sub.root, "executions", "000002", "graph", "manifest.json"), "w") as fh:
        fh.write('{"format": "lipspark-graph", "version": 1, "segments": [{"seg": 5, "kind": "invocation", "meta": {"type": "m", "label": "m", "execution": 2}}]}')
    sub.save()
    g = GraphIndex.load(root)
    assert g.find(op="invocation") == [positional(5, 0)] and g.node(positional(5, 0))["execution"] == 2


def test_a_store_without_provenance_has_no_graph(tmp_path):
    root = str(tmp_path / "off")
    Store.create(root, "wf", False, {}).save()
    with pytest.raises(StoreError, match="no-provenance"):
        GraphIndex.load(root)
