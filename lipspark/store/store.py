"""The provenance store: a workflow's executions, module states and graph under one directory.

Layout (format ``lipspark-store``, version 1; see docs/store-format.md)::

    store.json                      committed executions, state pointers, next segment number
    initial/<module>/<relation>/    initial state (Parquet)
    initial/graph/manifest.json     tokens of the initial state
    executions/000001/              one directory per committed execution:
        inputs/<node>/<relation>/   workflow inputs given to it
        outputs/<node>/<relation>/  every module output
        state/<node>/<relation>/    state written by each invocation
        graph/manifest.json         the execution's graph segments (+ their Parquet tables)

An execution is written under ``executions/.pending-000001/`` and committed by renaming it and
then atomically replacing ``store.json``; anything not named in ``store.json`` is discarded
when the store is opened again, so a crash or kill leaves the last complete execution.
"""
from __future__ import annotations

import json
import os
import shutil
from typing import Any

from lipspark.errors import StoreError
from lipspark.store.manifest import read_json

__all__ = ["Store", "STORE_FORMAT", "STORE_VERSION", "CAPTURE_MODES", "PROVENANCE_DIR"]

STORE_FORMAT = "lipspark-store"
STORE_VERSION = 1
#: How a store with provenance on records its graph (see :meth:`Store.create`).
CAPTURE_MODES = ("eager", "deferred")
#: Where a deferred store keeps the eager store its executions are replayed into.
PROVENANCE_DIR = "provenance"


def _write_json_atomic(path: str, data: Any) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w") as fh:
        json.dump(data, fh, indent=1, sort_keys=True)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


class Store:
    """A provenance store directory (create with :meth:`create`, reopen with :meth:`open`)."""

    def __init__(self, root: str, meta: dict[str, Any]) -> None:
        self.root = os.path.abspath(root)
        self.meta = meta
        self._pending: str | None = None

    # ------------------------------------------------------------------ lifecycle
    @classmethod
    def create(cls, root: str, workflow: str, provenance: bool, params: dict[str, Any], *,
               capture: str = "eager", definition: str | None = None) -> "Store":
        """A new, empty store at ``root``.

        ``capture`` is ``"eager"`` (the graph is written with each execution) or ``"deferred"``
        (executions run at plain speed; :func:`lipspark.workflow.materialize` replays them with
        provenance on when the graph is first needed, which needs the ``definition`` file).
        """
        if capture not in CAPTURE_MODES:
            raise StoreError(f"capture must be one of {', '.join(CAPTURE_MODES)}, got {capture!r}")
        if capture == "deferred" and not provenance:
            raise StoreError("deferred capture records provenance later; it needs provenance on")
        if capture == "deferred" and not definition:
            raise StoreError("deferred capture needs the workflow definition's file, to replay executions when the graph is needed")
        if os.path.exists(os.path.join(root, "store.json")):
            raise StoreError(f"{root} already holds a store; open it to continue, or choose another directory")
        if os.path.exists(root) and os.listdir(root):
            raise StoreError(f"{root} exists and is not empty; choose an empty or new directory")
        os.makedirs(os.path.join(root, "executions"), exist_ok=True)
        meta = {
            "format": STORE_FORMAT,
            "version": STORE_VERSION,
            "workflow": workflow,
            "provenance": provenance,
            "params": params,
            "capture": capture if provenance else None,
            "definition": os.path.abspath(definition) if definition else None,
            "next_segment": 1,
            "initial": None,
            "executions": [],
        }
        store = cls(root, meta)
        return store

    @classmethod
    def open(cls, root: str) -> "Store":
        path = os.path.join(root, "store.json")
        if not os.path.exists(path):
            raise StoreError(f"no provenance store at {root} (store.json missing); run the workflow first: lipspark run WORKFLOW --graph {root}")
        meta = read_json(path, f"the store at {root}")
        if not isinstance(meta, dict) or meta.get("format") != STORE_FORMAT:
            raise StoreError(f"{path} is not a lipspark store (format {meta.get('format') if isinstance(meta, dict) else None!r})")
        if meta.get("version") != STORE_VERSION:
            raise StoreError(f"the store at {root} has version {meta.get('version')}; this lipspark reads version {STORE_VERSION}")
        for key in ("workflow", "provenance", "next_segment", "executions"):
            if key not in meta:
                raise StoreError(f"the store at {root} is corrupt: store.json lacks {key!r}")
        store = cls(root, meta)
        store._discard_uncommitted()
        store._check_files()
        return store

    def _discard_uncommitted(self) -> None:
        committed = {e["dir"] for e in self.meta["executions"]}
        exec_root = os.path.join(self.root, "executions")
        for name in os.listdir(exec_root) if os.path.isdir(exec_root) else []:
            if f"executions/{name}" not in committed:
                shutil.rmtree(os.path.join(exec_root, name), ignore_errors=True)
        if self.meta.get("initial") is None:
            shutil.rmtree(os.path.join(self.root, "initial"), ignore_errors=True)

    def _check_files(self) -> None:
        for e in self.meta["executions"]:
            if not os.path.isdir(os.path.join(self.root, e["dir"])):
                raise StoreError(f"the store at {self.root} is corrupt: execution directory {e['dir']} is missing")

    def save(self) -> None:
        _write_json_atomic(os.path.join(self.root, "store.json"), self.meta)

    # ------------------------------------------------------------------ executions
    @property
    def capture(self) -> str | None:
        """``"eager"``, ``"deferred"``, or ``None`` for a store without provenance."""
        if not self.meta["provenance"]:
            return None
        return self.meta.get("capture") or "eager"

    def graph_store(self) -> "Store | None":
        """The store whose graph answers queries about this one: itself when capture is eager,
        the eager store its executions are replayed into when deferred (``None`` if not made
        yet, or provenance is off). Replaying is :func:`lipspark.workflow.materialize`'s job."""
        if self.capture == "eager":
            return self
        if self.capture != "deferred":
            return None
        sub = os.path.join(self.root, PROVENANCE_DIR)
        return Store.open(sub) if os.path.exists(os.path.join(sub, "store.json")) else None

    @property
    def executions(self) -> list[dict[str, Any]]:
        return self.meta["executions"]

    @property
    def next_execution(self) -> int:
        return len(self.executions) + 1

    def begin(self, n: int) -> str:
        """Directory to write execution ``n`` into (renamed on commit)."""
        pending = os.path.join(self.root, "executions", f".pending-{n:06d}")
        shutil.rmtree(pending, ignore_errors=True)
        os.makedirs(pending)
        self._pending = pending
        return pending

    def final_dir(self, n: int) -> str:
        return f"executions/{n:06d}"

    def resolve(self, rel: str) -> str:
        """Absolute path of a store-relative path (pending executions included)."""
        if self._pending is not None:
            n = os.path.basename(self._pending)[len(".pending-"):]
            prefix = f"executions/{n}"
            if rel == prefix or rel.startswith(prefix + "/"):
                return os.path.join(self._pending, rel[len(prefix) + 1:]) if rel != prefix else self._pending
        return os.path.join(self.root, rel)

    def commit(self, n: int, record: dict[str, Any], next_segment: int) -> None:
        if self._pending is None:
            raise StoreError("commit without begin")
        os.replace(self._pending, os.path.join(self.root, self.final_dir(n)))
        self._pending = None
        self.meta["executions"].append({"n": n, "dir": self.final_dir(n), **record})
        self.meta["next_segment"] = next_segment
        self.save()

    def abort(self) -> None:
        if self._pending is not None:
            shutil.rmtree(self._pending, ignore_errors=True)
            self._pending = None

    def current_state(self) -> dict[str, dict[str, Any]]:
        """Module → relation → descriptor of its state after the last committed execution."""
        if self.executions:
            return self.executions[-1]["state"]
        return self.meta["initial"] or {}

    def graph_dirs(self) -> list[str]:
        """The store-relative directories of every graph in the store, initial state first
        (checked present, not read)."""
        out = []
        dirs = (["initial/graph"] if self.meta.get("initial") else []) + [f"{e['dir']}/graph" for e in self.executions]
        for d in dirs:
            path = os.path.join(self.root, d, "manifest.json")
            if not os.path.exists(path):
                if self.capture == "eager":
                    raise StoreError(f"the store at {self.root} is corrupt: {d}/manifest.json is missing")
                continue
            out.append(d)
        return out

    def graph_manifests(self) -> list[tuple[str, dict[str, Any]]]:
        """(directory, manifest) of every graph in the store, initial state first."""
        return [(os.path.join(self.root, d), read_json(os.path.join(self.root, d, "manifest.json"), f"the store at {self.root}"))
                for d in self.graph_dirs()]
