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

One process writes a store at a time: it holds the store's writer lock
(:class:`~lipspark.store.lock.WriterLock`, ``.writer.lock``) from before its first write to its
last. An execution is written under ``executions/.pending-000001/``, renamed, and committed by
atomically replacing ``store.json``, the single commit point: readers read ``store.json`` and
only what it names, so they see the last committed execution whatever a writer is doing, and they
never modify the store. Whatever a crashed writer left that ``store.json`` does not name is
removed by the next writer, under the lock (:meth:`Store.lock`). ``store.json`` is written when a
store is created, so a first run that crashed while writing the initial state is resumed, like
any other, by the next run.
"""
from __future__ import annotations

import errno
import json
import os
import shutil
from typing import Any

from lipspark.errors import StoreError
from lipspark.store.lock import LOCK_FILE, WriterLock
from lipspark.store.manifest import read_json

__all__ = ["Store", "STORE_FORMAT", "STORE_VERSION", "CAPTURE_MODES", "STATE_SCHEMES", "PROVENANCE_DIR"]

STORE_FORMAT = "lipspark-store"
STORE_VERSION = 1
#: How a store with provenance on records its graph (see :meth:`Store.create`).
CAPTURE_MODES = ("eager", "deferred")
#: How the rows of state relations a store writes get p-nodes (see :attr:`Store.state_scheme`):
#: ``state`` for new stores, ``collapse`` for stores made before (``store.json`` without the key).
STATE_SCHEMES = ("state", "collapse")
#: Where a deferred store keeps the eager store its executions are replayed into.
PROVENANCE_DIR = "provenance"


#: ``store.json`` as readers in this process last parsed it, by path: (inode, size, mtime) and the
#: parsed content, which no reader changes. A commit replaces the file (a new inode), so a reader
#: opening the store after it parses the new one.
_PARSED: dict[str, tuple[tuple[int, int, int], Any]] = {}


def _read_store_json(path: str, what: str, shared: bool) -> Any:
    if not shared:
        return read_json(path, what)
    try:
        st = os.stat(path)
    except OSError:
        return read_json(path, what)  # gone meanwhile: read_json says so
    key = (st.st_ino, st.st_size, st.st_mtime_ns)
    hit = _PARSED.get(path)
    if hit is not None and hit[0] == key:
        return hit[1]
    meta = read_json(path, what)
    _PARSED[path] = (key, meta)
    return meta


def _write_json_atomic(path: str, data: Any) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w") as fh:
        json.dump(data, fh, indent=1, sort_keys=True)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    fd = os.open(os.path.dirname(path) or ".", os.O_RDONLY)
    try:  # the rename itself must survive a power loss, or the commit is not durable
        os.fsync(fd)
    finally:
        os.close(fd)


def _check_writable(root: str) -> None:
    """Refuse, in one line, a store its writer cannot write (a read-only file system, a directory
    of another user's): found when the lock is taken, before Spark starts, not by a traceback
    from the first write. The lock file alone being writable is not enough."""
    for d in (root, os.path.join(root, "executions")):
        if os.path.isdir(d) and not os.access(d, os.W_OK | os.X_OK):
            try:
                readonly = bool(os.statvfs(d).f_flag & os.ST_RDONLY)
            except OSError:
                readonly = False
            why = os.strerror(errno.EROFS if readonly else errno.EACCES)
            raise StoreError(f"cannot write the store at {root} ({why}: {d}); choose a directory you can write")


class Store:
    """A provenance store directory (create with :meth:`create`, reopen with :meth:`open`).

    A store opened with :meth:`open` is a read-only snapshot; to write it, take the writer lock
    with :meth:`lock` (a created store holds it already) and release it with :meth:`unlock`, or
    use the store as a context manager.
    """

    def __init__(self, root: str, meta: dict[str, Any]) -> None:
        self.root = os.path.abspath(root)
        self.meta = meta
        self._pending: str | None = None
        self._lock: WriterLock | None = None

    # ------------------------------------------------------------------ lifecycle
    @classmethod
    def create(cls, root: str, workflow: str, provenance: bool, params: dict[str, Any], *,
               capture: str = "eager", definition: str | None = None, lock: WriterLock | None = None,
               state_scheme: str = "state") -> "Store":
        """A new, empty store at ``root``.

        ``capture`` is ``"eager"`` (the graph is written with each execution) or ``"deferred"``
        (executions run at plain speed; :func:`lipspark.workflow.materialize` replays them with
        provenance on when the graph is first needed, which needs the ``definition`` file).
        ``state_scheme`` is how new state rows get p-nodes (:attr:`state_scheme`): ``"state"``,
        or ``"collapse"`` to make a store as lipspark made them before (ids as an older store's).

        Examples
        --------
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as root:
        ...     with Store.create(f"{root}/new", "wf", True, {}) as new:
        ...         with Store.create(f"{root}/old", "wf", True, {}, state_scheme="collapse") as old:
        ...             print(new.state_scheme, old.state_scheme)
        state collapse
        """
        if capture not in CAPTURE_MODES:
            raise StoreError(f"capture must be one of {', '.join(CAPTURE_MODES)}, got {capture!r}")
        if state_scheme not in STATE_SCHEMES:
            raise StoreError(f"state_scheme must be one of {', '.join(STATE_SCHEMES)}, got {state_scheme!r}")
        if capture == "deferred" and not provenance:
            raise StoreError("deferred capture records provenance later; it needs provenance on")
        if capture == "deferred" and not definition:
            raise StoreError("deferred capture needs the workflow definition's file, to replay executions when the graph is needed")
        if os.path.exists(root) and not os.path.isdir(root):
            raise StoreError(f"{root} is a file, not a directory; choose an empty or new directory for the store")
        existed = os.path.isdir(root)
        lock = lock.acquire() if lock is not None else WriterLock(root).acquire()
        try:
            _check_writable(os.path.abspath(root))
            if os.path.exists(os.path.join(root, "store.json")):
                raise StoreError(f"{root} already holds a store; open it to continue, or choose another directory")
            if [n for n in os.listdir(root) if n != LOCK_FILE]:
                raise StoreError(f"{root} exists and is not empty; choose an empty or new directory")
        except BaseException:
            if not existed and os.listdir(root) == [LOCK_FILE]:  # only what this call made
                shutil.rmtree(root, ignore_errors=True)
            lock.release()
            raise
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
            "state_scheme": state_scheme,
            "initial": None,
            "executions": [],
        }
        store = cls(root, meta)
        store._lock = lock
        store.save()  # the store exists from now on: a crash before its first commit is resumed
        return store

    @classmethod
    def open(cls, root: str) -> "Store":
        """The store at ``root`` as its ``store.json`` names it now: a read-only snapshot (nothing
        on disk is changed; :meth:`lock` to write)."""
        return cls._open(root, shared=True)

    @classmethod
    def _open(cls, root: str, *, shared: bool) -> "Store":
        """``shared``: a reader's snapshot, whose ``store.json`` this process parses once per
        version of the file (a command opens a store from several layers; the file grows with
        every execution) and never changes; a writer (:meth:`lock`) reads its own copy."""
        path = os.path.join(root, "store.json")
        if not os.path.exists(path):
            raise StoreError(f"no provenance store at {root} (store.json missing); run the workflow first: lipspark run WORKFLOW --graph {root}")
        meta = _read_store_json(path, f"the store at {root}", shared)
        if not isinstance(meta, dict) or meta.get("format") != STORE_FORMAT:
            raise StoreError(f"{path} is not a lipspark store (format {meta.get('format') if isinstance(meta, dict) else None!r})")
        if meta.get("version") != STORE_VERSION:
            raise StoreError(f"the store at {root} has version {meta.get('version')}; this lipspark reads version {STORE_VERSION}")
        for key in ("workflow", "provenance", "next_segment", "executions"):
            if key not in meta:
                raise StoreError(f"the store at {root} is corrupt: store.json lacks {key!r}")
        store = cls(root, meta)
        store._check_files()
        return store

    # ------------------------------------------------------------------ the writer lock
    def lock(self, wait: float = 0.0, held: WriterLock | None = None) -> "Store":
        """Take the writer lock (waiting up to ``wait`` seconds for another writer; ``held``: a
        lock of this store's that the caller took already), re-read ``store.json`` (another
        writer may have committed since this store was opened) and remove what a crashed writer
        left uncommitted. Returns the store; a :class:`~lipspark.store.lock.StoreLockedError`
        names the holder if it stays busy."""
        if self._lock is not None:
            return self
        lock = held.acquire() if held is not None else WriterLock(self.root).acquire(wait)
        try:
            fresh = Store._open(self.root, shared=False)
            _check_writable(self.root)
            self.meta = fresh.meta
            self._lock = lock
            self._discard_uncommitted()
        except BaseException:
            self._lock = None
            lock.release()
            raise
        return self

    def unlock(self) -> None:
        """Release the writer lock (a pending execution is discarded first)."""
        if self._lock is not None:
            self.abort()
            self._lock.release()
            self._lock = None

    @property
    def locked(self) -> bool:
        """Whether this process holds the store's writer lock."""
        return self._lock is not None

    def __enter__(self) -> "Store":
        return self.lock()

    def __exit__(self, *exc: object) -> None:
        self.unlock()

    def _writing(self, what: str) -> None:
        if self._lock is None:
            raise StoreError(f"internal: {what} the store at {self.root} without its writer lock (Store.lock())")

    def _discard_uncommitted(self) -> None:
        """Remove executions and an initial state that ``store.json`` does not name (only ever
        under the writer lock: a reader must not delete a writer's work in progress)."""
        self._writing("cleaning")
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
        """Replace ``store.json`` atomically: the commit point of every change."""
        self._writing("saving")
        _write_json_atomic(os.path.join(self.root, "store.json"), self.meta)

    # ------------------------------------------------------------------ executions
    @property
    def capture(self) -> str | None:
        """``"eager"``, ``"deferred"``, or ``None`` for a store without provenance."""
        if not self.meta["provenance"]:
            return None
        return self.meta.get("capture") or "eager"

    @property
    def state_scheme(self) -> str:
        """How the rows of state relations this store writes get p-nodes (:class:`PScheme`):
        what ``store.json`` says, ``"collapse"`` when it says nothing (a store made before the key
        existed). A store keeps the scheme its graph began with; new stores begin with ``state``
        (:meth:`create`; docs/design.md, "Deferred capture")."""
        scheme = str(self.meta.get("state_scheme", "collapse"))
        if scheme not in STATE_SCHEMES:
            raise StoreError(f"the store at {self.root} has state_scheme {scheme!r}; expected 'state' or 'collapse' (written by a newer lipspark?)")
        return scheme

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
        self._writing("writing an execution to")
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
        self._writing("committing")
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
