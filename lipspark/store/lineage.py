"""Reading the column lineage a store recorded (each execution's ``lineage.json``) and its relations.

The executor writes, with every execution, the column lineage of each relation its invocations
wrote (:mod:`lipspark.vocabulary.lineage`); these functions read it back, all executions at once,
and describe the store's relations by directory — what where-provenance
(:mod:`lipspark.query.where`) and the OpenLineage export (:mod:`lipspark.export.openlineage`) chain
and name. A store written before lipspark recorded lineage has no ``lineage.json``: reading it
fails with one line saying how to get one.

>>> import json, os, tempfile
>>> root = tempfile.mkdtemp()
>>> os.makedirs(os.path.join(root, "executions", "000001"))
>>> rel = {"dir": "executions/000001/inputs/src/Items", "files": [], "p": {"kind": "token", "seg": 2}, "values": {}, "bags": []}
>>> meta = {"format": "lipspark-store", "version": 1, "workflow": "w", "provenance": True, "next_segment": 3, "initial": {},
...         "executions": [{"n": 1, "dir": "executions/000001", "inputs": {"src": {"Items": rel}}, "outputs": {}, "state": {}}]}
>>> with open(os.path.join(root, "store.json"), "w") as fh:
...     json.dump(meta, fh)
>>> read_lineage(Store.open(root))  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
lipspark.errors.StoreError: the store at ... has no column lineage: execution 1 was written before lipspark recorded it (executions/000001/lineage.json is missing); run the workflow again into a new store to record it: lipspark run WORKFLOW --graph NEW_DIR
>>> info = relations_by_dir(Store.open(root))["executions/000001/inputs/src/Items"]
>>> info.relation, info.role, info.node, info.execution, info.token_segment
('Items', 'input', 'src', 1, 2)
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from lipspark.errors import StoreError
from lipspark.store.store import Store
from lipspark.vocabulary.lineage import LINEAGE_FILE, LINEAGE_FORMAT, LINEAGE_VERSION, RelationLineage

__all__ = ["StoredRelationInfo", "read_lineage", "relations_by_dir"]


def read_lineage(store: Store) -> dict[str, RelationLineage]:
    """The column lineage of every relation the store's executions wrote, by directory."""
    out: dict[str, RelationLineage] = {}
    shown = os.path.relpath(store.root) if not os.path.relpath(store.root).startswith("..") else store.root
    for e in store.executions:
        rel = f"{e['dir']}/{LINEAGE_FILE}"
        path = os.path.join(store.root, rel)
        if not os.path.exists(path):
            raise StoreError(f"the store at {shown} has no column lineage: execution {e['n']} was written before lipspark "
                             f"recorded it ({rel} is missing); run the workflow again into a new store to record it: "
                             "lipspark run WORKFLOW --graph NEW_DIR")
        try:
            with open(path) as fh:
                doc = json.load(fh)
        except (OSError, ValueError) as err:
            raise StoreError(f"cannot read {path} ({err}); `lipspark check {store.root}` tells what is damaged") from None
        if not isinstance(doc, dict) or doc.get("format") != LINEAGE_FORMAT or doc.get("version") != LINEAGE_VERSION:
            raise StoreError(f"{path} is not lipspark column lineage version {LINEAGE_VERSION}; rerun the workflow into a new store")
        for r in doc.get("relations", []):
            lin = RelationLineage.from_json(r)
            out[lin.dir] = lin
    return out


@dataclass(frozen=True)
class StoredRelationInfo:
    """A relation the store holds: its directory, name, role (``input``: a workflow input;
    ``initial``: initial state; ``output``; ``state``), workflow node or module, execution
    (0 for the initial state), descriptor (``store.json``'s record of it)."""

    dir: str
    relation: str
    role: str
    node: str
    execution: int
    descriptor: dict[str, Any]

    @property
    def token_segment(self) -> int | None:
        """The segment of its tokens, for a base relation of a store with provenance."""
        p = self.descriptor.get("p") or {}
        return int(p["seg"]) if p.get("kind") == "token" else None


def relations_by_dir(store: Store) -> dict[str, StoredRelationInfo]:
    """Every relation ``store.json`` names (initial state, then each execution's inputs,
    outputs and state), by directory (an example: the module docstring)."""
    out: dict[str, StoredRelationInfo] = {}
    for module, rels in (store.meta.get("initial") or {}).items():
        for name, d in rels.items():
            out[d["dir"]] = StoredRelationInfo(d["dir"], name, "initial", module, 0, d)
    for e in store.executions:
        for key, role in (("inputs", "input"), ("outputs", "output"), ("state", "state")):
            for node, rels in e.get(key, {}).items():
                for name, d in rels.items():
                    out.setdefault(d["dir"], StoredRelationInfo(d["dir"], name, role, node, int(e["n"]), d))
    return out
